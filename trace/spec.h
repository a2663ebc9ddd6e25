// Assertion specs: a YAML (or JSON) document of checks over a run's trace,
// in the manner of trace-based testing tools — select events, then state
// what must hold of them — plus the built-in checks of trace/assertions.h.
//
//   schema: understudy.spec/v1        # optional; the only version so far
//   session: review-loop              # optional: the golden session it was written for
//   description: the review loop reaches verification   # optional
//   assertions:
//     - name: executor hands over to verification     # optional
//       select: {kind: tool_call, agent: executor, tool: continue}
//       position: last            # first | last | N (0-based) | all (default)
//       expect:
//         count: {ge: 1}          # or an integer (eq); ops eq ne lt le gt ge
//         attributes:
//           gen_ai.tool.call.arguments: {json_subset: {phase: verification}}
//           gen_ai.tool.name: continue          # plain string: equals
//           understudy.phase: {matches: '^exec'} # or {equals: "x"}
//     - agent_sequence: {agents: [orchestrator, executor], match: subsequence,
//                        collapse_repeats: true}
//     - phase_transitions: {phases: [discovery, execute, verification]}
//     - tool_calls: {agent: executor, match: subsequence,
//                    calls: [{name: continue, arguments: {phase: verification}}]}
//     - feedback_propagated: {from: reviewer, to: executor, keyword: SQL injection}
//     - count: {select: {kind: miss}, eq: 0}
//     - no_misses: true
//     - all_consumed: true
//
// At the top level, `assertions` is required (a non-empty list); `schema`
// (kSpecSchema when given), `session` (the golden session the spec was
// written for: informational, evaluation does not read it) and
// `description` are optional strings.
//
// Each item is either a built-in check (one key of v1::Assertion's check,
// with the proto's field names; `match` is exact, subsequence or prefix,
// default exact) or a select item:
//   select    an event filter: kind (a string or a list), agent, tool,
//             phase, attributes (equal), attribute_patterns (RE2, found),
//             min_seq, max_seq — v1::EventFilter, see trace/filter.h.
//   expect    count: compared with the number of events select matched
//             (all of them, whatever the position). attributes: what must
//             hold of each attribute (checked in name order) on the events
//             `position` picks (all by default); picking no event fails.
//             Without expect: count >= 1.
// The shorthands `agent_sequence: [a, b]`, `phase_transitions: [a, b]` and
// a call given as just its name (`calls: [read_file]`) are accepted too.
//
// Validation reports every problem at once, one line each:
//   spec.yaml:7:9: error: assertions[2].expect.cuont: unknown field (did you mean "count"?)
// Hostile input is bounded: at most kMaxSpecBytes and kMaxSpecNesting levels
// of nesting (and kMaxSpecNodes nodes once YAML aliases are expanded).
#ifndef UNDERSTUDY_TRACE_SPEC_H_
#define UNDERSTUDY_TRACE_SPEC_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trace/assertions.h"
#include "understudy/v1/understudy.pb.h"
#include "validation/problems.h"

namespace understudy {
namespace trace {

// The spec format's version, the value of the optional top-level `schema`
// key. A document without `schema` is read as this version.
inline constexpr absl::string_view kSpecSchema = "understudy.spec/v1";
// Every version this build reads (oldest first), for messages.
inline constexpr absl::string_view kSpecSchemas[] = {kSpecSchema};

// Larger documents are refused before parsing.
inline constexpr size_t kMaxSpecBytes = 1 << 20;
// Mappings and sequences nested deeper than this are refused.
inline constexpr int kMaxSpecNesting = 64;
// Nodes visited (aliases expanded) before a document is refused.
inline constexpr size_t kMaxSpecNodes = 200000;

// Checks `text` against the spec format and reports every problem at once,
// each with its path, position and suggestion (validation/problems.h), in
// document order; `source` names the document in the report. Never fails:
// unreadable YAML, oversized and hostile documents are problems too. The
// report is ok() exactly when ParseSpec accepts the text. Thread-safe.
validation::Report ValidateSpec(absl::string_view text, absl::string_view source);

// Parses and validates a spec document; `source` names it in messages (a
// file name, or a label such as "spec").
//
// Returns one assertion per item, in document order, named by the item's
// `name` (empty when it has none, so Evaluate names the result by its kind).
// Built-in checks become the matching v1::Assertion check; a select item
// becomes Assertion{spec: a canonical JSON document holding just that item},
// which Evaluate accepts (trace/assertions.h).
//
// INVALID_ARGUMENT when the document has any problem; the message lists
// every problem, one "SOURCE:LINE:COL: error: PATH: MESSAGE[ (did you mean ...)]"
// line each, in document order.
absl::StatusOr<std::vector<v1::Assertion>> ParseSpec(absl::string_view text,
                                                     absl::string_view source);

// Parses `text` (as ParseSpec, with its errors) and evaluates every item
// against `view`: one result per item, in document order. Items without a
// name are named by their kind, select items "select <filter>" (e.g.
// "select kind=tool_call agent=executor").
// Also FAILED_PRECONDITION for all_consumed while the run is active
// ("spec.yaml: assertions[7]: all_consumed: the run is still active; ...").
// Thread-safe; reads the view only.
absl::StatusOr<std::vector<v1::AssertionResult>> EvaluateSpec(absl::string_view text,
                                                              absl::string_view source,
                                                              const TraceView& view);

}  // namespace trace
}  // namespace understudy

#endif  // UNDERSTUDY_TRACE_SPEC_H_
