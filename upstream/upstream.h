// The upstream model that record and passthrough runs forward to. An
// interface so that the engine is tested with fakes and never knows the
// transport (gRPC today, provider HTTP APIs later).
#ifndef UNDERSTUDY_UPSTREAM_UPSTREAM_H_
#define UNDERSTUDY_UPSTREAM_UPSTREAM_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace upstream {

// Lets whoever started an upstream call cancel it from any thread (its
// client went away, or stopped reading). Thread-safe.
class UpstreamCancel {
 public:
  // Cancels the call: runs the implementation's hook now, or as soon as it
  // is set. Idempotent.
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);
  bool cancelled() const ABSL_LOCKS_EXCLUDED(mu_);

  // For ModelUpstream implementations: `hook` cancels the call in progress;
  // it runs under this object's lock (it must not block), at once when
  // Cancel came first. Clear (before the call's state goes away) stops it.
  void Set(std::function<void()> hook) ABSL_LOCKS_EXCLUDED(mu_);
  void Clear() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void()> hook_ ABSL_GUARDED_BY(mu_);
};

// What travels with a forwarded call besides the request.
struct UpstreamCall {
  std::string agent;
  // Credentials and other headers to pass through as they came. They are
  // forwarded and never stored.
  std::vector<std::pair<std::string, std::string>> headers;
  absl::Time deadline = absl::InfiniteFuture();
  // Null, or a way to cancel a streamed call (StreamComplete honours it).
  std::shared_ptr<UpstreamCancel> cancel;
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
  // not block the caller. When `call.cancel` is cancelled, the call ends
  // with CANCELLED (`on_done` still runs once).
  virtual void StreamComplete(const UpstreamCall& call, const v1::CompletionRequest& request,
                              std::function<void(const v1::CompletionChunk&)> on_chunk,
                              std::function<void(absl::Status)> on_done) = 0;
};

}  // namespace upstream
}  // namespace understudy

#endif  // UNDERSTUDY_UPSTREAM_UPSTREAM_H_
