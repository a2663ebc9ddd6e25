// Assertions over a run's trace: did the agents run in the expected order,
// did the workflow pass through the expected phases, were the expected tools
// called, did one agent's feedback reach another.
//
//   std::vector<v1::TraceEvent> events = ...;  // the run's trace, by seq
//   v1::Assertion a;
//   a.mutable_agent_sequence()->add_agents("orchestrator");
//   a.mutable_agent_sequence()->add_agents("executor");
//   a.mutable_agent_sequence()->set_match(v1::SEQUENCE_MATCH_SUBSEQUENCE);
//   absl::StatusOr<v1::AssertionResult> r = Evaluate(a, TraceView{&events, nullptr});
//   if (!r.ok()) ...             // the assertion itself is malformed
//   if (!r->passed()) std::cerr << r->explanation();
//
// A failed check is a result (passed = false), never an error status: the
// error statuses are for assertions that cannot be evaluated at all.
//
// Every explanation is one paragraph a newcomer can act on: it starts with
// the check's kind (`agent_sequence (exact): ...`), shows what was expected
// and what the run did, and points at the trace events by seq (`event #5`).
// In explanations positions in a sequence count from 1 ("position 2");
// AssertionResult.divergence_index counts from 0.
//
// What each check reads (see v1::Assertion):
//   agent_sequence       the agent of every `exchange` event
//   phase_transitions    understudy.phase.to of every `phase_transition`
//   tool_calls           `tool_call` events: gen_ai.tool.name and
//                        gen_ai.tool.call.arguments
//   feedback_propagated  the responses and requests of `exchange` events
//   count                every event the filter matches
//   no_misses            `miss` events (and their understudy.miss.report)
//   all_consumed         RunSummary.unconsumed (only once the run ended)
//   spec                 a selector-plus-checks document (trace/spec.h)
//
// Sequences compare in one of three ways (v1::SequenceMatch): EXACT (the
// whole sequence, nothing else), PREFIX (the run's sequence starts with the
// expected one) and SUBSEQUENCE (the expected items in order, others may
// come between; the divergence is the first expected item that does not
// occur after the previous one's match).
#ifndef UNDERSTUDY_TRACE_ASSERTIONS_H_
#define UNDERSTUDY_TRACE_ASSERTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_field.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace trace {

// One event of a run as a reader of a large stored trace may hand it to
// the checks: its seq, kind and agent field, and the whole event only where
// a check reads more (see ReadPlan). Borrowed views.
struct EventRef {
  int64_t seq = 0;
  absl::string_view kind;
  absl::string_view agent;  // the event's agent field
  // The whole event, or null when only the fields above were read.
  const v1::TraceEvent* event = nullptr;
};

// A run's trace as the checks see it. Borrowed: the pointees must stay
// alive and unchanged for the duration of the call they are passed to.
struct TraceView {
  // The run's events, in seq order (they are ordered by seq if not).
  // Null reads as no events.
  const std::vector<v1::TraceEvent>* events = nullptr;
  // The run's summary; null while the run is active.
  const v1::RunSummary* summary = nullptr;
  // Instead of `events`, used when set: the events as references, whole or
  // not as ReadPlan allows for the assertions evaluated (in seq order; they
  // are ordered if not).
  const std::vector<EventRef>* refs = nullptr;
};

// Evaluates one assertion against `view`.
//
// Returns the verdict with its explanation (see AssertionResult): name is
// a.name(), or the check's kind ("agent_sequence", "count", ...) when empty.
// A spec assertion (trace/spec.h) whose document holds one item gives that
// item's result; with several items, one combined result (passed when every
// item passed; the explanation lists each item's PASS/FAIL line).
//
// Errors:
//   INVALID_ARGUMENT     the assertion is malformed; the message names the
//                        field: no check set, an unknown SequenceMatch or
//                        Comparison value, `tool_calls.calls[1].arguments:
//                        not a JSON object: ...`, an invalid filter pattern,
//                        empty feedback_propagated fields, no_misses or
//                        all_consumed set to false, a spec that does not
//                        validate (its whole report).
//   FAILED_PRECONDITION  all_consumed while the run is still active
//                        (view.summary is null).
// Thread-safe; reads the view only.
absl::StatusOr<v1::AssertionResult> Evaluate(const v1::Assertion& assertion, const TraceView& view);

// Evaluates every assertion, in order, into one response:
//   results  one per assertion, except that a spec assertion contributes one
//            result per item of its document (spec.h: EvaluateSpec);
//   passed   every result passed (true for no assertions);
//   report   one line per result, "\n"-separated: "PASS <name>" or
//            "FAIL <name>: <explanation>".
// Errors are Evaluate's, for the first assertion that fails to evaluate,
// with its path prefixed: `assertions[2].tool_calls.calls[0].arguments: ...`.
absl::StatusOr<v1::AssertResponse> EvaluateAll(const std::vector<v1::Assertion>& assertions,
                                               const TraceView& view);
// The same for a request's repeated field (v1::AssertRequest::assertions()).
absl::StatusOr<v1::AssertResponse> EvaluateAll(
    const google::protobuf::RepeatedPtrField<v1::Assertion>& assertions, const TraceView& view);

// The "PASS name" / "FAIL name: explanation" line of one result.
std::string ReportLine(const v1::AssertionResult& result);

// What the checks of a request read of a run's events, so that a caller
// holding a large stored trace reads no more: which kinds are read at all,
// and of which a check reads more than the event's seq, kind and agent.
// Evaluating the assertions on a view that holds only the kinds Reads()
// accepts, where an event of a kind for which ReadsBody() is false carries
// only seq, kind and its (non-empty) agent field, gives the same results as
// on the whole trace. (An event whose agent field is empty must be whole:
// the checks then read its gen_ai.agent.name attribute.)
// Immutable once built; thread-compatible.
class ReadPlan {
 public:
  // The plan for `assertions`. Malformed assertions plan no reads of their
  // own (evaluating them fails anyway); a spec reads everything.
  static ReadPlan For(const google::protobuf::RepeatedPtrField<v1::Assertion>& assertions);

  bool Reads(absl::string_view kind) const;
  bool ReadsBody(absl::string_view kind) const;
  // Whether events of every kind are read (then kinds() is partial).
  bool ReadsAllKinds() const { return all_kinds_; }
  // The kinds read, in the order the assertions first name them.
  const std::vector<std::string>& kinds() const { return kinds_; }

 private:
  void Add(const v1::Assertion& a);
  void Need(absl::string_view kind, bool body);

  bool all_kinds_ = false;   // every kind is read, at least its header
  bool all_bodies_ = false;  // every event is read whole
  std::vector<std::string> kinds_;       // read at least in part
  std::vector<std::string> body_kinds_;  // read whole
};

// The view's whole events ordered by seq (stable), as pointers into
// *view.events (or the events view.refs point to; references without a
// whole event are left out); valid as long as the view's events are. Empty
// when both are null.
std::vector<const v1::TraceEvent*> OrderedEvents(const TraceView& view);

// The view's events ordered by seq (stable), as references.
std::vector<EventRef> OrderedRefs(const TraceView& view);

}  // namespace trace
}  // namespace understudy

#endif  // UNDERSTUDY_TRACE_ASSERTIONS_H_
