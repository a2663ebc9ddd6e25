// Running a test file against a replay and reading per-test results from
// the framework's machine-readable output:
//   pytest     the understudy_testing.results_plugin (UNDERSTUDY_RESULTS_JSON);
//   node:test  clients/node/json_reporter.js (--test-reporter);
//   gtest      compiled and linked against clients/cpp, run with
//              --gtest_output=json, against a server this starts when
//              RunEnv has none (the file itself never starts one).
//
//   US_ASSIGN_OR_RETURN(TestRun run, RunTests("review_test.py", Framework::kPytest,
//                                             RunEnv{.db = "golden.db"}, DefaultToolchain()));
//   std::cout << ToJson(run).dump(2);
#ifndef UNDERSTUDY_TESTGEN_TEST_RUNNER_H_
#define UNDERSTUDY_TESTGEN_TEST_RUNNER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "testgen/test_gen.h"
#include "testgen/toolchain.h"

namespace understudy {
namespace testgen {

// Where the tests run. Every field is optional.
struct RunEnv {
  // A running server ("HOST:PORT", "http://HOST:PORT"), passed on as
  // UNDERSTUDY_ADDR / UNDERSTUDY_HTTP. Both or neither.
  std::string addr;
  std::string http;
  // The golden database (UNDERSTUDY_DB for the tests' own server, and the
  // database of the server RunTests starts for a GoogleTest file).
  std::string db;
  // The understudy binary (UNDERSTUDY_BIN); "" for the environment's, else
  // `understudy` on PATH.
  std::string binary;
  // The whole run (a compile included) may take this long; then it is
  // stopped and reported as an error.
  absl::Duration timeout = absl::Seconds(300);
};

enum class Outcome { kPassed, kFailed, kError, kSkipped };
// "passed", "failed", "error", "skipped".
absl::string_view OutcomeName(Outcome outcome);

struct TestResult {
  std::string name;     // pytest's node id, node's test name, Suite.Name
  Outcome outcome = Outcome::kPassed;
  std::string message;  // the failure as the framework reported it; "" on success
  double seconds = 0;
};

struct TestRun {
  std::string file;
  Framework framework = Framework::kPytest;
  std::vector<TestResult> tests;
  // The runner's own exit (e.g. "exited with status 1").
  std::string exit;
  // The runner's output, its last 16 KiB.
  std::string output;
  double seconds = 0;

  int Count(Outcome outcome) const;
  // Every test passed, and there was at least one.
  bool ok() const;
};

// Runs the tests of `path` (kept where it is; its folder is the working
// directory). A file that does not compile or whose runner breaks before any
// test gives a TestRun with one kError result carrying the output, not an
// error status. NOT_FOUND when `path` does not exist; FAILED_PRECONDITION
// for GoogleTest without a C++ toolchain (kNoGtestToolchain) or when the
// server for it cannot be started (its stderr in the message);
// INVALID_ARGUMENT when only one of env.addr and env.http is given.
// Blocks for at most about env.timeout; thread-safe.
absl::StatusOr<TestRun> RunTests(const std::string& path, Framework framework,
                                 const RunEnv& env, const Toolchain& toolchain);

// {"file", "framework", "ok", "passed", "failed", "errors", "skipped",
//  "seconds", "exit", "tests": [{"name", "outcome", "message", "seconds"}],
//  "output"}.
nlohmann::json ToJson(const TestRun& run);

}  // namespace testgen
}  // namespace understudy

#endif  // UNDERSTUDY_TESTGEN_TEST_RUNNER_H_
