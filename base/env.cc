#include "base/env.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace understudy {
namespace {

// Real time; timers on one TimerQueue started on first use.
class RealEnv final : public Env {
 public:
  absl::Time Now() override { return absl::Now(); }
  void SleepFor(absl::Duration d) override { absl::SleepFor(d); }
  void ScheduleAt(absl::Time when, std::function<void()> f) override {
    static TimerQueue* const queue = new TimerQueue();
    queue->RunAt(when, std::move(f));
  }
};

}  // namespace

Env* Env::Default() {
  static RealEnv* const env = new RealEnv();
  return env;
}

TimerQueue::TimerQueue() : thread_([this] { Loop(); }) {}

TimerQueue::~TimerQueue() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void TimerQueue::RunAt(absl::Time when, std::function<void()> f) {
  absl::MutexLock lock(&mu_);
  due_.emplace(std::make_pair(when, next_++), std::move(f));
}

void TimerQueue::Loop() {
  while (true) {
    std::function<void()> f;
    {
      absl::MutexLock lock(&mu_);
      while (true) {
        if (stop_) return;
        if (!due_.empty() && due_.begin()->first.first <= absl::Now()) break;
        absl::Time wake = due_.empty() ? absl::InfiniteFuture() : due_.begin()->first.first;
        // Wakes for a new earlier entry, for stop, or when the first is due.
        size_t size = due_.size();
        absl::Time first = wake;
        auto changed = [this, size, first]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stop_ || due_.size() != size ||
                 (!due_.empty() && due_.begin()->first.first != first);
        };
        mu_.AwaitWithDeadline(absl::Condition(&changed), wake);
      }
      f = std::move(due_.begin()->second);
      due_.erase(due_.begin());
    }
    f();
  }
}

absl::Time FakeEnv::Now() {
  absl::MutexLock lock(&mu_);
  return now_;
}

void FakeEnv::ScheduleAt(absl::Time when, std::function<void()> f) {
  absl::MutexLock lock(&mu_);
  due_.emplace(std::make_pair(when, next_++), std::move(f));
}

void FakeEnv::Advance(absl::Duration d) {
  absl::Time target;
  {
    absl::MutexLock lock(&mu_);
    target = now_ + d;
  }
  while (true) {
    std::function<void()> f;
    {
      absl::MutexLock lock(&mu_);
      if (due_.empty() || due_.begin()->first.first > target) {
        now_ = std::max(now_, target);
        return;
      }
      now_ = std::max(now_, due_.begin()->first.first);
      f = std::move(due_.begin()->second);
      due_.erase(due_.begin());
    }
    f();
  }
}

size_t FakeEnv::pending() {
  absl::MutexLock lock(&mu_);
  return due_.size();
}

}  // namespace understudy
