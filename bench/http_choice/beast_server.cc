// beast_server: the Boost.Beast/Asio (Debian Boost 1.74, header-only) candidate
// for understudy's OpenAI/Anthropic-compatible HTTP listener, kept as the HTTP
// baseline of the benchmark suite.
//
// Contract:
//   * Listens on 127.0.0.1:--port (0 = an ephemeral port). Once listening it
//     prints exactly one line "listening on PORT" to stdout and flushes.
//   * POST /v1/chat/completions -> 200, application/json,
//     bench::kChatCompletionBody (request body read, not parsed).
//   * GET /stream -> 200, text/event-stream, chunked; bench::SseEvent(0..19),
//     event 0 at once, then one every 50 ms, paced by a steady_timer: an open
//     stream holds no thread while it waits.
//   * Anything else -> 404 with an empty body.
//   * HTTP/1.1 keep-alive: a connection serves any number of requests until
//     the client closes it, sends "Connection: close", stays idle for
//     kIdleTimeout, or sends a request the parser rejects (then it is closed
//     without an answer; a production listener should answer 400/413).
//   * Exits 0 on SIGINT/SIGTERM or after --max-seconds (default 900).
//
// Threading: one io_context run by --threads threads (default 2, the core
// count here). Every connection gets its own strand, so a Session's handlers
// never run concurrently and Session needs no lock; the timer of a stream
// runs on that same strand. A Session lives as long as an operation it
// started is pending (each handler holds a shared_ptr to it).
#include <signal.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_bodies.h"

namespace {

namespace bench = ::understudy::bench;
namespace beast = ::boost::beast;
namespace http = ::boost::beast::http;
namespace net = ::boost::asio;
using tcp = ::boost::asio::ip::tcp;

// How long a keep-alive connection may sit idle between requests.
constexpr std::chrono::seconds kIdleTimeout{60};
// How long one write may take before the peer is judged gone.
constexpr std::chrono::seconds kWriteTimeout{30};
// Beast's request_parser refuses bodies over 1 MiB by default; an agent's
// chat request with a long history can exceed that, so raise it.
constexpr std::uint64_t kBodyLimit = 64ull << 20;

// One HTTP/1.1 connection. Create with std::make_shared and call Start() once;
// the object then keeps itself alive through its pending handlers.
class Session final : public std::enable_shared_from_this<Session> {
 public:
  // `socket` must already be bound to a strand (see Listener).
  explicit Session(tcp::socket&& socket)
      : stream_(std::move(socket)), timer_(stream_.get_executor()) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void Start() {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&Session::Read,
                                            shared_from_this()));
  }

 private:
  void Read() {
    // A parser serves one message: make a fresh one per request, but keep
    // buffer_ (it may already hold the start of a pipelined request).
    parser_.emplace();
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::OnRead,
                                               shared_from_this()));
  }

  void OnRead(beast::error_code ec, std::size_t /*bytes*/) {
    if (ec == http::error::end_of_stream) return Close();
    if (ec) return;  // Timeout, reset or a rejected request: drop it.
    const auto& req = parser_->get();
    const beast::string_view target = req.target();
    if (req.method() == http::verb::post &&
        target == beast::string_view(bench::kChatCompletionPath.data(),
                                     bench::kChatCompletionPath.size())) {
      return WriteFixed(req.version(), req.keep_alive(), http::status::ok,
                        bench::kChatCompletionBody);
    }
    if (req.method() == http::verb::get &&
        target == beast::string_view(bench::kStreamPath.data(),
                                     bench::kStreamPath.size())) {
      return StartStream(req.version(), req.keep_alive());
    }
    WriteFixed(req.version(), req.keep_alive(), http::status::not_found, {});
  }

  void WriteFixed(unsigned version, bool keep_alive, http::status status,
                  std::string_view body) {
    res_ = {};
    res_.result(status);
    res_.version(version);
    if (!body.empty()) res_.set(http::field::content_type, "application/json");
    res_.body().assign(body.data(), body.size());
    res_.keep_alive(keep_alive);
    res_.prepare_payload();  // Content-Length.
    stream_.expires_after(kWriteTimeout);
    http::async_write(stream_, res_,
                      beast::bind_front_handler(&Session::OnWriteDone,
                                                shared_from_this(),
                                                keep_alive));
  }

  void OnWriteDone(bool keep_alive, beast::error_code ec, std::size_t) {
    if (ec) return;
    if (!keep_alive) return Close();
    Read();
  }

  // SSE: the header goes out through a serializer with chunked encoding, then
  // each event is one chunk written by hand, paced by timer_. Only one write
  // is ever outstanding on stream_ (Asio forbids overlapping async_writes).
  void StartStream(unsigned version, bool keep_alive) {
    stream_res_.emplace(http::status::ok, version);
    stream_res_->set(http::field::content_type, "text/event-stream");
    stream_res_->set(http::field::cache_control, "no-cache");
    stream_res_->keep_alive(keep_alive);
    stream_res_->chunked(true);
    serializer_.emplace(*stream_res_);
    next_event_ = 0;
    stream_.expires_after(kWriteTimeout);
    http::async_write_header(
        stream_, *serializer_,
        beast::bind_front_handler(&Session::OnStreamStep, shared_from_this(),
                                  keep_alive));
  }

  void OnStreamStep(bool keep_alive, beast::error_code ec, std::size_t) {
    if (ec) return;
    if (next_event_ == bench::kSseEventCount) {
      stream_.expires_after(kWriteTimeout);
      net::async_write(stream_, http::make_chunk_last(),
                       beast::bind_front_handler(&Session::OnWriteDone,
                                                 shared_from_this(),
                                                 keep_alive));
      return;
    }
    if (next_event_ == 0) return WriteEvent(keep_alive, {});
    timer_.expires_after(bench::kSseEventInterval);
    timer_.async_wait(beast::bind_front_handler(
        &Session::WriteEvent, shared_from_this(), keep_alive));
  }

  void WriteEvent(bool keep_alive, beast::error_code ec) {
    if (ec) return;
    event_ = bench::SseEvent(next_event_++);  // Must outlive the write.
    stream_.expires_after(kWriteTimeout);
    net::async_write(stream_, http::make_chunk(net::buffer(event_)),
                     beast::bind_front_handler(&Session::OnStreamStep,
                                               shared_from_this(),
                                               keep_alive));
  }

  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  beast::tcp_stream stream_;
  net::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  std::optional<http::response<http::empty_body>> stream_res_;
  std::optional<http::response_serializer<http::empty_body>> serializer_;
  std::string event_;
  int next_event_ = 0;
};

// Accepts connections forever and starts a Session for each, on its own
// strand, with TCP_NODELAY set.
class Listener final : public std::enable_shared_from_this<Listener> {
 public:
  // `ioc` must outlive the Listener.
  Listener(net::io_context& ioc, tcp::acceptor&& acceptor)
      : ioc_(ioc), acceptor_(std::move(acceptor)) {}

  void Start() { Accept(); }

 private:
  void Accept() {
    acceptor_.async_accept(
        net::make_strand(ioc_),
        beast::bind_front_handler(&Listener::OnAccept, shared_from_this()));
  }

  void OnAccept(beast::error_code ec, tcp::socket socket) {
    if (ec) {
      // E.g. EMFILE: keep accepting rather than stopping the listener.
      std::fprintf(stderr, "accept: %s\n", ec.message().c_str());
    } else {
      beast::error_code opt_ec;
      socket.set_option(tcp::no_delay(true), opt_ec);
      std::make_shared<Session>(std::move(socket))->Start();
    }
    Accept();
  }

  net::io_context& ioc_;
  tcp::acceptor acceptor_;
};

struct Flags {
  int port = 0;
  int threads = 2;
  int max_seconds = 900;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char* name) -> const char* {
      size_t n = std::strlen(name);
      if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=')
        return argv[i] + n + 1;
      return nullptr;
    };
    if (const char* v = value("--port")) {
      f.port = std::atoi(v);
    } else if (const char* v = value("--threads")) {
      f.threads = std::max(1, std::atoi(v));
    } else if (const char* v = value("--max-seconds")) {
      f.max_seconds = std::atoi(v);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--port=0] [--threads=2] [--max-seconds=900]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  net::io_context ioc{flags.threads};

  tcp::acceptor acceptor(ioc);
  const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"),
                               static_cast<unsigned short>(flags.port));
  beast::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  // Asio's max_listen_connections is SOMAXCONN; cpp-httplib uses 5.
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    std::fprintf(stderr, "listen on 127.0.0.1:%d: %s\n", flags.port,
                 ec.message().c_str());
    return 1;
  }
  std::printf("listening on %d\n", acceptor.local_endpoint().port());
  std::fflush(stdout);
  std::make_shared<Listener>(ioc, std::move(acceptor))->Start();

  net::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](beast::error_code, int) { ioc.stop(); });
  net::steady_timer limit(ioc, std::chrono::seconds(flags.max_seconds));
  limit.async_wait([&](beast::error_code) { ioc.stop(); });

  std::vector<std::thread> threads;
  for (int i = 1; i < flags.threads; ++i) threads.emplace_back([&] {
    ioc.run();
  });
  ioc.run();
  for (auto& t : threads) t.join();
  return 0;
}
