// Record and passthrough over the provider-compatible HTTP API: one
// forwarded request's response relayed to the caller as it arrives, and the
// exchange to record built from it.
#ifndef UNDERSTUDY_SERVICE_HTTP_RELAY_H_
#define UNDERSTUDY_SERVICE_HTTP_RELAY_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/env.h"
#include "engine/engine.h"
#include "provider/codec.h"
#include "provider/element_stream.h"
#include "provider/sse.h"
#include "service/http_server.h"
#include "upstream/http_upstream.h"

namespace understudy {
namespace service {

// Relays the upstream's response: a stream event by event (SSE, or element
// by element in the framing the request asked for: Gemini's JSON array,
// Ollama's NDJSON), the latest event held back until the next
// arrives and the last until the exchange is committed, so that a client
// holding the whole answer knows it is recorded; a whole body once the
// commit is done. A client that goes away cancels the upstream call (the
// caller wires OnCancel) and nothing is recorded.
//
// Upstream callbacks come from one thread at a time; the responder may be
// used from any thread.
class Relay final : public upstream::UpstreamHttpObserver {
 public:
  // `framing`: how the stream `stream` asks for is framed when it is not
  // SSE (ParsedRequest::stream_framing). `on_recorded`
  // (may be empty) sees the exchange as committed, before the caller gets
  // the end of the answer.
  Relay(const provider::Codec& codec, bool stream, provider::StreamFraming framing,
        engine::Engine* engine,
        std::unique_ptr<engine::ForwardTicket> ticket, std::shared_ptr<HttpResponder> out,
        Env* env, std::function<void(const v1::Exchange&)> on_recorded);

  // The native record to fill in before the request is sent.
  v1::NativeExchange* native() { return exchange_.mutable_native(); }

  void OnHead(int status, upstream::UpstreamHttpHeaders headers) override;
  void OnData(absl::string_view bytes) override;
  void OnDone(absl::Status transport) override;

 private:
  static constexpr size_t kMaxBody = 64 << 20;

  // One segment of a stream framed otherwise than SSE, decoded as the
  // element it holds (none: no chunk).
  void Element(std::string segment);
  // One stream event (its raw bytes, decoded by `decode`).
  void Event(std::string raw, const std::function<absl::StatusOr<std::optional<v1::CompletionChunk>>()>& decode);
  absl::Time ticket_start() const { return ticket_ != nullptr ? ticket_->start() : start_; }
  // The status a whole (not streamed) response stands for; sets its
  // canonical form.
  absl::Status ResponseStatus();

  const provider::Codec& codec_;
  const bool stream_;
  engine::Engine* const engine_;
  std::unique_ptr<engine::ForwardTicket> ticket_;
  std::shared_ptr<HttpResponder> out_;
  Env* const env_;
  std::function<void(const v1::Exchange&)> on_recorded_;
  absl::Time start_;

  int status_ = 0;
  std::string content_type_;
  HttpHeaders relayed_;
  bool streaming_ = false;
  bool sse_ = false;
  std::string body_;
  // The latest stream event, not yet sent (see Event).
  std::string held_;
  provider::SseParser parser_;
  // Null for SSE (and for no stream).
  std::unique_ptr<provider::ElementSplitter> splitter_;
  std::unique_ptr<provider::ChunkDecoder> decoder_;
  v1::Exchange exchange_;
  absl::Status failure_;
  absl::Status stream_error_;
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_HTTP_RELAY_H_
