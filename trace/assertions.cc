// Evaluating assertions over a run's trace: dispatch to the built-in checks
// (assertions_checks.cc) and to specs, combined verdicts and reports, and the
// read plan that says which events they read.
#include "trace/assertions.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "trace/assertions_internal.h"
#include "trace/render.h"
#include "trace/spec.h"
#include "trace/vocabulary.h"

namespace understudy {
namespace trace {
namespace {

using assertions_internal::AgentSequence;
using assertions_internal::AllConsumed;
using assertions_internal::CountCheck;
using assertions_internal::Events;
using assertions_internal::FeedbackPropagated;
using assertions_internal::Field;
using assertions_internal::NoMisses;
using assertions_internal::PhaseTransitions;
using assertions_internal::ToolCalls;

absl::Status CheckMatch(v1::SequenceMatch m, absl::string_view path) {
  if (v1::SequenceMatch_IsValid(m)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(path, ": unknown SequenceMatch value ",
                                                 static_cast<int>(m),
                                                 "; expected EXACT, SUBSEQUENCE or PREFIX"));
}

absl::string_view KindName(const v1::Assertion& a) {
  switch (a.check_case()) {
    case v1::Assertion::kAgentSequence:
      return "agent_sequence";
    case v1::Assertion::kPhaseTransitions:
      return "phase_transitions";
    case v1::Assertion::kToolCalls:
      return "tool_calls";
    case v1::Assertion::kFeedbackPropagated:
      return "feedback_propagated";
    case v1::Assertion::kCount:
      return "count";
    case v1::Assertion::kNoMisses:
      return "no_misses";
    case v1::Assertion::kAllConsumed:
      return "all_consumed";
    case v1::Assertion::kSpec:
      return "spec";
    default:
      return "";
  }
}

// Evaluate, with `where` ("assertions[2]" or "") prefixed to field paths.
// Results of a spec come back one per item.
absl::StatusOr<std::vector<v1::AssertionResult>> EvaluateExpanded(const v1::Assertion& a,
                                                                  const Events& events,
                                                                  const TraceView& view,
                                                                  absl::string_view where) {
  const std::string path = Field(where, KindName(a));
  absl::StatusOr<v1::AssertionResult> r;
  switch (a.check_case()) {
    case v1::Assertion::kAgentSequence:
      US_RETURN_IF_ERROR(CheckMatch(a.agent_sequence().match(), Field(path, "match")));
      r = AgentSequence(a.agent_sequence(), events);
      break;
    case v1::Assertion::kPhaseTransitions:
      US_RETURN_IF_ERROR(CheckMatch(a.phase_transitions().match(), Field(path, "match")));
      r = PhaseTransitions(a.phase_transitions(), events);
      break;
    case v1::Assertion::kToolCalls:
      US_RETURN_IF_ERROR(CheckMatch(a.tool_calls().match(), Field(path, "match")));
      r = ToolCalls(a.tool_calls(), events, path);
      break;
    case v1::Assertion::kFeedbackPropagated:
      r = FeedbackPropagated(a.feedback_propagated(), events, path);
      break;
    case v1::Assertion::kCount:
      r = CountCheck(a.count(), events, path);
      break;
    case v1::Assertion::kNoMisses:
      if (!a.no_misses()) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": must be true (false checks nothing; to require misses, count kind=miss)"));
      }
      r = NoMisses(events);
      break;
    case v1::Assertion::kAllConsumed:
      if (!a.all_consumed()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": must be true (false checks nothing)"));
      }
      r = AllConsumed(view, where);
      break;
    case v1::Assertion::kSpec: {
      US_ASSIGN_OR_RETURN(std::vector<v1::AssertionResult> results,
                          EvaluateSpec(a.spec(), path, view));
      if (results.size() == 1 && !a.name().empty()) results[0].set_name(a.name());
      return results;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(where.empty() ? "assertion" : std::string(where),
                       ": no check set; set one of agent_sequence, phase_transitions, tool_calls, "
                       "feedback_propagated, count, no_misses, all_consumed, spec"));
  }
  if (!r.ok()) return r.status();
  r->set_name(a.name().empty() ? std::string(KindName(a)) : a.name());
  return std::vector<v1::AssertionResult>{*std::move(r)};
}

template <typename Assertions>
absl::StatusOr<v1::AssertResponse> EvaluateEach(const Assertions& assertions,
                                                const TraceView& view) {
  const Events events = OrderedRefs(view);
  v1::AssertResponse out;
  out.set_passed(true);
  std::vector<std::string> lines;
  int i = 0;
  for (const v1::Assertion& a : assertions) {
    US_ASSIGN_OR_RETURN(std::vector<v1::AssertionResult> results,
                        EvaluateExpanded(a, events, view, absl::StrCat("assertions[", i++, "]")));
    for (v1::AssertionResult& r : results) {
      if (!r.passed()) out.set_passed(false);
      lines.push_back(ReportLine(r));
      *out.add_results() = std::move(r);
    }
  }
  out.set_report(absl::StrJoin(lines, "\n"));
  return out;
}

}  // namespace

ReadPlan ReadPlan::For(const google::protobuf::RepeatedPtrField<v1::Assertion>& assertions) {
  ReadPlan plan;
  for (const v1::Assertion& a : assertions) plan.Add(a);
  return plan;
}

void ReadPlan::Need(absl::string_view kind, bool body) {
  auto add = [&](std::vector<std::string>& v) {
    if (std::find(v.begin(), v.end(), kind) == v.end()) v.emplace_back(kind);
  };
  add(kinds_);
  if (body) add(body_kinds_);
}

// Keep in step with the checks (assertions_checks.cc): each reads the kinds
// named here, and of them only what is said.
void ReadPlan::Add(const v1::Assertion& a) {
  switch (a.check_case()) {
    case v1::Assertion::kAgentSequence:
      Need(trace::event::kExchange, /*body=*/false);  // AgentOf and seq only
      Need(sim_event::kPrompt, true);    // and understudy.sim.model
      Need(trace::event::kAgentCall, true);    // and understudy.a2a.agent
      Need(trace::event::kAgentResult, true);
      break;
    case v1::Assertion::kPhaseTransitions:
      Need(trace::event::kPhaseTransition, true);
      break;
    case v1::Assertion::kToolCalls:
      Need(trace::event::kToolCall, true);
      Need(sim_event::kToolCall, true);
      break;
    case v1::Assertion::kFeedbackPropagated:
      Need(trace::event::kExchange, true);
      break;
    case v1::Assertion::kCount: {
      const v1::EventFilter& f = a.count().filter();
      // kinds and the seq range are the event's own columns; anything else
      // reads attributes.
      const bool body = !f.agent().empty() || !f.tool().empty() || !f.phase().empty() ||
                        !f.attributes().empty() || !f.attribute_patterns().empty();
      if (f.kinds().empty()) {
        all_kinds_ = true;
        all_bodies_ = all_bodies_ || body;
      }
      for (const std::string& kind : f.kinds()) Need(kind, body);
      break;
    }
    case v1::Assertion::kNoMisses:
      Need(trace::event::kMiss, true);
      break;
    case v1::Assertion::kSpec:
      all_kinds_ = all_bodies_ = true;
      break;
    default:  // all_consumed reads the summary; anything else fails
      break;
  }
}

bool ReadPlan::Reads(absl::string_view kind) const {
  return all_kinds_ || std::find(kinds_.begin(), kinds_.end(), kind) != kinds_.end();
}

bool ReadPlan::ReadsBody(absl::string_view kind) const {
  return all_bodies_ || std::find(body_kinds_.begin(), body_kinds_.end(), kind) != body_kinds_.end();
}

std::vector<EventRef> OrderedRefs(const TraceView& view) {
  std::vector<EventRef> refs;
  if (view.refs != nullptr) {
    refs = *view.refs;
  } else if (view.events != nullptr) {
    refs.reserve(view.events->size());
    for (const v1::TraceEvent& e : *view.events) refs.push_back({e.seq(), e.kind(), e.agent(), &e});
  }
  auto by_seq = [](const EventRef& a, const EventRef& b) { return a.seq < b.seq; };
  if (!std::is_sorted(refs.begin(), refs.end(), by_seq)) {
    std::stable_sort(refs.begin(), refs.end(), by_seq);
  }
  return refs;
}

std::vector<const v1::TraceEvent*> OrderedEvents(const TraceView& view) {
  std::vector<const v1::TraceEvent*> events;
  for (const EventRef& e : OrderedRefs(view)) {
    if (e.event != nullptr) events.push_back(e.event);
  }
  return events;
}

absl::StatusOr<v1::AssertionResult> Evaluate(const v1::Assertion& assertion,
                                             const TraceView& view) {
  US_ASSIGN_OR_RETURN(std::vector<v1::AssertionResult> results,
                      EvaluateExpanded(assertion, OrderedRefs(view), view, ""));
  if (results.size() == 1) return std::move(results[0]);
  // A spec of several items (or none): one combined verdict.
  v1::AssertionResult combined;
  combined.set_name(assertion.name().empty() ? "spec" : assertion.name());
  combined.set_divergence_index(-1);
  combined.set_passed(true);
  std::vector<std::string> lines;
  size_t failed = 0;
  for (const v1::AssertionResult& r : results) {
    if (!r.passed()) {
      combined.set_passed(false);
      ++failed;
      combined.mutable_event_seqs()->Add(r.event_seqs().begin(), r.event_seqs().end());
    }
    lines.push_back(ReportLine(r));
  }
  combined.set_expected(absl::StrCat(Count(results.size(), "check", "checks"), " pass"));
  combined.set_actual(absl::StrCat(results.size() - failed, " passed, ", failed, " failed"));
  combined.set_explanation(absl::StrCat("spec: ", combined.actual(), " of ",
                                        Count(results.size(), "check", "checks"),
                                        lines.empty() ? "" : "\n", absl::StrJoin(lines, "\n")));
  return combined;
}

absl::StatusOr<v1::AssertResponse> EvaluateAll(const std::vector<v1::Assertion>& assertions,
                                               const TraceView& view) {
  return EvaluateEach(assertions, view);
}

absl::StatusOr<v1::AssertResponse> EvaluateAll(
    const google::protobuf::RepeatedPtrField<v1::Assertion>& assertions, const TraceView& view) {
  return EvaluateEach(assertions, view);
}

std::string ReportLine(const v1::AssertionResult& result) {
  return result.passed() ? absl::StrCat("PASS ", result.name())
                         : absl::StrCat("FAIL ", result.name(), ": ", result.explanation());
}

}  // namespace trace
}  // namespace understudy