#include "service/http_render.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "base/http_status.h"
#include "engine/engine.h"
#include "provider/chunks.h"

namespace understudy {
namespace service {
namespace {

absl::Time NotBefore(absl::Time start, int64_t offset_micros, double speed) {
  if (speed <= 0) return absl::InfinitePast();
  return start + absl::Microseconds(static_cast<int64_t>(static_cast<double>(offset_micros) / speed));
}

// The recorded events of a stream, sent from the recording itself.
class RecordedEvents final : public HttpSource {
 public:
  // `native` lives as long as `keepalive`.
  RecordedEvents(std::shared_ptr<const void> keepalive, const v1::NativeExchange& native,
                 size_t limit, absl::Time start, double speed)
      : keepalive_(std::move(keepalive)),
        native_(native),
        end_(std::min(limit, static_cast<size_t>(native.chunks_size()))),
        start_(start),
        speed_(speed) {}

  std::optional<HttpPiece> Next() override {
    if (next_ >= end_) return std::nullopt;
    const v1::NativeChunk& chunk = native_.chunks(static_cast<int>(next_++));
    return HttpPiece{absl::string_view(chunk.data()),
                     NotBefore(start_, chunk.offset_micros(), speed_)};
  }

 private:
  const std::shared_ptr<const void> keepalive_;
  const v1::NativeExchange& native_;
  const size_t end_;
  const absl::Time start_;
  const double speed_;
  size_t next_ = 0;
};

// A stream rendered in the caller's shape as it is sent, an event at a
// time: what waits for a slow client is a few events, not the stream.
class RenderedEvents final : public HttpSource {
 public:
  // `chunks` (owned, or in the recording `keepalive` keeps alive) and the
  // renderer over them.
  RenderedEvents(std::shared_ptr<const void> keepalive,
                 std::unique_ptr<google::protobuf::RepeatedPtrField<v1::CompletionChunk>> owned,
                 const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
                 std::unique_ptr<provider::EventRenderer> renderer, size_t limit, absl::Time start,
                 double speed)
      : keepalive_(std::move(keepalive)),
        owned_(std::move(owned)),
        chunks_(chunks),
        renderer_(std::move(renderer)),
        limit_(limit),
        start_(start),
        speed_(speed) {}

  std::optional<HttpPiece> Next() override {
    if (sent_ >= limit_) return std::nullopt;
    std::optional<provider::RenderedEvent> event = renderer_->Next();
    if (!event.has_value()) return std::nullopt;
    ++sent_;
    // An event that carries a chunk is paced by that chunk's offset.
    absl::Time at = absl::InfinitePast();
    if (event->chunk >= 0 && event->chunk < chunks_.size()) {
      at = NotBefore(start_, chunks_[event->chunk].offset_micros(), speed_);
    }
    return HttpPiece{std::move(event->text), at};
  }

 private:
  const std::shared_ptr<const void> keepalive_;
  const std::unique_ptr<google::protobuf::RepeatedPtrField<v1::CompletionChunk>> owned_;
  const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks_;
  const std::unique_ptr<provider::EventRenderer> renderer_;
  const size_t limit_;
  const absl::Time start_;
  const double speed_;
  size_t sent_ = 0;
};

}  // namespace

std::string ErrorCodeFor(const absl::Status& status) {
  if (status.GetPayload(engine::kMissPayloadUrl).has_value()) return "understudy_no_recording";
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return "invalid_request";
    case absl::StatusCode::kNotFound:
      return "understudy_not_found";
    case absl::StatusCode::kFailedPrecondition:
      return "understudy_failed_precondition";
    case absl::StatusCode::kUnavailable:
      return "understudy_upstream_unavailable";
    default:
      return "";
  }
}

void RespondError(const provider::Codec& codec, const absl::Status& status, HttpResponder& out) {
  HttpHeaders headers = {{"content-type", kJsonContentType}};
  if (status.GetPayload(engine::kMissPayloadUrl).has_value()) {
    headers.emplace_back("x-understudy-error", "no_recording");
  }
  out.Respond(HttpStatusFor(status.code()), std::move(headers),
              codec.ErrorBody(status, ErrorCodeFor(status)));
}

bool IsReplayedHeader(absl::string_view name) {
  return provider::CodecRegistry::Builtin().ReplaysHeader(name);
}

void RenderRecorded(const provider::Codec& codec, const v1::Exchange& ex,
                    std::shared_ptr<const void> keepalive, const provider::RenderContext& context,
                    bool stream, double speed, absl::Time start, int64_t disconnect_after,
                    HttpResponder& out) {
  if (disconnect_after == 0 || (disconnect_after > 0 && !stream)) return out.Abort();
  const auto finish = [&] {
    if (disconnect_after >= 0) {
      out.Abort();
    } else {
      out.End();
    }
  };
  const size_t limit = disconnect_after < 0 ? SIZE_MAX : static_cast<size_t>(disconnect_after);
  const v1::NativeExchange& native = ex.native();
  const bool same_api = ex.has_native() && native.provider() == codec.name();
  // An API that streams in several forms replays recorded events only to a
  // caller asking for the same one.
  const bool same_form =
      context.call == nullptr || codec.SameForm(*context.call, native.content_type());
  const std::string content_type =
      native.content_type().empty() ? std::string(kJsonContentType) : native.content_type();
  HttpHeaders headers = {{"content-type", content_type}};
  for (const v1::NativeHeader& h : native.headers()) headers.emplace_back(h.name(), h.value());
  // The recorded bytes, when the recording was made over this API and in
  // this form (streamed or not).
  if (same_api && same_form && stream && native.chunks_size() > 0) {
    out.StartStream(native.status() == 0 ? 200 : native.status(), std::move(headers));
    // One HTTP chunk per event, paced by its recorded offset when a speed
    // is set, straight from the recording as the client reads: a client
    // that reads slowly costs no copy of it.
    out.WriteFrom(std::make_shared<RecordedEvents>(std::move(keepalive), native, limit, start, speed));
    return finish();
  }
  if (same_api && native.chunks_size() == 0 && (!stream || native.status() >= 300)) {
    out.Respond(native.status() == 0 ? 200 : native.status(), std::move(headers),
                native.response_body());
    return;
  }
  // Rendered from the canonical exchange.
  if (ex.has_error()) {
    RespondError(codec, absl::Status(static_cast<absl::StatusCode>(ex.error().code()),
                                     ex.error().message()),
                 out);
    return;
  }
  if (!stream) {
    absl::StatusOr<std::string> body = codec.RenderBody(ex.response(), context);
    if (!body.ok()) return RespondError(codec, body.status(), out);
    out.Respond(200, {{"content-type", kJsonContentType}}, *std::move(body));
    return;
  }
  // The recording's chunks, or one made of its whole answer.
  std::unique_ptr<google::protobuf::RepeatedPtrField<v1::CompletionChunk>> owned;
  if (ex.chunks().empty()) {
    owned = std::make_unique<google::protobuf::RepeatedPtrField<v1::CompletionChunk>>();
    *owned->Add() = provider::ChunkFromResponse(ex.response());
  }
  const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks =
      owned != nullptr ? *owned : ex.chunks();
  provider::RenderContext stream_context = context;
  // A streaming caller answered from a whole recorded body of this API: the
  // stream says what the body said (created, service tier, fingerprint).
  if (same_api && native.status() < 300) stream_context.recorded_body = native.response_body();
  absl::StatusOr<std::unique_ptr<provider::EventRenderer>> renderer =
      codec.StreamRenderer(chunks, stream_context);
  if (!renderer.ok()) return RespondError(codec, renderer.status(), out);
  out.StartStream(200, {{"content-type", context.call != nullptr
                                             ? codec.StreamContentType(*context.call)
                                             : std::string(kEventStreamContentType)}});
  out.WriteFrom(std::make_shared<RenderedEvents>(std::move(keepalive), std::move(owned), chunks,
                                                 *std::move(renderer), limit, start, speed));
  finish();
}

}  // namespace service
}  // namespace understudy
