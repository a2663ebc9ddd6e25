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
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "recorder/http_upstream.h"
#include "service/http_server.h"

namespace understudy {
namespace cli {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using Json = nlohmann::json;

// Every wait in these tests is bounded by this; a healthy run takes
// milliseconds.
constexpr absl::Duration kWait = absl::Seconds(10);
constexpr char kPython[] = "/usr/bin/python3";

// A stdio MCP server for the bridge to run. Answers initialize; tools/call
// by the tool's name: "echo" answers its arguments and every method it has
// seen so far; "progress" first sends two notifications/progress for the
// request's progress token and a notifications/message; "ask" sends a
// roots/list request to the client and answers with what came back; "hang"
// never answers; "crash" exits with status 3.
constexpr char kFakeServer[] = R"PY(
import json, sys
seen = []
def send(o):
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()
while True:
    line = sys.stdin.readline()
    if not line:
        break
    if not line.strip():
        continue
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    seen.append(method if method else "response")
    if method is None or "id" not in m:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-06-18",
              "capabilities": {}, "serverInfo": {"name": "fake", "version": "1"}}})
        continue
    if method != "tools/call":
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no " + method}})
        continue
    params = m.get("params", {})
    name = params.get("name")
    token = params.get("_meta", {}).get("progressToken")
    if name == "crash":
        sys.exit(3)
    if name == "hang":
        continue
    if name == "progress":
        for i in range(2):
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": token, "progress": i}})
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "data": "working"}})
    if name == "ask":
        send({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"})
        answer = json.loads(sys.stdin.readline())
        send({"jsonrpc": "2.0", "id": mid, "result": {"answer": answer}})
        continue
    send({"jsonrpc": "2.0", "id": mid, "result": {"arguments": params.get("arguments"),
          "seen": seen}})
)PY";

std::vector<std::string> FakeServerCommand() { return {kPython, "-u", "-c", kFakeServer}; }

bool HavePython() { return ::access(kPython, X_OK) == 0; }

// ---------------------------------------------------------------------------
// Framing

std::vector<std::string> Texts(const std::vector<LineSplitter::Line>& lines) {
  std::vector<std::string> out;
  for (const auto& line : lines) out.push_back(line.too_long ? "<too long>" : line.text);
  return out;
}

TEST(LineSplitterTest, SplitsLinesAcrossPiecesAndDropsCarriageReturns) {
  LineSplitter splitter;
  std::vector<LineSplitter::Line> lines;
  splitter.Feed("a\nbc", &lines);
  splitter.Feed("d\r", &lines);
  splitter.Feed("\n\n", &lines);
  splitter.Feed("e", &lines);
  EXPECT_THAT(Texts(lines), ElementsAre("a", "bcd", ""));
  lines.clear();
  splitter.Finish(&lines);
  EXPECT_THAT(Texts(lines), ElementsAre("e"));
}

TEST(LineSplitterTest, OverlongLineIsReportedOnceAndReadingGoesOn) {
  LineSplitter splitter(8);
  std::vector<LineSplitter::Line> lines;
  splitter.Feed("0123456789", &lines);
  splitter.Feed("abcdef", &lines);
  EXPECT_THAT(lines, IsEmpty());
  splitter.Feed("xyz\nok\n12345678\r\n123456789\n", &lines);
  EXPECT_THAT(Texts(lines), ElementsAre("<too long>", "ok", "12345678", "<too long>"));
}

TEST(LineSplitterTest, OverlongLastLineWithoutNewlineIsReportedAtTheEnd) {
  LineSplitter splitter(4);
  std::vector<LineSplitter::Line> lines;
  splitter.Feed("abcdefgh", &lines);
  splitter.Finish(&lines);
  EXPECT_THAT(Texts(lines), ElementsAre("<too long>"));
}

// ---------------------------------------------------------------------------
// Server-sent events

std::vector<std::string> ParseSse(const std::vector<absl::string_view>& pieces) {
  SseParser parser;
  std::vector<std::string> events;
  auto collect = [&](std::string data) { events.push_back(std::move(data)); };
  for (absl::string_view piece : pieces) parser.Feed(piece, collect);
  parser.Finish(collect);
  return events;
}

TEST(SseParserTest, EveryWayOfSplittingTheStreamGivesTheSameEvents) {
  const std::string stream =
      ": keep-alive\r\n"
      "event: message\r\n"
      "data: {\"a\":1}\r\n"
      "\r\n"
      "id: 7\n"
      "data: line1\n"
      "data:line2\n"
      "\n"
      "event: empty\n"
      "\n"
      "data: {\"b\":2}\r\r"
      "data\n\n";
  const std::vector<std::string> expected = {"{\"a\":1}", "line1\nline2", "{\"b\":2}", ""};
  ASSERT_EQ(ParseSse({stream}), expected);
  for (size_t i = 0; i <= stream.size(); ++i) {
    for (size_t j = i; j <= stream.size(); ++j) {
      const absl::string_view s(stream);
      ASSERT_EQ(ParseSse({s.substr(0, i), s.substr(i, j - i), s.substr(j)}), expected)
          << "split at " << i << " and " << j;
    }
  }
  std::vector<absl::string_view> bytes;
  for (size_t i = 0; i < stream.size(); ++i)
    bytes.push_back(absl::string_view(stream).substr(i, 1));
  EXPECT_EQ(ParseSse(bytes), expected);
}

TEST(SseParserTest, EventWithoutItsBlankLineIsDeliveredAtTheEnd) {
  EXPECT_THAT(ParseSse({"data: {\"last\":true}"}), ElementsAre("{\"last\":true}"));
  EXPECT_THAT(ParseSse({"data: x\r"}), ElementsAre("x"));
  EXPECT_THAT(ParseSse({": only a comment\n"}), IsEmpty());
}

// ---------------------------------------------------------------------------
// Messages

TEST(ParseMcpMessageTest, ClassifiesRequestsNotificationsAndResponses) {
  absl::StatusOr<McpMessage> request = ParseMcpMessage(
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":"p"}}})");
  ASSERT_THAT(request, IsOk());
  EXPECT_EQ(request->kind, McpMessageKind::kRequest);
  EXPECT_EQ(request->method, "tools/call");
  EXPECT_EQ(request->id, "7");
  EXPECT_EQ(request->progress_token, "\"p\"");

  absl::StatusOr<McpMessage> progress = ParseMcpMessage(
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p"}})");
  ASSERT_THAT(progress, IsOk());
  EXPECT_EQ(progress->kind, McpMessageKind::kNotification);
  EXPECT_EQ(progress->progress_token, "\"p\"");
  EXPECT_EQ(progress->id, "");

  absl::StatusOr<McpMessage> response =
      ParseMcpMessage(R"({"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"x"}})");
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->kind, McpMessageKind::kResponse);
  EXPECT_EQ(response->id, "\"a\"");
}

TEST(ParseMcpMessageTest, NotJsonIsAParseErrorNamingTheOffset) {
  absl::StatusOr<McpMessage> m = ParseMcpMessage("{\"id\": 1, oops}");
  EXPECT_THAT(m, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte")));
  EXPECT_EQ(JsonRpcErrorCode(m.status()), kJsonRpcParseError);
}

TEST(ParseMcpMessageTest, BatchesAndNonObjectsAreInvalidRequests) {
  absl::StatusOr<McpMessage> batch = ParseMcpMessage(R"([{"jsonrpc":"2.0","method":"x"}])");
  EXPECT_THAT(batch, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batch")));
  EXPECT_EQ(JsonRpcErrorCode(batch.status()), kJsonRpcInvalidRequest);
  absl::StatusOr<McpMessage> number = ParseMcpMessage("42");
  EXPECT_EQ(JsonRpcErrorCode(number.status()), kJsonRpcInvalidRequest);
  absl::StatusOr<McpMessage> neither = ParseMcpMessage(R"({"jsonrpc":"2.0","id":1})");
  EXPECT_EQ(JsonRpcErrorCode(neither.status()), kJsonRpcInvalidRequest);
  EXPECT_EQ(JsonRpcErrorCode(absl::InternalError("x")), kJsonRpcInternalError);
}

TEST(JsonRpcErrorResponseTest, CarriesTheIdOrNull) {
  EXPECT_EQ(JsonRpcErrorResponse("7", -32603, "boom"),
            R"({"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"boom"}})");
  EXPECT_EQ(JsonRpcErrorResponse("", -32700, "x"),
            R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}})");
  EXPECT_EQ(JsonRpcErrorResponse("\"a\"", -32600, "x"),
            R"({"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"x"}})");
}

TEST(ToOneLineTest, KeepsSingleLinesAndCompactsOthers) {
  EXPECT_THAT(ToOneLine(R"({"b": 1,  "a": 2})"), IsOk());
  EXPECT_EQ(*ToOneLine(R"({"b": 1,  "a": 2})"), R"({"b": 1,  "a": 2})");
  EXPECT_EQ(*ToOneLine("{\n  \"b\": 1,\r\n  \"a\": \"x\\ny\"\n}"), R"({"b":1,"a":"x\ny"})");
  EXPECT_THAT(ToOneLine("not\njson"), StatusIs(absl::StatusCode::kInvalidArgument));
}

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
// The child process

// Writes all of `data` to `fd` (non-blocking).
absl::Status WriteAllForTest(int fd, absl::string_view data) {
  const absl::Time deadline = absl::Now() + kWait;
  while (!data.empty() && absl::Now() < deadline) {
    pollfd p = {fd, POLLOUT, 0};
    ::poll(&p, 1, 100);
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return absl::UnavailableError(std::strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return data.empty() ? absl::OkStatus() : absl::DeadlineExceededError("write");
}

// Everything `fd` (non-blocking) gives until EOF or `timeout`.
std::string ReadAll(int fd, absl::Duration timeout = kWait) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string out;
  char buffer[4096];
  while (absl::Now() < deadline) {
    pollfd p = {fd, POLLIN, 0};
    ::poll(&p, 1, 100);
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0) return out;
    if (n > 0) out.append(buffer, static_cast<size_t>(n));
  }
  ADD_FAILURE() << "no EOF within the deadline";
  return out;
}

TEST(ChildProcessTest, RunsTheCommandExactlyAsGiven) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Spawn({"sh", "-c", "echo hi"});
  ASSERT_THAT(child, IsOk());
  EXPECT_EQ(ReadAll((*child)->stdout_fd()), "hi\n");
  std::optional<int> status = (*child)->WaitFor(kWait);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(ChildProcess::DescribeExit(*status), "exited with status 0");

  // Arguments that look like options (ours or anyone's) are the command's.
  child = ChildProcess::Spawn(
      {"sh", "-c", "printf '%s|' \"$0\" \"$@\"; cat", "--name", "-x", "--", "a b"});
  ASSERT_THAT(child, IsOk());
  ASSERT_THAT(WriteAllForTest((*child)->stdin_fd(), "from stdin"), IsOk());
  (*child)->CloseStdin();
  EXPECT_EQ(ReadAll((*child)->stdout_fd()), "--name|-x|--|a b|from stdin");
}

TEST(ChildProcessTest, ExitStatusIsReported) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Spawn({"sh", "-c", "exit 3"});
  ASSERT_THAT(child, IsOk());
  std::optional<int> status = (*child)->WaitFor(kWait);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(ChildProcess::DescribeExit(*status), "exited with status 3");
}

TEST(ChildProcessTest, MissingCommandIsNotFound) {
  EXPECT_THAT(ChildProcess::Spawn({"understudy-no-such-command-xyz"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("understudy-no-such-command-xyz")));
  EXPECT_THAT(ChildProcess::Spawn({}), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ChildProcessTest, TerminateEndsAChildThatIgnoresEof) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Spawn({"sleep", "30"});
  ASSERT_THAT(child, IsOk());
  const absl::Time start = absl::Now();
  std::optional<int> status = (*child)->Terminate(absl::Milliseconds(100));
  ASSERT_TRUE(status.has_value());
  EXPECT_THAT(ChildProcess::DescribeExit(*status), StartsWith("killed by signal 15"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(ChildProcessTest, TerminateKillsAChildThatIgnoresSigterm) {
  // The trap is set before the script says it is ready, so SIGTERM cannot
  // come first.
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Spawn({"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"});
  ASSERT_THAT(child, IsOk());
  std::string ready;
  const absl::Time deadline = absl::Now() + kWait;
  while (!absl::StrContains(ready, "\n") && absl::Now() < deadline) {
    pollfd p = {(*child)->stdout_fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
    char c;
    if (::read((*child)->stdout_fd(), &c, 1) == 1) ready.push_back(c);
  }
  ASSERT_EQ(ready, "ready\n");
  std::optional<int> status = (*child)->Terminate(absl::Milliseconds(100));
  ASSERT_TRUE(status.has_value());
  EXPECT_THAT(ChildProcess::DescribeExit(*status), StartsWith("killed by signal 9"));
}

// ---------------------------------------------------------------------------
// HTTP helpers

// One whole HTTP response, as a client saw it.
struct Response {
  absl::Status transport;
  int status = 0;
  recorder::UpstreamHttpHeaders headers;
  std::string body;

  std::string Header(absl::string_view name) const {
    for (const auto& [k, v] : headers) {
      if (k == name) return v;
    }
    return "";
  }
  std::vector<std::string> Events() const {
    std::vector<std::string> events;
    SseParser parser;
    auto collect = [&](std::string data) { events.push_back(std::move(data)); };
    parser.Feed(body, collect);
    parser.Finish(collect);
    return events;
  }
};

class Collector final : public recorder::UpstreamHttpObserver {
 public:
  void OnHead(int status, recorder::UpstreamHttpHeaders headers) override {
    response_.status = status;
    response_.headers = std::move(headers);
  }
  void OnData(absl::string_view bytes) override {
    response_.body.append(bytes.data(), bytes.size());
  }
  void OnDone(absl::Status status) override {
    response_.transport = std::move(status);
    done_.Notify();
  }
  Response Wait() {
    if (!done_.WaitForNotificationWithTimeout(kWait)) {
      ADD_FAILURE() << "no response within the deadline";
      Response r;
      r.transport = absl::DeadlineExceededError("test deadline");
      return r;
    }
    return response_;
  }

 private:
  Response response_;
  absl::Notification done_;
};

// A blocking HTTP client for one base URL.
class Client {
 public:
  explicit Client(const std::string& url) {
    // "http://127.0.0.1:PORT/path" → base and path.
    const size_t slash = url.find('/', url.find("://") + 3);
    recorder::HttpUpstream::Options options;
    options.base_url = url.substr(0, slash);
    path_ = slash == std::string::npos ? "/" : url.substr(slash);
    http_ = std::move(*recorder::HttpUpstream::Create(options));
  }

  std::shared_ptr<Collector> Start(const std::string& method, std::string body) {
    recorder::UpstreamHttpRequest request;
    request.method = method;
    request.path = path_;
    request.headers = {{"content-type", "application/json"}};
    request.body = std::move(body);
    auto collector = std::make_shared<Collector>();
    http_->Send(std::move(request), collector);
    return collector;
  }
  Response Post(std::string body) { return Start("POST", std::move(body))->Wait(); }

 private:
  std::string path_;
  std::unique_ptr<recorder::HttpUpstream> http_;
};

std::string ToolCall(int id, const std::string& tool, const std::string& progress_token = "") {
  Json m = {{"jsonrpc", "2.0"},
            {"id", id},
            {"method", "tools/call"},
            {"params", {{"name", tool}, {"arguments", {{"n", id}}}}}};
  if (!progress_token.empty()) m["params"]["_meta"]["progressToken"] = progress_token;
  return m.dump();
}

constexpr char kInitialize[] =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}})";
constexpr char kInitialized[] = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";

Json Parse(const std::string& text) {
  Json j = Json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << text;
  return j;
}

// ---------------------------------------------------------------------------
// The bridge

class StdioBridgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePython()) GTEST_SKIP() << kPython << " is needed for the fake MCP server";
  }

  std::unique_ptr<StdioBridge> Start(std::function<McpInitState()> init_state = nullptr) {
    StdioBridgeOptions options;
    options.command = FakeServerCommand();
    options.init_state = std::move(init_state);
    absl::StatusOr<std::unique_ptr<StdioBridge>> bridge = StdioBridge::Start(std::move(options));
    EXPECT_THAT(bridge, IsOk());
    if (!bridge.ok()) return nullptr;
    EXPECT_THAT((*bridge)->url(), StartsWith("http://127.0.0.1:"));
    return std::move(*bridge);
  }
};

TEST_F(StdioBridgeTest, RequestIsAnsweredWithItsNotificationsThenItsResponse) {
  std::unique_ptr<StdioBridge> bridge = Start();
  ASSERT_NE(bridge, nullptr);
  Client client(bridge->url());
  Response r = client.Post(ToolCall(5, "progress", "tok-5"));
  ASSERT_THAT(r.transport, IsOk());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("content-type"), "text/event-stream");
  std::vector<std::string> events = r.Events();
  ASSERT_EQ(events.size(), 4u) << r.body;
  EXPECT_EQ(Parse(events[0])["method"], "notifications/progress");
  EXPECT_EQ(Parse(events[0])["params"]["progressToken"], "tok-5");
  EXPECT_EQ(Parse(events[1])["params"]["progress"], 1);
  EXPECT_EQ(Parse(events[2])["method"], "notifications/message");
  EXPECT_EQ(Parse(events[3])["id"], 5);
  EXPECT_EQ(Parse(events[3])["result"]["arguments"]["n"], 5);
}

TEST_F(StdioBridgeTest, NotificationIsAccepted) {
  std::unique_ptr<StdioBridge> bridge = Start();
  ASSERT_NE(bridge, nullptr);
  Client client(bridge->url());
  Response r = client.Post(kInitialized);
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(r.body, "");
  // It reached the child, in order.
  r = client.Post(ToolCall(1, "echo"));
  ASSERT_EQ(r.Events().size(), 1u);
  EXPECT_EQ(Parse(r.Events()[0])["result"]["seen"],
            Json::parse(R"(["notifications/initialized","tools/call"])"));
  EXPECT_EQ(client.Start("GET", "")->Wait().status, 405);
  EXPECT_EQ(client.Start("DELETE", "")->Wait().status, 200);
  EXPECT_EQ(client.Post("[1]").status, 400);
}

TEST_F(StdioBridgeTest, ServerToClientRequestIsRefusedAtOnce) {
  std::unique_ptr<StdioBridge> bridge = Start();
  ASSERT_NE(bridge, nullptr);
  Client client(bridge->url());
  Response r = client.Post(ToolCall(2, "ask"));
  ASSERT_EQ(r.Events().size(), 1u) << r.body;
  const Json answer = Parse(r.Events()[0])["result"]["answer"];
  EXPECT_EQ(answer["id"], "srv-1");
  EXPECT_EQ(answer["error"]["code"], -32601);
  EXPECT_THAT(answer["error"]["message"].get<std::string>(),
              HasSubstr("does not relay server-to-client requests"));
}

TEST_F(StdioBridgeTest, ChildCrashingMidCallFailsEveryPendingAndLaterRequest) {
  std::unique_ptr<StdioBridge> bridge = Start();
  ASSERT_NE(bridge, nullptr);
  Client client(bridge->url());
  std::shared_ptr<Collector> hanging = client.Start("POST", ToolCall(1, "hang"));
  // The hang is pending once the child has seen it: an echo after it says so.
  Response echo = client.Post(ToolCall(2, "echo"));
  ASSERT_EQ(echo.Events().size(), 1u);
  Response crash = client.Post(ToolCall(3, "crash"));
  Response hung = hanging->Wait();
  for (const Response* r : {&crash, &hung}) {
    EXPECT_EQ(r->status, 502);
    const Json error = Parse(r->body)["error"];
    EXPECT_EQ(error["code"], kJsonRpcInternalError);
    EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("exited with status 3"));
    EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("python3"));
  }
  EXPECT_EQ(Parse(crash.body)["id"], 3);
  EXPECT_EQ(Parse(hung.body)["id"], 1);
  Response later = client.Post(ToolCall(4, "echo"));
  EXPECT_EQ(later.status, 502);
  EXPECT_THAT(later.body, HasSubstr("exited with status 3"));
}

TEST_F(StdioBridgeTest, FreshChildIsInitializedWithTheAgentsInitializeFirst) {
  std::unique_ptr<StdioBridge> bridge = Start([] {
    McpInitState state;
    state.initialize = kInitialize;
    state.initialized_sent = true;
    return state;
  });
  ASSERT_NE(bridge, nullptr);
  Client client(bridge->url());
  Response r = client.Post(ToolCall(9, "echo"));
  std::vector<std::string> events = r.Events();
  ASSERT_EQ(events.size(), 1u) << r.body;  // The initialize's answer is not relayed.
  EXPECT_EQ(Parse(events[0])["id"], 9);
  EXPECT_EQ(Parse(events[0])["result"]["seen"],
            Json::parse(R"(["initialize","notifications/initialized","tools/call"])"));
}

TEST_F(StdioBridgeTest, ChildWhoseFirstMessageIsInitializeIsNotInitializedTwice) {
  int asked = 0;
  std::unique_ptr<StdioBridge> bridge = Start([&asked] {
    ++asked;
    return McpInitState{kInitialize, true};
  });
  ASSERT_NE(bridge, nullptr);
  Client client(bridge->url());
  Response init = client.Post(kInitialize);
  ASSERT_EQ(init.Events().size(), 1u);
  EXPECT_EQ(Parse(init.Events()[0])["id"], 0);
  EXPECT_EQ(client.Post(kInitialized).status, 202);
  Response r = client.Post(ToolCall(1, "echo"));
  ASSERT_EQ(r.Events().size(), 1u);
  EXPECT_EQ(Parse(r.Events()[0])["result"]["seen"],
            Json::parse(R"(["initialize","notifications/initialized","tools/call"])"));
  EXPECT_EQ(asked, 0);
}

TEST_F(StdioBridgeTest, ShellCommandWithOptionLikeArgumentsWorks) {
  StdioBridgeOptions options;
  options.command = {
      "sh", "-c",
      "while read l; do echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"via\":\"'$0'\"}}'; done",
      "-sh-"};
  absl::StatusOr<std::unique_ptr<StdioBridge>> bridge = StdioBridge::Start(std::move(options));
  ASSERT_THAT(bridge, IsOk());
  Client client((*bridge)->url());
  Response r = client.Post(ToolCall(1, "x"));
  ASSERT_EQ(r.Events().size(), 1u) << r.body;
  EXPECT_EQ(Parse(r.Events()[0])["result"]["via"], "-sh-");
}

TEST_F(StdioBridgeTest, ShutdownAnswersPendingRequestsAndEndsTheChild) {
  std::unique_ptr<StdioBridge> bridge = Start();
  ASSERT_NE(bridge, nullptr);
  Client client(bridge->url());
  std::shared_ptr<Collector> hanging = client.Start("POST", ToolCall(1, "hang"));
  ASSERT_EQ(client.Post(ToolCall(2, "echo")).Events().size(), 1u);
  const pid_t pid = bridge->pid();
  bridge->Shutdown(absl::Seconds(2));
  Response hung = hanging->Wait();
  EXPECT_EQ(hung.status, 502);
  EXPECT_THAT(hung.body, HasSubstr("shutting down"));
  // Reaped: the pid is no child of ours any more.
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
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
  class Relay final : public recorder::UpstreamHttpObserver {
   public:
    Relay(std::shared_ptr<service::HttpResponder> out, bool initialize)
        : out_(std::move(out)), initialize_(initialize) {}
    void OnHead(int status, recorder::UpstreamHttpHeaders headers) override {
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
      recorder::UpstreamHttpRequest forward;
      forward.method = "POST";
      const size_t slash = upstream.find('/', upstream.find("://") + 3);
      forward.path = upstream.substr(slash);
      forward.headers = {{"content-type", "application/json"},
                         {"accept", "application/json, text/event-stream"}};
      forward.body = r.body;
      recorder::HttpUpstream* client = RelayClient(upstream.substr(0, slash));
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

  recorder::HttpUpstream* RelayClient(const std::string& base) {
    absl::MutexLock lock(&mu_);
    std::unique_ptr<recorder::HttpUpstream>& client = relays_[base];
    if (client == nullptr) {
      recorder::HttpUpstream::Options options;
      options.base_url = base;
      client = std::move(*recorder::HttpUpstream::Create(options));
    }
    return client.get();
  }

  const bool record_;
  const Handler handler_;
  std::unique_ptr<service::HttpServer> server_;
  absl::Mutex mu_;
  std::vector<Received> received_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<recorder::HttpUpstream>> relays_ ABSL_GUARDED_BY(mu_);
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
  EXPECT_EQ(parse_error["error"]["code"], kJsonRpcParseError);
  EXPECT_THAT(parse_error["error"]["message"].get<std::string>(),
              StartsWith("understudy mcp-proxy: message: invalid JSON at byte"));
  Json batch = proxy.NextJson();
  EXPECT_EQ(batch["error"]["code"], kJsonRpcInvalidRequest);
  EXPECT_THAT(batch["error"]["message"].get<std::string>(), HasSubstr("batch"));
  EXPECT_EQ(proxy.NextJson()["error"]["code"], kJsonRpcInvalidRequest);
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
  EXPECT_EQ(error["error"]["code"], kJsonRpcInvalidRequest);
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
  EXPECT_EQ(error["error"]["code"], kJsonRpcInternalError);
  const std::string message = error["error"]["message"];
  EXPECT_THAT(message, StartsWith("understudy mcp-proxy: 500 boom: zzz"));
  EXPECT_LT(message.size(), 260u);
  proxy.CloseInput();
  EXPECT_THAT(proxy.Finish(), IsOk());
  EXPECT_EQ(proxy.Next(absl::Milliseconds(10)), std::nullopt);
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
  EXPECT_EQ(error["error"]["code"], kJsonRpcInternalError);
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
