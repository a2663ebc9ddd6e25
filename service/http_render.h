// How the provider-compatible HTTP API answers from what it already has: a
// recorded exchange (its very bytes when it was recorded over the caller's
// API and in the caller's form, paced by the recorded offsets), a scripted
// answer rendered in the caller's shape, or an error in that shape.
#ifndef UNDERSTUDY_SERVICE_HTTP_RENDER_H_
#define UNDERSTUDY_SERVICE_HTTP_RENDER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "provider/codec.h"
#include "service/http_server.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace service {

inline constexpr char kJsonContentType[] = "application/json";
inline constexpr char kEventStreamContentType[] = "text/event-stream; charset=utf-8";

// The stable code a test can check, by what went wrong:
// "understudy_no_recording" for a replay miss, "invalid_request",
// "understudy_not_found", "understudy_failed_precondition",
// "understudy_upstream_unavailable", else "".
std::string ErrorCodeFor(const absl::Status& status);

// Answers `status` in `codec`'s error shape with its HTTP status; a miss
// also gets `x-understudy-error: no_recording`.
void RespondError(const provider::Codec& codec, const absl::Status& status, HttpResponder& out);

// Response headers recorded and replayed: what SDKs read besides the body
// (request ids, rate-limit state, retry hints; provider::CodecRegistry::
// ReplaysHeader). Framing headers are the server's; anything else (cookies,
// account ids) stays out.
bool IsReplayedHeader(absl::string_view name);

// Answers from `ex` in `codec`'s shape: its recorded bytes when it was
// recorded over the same API in the form asked for (streamed or not, and in
// the stream form the route asks for: Codec::SameForm), otherwise rendered
// from its canonical answer with `context`.
// Stream events are paced by their recorded offsets when `speed` > 0,
// counted from `start`. `disconnect_after` >= 0 drops the connection after
// that many stream events (a whole response is never sent). `keepalive`
// holds `ex` alive while the answer is sent (HttpResponder::WriteFrom):
// recorded events are sent from it without a copy, a rendered stream is
// rendered from it an event at a time as the client reads, so a client
// that reads slowly holds a few events, however long the stream.
void RenderRecorded(const provider::Codec& codec, const v1::Exchange& ex,
                    std::shared_ptr<const void> keepalive, const provider::RenderContext& context,
                    bool stream, double speed, absl::Time start, int64_t disconnect_after,
                    HttpResponder& out);

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_HTTP_RENDER_H_
