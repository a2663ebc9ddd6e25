// What went wrong in a test run, and what to change: for each failed check
// in a failure message (the "FAIL name: explanation" lines of the server's
// assertion report, which every client helper raises, each with the
// indented lines that continue it), the check, its whole explanation and a
// suggested fix — a changed expectation that reads back as spec text and
// passes on the run it describes, or, for misses and unused recordings,
// that the recording drifted from the system under test.
//
//   TestRun run = ...;  // testgen/test_runner.h
//   for (const Finding& f : AnalyzeResults(run)) {
//     if (f.action == FixAction::kReplace) ReplaceItem(&spec, f.check, f.replacement);
//   }
#ifndef UNDERSTUDY_TESTGEN_ANALYZE_H_
#define UNDERSTUDY_TESTGEN_ANALYZE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "testgen/test_runner.h"

namespace understudy {
namespace testgen {

// What applying a finding's suggestion does to the spec.
enum class FixAction {
  // Nothing in the spec: fix the system under test or the test (and, when
  // another finding of the run is a drift or a failed command, that one
  // first: this check may fail only because of it).
  kNone,
  // Put Finding::replacement in place of the failed item.
  kReplace,
  // Drop the failed item: what it checks no longer happens in the run.
  kRemove,
  // Record the session again (the suggestion has the command), then write
  // the spec anew from the new recording.
  kRecord,
};

// "none", "replace", "remove", "record".
absl::string_view FixActionName(FixAction action);

struct Finding {
  // The test it came from (TestResult::name).
  std::string test;
  // The failed check's name as the report gives it: the item's `name:`, or
  // its check's kind when it has none ("agent_sequence", "no_misses", ...);
  // for a failure that is no check: "command" (the system under test
  // exited non-zero or timed out) or "test" (anything else: a compile
  // error, a server that did not start).
  std::string check;
  // expectation  the run did something else than the spec says;
  // drift        the recording no longer matches the system (misses,
  //              exchanges never used);
  // command      the system under test failed;
  // error        the test could not run or failed for another reason.
  std::string kind;
  // The check's whole explanation, its continuation lines included (a
  // miss's "  messages[1].content: recorded ... got ..." lines).
  std::string explanation;
  // What to change, in words, quoting the spec text of a replacement.
  std::string suggestion;
  // What the run did, when the explanation says: the sequence it had
  // ("[orchestrator, executor]"), or for misses the fields that differ
  // from the closest recording, one per line.
  std::string actual;
  FixAction action = FixAction::kNone;
  // For kReplace: the item that takes the failed one's place, as spec text:
  // a one-line YAML flow mapping to write after "- " under `assertions:`.
  // It validates (trace::ValidateSpec), keeps the failed item's name,
  // agent and match, and holds what the run did, so it passes on that run.
  // "" for the other actions.
  std::string replacement;
};

// The findings of every failed or errored test, in test order, each test's
// in the order of its message. A failed test whose message names no check
// gives one "test" finding with the message's first lines. Pure and
// thread-safe.
std::vector<Finding> AnalyzeResults(const TestRun& run);
// The same for one failure message (for callers that have only text).
std::vector<Finding> AnalyzeMessage(absl::string_view test, absl::string_view message);

// {"ok", "findings": [{test, check, kind, explanation, suggestion, actual,
// action, replacement}]}.
nlohmann::json ToJson(const std::vector<Finding>& findings);

}  // namespace testgen
}  // namespace understudy

#endif  // UNDERSTUDY_TESTGEN_ANALYZE_H_
