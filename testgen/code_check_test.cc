#include "testgen/code_check.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testgen/toolchain.h"

namespace understudy {
namespace testgen {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Field;
using ::testing::HasSubstr;
using validation::Problem;

auto ProblemAt(const std::string& path, int line, const std::string& message) {
  return AllOf(Field(&Problem::path, path), Field(&Problem::line, line),
               Field(&Problem::message, HasSubstr(message)));
}

TEST(CheckTestCodeTest, PythonSyntaxErrorHasItsLine) {
  const std::string code =
      "from understudy_testing import Client\n\ndef test_x():\n    x = (1,\n\nrun.assert_spec('s')\n";
  validation::Report report = CheckTestCode(code, Framework::kPytest, "t.py", DefaultToolchain());
  EXPECT_FALSE(report.ok());
  EXPECT_THAT(report.problems, Contains(Field(&Problem::path, "syntax")));
  for (const Problem& p : report.problems) {
    if (p.path == "syntax") {
      EXPECT_GT(p.line, 0) << validation::FormatReport(report);
    }
  }
}

TEST(CheckTestCodeTest, PythonStructureProblemsHaveSuggestions) {
  validation::Report report =
      CheckTestCode("import os\n\ndef helper():\n    pass\n", Framework::kPytest, "t.py",
                    DefaultToolchain());
  EXPECT_THAT(report.problems, Contains(ProblemAt("structure.helper", 1, "not imported")));
  EXPECT_THAT(report.problems, Contains(ProblemAt("structure.test", 1, "no test function")));
  EXPECT_THAT(report.problems, Contains(ProblemAt("structure.spec", 1, "never checked")));
  for (const Problem& p : report.problems) EXPECT_FALSE(p.suggestion.empty()) << p.path;
}

TEST(CheckTestCodeTest, NodeSyntaxErrorHasItsLineAndColumn) {
  const std::string code =
      "import { test } from 'node:test';\nimport { connect } from '@understudy/client';\n"
      "test('x', async () => {\n  const a = ;\n  await c.assertSpec(id, s, { mode: 'replay' });\n});\n";
  validation::Report report = CheckTestCode(code, Framework::kNode, "t.mjs", DefaultToolchain());
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.problems, Contains(ProblemAt("syntax", 4, "SyntaxError")))
      << validation::FormatReport(report);
}

TEST(CheckTestCodeTest, GtestErrorsOrAClearMessageWithoutAToolchain) {
  const std::string code =
      "#include \"clients/cpp/understudy_testing.h\"\n#include \"gtest/gtest.h\"\n"
      "TEST(A, B) {\n  int x = undefined_name;\n  EXPECT_THAT(1, understudy::test::SatisfiesSpec(\"\"));\n}\n";
  Toolchain none = DefaultToolchain();
  none.cxx = "";
  validation::Report report = CheckTestCode(code, Framework::kGtest, "t.cc", none);
  EXPECT_THAT(report.problems, Contains(Field(&Problem::message, HasSubstr("cannot be checked"))));

  const Toolchain toolchain = DefaultToolchain();
  if (!toolchain.has_gtest()) GTEST_SKIP() << "no C++ toolchain in this build";
  report = CheckTestCode(code, Framework::kGtest, "t.cc", toolchain);
  EXPECT_THAT(report.problems, Contains(ProblemAt("syntax", 4, "undefined_name")))
      << validation::FormatReport(report);
}

TEST(CheckTestCodeTest, EmptyAndHugeFilesAreRefused) {
  EXPECT_FALSE(CheckTestCode("  \n", Framework::kPytest, "t.py", DefaultToolchain()).ok());
  EXPECT_FALSE(CheckTestCode(std::string(kMaxTestCodeBytes + 1, '#'), Framework::kPytest, "t.py",
                             DefaultToolchain())
                   .ok());
}

TEST(CheckTestCodeTest, MissingToolIsAProblemNotACrash) {
  Toolchain toolchain = DefaultToolchain();
  toolchain.python = "/nonexistent/python3";
  validation::Report report = CheckTestCode("def test_x():\n    pass\n", Framework::kPytest, "t.py",
                                            toolchain);
  EXPECT_THAT(report.problems, Contains(Field(&Problem::message, HasSubstr("cannot check"))));
}

}  // namespace
}  // namespace testgen
}  // namespace understudy
