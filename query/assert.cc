#include "query/assert.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/node_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "google/protobuf/arena.h"
#include "query/runs.h"
#include "store/proto_utf8.h"
#include "trace/assertions.h"

namespace understudy {
namespace query {

absl::StatusOr<v1::AssertResponse> AssertRun(
    const Source& source, const std::string& run_id,
    const google::protobuf::RepeatedPtrField<v1::Assertion>& assertions) {
  if (run_id.empty()) return absl::InvalidArgumentError("run: required");
  if (assertions.empty()) return absl::InvalidArgumentError("assertions: give at least one");
  US_ASSIGN_OR_RETURN(v1::Run run, GetRun(source, run_id));
  store::Store& store = *source.store;
  US_RETURN_IF_ERROR(store.Flush());
  // Only the events the checks read are read (trace::ReadPlan), through the
  // run's indexes, so the cost follows this run's size, not the store's: a
  // kind no check reads is skipped, and one of which the checks read only
  // seq, kind and agent comes from the (run, kind, seq, agent) index alone,
  // without its bodies. What is parsed goes into one arena: an event's
  // attribute map is dozens of small allocations, and freeing them one by
  // one was most of the time on large runs (bench/run, perf).
  const trace::ReadPlan plan = trace::ReadPlan::For(assertions);
  google::protobuf::Arena arena;
  std::vector<trace::EventRef> events;
  // The kinds and agents of events read only in part: few distinct names,
  // kept once each (node-based, so the views stay put).
  absl::node_hash_set<std::string> names;
  auto intern = [&names](absl::string_view name) -> absl::string_view {
    return *names.emplace(name).first;
  };
  absl::Status corrupt;
  auto take = [&](const store::StoredEvent& row) {
    if (!plan.Reads(row.kind)) return true;
    if (!row.agent.empty() && !plan.ReadsBody(row.kind)) {
      events.push_back({row.seq, intern(row.kind), intern(row.agent), nullptr});
      return true;
    }
    auto* e = google::protobuf::Arena::CreateMessage<v1::TraceEvent>(&arena);
    if (!store::ParseStored(row.body, e).ok()) {
      corrupt = absl::DataLossError(
          absl::StrCat("run \"", run_id, "\": stored event seq ", row.seq, " does not parse"));
      return false;
    }
    events.push_back({e->seq(), e->kind(), e->agent(), e});
    return true;
  };
  std::vector<store::Store::EventScan> scans;
  if (plan.ReadsAllKinds()) {
    scans.emplace_back().query.run = run_id;
  } else {
    // One index range per kind, in one snapshot; merged by seq below.
    for (const std::string& kind : plan.kinds()) {
      store::Store::EventScan& scan = scans.emplace_back();
      scan.query.run = run_id;
      scan.query.kinds = {kind};
      scan.bodies =
          plan.ReadsBody(kind) ? store::Store::Bodies::kAll : store::Store::Bodies::kWhenNoAgent;
    }
  }
  // Each scan gives its events in seq order; where one scan ends and the
  // next begins is noted, and the sorted ranges are merged (linear) below.
  std::vector<size_t> range_ends;
  auto scan_end = [&] { range_ends.push_back(events.size()); };
  US_RETURN_IF_ERROR(store.ScanEvents(scans, take, scan_end));
  US_RETURN_IF_ERROR(corrupt);
  auto by_seq = [](const trace::EventRef& a, const trace::EventRef& b) { return a.seq < b.seq; };
  for (size_t i = 1; i < range_ends.size(); ++i) {
    std::inplace_merge(events.begin(), events.begin() + static_cast<ptrdiff_t>(range_ends[i - 1]),
                       events.begin() + static_cast<ptrdiff_t>(range_ends[i]), by_seq);
  }
  std::optional<v1::RunSummary> summary;
  if (run.state() != v1::RUN_STATE_ACTIVE) {
    absl::StatusOr<v1::RunSummary> stored = store.GetRunSummary(run_id);
    if (stored.ok()) summary = *std::move(stored);
  }
  trace::TraceView view;
  view.refs = &events;
  view.summary = summary.has_value() ? &*summary : nullptr;
  std::vector<v1::Assertion> checks(assertions.begin(), assertions.end());
  return trace::EvaluateAll(checks, view);
}

}  // namespace query
}  // namespace understudy
