// Counts the calls in flight so that shutdown can finish as soon as they are
// done instead of waiting for idle client connections to go away.
#ifndef UNDERSTUDY_SERVICE_CALL_TRACKER_H_
#define UNDERSTUDY_SERVICE_CALL_TRACKER_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace understudy {
namespace service {

// Thread-safe.
class CallTracker {
 public:
  // Counts a new call; false once draining (refuse it with UNAVAILABLE).
  bool Begin() {
    absl::MutexLock lock(&mu_);
    if (draining_) return false;
    ++in_flight_;
    return true;
  }
  // The call Begin() admitted is over.
  void End() {
    absl::MutexLock lock(&mu_);
    --in_flight_;
  }
  // True once Drain was called: long waits (WaitFor, Watch) end early.
  bool draining() {
    absl::MutexLock lock(&mu_);
    return draining_;
  }
  // Refuses new calls from now on and waits until none is in flight or
  // `deadline` passes; true when none is left.
  bool Drain(absl::Time deadline) {
    absl::MutexLock lock(&mu_);
    draining_ = true;
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; };
    return mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
  }

 private:
  absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
};

// Admits a synchronous call for its scope. `admitted()` is false when the
// server is draining.
class TrackedCall {
 public:
  explicit TrackedCall(CallTracker* tracker) : tracker_(tracker), admitted_(tracker->Begin()) {}
  ~TrackedCall() {
    if (admitted_) tracker_->End();
  }
  TrackedCall(const TrackedCall&) = delete;
  TrackedCall& operator=(const TrackedCall&) = delete;
  bool admitted() const { return admitted_; }

 private:
  CallTracker* const tracker_;
  const bool admitted_;
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_CALL_TRACKER_H_
