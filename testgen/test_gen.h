// Test files written from an assertion spec: one test that replays a
// recorded session, runs the system under test against the replay and
// checks the spec on what it did — for pytest, node:test or GoogleTest.
//
//   TestOptions options;
//   options.framework = Framework::kPytest;
//   options.spec_path = "review.spec.yaml";       // the file refers to it
//   options.spec_text = ReadFile(...);            // or "" to read spec_path
//   options.command = {"python3", "agents.py"};   // argv, never a shell line
//   options.db = "golden.db";
//   US_ASSIGN_OR_RETURN(std::string source, GenerateTest(options));
//
// What every generated test does, in its own language, with the client
// helpers of clients/ (python understudy_testing, clients/node index.js,
// clients/cpp understudy_testing.h):
//   1. a server: attaches to $UNDERSTUDY_ADDR (with $UNDERSTUDY_HTTP, which
//      it then requires) when set; else starts `understudy serve` on
//      loopback ports 0 over the golden database ($UNDERSTUDY_DB, else
//      `db`; binary $UNDERSTUDY_BIN, else PATH). The GoogleTest file starts
//      nothing: it requires both variables and fails saying so (RunTests
//      starts a server for it);
//   2. a replay run of `session`;
//   3. `command` in the folder of the test file, with OPENAI_BASE_URL and
//      ANTHROPIC_BASE_URL (the run's HTTP base URLs), UNDERSTUDY_ADDR,
//      UNDERSTUDY_HTTP and UNDERSTUDY_RUN set, at most
//      $UNDERSTUDY_COMMAND_TIMEOUT seconds (default 300);
//   4. ends the run, checks the spec (read from spec_path when the test
//      runs) and fails when the command did not exit 0 (with the tail of
//      its output) or when a check failed (with the server's report: one
//      "FAIL name: explanation" line per failed check, which
//      testgen/analyze.h reads).
// Relative spec_path and db are resolved against the test file's folder.
#ifndef UNDERSTUDY_TESTGEN_TEST_GEN_H_
#define UNDERSTUDY_TESTGEN_TEST_GEN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace understudy {
namespace testgen {

enum class Framework { kPytest, kNode, kGtest };

// "pytest"; "node" or "node:test"; "gtest" or "googletest" (any case).
// INVALID_ARGUMENT naming the accepted values otherwise.
absl::StatusOr<Framework> ParseFramework(absl::string_view name);
// "pytest", "node", "gtest".
absl::string_view FrameworkName(Framework framework);
// The usual file name ending of a test in `framework`: "_test.py",
// ".test.mjs", "_test.cc".
absl::string_view FrameworkSuffix(Framework framework);

struct TestOptions {
  Framework framework = Framework::kPytest;
  // Where the spec is when the test runs; required.
  std::string spec_path;
  // The spec document, validated before anything is written; "" to read
  // spec_path now.
  std::string spec_text;
  // The recorded session to replay (NAME or NAME@N); "" takes the spec's
  // top-level `session:`.
  std::string session;
  // The system under test: argv, run without a shell; required.
  std::vector<std::string> command;
  // The golden database the test's own server opens; "" for
  // "understudy.db".
  std::string db;
  // Words naming the test; "" for "replay of SESSION satisfies SPEC".
  std::string test_name;
};

// The source of one test file. Deterministic: the same options give the
// same bytes. Every string is embedded as a literal of the target language
// (quotes, backslashes, control characters and non-ASCII text included).
// INVALID_ARGUMENT when the spec has problems (the message is the
// validator's report, one "SOURCE:LINE:COL: error: PATH: MESSAGE" line each),
// when spec_path, command or the session (given or in the spec) is missing,
// or when a string is not UTF-8 or holds a NUL; NOT_FOUND / UNAVAILABLE when
// spec_text is "" and spec_path cannot be read.
absl::StatusOr<std::string> GenerateTest(const TestOptions& options);

// `path` as a test file in `folder` refers to it: relative to `folder`,
// against which generated tests resolve relative paths, so that a test
// committed with its spec and database runs from any checkout (`gen-test
// -o FILE`, generate_tests_from_spec). Both are taken relative to the
// working directory when relative; symbolic links in their existing parts
// are resolved. `path` unchanged when it is empty or has no relative form.
std::string PathFromFolder(const std::string& path, const std::string& folder);

// String literals, for the generators and their tests: a Python or
// JavaScript string literal (double-quoted, JSON escapes; `text` must be
// UTF-8), and a C++ narrow string literal (ASCII only, everything else as
// octal escapes).
std::string PythonString(absl::string_view text);
std::string JsString(absl::string_view text);
std::string CppString(absl::string_view text);

}  // namespace testgen
}  // namespace understudy

#endif  // UNDERSTUDY_TESTGEN_TEST_GEN_H_
