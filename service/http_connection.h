// Internal to the listener's files; users include service/http_server.h.
// The HTTP/1.1 listener's classes, shared by http_connection.cc
// (Connection's methods) and http_server.cc (Responder's, ServerImpl's and
// HttpServer::Start): Connection, Responder and ServerImpl, the Gate between
// them, and the helpers both files use. On Boost.Beast/Asio (Debian Boost
// 1.74, header-only). All of Beast stays in these files: it is slow to
// compile, and http_server.h must not leak Boost types.
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
#ifndef UNDERSTUDY_SERVICE_HTTP_CONNECTION_H_
#define UNDERSTUDY_SERVICE_HTTP_CONNECTION_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstdint>
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
#include "absl/synchronization/mutex.h"
#include "base/env.h"
#include "service/http_server.h"

namespace understudy {
namespace service {
namespace http_internal {

namespace net = ::boost::asio;
namespace beast = ::boost::beast;
namespace http = ::boost::beast::http;
using tcp = ::boost::asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

// Bytes asked of the kernel per read.
constexpr size_t kReadSize = 16 << 10;

// The error body when the options set no error_body: an OpenAI-style JSON
// error. Defined in http_server.cc.
std::string DefaultErrorBody(int status, absl::string_view message);

// The steady-clock instant of `t`, clamped so that far futures do not
// overflow.
inline SteadyClock::time_point ToSteady(absl::Time t) {
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
inline thread_local const Connection* t_dispatching = nullptr;

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
  void DoSetLabel(uint64_t id, absl::string_view label);
  // The answer's last bytes are being written: HttpServerOptions::on_answered
  // with its label, once (none when unlabelled).
  void ReportAnswered();
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
  // A client that opened the connection in HTTP/2 with prior knowledge
  // (cleartext, as the AWS SDK for JavaScript does): answered with HTTP/2's
  // own SETTINGS and a GOAWAY whose error is HTTP_1_1_REQUIRED and whose
  // debug data says why, then closed, instead of an HTTP/1.1 400 it cannot
  // read.
  void RefuseHttp2();
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
  // The connection's first bytes were looked at for HTTP/2's preface.
  bool preface_checked_ = false;
  // When the request being received began (its first byte), for
  // request_timeout; max() between requests.
  SteadyClock::time_point request_started_ = SteadyClock::time_point::max();
  // When the request being answered was read whole (on_answered's start),
  // and its label (HttpResponder::SetLabel; "" for none).
  SteadyClock::time_point dispatched_;
  absl::string_view label_;

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
  void SetLabel(absl::string_view label) override;

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

}  // namespace http_internal
}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_HTTP_CONNECTION_H_
