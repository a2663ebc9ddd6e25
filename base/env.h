// Time as an interface: the current time, timers, and sleeping, so tests
// control time and never wait on the real clock. Modelled on leveldb's Env.
// The real Env (Env::Default()) is the only place outside tests that reads
// the system clock or sleeps.
#ifndef UNDERSTUDY_BASE_ENV_H_
#define UNDERSTUDY_BASE_ENV_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace understudy {

// Thread-safe source of time and timers.
class Env {
 public:
  virtual ~Env() = default;

  // The current time.
  virtual absl::Time Now() = 0;
  int64_t NowMicros() { return absl::ToUnixMicros(Now()); }

  // Blocks the calling thread for `d` of this Env's time.
  virtual void SleepFor(absl::Duration d) = 0;

  // Runs `f` once this Env's time reaches `when` (soon, if it has passed), on
  // a thread of the Env's choosing. Callbacks run one at a time, in time
  // order (ties in the order scheduled), and must not block.
  virtual void ScheduleAt(absl::Time when, std::function<void()> f) = 0;

  // ScheduleAt(Now() + d, f).
  void ScheduleAfter(absl::Duration d, std::function<void()> f) {
    ScheduleAt(Now() + d, std::move(f));
  }

  // The process-wide Env on real time, its timers on one background thread
  // started on first use. Never deleted.
  static Env* Default();
};

// Runs callbacks at given real times on one background thread: the timer
// queue behind Env::Default(), for code that has no event loop of its own
// (the gRPC callback API). Thread-safe. Destruction drops callbacks not yet
// due and joins the thread.
class TimerQueue {
 public:
  TimerQueue();
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // Runs `f` on the queue's thread at real time `when` (at once if it has
  // passed).
  void RunAt(absl::Time when, std::function<void()> f);

 private:
  void Loop();

  absl::Mutex mu_;
  std::multimap<std::pair<absl::Time, uint64_t>, std::function<void()>> due_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// An Env whose time moves only when told to (Advance, or SleepFor). Scheduled
// callbacks run on the thread that moves time past them, each with Now() set
// to its due time, outside the Env's lock (so a callback may schedule more).
// Thread-safe. Callbacks never reached are dropped on destruction.
class FakeEnv final : public Env {
 public:
  explicit FakeEnv(absl::Time start = absl::FromUnixSeconds(1700000000)) : now_(start) {}

  absl::Time Now() override;
  // Advances time by `d`, running what falls due; never waits.
  void SleepFor(absl::Duration d) override { Advance(d); }
  void ScheduleAt(absl::Time when, std::function<void()> f) override;

  // Moves time forward by `d`, running every callback due by then in time
  // order (including ones those callbacks schedule within the window).
  void Advance(absl::Duration d);

  // How many callbacks wait for a later time.
  size_t pending();

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  std::multimap<std::pair<absl::Time, uint64_t>, std::function<void()>> due_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace understudy

#endif  // UNDERSTUDY_BASE_ENV_H_
