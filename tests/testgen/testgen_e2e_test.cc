// Generated tests, end to end: a session recorded from a fake OpenAI server
// (fake_openai.py) by the system under test (review_agents.py); for pytest,
// node:test and GoogleTest, a test generated from golden.spec.yaml that
// passes its own checks, passes against a replay, and fails against a
// drifted system (the reviewer skipped) with the drift named by
// AnalyzeResults.
#include <poll.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testgen/analyze.h"
#include "testgen/code_check.h"
#include "testgen/test_gen.h"
#include "testgen/test_runner.h"
#include "testgen/toolchain.h"

namespace understudy {
namespace testgen {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Field;
using ::testing::HasSubstr;

constexpr char kPython[] = "/usr/bin/python3";

std::string Fixture(const std::string& name) { return absl::StrCat(TESTGEN_FIXTURES, "/", name); }

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first line `fd` (non-blocking) gives within `timeout`.
std::string FirstLine(int fd, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string line;
  while (absl::Now() < deadline && !absl::StrContains(line, "\n")) {
    pollfd p = {fd, POLLIN, 0};
    ::poll(&p, 1, 100);
    char c;
    while (::read(fd, &c, 1) == 1) {
      line.push_back(c);
      if (c == '\n') break;
    }
  }
  return line.substr(0, line.find('\n'));
}

class TestgenE2eTest : public ::testing::Test {
 protected:
  // Records session "golden" into DIR/golden.db and puts the spec and the
  // system under test beside it, where the generated tests refer to them.
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<ScratchDir>> dir = ScratchDir::Create("understudy-testgen");
    if (!dir.ok()) {
      setup_error_ = new std::string(dir.status().ToString());
      return;
    }
    dir_ = dir->release();
    std::string error;
    absl::StatusOr<std::unique_ptr<ChildProcess>> fake =
        ChildProcess::Spawn({kPython, Fixture("fake_openai.py")});
    if (!fake.ok()) {
      setup_error_ = new std::string(fake.status().ToString());
      return;
    }
    const std::string ready = FirstLine((*fake)->stdout_fd(), absl::Seconds(20));
    const std::string prefix = "fake_openai listening ";
    if (!absl::StartsWith(ready, prefix)) {
      setup_error_ = new std::string(absl::StrCat("fake_openai.py printed \"", ready, "\""));
      return;
    }
    RunOptions options;
    options.timeout = absl::Seconds(60);
    options.spawn.merge_stderr = true;
    options.spawn.env = EnvironmentWith({}, {"UNDERSTUDY_ADDR", "UNDERSTUDY_HTTP", "UNDERSTUDY_DB"});
    absl::StatusOr<CommandResult> recorded = RunCommand(
        {UNDERSTUDY_BIN, "record", "--db", dir_->File("golden.db"), "--session", "golden",
         "--upstream", absl::StrCat("openai=http://", ready.substr(prefix.size())), "--", kPython,
         Fixture("review_agents.py")},
        options);
    (*fake)->Terminate(absl::Seconds(2));
    if (!recorded.ok() || !recorded->ok()) {
      setup_error_ = new std::string(absl::StrCat(
          "recording failed: ",
          recorded.ok() ? absl::StrCat(recorded->Describe(), "\n", recorded->output)
                        : recorded.status().ToString()));
      return;
    }
    for (const char* name : {"golden.spec.yaml", "review_agents.py"}) {
      absl::StatusOr<std::string> written = dir_->Write(name, Slurp(Fixture(name)));
      if (!written.ok()) setup_error_ = new std::string(written.status().ToString());
    }
  }

  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  void SetUp() override {
    ASSERT_EQ(setup_error_, nullptr) << *setup_error_;
  }

  // Generates DIR/NAME<suffix> for `framework` running `command`, checks it
  // and returns its path.
  std::string Generate(Framework framework, const std::string& name,
                       const std::vector<std::string>& command) {
    TestOptions options;
    options.framework = framework;
    options.spec_path = "golden.spec.yaml";
    options.spec_text = Slurp(dir_->File("golden.spec.yaml"));
    options.command = command;
    options.db = "golden.db";
    absl::StatusOr<std::string> source = GenerateTest(options);
    EXPECT_TRUE(source.ok()) << source.status();
    if (!source.ok()) return "";
    const std::string file = absl::StrCat(name, FrameworkSuffix(framework));
    validation::Report report = CheckTestCode(*source, framework, file, DefaultToolchain());
    EXPECT_TRUE(report.problems.empty()) << validation::FormatReport(report);
    absl::StatusOr<std::string> path = dir_->Write(file, *source);
    EXPECT_TRUE(path.ok()) << path.status();
    return path.ok() ? *path : "";
  }

  static TestRun Run(const std::string& path, Framework framework) {
    RunEnv env;
    env.binary = UNDERSTUDY_BIN;
    env.db = dir_->File("golden.db");
    env.timeout = absl::Seconds(100);
    absl::StatusOr<TestRun> run = RunTests(path, framework, env, DefaultToolchain());
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : TestRun{};
  }

  // The generated test passes on a replay; the drifted system fails it, and
  // the analysis names the agent sequence it changed.
  void GreenThenRed(Framework framework) {
    const std::string green = Generate(framework, "golden", {kPython, "review_agents.py"});
    ASSERT_FALSE(green.empty());
    TestRun run = Run(green, framework);
    EXPECT_TRUE(run.ok()) << ToJson(run).dump(2);
    ASSERT_EQ(run.tests.size(), 1u) << ToJson(run).dump(2);
    EXPECT_TRUE(AnalyzeResults(run).empty());

    const std::string red =
        Generate(framework, "drifted", {kPython, "review_agents.py", "--skip-review"});
    ASSERT_FALSE(red.empty());
    run = Run(red, framework);
    EXPECT_FALSE(run.ok()) << ToJson(run).dump(2);
    ASSERT_EQ(run.tests.size(), 1u) << ToJson(run).dump(2);
    EXPECT_EQ(run.tests[0].outcome, Outcome::kFailed) << run.tests[0].message;
    std::vector<Finding> findings = AnalyzeResults(run);
    EXPECT_THAT(findings, Contains(AllOf(Field(&Finding::check, "agents in order"),
                                         Field(&Finding::kind, "expectation"),
                                         Field(&Finding::actual, "[orchestrator, executor]"))))
        << ToJson(findings).dump(2) << "\n" << run.tests[0].message;
    EXPECT_THAT(findings,
                Contains(Field(&Finding::check, "reviewer's feedback reaches executor")))
        << ToJson(findings).dump(2);
  }

  static ScratchDir* dir_;
  static std::string* setup_error_;
};

ScratchDir* TestgenE2eTest::dir_ = nullptr;
std::string* TestgenE2eTest::setup_error_ = nullptr;

TEST_F(TestgenE2eTest, Pytest) { GreenThenRed(Framework::kPytest); }

TEST_F(TestgenE2eTest, NodeTest) { GreenThenRed(Framework::kNode); }

TEST_F(TestgenE2eTest, GoogleTest) {
  ASSERT_TRUE(DefaultToolchain().has_gtest())
      << "this build captured no C++ toolchain for generated tests";
  GreenThenRed(Framework::kGtest);
}

}  // namespace
}  // namespace testgen
}  // namespace understudy
