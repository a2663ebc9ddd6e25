#include "base/scheduler.h"

namespace understudy {

Scheduler::Scheduler() : thread_([this] { Loop(); }) {}

Scheduler::~Scheduler() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

Scheduler* Scheduler::Shared() {
  static Scheduler* const shared = new Scheduler();
  return shared;
}

void Scheduler::RunAt(absl::Time when, std::function<void()> f) {
  absl::MutexLock lock(&mu_);
  due_.emplace(std::make_pair(when, next_++), std::move(f));
}

void Scheduler::Loop() {
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

}  // namespace understudy
