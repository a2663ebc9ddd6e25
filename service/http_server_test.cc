#include "service/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace service {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Generous bound on every wait in these tests; a healthy run takes
// milliseconds.
constexpr absl::Duration kWait = absl::Seconds(10);

// Polls `condition` until it holds (true) or `timeout` passes (false).
bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout = kWait) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
}

// One parsed response head.
struct Head {
  int status = 0;
  HttpHeaders headers;  // Names lower-cased.
  std::string Header(absl::string_view name) const {
    for (const auto& [k, v] : headers) {
      if (k == name) return v;
    }
    return "";
  }
  bool Has(absl::string_view name) const {
    for (const auto& [k, v] : headers) {
      if (k == name) return true;
    }
    return false;
  }
};

// A minimal blocking HTTP/1.1 client over a loopback POSIX socket. Every
// read has a deadline; failures are recorded with ADD_FAILURE and reported
// as empty results, so a broken server fails the test instead of hanging it.
class TestClient {
 public:
  explicit TestClient(int port) : TestClient(port, ::socket(AF_INET, SOCK_STREAM, 0)) {}
  // Connects `fd`, a fresh TCP socket, which the client then owns.
  TestClient(int port, int fd) {
    fd_ = fd;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ADD_FAILURE() << "connect: " << std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
      return;
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;
  ~TestClient() { Close(); }

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  void Send(absl::string_view data) {
    while (!data.empty() && fd_ >= 0) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        ADD_FAILURE() << "send: " << std::strerror(errno);
        return;
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
  }

  // Reads exactly `n` bytes, or what arrived before EOF or the deadline.
  std::string ReadExactly(size_t n, absl::Duration timeout = kWait) {
    const absl::Time deadline = absl::Now() + timeout;
    while (pending_.size() < n && Fill(deadline)) {
    }
    return Take(std::min(n, pending_.size()));
  }

  // Reads up to and including the next CRLF; "" on EOF or timeout.
  std::string ReadLine(absl::Time deadline) {
    size_t pos;
    while ((pos = pending_.find("\r\n")) == std::string::npos) {
      if (!Fill(deadline)) return "";
    }
    return Take(pos + 2);
  }

  // Reads one response head (an interim 100 included).
  std::optional<Head> ReadHead(absl::Duration timeout = kWait) {
    const absl::Time deadline = absl::Now() + timeout;
    const std::string status_line = ReadLine(deadline);
    if (!absl::StartsWith(status_line, "HTTP/1.1 ")) {
      ADD_FAILURE() << "bad status line: \"" << status_line << "\"";
      return std::nullopt;
    }
    Head head;
    if (!absl::SimpleAtoi(status_line.substr(9, 3), &head.status)) return std::nullopt;
    while (true) {
      const std::string line = ReadLine(deadline);
      if (line.empty()) {
        ADD_FAILURE() << "incomplete head";
        return std::nullopt;
      }
      if (line == "\r\n") break;
      const size_t colon = line.find(':');
      if (colon == std::string::npos) return std::nullopt;
      head.headers.emplace_back(absl::AsciiStrToLower(line.substr(0, colon)),
                                std::string(absl::StripAsciiWhitespace(line.substr(colon + 1))));
    }
    return head;
  }

  // Reads one chunk of a chunked body: its data, "" for the last chunk, or
  // nullopt when the connection closed (or the deadline passed) first.
  std::optional<std::string> ReadChunk(absl::Duration timeout = kWait) {
    const absl::Time deadline = absl::Now() + timeout;
    const std::string size_line = ReadLine(deadline);
    if (size_line.empty()) return std::nullopt;
    size_t size = 0;
    for (char c : size_line.substr(0, size_line.size() - 2)) {
      size = size * 16 + static_cast<size_t>(std::isdigit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    std::string data = ReadExactly(size, deadline - absl::Now());
    if (data.size() != size) return std::nullopt;
    if (ReadExactly(2, deadline - absl::Now()) != "\r\n") return std::nullopt;
    return data;
  }

  // Reads a whole response framed by Content-Length or chunked encoding.
  struct Response {
    Head head;
    std::string body;
  };
  std::optional<Response> ReadResponse(absl::Duration timeout = kWait) {
    Response response;
    std::optional<Head> head = ReadHead(timeout);
    if (!head) return std::nullopt;
    response.head = *head;
    if (head->Header("transfer-encoding") == "chunked") {
      while (true) {
        std::optional<std::string> chunk = ReadChunk(timeout);
        if (!chunk) return std::nullopt;
        if (chunk->empty()) break;
        response.body += *chunk;
      }
    } else {
      size_t length = 0;
      if (!absl::SimpleAtoi(head->Header("content-length"), &length)) return std::nullopt;
      response.body = ReadExactly(length, timeout);
      if (response.body.size() != length) return std::nullopt;
    }
    return response;
  }

  // Everything until the server closes the connection; sets *closed to
  // whether it did before the deadline.
  std::string ReadUntilClose(bool* closed, absl::Duration timeout = kWait) {
    const absl::Time deadline = absl::Now() + timeout;
    while (Fill(deadline)) {
    }
    *closed = eof_;
    return Take(pending_.size());
  }

  // True once the server closed the connection (EOF or reset), false if it
  // is still open at the deadline; discards what arrives meanwhile.
  bool WaitForClose(absl::Duration timeout = kWait) {
    bool closed = false;
    ReadUntilClose(&closed, timeout);
    return closed;
  }

 private:
  // Appends what arrives before `deadline`; false on EOF, error or timeout.
  bool Fill(absl::Time deadline) {
    if (fd_ < 0 || eof_) return false;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready <= 0) return false;
    char buf[16384];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) {
      eof_ = true;  // EOF or reset: either way the server is gone.
      return false;
    }
    pending_.append(buf, static_cast<size_t>(n));
    return true;
  }
  std::string Take(size_t n) {
    std::string out = pending_.substr(0, n);
    pending_.erase(0, n);
    return out;
  }

  int fd_ = -1;
  bool eof_ = false;
  std::string pending_;
};

std::string Get(absl::string_view target, absl::string_view extra_headers = "") {
  return absl::StrCat("GET ", target, " HTTP/1.1\r\nhost: test\r\n", extra_headers, "\r\n");
}

std::string Post(absl::string_view target, absl::string_view body,
                 absl::string_view extra_headers = "") {
  return absl::StrCat("POST ", target, " HTTP/1.1\r\nhost: test\r\ncontent-length: ", body.size(),
                      "\r\n", extra_headers, "\r\n", body);
}

// Answers with the request's target as a text body.
HttpHandler EchoTarget() {
  return [](HttpRequest request, std::shared_ptr<HttpResponder> out) {
    out->Respond(200, {{"content-type", "text/plain"}}, request.target);
  };
}

std::unique_ptr<HttpServer> StartServer(HttpServerOptions options, HttpHandler handler) {
  options.listen = "127.0.0.1:0";
  if (options.threads == 0) options.threads = 2;
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start(options, std::move(handler));
  EXPECT_THAT(server, IsOk());
  return server.ok() ? std::move(*server) : nullptr;
}

// Waits until `condition` holds or kWait passes; returns whether it held.
template <typename F>
bool Eventually(F condition) {
  const absl::Time deadline = absl::Now() + kWait;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

// Hands the responder of each request to the test thread.
class ResponderQueue {
 public:
  HttpHandler Handler() {
    return [this](HttpRequest request, std::shared_ptr<HttpResponder> out) {
      absl::MutexLock lock(&mu_);
      requests_.push_back(std::move(request));
      responders_.push_back(std::move(out));
    };
  }
  // The next request's responder, or nullptr after kWait.
  std::shared_ptr<HttpResponder> Next(HttpRequest* request = nullptr) {
    absl::MutexLock lock(&mu_);
    if (!mu_.AwaitWithTimeout(absl::Condition(this, &ResponderQueue::HasOne), kWait)) {
      ADD_FAILURE() << "no request reached the handler";
      return nullptr;
    }
    std::shared_ptr<HttpResponder> out = std::move(responders_.front());
    responders_.erase(responders_.begin());
    if (request != nullptr) *request = requests_.front();
    requests_.erase(requests_.begin());
    return out;
  }

 private:
  bool HasOne() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !responders_.empty(); }
  absl::Mutex mu_;
  std::vector<HttpRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<HttpResponder>> responders_ ABSL_GUARDED_BY(mu_);
};

TEST(HttpServerTest, StartRejectsAnUnparsableAddress) {
  HttpServerOptions options;
  options.listen = "no-port-here";
  EXPECT_THAT(HttpServer::Start(options, EchoTarget()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  options.listen = "127.0.0.1:99999";
  EXPECT_THAT(HttpServer::Start(options, EchoTarget()),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(HttpServerTest, StartReportsAPortInUseAsUnavailable) {
  std::unique_ptr<HttpServer> first = StartServer({}, EchoTarget());
  ASSERT_NE(first, nullptr);
  HttpServerOptions options;
  options.listen = absl::StrCat("127.0.0.1:", first->port());
  EXPECT_THAT(HttpServer::Start(options, EchoTarget()), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(first->address(), absl::StrCat("127.0.0.1:", first->port()));
}

TEST(HttpServerTest, AnswersWithExactBytesOnTheWireAndPassesTheRequestThrough) {
  HttpRequest seen;
  absl::Notification handled;
  std::unique_ptr<HttpServer> server =
      StartServer({}, [&](HttpRequest request, std::shared_ptr<HttpResponder> out) {
        if (handled.HasBeenNotified()) return out->Respond(200, {}, request.target);
        seen = request;
        handled.Notify();
        out->Respond(200, {{"content-type", "text/plain"}, {"x-run", "r1"}}, "hello");
      });
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(
      "POST /run/r1/v1/chat/completions?x=1 HTTP/1.1\r\nHost: test\r\n"
      "X-Api-Key: k\r\nx-two: a\r\nX-Two: b\r\nContent-Length: 4\r\n\r\nbody");
  const std::string expected =
      "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-run: r1\r\ncontent-length: 5\r\n\r\nhello";
  EXPECT_EQ(client.ReadExactly(expected.size()), expected);
  ASSERT_TRUE(handled.WaitForNotificationWithTimeout(kWait));
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.target, "/run/r1/v1/chat/completions?x=1");
  EXPECT_EQ(seen.body, "body");
  EXPECT_THAT(seen.headers,
              ElementsAre(std::make_pair("host", "test"), std::make_pair("x-api-key", "k"),
                          std::make_pair("x-two", "a"), std::make_pair("x-two", "b"),
                          std::make_pair("content-length", "4")));
  EXPECT_EQ(seen.Header("x-two"), "a");
  EXPECT_EQ(seen.Header("x-missing"), "");
  // Keep-alive: the same connection serves the next request.
  client.Send(Get("/again"));
  std::optional<TestClient::Response> again = client.ReadResponse();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->body, "/again");
}

TEST(HttpServerTest, FramingHeadersFromTheHandlerAreReplacedByTheServers) {
  std::unique_ptr<HttpServer> server =
      StartServer({}, [](HttpRequest, std::shared_ptr<HttpResponder> out) {
        out->Respond(200,
                     {{"Content-Length", "999"},
                      {"transfer-encoding", "chunked"},
                      {"x-bad", "a\r\nx-injected: 1"}},
                     "ok");
      });
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(Get("/"));
  const std::string expected = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
  EXPECT_EQ(client.ReadExactly(expected.size()), expected);
}

TEST(HttpServerTest, ServesManyKeepAliveConnectionsAtOnceWithTwoThreads) {
  constexpr int kConnections = 256;
  constexpr int kRounds = 4;
  HttpServerOptions options;
  options.threads = 2;
  std::unique_ptr<HttpServer> server = StartServer(options, EchoTarget());
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < kConnections; ++i) {
    clients.push_back(std::make_unique<TestClient>(server->port()));
    ASSERT_TRUE(clients.back()->connected());
  }
  // Every connection stays open throughout and must be answered every round.
  int answered = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kConnections; ++i) {
      clients[i]->Send(Get(absl::StrCat("/c", i, "/r", round)));
    }
    for (int i = 0; i < kConnections; ++i) {
      std::optional<TestClient::Response> response = clients[i]->ReadResponse();
      ASSERT_TRUE(response.has_value()) << "connection " << i << " round " << round;
      EXPECT_EQ(response->body, absl::StrCat("/c", i, "/r", round));
      ++answered;
    }
  }
  EXPECT_EQ(answered, kConnections * kRounds);
}

TEST(HttpServerTest, AnswersPipelinedRequestsInOrder) {
  ResponderQueue queue;
  std::unique_ptr<HttpServer> server = StartServer({}, queue.Handler());
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(absl::StrCat(Get("/1"), Post("/2", "two"), Get("/3")));
  for (const char* target : {"/1", "/2", "/3"}) {
    HttpRequest request;
    std::shared_ptr<HttpResponder> out = queue.Next(&request);
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(request.target, target);
    // Answered from another thread, as the engine does.
    std::thread([out, target] { out->Respond(200, {}, target); }).join();
    std::optional<TestClient::Response> response = client.ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->body, target);
  }
}

TEST(HttpServerTest, ALabelledAnswerIsReportedOnceWrittenWholeAndOthersAreNot) {
  absl::Mutex mu;
  std::vector<std::pair<std::string, absl::Duration>> reported;
  HttpServerOptions options;
  options.on_answered = [&](absl::string_view label, absl::Duration elapsed) {
    absl::MutexLock lock(&mu);
    reported.emplace_back(std::string(label), elapsed);
  };
  ResponderQueue queue;
  std::unique_ptr<HttpServer> server = StartServer(options, queue.Handler());
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(absl::StrCat(Get("/labelled"), Get("/streamed"), Get("/plain")));
  HttpRequest request;
  std::shared_ptr<HttpResponder> out = queue.Next(&request);
  ASSERT_NE(out, nullptr);
  out->SetLabel("openai");
  // Labelled, then answered from another thread, as the APIs do.
  std::thread([out] { out->Respond(200, {}, "one"); }).join();
  ASSERT_TRUE(client.ReadResponse().has_value());
  out = queue.Next(&request);
  ASSERT_NE(out, nullptr);
  out->SetLabel("a2a");
  out->StartStream(200, {});
  out->Write("two");
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(reported.size(), 1u) << "a stream is reported when it ends, not before";
  }
  out->End();
  ASSERT_TRUE(client.ReadResponse().has_value());
  out = queue.Next(&request);
  ASSERT_NE(out, nullptr);
  out->Respond(200, {}, "three");
  ASSERT_TRUE(client.ReadResponse().has_value());
  absl::MutexLock lock(&mu);
  ASSERT_EQ(reported.size(), 2u);
  EXPECT_EQ(reported[0].first, "openai");
  EXPECT_EQ(reported[1].first, "a2a");
  for (const auto& [label, elapsed] : reported) {
    EXPECT_GE(elapsed, absl::ZeroDuration()) << label;
    EXPECT_LT(elapsed, absl::Seconds(30)) << label;
  }
}

TEST(HttpServerTest, BodyOverTheLimitGets413AndTheServerKeepsServing) {
  HttpServerOptions options;
  options.max_body_bytes = 1024;
  std::unique_ptr<HttpServer> server = StartServer(options, EchoTarget());
  ASSERT_NE(server, nullptr);
  {
    // Declared too large in Content-Length.
    TestClient client(server->port());
    client.Send(Post("/big", std::string(2048, 'x')));
    std::optional<TestClient::Response> response = client.ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->head.status, 413);
    EXPECT_EQ(response->head.Header("connection"), "close");
    EXPECT_EQ(response->head.Header("content-type"), "application/json");
    EXPECT_EQ(response->body, R"({"error":{"message":"request body exceeds 1024 bytes",)"
                              R"("type":"invalid_request_error","code":"body_too_large"}})");
    EXPECT_TRUE(client.WaitForClose());
  }
  {
    // Found too large only while reading a chunked body.
    TestClient client(server->port());
    client.Send(
        "POST /big HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n"
        "400\r\n" +
        std::string(1024, 'x') + "\r\n10\r\n" + std::string(16, 'y') + "\r\n0\r\n\r\n");
    std::optional<TestClient::Response> response = client.ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->head.status, 413);
    EXPECT_TRUE(client.WaitForClose());
  }
  TestClient next(server->port());
  next.Send(Post("/small", std::string(1024, 'x')));
  std::optional<TestClient::Response> response = next.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->head.status, 200);
  EXPECT_TRUE(Eventually([&] { return server->in_flight() == 0; }));
}

TEST(HttpServerTest, ErrorBodiesComeFromTheOption) {
  HttpServerOptions options;
  options.max_body_bytes = 10;
  options.error_body = [](int status, absl::string_view message, absl::string_view target) {
    return absl::StrCat("{\"status\":", status, ",\"target\":\"", target, "\"}");
  };
  std::unique_ptr<HttpServer> server = StartServer(options, EchoTarget());
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(Post("/v1/x", std::string(11, 'x')));
  std::optional<TestClient::Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, R"({"status":413,"target":"/v1/x"})");
}

TEST(HttpServerTest, MalformedRequestLineGets400AndTheConnectionCloses) {
  std::atomic<int> calls{0};
  std::unique_ptr<HttpServer> server =
      StartServer({}, [&](HttpRequest, std::shared_ptr<HttpResponder> out) {
        ++calls;
        out->Respond(200, {}, "");
      });
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send("THIS IS NOT HTTP\r\n\r\n");
  std::optional<TestClient::Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->head.status, 400);
  EXPECT_THAT(response->body, HasSubstr(R"("type":"invalid_request_error")"));
  EXPECT_TRUE(client.WaitForClose());
  EXPECT_EQ(calls.load(), 0);
}

// An HTTP/2 client with prior knowledge (the AWS SDK for JavaScript's
// default) gets HTTP/2's own refusal it can read: the server's SETTINGS,
// then a GOAWAY with HTTP_1_1_REQUIRED (0xd) and a message saying what to
// do; the handler never runs. A request whose first bytes only start like
// the preface ("P") is HTTP/1.1 as usual.
TEST(HttpServerTest, AnHttp2ClientIsToldHttp11IsRequiredInHttp2) {
  std::atomic<int> calls{0};
  std::unique_ptr<HttpServer> server =
      StartServer({}, [&](HttpRequest, std::shared_ptr<HttpResponder> out) {
        ++calls;
        out->Respond(200, {}, "ok");
      });
  ASSERT_NE(server, nullptr);
  TestClient h2(server->port());
  h2.Send("PRI * HTTP/2.0\r\n");  // the preface, in two pieces
  absl::SleepFor(absl::Milliseconds(20));
  h2.Send("\r\nSM\r\n\r\n");
  const std::string settings = h2.ReadExactly(9);
  EXPECT_EQ(settings, std::string("\0\0\0\x04\0\0\0\0\0", 9));
  const std::string head = h2.ReadExactly(9);
  ASSERT_EQ(head.size(), 9u);
  EXPECT_EQ(head[3], '\x07') << "a GOAWAY frame";
  const size_t length = (static_cast<uint8_t>(head[0]) << 16) | (static_cast<uint8_t>(head[1]) << 8) |
                        static_cast<uint8_t>(head[2]);
  const std::string payload = h2.ReadExactly(length);
  ASSERT_EQ(payload.size(), length);
  EXPECT_EQ(payload.substr(0, 8), std::string("\0\0\0\0\0\0\0\x0d", 8)) << "HTTP_1_1_REQUIRED";
  EXPECT_THAT(payload.substr(8), HasSubstr("understudy speaks HTTP/1.1"));
  EXPECT_TRUE(h2.WaitForClose());
  EXPECT_EQ(calls.load(), 0);

  TestClient http1(server->port());
  http1.Send("P");
  absl::SleepFor(absl::Milliseconds(20));
  http1.Send("OST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  std::optional<TestClient::Response> response = http1.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->head.status, 200);
  EXPECT_EQ(calls.load(), 1);
}

TEST(HttpServerTest, OversizedHeadersGet431) {
  HttpServerOptions options;
  options.max_header_bytes = 1024;
  std::unique_ptr<HttpServer> server = StartServer(options, EchoTarget());
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(Get("/", absl::StrCat("x-big: ", std::string(2000, 'h'), "\r\n")));
  std::optional<TestClient::Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->head.status, 431);
  EXPECT_THAT(response->body, HasSubstr("headers_too_large"));
  EXPECT_TRUE(client.WaitForClose());
}

TEST(HttpServerTest, ExpectContinueIsAnsweredBeforeTheBodyIsSent) {
  std::unique_ptr<HttpServer> server =
      StartServer({}, [](HttpRequest request, std::shared_ptr<HttpResponder> out) {
        out->Respond(200, {}, request.body);
      });
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(
      "POST /v1/messages HTTP/1.1\r\nhost: t\r\ncontent-length: 5\r\n"
      "expect: 100-continue\r\n\r\n");
  // The client holds the body back until told to continue; curl would wait
  // a second, so insist on far less.
  const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  EXPECT_EQ(client.ReadExactly(kContinue.size(), absl::Milliseconds(900)), kContinue);
  client.Send("hello");
  std::optional<TestClient::Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->head.status, 200);
  EXPECT_EQ(response->body, "hello");
}

TEST(HttpServerTest, StreamedWritesArriveAsChunksInOrderAndNotBeforeTheirTimes) {
  // The first request's times, published through `timed`.
  absl::Time b_time;
  absl::Time c_time;
  absl::Notification timed;
  std::unique_ptr<HttpServer> server =
      StartServer({}, [&](HttpRequest, std::shared_ptr<HttpResponder> out) {
        const absl::Time start = absl::Now();
        const absl::Time b = start + absl::Milliseconds(150);
        const absl::Time c = start + absl::Milliseconds(300);
        if (!timed.HasBeenNotified()) {
          b_time = b;
          c_time = c;
          timed.Notify();
        }
        out->StartStream(200, {{"content-type", "text/event-stream"}});
        out->Write("data: a\n\n");
        out->Write("data: b\n\n", b);
        // Queued after b, so never before it even though its time is earlier.
        out->Write("data: b2\n\n", start);
        out->Write("data: c\n\n", c);
        out->End();
      });
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(Get("/stream"));
  std::optional<Head> head = client.ReadHead();
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->Header("transfer-encoding"), "chunked");
  EXPECT_EQ(head->Header("content-type"), "text/event-stream");
  EXPECT_FALSE(head->Has("content-length"));
  std::vector<std::string> chunks;
  std::vector<absl::Time> arrivals;
  while (true) {
    std::optional<std::string> chunk = client.ReadChunk();
    ASSERT_TRUE(chunk.has_value());
    if (chunk->empty()) break;
    chunks.push_back(*chunk);
    arrivals.push_back(absl::Now());
  }
  EXPECT_THAT(chunks, ElementsAre("data: a\n\n", "data: b\n\n", "data: b2\n\n", "data: c\n\n"));
  ASSERT_EQ(arrivals.size(), 4u);
  ASSERT_TRUE(timed.WaitForNotificationWithTimeout(kWait));
  // Lower bounds only (the machine may be busy); 1 ms for clock rounding.
  EXPECT_GE(arrivals[1], b_time - absl::Milliseconds(1));
  EXPECT_GE(arrivals[2], b_time - absl::Milliseconds(1));
  EXPECT_GE(arrivals[3], c_time - absl::Milliseconds(1));
  // The connection is still usable afterwards.
  client.Send(Get("/stream"));
  EXPECT_TRUE(client.ReadResponse().has_value());
}

// What a Flood handler shares with its test. Held by shared_ptr: the writer
// threads may outlive the test body by a moment.
struct FloodState {
  std::atomic<int> written{0};
  absl::Mutex mu;
  std::vector<std::shared_ptr<HttpResponder>> responders ABSL_GUARDED_BY(mu);

  bool AllCancelled(size_t n) {
    absl::MutexLock lock(&mu);
    if (responders.size() != n) return false;
    for (const auto& r : responders) {
      if (!r->cancelled()) return false;
    }
    return true;
  }
};

// Streams 256 KiB pieces on GET /flood, from its own thread, for as long as
// the client is there (at most 1,000 pieces: 250 MiB), 200 µs apart (faster
// than a client reads), or 2 ms apart on GET /paced (slower than a client
// reads, so a reading client's queue stays near empty); echoes other targets.
HttpHandler Flood(std::shared_ptr<FloodState> state) {
  return [state](HttpRequest request, std::shared_ptr<HttpResponder> out) {
    if (request.target != "/flood" && request.target != "/paced") {
      return out->Respond(200, {{"content-type", "text/plain"}}, request.target);
    }
    const absl::Duration gap =
        request.target == "/paced" ? absl::Milliseconds(2) : absl::Microseconds(200);
    out->StartStream(200, {{"content-type", "text/event-stream"}});
    {
      absl::MutexLock lock(&state->mu);
      state->responders.push_back(out);
    }
    std::thread([out, state, gap] {
      const std::string piece(256 << 10, 'x');
      for (int i = 0; i < 1000 && !out->cancelled(); ++i) {
        out->Write(piece);
        state->written.fetch_add(1);
        absl::SleepFor(gap);
      }
    }).detach();
  };
}

TEST(HttpServerTest, AClientThatStopsReadingIsDisconnectedPastThePerConnectionBound) {
  HttpServerOptions options;
  options.max_queued_bytes_per_connection = 4 << 20;
  auto state = std::make_shared<FloodState>();
  std::unique_ptr<HttpServer> server = StartServer(options, Flood(state));
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  const int small = 4096;
  ::setsockopt(client.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  client.Send(Get("/flood"));  // and never reads
  ASSERT_TRUE(Eventually([&] { return state->AllCancelled(1); }))
      << "written " << state->written.load() << " pieces";
  // Disconnected after about 4 MiB queued (plus what the socket buffers took),
  // not after the 250 MiB the producer would have written.
  EXPECT_LT(state->written.load(), 200);
}

TEST(HttpServerTest, TheServerWideBoundDisconnectsTheClientThatWouldPassIt) {
  HttpServerOptions options;
  options.max_queued_bytes_per_connection = 64 << 20;
  options.max_queued_bytes_total = 6 << 20;
  auto state = std::make_shared<FloodState>();
  std::unique_ptr<HttpServer> server = StartServer(options, Flood(state));
  ASSERT_NE(server, nullptr);
  TestClient a(server->port());
  TestClient b(server->port());
  const int small = 4096;
  ::setsockopt(a.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  ::setsockopt(b.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  a.Send(Get("/flood"));
  b.Send(Get("/flood"));
  ASSERT_TRUE(Eventually([&] { return state->AllCancelled(2); }))
      << "written " << state->written.load() << " pieces";
  EXPECT_LT(state->written.load(), 200);
  // The closed connections' bytes left the server-wide count: a client that
  // reads gets more than the bound's worth (from a producer slower than it
  // reads: one that outran the reader by 6 MiB would rightly be cut too).
  TestClient c(server->port());
  c.Send(Get("/after"));
  auto response = c.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "/after");
  TestClient reader(server->port());
  reader.Send(Get("/paced"));
  EXPECT_EQ(reader.ReadExactly(8 << 20).size(), size_t{8} << 20);
}

// The pieces `texts` names, as views of the vector (kept by the source) or
// as owned copies, alternately; counts the pieces asked for and says when it
// is destroyed.
class VectorSource final : public HttpSource {
 public:
  VectorSource(std::vector<std::string> texts, std::vector<absl::Time> when,
               std::atomic<int>* asked, absl::Notification* destroyed)
      : texts_(std::move(texts)), when_(std::move(when)), asked_(asked), destroyed_(destroyed) {}
  ~VectorSource() override {
    if (destroyed_ != nullptr) destroyed_->Notify();
  }
  std::optional<HttpPiece> Next() override {
    if (next_ >= texts_.size()) return std::nullopt;
    if (asked_ != nullptr) ++*asked_;
    const size_t i = next_++;
    const absl::Time at = i < when_.size() ? when_[i] : absl::InfinitePast();
    if (i % 2 == 0) return HttpPiece{absl::string_view(texts_[i]), at};
    return HttpPiece{texts_[i], at};
  }

 private:
  const std::vector<std::string> texts_;
  const std::vector<absl::Time> when_;
  std::atomic<int>* const asked_;
  absl::Notification* const destroyed_;
  size_t next_ = 0;
};

TEST(HttpServerTest, WriteFromSendsEachPieceAsItsOwnChunkInOrder) {
  std::unique_ptr<HttpServer> server =
      StartServer({}, [&](HttpRequest, std::shared_ptr<HttpResponder> out) {
        out->StartStream(200, {{"content-type", "text/event-stream"}});
        out->Write("data: first\n\n");
        std::vector<std::string> pieces;
        for (int i = 0; i < 300; ++i) pieces.push_back(absl::StrCat("data: ", i, "\n\n"));
        pieces.insert(pieces.begin() + 100, "");  // empty pieces are skipped, as by Write
        out->WriteFrom(std::make_shared<VectorSource>(std::move(pieces), std::vector<absl::Time>(),
                                                      nullptr, nullptr));
        // Queued after the source: sent after its last piece.
        out->Write("data: last\n\n");
        out->End();
      });
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  for (int request = 0; request < 2; ++request) {
    client.Send(Get("/stream"));
    std::optional<Head> head = client.ReadHead();
    ASSERT_TRUE(head.has_value());
    EXPECT_EQ(head->Header("transfer-encoding"), "chunked");
    std::vector<std::string> chunks;
    while (true) {
      std::optional<std::string> chunk = client.ReadChunk();
      ASSERT_TRUE(chunk.has_value());
      if (chunk->empty()) break;
      chunks.push_back(*chunk);
    }
    // More pieces than one window holds: the rest follow in order.
    ASSERT_EQ(chunks.size(), 302u);
    EXPECT_EQ(chunks.front(), "data: first\n\n");
    for (int i = 0; i < 300; ++i) EXPECT_EQ(chunks[static_cast<size_t>(i) + 1], absl::StrCat("data: ", i, "\n\n"));
    EXPECT_EQ(chunks.back(), "data: last\n\n");
  }
}

// A source's pieces are asked for as the connection sends them: a client
// that gets nothing more (here, pieces paced an hour apart) holds a window
// of them, not the answer, and the source goes when the client does.
TEST(HttpServerTest, WriteFromAsksForPiecesOnlyAsTheyAreSent) {
  constexpr int kPieces = 5000;
  std::atomic<int> asked{0};
  absl::Notification destroyed;
  std::unique_ptr<HttpServer> server =
      StartServer({}, [&](HttpRequest, std::shared_ptr<HttpResponder> out) {
        out->StartStream(200, {{"content-type", "text/event-stream"}});
        std::vector<std::string> pieces;
        std::vector<absl::Time> when;
        const absl::Time now = absl::Now();
        for (int i = 0; i < kPieces; ++i) {
          pieces.push_back(absl::StrCat("data: ", i, "\n\n"));
          when.push_back(i == 0 ? absl::InfinitePast() : now + absl::Hours(i));
        }
        out->WriteFrom(std::make_shared<VectorSource>(std::move(pieces), std::move(when), &asked,
                                                      &destroyed));
        out->End();
      });
  ASSERT_NE(server, nullptr);
  auto client = std::make_unique<TestClient>(server->port());
  client->Send(Get("/paced"));
  ASSERT_TRUE(client->ReadHead().has_value());
  EXPECT_EQ(client->ReadChunk(), "data: 0\n\n");
  // A window's worth, and no more while nothing is sent.
  const auto window = static_cast<int>(kHttpSourceWindowPieces);
  ASSERT_TRUE(WaitFor([&] { return asked.load() >= window; }));
  EXPECT_FALSE(WaitFor([&] { return asked.load() > window + 1; }, absl::Milliseconds(200)))
      << asked.load() << " pieces asked for";
  EXPECT_FALSE(destroyed.HasBeenNotified());
  client.reset();
  EXPECT_TRUE(destroyed.WaitForNotificationWithTimeout(kWait)) << "the source outlived its client";
}

// The handler's own calls run at once (no strand hop); one made from
// another thread while the handler runs is posted, and then the handler's
// later calls must not overtake it.
TEST(HttpServerTest, HandlerCallsAfterACallFromAnotherThreadKeepTheirOrder) {
  std::unique_ptr<HttpServer> server =
      StartServer({}, [&](HttpRequest, std::shared_ptr<HttpResponder> out) {
        std::thread other([out] { out->StartStream(200, {{"content-type", "text/plain"}}); });
        other.join();  // posted, not yet run: this thread holds the strand
        out->Write("one");
        out->Write("two");
        out->End();
      });
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  for (int request = 0; request < 2; ++request) {
    client.Send(Get("/ordered"));
    std::optional<TestClient::Response> response = client.ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->head.status, 200);
    EXPECT_EQ(response->body, "onetwo");
  }
}

// A close caused by the handler's own call (here: one write over the
// connection's bound) reports the client gone afterwards, not from inside
// that call, where the OnCancel callback could meet the caller's locks.
TEST(HttpServerTest, ACloseCausedByTheHandlersOwnWriteRunsOnCancelAfterTheCall) {
  HttpServerOptions options;
  options.max_queued_bytes_per_connection = 1024;
  std::atomic<bool> inside_write{false};
  std::atomic<int> cancels{0};
  std::atomic<int> cancels_inside{0};
  std::unique_ptr<HttpServer> server =
      StartServer(options, [&](HttpRequest, std::shared_ptr<HttpResponder> out) {
        out->OnCancel([&] {
          if (inside_write.load()) ++cancels_inside;
          ++cancels;
        });
        out->StartStream(200, {});
        inside_write = true;
        out->Write(std::string(4096, 'x'));
        inside_write = false;
      });
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(Get("/too-much"));
  EXPECT_TRUE(client.WaitForClose());
  ASSERT_TRUE(Eventually([&] { return cancels.load() == 1; }));
  EXPECT_EQ(cancels_inside.load(), 0);
}

TEST(HttpServerTest, AbortClosesTheConnectionWithoutTheLastChunk) {
  ResponderQueue queue;
  std::unique_ptr<HttpServer> server = StartServer({}, queue.Handler());
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(Get("/stream"));
  std::shared_ptr<HttpResponder> out = queue.Next();
  ASSERT_NE(out, nullptr);
  std::atomic<int> cancels{0};
  out->OnCancel([&] { ++cancels; });
  out->StartStream(200, {{"content-type", "text/event-stream"}});
  out->Write("data: partial\n\n");
  ASSERT_TRUE(client.ReadHead().has_value());
  EXPECT_EQ(client.ReadChunk(), "data: partial\n\n");
  out->Abort();
  // A broken stream: the connection ends with no terminating chunk.
  EXPECT_EQ(client.ReadChunk(), std::nullopt);
  EXPECT_TRUE(out->cancelled());
  out->Write("ignored");
  out->End();
  EXPECT_TRUE(Eventually([&] { return server->in_flight() == 0; }));
  EXPECT_EQ(cancels.load(), 0);  // Not the client's doing.
}

TEST(HttpServerTest, ClientHangUpMidStreamRunsOnCancelOnceAndLaterCallsAreIgnored) {
  ResponderQueue queue;
  std::unique_ptr<HttpServer> server = StartServer({}, queue.Handler());
  ASSERT_NE(server, nullptr);
  auto client = std::make_unique<TestClient>(server->port());
  client->Send(Get("/stream"));
  std::shared_ptr<HttpResponder> out = queue.Next();
  ASSERT_NE(out, nullptr);
  absl::Mutex mu;
  int cancels = 0;
  out->OnCancel([&] {
    absl::MutexLock lock(&mu);
    ++cancels;
  });
  out->StartStream(200, {});
  out->Write("data: first\n\n");
  ASSERT_TRUE(client->ReadHead().has_value());
  EXPECT_EQ(client->ReadChunk(), "data: first\n\n");
  EXPECT_EQ(server->in_flight(), 1);
  // Nothing is being written when the client goes.
  client.reset();
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(
                                        +[](int* n) { return *n > 0; }, &cancels),
                                    kWait));
  }
  EXPECT_TRUE(out->cancelled());
  out->Write("data: late\n\n");
  out->Write("data: later\n\n", absl::Now() + absl::Milliseconds(5));
  out->End();
  out->Respond(200, {}, "too late");
  out->Abort();
  EXPECT_TRUE(Eventually([&] { return server->in_flight() == 0; }));
  // A callback registered now runs at once; the first never runs again.
  bool late_callback = false;
  out->OnCancel([&] { late_callback = true; });
  EXPECT_TRUE(late_callback);
  absl::MutexLock lock(&mu);
  EXPECT_EQ(cancels, 1);
}

TEST(HttpServerTest, ClientHangUpBeforeAnyAnswerIsNoticed) {
  ResponderQueue queue;
  std::unique_ptr<HttpServer> server = StartServer({}, queue.Handler());
  ASSERT_NE(server, nullptr);
  auto client = std::make_unique<TestClient>(server->port());
  client->Send(Post("/v1/chat/completions", "{}"));
  std::shared_ptr<HttpResponder> out = queue.Next();
  ASSERT_NE(out, nullptr);
  absl::Notification cancelled;
  out->OnCancel([&] { cancelled.Notify(); });
  client.reset();
  EXPECT_TRUE(cancelled.WaitForNotificationWithTimeout(kWait));
  EXPECT_TRUE(out->cancelled());
  out->Respond(200, {}, "nobody is listening");
}

TEST(HttpServerTest, ConnectionCloseIsHonoured) {
  std::unique_ptr<HttpServer> server = StartServer({}, EchoTarget());
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(Get("/bye", "connection: close\r\n"));
  std::optional<TestClient::Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->head.Header("connection"), "close");
  EXPECT_EQ(response->body, "/bye");
  EXPECT_TRUE(client.WaitForClose());
}

TEST(HttpServerTest, Http10ResponsesCloseTheConnectionAndStreamsAreCloseDelimited) {
  std::unique_ptr<HttpServer> server =
      StartServer({}, [](HttpRequest request, std::shared_ptr<HttpResponder> out) {
        if (request.target == "/plain") return out->Respond(200, {}, "plain");
        out->StartStream(200, {{"content-type", "text/event-stream"}});
        out->Write("data: a\n\n");
        out->Write("data: b\n\n", absl::Now() + absl::Milliseconds(20));
        out->End();
      });
  ASSERT_NE(server, nullptr);
  {
    TestClient client(server->port());
    client.Send("GET /plain HTTP/1.0\r\n\r\n");
    bool closed = false;
    EXPECT_EQ(client.ReadUntilClose(&closed),
              "HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nplain");
    EXPECT_TRUE(closed);
  }
  {
    TestClient client(server->port());
    client.Send("GET /stream HTTP/1.0\r\n\r\n");
    bool closed = false;
    EXPECT_EQ(client.ReadUntilClose(&closed),
              "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
              "data: a\n\ndata: b\n\n");
    EXPECT_TRUE(closed);
  }
  {
    // An HTTP/1.0 client may ask to keep the connection.
    TestClient client(server->port());
    client.Send("GET /plain HTTP/1.0\r\nconnection: keep-alive\r\n\r\n");
    std::optional<TestClient::Response> response = client.ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->head.Header("connection"), "keep-alive");
    client.Send("GET /plain HTTP/1.0\r\nconnection: keep-alive\r\n\r\n");
    EXPECT_TRUE(client.ReadResponse().has_value());
  }
}

TEST(HttpServerTest, HeadResponsesCarryNoBody) {
  std::unique_ptr<HttpServer> server = StartServer({}, EchoTarget());
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send("HEAD /abc HTTP/1.1\r\nhost: t\r\n\r\n");
  const std::string expected =
      "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 4\r\n\r\n";
  EXPECT_EQ(client.ReadExactly(expected.size()), expected);
  client.Send(Get("/next"));
  std::optional<TestClient::Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "/next");
}

TEST(HttpServerTest, AResponderDroppedUnansweredGets500) {
  std::unique_ptr<HttpServer> server =
      StartServer({}, [](HttpRequest, std::shared_ptr<HttpResponder>) {});
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(Get("/"));
  std::optional<TestClient::Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->head.status, 500);
  EXPECT_TRUE(Eventually([&] { return server->in_flight() == 0; }));
}

TEST(HttpServerTest, IdleConnectionIsClosedAfterTheIdleTimeout) {
  HttpServerOptions options;
  options.idle_timeout = absl::Milliseconds(200);
  std::unique_ptr<HttpServer> server = StartServer(options, EchoTarget());
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(Get("/"));
  ASSERT_TRUE(client.ReadResponse().has_value());
  const absl::Time idle_since = absl::Now();
  EXPECT_TRUE(client.WaitForClose());
  EXPECT_GE(absl::Now() - idle_since, absl::Milliseconds(150));
  TestClient silent(server->port());
  EXPECT_TRUE(silent.WaitForClose());
}

TEST(HttpServerTest, ALongStreamOutlivesTheIdleTimeout) {
  HttpServerOptions options;
  options.idle_timeout = absl::Milliseconds(100);
  std::unique_ptr<HttpServer> server =
      StartServer(options, [](HttpRequest, std::shared_ptr<HttpResponder> out) {
        // Gaps longer than the idle timeout: no earlier read or write
        // deadline may cut the stream.
        const absl::Time start = absl::Now();
        out->StartStream(200, {});
        for (int i = 0; i < 5; ++i) {
          out->Write(absl::StrCat("event ", i), start + i * absl::Milliseconds(150));
        }
        out->End();
      });
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(Get("/stream"));
  std::optional<TestClient::Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "event 0event 1event 2event 3event 4");
}

TEST(HttpServerTest, ShutdownWaitsForAnInFlightStreamToEnd) {
  ResponderQueue queue;
  std::unique_ptr<HttpServer> server = StartServer({}, queue.Handler());
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  TestClient client(port);
  client.Send(Get("/stream"));
  std::shared_ptr<HttpResponder> out = queue.Next();
  ASSERT_NE(out, nullptr);
  out->StartStream(200, {});
  out->Write("first");
  ASSERT_TRUE(client.ReadHead().has_value());
  EXPECT_EQ(client.ReadChunk(), "first");

  std::atomic<bool> shut{false};
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  std::thread shutter([&] {
    server->Shutdown(deadline);
    shut = true;
  });
  // Once new connections are refused, Shutdown is under way.
  EXPECT_TRUE(Eventually([&] {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool refused = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0;
    ::close(fd);
    return refused;
  }));
  EXPECT_FALSE(shut.load());
  EXPECT_EQ(server->in_flight(), 1);
  out->Write("last");
  out->End();
  shutter.join();
  EXPECT_LT(absl::Now(), deadline);
  EXPECT_EQ(client.ReadChunk(), "last");
  EXPECT_EQ(client.ReadChunk(), "");
  EXPECT_TRUE(client.WaitForClose());
  EXPECT_FALSE(out->cancelled());
}

TEST(HttpServerTest, ShutdownClosesIdleKeepAliveConnectionsAtOnce) {
  std::unique_ptr<HttpServer> server = StartServer({}, EchoTarget());
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<TestClient>(server->port()));
    clients.back()->Send(Get("/"));
    ASSERT_TRUE(clients.back()->ReadResponse().has_value());
  }
  TestClient never_sent(server->port());
  const absl::Time start = absl::Now();
  server->Shutdown(start + absl::Seconds(60));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  for (auto& client : clients) EXPECT_TRUE(client->WaitForClose());
  EXPECT_TRUE(never_sent.WaitForClose());
  server->Shutdown(absl::Now());  // Idempotent.
}

TEST(HttpServerTest, ShutdownDeadlineCancelsUnansweredRequests) {
  ResponderQueue queue;
  std::unique_ptr<HttpServer> server = StartServer({}, queue.Handler());
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(Get("/slow"));
  std::shared_ptr<HttpResponder> out = queue.Next();
  ASSERT_NE(out, nullptr);
  absl::Notification cancelled;
  out->OnCancel([&] { cancelled.Notify(); });
  server->Shutdown(absl::Now() + absl::Milliseconds(50));
  EXPECT_TRUE(cancelled.HasBeenNotified());
  EXPECT_TRUE(client.WaitForClose());
}

// Lowers this process's open-file limit so that no new descriptor can be
// created; restores it when destroyed.
class NoNewDescriptors {
 public:
  NoNewDescriptors() {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    const int lowest_free = ::dup(0);
    ::close(lowest_free);
    rlimit lowered = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(lowest_free);
    ::setrlimit(RLIMIT_NOFILE, &lowered);
  }
  ~NoNewDescriptors() { ::setrlimit(RLIMIT_NOFILE, &saved_); }

 private:
  rlimit saved_;
};

// Sends this process's stderr into a pipe while it lives.
class StderrCapture {
 public:
  StderrCapture() {
    if (::pipe(pipe_) != 0) ADD_FAILURE() << "pipe: " << std::strerror(errno);
    saved_ = ::dup(2);
    ::dup2(pipe_[1], 2);
  }
  ~StderrCapture() {
    ::dup2(saved_, 2);
    ::close(saved_);
    ::close(pipe_[0]);
    ::close(pipe_[1]);
  }
  // Waits until what was written contains `text`; false after kWait.
  bool WaitFor(absl::string_view text) {
    const absl::Time deadline = absl::Now() + kWait;
    while (!absl::StrContains(captured_, text)) {
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return false;
      pollfd p{pipe_[0], POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::read(pipe_[0], buf, sizeof(buf));
      if (n <= 0) return false;
      captured_.append(buf, static_cast<size_t>(n));
    }
    return true;
  }

 private:
  int pipe_[2] = {-1, -1};
  int saved_ = -1;
  std::string captured_;
};

TEST(HttpServerTest, KeepsAcceptingAfterRunningOutOfFileDescriptors) {
  std::unique_ptr<HttpServer> server = StartServer({}, EchoTarget());
  ASSERT_NE(server, nullptr);
  std::optional<TestClient> client;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  {
    StderrCapture log;
    NoNewDescriptors no_fds;
    // The kernel completes the handshake; the server's accept fails (EMFILE).
    client.emplace(server->port(), fd);
    ASSERT_TRUE(client->connected());
    client->Send(Get("/after-emfile"));
    EXPECT_TRUE(log.WaitFor("http_accept_failed"));
  }
  std::optional<TestClient::Response> response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "/after-emfile");
}

TEST(HttpServerTest, ResponderUsedAfterTheServerIsDestroyedIsHarmless) {
  ResponderQueue queue;
  std::unique_ptr<HttpServer> server = StartServer({}, queue.Handler());
  ASSERT_NE(server, nullptr);
  TestClient client(server->port());
  client.Send(Get("/"));
  std::shared_ptr<HttpResponder> out = queue.Next();
  ASSERT_NE(out, nullptr);
  server.reset();
  EXPECT_TRUE(out->cancelled());
  out->StartStream(200, {});
  out->Write("x");
  out->End();
  out->Respond(200, {}, "x");
  out->Abort();
  bool called = false;
  out->OnCancel([&] { called = true; });
  EXPECT_TRUE(called);
  // From other threads too.
  std::thread([out] { out->Respond(500, {}, ""); }).join();
  EXPECT_TRUE(client.WaitForClose());
}

}  // namespace
}  // namespace service
}  // namespace understudy
