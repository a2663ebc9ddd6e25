// WorkerPool: a bounded set of threads for work that blocks — the requests
// `understudy mcp-proxy` relays (they overlap up to a bound while reading
// stdin waits for room), the tool calls of understudy's MCP server.
#ifndef UNDERSTUDY_BASE_WORKER_POOL_H_
#define UNDERSTUDY_BASE_WORKER_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace understudy {

// Runs tasks on up to `max` threads, started as needed and kept. Submit
// waits while `max` tasks are submitted and not finished. Thread-safe.
class WorkerPool {
 public:
  explicit WorkerPool(int max);
  // Close.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task`, waiting for room first. False, without running `task`,
  // once Interrupt or Close was called.
  bool Submit(std::function<void()> task);

  // Queues `task` without waiting: it runs once one of the `max` threads is
  // free. False, without running it, once Interrupt or Close was called or
  // when `max_waiting` tasks already wait for a thread.
  bool TrySubmit(std::function<void()> task, int max_waiting);

  // Makes a waiting Submit, and later ones, return false.
  void Interrupt();

  // Makes a WaitIdle in progress, and later ones, return at once.
  void Hurry();

  // True once every submitted task has finished; false when `deadline`
  // passes first or Hurry was called.
  bool WaitIdle(absl::Time deadline);

  // Tasks submitted and not finished.
  int in_flight();

  // Lets the threads finish what they run (queued tasks too) and joins
  // them. Not from one of the pool's tasks.
  void Close();

 private:
  void Work();

  const int max_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool interrupted_ ABSL_GUARDED_BY(mu_) = false;
  bool hurry_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace understudy

#endif  // UNDERSTUDY_BASE_WORKER_POOL_H_
