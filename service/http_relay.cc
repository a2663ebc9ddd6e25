#include "service/http_relay.h"

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/http_status.h"
#include "base/log.h"
#include "provider/chunks.h"
#include "service/http_render.h"
#include "validation/utf8.h"

namespace understudy {
namespace service {

Relay::Relay(const provider::Codec& codec, bool stream, provider::StreamFraming framing,
             engine::Engine* engine, std::unique_ptr<engine::ForwardTicket> ticket, std::shared_ptr<HttpResponder> out,
             Env* env, std::function<void(const v1::Exchange&)> on_recorded)
    : codec_(codec),
      stream_(stream),
      engine_(engine),
      ticket_(std::move(ticket)),
      out_(std::move(out)),
      env_(env),
      on_recorded_(std::move(on_recorded)),
      start_(env->Now()),
      splitter_(stream ? provider::NewSplitter(framing) : nullptr),
      decoder_(codec.NewDecoder()) {}

void Relay::OnHead(int status, upstream::UpstreamHttpHeaders headers) {
  status_ = status;
  for (auto& [name, value] : headers) {
    if (name == "content-type") {
      content_type_ = value;
    } else if (IsReplayedHeader(name)) {
      v1::NativeHeader* h = native()->add_headers();
      h->set_name(name);
      h->set_value(validation::SanitizeUtf8(value));  // stored: must be UTF-8
      relayed_.emplace_back(std::move(name), std::move(value));
    }
  }
  native()->set_status(status);
  native()->set_content_type(content_type_);
  HttpHeaders out_headers = {{"content-type", content_type_}};
  out_headers.insert(out_headers.end(), relayed_.begin(), relayed_.end());
  const bool ok = status >= 200 && status < 300;
  sse_ = provider::IsEventStream(content_type_);
  // A stream framed otherwise (Gemini's array comes as application/json)
  // is relayed element by element all the same.
  streaming_ = stream_ && ok && (sse_ || splitter_ != nullptr);
  if (streaming_) out_->StartStream(status, std::move(out_headers));
}

void Relay::OnData(absl::string_view bytes) {
  if (!streaming_) {
    if (body_.size() + bytes.size() > kMaxBody) {
      failure_ = absl::ResourceExhaustedError("upstream response over 64 MiB");
      return;
    }
    body_.append(bytes.data(), bytes.size());
    return;
  }
  if (!failure_.ok()) return;
  if (sse_) {
    absl::StatusOr<std::vector<provider::SseEvent>> events = parser_.Feed(bytes);
    if (!events.ok()) {
      failure_ = events.status();
      return;
    }
    for (const provider::SseEvent& e : *events) {
      Event(e.raw, [&] { return decoder_->Decode(e); });
    }
    return;
  }
  for (std::string& segment : splitter_->Feed(bytes)) {
    Element(std::move(segment));
  }
  if (!splitter_->status().ok()) failure_ = splitter_->status();
}

void Relay::Element(std::string segment) {
  const std::string element = splitter_->Element(segment);
  Event(std::move(segment), [&]() -> absl::StatusOr<std::optional<v1::CompletionChunk>> {
    if (element.empty()) return std::nullopt;
    return decoder_->DecodeElement(element);
  });
}

void Relay::Event(
    std::string raw,
    const std::function<absl::StatusOr<std::optional<v1::CompletionChunk>>()>& decode) {
  const int64_t offset = absl::ToInt64Microseconds(env_->Now() - ticket_start());
  v1::NativeChunk* chunk = native()->add_chunks();
  chunk->set_data(raw);
  chunk->set_offset_micros(offset);
  // The latest event is held back until the next one arrives, and the last
  // one until the exchange is committed (OnDone): a client that has the
  // whole answer knows it is recorded.
  if (!held_.empty()) out_->Write(std::move(held_));
  held_ = std::move(raw);
  absl::StatusOr<std::optional<v1::CompletionChunk>> decoded = decode();
  if (!decoded.ok()) {
    // An error event in the stream: kept natively, recorded as the error.
    if (stream_error_.ok()) stream_error_ = decoded.status();
    return;
  }
  if (decoded->has_value()) {
    v1::CompletionChunk* c = exchange_.add_chunks();
    *c = std::move(**decoded);
    c->set_offset_micros(offset);
  }
}

absl::Status Relay::ResponseStatus() {
  if (status_ >= 200 && status_ < 300) {
    absl::StatusOr<v1::CompletionResponse> r = codec_.ParseResponse(body_);
    if (r.ok()) {
      *exchange_.mutable_response() = std::move(*r);
    } else {
      Log(LogLevel::kWarning, "upstream_response_not_understood",
          {{"provider", std::string(codec_.upstream())}, {"status", r.status().ToString()}});
    }
    return absl::OkStatus();
  }
  std::string message = codec_.UpstreamErrorMessage(body_);
  if (message.empty()) message = absl::StrCat("upstream answered HTTP ", status_);
  return absl::Status(StatusCodeForHttp(status_), message);
}

void Relay::OnDone(absl::Status transport) {
  if (streaming_ && transport.ok() && failure_.ok()) {
    if (sse_) {
      absl::StatusOr<std::vector<provider::SseEvent>> rest = parser_.Finish();
      if (rest.ok()) {
        for (const provider::SseEvent& e : *rest) {
          Event(e.raw, [&] { return decoder_->Decode(e); });
        }
      }
    } else {
      if (absl::Status end = splitter_->Finish(); !end.ok()) {
        failure_ = end;
      } else if (!splitter_->Rest().empty()) {
        // Part of the bytes: a closing bracket, or a last line with no
        // line break.
        Element(splitter_->Rest());
      }
    }
  }
  if (transport.ok() && !failure_.ok()) transport = failure_;
  absl::Status status = transport;
  if (transport.ok()) {
    if (streaming_) {
      *exchange_.mutable_response() = provider::AssembleResponse(exchange_.chunks());
      if (!stream_error_.ok()) status = stream_error_;
    } else {
      native()->set_response_body(body_);
      status = ResponseStatus();
    }
  }
  std::unique_ptr<engine::ForwardTicket> ticket = std::move(ticket_);
  const std::string upstream(codec_.upstream());
  if (!transport.ok()) {
    // An outage or a client that went away: nothing is recorded.
    Log(LogLevel::kWarning, "upstream_failed",
        {{"provider", upstream}, {"status", transport.ToString()}});
    if (streaming_) {
      // What arrived goes out, then the connection drops as upstream's did.
      if (!held_.empty()) out_->Write(std::move(held_));
      out_->Abort();
    } else {
      absl::Status shown(transport.code(),
                         absl::StrCat("upstream ", upstream, ": ", transport.message()));
      RespondError(codec_, shown, *out_);
    }
    engine_->FinishForward(std::move(ticket), std::move(exchange_), transport,
                           [](absl::Status) {});
    return;
  }
  std::shared_ptr<HttpResponder> out = out_;
  const bool streaming = streaming_;
  const int http_status = status_;
  HttpHeaders headers = {{"content-type", content_type_}};
  headers.insert(headers.end(), relayed_.begin(), relayed_.end());
  std::string body = body_;
  std::string held = std::move(held_);
  const provider::Codec* codec = &codec_;
  // What the commit callback needs of the exchange once it is moved away.
  std::shared_ptr<v1::Exchange> seen;
  if (on_recorded_ && status.ok()) seen = std::make_shared<v1::Exchange>(exchange_);
  engine_->FinishForward(
      std::move(ticket), std::move(exchange_), status,
      [out, streaming, http_status, headers = std::move(headers), body = std::move(body), codec,
       status, held = std::move(held), seen, on_recorded = on_recorded_](
          absl::Status committed) mutable {
        // The answer ends only once it is recorded. `committed` is the
        // upstream's own status unless recording failed.
        const bool recording_failed = committed != status;
        if (!recording_failed && seen != nullptr) on_recorded(*seen);
        if (streaming) {
          if (recording_failed) {
            out->Abort();
          } else {
            if (!held.empty()) out->Write(std::move(held));
            out->End();
          }
          return;
        }
        if (recording_failed) return RespondError(*codec, committed, *out);
        out->Respond(http_status, std::move(headers), std::move(body));
      });
}

}  // namespace service
}  // namespace understudy
