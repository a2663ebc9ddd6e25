// Runs callbacks at given times on one background thread: timers for code
// that has no event loop of its own (the gRPC callback API).
#ifndef UNDERSTUDY_BASE_SCHEDULER_H_
#define UNDERSTUDY_BASE_SCHEDULER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace understudy {

// Thread-safe. Callbacks run one at a time, in time order (ties in the order
// scheduled), and must not block. Destruction drops callbacks not yet due
// and joins the thread.
class Scheduler {
 public:
  Scheduler();
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Runs `f` on the scheduler's thread at `when` (at once if it has passed).
  void RunAt(absl::Time when, std::function<void()> f);

  // A process-wide scheduler, started on first use and never destroyed.
  static Scheduler* Shared();

 private:
  void Loop();

  absl::Mutex mu_;
  std::multimap<std::pair<absl::Time, uint64_t>, std::function<void()>> due_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace understudy

#endif  // UNDERSTUDY_BASE_SCHEDULER_H_
