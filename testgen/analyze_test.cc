#include "testgen/analyze.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trace/spec.h"
#include "validation/problems.h"

namespace understudy {
namespace testgen {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

// A spec of `items`, each an item's spec text; the validator's report.
std::string Validate(const std::vector<std::string>& items) {
  std::string spec = "schema: understudy.spec/v1\nassertions:\n";
  for (const std::string& item : items) absl::StrAppend(&spec, "  - ", item, "\n");
  validation::Report report = trace::ValidateSpec(spec, "fixed");
  return report.ok() ? "" : validation::FormatReport(report);
}

// What the pytest file generated from a spec of the review loop reports on
// the agent changed to skip its reviewer (the text run_tests hands over).
constexpr char kSkippedReview[] =
    "run run-1e0d00d769f0c564 of session golden fails golden.spec.yaml:\n"
    "FAIL agents in order: agent_sequence (exact): expected [orchestrator, executor, reviewer, "
    "orchestrator, executor, reviewer] but the run had [orchestrator, executor]; they first differ "
    "at position 3: expected \"reviewer\", but the run's sequence ended after 2 items\n"
    "FAIL tool calls of orchestrator: tool_calls by orchestrator (exact): expected "
    "[continue({\"phase\":\"execute\"}), continue({\"phase\":\"verification\"})] but the run had "
    "[continue({\"phase\":\"execute\"})]; they first differ at position 2: expected "
    "continue({\"phase\":\"verification\"}), but the run's sequence ended after 1 item\n"
    "FAIL tool calls of executor: tool_calls by executor (exact): expected "
    "[write_file({\"content\":\"def sum(a, b):\\n    return a + b\\n\",\"path\":\"sum.py\"}), "
    "write_file({\"content\":\"def sum(a, b):\\n    assert isinstance(a, int)\\n    return a + "
    "b\\n\",\"path\":\"sum.py\"})] but the run had [write_file({\"content\":\"def sum(a, b):\\n    "
    "return a + b\\n\",\"path\":\"sum.py\"})]; they first differ at position 2: expected "
    "write_file({\"content\":\"def sum(a, b):\\n    assert isinstance(a, int)\\n    return a + "
    "b\\n\",\"path\":\"sum.py\"}), but the run's sequence ended after 1 item\n"
    "PASS orchestrator's feedback reaches executor\n"
    "FAIL reviewer's feedback reaches executor: feedback_propagated: expected \"FEEDBACK: missing "
    "input validation\" to go from reviewer to executor, but reviewer made no exchanges (agents "
    "with exchanges: orchestrator, executor)\n"
    "PASS no misses";

TEST(AnalyzeTest, ReplacementsAreSpecTextThatKeepTheItemsAgentAndMatch) {
  std::vector<Finding> findings = AnalyzeMessage("t", kSkippedReview);
  ASSERT_THAT(findings, SizeIs(4));
  EXPECT_EQ(findings[0].check, "agents in order");
  EXPECT_EQ(findings[0].kind, "expectation");
  EXPECT_EQ(findings[0].actual, "[orchestrator, executor]");
  EXPECT_EQ(findings[0].action, FixAction::kReplace);
  EXPECT_EQ(findings[0].replacement,
            "{name: agents in order, agent_sequence: {agents: [orchestrator, executor]}}");
  // The tool calls keep their agent, and of each call the arguments the
  // item checked, in spec notation (not the report's write_file({...})).
  EXPECT_EQ(findings[1].replacement,
            "{name: tool calls of orchestrator, tool_calls: {agent: orchestrator, calls: [{name: "
            "continue, arguments: {phase: \"execute\"}}]}}");
  EXPECT_EQ(findings[2].replacement,
            "{name: tool calls of executor, tool_calls: {agent: executor, calls: [{name: "
            "write_file, arguments: {content: \"def sum(a, b):\\n    return a + b\\n\", path: "
            "\"sum.py\"}}]}}");
  EXPECT_THAT(findings[2].suggestion, HasSubstr(findings[2].replacement));
  EXPECT_THAT(findings[2].suggestion, Not(HasSubstr("write_file(")));
  // Feedback that no longer travels: the item goes.
  EXPECT_EQ(findings[3].check, "reviewer's feedback reaches executor");
  EXPECT_EQ(findings[3].action, FixAction::kRemove);
  EXPECT_EQ(findings[3].replacement, "");
  EXPECT_THAT(findings[3].suggestion, HasSubstr("from reviewer to executor"));
  EXPECT_THAT(findings[3].suggestion, HasSubstr("generate_test_spec {run: run-1e0d00d769f0c564}"));
  // Every replacement is spec text the validator takes.
  EXPECT_EQ(Validate({findings[0].replacement, findings[1].replacement, findings[2].replacement}),
            "");
}

TEST(AnalyzeTest, AnUnnamedItemStaysUnnamedAndKeepsItsMatch) {
  std::vector<Finding> findings = AnalyzeMessage(
      "t",
      "FAIL agent_sequence: agent_sequence (prefix, repeats collapsed): expected [orchestrator, "
      "executor, reviewer] but the run had [orchestrator, executor, (none)]; they first differ at "
      "position 3: expected \"reviewer\", got (none) (event #7)\n"
      "FAIL phase_transitions: phase_transitions (subsequence): expected [plan, verify] but the "
      "run had [plan, \"odd\" phase, true]; the expected verify (item 2) does not occur after "
      "plan (position 1, event #3)");
  ASSERT_THAT(findings, SizeIs(2));
  // (none) cannot be stated: left out, which only a subsequence allows.
  EXPECT_EQ(findings[0].replacement,
            "{agent_sequence: {agents: [orchestrator, executor], match: subsequence, "
            "collapse_repeats: true}}");
  EXPECT_EQ(findings[1].replacement,
            "{phase_transitions: {phases: [plan, \"\\\"odd\\\" phase\", \"true\"], match: "
            "subsequence}}");
  EXPECT_EQ(Validate({findings[0].replacement, findings[1].replacement}), "");
}

TEST(AnalyzeTest, WhatTheReportShortenedIsNeverGuessed) {
  // A call whose arguments were cut keeps its name, which matches any
  // arguments; a list cut short gives no replacement at all.
  std::vector<Finding> findings = AnalyzeMessage(
      "t",
      "FAIL tools: tool_calls (exact): expected [write_file({\"path\":\"a.py\"})] but the run had "
      "[write_file({\"content\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
      "xxxxxxxxxxxxxxxxx... (180 bytes)), read_file]; they first differ at position 1: expected "
      "write_file({\"path\":\"a.py\"}), got write_file(...) (event #4)\n"
      "FAIL agents: agent_sequence (exact): expected [a] but the run had [a, b, c, ... and 40 "
      "more]; they first differ at position 2: expected the sequence to end, got b (event #5)");
  ASSERT_THAT(findings, SizeIs(2));
  EXPECT_EQ(findings[0].replacement, "{name: tools, tool_calls: {calls: [write_file, read_file]}}");
  EXPECT_EQ(findings[1].action, FixAction::kNone);
  EXPECT_EQ(findings[1].replacement, "");
  EXPECT_THAT(findings[1].suggestion, HasSubstr("generate_test_spec"));
}

TEST(AnalyzeTest, AMissKeepsEveryLineOfItsExplanation) {
  // As a generated pytest or node:test file reports a drifted agent: the
  // command's failure first, then the spec, whose miss lists each field
  // that differs on a line of its own.
  const std::string message =
      "the command ['/usr/bin/python3', 'review_agents.py'] exited with status 1 (run "
      "run-e056c0499b5ca06c)\n--- its output ---\norchestrator: the model answered 404: "
      "{\"error\":{\"message\":\"no recorded exchange matches this request (agent "
      "\\\"orchestrator\\\", session \\\"golden@1\\\"); ...\"}}\n\n--- the spec ---\n"
      "FAIL agents in order: agent_sequence (exact): expected [orchestrator, executor] but the run "
      "had []; they first differ at position 1: expected \"orchestrator\", but the run had none\n"
      "FAIL no misses: no_misses: the run had 1 miss: event #3 (agent orchestrator): no recorded "
      "exchange matches this request (agent \"orchestrator\", session \"golden@1\"); closest is "
      "exchange #1 (agent \"orchestrator\"), 2 fields differ:\n"
      "  messages[1].content: recorded \"Write sum(a, b) in sum.py.\" got \"Write sum(a, b) in "
      "sum.py!\"\n"
      "  params.temperature: recorded 0 got 1\n"
      "PASS something else\n"
      "  not part of any explanation";
  std::vector<Finding> findings = AnalyzeMessage("t", message);
  ASSERT_THAT(findings, SizeIs(3));
  EXPECT_EQ(findings[0].kind, "command");
  const Finding& drift = findings[2];
  EXPECT_EQ(drift.kind, "drift");
  EXPECT_THAT(drift.explanation, HasSubstr("2 fields differ:\n  messages[1].content: recorded"));
  EXPECT_THAT(drift.explanation, HasSubstr("\n  params.temperature: recorded 0 got 1"));
  EXPECT_THAT(drift.explanation, Not(HasSubstr("not part")));
  EXPECT_EQ(drift.actual,
            "messages[1].content: recorded \"Write sum(a, b) in sum.py.\" got \"Write sum(a, b) in "
            "sum.py!\"\nparams.temperature: recorded 0 got 1");
  EXPECT_EQ(drift.action, FixAction::kRecord);
  // The session comes from the miss when no line names it otherwise.
  EXPECT_THAT(drift.suggestion, HasSubstr("understudy record --mode new --session golden "));
  // The sequence failed because the replay did: no replacement that would
  // enshrine an empty run.
  EXPECT_EQ(findings[1].check, "agents in order");
  EXPECT_EQ(findings[1].action, FixAction::kNone);
  EXPECT_EQ(findings[1].replacement, "");
  EXPECT_THAT(findings[1].suggestion, HasSubstr("comes first"));
}

TEST(AnalyzeTest, ContinuationLinesCarryTheFailLinesPrefix) {
  // pytest's own report prefixes every line with "E   ".
  std::vector<Finding> findings = AnalyzeMessage(
      "t",
      "E   AssertionError: run r1 of session golden fails s.yaml:\n"
      "E   FAIL no misses: no_misses: the run had 1 miss: event #4 (agent executor): no recorded "
      "exchange matches this request; closest is exchange #3, 1 field differs:\n"
      "E     messages[2].content: recorded \"a\" got \"b\"\n"
      "E   PASS agents in order");
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].actual, "messages[2].content: recorded \"a\" got \"b\"");
  EXPECT_THAT(findings[0].suggestion, HasSubstr("--session golden "));
}

TEST(AnalyzeTest, ACountSuggestsTheCountTheRunHad) {
  std::vector<Finding> findings = AnalyzeMessage(
      "t", "FAIL writes: count (kind=tool_call tool=write_file): expected exactly 2 events to "
           "match, but 3 (#4, #6, #9) did");
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].actual, "3");
  EXPECT_THAT(findings[0].suggestion, HasSubstr("`eq: 3`"));
}

TEST(AnalyzeTest, FailedCommandAndOtherErrors) {
  std::vector<Finding> findings = AnalyzeMessage(
      "t", "the command ['python3', 'a.py'] exited with status 1 (run r1)\n--- its output ---\nboom");
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].kind, "command");
  EXPECT_THAT(findings[0].explanation, HasSubstr("exited with status 1"));
  EXPECT_EQ(findings[0].action, FixAction::kNone);

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
  const nlohmann::json json = ToJson(findings);
  EXPECT_EQ(json["ok"], false);
  EXPECT_EQ(json["findings"][0]["action"], "none");
  EXPECT_EQ(json["findings"][0]["replacement"], "");
  EXPECT_EQ(ToJson(std::vector<Finding>{})["ok"], true);
}

}  // namespace
}  // namespace testgen
}  // namespace understudy
