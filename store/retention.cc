#include "store/retention.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/log.h"
#include "base/status_macros.h"

namespace understudy {
namespace store {
namespace {

// Ids shown in a log line; the count is always exact.
constexpr size_t kLoggedIds = 10;

// Newest first: the latest start, then the greatest id.
bool Newer(const v1::Run* a, const v1::Run* b) {
  if (a->started_at_micros() != b->started_at_micros()) {
    return a->started_at_micros() > b->started_at_micros();
  }
  return a->id() > b->id();
}

}  // namespace

std::vector<std::string> SelectRuns(const std::vector<v1::Run>& runs, const RetentionRule& rule,
                                    absl::Time now) {
  std::set<v1::RunState> states(rule.states.begin(), rule.states.end());
  if (states.empty()) states = {v1::RUN_STATE_ENDED, v1::RUN_STATE_FAILED};

  std::set<const v1::Run*> selected;
  for (const v1::Run& run : runs) {
    if (states.count(run.state()) == 0) continue;
    if (rule.older_than.has_value() &&
        absl::FromUnixMicros(run.started_at_micros()) >= now - *rule.older_than) {
      continue;
    }
    selected.insert(&run);
  }
  if (rule.keep_per_session.has_value()) {
    // The newest N of each session are kept, ranked among the runs in the
    // rule's states whatever their age: "keep 3" keeps the last three runs.
    std::map<std::string, std::vector<const v1::Run*>> by_session;
    for (const v1::Run& run : runs) {
      if (states.count(run.state()) > 0) by_session[run.session()].push_back(&run);
    }
    const size_t keep = static_cast<size_t>(std::max<int64_t>(*rule.keep_per_session, 0));
    for (auto& [session, group] : by_session) {
      std::sort(group.begin(), group.end(), Newer);
      for (size_t i = 0; i < std::min(keep, group.size()); ++i) selected.erase(group[i]);
    }
  }
  std::vector<std::string> ids;
  for (const v1::Run& run : runs) {
    if (selected.count(&run) > 0) ids.push_back(run.id());
  }
  return ids;
}

std::vector<std::string> SelectExpiredRuns(const std::vector<v1::Run>& runs,
                                           const RetentionOptions& options, absl::Time now) {
  // Each bound is a rule of its own; a run breaking either goes.
  std::set<std::string> expired;
  if (options.keep_runs.has_value()) {
    RetentionRule rule;
    rule.keep_per_session = options.keep_runs;
    for (std::string& id : SelectRuns(runs, rule, now)) expired.insert(std::move(id));
  }
  if (options.keep_trace_for.has_value()) {
    RetentionRule rule;
    rule.older_than = options.keep_trace_for;
    for (std::string& id : SelectRuns(runs, rule, now)) expired.insert(std::move(id));
  }
  std::vector<std::string> ids;
  for (const v1::Run& run : runs) {
    if (expired.count(run.id()) > 0) ids.push_back(run.id());
  }
  return ids;
}

absl::StatusOr<PruneResult> PruneExpiredRuns(Store& store, const RetentionOptions& options,
                                             absl::Time now, int64_t reclaim_step_pages) {
  PruneResult result;
  if (!options.enabled()) return result;
  US_ASSIGN_OR_RETURN(std::vector<v1::Run> runs, store.ListRuns());
  result.deleted = SelectExpiredRuns(runs, options, now);
  if (result.deleted.empty()) return result;
  US_RETURN_IF_ERROR(store.DeleteRuns(result.deleted).status());
  const int64_t step = std::max<int64_t>(reclaim_step_pages, 1);
  while (true) {
    US_ASSIGN_OR_RETURN(const int64_t shrunk, store.ReclaimSpace(step));
    if (shrunk <= 0) break;
    result.bytes_reclaimed += shrunk;
  }
  return result;
}

std::unique_ptr<Pruner> Pruner::Start(Store* store, PrunerOptions options) {
  std::unique_ptr<Pruner> pruner(new Pruner(store, std::move(options)));
  pruner->thread_ = std::thread([p = pruner.get()] { p->Loop(); });
  return pruner;
}

Pruner::Pruner(Store* store, PrunerOptions options)
    : store_(store), options_(std::move(options)) {}

Pruner::~Pruner() { Stop(); }

void Pruner::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

int64_t Pruner::passes() {
  absl::MutexLock lock(&mu_);
  return passes_;
}

bool Pruner::AwaitPasses(int64_t n, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto done = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return passes_ >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
}

void Pruner::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
    }
    absl::StatusOr<PruneResult> pass = PruneExpiredRuns(
        *store_, options_.retention, options_.clock->Now(), options_.reclaim_step_pages);
    if (!pass.ok()) {
      Log(LogLevel::kWarning, "prune_failed", {{"error", pass.status().ToString()}});
    } else if (!pass->deleted.empty()) {
      const size_t shown = std::min(pass->deleted.size(), kLoggedIds);
      std::string ids = absl::StrJoin(pass->deleted.begin(), pass->deleted.begin() + shown, ",");
      if (shown < pass->deleted.size()) absl::StrAppend(&ids, ",…");
      Log(LogLevel::kInfo, "runs_pruned",
          {{"runs", absl::StrCat(pass->deleted.size())},
           {"ids", ids},
           {"bytes_reclaimed", absl::StrCat(pass->bytes_reclaimed)}});
    }
    absl::MutexLock lock(&mu_);
    ++passes_;
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping), options_.interval)) return;
  }
}

}  // namespace store
}  // namespace understudy
