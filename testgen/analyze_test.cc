#include "testgen/analyze.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace testgen {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

TEST(AnalyzeTest, ChangedSequenceSuggestsWhatTheRunDid) {
  const std::string message =
      "run r1 of session golden fails golden.spec.yaml:\n"
      "FAIL spec: spec: 1 passed, 2 failed of 3 checks\n"
      "PASS no misses\n"
      "FAIL agents in order: agent_sequence (exact): expected [orchestrator, executor, reviewer] "
      "but the run had [orchestrator, executor]; they first differ at position 3: expected "
      "\"reviewer\", but the run's sequence ended after 2 items\n"
      "FAIL no misses: no_misses: the run had 1 miss: event #4 (agent executor): messages[2] differs";
  std::vector<Finding> findings = AnalyzeMessage("t", message);
  ASSERT_THAT(findings, SizeIs(2));
  EXPECT_EQ(findings[0].check, "agents in order");
  EXPECT_EQ(findings[0].kind, "expectation");
  EXPECT_EQ(findings[0].actual, "[orchestrator, executor]");
  EXPECT_THAT(findings[0].suggestion, HasSubstr("agents: [orchestrator, executor]"));
  EXPECT_EQ(findings[1].kind, "drift");
  EXPECT_THAT(findings[1].suggestion, HasSubstr("recording drifted"));
  EXPECT_THAT(findings[1].suggestion, HasSubstr("--session golden"));
}

TEST(AnalyzeTest, FailedCommandAndOtherErrors) {
  std::vector<Finding> findings = AnalyzeMessage(
      "t", "the command ['python3', 'a.py'] exited with status 1 (run r1)\n--- its output ---\nboom");
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].kind, "command");
  EXPECT_THAT(findings[0].explanation, HasSubstr("exited with status 1"));

  findings = AnalyzeMessage("t", "t.cc:3:1: error: expected ';'");
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].check, "test");
  EXPECT_EQ(findings[0].kind, "error");
}

TEST(AnalyzeTest, OnlyFailuresAreAnalyzed) {
  TestRun run;
  run.tests.push_back({"a", Outcome::kPassed, "", 1});
  run.tests.push_back({"b", Outcome::kFailed, "FAIL x: count (kind=miss): expected exactly 0", 1});
  std::vector<Finding> findings = AnalyzeResults(run);
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].test, "b");
  EXPECT_EQ(ToJson(findings)["ok"], false);
  EXPECT_EQ(ToJson(std::vector<Finding>{})["ok"], true);
}

}  // namespace
}  // namespace testgen
}  // namespace understudy
