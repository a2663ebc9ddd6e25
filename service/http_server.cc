// The HTTP/1.1 listener behind http_server.h, on Boost.Beast/Asio (Debian
// Boost 1.74, header-only). All of Beast stays in this file: it takes ~20 s
// to compile, and the header must not leak Boost types.
//
// Design (see bench/http_choice/RESULTS.md for the pitfalls this answers):
//   * One io_context, run by options.threads threads. Each accepted socket
//     gets its own strand; every member of a Connection except the few
//     marked otherwise is touched only on that strand, so it needs no lock.
//   * A Connection reads with its own loop (async_read_some into a small
//     buffer, appended to `buffer_`, fed to a fresh request_parser per
//     request), so exactly one read is pending at all times. While a request
//     is being answered the same read stays pending: that is how a client's
//     hang-up is noticed even when nothing is being written, and any
//     pipelined bytes it brings are kept in `buffer_` for the next request.
//   * Everything written goes through one queue of Pieces (one write pending
//     per socket); a Piece may carry a not_before, which a steady_timer on
//     the strand waits for.
//   * What the handler answers before it returns (a replay answers at once)
//     runs at once, on the strand that called it (Dispatch), and goes out in
//     one write after the handler returns. Posted, each call went to the
//     strand's waiting queue, which re-posts itself to the io_context once
//     the handler returns (often to the other thread), and a stream's head,
//     events and end went out in up to three writes; now one sendmsg (an
//     11-event SSE replay: +24% events/s, time to first event -38%; a chat
//     completion +5% req/s; docs/PERFORMANCE.md). Any other call (another
//     thread, or after the handler returned) is posted, and once one call
//     of a responder has been posted all its later ones are too, so they
//     reach the connection in the order they were made.
//   * Not one io_context per thread: that removed the threads' hand-offs
//     and lock waits (25% less CPU per request at 8k req/s) but made p99
//     worse (x1.6 at 16 connections): a connection then waits for its own
//     thread while the trace writer holds that core, where a shared
//     io_context lets the other thread serve it.
//   * The server keeps a strong reference to every open Connection (dropped
//     in Connection::Close). A Responder holds only a weak one, and reaches
//     the connection's strand through the server's Gate, which Shutdown
//     closes before it stops and destroys the io_context: a responder used
//     after that, from any thread, only takes a lock and returns.
#include "service/http_server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/env.h"
#include "base/log.h"

namespace understudy {
namespace service {

absl::string_view HttpRequest::Header(absl::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(key, name)) return value;
  }
  return {};
}

namespace {

namespace net = ::boost::asio;
namespace beast = ::boost::beast;
namespace http = ::boost::beast::http;
using tcp = ::boost::asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

// Bytes asked of the kernel per read.
constexpr size_t kReadSize = 16 << 10;
// While a request is being answered the connection keeps reading (to notice
// a hang-up) and keeps what a pipelining client sends; past this much it
// stops reading until the answer is complete.
constexpr size_t kMaxBufferedWhileAnswering = 1 << 20;
// After the last response on a connection the server half-closes and reads
// (discarding) until the client closes too, for at most this long, so that
// the client reads the response before a reset can destroy it.
constexpr auto kLingerTimeout = std::chrono::seconds(2);
// Pause before accepting again after an accept error such as EMFILE.
constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);
// Most queued pieces gathered into one write.
constexpr size_t kMaxPiecesPerWrite = 64;
// How long Shutdown waits for the connections to run their own Close before
// it stops the io_context regardless.
constexpr absl::Duration kCloseGrace = absl::Seconds(2);

std::string DefaultErrorBody(int status, absl::string_view message) {
  absl::string_view code = "bad_request";
  if (status == 413) code = "body_too_large";
  if (status == 431) code = "headers_too_large";
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') {
      escaped.push_back('\\');
      escaped.push_back(c);
    } else if (static_cast<unsigned char>(c) >= 0x20) {
      escaped.push_back(c);
    }
  }
  return absl::StrCat(R"({"error":{"message":")", escaped,
                      R"(","type":"invalid_request_error","code":")", code, R"("}})");
}

absl::string_view ReasonPhrase(int status) {
  const http::status s = http::int_to_status(static_cast<unsigned>(status));
  if (s == http::status::unknown) return "Unknown";
  const beast::string_view reason = http::obsolete_reason(s);
  return absl::string_view(reason.data(), reason.size());
}

bool IsToken(absl::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (c <= 0x20 || c >= 0x7f || c == ':') return false;
  }
  return true;
}

bool IsFieldValue(absl::string_view value) {
  for (char c : value) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

// Framing is the server's: the handler's own values for these are dropped.
bool IsFramingHeader(absl::string_view name) {
  return absl::EqualsIgnoreCase(name, "content-length") ||
         absl::EqualsIgnoreCase(name, "transfer-encoding") ||
         absl::EqualsIgnoreCase(name, "connection");
}

// The steady-clock instant of `t`, clamped so that far futures do not
// overflow.
SteadyClock::time_point ToSteady(absl::Time t) {
  if (t == absl::InfinitePast()) return SteadyClock::time_point::min();
  absl::Duration wait = t - Env::Default()->Now();
  if (wait <= absl::ZeroDuration()) return SteadyClock::time_point::min();
  wait = std::min(wait, absl::Hours(24 * 365));
  return SteadyClock::now() + absl::ToChronoNanoseconds(wait);
}

// Lets responders reach connections only while the io_context is alive.
class Gate {
 public:
  // Runs `fn` under the gate's lock if the gate is still open.
  template <typename F>
  void IfOpen(F&& fn) {
    absl::MutexLock lock(&mu_);
    if (open_) fn();
  }
  // After this returns no IfOpen runs its function again.
  void Close() {
    absl::MutexLock lock(&mu_);
    open_ = false;
  }

 private:
  absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = true;
};

class ServerImpl;
class Responder;
class Connection;

// The connection whose Dispatch is calling the handler on this thread, or
// null.
thread_local const Connection* t_dispatching = nullptr;

// One accepted connection. Lives while the server's registry holds it (until
// Close) or one of its operations is pending. All methods run on its strand
// except the constructor and Post* (any thread).
class Connection final : public std::enable_shared_from_this<Connection> {
 public:
  // `server` outlives every Connection (Shutdown destroys them all).
  // `tls` (not owned; outlives the connection) makes it a TLS connection.
  Connection(ServerImpl* server, tcp::socket socket, net::ssl::context* tls)
      : server_(server),
        executor_(socket.get_executor()),
        socket_(std::move(socket)),
        read_timer_(executor_),
        write_timer_(executor_),
        pace_timer_(executor_) {
    if (tls != nullptr) tls_ = std::make_unique<net::ssl::stream<tcp::socket&>>(socket_, *tls);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  // The strand. Safe from any thread.
  const net::any_io_executor& executor() const { return executor_; }

  // Any thread: starts serving / stops taking new requests / closes now.
  void PostStart();
  void PostStopping();
  void PostClose();

  // The responder's requests for answer `id` (ignored unless it is the
  // answer in progress). Strand only.
  void DoRespond(uint64_t id, int status, HttpHeaders headers, std::string body);
  void DoStartStream(uint64_t id, int status, HttpHeaders headers);
  void DoWrite(uint64_t id, std::string data, SteadyClock::time_point not_before);
  void DoWriteFrom(uint64_t id, std::shared_ptr<HttpSource> source);
  void DoEnd(uint64_t id);
  void DoAbort(uint64_t id);
  // The responder was dropped without answering.
  void DoAbandon(uint64_t id);

  // True while Dispatch is calling the handler (then t_dispatching is this
  // connection on the thread that calls it): the responder may call its
  // Do* at once, with RunInline.
  bool dispatching() const { return dispatching_; }
  // Runs fn(*this) now, for a responder call made while dispatching. A
  // close it causes reports the client gone by a post, not from inside the
  // caller's own call.
  template <typename F>
  void RunInline(F& fn) {
    in_responder_call_ = true;
    fn(*this);
    in_responder_call_ = false;
  }

 private:
  enum class State {
    kNew,        // Not started yet.
    kReading,    // Reading a request (idle timeout armed while waiting).
    kAnswering,  // The handler has the request; reads watch for hang-up.
    kClosing,    // Last response queued or sent; discarding input.
    kClosed,
  };
  // What to do once a Piece has been written.
  enum class After { kNothing, kAnswerDone, kHalfClose, kClose };
  enum class Framing { kNone, kContentLength, kChunked, kCloseDelimited };
  struct Piece {
    std::string head;
    std::string body;
    // Instead of `body`: bytes a source produced (bounded by its window,
    // not by the queued-bytes bounds), or a view of bytes the source owns,
    // alive while `keepalive` is.
    std::string produced;
    absl::string_view shared;
    std::shared_ptr<const void> keepalive;
    std::string tail;
    SteadyClock::time_point not_before = SteadyClock::time_point::min();
    After after = After::kNothing;
    // Not bytes: where a WriteFrom source's pieces go (in later_).
    std::shared_ptr<HttpSource> source;
    // Bytes this piece counts against the queued-bytes bounds.
    size_t Owned() const { return head.size() + body.size() + tail.size(); }
    // Bytes it sends.
    size_t Size() const { return Owned() + produced.size() + shared.size(); }
  };

  void StartRead();
  void OnRead(beast::error_code ec, size_t n);
  void WaitForData();
  void Parse();
  void OnHeader();
  void Dispatch();
  void Reject(int status, absl::string_view message);
  bool IsCurrent(uint64_t id) const { return state_ == State::kAnswering && id == answer_id_; }
  // Frames a stream piece of `size` bytes (chunk header and trailer); false
  // when the answer has no body to stream into.
  bool Frame(size_t size, Piece* piece) const;
  // Queues pieces of the source in progress until its window is full or it
  // ends; then what was queued after it (up to the next source).
  void Refill();
  std::string Head(int status, const HttpHeaders& headers, Framing framing,
                   size_t content_length) const;
  void Queue(Piece piece, bool pump = true);
  void Pump();
  void OnWrite(beast::error_code ec);
  void AnswerDone();
  void BeginClosing();
  void Close();
  // Drops every queued piece, and their count in the server's total.
  void ClearQueue();
  // Closes the connection when `timeout` passes first; with
  // `request_deadline`, answers 408 first (a request did not arrive whole).
  void ArmReadTimer(SteadyClock::duration timeout, bool request_deadline = false);
  void DisarmReadTimer();
  void ArmWriteTimer();
  void DisarmWriteTimer();
  void CountInFlight(bool counted);

  ServerImpl* const server_;
  const net::any_io_executor executor_;
  tcp::socket socket_;
  // Over socket_, for a TLS listener; null for plaintext.
  std::unique_ptr<net::ssl::stream<tcp::socket&>> tls_;
  net::steady_timer read_timer_;
  net::steady_timer write_timer_;
  net::steady_timer pace_timer_;

  State state_ = State::kNew;
  bool dispatching_ = false;        // Dispatch is calling the handler.
  bool in_responder_call_ = false;  // RunInline is running.
  bool stopping_ = false;   // The server is shutting down.
  bool counted_ = false;    // This connection's request is in in_flight.
  bool peer_eof_ = false;   // The client finished sending (kClosing).
  uint64_t read_gen_ = 0;   // Invalidates stale read-timer waits.
  uint64_t write_gen_ = 0;  // Invalidates stale write-timer waits.

  // Reading.
  bool read_pending_ = false;
  std::array<char, kReadSize> read_chunk_;
  // Received and not yet parsed; may hold the next pipelined request.
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool header_seen_ = false;
  // When the request being received began (its first byte), for
  // request_timeout; max() between requests.
  SteadyClock::time_point request_started_ = SteadyClock::time_point::max();

  // The answer in progress.
  uint64_t answer_id_ = 0;
  uint64_t next_answer_id_ = 0;
  std::weak_ptr<Responder> responder_;
  bool keep_alive_ = false;
  bool http10_ = false;
  bool head_request_ = false;
  bool answer_started_ = false;  // Respond or StartStream done.
  bool answer_ending_ = false;   // Respond or End done.
  Framing framing_ = Framing::kNone;

  // Writing.
  std::deque<Piece> out_;
  // While a WriteFrom source is in progress, what was queued after it.
  std::shared_ptr<HttpSource> source_;
  std::deque<Piece> later_;
  size_t owned_queued_ = 0;  // sum of out_'s and later_'s Owned()
  size_t out_bytes_ = 0;     // sum of out_'s Size()
  bool writing_ = false;
  bool pacing_ = false;
  size_t pieces_in_write_ = 0;
  std::vector<net::const_buffer> write_buffers_;
};

// The HttpResponder of one request. See http_server.h for the contract.
class Responder final : public HttpResponder {
 public:
  Responder(std::weak_ptr<Connection> connection, uint64_t id, std::shared_ptr<Gate> gate)
      : connection_(std::move(connection)), id_(id), gate_(std::move(gate)) {}
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;
  ~Responder() override;

  void Respond(int status, HttpHeaders headers, std::string body) override;
  void StartStream(int status, HttpHeaders headers) override;
  void Write(std::string data, absl::Time not_before) override;
  void WriteFrom(std::shared_ptr<HttpSource> source) override;
  void End() override;
  void Abort() override;
  bool cancelled() const override;
  void OnCancel(std::function<void()> callback) override;

  // Called on the connection's strand: the answer was fully written.
  void MarkComplete();
  // Called on the connection's strand: the connection closed before the
  // answer was complete. Runs the OnCancel callback, if any.
  void MarkClientGone();

 private:
  enum class Phase { kFresh, kStreaming, kEnding, kDone };

  // Runs fn(Connection&) on the connection's strand, if the server still
  // runs and the connection is open. Called under mu_ so that calls reach
  // the strand in the order they were made.
  template <typename F>
  void Post(F fn) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The connection, when fn may run on it at once instead (its handler is
  // being called on this thread and nothing of this responder was posted
  // before); else null, and fn is posted. Called under mu_; the caller runs
  // it with RunInline after releasing mu_ (a close it causes reaches
  // MarkClientGone, which takes mu_). Nothing can run on the strand in
  // between: this thread holds it.
  template <typename F>
  Connection* InlineOrPost(F& fn) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::weak_ptr<Connection> connection_;
  const uint64_t id_;
  const std::shared_ptr<Gate> gate_;

  mutable absl::Mutex mu_;
  Phase phase_ ABSL_GUARDED_BY(mu_) = Phase::kFresh;
  bool client_gone_ ABSL_GUARDED_BY(mu_) = false;
  bool aborted_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void()> on_cancel_ ABSL_GUARDED_BY(mu_);
  bool posted_ ABSL_GUARDED_BY(mu_) = false;  // A call went by Post.
};

class ServerImpl final : public HttpServer {
 public:
  ServerImpl(const HttpServerOptions& options, HttpHandler handler)
      : options_(options), handler_(std::move(handler)), gate_(std::make_shared<Gate>()) {
    if (!options_.error_body) {
    options_.error_body = [](int status, absl::string_view message, absl::string_view) {
      return DefaultErrorBody(status, message);
    };
  }
  }
  ServerImpl(const ServerImpl&) = delete;
  ServerImpl& operator=(const ServerImpl&) = delete;
  ~ServerImpl() override { Shutdown(Env::Default()->Now()); }

  // Binds `endpoint` and starts `threads` threads.
  absl::Status Listen(const tcp::endpoint& endpoint, int threads);
  // Sets up TLS from the options' PEM certificate and key (none when both
  // are empty). INVALID_ARGUMENT when they cannot be used.
  absl::Status ConfigureTls();

  int port() const override { return port_; }
  std::string address() const override { return address_; }
  int in_flight() const override {
    absl::MutexLock lock(&mu_);
    return in_flight_;
  }
  void Shutdown(absl::Time deadline) override;

  // For connections (any thread).
  const HttpServerOptions& options() const { return options_; }
  const HttpHandler& handler() const { return handler_; }
  const std::shared_ptr<Gate>& gate() const { return gate_; }
  void AddInFlight(int delta) {
    absl::MutexLock lock(&mu_);
    in_flight_ += delta;
  }
  // Owned bytes queued over every connection (any thread).
  std::atomic<size_t>& queued_total() { return queued_total_; }
  // Drops the registry's reference to `connection`.
  void Forget(Connection* connection);

 private:
  void Accept();
  void OnAccept(beast::error_code ec, tcp::socket socket);
  std::vector<std::shared_ptr<Connection>> Connections();

  HttpServerOptions options_;
  const HttpHandler handler_;
  const std::shared_ptr<Gate> gate_;
  // TLS settings shared by every connection; null for plaintext.
  std::unique_ptr<net::ssl::context> tls_;
  int port_ = 0;
  std::string address_;

  // Destroyed explicitly, in this order reversed, at the end of Shutdown.
  std::unique_ptr<net::io_context> ioc_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  std::unique_ptr<tcp::acceptor> acceptor_;            // On its own strand.
  std::unique_ptr<net::steady_timer> accept_backoff_;  // Same strand.
  std::vector<std::thread> threads_;

  std::atomic<size_t> queued_total_{0};
  mutable absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_done_ ABSL_GUARDED_BY(mu_) = false;
  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
};

// ---------------------------------------------------------------------------
// Connection

Connection::~Connection() {
  server_->queued_total().fetch_sub(owned_queued_, std::memory_order_relaxed);
  // Only when Shutdown destroys a connection that never ran Close.
  if (state_ != State::kClosed) {
    if (counted_) server_->AddInFlight(-1);
    if (auto responder = responder_.lock()) responder->MarkClientGone();
  }
}

void Connection::PostStart() {
  net::post(executor_, [self = shared_from_this()] {
    if (self->state_ != State::kNew) return;
    if (self->tls_ == nullptr) {
      self->state_ = State::kReading;
      return self->Parse();
    }
    // The handshake, bounded like a request: a client that opens a TLS
    // connection and sends nothing is closed.
    self->ArmReadTimer(absl::ToChronoNanoseconds(self->server_->options().request_timeout));
    self->tls_->async_handshake(net::ssl::stream_base::server,
                                [self](beast::error_code ec) {
                                  if (self->state_ != State::kNew) return;  // closed meanwhile
                                  self->DisarmReadTimer();
                                  if (ec) {
                                    Log(LogLevel::kDebug, "tls_handshake_failed",
                                        {{"error", ec.message()}});
                                    return self->Close();
                                  }
                                  self->state_ = State::kReading;
                                  self->Parse();
                                });
  });
}

void Connection::PostStopping() {
  net::post(executor_, [self = shared_from_this()] {
    self->stopping_ = true;
    // Idle (or part-way through a request's header): close now. A request
    // being received or answered is finished first, then the connection
    // closes instead of reading another.
    if ((self->state_ == State::kReading && !self->counted_) || self->state_ == State::kNew ||
        self->state_ == State::kClosing) {
      self->Close();
    }
  });
}

void Connection::PostClose() {
  net::post(executor_, [self = shared_from_this()] { self->Close(); });
}

void Connection::StartRead() {
  if (read_pending_ || state_ == State::kClosed || state_ == State::kNew) return;
  if (state_ == State::kAnswering && buffer_.size() >= kMaxBufferedWhileAnswering) return;
  read_pending_ = true;
  auto on_read = [self = shared_from_this()](beast::error_code ec, size_t n) {
    self->OnRead(ec, n);
  };
  if (tls_ != nullptr) {
    tls_->async_read_some(net::buffer(read_chunk_), std::move(on_read));
  } else {
    socket_.async_read_some(net::buffer(read_chunk_), std::move(on_read));
  }
}

void Connection::OnRead(beast::error_code ec, size_t n) {
  read_pending_ = false;
  if (state_ == State::kClosed) return;
  if (ec) {
    if (state_ == State::kClosing && ec == net::error::eof && (writing_ || !out_.empty())) {
      // The client is done sending; let the last response go out first.
      peer_eof_ = true;
      return;
    }
    // Between requests, end-of-stream is the normal end of a keep-alive
    // connection. While answering, it is the client hanging up.
    Close();
    return;
  }
  switch (state_) {
    case State::kReading:
      DisarmReadTimer();
      buffer_.commit(net::buffer_copy(buffer_.prepare(n), net::buffer(read_chunk_.data(), n)));
      Parse();
      break;
    case State::kAnswering:
      buffer_.commit(net::buffer_copy(buffer_.prepare(n), net::buffer(read_chunk_.data(), n)));
      StartRead();
      break;
    case State::kClosing:
      StartRead();  // Discard.
      break;
    default:
      break;
  }
}

void Connection::WaitForData() {
  const HttpServerOptions& options = server_->options();
  if (request_started_ == SteadyClock::time_point::max()) {
    ArmReadTimer(absl::ToChronoNanoseconds(options.idle_timeout));
  } else {
    // Part of a request is in: the rest must come by its deadline, which
    // each trickled byte does not move.
    const SteadyClock::time_point deadline =
        request_started_ + absl::ToChronoNanoseconds(options.request_timeout);
    const SteadyClock::time_point now = SteadyClock::now();
    ArmReadTimer(deadline > now ? deadline - now : SteadyClock::duration::zero(),
                 /*request_deadline=*/true);
  }
  StartRead();
}

void Connection::Parse() {
  const HttpServerOptions& options = server_->options();
  while (state_ == State::kReading) {
    if (!parser_) {
      parser_.emplace();
      parser_->header_limit(
          static_cast<std::uint32_t>(std::min<size_t>(options.max_header_bytes, UINT32_MAX)));
      parser_->body_limit(static_cast<std::uint64_t>(options.max_body_bytes));
      header_seen_ = false;
    }
    if (buffer_.size() == 0) break;
    if (request_started_ == SteadyClock::time_point::max()) request_started_ = SteadyClock::now();
    beast::error_code ec;
    const size_t n = parser_->put(buffer_.data(), ec);
    buffer_.consume(n);
    if (ec == http::error::need_more) break;
    if (ec == http::error::body_limit) {
      return Reject(413, absl::StrCat("request body exceeds ", options.max_body_bytes, " bytes"));
    }
    if (ec == http::error::header_limit) {
      return Reject(431,
                    absl::StrCat("request header exceeds ", options.max_header_bytes, " bytes"));
    }
    if (ec) return Reject(400, absl::StrCat("malformed HTTP request: ", ec.message()));
    if (!header_seen_ && parser_->is_header_done()) {
      header_seen_ = true;
      OnHeader();
    }
    if (parser_->is_done()) return Dispatch();
    if (n == 0) break;
  }
  if (state_ == State::kReading) WaitForData();
}

void Connection::OnHeader() {
  CountInFlight(true);
  const auto& req = parser_->get();
  if (req.version() >= 11 && !parser_->is_done()) {
    const auto it = req.find(http::field::expect);
    if (it != req.end() && beast::iequals(it->value(), "100-continue")) {
      Piece piece;
      piece.head = "HTTP/1.1 100 Continue\r\n\r\n";
      Queue(std::move(piece));
    }
  }
}

void Connection::Dispatch() {
  http::request<http::string_body> msg = parser_->release();
  parser_.reset();
  request_started_ = SteadyClock::time_point::max();
  keep_alive_ = msg.keep_alive();
  http10_ = msg.version() < 11;
  head_request_ = msg.method() == http::verb::head;
  answer_started_ = false;
  answer_ending_ = false;
  framing_ = Framing::kNone;

  HttpRequest request;
  const beast::string_view method = msg.method_string();
  request.method.assign(method.data(), method.size());
  const beast::string_view target = msg.target();
  request.target.assign(target.data(), target.size());
  for (const auto& field : msg) {
    const beast::string_view name = field.name_string();
    const beast::string_view value = field.value();
    request.headers.emplace_back(absl::AsciiStrToLower(absl::string_view(name.data(), name.size())),
                                 std::string(value.data(), value.size()));
  }
  request.body = std::move(msg.body());
  if (const auto& check_host = server_->options().check_host) {
    if (absl::Status host = check_host(request); !host.ok()) {
      return Reject(403, host.message());
    }
  }

  answer_id_ = ++next_answer_id_;
  state_ = State::kAnswering;
  auto responder = std::make_shared<Responder>(weak_from_this(), answer_id_, server_->gate());
  responder_ = responder;
  StartRead();  // Watches for a hang-up while the handler answers.
  // What the handler answers before it returns is queued at once and sent
  // in one write below (see the design notes at the top).
  const Connection* const outer = t_dispatching;
  t_dispatching = this;
  dispatching_ = true;
  server_->handler()(std::move(request), std::move(responder));
  dispatching_ = false;
  t_dispatching = outer;
  Pump();
}

void Connection::Reject(int status, absl::string_view message) {
  CountInFlight(false);
  // The target, when the request line was read (empty before): the error
  // body may take the shape of the API it names. Beast finds a body over
  // the limit as the header completes, before is_header_done().
  std::string target;
  if (parser_.has_value()) {
    const beast::string_view t = parser_->get().target();
    target.assign(t.data(), t.size());
  }
  parser_.reset();
  request_started_ = SteadyClock::time_point::max();
  buffer_.consume(buffer_.size());
  keep_alive_ = false;
  http10_ = false;
  const std::string body = server_->options().error_body(status, message, target);
  Piece piece;
  piece.head =
      Head(status, {{"content-type", "application/json"}}, Framing::kContentLength, body.size());
  piece.body = body;
  piece.after = After::kHalfClose;
  state_ = State::kClosing;
  DisarmReadTimer();
  ArmReadTimer(kLingerTimeout);
  Queue(std::move(piece));
  StartRead();
}

std::string Connection::Head(int status, const HttpHeaders& headers, Framing framing,
                             size_t content_length) const {
  std::string out = absl::StrCat("HTTP/1.1 ", status, " ", ReasonPhrase(status), "\r\n");
  for (const auto& [name, value] : headers) {
    if (!IsToken(name) || !IsFieldValue(value) || IsFramingHeader(name)) continue;
    absl::StrAppend(&out, name, ": ", value, "\r\n");
  }
  if (framing == Framing::kContentLength) {
    absl::StrAppend(&out, "content-length: ", content_length, "\r\n");
  } else if (framing == Framing::kChunked) {
    out += "transfer-encoding: chunked\r\n";
  }
  if (!keep_alive_) {
    out += "connection: close\r\n";
  } else if (http10_) {
    out += "connection: keep-alive\r\n";
  }
  out += "\r\n";
  return out;
}

void Connection::DoRespond(uint64_t id, int status, HttpHeaders headers, std::string body) {
  if (!IsCurrent(id) || answer_started_) return;
  answer_started_ = true;
  answer_ending_ = true;
  if (status < 200 || status > 999) status = 500;
  keep_alive_ = keep_alive_ && !stopping_;
  const bool no_body = status == 204 || status == 304;
  Piece piece;
  piece.head =
      Head(status, headers, no_body ? Framing::kNone : Framing::kContentLength, body.size());
  if (!no_body && !head_request_) piece.body = std::move(body);
  piece.after = After::kAnswerDone;
  Queue(std::move(piece));
}

void Connection::DoStartStream(uint64_t id, int status, HttpHeaders headers) {
  if (!IsCurrent(id) || answer_started_) return;
  answer_started_ = true;
  if (status < 200 || status > 999) status = 500;
  if (status == 204 || status == 304) {
    framing_ = Framing::kNone;
  } else if (http10_) {
    // HTTP/1.0 has no chunked encoding: the end of the body is the close.
    framing_ = Framing::kCloseDelimited;
    keep_alive_ = false;
  } else {
    framing_ = Framing::kChunked;
  }
  keep_alive_ = keep_alive_ && !stopping_;
  Piece piece;
  piece.head = Head(status, headers, framing_, 0);
  Queue(std::move(piece));
}

bool Connection::Frame(size_t size, Piece* piece) const {
  switch (framing_) {
    case Framing::kChunked: {
      char head[24];
      const int len = std::snprintf(head, sizeof(head), "%zx\r\n", size);
      piece->head.assign(head, static_cast<size_t>(len));
      piece->tail = "\r\n";
      return true;
    }
    case Framing::kCloseDelimited:
      return true;
    default:
      return false;  // A Respond answer, or a status without a body.
  }
}

void Connection::DoWrite(uint64_t id, std::string data, SteadyClock::time_point not_before) {
  if (!IsCurrent(id) || !answer_started_ || answer_ending_) return;
  if (data.empty() || head_request_) return;
  Piece piece;
  piece.not_before = not_before;
  if (!Frame(data.size(), &piece)) return;
  piece.body = std::move(data);
  // A producer outrunning a client that does not read: bounded, per
  // connection and in all.
  const HttpServerOptions& options = server_->options();
  const size_t owned = piece.Owned();
  const size_t total = server_->queued_total().load(std::memory_order_relaxed);
  if (owned_queued_ + owned > options.max_queued_bytes_per_connection ||
      total + owned > options.max_queued_bytes_total) {
    const bool mine = owned_queued_ + owned > options.max_queued_bytes_per_connection;
    Log(LogLevel::kWarning, "http_client_not_reading",
        {{"queued_bytes", absl::StrCat(owned_queued_)},
         {"limit", mine ? absl::StrCat("per connection ", options.max_queued_bytes_per_connection)
                        : absl::StrCat("server-wide ", options.max_queued_bytes_total)},
         {"action", "closing the connection"}});
    return Close();
  }
  Queue(std::move(piece));
}

void Connection::DoWriteFrom(uint64_t id, std::shared_ptr<HttpSource> source) {
  if (!IsCurrent(id) || !answer_started_ || answer_ending_ || head_request_) return;
  if (framing_ != Framing::kChunked && framing_ != Framing::kCloseDelimited) return;
  Piece piece;
  piece.source = std::move(source);
  Queue(std::move(piece), /*pump=*/false);
  if (!dispatching_) Pump();  // Else Dispatch pumps once the handler returns.
}

void Connection::Refill() {
  while (source_ != nullptr) {
    if (out_bytes_ >= kHttpSourceWindowBytes || out_.size() >= kHttpSourceWindowPieces) return;
    std::optional<HttpPiece> next = source_->Next();
    if (!next.has_value()) {
      source_.reset();
      // What was queued after the source, up to the next one.
      while (!later_.empty() && source_ == nullptr) {
        Piece piece = std::move(later_.front());
        later_.pop_front();
        if (piece.source != nullptr) {
          source_ = std::move(piece.source);
        } else {
          out_bytes_ += piece.Size();
          out_.push_back(std::move(piece));
        }
      }
      continue;
    }
    Piece piece;
    piece.not_before = ToSteady(next->not_before);
    if (std::holds_alternative<std::string>(next->bytes)) {
      piece.produced = std::move(std::get<std::string>(next->bytes));
    } else {
      piece.shared = std::get<absl::string_view>(next->bytes);
      piece.keepalive = source_;
    }
    const size_t size = piece.produced.size() + piece.shared.size();
    // An empty chunk would end the stream.
    if (size == 0 || !Frame(size, &piece)) continue;
    owned_queued_ += piece.Owned();
    server_->queued_total().fetch_add(piece.Owned(), std::memory_order_relaxed);
    out_bytes_ += piece.Size();
    out_.push_back(std::move(piece));
  }
}

void Connection::DoEnd(uint64_t id) {
  if (!IsCurrent(id) || !answer_started_ || answer_ending_) return;
  answer_ending_ = true;
  Piece piece;
  if (framing_ == Framing::kChunked && !head_request_) piece.head = "0\r\n\r\n";
  piece.after = After::kAnswerDone;
  Queue(std::move(piece));
}

void Connection::DoAbort(uint64_t id) {
  if (!IsCurrent(id)) return;
  if (out_.empty() && source_ == nullptr && !writing_) return Close();
  // What was queued before the abort goes out first, as it would have
  // before a network failure.
  answer_ending_ = true;
  Piece piece;
  piece.after = After::kClose;
  Queue(std::move(piece));
}

void Connection::DoAbandon(uint64_t id) {
  if (!IsCurrent(id)) return;
  if (!answer_started_) {
    const std::string message = "the server dropped the request without answering";
    DoRespond(id, 500, {{"content-type", "application/json"}},
              server_->options().error_body(500, message, ""));
  } else if (!answer_ending_) {
    Close();  // A stream nobody will end.
  }
}

void Connection::Queue(Piece piece, bool pump) {
  const size_t owned = piece.Owned();
  owned_queued_ += owned;
  server_->queued_total().fetch_add(owned, std::memory_order_relaxed);
  if (source_ != nullptr) {
    later_.push_back(std::move(piece));
  } else if (piece.source != nullptr) {
    source_ = std::move(piece.source);
  } else {
    out_bytes_ += piece.Size();
    out_.push_back(std::move(piece));
  }
  // While the handler runs, Dispatch pumps once it returns.
  if (pump && !dispatching_) Pump();
}

void Connection::Pump() {
  if (state_ == State::kClosed) return;
  Refill();
  if (writing_ || pacing_ || out_.empty()) return;
  const SteadyClock::time_point now = SteadyClock::now();
  if (out_.front().not_before > now) {
    pacing_ = true;
    pace_timer_.expires_at(out_.front().not_before);
    pace_timer_.async_wait([self = shared_from_this()](beast::error_code) {
      self->pacing_ = false;
      self->Pump();
    });
    return;
  }
  write_buffers_.clear();
  pieces_in_write_ = 0;
  for (const Piece& piece : out_) {
    if (pieces_in_write_ == kMaxPiecesPerWrite || piece.not_before > now) break;
    if (!piece.head.empty()) write_buffers_.push_back(net::buffer(piece.head));
    if (!piece.body.empty()) write_buffers_.push_back(net::buffer(piece.body));
    if (!piece.produced.empty()) write_buffers_.push_back(net::buffer(piece.produced));
    if (!piece.shared.empty()) {
      write_buffers_.push_back(net::buffer(piece.shared.data(), piece.shared.size()));
    }
    if (!piece.tail.empty()) write_buffers_.push_back(net::buffer(piece.tail));
    ++pieces_in_write_;
  }
  writing_ = true;
  ArmWriteTimer();
  auto on_write = [self = shared_from_this()](beast::error_code ec, size_t) { self->OnWrite(ec); };
  if (tls_ != nullptr) {
    net::async_write(*tls_, write_buffers_, std::move(on_write));
  } else {
    net::async_write(socket_, write_buffers_, std::move(on_write));
  }
}

void Connection::OnWrite(beast::error_code ec) {
  writing_ = false;
  DisarmWriteTimer();
  if (state_ == State::kClosed) {
    ClearQueue();
    return;
  }
  if (ec) return Close();
  std::vector<After> actions;
  for (size_t i = 0; i < pieces_in_write_ && !out_.empty(); ++i) {
    actions.push_back(out_.front().after);
    const size_t owned = out_.front().Owned();
    owned_queued_ -= owned;
    server_->queued_total().fetch_sub(owned, std::memory_order_relaxed);
    out_bytes_ -= out_.front().Size();
    out_.pop_front();
  }
  pieces_in_write_ = 0;
  for (After after : actions) {
    if (state_ == State::kClosed) return;
    if (after == After::kAnswerDone) AnswerDone();
    if (after == After::kClose) return Close();
    if (after == After::kHalfClose) {
      beast::error_code ignored;
      socket_.shutdown(tcp::socket::shutdown_send, ignored);
    }
  }
  if (state_ == State::kClosing && peer_eof_ && out_.empty()) return Close();
  Pump();
}

void Connection::AnswerDone() {
  CountInFlight(false);
  std::shared_ptr<Responder> responder = responder_.lock();
  responder_.reset();
  answer_id_ = 0;
  if (responder) responder->MarkComplete();
  if (keep_alive_ && !stopping_) {
    state_ = State::kReading;
    Parse();
  } else {
    BeginClosing();
  }
}

void Connection::BeginClosing() {
  state_ = State::kClosing;
  buffer_.consume(buffer_.size());
  beast::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_send, ignored);
  if (peer_eof_) return Close();
  ArmReadTimer(kLingerTimeout);
  StartRead();
}

void Connection::Close() {
  if (state_ == State::kClosed) return;
  std::shared_ptr<Connection> self = shared_from_this();
  state_ = State::kClosed;
  DisarmReadTimer();
  DisarmWriteTimer();
  pace_timer_.cancel();
  beast::error_code ignored;
  socket_.close(ignored);
  // A write in progress still refers to out_; OnWrite clears it.
  if (!writing_) ClearQueue();
  CountInFlight(false);
  std::shared_ptr<Responder> responder = responder_.lock();
  responder_.reset();
  answer_id_ = 0;
  if (responder) {
    if (in_responder_call_) {
      // Not from inside the responder call that closed it: its OnCancel
      // callback would run in the caller's Write or Abort.
      net::post(executor_, [responder] { responder->MarkClientGone(); });
    } else {
      responder->MarkClientGone();
    }
  }
  server_->Forget(this);
}

void Connection::ClearQueue() {
  server_->queued_total().fetch_sub(owned_queued_, std::memory_order_relaxed);
  owned_queued_ = 0;
  out_bytes_ = 0;
  out_.clear();
  later_.clear();
  source_.reset();
}

void Connection::ArmReadTimer(SteadyClock::duration timeout, bool request_deadline) {
  const uint64_t gen = ++read_gen_;
  read_timer_.expires_after(timeout);
  read_timer_.async_wait([self = shared_from_this(), gen, request_deadline](beast::error_code ec) {
    if (ec || gen != self->read_gen_) return;
    if (request_deadline && self->state_ == State::kReading) {
      return self->Reject(408, absl::StrCat("the request did not arrive whole within ",
                                            absl::FormatDuration(
                                                self->server_->options().request_timeout)));
    }
    self->Close();  // Idle, a TLS handshake that never came, or the end of lingering.
  });
}

void Connection::DisarmReadTimer() {
  ++read_gen_;
  read_timer_.cancel();
}

void Connection::ArmWriteTimer() {
  const uint64_t gen = ++write_gen_;
  write_timer_.expires_after(absl::ToChronoNanoseconds(server_->options().idle_timeout));
  write_timer_.async_wait([self = shared_from_this(), gen](beast::error_code ec) {
    if (ec || gen != self->write_gen_) return;
    self->Close();  // The client stopped reading.
  });
}

void Connection::DisarmWriteTimer() {
  ++write_gen_;
  write_timer_.cancel();
}

void Connection::CountInFlight(bool counted) {
  if (counted == counted_) return;
  counted_ = counted;
  server_->AddInFlight(counted ? 1 : -1);
}

// ---------------------------------------------------------------------------
// Responder

template <typename F>
void Responder::Post(F fn) {
  posted_ = true;
  gate_->IfOpen([&] {
    // Destroyed before the gate's lock is released: if it is the last
    // reference, the connection dies while the io_context is alive.
    std::shared_ptr<Connection> connection = connection_.lock();
    if (!connection) return;
    const net::any_io_executor& executor = connection->executor();
    net::post(executor, [connection, fn = std::move(fn)]() mutable { fn(*connection); });
  });
}

template <typename F>
Connection* Responder::InlineOrPost(F& fn) {
  if (!posted_ && t_dispatching != nullptr) {
    // Locked, not compared by address: a connection that died may have left
    // its address to the one being dispatched.
    std::shared_ptr<Connection> connection = connection_.lock();
    // Alive after this reference goes: Dispatch's caller holds another.
    if (connection.get() == t_dispatching && connection->dispatching()) return connection.get();
  }
  Post(std::move(fn));
  return nullptr;
}

Responder::~Responder() {
  absl::MutexLock lock(&mu_);
  const bool abandoned =
      !client_gone_ && !aborted_ && (phase_ == Phase::kFresh || phase_ == Phase::kStreaming);
  if (!abandoned) return;
  const uint64_t id = id_;
  Post([id](Connection& c) { c.DoAbandon(id); });
}

// Each call below decides under mu_ and, when the handler is calling it
// from Dispatch, runs on the connection after releasing mu_ (InlineOrPost).

void Responder::Respond(int status, HttpHeaders headers, std::string body) {
  auto call = [id = id_, status, headers = std::move(headers),
               body = std::move(body)](Connection& c) mutable {
    c.DoRespond(id, status, std::move(headers), std::move(body));
  };
  Connection* now;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ != Phase::kFresh || client_gone_ || aborted_) return;
    phase_ = Phase::kEnding;
    now = InlineOrPost(call);
  }
  if (now != nullptr) now->RunInline(call);
}

void Responder::StartStream(int status, HttpHeaders headers) {
  auto call = [id = id_, status, headers = std::move(headers)](Connection& c) mutable {
    c.DoStartStream(id, status, std::move(headers));
  };
  Connection* now;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ != Phase::kFresh || client_gone_ || aborted_) return;
    phase_ = Phase::kStreaming;
    now = InlineOrPost(call);
  }
  if (now != nullptr) now->RunInline(call);
}

void Responder::Write(std::string data, absl::Time not_before) {
  const SteadyClock::time_point when = ToSteady(not_before);
  auto call = [id = id_, data = std::move(data), when](Connection& c) mutable {
    c.DoWrite(id, std::move(data), when);
  };
  Connection* now;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ != Phase::kStreaming || client_gone_ || aborted_) return;
    now = InlineOrPost(call);
  }
  if (now != nullptr) now->RunInline(call);
}

void Responder::WriteFrom(std::shared_ptr<HttpSource> source) {
  if (source == nullptr) return;
  auto call = [id = id_, source = std::move(source)](Connection& c) mutable {
    c.DoWriteFrom(id, std::move(source));
  };
  Connection* now;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ != Phase::kStreaming || client_gone_ || aborted_) return;
    now = InlineOrPost(call);
  }
  if (now != nullptr) now->RunInline(call);
}

void Responder::End() {
  auto call = [id = id_](Connection& c) { c.DoEnd(id); };
  Connection* now;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ != Phase::kStreaming || client_gone_ || aborted_) return;
    phase_ = Phase::kEnding;
    now = InlineOrPost(call);
  }
  if (now != nullptr) now->RunInline(call);
}

void Responder::Abort() {
  auto call = [id = id_](Connection& c) { c.DoAbort(id); };
  std::function<void()> dropped;  // Released outside the lock.
  Connection* now;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ == Phase::kDone || client_gone_ || aborted_) return;
    aborted_ = true;
    phase_ = Phase::kDone;
    dropped = std::move(on_cancel_);
    on_cancel_ = nullptr;
    now = InlineOrPost(call);
  }
  if (now != nullptr) now->RunInline(call);
}

bool Responder::cancelled() const {
  absl::MutexLock lock(&mu_);
  return client_gone_ || aborted_;
}

void Responder::OnCancel(std::function<void()> callback) {
  {
    absl::MutexLock lock(&mu_);
    if (!client_gone_) {
      // Kept only while it can still run.
      if (phase_ != Phase::kDone && !aborted_) on_cancel_ = std::move(callback);
      return;
    }
  }
  if (callback) callback();
}

void Responder::MarkComplete() {
  std::function<void()> dropped;
  absl::MutexLock lock(&mu_);
  phase_ = Phase::kDone;
  dropped = std::move(on_cancel_);  // Released outside the lock.
  on_cancel_ = nullptr;
}

void Responder::MarkClientGone() {
  std::function<void()> callback;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ == Phase::kDone || client_gone_ || aborted_) return;
    client_gone_ = true;
    callback = std::move(on_cancel_);
    on_cancel_ = nullptr;
  }
  if (callback) callback();
}

// ---------------------------------------------------------------------------
// ServerImpl

absl::Status ServerImpl::ConfigureTls() {
  if (options_.tls_cert_pem.empty() && options_.tls_key_pem.empty()) return absl::OkStatus();
  if (options_.tls_cert_pem.empty() || options_.tls_key_pem.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate and a private key");
  }
  auto context = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
  // TLS 1.2 and newer only.
  context->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                       net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                       net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use);
  beast::error_code ec;
  context->use_certificate_chain(net::buffer(options_.tls_cert_pem), ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("TLS certificate: ", ec.message()));
  context->use_private_key(net::buffer(options_.tls_key_pem), net::ssl::context::pem, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("TLS private key: ", ec.message()));
  tls_ = std::move(context);
  return absl::OkStatus();
}

absl::Status ServerImpl::Listen(const tcp::endpoint& endpoint, int threads) {
  ioc_ = std::make_unique<net::io_context>(threads);
  acceptor_ = std::make_unique<tcp::acceptor>(net::make_strand(*ioc_));
  accept_backoff_ = std::make_unique<net::steady_timer>(acceptor_->get_executor());
  beast::error_code ec;
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(net::socket_base::max_listen_connections, ec);
  tcp::endpoint bound;
  if (!ec) bound = acceptor_->local_endpoint(ec);
  if (ec) {
    const std::string where =
        endpoint.address().is_v6()
            ? absl::StrCat("[", endpoint.address().to_string(), "]:", endpoint.port())
            : absl::StrCat(endpoint.address().to_string(), ":", endpoint.port());
    acceptor_.reset();
    accept_backoff_.reset();
    ioc_.reset();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", where, ": ", ec.message()));
  }
  port_ = bound.port();
  address_ = bound.address().is_v6() ? absl::StrCat("[", bound.address().to_string(), "]:", port_)
                                     : absl::StrCat(bound.address().to_string(), ":", port_);
  work_.emplace(ioc_->get_executor());
  net::post(acceptor_->get_executor(), [this] { Accept(); });
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([ioc = ioc_.get()] { ioc->run(); });
  }
  return absl::OkStatus();
}

void ServerImpl::Accept() {
  if (!acceptor_->is_open()) return;
  acceptor_->async_accept(
      net::make_strand(*ioc_),
      [this](beast::error_code ec, tcp::socket socket) { OnAccept(ec, std::move(socket)); });
}

void ServerImpl::OnAccept(beast::error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !acceptor_->is_open()) return;
  if (ec) {
    // E.g. EMFILE: the listener must survive it. A connection aborted by
    // its client is retried at once; anything else after a pause.
    Log(LogLevel::kWarning, "http_accept_failed", {{"error", ec.message()}});
    if (ec == net::error::connection_aborted) return Accept();
    accept_backoff_->expires_after(kAcceptBackoff);
    accept_backoff_->async_wait([this](beast::error_code wait_ec) {
      if (!wait_ec) Accept();
    });
    return;
  }
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  std::shared_ptr<Connection> connection;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;  // The socket closes as it goes out of scope.
    connection = std::make_shared<Connection>(this, std::move(socket), tls_.get());
    connections_.emplace(connection.get(), connection);
  }
  connection->PostStart();
  Accept();
}

void ServerImpl::Forget(Connection* connection) {
  std::shared_ptr<Connection> dropped;  // Released outside the lock.
  absl::MutexLock lock(&mu_);
  auto it = connections_.find(connection);
  if (it == connections_.end()) return;
  dropped = std::move(it->second);
  connections_.erase(it);
}

std::vector<std::shared_ptr<Connection>> ServerImpl::Connections() {
  std::vector<std::shared_ptr<Connection>> out;
  absl::MutexLock lock(&mu_);
  out.reserve(connections_.size());
  for (const auto& [key, connection] : connections_) out.push_back(connection);
  return out;
}

void ServerImpl::Shutdown(absl::Time deadline) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      // Another call is (or was) shutting down: wait for it to finish.
      mu_.Await(absl::Condition(&shutdown_done_));
      return;
    }
    stopping_ = true;
    if (ioc_ == nullptr) {  // Never listened.
      shutdown_done_ = true;
      return;
    }
  }
  // Stop accepting, and stop reading new requests: idle connections close
  // now, busy ones after their answer.
  net::post(acceptor_->get_executor(), [this] {
    beast::error_code ignored;
    acceptor_->close(ignored);
    accept_backoff_->cancel();
  });
  for (const auto& connection : Connections()) connection->PostStopping();
  {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithDeadline(absl::Condition(
                              +[](int* n) { return *n == 0; }, &in_flight_),
                          deadline);
  }
  // From here on responders are ignored; close whatever is still open
  // (a still-unanswered request's responder sees the client gone).
  gate_->Close();
  for (const auto& connection : Connections()) connection->PostClose();
  {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithDeadline(absl::Condition(
                              +[](std::unordered_map<Connection*, std::shared_ptr<Connection>>* c) {
                                return c->empty();
                              },
                              &connections_),
                          Env::Default()->Now() + kCloseGrace);
  }
  work_.reset();
  ioc_->stop();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
  std::unordered_map<Connection*, std::shared_ptr<Connection>> leftover;
  {
    absl::MutexLock lock(&mu_);
    leftover.swap(connections_);
  }
  leftover.clear();
  accept_backoff_.reset();
  acceptor_.reset();
  ioc_.reset();  // Destroys unrun handlers and the connections they hold.
  absl::MutexLock lock(&mu_);
  shutdown_done_ = true;
}

// Splits "host:port" / "[v6]:port"; false when it does not parse.
bool SplitHostPort(absl::string_view listen, std::string* host, int* port) {
  const size_t colon = listen.rfind(':');
  if (colon == absl::string_view::npos) return false;
  absl::string_view h = listen.substr(0, colon);
  const absl::string_view p = listen.substr(colon + 1);
  if (!h.empty() && h.front() == '[') {
    if (h.size() < 2 || h.back() != ']') return false;
    h = h.substr(1, h.size() - 2);
  } else if (h.find(':') != absl::string_view::npos) {
    return false;
  }
  int value;
  if (p.empty() || !absl::SimpleAtoi(p, &value) || value < 0 || value > 65535) return false;
  *host = h.empty() ? "0.0.0.0" : std::string(h);
  *port = value;
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                              HttpHandler handler) {
  if (!handler) return absl::InvalidArgumentError("HttpServer needs a handler");
  std::string host;
  int port = 0;
  if (!SplitHostPort(options.listen, &host, &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address \"", options.listen, "\" is not host:port"));
  }
  tcp::endpoint endpoint;
  beast::error_code ec;
  const net::ip::address address = net::ip::make_address(host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(address, static_cast<unsigned short>(port));
  } else {
    // A name such as "localhost": take its first address.
    net::io_context resolver_context;
    tcp::resolver resolver(resolver_context);
    const auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty()) {
      return absl::UnavailableError(
          absl::StrCat("cannot resolve \"", host, "\": ", ec ? ec.message() : "no address"));
    }
    endpoint = results.begin()->endpoint();
  }
  int threads = options.threads;
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  auto server = std::make_unique<ServerImpl>(options, std::move(handler));
  if (absl::Status status = server->ConfigureTls(); !status.ok()) return status;
  if (absl::Status status = server->Listen(endpoint, threads); !status.ok()) return status;
  return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace service
}  // namespace understudy
