// The upstream model that record and passthrough runs forward to. An
// interface so that the engine is tested with fakes and never knows the
// transport (gRPC today, provider HTTP APIs later).
#ifndef UNDERSTUDY_RECORDER_UPSTREAM_H_
#define UNDERSTUDY_RECORDER_UPSTREAM_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace recorder {

// What travels with a forwarded call besides the request.
struct UpstreamCall {
  std::string agent;
  // Credentials and other headers to pass through as they came. They are
  // forwarded and never stored.
  std::vector<std::pair<std::string, std::string>> headers;
  absl::Time deadline = absl::InfiniteFuture();
};

class ModelUpstream {
 public:
  virtual ~ModelUpstream() = default;

  // Sends one unary completion. `done` runs exactly once, on any thread,
  // with the response or the upstream's error (UNAVAILABLE when it cannot be
  // reached). Must not block the caller.
  virtual void Complete(const UpstreamCall& call, const v1::CompletionRequest& request,
                        std::function<void(absl::StatusOr<v1::CompletionResponse>)> done) = 0;

  // Sends one streamed completion. `on_chunk` runs for each chunk in order,
  // then `on_done` exactly once; all on one upstream thread at a time. Must
  // not block the caller.
  virtual void StreamComplete(const UpstreamCall& call, const v1::CompletionRequest& request,
                              std::function<void(const v1::CompletionChunk&)> on_chunk,
                              std::function<void(absl::Status)> on_done) = 0;
};

}  // namespace recorder
}  // namespace understudy

#endif  // UNDERSTUDY_RECORDER_UPSTREAM_H_
