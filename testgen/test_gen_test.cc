#include "testgen/test_gen.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "base/status_matchers.h"
#include "base/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testgen/code_check.h"
#include "testgen/toolchain.h"

namespace understudy {
namespace testgen {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSpec[] = R"(schema: understudy.spec/v1
session: golden
assertions:
  - agent_sequence: {agents: [orchestrator, executor]}
  - no_misses: true
)";

// Text that needs escaping in every language.
const std::string kAwkward = "it's \"quoted\" \\ back\\slash\ttab\nline ü 日本 ?\?= */ ${x} `t`";

TestOptions Options(Framework framework) {
  TestOptions o;
  o.framework = framework;
  o.spec_path = "golden.spec.yaml";
  o.spec_text = kSpec;
  o.command = {"python3", "agents.py", kAwkward};
  o.db = "golden.db";
  return o;
}

TEST(ParseFrameworkTest, AcceptsTheNamesAndAliases) {
  EXPECT_EQ(ParseFramework("pytest").value(), Framework::kPytest);
  EXPECT_EQ(ParseFramework("node:test").value(), Framework::kNode);
  EXPECT_EQ(ParseFramework("Node").value(), Framework::kNode);
  EXPECT_EQ(ParseFramework("googletest").value(), Framework::kGtest);
  EXPECT_EQ(ParseFramework("gtest").value(), Framework::kGtest);
  EXPECT_THAT(ParseFramework("jest"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pytest, node")));
}

TEST(GenerateTestTest, RefusesAnInvalidSpecWithTheValidatorsReport) {
  TestOptions o = Options(Framework::kPytest);
  o.spec_text = "assertions:\n  - agent_sequnce: [a]\n";
  EXPECT_THAT(GenerateTest(o), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("golden.spec.yaml:2:")));
}

TEST(GenerateTestTest, RefusesMissingPieces) {
  TestOptions o = Options(Framework::kPytest);
  o.command.clear();
  EXPECT_THAT(GenerateTest(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("command")));
  o = Options(Framework::kPytest);
  o.spec_text = "assertions:\n  - no_misses: true\n";
  EXPECT_THAT(GenerateTest(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("session")));
  o.session = "golden";
  EXPECT_THAT(GenerateTest(o), IsOk());
  o.command = {"python3", std::string("bad\xff", 4)};
  EXPECT_THAT(GenerateTest(o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("command[1]: not valid UTF-8")));
  o = Options(Framework::kPytest);
  o.spec_text = "";
  o.spec_path = "/nonexistent/spec.yaml";
  EXPECT_THAT(GenerateTest(o), StatusIs(absl::StatusCode::kNotFound));
}

TEST(GenerateTestTest, IsDeterministicAndTakesTheSessionFromTheSpec) {
  for (Framework f : {Framework::kPytest, Framework::kNode, Framework::kGtest}) {
    absl::StatusOr<std::string> a = GenerateTest(Options(f));
    ASSERT_THAT(a, IsOk());
    EXPECT_EQ(GenerateTest(Options(f)).value(), *a);
    EXPECT_THAT(*a, HasSubstr("\"golden\""));
    EXPECT_THAT(*a, HasSubstr("golden.spec.yaml"));
  }
}

TEST(PathFromFolderTest, IsRelativeToTheTestsFolder) {
  EXPECT_EQ(PathFromFolder("/work/repo/specs/a.yaml", "/work/repo/tests"), "../specs/a.yaml");
  EXPECT_EQ(PathFromFolder("/work/repo/tests/a.yaml", "/work/repo/tests"), "a.yaml");
  EXPECT_EQ(PathFromFolder("/data/golden.db", "/work/repo"), "../../data/golden.db");
  EXPECT_EQ(PathFromFolder("", "/work/repo"), "");
}

TEST(StringLiteralTest, PythonAndJavaScriptReadBackTheSameText) {
  const Toolchain toolchain = DefaultToolchain();
  absl::StatusOr<CommandResult> py = RunCommand(
      {toolchain.python, "-c", "import sys; sys.stdout.buffer.write((" + PythonString(kAwkward) +
                                   ").encode())"});
  ASSERT_THAT(py, IsOk());
  EXPECT_TRUE(py->ok()) << py->output;
  EXPECT_EQ(py->output, kAwkward);
  absl::StatusOr<CommandResult> js =
      RunCommand({toolchain.node, "-e", "process.stdout.write(" + JsString(kAwkward) + ")"});
  ASSERT_THAT(js, IsOk());
  EXPECT_TRUE(js->ok()) << js->output;
  EXPECT_EQ(js->output, kAwkward);
}

TEST(StringLiteralTest, CppEscapesEverythingButPrintableAscii) {
  EXPECT_EQ(CppString("a\"b\\c\n"), R"("a\"b\\c\n")");
  EXPECT_EQ(CppString("?\?="), R"("\?\?=")");
  EXPECT_EQ(CppString("\xc3\xbc" "1"), R"("\303\2741")");
}

TEST(GenerateTestTest, GeneratedFilesPassTheirOwnChecks) {
  const Toolchain toolchain = DefaultToolchain();
  for (Framework f : {Framework::kPytest, Framework::kNode, Framework::kGtest}) {
    if (f == Framework::kGtest && !toolchain.has_gtest()) continue;
    absl::StatusOr<std::string> source = GenerateTest(Options(f));
    ASSERT_THAT(source, IsOk());
    validation::Report report = CheckTestCode(*source, f, "generated", toolchain);
    EXPECT_TRUE(report.problems.empty())
        << FrameworkName(f) << ":\n" << validation::FormatReport(report);
  }
}

}  // namespace
}  // namespace testgen
}  // namespace understudy
