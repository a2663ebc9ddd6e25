// Time as an interface, so tests control it and never sleep on real time.
#ifndef UNDERSTUDY_BASE_CLOCK_H_
#define UNDERSTUDY_BASE_CLOCK_H_

#include <cstdint>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace understudy {

// Thread-safe source of the current time.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
  int64_t NowMicros() { return absl::ToUnixMicros(Now()); }

  // The process-wide real clock. Never deleted.
  static Clock* Real();
};

// A clock that moves only when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1700000000))
      : now_(start) {}
  absl::Time Now() override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace understudy

#endif  // UNDERSTUDY_BASE_CLOCK_H_
