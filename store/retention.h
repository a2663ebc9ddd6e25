// Retention: which stored runs to delete, and a background pruner that keeps
// a server's store within its bounds.
//
// The choice is a pure function of the run records, the time and a rule, so
// that `understudy runs prune` and `serve --keep-runs/--keep-trace-for` agree
// and the policy is tested without a database:
//
//   RetentionRule rule;
//   rule.keep_per_session = 1;
//   rule.older_than = absl::Hours(24 * 7);
//   std::vector<std::string> ids = SelectRuns(runs, rule, Env::Default()->Now());
//
// A server applies its bounds with a Pruner: at start-up, then every
// interval, on a thread of its own (never on the request path); each pass
// deletes the expired runs (Store::DeleteRuns) and returns the freed pages to
// the filesystem in bounded steps (Store::ReclaimSpace).
#ifndef UNDERSTUDY_STORE_RETENTION_H_
#define UNDERSTUDY_STORE_RETENTION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/env.h"
#include "store/store.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {

// What `runs prune` selects. A run is selected when it is in one of `states`
// and meets every criterion that is set; with none set, every run in those
// states is.
struct RetentionRule {
  // Only runs that started more than this long before `now`.
  std::optional<absl::Duration> older_than;
  // Only runs older than the newest `keep_per_session` runs of their session
  // (by name, every version; runs without a session form one group),
  // counting only runs in `states`. Newest: the latest start, then the
  // greatest id. Must not be negative; 0 selects them all.
  std::optional<int64_t> keep_per_session;
  // The states a selected run may be in; empty: RUN_STATE_ENDED and
  // RUN_STATE_FAILED (every run that has ended). RUN_STATE_ACTIVE only when
  // named: an active run may still be written to by its server (or its
  // server died and it stays active for ever).
  std::vector<v1::RunState> states;
};

// The ids of the runs of `runs` that `rule` selects, in the order of `runs`.
std::vector<std::string> SelectRuns(const std::vector<v1::Run>& runs, const RetentionRule& rule,
                                    absl::Time now);

// A server's bounds on its store (serve --keep-runs, --keep-trace-for).
// They apply to ended runs only (ENDED and FAILED): an active run is never
// deleted by a server.
struct RetentionOptions {
  // Keep at most this many ended runs per session, the newest ones.
  std::optional<int64_t> keep_runs;
  // Keep ended runs for this long after they started.
  std::optional<absl::Duration> keep_trace_for;

  bool enabled() const { return keep_runs.has_value() || keep_trace_for.has_value(); }
};

// The ids of the ended runs of `runs` that break a bound of `options`: those
// beyond the newest keep_runs of their session, and those that started more
// than keep_trace_for before `now`. In the order of `runs`; empty when no
// bound is set.
std::vector<std::string> SelectExpiredRuns(const std::vector<v1::Run>& runs,
                                           const RetentionOptions& options, absl::Time now);

// What one pass removed.
struct PruneResult {
  std::vector<std::string> deleted;  // run ids, in start order
  int64_t bytes_reclaimed = 0;       // how much the file shrank
};

// One pass of a server's retention over `store`: deletes the runs
// SelectExpiredRuns picks from Store::ListRuns at `now`, then returns free
// pages to the filesystem `reclaim_step_pages` at a time (each step holds
// the store's writer only that long) until none is left. The store's errors
// as they come; runs deleted before an error stay deleted.
absl::StatusOr<PruneResult> PruneExpiredRuns(Store& store, const RetentionOptions& options,
                                             absl::Time now, int64_t reclaim_step_pages);

struct PrunerOptions {
  RetentionOptions retention;
  // Time between passes.
  absl::Duration interval = absl::Seconds(60);
  // Pages per ReclaimSpace step (4 MiB of 4 KiB pages): what a request
  // waiting for the writer may have to wait behind.
  int64_t reclaim_step_pages = 1024;
  // The time runs' ages are measured against. Not owned; must outlive the
  // Pruner.
  Env* clock = Env::Default();
};

// Applies a server's RetentionOptions in the background: a pass at once,
// then one every `interval`, each logged (event "runs_pruned" with the count,
// the first ids and the bytes reclaimed) when it removed something, and
// "prune_failed" when the store refused (the next pass tries again).
// Thread-safe.
class Pruner {
 public:
  // Starts the thread. `store` is not owned and must outlive the Pruner.
  static std::unique_ptr<Pruner> Start(Store* store, PrunerOptions options);

  // Stops: waits for a pass in progress, starts no other.
  ~Pruner();
  Pruner(const Pruner&) = delete;
  Pruner& operator=(const Pruner&) = delete;

  // Stops as the destructor does; idempotent. For owners that must stop it
  // before the store goes (a server's shutdown).
  void Stop();

  // How many passes have finished (successful or not).
  int64_t passes();
  // Waits until `n` passes have finished or `timeout` passes; returns
  // whether they have. For tests.
  bool AwaitPasses(int64_t n, absl::Duration timeout);

 private:
  Pruner(Store* store, PrunerOptions options);
  void Loop();

  Store* const store_;
  const PrunerOptions options_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int64_t passes_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace store
}  // namespace understudy

#endif  // UNDERSTUDY_STORE_RETENTION_H_
