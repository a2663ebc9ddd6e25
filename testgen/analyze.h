// What went wrong in a test run, and what to change: for each failed check
// in a failure message (the "FAIL name: explanation" lines of the server's
// assertion report, which every client helper raises), the check, its
// explanation and a suggested fix — a changed expectation quoting what the
// run did, or, for misses and unused recordings, that the recording
// drifted from the system under test.
//
//   TestRun run = ...;  // testgen/test_runner.h
//   for (const Finding& f : AnalyzeResults(run)) std::cout << f.check << ": " << f.suggestion;
#ifndef UNDERSTUDY_TESTGEN_ANALYZE_H_
#define UNDERSTUDY_TESTGEN_ANALYZE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "testgen/test_runner.h"

namespace understudy {
namespace testgen {

struct Finding {
  // The test it came from (TestResult::name).
  std::string test;
  // The failed check's name ("agent_sequence", "no misses", ...); for a
  // failure that is no check: "command" (the system under test exited
  // non-zero or timed out) or "test" (anything else: a compile error, a
  // server that did not start).
  std::string check;
  // expectation  the run did something else than the spec says;
  // drift        the recording no longer matches the system (misses,
  //              exchanges never used);
  // command      the system under test failed;
  // error        the test could not run or failed for another reason.
  std::string kind;
  std::string explanation;
  std::string suggestion;
  // What the run did, when the explanation says ("[orchestrator, executor]").
  std::string actual;
};

// The findings of every failed or errored test, in test order, each test's
// in the order of its message. A failed test whose message names no check
// gives one "test" finding with the message's first lines. Pure and
// thread-safe.
std::vector<Finding> AnalyzeResults(const TestRun& run);
// The same for one failure message (for callers that have only text).
std::vector<Finding> AnalyzeMessage(absl::string_view test, absl::string_view message);

// {"ok", "findings": [{test, check, kind, explanation, suggestion, actual}]}.
nlohmann::json ToJson(const std::vector<Finding>& findings);

}  // namespace testgen
}  // namespace understudy

#endif  // UNDERSTUDY_TESTGEN_ANALYZE_H_
