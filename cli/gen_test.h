// `understudy gen-test SPEC --framework pytest|node|gtest -- CMD...`: writes
// a test file that replays the spec's session, runs CMD against the replay
// and asserts the spec (testgen/test_gen.h).
#ifndef UNDERSTUDY_CLI_GEN_TEST_H_
#define UNDERSTUDY_CLI_GEN_TEST_H_

#include <string>

#include "testgen/test_gen.h"

namespace understudy {
namespace cli {

// Reads the spec at `spec_file` into options.spec_text and generates the
// test. Paths the test refers to (the spec, and options.db when set) are
// written relative to the folder of `output` when it is a file, so the
// test and its spec can move together; for stdout ("" or "-") they stay as
// given. The file is written atomically (a temporary file renamed over it)
// and gets one line on stderr, "wrote FILE: FRAMEWORK test of session S".
// Returns 0 on success; 1 when the spec has problems (each printed on
// stderr, "FILE:LINE:COL: error: PATH: MESSAGE") or names no session;
// 2 for a missing command; 3 when the spec cannot be read or the file
// cannot be written. Errors print "understudy: ..." on stderr.
int GenTest(const std::string& spec_file, const testgen::TestOptions& options,
            const std::string& output);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_GEN_TEST_H_
