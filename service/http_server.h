// An HTTP/1.1 server for the provider-compatible APIs, event-driven
// (Boost.Beast/Asio): every open keep-alive connection is served however
// many there are, and a held-open stream costs no thread. See
// bench/http_choice/RESULTS.md for why it is not a thread-per-connection
// library.
//
// Usage:
//   HttpServerOptions options;
//   options.listen = "127.0.0.1:0";
//   auto server = HttpServer::Start(options, [](HttpRequest req,
//                                              std::shared_ptr<HttpResponder> out) {
//     out->Respond(200, {{"content-type", "application/json"}}, "{}");
//   });
//   (*server)->port();
//
// The handler runs on a server thread and must not block (it would take that
// thread from every other connection): it answers through the responder, now
// or later from any thread. Answering before it returns is cheapest: those
// calls take effect at once and the answer goes out in one write.
#ifndef UNDERSTUDY_SERVICE_HTTP_SERVER_H_
#define UNDERSTUDY_SERVICE_HTTP_SERVER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace understudy {
namespace service {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// One piece of a streamed answer from an HttpSource, sent as one chunk no
// earlier than `not_before`: its bytes, owned, or a view of memory that the
// source keeps alive for as long as it lives (a recording).
struct HttpPiece {
  std::variant<std::string, absl::string_view> bytes;
  absl::Time not_before = absl::InfinitePast();
};

// The rest of a streamed answer, produced as the connection sends it
// (HttpResponder::WriteFrom).
class HttpSource {
 public:
  virtual ~HttpSource() = default;
  // The next piece; nullopt after the last (then it is not called again).
  // Called on a server thread, one call at a time; must not block.
  virtual std::optional<HttpPiece> Next() = 0;
};

struct HttpRequest {
  std::string method;
  // Path and query as sent, e.g. "/run/r1/v1/chat/completions".
  std::string target;
  // Names lower-cased, in the order received.
  HttpHeaders headers;
  std::string body;

  // The first header named `name` (lower-case), or "".
  absl::string_view Header(absl::string_view name) const;
};

// Answers one request. Thread-safe; every method may be called from any
// thread and never blocks. Exactly one of Respond or StartStream (then
// Write…, then End or Abort) answers a request; calls after the answer is
// complete, or after the client went away, are ignored.
class HttpResponder {
 public:
  virtual ~HttpResponder() = default;

  // A whole response. Content-Length is added.
  virtual void Respond(int status, HttpHeaders headers, std::string body) = 0;

  // Starts a streamed response (chunked transfer encoding; for an HTTP/1.0
  // client, close-delimited).
  virtual void StartStream(int status, HttpHeaders headers) = 0;
  // Queues `data` to be sent as one piece (one chunk), no earlier than
  // `not_before` and after everything queued before it. Never blocks. The
  // bytes queued this way and not yet sent are bounded per connection and
  // server-wide (HttpServerOptions::max_queued_bytes_*): a client that stops
  // reading while a producer (an upstream being relayed) keeps writing is
  // disconnected, and the responder reports it cancelled.
  virtual void Write(std::string data, absl::Time not_before = absl::InfinitePast()) = 0;
  // Queues the pieces of `source`, each as one chunk, after everything
  // queued before; what is queued after this call goes out after its last
  // piece. The connection asks for a piece only while less than
  // kHttpSourceWindowBytes (and kHttpSourceWindowPieces pieces) of the
  // answer are waiting to be sent, so a client that reads slowly costs
  // that much, however long the answer: for answers produced from what is
  // in memory already (a recording, rendered as it goes). The source is
  // dropped once it ends or the connection closes.
  virtual void WriteFrom(std::shared_ptr<HttpSource> source) = 0;
  // Ends the stream once everything queued is sent.
  virtual void End() = 0;
  // Closes the connection, without ending the stream, once what was queued
  // before is sent: what a client sees when the network fails mid-answer.
  virtual void Abort() = 0;

  // True once the client has gone away (the connection closed or failed).
  virtual bool cancelled() const = 0;
  // Runs `callback` once when the client goes away before the answer is
  // complete (at once if it already has). At most one; a later call
  // replaces it.
  virtual void OnCancel(std::function<void()> callback) = 0;

  // Names what answers this request for HttpServerOptions::on_answered (an
  // API's name). `label` must outlive the server: a string literal or a
  // codec's name. Unlabelled answers are not reported.
  virtual void SetLabel(absl::string_view label) {}
};

// What a connection holds of a WriteFrom answer before it asks its source
// for more.
inline constexpr size_t kHttpSourceWindowBytes = 256 << 10;
inline constexpr size_t kHttpSourceWindowPieces = 128;

using HttpHandler = std::function<void(HttpRequest, std::shared_ptr<HttpResponder>)>;

struct HttpServerOptions {
  // host:port; port 0 picks a free port.
  std::string listen = "127.0.0.1:0";
  // I/O threads; 0 means one per core.
  int threads = 0;
  // Larger bodies are answered 413 (code `body_too_large`) and the connection
  // closed.
  size_t max_body_bytes = 16 << 20;
  size_t max_header_bytes = 64 << 10;
  // Bytes written with HttpResponder::Write and not yet sent, per
  // connection and over all of them: past either, the connection is closed
  // (its client is not reading). WriteFrom answers are bounded by their
  // window instead.
  size_t max_queued_bytes_per_connection = 8 << 20;
  size_t max_queued_bytes_total = 256 << 20;
  // A connection with no request in progress for this long is closed.
  absl::Duration idle_timeout = absl::Seconds(120);
  // A request must arrive whole (header and body) within this long of its
  // first byte, however steadily its bytes trickle in (slowloris): else 408
  // and the connection closes. Also bounds a TLS handshake.
  absl::Duration request_timeout = absl::Seconds(60);
  // TLS: the PEM certificate chain and private key (their contents); both
  // empty for plaintext.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // Says whether a request's Host is one the listener answers to (DNS
  // rebinding); OK, or the reason, which a 403 answer carries. Null: any.
  std::function<absl::Status(const HttpRequest&)> check_host;
  // Called on an I/O thread once a labelled answer's (HttpResponder::SetLabel)
  // last bytes go to the socket, before the client can have read them, with
  // its label and the time since its request was read whole. Null: none.
  // Must be cheap and thread-safe.
  std::function<void(absl::string_view label, absl::Duration elapsed)> on_answered;
  // Bodies for the server's own error answers (400, 404 route-less, 413),
  // given the HTTP status, a message and the request target ("" when the
  // request line was not read); JSON by default.
  std::function<std::string(int status, absl::string_view message, absl::string_view target)>
      error_body;
};

class HttpServer {
 public:
  // Binds and starts serving. UNAVAILABLE when the address cannot be bound
  // (in use, not local), INVALID_ARGUMENT when it does not parse or the TLS
  // certificate or key cannot be used.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                           HttpHandler handler);
  virtual ~HttpServer() = default;

  // The bound port.
  virtual int port() const = 0;
  // host:port actually bound.
  virtual std::string address() const = 0;
  // Requests in progress (received and not yet fully answered).
  virtual int in_flight() const = 0;

  // Stops accepting connections and new requests; waits until the requests
  // in progress are answered or `deadline` passes; then closes every
  // connection and joins the threads. Idempotent.
  virtual void Shutdown(absl::Time deadline) = 0;
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_HTTP_SERVER_H_
