// Connection's methods: one accepted socket of the HTTP/1.1 listener, from
// the TLS handshake through reading and parsing requests, handing them to
// the handler, framing and writing the answers (the write queue, sources,
// pacing), to the timers and the close. The class and the listener's design
// notes are in http_connection.h.
#include "service/http_connection.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/log.h"

namespace understudy {
namespace service {
namespace http_internal {
namespace {

// While a request is being answered the connection keeps reading (to notice
// a hang-up) and keeps what a pipelining client sends; past this much it
// stops reading until the answer is complete.
constexpr size_t kMaxBufferedWhileAnswering = 1 << 20;
// After the last response on a connection the server half-closes and reads
// (discarding) until the client closes too, for at most this long, so that
// the client reads the response before a reset can destroy it.
constexpr auto kLingerTimeout = std::chrono::seconds(2);
// Most queued pieces gathered into one write.
constexpr size_t kMaxPiecesPerWrite = 64;
// The first bytes an HTTP/2 client with prior knowledge sends (RFC 9113
// §3.4), and what the GOAWAY that refuses it says.
constexpr absl::string_view kHttp2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr absl::string_view kHttp2RefusedMessage =
    "understudy speaks HTTP/1.1: configure the client for HTTP/1.1 (the AWS SDK for "
    "JavaScript: requestHandler: new NodeHttpHandler() from @smithy/node-http-handler)";

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

}  // namespace

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
    if (!preface_checked_) {
      const absl::string_view seen(static_cast<const char*>(buffer_.data().data()),
                                   buffer_.size());
      const size_t n = std::min(seen.size(), kHttp2Preface.size());
      if (seen.substr(0, n) == kHttp2Preface.substr(0, n)) {
        if (n < kHttp2Preface.size()) break;  // wait for the rest of it
        return RefuseHttp2();
      }
      preface_checked_ = true;
    }
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
  dispatched_ = SteadyClock::now();
  label_ = absl::string_view();
  auto responder = std::make_shared<Responder>(weak_from_this(), answer_id_, server_->gate());
  responder_ = responder;
  StartRead();  // Watches for a hang-up while the handler answers.
  // What the handler answers before it returns is queued at once and sent
  // in one write below (see the design notes in http_connection.h).
  const Connection* const outer = t_dispatching;
  t_dispatching = this;
  dispatching_ = true;
  server_->handler()(std::move(request), std::move(responder));
  dispatching_ = false;
  t_dispatching = outer;
  Pump();
}

void Connection::RefuseHttp2() {
  Log(LogLevel::kWarning, "http2_refused",
      {{"client", "HTTP/2 with prior knowledge"}, {"reason", std::string(kHttp2RefusedMessage)}});
  // Frames (RFC 9113 §4.1): 24-bit length, type, flags, 31-bit stream id.
  auto frame = [](uint8_t type, absl::string_view payload) {
    std::string f;
    const size_t n = payload.size();
    f.push_back(static_cast<char>((n >> 16) & 0xff));
    f.push_back(static_cast<char>((n >> 8) & 0xff));
    f.push_back(static_cast<char>(n & 0xff));
    f.push_back(static_cast<char>(type));
    f.append(5, '\0');  // flags, stream 0
    f.append(payload.data(), payload.size());
    return f;
  };
  constexpr uint8_t kSettings = 0x4;
  constexpr uint8_t kGoaway = 0x7;
  constexpr char kHttp11Required[] = {0, 0, 0, 0xd};
  std::string goaway(4, '\0');  // last stream id 0: no stream was processed
  goaway.append(kHttp11Required, sizeof(kHttp11Required));
  goaway.append(kHttp2RefusedMessage.data(), kHttp2RefusedMessage.size());
  buffer_.consume(buffer_.size());
  parser_.reset();
  keep_alive_ = false;
  Piece piece;
  piece.head = absl::StrCat(frame(kSettings, ""), frame(kGoaway, goaway));
  piece.after = After::kHalfClose;
  state_ = State::kClosing;
  DisarmReadTimer();
  ArmReadTimer(kLingerTimeout);
  Queue(std::move(piece));
  StartRead();
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

void Connection::DoSetLabel(uint64_t id, absl::string_view label) {
  if (IsCurrent(id)) label_ = label;
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
    // The answer's last bytes go to the socket now: reported before the
    // client can have read them.
    if (piece.after == After::kAnswerDone) ReportAnswered();
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

void Connection::ReportAnswered() {
  const auto& on_answered = server_->options().on_answered;
  if (on_answered && !label_.empty()) {
    on_answered(label_, absl::FromChrono(SteadyClock::now() - dispatched_));
  }
  label_ = absl::string_view();
}

void Connection::AnswerDone() {
  CountInFlight(false);
  std::shared_ptr<Responder> responder = responder_.lock();
  responder_.reset();
  answer_id_ = 0;
  if (responder) responder->MarkComplete();
  label_ = absl::string_view();
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

}  // namespace http_internal
}  // namespace service
}  // namespace understudy
