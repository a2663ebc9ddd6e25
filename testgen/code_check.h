// Checks of a test file before it runs, for a person or an agent fixing one
// in a loop: does it parse, and does it hold what a replay test needs?
//
//   validation::Report report = CheckTestCode(text, Framework::kPytest, "review_test.py",
//                                             DefaultToolchain());
//   // review_test.py:12:5: error: syntax: invalid syntax (check the line above ...)
//   // review_test.py:1:1: error: structure.spec: the spec is never checked (call
//   //   run.assert_spec(SPEC_PATH) ...)
//
// Syntax, by the language's own tools: Python's compile() (toolchain.python),
// `node --check` on a .mjs copy (toolchain.node), the C++ compiler's
// -fsyntax-only with the flags that find clients/cpp's helper headers
// (toolchain.cxx; a build without them reports kNoGtestToolchain).
// Structure: a test function or block, the understudy helper imported, the
// spec checked; and, as warnings, a replay run started.
#ifndef UNDERSTUDY_TESTGEN_CODE_CHECK_H_
#define UNDERSTUDY_TESTGEN_CODE_CHECK_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "testgen/test_gen.h"
#include "testgen/toolchain.h"
#include "validation/problems.h"

namespace understudy {
namespace testgen {

// Larger files are refused unchecked.
inline constexpr size_t kMaxTestCodeBytes = 1 << 20;

// Every problem found in `text`, a test file in `framework`, named `source`
// in the report (and in the compiler's messages). Never fails: a tool that
// cannot be run (python, node or the compiler missing, a timeout) is an
// error problem naming it. At most 20 syntax errors are reported. Runs
// subprocesses in a temporary folder it removes; blocks for at most about
// toolchain.check_timeout. Thread-safe.
validation::Report CheckTestCode(absl::string_view text, Framework framework,
                                 absl::string_view source, const Toolchain& toolchain);

}  // namespace testgen
}  // namespace understudy

#endif  // UNDERSTUDY_TESTGEN_CODE_CHECK_H_
