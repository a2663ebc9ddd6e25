#include "upstream/http_upstream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace upstream {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;
using ::testing::SizeIs;

// Every wait in these tests is bounded by this; none is expected to come
// near it.
constexpr absl::Duration kWait = absl::Seconds(10);

// A request as the fake server read it off the wire.
struct ReceivedRequest {
  std::string request_line;                                  // "POST /p HTTP/1.1"
  std::vector<std::pair<std::string, std::string>> headers;  // As sent.
  std::string body;
  int connection = 0;  // Which accepted connection (1, 2, …) carried it.

  // Every value of the header `name` (case-insensitive).
  std::vector<std::string> Values(absl::string_view name) const {
    std::vector<std::string> out;
    for (const auto& [n, v] : headers) {
      if (absl::EqualsIgnoreCase(n, name)) out.push_back(v);
    }
    return out;
  }
};

// One accepted connection, as the handler sees it.
class FakeConnection {
 public:
  explicit FakeConnection(int fd) : fd_(fd) {}

  // Sends all of `data`; false when the peer is gone.
  bool Write(absl::string_view data) {
    while (!data.empty()) {
      ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Closes the connection both ways, as a crashing server would.
  void Close() { shutdown(fd_, SHUT_RDWR); }

  // Waits until the peer closes the connection (true) or `timeout` passes.
  // Anything the peer sends meanwhile is discarded.
  bool WaitForClose(absl::Duration timeout) {
    absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
      if (ms <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, ms) <= 0) continue;
      char buf[4096];
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return true;
    }
  }

 private:
  int fd_;
};

// A minimal HTTP/1.1 server on 127.0.0.1:0: one thread per connection,
// keep-alive, requests framed by Content-Length. `handler` writes each
// response itself, raw, so tests control every byte and every pause.
class FakeHttpServer {
 public:
  using Handler = std::function<void(const ReceivedRequest&, FakeConnection&)>;

  explicit FakeHttpServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(listen_fd_, 128), 0);
    socklen_t len = sizeof addr;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~FakeHttpServer() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      for (int fd : fds_) shutdown(fd, SHUT_RDWR);
    }
    shutdown(listen_fd_, SHUT_RDWR);  // Wakes accept().
    accept_thread_.join();
    std::vector<std::thread> threads;
    {
      absl::MutexLock lock(&mu_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
    close(listen_fd_);
    absl::MutexLock lock(&mu_);
    for (int fd : fds_) close(fd);
  }

  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }

  std::vector<ReceivedRequest> requests() {
    absl::MutexLock lock(&mu_);
    return requests_;
  }

  int connections() {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(fds_.size());
  }

  // Waits until `n` requests have been read in full.
  bool WaitForRequests(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return requests_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), kWait);
  }

 private:
  void AcceptLoop() {
    for (;;) {
      int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      absl::MutexLock lock(&mu_);
      if (stopping_) {
        close(fd);
        return;
      }
      fds_.push_back(fd);
      int id = static_cast<int>(fds_.size());
      threads_.emplace_back([this, fd, id] { Serve(fd, id); });
    }
  }

  void Serve(int fd, int id) {
    FakeConnection connection(fd);
    std::string buffer;
    for (;;) {
      size_t head_end;
      while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
        if (!Read(fd, &buffer)) return;
      }
      ReceivedRequest request;
      request.connection = id;
      std::vector<std::string> lines =
          absl::StrSplit(absl::string_view(buffer).substr(0, head_end), "\r\n");
      request.request_line = lines[0];
      size_t length = 0;
      for (size_t i = 1; i < lines.size(); ++i) {
        size_t colon = lines[i].find(':');
        std::string name = lines[i].substr(0, colon);
        std::string value(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
        if (absl::EqualsIgnoreCase(name, "content-length")) {
          EXPECT_TRUE(absl::SimpleAtoi(value, &length));
        }
        request.headers.emplace_back(std::move(name), std::move(value));
      }
      buffer.erase(0, head_end + 4);
      while (buffer.size() < length) {
        if (!Read(fd, &buffer)) return;
      }
      request.body = buffer.substr(0, length);
      buffer.erase(0, length);
      {
        absl::MutexLock lock(&mu_);
        requests_.push_back(request);
      }
      handler_(request, connection);
    }
  }

  static bool Read(int fd, std::string* buffer) {
    char chunk[65536];
    ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer->append(chunk, static_cast<size_t>(n));
    return true;
  }

  const Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread accept_thread_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int> fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<ReceivedRequest> requests_ ABSL_GUARDED_BY(mu_);
};

// A complete response with Content-Length.
std::string Response(int status, absl::string_view reason,
                     std::vector<std::pair<std::string, std::string>> headers,
                     absl::string_view body) {
  std::string out = absl::StrCat("HTTP/1.1 ", status, " ", reason, "\r\n");
  for (const auto& [name, value] : headers) absl::StrAppend(&out, name, ": ", value, "\r\n");
  absl::StrAppend(&out, "Content-Length: ", body.size(), "\r\n\r\n", body);
  return out;
}

std::string Chunk(absl::string_view data) {
  return absl::StrCat(absl::Hex(data.size()), "\r\n", data, "\r\n");
}

constexpr absl::string_view kSseHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
    "Transfer-Encoding: chunked\r\n\r\n";

// Records every call; tests wait on its state with deadlines.
class RecordingObserver : public UpstreamHttpObserver {
 public:
  void OnHead(int status, UpstreamHttpHeaders headers) override {
    absl::MutexLock lock(&mu_);
    if (done_count_ > 0) ++calls_after_done_;
    ++head_count_;
    status_ = status;
    headers_ = std::move(headers);
  }
  void OnData(absl::string_view bytes) override {
    absl::MutexLock lock(&mu_);
    if (done_count_ > 0 || head_count_ == 0) ++calls_after_done_;
    pieces_.emplace_back(bytes);
  }
  void OnDone(absl::Status status) override {
    absl::MutexLock lock(&mu_);
    if (done_count_ > 0) ++calls_after_done_;
    ++done_count_;
    done_status_ = std::move(status);
  }

  bool WaitForDone() {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_count_ > 0; };
    return mu_.AwaitWithTimeout(absl::Condition(&done), kWait);
  }
  // Waits until the body received so far contains `text`.
  bool WaitForBody(absl::string_view text) {
    absl::MutexLock lock(&mu_);
    auto has = [this, text]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return absl::StrContains(absl::StrJoin(pieces_, ""), text) || done_count_ > 0;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&has), kWait) &&
           absl::StrContains(absl::StrJoin(pieces_, ""), text);
  }

  absl::Status done_status() {
    absl::MutexLock lock(&mu_);
    return done_status_;
  }
  int done_count() {
    absl::MutexLock lock(&mu_);
    return done_count_;
  }
  // Calls after OnDone, and OnData before OnHead: contract violations.
  int out_of_order_calls() {
    absl::MutexLock lock(&mu_);
    return calls_after_done_;
  }
  int head_count() {
    absl::MutexLock lock(&mu_);
    return head_count_;
  }
  int status() {
    absl::MutexLock lock(&mu_);
    return status_;
  }
  UpstreamHttpHeaders headers() {
    absl::MutexLock lock(&mu_);
    return headers_;
  }
  std::vector<std::string> pieces() {
    absl::MutexLock lock(&mu_);
    return pieces_;
  }
  std::string body() {
    absl::MutexLock lock(&mu_);
    return absl::StrJoin(pieces_, "");
  }

 private:
  absl::Mutex mu_;
  int head_count_ ABSL_GUARDED_BY(mu_) = 0;
  int status_ ABSL_GUARDED_BY(mu_) = 0;
  UpstreamHttpHeaders headers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> pieces_ ABSL_GUARDED_BY(mu_);
  int done_count_ ABSL_GUARDED_BY(mu_) = 0;
  int calls_after_done_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status done_status_ ABSL_GUARDED_BY(mu_);
};

std::unique_ptr<HttpUpstream> MakeUpstream(const std::string& base_url,
                                           HttpUpstream::Options options = {}) {
  options.base_url = base_url;
  absl::StatusOr<std::unique_ptr<HttpUpstream>> upstream = HttpUpstream::Create(options);
  EXPECT_THAT(upstream, IsOk());
  return upstream.ok() ? *std::move(upstream) : nullptr;
}

UpstreamHttpRequest Post(std::string path, std::string body = "{}") {
  UpstreamHttpRequest request;
  request.method = "POST";
  request.path = std::move(path);
  request.headers = {{"Content-Type", "application/json"}};
  request.body = std::move(body);
  request.deadline = absl::Now() + kWait;
  return request;
}

TEST(HttpUpstreamTest, RelaysJsonResponseWithStatusHeadersAndBody) {
  constexpr absl::string_view kBody = R"({"id":"chatcmpl-1","choices":[]})";
  FakeHttpServer server([&](const ReceivedRequest&, FakeConnection& c) {
    c.Write(Response(200, "OK", {{"Content-Type", "application/json"}, {"X-Request-Id", "req-7"}},
                     kBody));
  });
  auto upstream = MakeUpstream(server.url());
  auto observer = std::make_shared<RecordingObserver>();
  upstream->Send(Post("/v1/chat/completions"), observer);

  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(), IsOk());
  EXPECT_EQ(observer->status(), 200);
  EXPECT_THAT(observer->headers(), Contains(Pair("content-type", "application/json")));
  EXPECT_THAT(observer->headers(), Contains(Pair("x-request-id", "req-7")));
  EXPECT_EQ(observer->body(), kBody);
  EXPECT_EQ(observer->head_count(), 1);
  EXPECT_EQ(observer->out_of_order_calls(), 0);
}

TEST(HttpUpstreamTest, StreamsSseEventsAsTheyArrive) {
  absl::Notification release;
  FakeHttpServer server([&](const ReceivedRequest&, FakeConnection& c) {
    c.Write(kSseHead);
    c.Write(Chunk("data: {\"n\":1}\n\n"));
    // The rest only once the test has seen the first event come through.
    release.WaitForNotificationWithTimeout(kWait);
    c.Write(Chunk("data: {\"n\":2}\n\n"));
    c.Write(Chunk("data: [DONE]\n\n"));
    c.Write("0\r\n\r\n");
  });
  auto upstream = MakeUpstream(server.url());
  auto observer = std::make_shared<RecordingObserver>();
  upstream->Send(Post("/v1/chat/completions", R"({"stream":true})"), observer);

  ASSERT_TRUE(observer->WaitForBody("data: {\"n\":1}\n\n"));
  EXPECT_EQ(observer->done_count(), 0);
  EXPECT_EQ(observer->status(), 200);
  EXPECT_THAT(observer->headers(), Contains(Pair("content-type", "text/event-stream")));
  EXPECT_EQ(observer->body(), "data: {\"n\":1}\n\n");  // And nothing more yet.
  const size_t first_pieces = observer->pieces().size();
  release.Notify();

  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(), IsOk());
  EXPECT_EQ(observer->body(), "data: {\"n\":1}\n\ndata: {\"n\":2}\n\ndata: [DONE]\n\n");
  EXPECT_GT(observer->pieces().size(), first_pieces);
  EXPECT_EQ(observer->out_of_order_calls(), 0);
}

TEST(HttpUpstreamTest, ErrorStatusWithBodyIsANormalResponse) {
  constexpr absl::string_view kBody = R"({"error":{"type":"rate_limit_error"}})";
  FakeHttpServer server([&](const ReceivedRequest&, FakeConnection& c) {
    c.Write(Response(429, "Too Many Requests",
                     {{"Content-Type", "application/json"}, {"Retry-After", "2"}}, kBody));
  });
  auto upstream = MakeUpstream(server.url());
  auto observer = std::make_shared<RecordingObserver>();
  upstream->Send(Post("/v1/messages"), observer);

  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(), IsOk());
  EXPECT_EQ(observer->status(), 429);
  EXPECT_THAT(observer->headers(), Contains(Pair("retry-after", "2")));
  EXPECT_EQ(observer->body(), kBody);
}

TEST(HttpUpstreamTest, InterimResponseIsSkipped) {
  FakeHttpServer server([&](const ReceivedRequest&, FakeConnection& c) {
    c.Write("HTTP/1.1 100 Continue\r\nX-Interim: yes\r\n\r\n");
    c.Write(Response(201, "Created", {{"X-Final", "yes"}}, "ok"));
  });
  auto upstream = MakeUpstream(server.url());
  auto observer = std::make_shared<RecordingObserver>();
  upstream->Send(Post("/v1/files"), observer);

  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(), IsOk());
  EXPECT_EQ(observer->head_count(), 1);
  EXPECT_EQ(observer->status(), 201);
  EXPECT_THAT(observer->headers(), Contains(Pair("x-final", "yes")));
  EXPECT_THAT(observer->headers(), Not(Contains(Pair("x-interim", "yes"))));
  EXPECT_EQ(observer->body(), "ok");
}

TEST(HttpUpstreamTest, ConnectionRefusedIsUnavailable) {
  // A bound socket that does not listen refuses connections, and keeps the
  // port from being reused meanwhile.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);

  auto upstream = MakeUpstream(absl::StrCat("http://127.0.0.1:", ntohs(addr.sin_port)));
  auto observer = std::make_shared<RecordingObserver>();
  upstream->Send(Post("/v1/chat/completions"), observer);

  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("/v1/chat/completions")));
  EXPECT_EQ(observer->head_count(), 0);
  close(fd);
}

TEST(HttpUpstreamTest, ConnectionLostMidResponseIsUnavailable) {
  FakeHttpServer server([&](const ReceivedRequest&, FakeConnection& c) {
    c.Write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789");
    c.Close();
  });
  auto upstream = MakeUpstream(server.url());
  auto observer = std::make_shared<RecordingObserver>();
  upstream->Send(Post("/v1/chat/completions"), observer);

  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(observer->status(), 200);
  EXPECT_EQ(observer->body(), "0123456789");
}

TEST(HttpUpstreamTest, SilentUpstreamFailsAtTheDeadline) {
  FakeHttpServer server([&](const ReceivedRequest&, FakeConnection& c) { c.WaitForClose(kWait); });
  auto upstream = MakeUpstream(server.url());
  auto observer = std::make_shared<RecordingObserver>();
  UpstreamHttpRequest request = Post("/v1/chat/completions");
  request.deadline = absl::Now() + absl::Milliseconds(300);
  upstream->Send(std::move(request), observer);

  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(), StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_EQ(observer->head_count(), 0);
}

TEST(HttpUpstreamTest, TotalTimeoutBoundsEveryRequest) {
  FakeHttpServer server([&](const ReceivedRequest&, FakeConnection& c) { c.WaitForClose(kWait); });
  HttpUpstream::Options options;
  options.total_timeout = absl::Milliseconds(300);
  auto upstream = MakeUpstream(server.url(), options);
  auto observer = std::make_shared<RecordingObserver>();
  upstream->Send(Post("/v1/chat/completions"), observer);  // Deadline: kWait.

  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(), StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST(HttpUpstreamTest, PastDeadlineFailsWithoutSending) {
  FakeHttpServer server(
      [&](const ReceivedRequest&, FakeConnection& c) { c.Write(Response(200, "OK", {}, "{}")); });
  auto upstream = MakeUpstream(server.url());
  auto observer = std::make_shared<RecordingObserver>();
  UpstreamHttpRequest request = Post("/v1/chat/completions");
  request.deadline = absl::Now() - absl::Seconds(1);
  upstream->Send(std::move(request), observer);

  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(), StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(server.requests(), SizeIs(0));
}

TEST(HttpUpstreamTest, CancelMidStreamEndsWithCancelledOnceAndClosesTheConnection) {
  absl::Notification server_saw_close;
  FakeHttpServer server([&](const ReceivedRequest&, FakeConnection& c) {
    c.Write(kSseHead);
    c.Write(Chunk("data: {\"n\":1}\n\n"));
    if (c.WaitForClose(kWait)) server_saw_close.Notify();
  });
  auto upstream = MakeUpstream(server.url());
  auto observer = std::make_shared<RecordingObserver>();
  std::shared_ptr<UpstreamHttpCall> call =
      upstream->Send(Post("/v1/chat/completions", R"({"stream":true})"), observer);
  ASSERT_TRUE(observer->WaitForBody("data: {\"n\":1}\n\n"));

  call->Cancel();
  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(), StatusIs(absl::StatusCode::kCancelled));
  EXPECT_TRUE(server_saw_close.WaitForNotificationWithTimeout(kWait));
  call->Cancel();    // A no-op now.
  upstream.reset();  // Joins the worker: every call that will happen has.
  EXPECT_EQ(observer->done_count(), 1);
  EXPECT_EQ(observer->out_of_order_calls(), 0);
}

TEST(HttpUpstreamTest, CancelRightAfterSendEndsWithCancelledOnce) {
  FakeHttpServer server([&](const ReceivedRequest&, FakeConnection& c) { c.WaitForClose(kWait); });
  auto upstream = MakeUpstream(server.url());
  auto observer = std::make_shared<RecordingObserver>();
  upstream->Send(Post("/v1/chat/completions"), observer)->Cancel();

  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(), StatusIs(absl::StatusCode::kCancelled));
  upstream.reset();
  EXPECT_EQ(observer->done_count(), 1);
  EXPECT_EQ(observer->out_of_order_calls(), 0);
}

// Cancels its own call from OnData: observers may call Cancel.
class CancelOnFirstData : public RecordingObserver {
 public:
  void set_call(std::shared_ptr<UpstreamHttpCall> call) {
    absl::MutexLock lock(&mu_);
    call_ = std::move(call);
  }
  void OnData(absl::string_view bytes) override {
    RecordingObserver::OnData(bytes);
    std::shared_ptr<UpstreamHttpCall> call;
    {
      absl::MutexLock lock(&mu_);
      call = call_;
    }
    if (call != nullptr) call->Cancel();
  }

 private:
  absl::Mutex mu_;
  std::shared_ptr<UpstreamHttpCall> call_ ABSL_GUARDED_BY(mu_);
};

TEST(HttpUpstreamTest, ObserverMayCancelItsOwnCall) {
  absl::Notification call_set;
  FakeHttpServer server([&](const ReceivedRequest&, FakeConnection& c) {
    c.Write(kSseHead);
    call_set.WaitForNotificationWithTimeout(kWait);
    c.Write(Chunk("data: 1\n\n"));
    c.WaitForClose(kWait);
  });
  auto upstream = MakeUpstream(server.url());
  auto observer = std::make_shared<CancelOnFirstData>();
  observer->set_call(upstream->Send(Post("/v1/chat/completions"), observer));
  call_set.Notify();

  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(), StatusIs(absl::StatusCode::kCancelled));
  upstream.reset();
  EXPECT_EQ(observer->done_count(), 1);
  EXPECT_EQ(observer->out_of_order_calls(), 0);
  observer->set_call(nullptr);  // Breaks the observer <-> call cycle.
}

TEST(HttpUpstreamTest, RequestLineHeadersAndBodyArriveExactly) {
  FakeHttpServer server(
      [&](const ReceivedRequest&, FakeConnection& c) { c.Write(Response(200, "OK", {}, "{}")); });
  auto upstream = MakeUpstream(server.url() + "/proxy/");
  // 2 MiB with every byte value, NULs included: large enough that curl
  // would ask for 100-continue if it were allowed to.
  std::string body;
  for (int i = 0; i < (2 << 20); ++i) body.push_back(static_cast<char>(i * 7 % 256));
  UpstreamHttpRequest request;
  request.method = "POST";
  request.path = "/v1/messages?beta=true";
  request.headers = {{"x-api-key", "sk-ant-secret"},
                     {"Anthropic-Version", "2023-06-01"},
                     {"content-type", "application/json"},
                     {"X-Multi", "a"},
                     {"X-Multi", "b"},
                     {"X-Empty", ""},
                     {"Accept-Encoding", "gzip, deflate"},
                     {"Host", "evil.example"},
                     {"Connection", "close"},
                     {"Content-Length", "1"}};
  request.body = body;
  request.deadline = absl::Now() + kWait;
  auto observer = std::make_shared<RecordingObserver>();
  upstream->Send(std::move(request), observer);

  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(), IsOk());
  ASSERT_THAT(server.requests(), SizeIs(1));
  const ReceivedRequest got = server.requests()[0];
  EXPECT_EQ(got.request_line, "POST /proxy/v1/messages?beta=true HTTP/1.1");
  EXPECT_EQ(got.body, body);
  EXPECT_THAT(got.Values("x-api-key"), ElementsAre("sk-ant-secret"));
  EXPECT_THAT(got.Values("anthropic-version"), ElementsAre("2023-06-01"));
  EXPECT_THAT(got.Values("content-type"), ElementsAre("application/json"));
  EXPECT_THAT(got.Values("x-multi"), ElementsAre("a", "b"));
  EXPECT_THAT(got.Values("x-empty"), ElementsAre(""));
  EXPECT_THAT(got.Values("accept-encoding"), ElementsAre("identity"));
  EXPECT_THAT(got.Values("host"), ElementsAre(server.url().substr(7)));
  EXPECT_THAT(got.Values("content-length"), ElementsAre(std::to_string(body.size())));
  EXPECT_THAT(got.Values("connection"), ElementsAre());
  EXPECT_THAT(got.Values("expect"), ElementsAre());
  EXPECT_THAT(got.Values("accept"), ElementsAre());
  EXPECT_THAT(got.Values("user-agent"), ElementsAre());
}

TEST(HttpUpstreamTest, GetWithoutBodyAddsNoContentHeaders) {
  FakeHttpServer server([&](const ReceivedRequest&, FakeConnection& c) {
    c.Write(Response(200, "OK", {}, R"({"data":[]})"));
  });
  auto upstream = MakeUpstream(server.url());
  UpstreamHttpRequest request;
  request.method = "GET";
  request.path = "/v1/models";
  request.headers = {{"Authorization", "Bearer sk-secret"}, {"Accept", "application/json"}};
  auto observer = std::make_shared<RecordingObserver>();
  upstream->Send(std::move(request), observer);

  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(), IsOk());
  EXPECT_EQ(observer->body(), R"({"data":[]})");
  const ReceivedRequest got = server.requests().at(0);
  EXPECT_EQ(got.request_line, "GET /v1/models HTTP/1.1");
  EXPECT_THAT(got.Values("authorization"), ElementsAre("Bearer sk-secret"));
  EXPECT_THAT(got.Values("accept"), ElementsAre("application/json"));
  EXPECT_THAT(got.Values("content-type"), ElementsAre());
  EXPECT_THAT(got.Values("content-length"), ElementsAre());
}

TEST(HttpUpstreamTest, SequentialRequestsReuseOneConnection) {
  FakeHttpServer server(
      [&](const ReceivedRequest&, FakeConnection& c) { c.Write(Response(200, "OK", {}, "{}")); });
  auto upstream = MakeUpstream(server.url());
  for (int i = 0; i < 3; ++i) {
    auto observer = std::make_shared<RecordingObserver>();
    upstream->Send(Post("/v1/chat/completions"), observer);
    ASSERT_TRUE(observer->WaitForDone());
    EXPECT_THAT(observer->done_status(), IsOk());
  }
  EXPECT_EQ(server.connections(), 1);
}

TEST(HttpUpstreamTest, FiftyConcurrentSendsAllComplete) {
  FakeHttpServer server([&](const ReceivedRequest& r, FakeConnection& c) {
    c.Write(Response(200, "OK", {}, absl::StrCat("echo ", r.body)));
  });
  auto upstream = MakeUpstream(server.url());
  std::vector<std::shared_ptr<RecordingObserver>> observers;
  for (int i = 0; i < 50; ++i) {
    observers.push_back(std::make_shared<RecordingObserver>());
    upstream->Send(Post("/v1/chat/completions", absl::StrCat(i)), observers.back());
  }
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(observers[i]->WaitForDone()) << i;
    EXPECT_THAT(observers[i]->done_status(), IsOk()) << i;
    EXPECT_EQ(observers[i]->body(), absl::StrCat("echo ", i));
  }
}

TEST(HttpUpstreamTest, DestroyingTheClientCancelsTransfersInFlight) {
  FakeHttpServer server([&](const ReceivedRequest&, FakeConnection& c) { c.WaitForClose(kWait); });
  auto upstream = MakeUpstream(server.url());
  std::vector<std::shared_ptr<RecordingObserver>> observers;
  std::vector<std::shared_ptr<UpstreamHttpCall>> calls;
  for (int i = 0; i < 5; ++i) {
    observers.push_back(std::make_shared<RecordingObserver>());
    calls.push_back(upstream->Send(Post("/v1/chat/completions"), observers.back()));
  }
  ASSERT_TRUE(server.WaitForRequests(5));

  upstream.reset();
  for (auto& observer : observers) {
    EXPECT_EQ(observer->done_count(), 1);
    EXPECT_THAT(observer->done_status(),
                StatusIs(absl::StatusCode::kCancelled, HasSubstr("shut down")));
  }
  for (auto& call : calls) call->Cancel();  // Outlives the client: a no-op.
}

TEST(HttpUpstreamTest, OversizedResponseIsResourceExhausted) {
  FakeHttpServer server([&](const ReceivedRequest&, FakeConnection& c) {
    c.Write(Response(200, "OK", {}, std::string(4096, 'x')));
  });
  HttpUpstream::Options options;
  options.max_response_bytes = 1024;
  auto upstream = MakeUpstream(server.url(), options);
  auto observer = std::make_shared<RecordingObserver>();
  upstream->Send(Post("/v1/chat/completions"), observer);

  ASSERT_TRUE(observer->WaitForDone());
  EXPECT_THAT(observer->done_status(),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("1024")));
  EXPECT_LE(observer->body().size(), 1024u);
}

TEST(HttpUpstreamTest, MalformedRequestIsInvalidArgument) {
  FakeHttpServer server(
      [&](const ReceivedRequest&, FakeConnection& c) { c.Write(Response(200, "OK", {}, "{}")); });
  auto upstream = MakeUpstream(server.url());
  UpstreamHttpRequest no_slash = Post("v1/chat/completions");
  UpstreamHttpRequest injected = Post("/v1/chat/completions");
  injected.headers.emplace_back("X-Bad", "a\r\nX-Injected: 1");
  for (UpstreamHttpRequest* request : {&no_slash, &injected}) {
    auto observer = std::make_shared<RecordingObserver>();
    upstream->Send(*request, observer);
    ASSERT_TRUE(observer->WaitForDone());
    EXPECT_THAT(observer->done_status(), StatusIs(absl::StatusCode::kInvalidArgument));
  }
  EXPECT_THAT(server.requests(), SizeIs(0));
}

TEST(HttpUpstreamTest, BadBaseUrlIsInvalidArgumentNamingTheFlag) {
  HttpUpstream::Options options;
  options.flag = "--upstream openai";
  options.base_url = "ftp://x";
  EXPECT_THAT(HttpUpstream::Create(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--upstream openai=ftp://x: expected an http:// or https:// URL"));
  for (const char* bad : {"api.openai.com", "http://", "https://h/p?q=1", "http://h/#f", ""}) {
    options.base_url = bad;
    EXPECT_THAT(HttpUpstream::Create(options),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--upstream openai=")))
        << bad;
  }
}

TEST(HttpUpstreamTest, BaseUrlWithCredentialsIsRefusedWithoutEchoingThem) {
  HttpUpstream::Options options;
  options.base_url = "https://user:hunter2@api.example.com";
  absl::StatusOr<std::unique_ptr<HttpUpstream>> upstream = HttpUpstream::Create(options);
  EXPECT_THAT(upstream, StatusIs(absl::StatusCode::kInvalidArgument, Not(HasSubstr("hunter2"))));
}

TEST(HttpUpstreamTest, BaseUrlKeepsItsPathWithoutTrailingSlash) {
  HttpUpstream::Options options;
  options.base_url = "HTTPS://api.example.com/proxy/";
  absl::StatusOr<std::unique_ptr<HttpUpstream>> upstream = HttpUpstream::Create(options);
  ASSERT_THAT(upstream, IsOk());
  EXPECT_EQ((*upstream)->base_url(), "HTTPS://api.example.com/proxy");
}

}  // namespace
}  // namespace upstream
}  // namespace understudy
