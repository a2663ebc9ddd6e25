#include "cli/mcp_proxy.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/fd_io.h"
#include "base/status_matchers.h"
#include "cli/mcp_bridge.h"
#include "cli/mcp_stdio.h"
#include "cli/mcp_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "provider/jsonrpc.h"
#include "service/http_server.h"
#include "upstream/http_upstream.h"

namespace understudy {
namespace cli {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using Json = nlohmann::json;
using namespace testing_util;  // NOLINT: the shared fakes of mcp_test_util.h

TEST(McpEndpointPathTest, PercentEncodesEachSegment) {
  EXPECT_EQ(McpEndpointPath("run 1/x", "fs"), "/run/run%201%2Fx/mcp/fs");
  EXPECT_EQ(McpEndpointPath("", "my.server~_-"), "/mcp/my.server~_-");
  EXPECT_EQ(McpEndpointPath("r", "a?b#c%"), "/run/r/mcp/a%3Fb%23c%25");
}

TEST(ResolveClientTokenTest, HoldsTheTokenToTheServersRules) {
  EXPECT_THAT(ResolveClientToken("", ""), IsOk());
  EXPECT_EQ(*ResolveClientToken("", ""), "");
  EXPECT_EQ(*ResolveClientToken("0123456789abcdef0123", ""), "0123456789abcdef0123");
  EXPECT_THAT(ResolveClientToken("short", ""), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ResolveClientToken("0123456789abcdef0123", "/x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most one")));

  const std::string path = absl::StrCat(::testing::TempDir(), "/mcp_proxy_token_", ::getpid());
  {
    std::ofstream out(path);
    out << "fedcba9876543210fedcba\n";
  }
  ::chmod(path.c_str(), 0644);
  EXPECT_THAT(ResolveClientToken("", path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("chmod 600")));
  ::chmod(path.c_str(), 0600);
  absl::StatusOr<std::string> token = ResolveClientToken("", path);
  ASSERT_THAT(token, IsOk());
  EXPECT_EQ(*token, "fedcba9876543210fedcba");
  std::remove(path.c_str());
}

// ---------------------------------------------------------------------------
// The proxy, against a fake understudy

// What the fake understudy received.
struct Received {
  std::string method;
  std::string target;
  service::HttpHeaders headers;
  std::string body;
  std::string Header(absl::string_view name) const {
    for (const auto& [k, v] : headers) {
      if (k == name) return v;
    }
    return "";
  }
};

// understudy's /mcp/{name} as the proxy sees it. In record mode, a lazy
// request is answered 409 start_upstream, and a request naming the bridge
// is relayed to it (streamed back as it comes); in replay mode requests are
// answered from `replay` (JSON). Answers to initialize carry a session id.
class FakeUnderstudy {
 public:
  using Handler = std::function<bool(const Received&, std::shared_ptr<service::HttpResponder>)>;

  explicit FakeUnderstudy(bool record, Handler handler = nullptr)
      : record_(record), handler_(std::move(handler)) {
    service::HttpServerOptions options;
    options.threads = 2;
    server_ = std::move(*service::HttpServer::Start(
        options, [this](service::HttpRequest request, std::shared_ptr<service::HttpResponder> out) {
          Handle(std::move(request), std::move(out));
        }));
  }
  ~FakeUnderstudy() {
    server_->Shutdown(absl::Now() + absl::Seconds(2));
    absl::MutexLock lock(&mu_);
    relays_.clear();
  }

  std::string url() const { return absl::StrCat("http://127.0.0.1:", server_->port()); }

  std::vector<Received> received() {
    absl::MutexLock lock(&mu_);
    return received_;
  }

 private:
  class Relay final : public upstream::UpstreamHttpObserver {
   public:
    Relay(std::shared_ptr<service::HttpResponder> out, bool initialize)
        : out_(std::move(out)), initialize_(initialize) {}
    void OnHead(int status, upstream::UpstreamHttpHeaders headers) override {
      service::HttpHeaders out;
      for (auto& [k, v] : headers) {
        if (k == "content-type") out.emplace_back(k, v);
      }
      if (initialize_) out.emplace_back("mcp-session-id", "sess-1");
      out_->StartStream(status, std::move(out));
    }
    void OnData(absl::string_view bytes) override { out_->Write(std::string(bytes)); }
    void OnDone(absl::Status status) override {
      if (status.ok()) {
        out_->End();
      } else {
        out_->Abort();
      }
    }

   private:
    std::shared_ptr<service::HttpResponder> out_;
    bool initialize_;
  };

  void Handle(service::HttpRequest request, std::shared_ptr<service::HttpResponder> out) {
    Received r{request.method, request.target, request.headers, request.body};
    {
      absl::MutexLock lock(&mu_);
      received_.push_back(r);
    }
    if (handler_ && handler_(r, out)) return;
    if (r.method == "DELETE") {
      out->Respond(200, {}, "");
      return;
    }
    const Json message = Json::parse(r.body, nullptr, false);
    const bool initialize = message.value("method", "") == "initialize";
    const std::string upstream = r.Header("x-understudy-mcp-upstream");
    if (record_ && upstream == "lazy") {
      out->Respond(409, {{"content-type", "application/json"}},
                   R"({"understudy":"start_upstream"})");
      return;
    }
    if (record_) {
      // Relay to the bridge, as understudy forwards to an upstream.
      upstream::UpstreamHttpRequest forward;
      forward.method = "POST";
      const size_t slash = upstream.find('/', upstream.find("://") + 3);
      forward.path = upstream.substr(slash);
      forward.headers = {{"content-type", "application/json"},
                         {"accept", "application/json, text/event-stream"}};
      forward.body = r.body;
      upstream::HttpUpstream* client = RelayClient(upstream.substr(0, slash));
      client->Send(std::move(forward), std::make_shared<Relay>(out, initialize));
      return;
    }
    if (!message.contains("id")) {
      out->Respond(202, {}, "");
      return;
    }
    Json answer = {{"jsonrpc", "2.0"}, {"id", message["id"]}};
    if (initialize) {
      answer["result"] = {{"protocolVersion", "2025-03-26"}, {"capabilities", Json::object()}};
      out->Respond(200, {{"content-type", "application/json"}, {"mcp-session-id", "sess-1"}},
                   answer.dump());
      return;
    }
    answer["result"] = {{"replayed", true}, {"params", message.value("params", Json())}};
    out->Respond(200, {{"content-type", "application/json"}}, answer.dump());
  }

  upstream::HttpUpstream* RelayClient(const std::string& base) {
    absl::MutexLock lock(&mu_);
    std::unique_ptr<upstream::HttpUpstream>& client = relays_[base];
    if (client == nullptr) {
      upstream::HttpUpstream::Options options;
      options.base_url = base;
      client = std::move(*upstream::HttpUpstream::Create(options));
    }
    return client.get();
  }

  const bool record_;
  const Handler handler_;
  std::unique_ptr<service::HttpServer> server_;
  absl::Mutex mu_;
  std::vector<Received> received_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<upstream::HttpUpstream>> relays_ ABSL_GUARDED_BY(mu_);
};

// The proxy on a pair of pipes, running on its own thread.
class ProxyRunner {
 public:
  explicit ProxyRunner(McpProxyOptions options) {
    int in[2];
    int out[2];
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    options.input_fd = in[0];
    options.output_fd = out[1];
    to_proxy_ = in[1];
    from_proxy_ = out[0];
    proxy_in_ = in[0];
    proxy_out_ = out[1];
    absl::StatusOr<std::unique_ptr<McpProxy>> proxy = McpProxy::Create(std::move(options));
    EXPECT_THAT(proxy, IsOk());
    proxy_ = std::move(*proxy);
    thread_ = std::thread([this] {
      run_status_ = proxy_->Run();
      finished_.Notify();
    });
  }

  ~ProxyRunner() {
    CloseInput();
    Finish().IgnoreError();
    for (int fd : {from_proxy_, proxy_in_, proxy_out_}) ::close(fd);
  }

  McpProxy& proxy() { return *proxy_; }

  void Send(absl::string_view line) {
    std::string data = absl::StrCat(line, "\n");
    absl::string_view rest(data);
    while (!rest.empty()) {
      const ssize_t n = ::write(to_proxy_, rest.data(), rest.size());
      ASSERT_GT(n, 0) << std::strerror(errno);
      rest.remove_prefix(static_cast<size_t>(n));
    }
  }

  void CloseInput() {
    if (to_proxy_ >= 0) ::close(to_proxy_);
    to_proxy_ = -1;
  }

  // The next line the proxy wrote, or nullopt after `timeout`.
  std::optional<std::string> Next(absl::Duration timeout = kWait) {
    const absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      const size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return line;
      }
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return std::nullopt;
      pollfd p = {from_proxy_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) <= 0) continue;
      char chunk[65536];
      const ssize_t n = ::read(from_proxy_, chunk, sizeof(chunk));
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  // Bytes the proxy wrote that the test has not read from the pipe yet
  // (Next's buffer aside).
  size_t Unread() {
    absl::StatusOr<size_t> unread = UnreadBytes(from_proxy_);
    EXPECT_THAT(unread, IsOk());
    return unread.value_or(0);
  }

  // The next line, parsed; a failure when there is none.
  Json NextJson() {
    std::optional<std::string> line = Next();
    if (!line.has_value()) {
      ADD_FAILURE() << "the proxy wrote no line";
      return Json();
    }
    return Parse(*line);
  }

  // Waits for Run to return; its status.
  absl::Status Finish() {
    if (!thread_.joinable()) return run_status_;
    if (!finished_.WaitForNotificationWithTimeout(absl::Seconds(30))) {
      ADD_FAILURE() << "the proxy did not end";
      proxy_->Stop();
      proxy_->Stop();
    }
    thread_.join();
    return run_status_;
  }

 private:
  std::unique_ptr<McpProxy> proxy_;
  int to_proxy_ = -1;
  int from_proxy_ = -1;
  int proxy_in_ = -1;
  int proxy_out_ = -1;
  std::string buffer_;
  std::thread thread_;
  absl::Status run_status_;
  absl::Notification finished_;
};

McpProxyOptions Options(const FakeUnderstudy& fake) {
  McpProxyOptions options;
  options.name = "fs";
  options.http = fake.url();
  options.run = "r 1";
  options.command = FakeServerCommand();
  return options;
}

std::vector<std::string> Upstreams(const std::vector<Received>& received) {
  std::vector<std::string> out;
  for (const Received& r : received) {
    const std::string u = r.Header("x-understudy-mcp-upstream");
    out.push_back(absl::StartsWith(u, "http://127.0.0.1:") ? "url" : u);
  }
  return out;
}

class McpProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePython()) GTEST_SKIP() << kPython << " is needed for the fake MCP server";
  }
};

TEST_F(McpProxyTest, RecordStartsTheServerOnStartUpstreamAndRelaysEverything) {
  FakeUnderstudy fake(/*record=*/true);
  McpProxyOptions options = Options(fake);
  options.agent = "planner";
  options.auth_token = "0123456789abcdef0123";
  ProxyRunner proxy(options);

  proxy.Send(kInitialize);
  Json init = proxy.NextJson();
  EXPECT_EQ(init["id"], 0);
  EXPECT_EQ(init["result"]["serverInfo"]["name"], "fake");
  proxy.Send(kInitialized);
  proxy.Send(ToolCall(2, "progress", "tok"));
  EXPECT_EQ(proxy.NextJson()["params"]["progress"], 0);
  EXPECT_EQ(proxy.NextJson()["params"]["progress"], 1);
  EXPECT_EQ(proxy.NextJson()["method"], "notifications/message");
  Json result = proxy.NextJson();
  EXPECT_EQ(result["id"], 2);
  EXPECT_EQ(result["result"]["seen"],
            Json::parse(R"(["initialize","notifications/initialized","tools/call"])"));
  proxy.CloseInput();
  EXPECT_THAT(proxy.Finish(), IsOk());
  EXPECT_EQ(proxy.Next(absl::Milliseconds(10)), std::nullopt);

  const std::vector<Received> received = fake.received();
  // initialize: 409, then again with the bridge's URL; the others go
  // straight to the bridge; DELETE ends the session.
  ASSERT_EQ(received.size(), 5u);
  EXPECT_THAT(Upstreams(received), ElementsAre("lazy", "url", "url", "url", ""));
  for (const Received& r : received) {
    EXPECT_EQ(r.target, "/run/r%201/mcp/fs");
    EXPECT_EQ(r.Header("authorization"), "Bearer 0123456789abcdef0123");
    EXPECT_EQ(r.Header("x-understudy-agent"), "planner");
  }
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(received[i].method, "POST");
    EXPECT_EQ(received[i].Header("content-type"), "application/json");
    EXPECT_EQ(received[i].Header("accept"), "application/json, text/event-stream");
  }
  EXPECT_EQ(received[1].body, kInitialize);
  EXPECT_EQ(received[0].Header("mcp-session-id"), "");
  EXPECT_EQ(received[2].Header("mcp-session-id"), "sess-1");
  EXPECT_EQ(received[2].Header("mcp-protocol-version"), "2025-06-18");
  EXPECT_EQ(received[4].method, "DELETE");
  EXPECT_EQ(received[4].Header("mcp-session-id"), "sess-1");
}

TEST_F(McpProxyTest, ReplayNeverStartsTheServer) {
  FakeUnderstudy fake(/*record=*/false);
  McpProxyOptions options = Options(fake);
  options.run = "";
  options.command = {"understudy-no-such-command-xyz"};
  ProxyRunner proxy(options);
  proxy.Send(kInitialize);
  EXPECT_EQ(proxy.NextJson()["result"]["protocolVersion"], "2025-03-26");
  proxy.Send(kInitialized);
  proxy.Send(ToolCall(1, "echo"));
  Json answer = proxy.NextJson();
  EXPECT_EQ(answer["id"], 1);
  EXPECT_EQ(answer["result"]["replayed"], true);
  proxy.CloseInput();
  EXPECT_THAT(proxy.Finish(), IsOk());
  std::vector<Received> received = fake.received();
  ASSERT_EQ(received.size(), 4u);
  EXPECT_THAT(Upstreams(received), ElementsAre("lazy", "lazy", "lazy", ""));
  EXPECT_EQ(received[0].target, "/mcp/fs");
  EXPECT_EQ(received[2].Header("mcp-protocol-version"), "2025-03-26");
}

TEST_F(McpProxyTest, LinesThatAreNoMessageAreAnsweredWithErrorsAndReadingGoesOn) {
  FakeUnderstudy fake(/*record=*/false);
  ProxyRunner proxy(Options(fake));
  proxy.Send("this is not json");
  proxy.Send(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  proxy.Send("42");
  proxy.Send("   ");
  proxy.Send(ToolCall(4, "echo"));
  Json parse_error = proxy.NextJson();
  EXPECT_TRUE(parse_error["id"].is_null());
  EXPECT_EQ(parse_error["error"]["code"], provider::jsonrpc::kParseError);
  EXPECT_THAT(parse_error["error"]["message"].get<std::string>(),
              StartsWith("understudy mcp-proxy: message: invalid JSON at byte"));
  Json batch = proxy.NextJson();
  EXPECT_EQ(batch["error"]["code"], provider::jsonrpc::kInvalidRequest);
  EXPECT_THAT(batch["error"]["message"].get<std::string>(), HasSubstr("batch"));
  EXPECT_EQ(proxy.NextJson()["error"]["code"], provider::jsonrpc::kInvalidRequest);
  EXPECT_EQ(proxy.NextJson()["id"], 4);
}

TEST_F(McpProxyTest, LineOver16MiBIsAnsweredWithAnError) {
  FakeUnderstudy fake(/*record=*/false);
  ProxyRunner proxy(Options(fake));
  std::thread writer([&] {
    proxy.Send(std::string(kMaxMcpMessageBytes + 10, 'x'));
    proxy.Send(ToolCall(1, "echo"));
  });
  Json error = proxy.NextJson();
  EXPECT_TRUE(error["id"].is_null());
  EXPECT_EQ(error["error"]["code"], provider::jsonrpc::kInvalidRequest);
  EXPECT_THAT(error["error"]["message"].get<std::string>(), HasSubstr("16 MiB"));
  EXPECT_EQ(proxy.NextJson()["id"], 1);
  writer.join();
}

TEST_F(McpProxyTest, HttpErrorBecomesAJsonRpcErrorForRequestsOnly) {
  FakeUnderstudy fake(/*record=*/false, [](const Received& r, auto out) {
    if (r.method != "POST") return false;
    out->Respond(500, {{"content-type", "text/plain"}}, "boom: " + std::string(300, 'z'));
    return true;
  });
  ProxyRunner proxy(Options(fake));
  proxy.Send(kInitialized);  // A notification: logged, nothing written.
  proxy.Send(R"({"jsonrpc":"2.0","id":"x-1","method":"tools/list"})");
  Json error = proxy.NextJson();
  EXPECT_EQ(error["id"], "x-1");
  EXPECT_EQ(error["error"]["code"], provider::jsonrpc::kInternalError);
  const std::string message = error["error"]["message"];
  EXPECT_THAT(message, StartsWith("understudy mcp-proxy: 500 boom: zzz"));
  EXPECT_LT(message.size(), 260u);
  proxy.CloseInput();
  EXPECT_THAT(proxy.Finish(), IsOk());
  EXPECT_EQ(proxy.Next(absl::Milliseconds(10)), std::nullopt);
}

TEST_F(McpProxyTest, UnderstudysOwnJsonRpcErrorIsPassedOnAsItIs) {
  FakeUnderstudy fake(/*record=*/false, [](const Received& r, auto out) {
    if (r.method != "POST") return false;
    const Json id = Json::parse(r.body)["id"];
    out->Respond(404, {{"content-type", "application/json"}},
                 Json({{"jsonrpc", "2.0"},
                       {"id", id},
                       {"error", {{"code", -32600}, {"message", "unknown run \"r 1\""}}}})
                     .dump());
    return true;
  });
  ProxyRunner proxy(Options(fake));
  proxy.Send(R"({"jsonrpc":"2.0","id":"x-2","method":"tools/list"})");
  EXPECT_EQ(proxy.NextJson(),
            Json::parse(R"({"jsonrpc":"2.0","id":"x-2","error":{"code":-32600,"message":"unknown run \"r 1\""}})"));
}

TEST_F(McpProxyTest, UnreachableServerBecomesAJsonRpcError) {
  FakeUnderstudy fake(/*record=*/false);
  McpProxyOptions options = Options(fake);
  {
    // A port nobody listens on: a server's, once it is gone.
    FakeUnderstudy gone(/*record=*/false);
    options.http = gone.url();
  }
  ProxyRunner proxy(options);
  proxy.Send(ToolCall(7, "echo"));
  Json error = proxy.NextJson();
  EXPECT_EQ(error["id"], 7);
  EXPECT_EQ(error["error"]["code"], provider::jsonrpc::kInternalError);
  EXPECT_THAT(error["error"]["message"].get<std::string>(), StartsWith("understudy mcp-proxy: "));
}

TEST_F(McpProxyTest, ConcurrentRequestsAreRelayedAtOnceAndWrittenWhole) {
  constexpr int kRequests = 10;
  absl::Mutex mu;
  std::vector<std::pair<Json, std::shared_ptr<service::HttpResponder>>> held;
  FakeUnderstudy fake(/*record=*/false, [&](const Received& r, auto out) {
    if (r.method != "POST") return false;
    absl::MutexLock lock(&mu);
    held.emplace_back(Json::parse(r.body), out);
    if (held.size() < static_cast<size_t>(kRequests)) return true;
    // All are in flight at once: answer them last first, with bodies far
    // larger than a pipe's atomic write.
    for (auto it = held.rbegin(); it != held.rend(); ++it) {
      Json answer = {{"jsonrpc", "2.0"},
                     {"id", it->first["id"]},
                     {"result", {{"blob", std::string(200000, 'a' + it->first["id"].get<int>())}}}};
      it->second->Respond(200, {{"content-type", "application/json"}}, answer.dump());
    }
    return true;
  });
  ProxyRunner proxy(Options(fake));
  for (int i = 0; i < kRequests; ++i) proxy.Send(ToolCall(i, "echo"));
  std::set<int> ids;
  for (int i = 0; i < kRequests; ++i) {
    Json answer = proxy.NextJson();
    ASSERT_TRUE(answer.contains("id")) << "a line that is not a whole answer";
    const int id = answer["id"];
    EXPECT_EQ(answer["result"]["blob"], std::string(200000, 'a' + id));
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kRequests));
}

TEST_F(McpProxyTest, MessagesAfterANotificationWaitUntilItIsAccepted) {
  absl::Mutex mu;
  bool notification_accepted = false;
  std::vector<bool> accepted_before_request;
  std::vector<std::thread> answering;
  FakeUnderstudy fake(/*record=*/false, [&](const Received& r, auto out) {
    if (r.method != "POST") return false;
    if (absl::StrContains(r.body, "notifications/initialized")) {
      // Accepted a little later: a proxy that did not wait for it would
      // send the next request meanwhile.
      absl::MutexLock lock(&mu);
      answering.emplace_back([&mu, &notification_accepted, out] {
        absl::SleepFor(absl::Milliseconds(20));
        {
          absl::MutexLock lock(&mu);
          notification_accepted = true;
        }
        out->Respond(202, {}, "");
      });
      return true;
    }
    absl::MutexLock lock(&mu);
    accepted_before_request.push_back(notification_accepted);
    return false;
  });
  ProxyRunner proxy(Options(fake));
  proxy.Send(kInitialized);
  proxy.Send(ToolCall(1, "echo"));
  EXPECT_EQ(proxy.NextJson()["id"], 1);
  {
    absl::MutexLock lock(&mu);
    EXPECT_THAT(accepted_before_request, ElementsAre(true));
  }
  for (std::thread& t : answering) t.join();
}

TEST_F(McpProxyTest, EventsAreWrittenAsTheyArrive) {
  absl::Notification release;
  std::thread finisher;
  FakeUnderstudy fake(/*record=*/false, [&](const Received& r, auto out) {
    if (r.method != "POST") return false;
    out->StartStream(200, {{"content-type", "text/event-stream"}});
    out->Write(
        "event: message\ndata: "
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
        "progress\",\"params\":{\"progress\":1}}\n\n");
    finisher = std::thread([&release, out] {
      // The rest only once the test has seen the first event on stdout.
      if (!release.WaitForNotificationWithTimeout(kWait)) return;
      out->Write("data: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":3,\"result\":{}}\r\n\r\n");
      out->End();
    });
    return true;
  });
  ProxyRunner proxy(Options(fake));
  proxy.Send(ToolCall(3, "slow"));
  EXPECT_EQ(proxy.NextJson()["method"], "notifications/progress");
  release.Notify();
  // A data field split over lines is still one line on stdout.
  std::optional<std::string> last = proxy.Next();
  EXPECT_EQ(last, R"({"jsonrpc":"2.0","id":3,"result":{}})");
  finisher.join();
}

// A replay answers a tools/call's progress notifications and its response
// at once. The SDK clients handle a notification a moment after the read
// that brings it and a response at once: read together, the response
// would overtake the notifications and they would be dropped.
TEST_F(McpProxyTest, AResponseWaitsUntilTheAgentHasReadTheNotificationsBeforeIt) {
  const std::string first =
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}})";
  const std::string second =
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":2}})";
  const std::string response = R"({"jsonrpc":"2.0","id":3,"result":{"content":[]}})";
  FakeUnderstudy fake(/*record=*/false, [&](const Received& r, auto out) {
    if (r.method != "POST") return false;
    out->StartStream(200, {{"content-type", "text/event-stream"}});
    for (const std::string* event : {&first, &second, &response}) {
      out->Write(absl::StrCat("event: message\ndata: ", *event, "\n\n"));
    }
    out->End();
    return true;
  });
  McpProxyOptions options = Options(fake);
  options.read_wait = kWait;
  ProxyRunner proxy(options);
  proxy.Send(ToolCall(3, "slow", "t"));
  const size_t notifications = first.size() + second.size() + 2;
  ASSERT_TRUE(WaitFor([&] { return proxy.Unread() >= notifications; }));
  // Unread, the notifications hold the response back.
  EXPECT_FALSE(WaitFor([&] { return proxy.Unread() > notifications; }, absl::Milliseconds(200)))
      << "the response was written before the notifications were read";
  EXPECT_EQ(proxy.Next(), first);
  EXPECT_EQ(proxy.Next(), second);
  EXPECT_EQ(proxy.Next(), response);
}

TEST_F(McpProxyTest, AResponseGoesOutAfterReadWaitWhenTheAgentDoesNotRead) {
  FakeUnderstudy fake(/*record=*/false, [&](const Received& r, auto out) {
    if (r.method != "POST") return false;
    out->StartStream(200, {{"content-type", "text/event-stream"}});
    out->Write("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n");
    out->Write("data: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n\n");
    out->End();
    return true;
  });
  McpProxyOptions options = Options(fake);
  options.read_wait = absl::Milliseconds(50);
  ProxyRunner proxy(options);
  proxy.Send(ToolCall(4, "slow"));
  const std::string both = absl::StrCat(R"({"jsonrpc":"2.0","method":"notifications/message"})",
                                        "\n", R"({"jsonrpc":"2.0","id":4,"result":{}})", "\n");
  // Both lines end up in the pipe, nobody having read the first.
  ASSERT_TRUE(WaitFor([&] { return proxy.Unread() == both.size(); }));
  EXPECT_EQ(proxy.NextJson()["method"], "notifications/message");
  EXPECT_EQ(proxy.NextJson()["id"], 4);
}

TEST_F(McpProxyTest, EndCutsAnswersThatTakeTooLongAndAnswersTheirRequests) {
  absl::Mutex mu;
  std::vector<std::shared_ptr<service::HttpResponder>> held;
  FakeUnderstudy fake(/*record=*/false, [&](const Received& r, auto out) {
    if (r.method != "POST") return false;
    absl::MutexLock lock(&mu);
    held.push_back(out);  // Never answered.
    return true;
  });
  McpProxyOptions options = Options(fake);
  options.drain_timeout = absl::Milliseconds(200);
  ProxyRunner proxy(options);
  proxy.Send(ToolCall(1, "echo"));
  // The request is in flight once the fake has it.
  const absl::Time deadline = absl::Now() + kWait;
  while (fake.received().empty() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_EQ(fake.received().size(), 1u);
  proxy.CloseInput();
  Json error = proxy.NextJson();
  EXPECT_EQ(error["id"], 1);
  EXPECT_THAT(error["error"]["message"].get<std::string>(), HasSubstr("shutting down"));
  EXPECT_THAT(proxy.Finish(), IsOk());
}

TEST_F(McpProxyTest, CancelledRequestIsDroppedAtOnceAndGetsNoAnswer) {
  absl::Mutex mu;
  std::vector<std::shared_ptr<service::HttpResponder>> held;
  FakeUnderstudy fake(/*record=*/false, [&](const Received& r, auto out) {
    if (r.method != "POST" || !Parse(r.body).contains("id")) return false;
    absl::MutexLock lock(&mu);
    held.push_back(out);  // Never answered: only the cancellation ends it.
    return true;
  });
  McpProxyOptions options = Options(fake);
  options.drain_timeout = absl::Seconds(10);
  ProxyRunner proxy(options);
  proxy.Send(ToolCall(1, "hang"));
  // The request is in flight once the fake has it.
  const absl::Time deadline = absl::Now() + kWait;
  while (fake.received().empty() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_EQ(fake.received().size(), 1u);

  const absl::Time start = absl::Now();
  proxy.Send(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"timeout"}})");
  proxy.CloseInput();
  EXPECT_THAT(proxy.Finish(), IsOk());
  // Not held for the drain timeout: the POST was cancelled at once.
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));

  // Nothing was written for the request (not even a "shutting down" error).
  while (std::optional<std::string> line = proxy.Next(absl::Milliseconds(100))) {
    EXPECT_NE(Parse(*line).value("id", Json()), Json(1)) << *line;
  }
  // The notification itself was passed on.
  bool passed_on = false;
  for (const Received& r : fake.received()) {
    if (r.method == "POST" && Parse(r.body).value("method", "") == "notifications/cancelled") {
      passed_on = true;
    }
  }
  EXPECT_TRUE(passed_on);
}

TEST_F(McpProxyTest, StopEndsPromptlyWithoutEndOfInput) {
  FakeUnderstudy fake(/*record=*/true);
  ProxyRunner proxy(Options(fake));
  proxy.Send(kInitialize);
  EXPECT_EQ(proxy.NextJson()["id"], 0);  // The real server runs.
  const absl::Time start = absl::Now();
  proxy.proxy().Stop();
  EXPECT_THAT(proxy.Finish(), IsOk());
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  const std::vector<Received> received = fake.received();
  ASSERT_FALSE(received.empty());
  EXPECT_EQ(received.back().method, "DELETE");
}

TEST_F(McpProxyTest, ServerCrashingMidCallIsAnErrorNamingIt) {
  FakeUnderstudy fake(/*record=*/true);
  ProxyRunner proxy(Options(fake));
  proxy.Send(kInitialize);
  EXPECT_EQ(proxy.NextJson()["id"], 0);
  proxy.Send(ToolCall(5, "crash"));
  Json error = proxy.NextJson();
  EXPECT_EQ(error["id"], 5);
  const std::string message = error["error"]["message"];
  EXPECT_THAT(message, StartsWith("understudy mcp-proxy: 502 "));
  EXPECT_THAT(message, HasSubstr("exited with status 3"));
  proxy.Send(ToolCall(6, "echo"));
  EXPECT_THAT(proxy.NextJson()["error"]["message"].get<std::string>(), HasSubstr("502"));
}

TEST_F(McpProxyTest, ServerThatCannotStartIsAnErrorNamingTheCommand) {
  FakeUnderstudy fake(/*record=*/true);
  McpProxyOptions options = Options(fake);
  options.command = {"understudy-no-such-command-xyz", "--flag"};
  ProxyRunner proxy(options);
  proxy.Send(kInitialize);
  Json error = proxy.NextJson();
  EXPECT_EQ(error["id"], 0);
  EXPECT_THAT(
      error["error"]["message"].get<std::string>(),
      AllOf(HasSubstr("cannot start the MCP server"), HasSubstr("understudy-no-such-command-xyz")));
}

TEST(McpProxyCreateTest, MissingPiecesAreUsageErrors) {
  McpProxyOptions options;
  options.name = "fs";
  options.http = "127.0.0.1:1";
  options.command = {"x"};
  EXPECT_THAT(McpProxy::Create(options), IsOk());
  McpProxyOptions no_name = options;
  no_name.name = "";
  EXPECT_THAT(McpProxy::Create(no_name), StatusIs(absl::StatusCode::kInvalidArgument));
  McpProxyOptions no_http = options;
  no_http.http = "";
  EXPECT_THAT(McpProxy::Create(no_http),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("UNDERSTUDY_HTTP")));
  McpProxyOptions no_command = options;
  no_command.command.clear();
  EXPECT_THAT(McpProxy::Create(no_command),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("after --")));
  McpProxyOptions bad_url = options;
  bad_url.http = "ftp://x";
  EXPECT_THAT(McpProxy::Create(bad_url), StatusIs(absl::StatusCode::kInvalidArgument));
}

// Not a check but a measurement: what a call through the proxy costs over
// the same call made directly, on loopback, against an answer that is
// ready at once. Printed; the bound only catches a gross regression (a
// missing TCP_NODELAY costs 40 ms a call).
TEST_F(McpProxyTest, RoundTripCostIsSmall) {
  FakeUnderstudy fake(/*record=*/false);
  ProxyRunner proxy(Options(fake));
  constexpr int kCalls = 2000;
  auto p50 = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::vector<double> through_proxy;
  for (int i = 0; i < kCalls; ++i) {
    const absl::Time start = absl::Now();
    proxy.Send(ToolCall(i, "echo"));
    std::optional<std::string> line = proxy.Next();
    ASSERT_TRUE(line.has_value());
    through_proxy.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  Client direct(fake.url() + "/mcp/fs");
  std::vector<double> straight;
  for (int i = 0; i < kCalls; ++i) {
    const absl::Time start = absl::Now();
    Response r = direct.Post(ToolCall(i, "echo"));
    ASSERT_EQ(r.status, 200);
    straight.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  const double proxied = p50(through_proxy);
  const double direct_p50 = p50(straight);
  std::printf("round trip p50: through the proxy %.1f us, direct HTTP %.1f us, added %.1f us\n",
              proxied, direct_p50, proxied - direct_p50);
  RecordProperty("proxy_p50_us", static_cast<int>(proxied));
  RecordProperty("direct_p50_us", static_cast<int>(direct_p50));
  EXPECT_LT(proxied, 20000);
}

}  // namespace
}  // namespace cli
}  // namespace understudy
