#include "service/http_render.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "base/http_status.h"
#include "recorder/stream.h"
#include "replayer/engine.h"

namespace understudy {
namespace service {
namespace {

absl::Time NotBefore(absl::Time start, int64_t offset_micros, double speed) {
  if (speed <= 0) return absl::InfinitePast();
  return start + absl::Microseconds(static_cast<int64_t>(static_cast<double>(offset_micros) / speed));
}

}  // namespace

std::string ErrorCodeFor(const absl::Status& status) {
  if (status.GetPayload(replayer::kMissPayloadUrl).has_value()) return "understudy_no_recording";
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

void RespondError(WireApi api, const absl::Status& status, HttpResponder& out) {
  HttpHeaders headers = {{"content-type", kJsonContentType}};
  if (status.GetPayload(replayer::kMissPayloadUrl).has_value()) {
    headers.emplace_back("x-understudy-error", "no_recording");
  }
  out.Respond(HttpStatusFor(status.code()), std::move(headers),
              ErrorBody(api, status, ErrorCodeFor(status)));
}

bool IsReplayedHeader(absl::string_view name) {
  return name == "x-request-id" || name == "request-id" || name == "retry-after" ||
         name == "retry-after-ms" || name == "openai-processing-ms" ||
         name == "openai-version" || absl::StartsWith(name, "x-ratelimit-") ||
         absl::StartsWith(name, "anthropic-ratelimit-");
}

void RenderRecorded(WireApi api, const v1::Exchange& ex, std::shared_ptr<const void> keepalive,
                    const RenderContext& context, bool stream, double speed, absl::Time start,
                    int64_t disconnect_after, HttpResponder& out) {
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
  const bool same_api = ex.has_native() && native.provider() == NativeProvider(api);
  // Gemini streams in two forms; recorded events replay only to a caller
  // asking for the same one.
  const bool same_form = api != WireApi::kGemini || context.call == nullptr ||
                         IsEventStream(native.content_type()) == context.call->gemini_sse;
  const std::string content_type =
      native.content_type().empty() ? std::string(kJsonContentType) : native.content_type();
  HttpHeaders headers = {{"content-type", content_type}};
  for (const v1::NativeHeader& h : native.headers()) headers.emplace_back(h.name(), h.value());
  // The recorded bytes, when the recording was made over this API and in
  // this form (streamed or not).
  if (same_api && same_form && stream && native.chunks_size() > 0) {
    out.StartStream(native.status() == 0 ? 200 : native.status(), std::move(headers));
    const size_t n = std::min(limit, static_cast<size_t>(native.chunks_size()));
    // Every event handed over at once (one HTTP chunk each), paced by its
    // recorded offset when a speed is set, straight from the recording: a
    // client that reads slowly costs no copy of it.
    std::vector<HttpSlice> slices;
    slices.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const v1::NativeChunk& chunk = native.chunks(static_cast<int>(i));
      slices.push_back({chunk.data(), NotBefore(start, chunk.offset_micros(), speed)});
    }
    out.WriteShared(std::move(keepalive), std::move(slices));
    return finish();
  }
  if (same_api && native.chunks_size() == 0 && (!stream || native.status() >= 300)) {
    out.Respond(native.status() == 0 ? 200 : native.status(), std::move(headers),
                native.response_body());
    return;
  }
  // Rendered from the canonical exchange.
  if (ex.has_error()) {
    RespondError(api, absl::Status(static_cast<absl::StatusCode>(ex.error().code()),
                                   ex.error().message()),
                 out);
    return;
  }
  if (!stream) {
    absl::StatusOr<std::string> body = RenderBody(api, ex.response(), context);
    if (!body.ok()) return RespondError(api, body.status(), out);
    out.Respond(200, {{"content-type", kJsonContentType}}, *std::move(body));
    return;
  }
  google::protobuf::RepeatedPtrField<v1::CompletionChunk> chunks = ex.chunks();
  if (chunks.empty()) *chunks.Add() = recorder::ChunkFromResponse(ex.response());
  RenderContext stream_context = context;
  // A streaming caller answered from a whole recorded body of this API: the
  // stream says what the body said (created, service tier, fingerprint).
  if (same_api && native.status() < 300) stream_context.recorded_body = native.response_body();
  absl::StatusOr<std::vector<WireEvent>> events = RenderEvents(api, chunks, stream_context);
  if (!events.ok()) return RespondError(api, events.status(), out);
  const bool json_array = api == WireApi::kGemini && context.call != nullptr &&
                          !context.call->gemini_sse;
  out.StartStream(200, {{"content-type", json_array ? kJsonContentType : kEventStreamContentType}});
  if (events->size() > limit) events->resize(limit);
  // Sent from one rendered copy, shared with the connection; an event that
  // carries a chunk is paced by that chunk's offset.
  auto rendered = std::make_shared<std::vector<std::string>>();
  rendered->reserve(events->size());
  std::vector<absl::Time> when;
  when.reserve(events->size());
  for (WireEvent& e : *events) {
    absl::Time at = absl::InfinitePast();
    if (speed > 0 && e.chunk >= 0 && e.chunk < chunks.size()) {
      at = NotBefore(start, chunks[e.chunk].offset_micros(), speed);
    }
    when.push_back(at);
    rendered->push_back(std::move(e.text));
  }
  std::vector<HttpSlice> slices;
  slices.reserve(rendered->size());
  for (size_t i = 0; i < rendered->size(); ++i) slices.push_back({(*rendered)[i], when[i]});
  out.WriteShared(std::shared_ptr<const void>(rendered), std::move(slices));
  finish();
}

}  // namespace service
}  // namespace understudy
