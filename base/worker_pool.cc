#include "base/worker_pool.h"

#include <utility>

namespace understudy {

WorkerPool::WorkerPool(int max) : max_(max) {}

WorkerPool::~WorkerPool() { Close(); }

bool WorkerPool::Submit(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  auto room = [this]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return interrupted_ || in_flight_ < max_; };
  mu_.Await(absl::Condition(&room));
  if (interrupted_) return false;
  ++in_flight_;
  tasks_.push_back(std::move(task));
  if (idle_ == 0 && static_cast<int>(threads_.size()) < max_) {
    threads_.emplace_back([this] { Work(); });
  }
  return true;
}

bool WorkerPool::TrySubmit(std::function<void()> task, int max_waiting) {
  absl::MutexLock lock(&mu_);
  if (interrupted_ || in_flight_ >= max_ + max_waiting) return false;
  ++in_flight_;
  tasks_.push_back(std::move(task));
  if (idle_ == 0 && static_cast<int>(threads_.size()) < max_) {
    threads_.emplace_back([this] { Work(); });
  }
  return true;
}

void WorkerPool::Interrupt() {
  absl::MutexLock lock(&mu_);
  interrupted_ = true;
}

void WorkerPool::Hurry() {
  absl::MutexLock lock(&mu_);
  hurry_ = true;
}

bool WorkerPool::WaitIdle(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0 || hurry_; };
  mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
  return in_flight_ == 0;
}

int WorkerPool::in_flight() {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

void WorkerPool::Close() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    interrupted_ = true;
    closed_ = true;
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void WorkerPool::Work() {
  absl::MutexLock lock(&mu_);
  for (;;) {
    ++idle_;
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || !tasks_.empty(); };
    mu_.Await(absl::Condition(&ready));
    --idle_;
    if (tasks_.empty()) return;  // Closed.
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    mu_.Unlock();
    task();
    task = nullptr;
    mu_.Lock();
    --in_flight_;
  }
}

}  // namespace understudy
