// Assertion specs written from a run: record (or replay) once, then keep
// what the run did as checks that a later run must pass.
//
//   US_ASSIGN_OR_RETURN(RunData run, LoadRun(*store, "golden"));
//   US_ASSIGN_OR_RETURN(GeneratedSpec spec, GenerateSpec(run, SpecOptions{}));
//   // spec.yaml is a trace/spec.h document:
//   //   # understudy spec of run run-7 (session golden@2): 6 checks
//   //   schema: understudy.spec/v1
//   //   session: golden
//   //   assertions:
//   //     - name: agents in order
//   //       agent_sequence:
//   //         agents: [orchestrator, executor, executor, reviewer, executor, reviewer]
//   //     - name: tool calls of executor
//   //       tool_calls:
//   //         agent: executor
//   //         calls:
//   //           - {name: read_file, arguments: {path: "src/login.py"}}
//   //           ...
//   //     - name: reviewer's feedback reaches executor
//   //       feedback_propagated: {from: reviewer, to: executor, keyword: "Found a SQL injection in login"}
//   //     - name: no misses
//   //       no_misses: true
//
// The checks, each left out when the run gives it nothing to hold
// (SpecOptions turns each off):
//   agent_sequence       the agents of the run's exchanges, in order;
//   tool_calls           one check per agent, in order of the agent's first
//                        call: the names of its calls, each with the
//                        arguments SpecOptions::arguments keeps (one check
//                        over every call when some call has no agent);
//   phase_transitions    the phases the workflow entered, in order;
//   feedback_propagated  for each pair of agents (A, B), the first answer
//                        of A from which a passage reached a later request
//                        of B: one check, whose keyword is that passage;
//   no_misses            when the run had none (a comment says why it is
//                        left out otherwise).
//
// Key arguments (Arguments::kKey without keep_arguments): the arguments
// whose value is a number, a boolean, or a string of at most
// kMaxKeyArgumentBytes bytes; long text (file contents, prompts) and
// nested objects and arrays are left out, since they change with every
// wording of an answer while the short values (a path, a phase, a count)
// say what the call did.
//
// Feedback keywords: a passage of A's answer (its content, else its tool
// calls' arguments) of whole words, at most kMaxKeywordBytes bytes, found
// verbatim in a later request of B (any message's content or tool-call
// arguments, as the check looks) and in no request of the run up to A's
// answer, so that it is what A said rather than what everyone was told.
// The longest such passage wins, the earliest on a tie.
//
// The output is a pure function of the run and the options: the same bytes
// every time. Every string is written so that it reads back as itself
// (YAML double quotes where a plain scalar could be misread), and the spec
// passes when evaluated (trace::EvaluateSpec) against the run it came from.
#ifndef UNDERSTUDY_TESTGEN_SPEC_GEN_H_
#define UNDERSTUDY_TESTGEN_SPEC_GEN_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "testgen/run_source.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace testgen {

// Strings longer than this are not key arguments.
inline constexpr size_t kMaxKeyArgumentBytes = 80;
// Feedback keywords are at most this long...
inline constexpr size_t kMaxKeywordBytes = 60;
// ...and at least this long, so that they are distinctive.
inline constexpr size_t kMinKeywordBytes = 8;

struct SpecOptions {
  // How agent_sequence, tool_calls and phase_transitions compare: exact
  // (nothing else may happen), prefix (the run may go on), subsequence
  // (other items may come between).
  v1::SequenceMatch match = v1::SEQUENCE_MATCH_EXACT;
  // Which arguments of each tool call are checked: the key ones (see
  // above), all of them (the whole object must be contained in the call's
  // arguments), or none (the call's name only).
  enum class Arguments { kKey, kAll, kNone };
  Arguments arguments = Arguments::kKey;
  // When non-empty (with kKey): exactly the arguments of these names, of
  // any value, wherever a call has them.
  std::vector<std::string> keep_arguments;
  // agent_sequence counts consecutive exchanges of one agent once (an
  // agent's tool loop of any length then reads as one step).
  bool collapse_repeats = false;
  // Which checks to write.
  bool agent_sequence = true;
  bool tool_calls = true;
  bool phases = true;
  bool feedback = true;
  bool no_misses = true;
};

struct GeneratedSpec {
  std::string yaml;  // the spec document
  int checks = 0;    // items under `assertions:`
  std::string run;   // the run it came from
  std::string session;
};

// Writes the spec of `run` (see above).
// INVALID_ARGUMENT when `options` is malformed (an unknown match value, an
// empty keep_arguments name, keep_arguments without kKey);
// FAILED_PRECONDITION when the run gives nothing to check with these
// options (no exchanges, tool calls, phases or answers that reached another
// agent, and misses), naming what it lacks, or when the spec would be
// larger than a spec may be (trace::kMaxSpecBytes; suggesting options that
// shrink it). The spec is evaluated against `run` before it is returned;
// INTERNAL should it not read back or not pass (a bug here, not in the
// run). Thread-safe; reads `run` only.
absl::StatusOr<GeneratedSpec> GenerateSpec(const RunData& run, const SpecOptions& options);

// "exact", "prefix" or "subsequence" (the spec's words) as a SequenceMatch;
// INVALID_ARGUMENT naming the three for anything else.
absl::StatusOr<v1::SequenceMatch> ParseMatch(absl::string_view text);

// "key", "all" or "none" as an Arguments value; INVALID_ARGUMENT otherwise.
absl::StatusOr<SpecOptions::Arguments> ParseArguments(absl::string_view text);

}  // namespace testgen
}  // namespace understudy

#endif  // UNDERSTUDY_TESTGEN_SPEC_GEN_H_
