#include "testgen/spec_gen.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trace/assertions.h"
#include "trace/spec.h"
#include "trace/test_trace.h"

namespace understudy {
namespace testgen {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using trace::testing::Add;
using trace::testing::AddExchange;
using trace::testing::AddPhase;
using trace::testing::AddToolCall;
using trace::testing::ReviewLoop;

RunData RunOf(std::vector<v1::TraceEvent> events) {
  RunData run;
  run.run = "run-1";
  run.session = "review";
  run.session_version = 2;
  run.events = std::move(events);
  return run;
}

std::string Generate(const std::vector<v1::TraceEvent>& events, const SpecOptions& options = {}) {
  absl::StatusOr<GeneratedSpec> spec = GenerateSpec(RunOf(events), options);
  EXPECT_THAT(spec, IsOk());
  return spec.ok() ? spec->yaml : "";
}

// The report of evaluating `yaml` against `events`: one "PASS name" or
// "FAIL name: explanation" line per check.
struct Verdict {
  bool passed = true;
  std::vector<std::string> lines;
  std::string failures;  // the FAIL lines
};

Verdict Evaluate(const std::string& yaml, const std::vector<v1::TraceEvent>& events) {
  absl::StatusOr<std::vector<v1::AssertionResult>> results =
      trace::EvaluateSpec(yaml, "generated.yaml", trace::TraceView{&events, nullptr});
  EXPECT_THAT(results, IsOk()) << yaml;
  Verdict v;
  if (!results.ok()) {
    v.passed = false;
    return v;
  }
  std::vector<std::string> failed;
  for (const v1::AssertionResult& r : *results) {
    v.lines.push_back(trace::ReportLine(r));
    if (!r.passed()) {
      v.passed = false;
      failed.push_back(v.lines.back());
    }
  }
  v.failures = absl::StrJoin(failed, "\n");
  return v;
}

// The events without those of the given seqs (the seqs of the rest kept).
std::vector<v1::TraceEvent> Without(std::vector<v1::TraceEvent> events,
                                    std::vector<int64_t> seqs) {
  events.erase(std::remove_if(events.begin(), events.end(),
                              [&](const v1::TraceEvent& e) {
                                return std::find(seqs.begin(), seqs.end(), e.seq()) != seqs.end();
                              }),
               events.end());
  return events;
}

v1::TraceEvent& At(std::vector<v1::TraceEvent>& events, int64_t seq) {
  return events[static_cast<size_t>(seq - 1)];
}

TEST(SpecGenTest, WritesTheReviewLoop) {
  EXPECT_EQ(Generate(ReviewLoop()),
            R"(# understudy spec of run run-1 (session review@2): 7 checks
schema: understudy.spec/v1
session: review
assertions:
  - name: agents in order
    agent_sequence:
      agents: [orchestrator, executor, executor, reviewer, executor, reviewer]
  - name: tool calls of orchestrator
    tool_calls:
      agent: orchestrator
      calls:
        - {name: continue, arguments: {phase: "discovery"}}
  - name: tool calls of executor
    tool_calls:
      agent: executor
      calls:
        - {name: read_file, arguments: {path: "src/login.py"}}
        - {name: continue, arguments: {phase: "execute"}}
        - {name: continue, arguments: {phase: "verification"}}
  - name: tool calls of reviewer
    tool_calls:
      agent: reviewer
      calls:
        - request_changes
  - name: phases in order
    phase_transitions:
      phases: [discovery, execute, verification]
  - name: reviewer's feedback reaches executor
    feedback_propagated: {from: reviewer, to: executor, keyword: "Found a SQL injection in login(): use parameterized queries"}
  - name: no misses
    no_misses: true
)");
}

TEST(SpecGenTest, PassesOnTheRunItCameFromWithEveryOption) {
  const std::vector<v1::TraceEvent> events = ReviewLoop();
  for (v1::SequenceMatch match : {v1::SEQUENCE_MATCH_EXACT, v1::SEQUENCE_MATCH_PREFIX,
                                  v1::SEQUENCE_MATCH_SUBSEQUENCE}) {
    for (SpecOptions::Arguments arguments :
         {SpecOptions::Arguments::kKey, SpecOptions::Arguments::kAll,
          SpecOptions::Arguments::kNone}) {
      for (bool collapse : {false, true}) {
        SpecOptions options;
        options.match = match;
        options.arguments = arguments;
        options.collapse_repeats = collapse;
        const std::string yaml = Generate(events, options);
        Verdict v = Evaluate(yaml, events);
        EXPECT_TRUE(v.passed) << yaml << "\n" << v.failures;
        EXPECT_EQ(v.lines.size(), 7u) << yaml;
      }
    }
  }
}

TEST(SpecGenTest, SameRunSameBytesWhateverTheEventOrder) {
  std::vector<v1::TraceEvent> events = ReviewLoop();
  const std::string first = Generate(events);
  std::mt19937 random(7);
  std::shuffle(events.begin(), events.end(), random);
  EXPECT_EQ(Generate(events), first);
  EXPECT_EQ(Generate(ReviewLoop()), first);
}

TEST(SpecGenTest, FailsReadablyWhenAnAgentIsSkipped) {
  const std::string yaml = Generate(ReviewLoop());
  // The reviewer's first review (#11, its tool call and routing) never happened.
  Verdict v = Evaluate(yaml, Without(ReviewLoop(), {11, 12, 13}));
  EXPECT_FALSE(v.passed);
  EXPECT_THAT(v.failures,
              HasSubstr("FAIL agents in order: agent_sequence (exact): expected [orchestrator, "
                        "executor, executor, reviewer, executor, reviewer] but the run had "
                        "[orchestrator, executor, executor, executor, reviewer]; they first "
                        "differ at position 4: expected \"reviewer\", got \"executor\" (event "
                        "#14)"));
  EXPECT_THAT(v.failures, HasSubstr("FAIL reviewer's feedback reaches executor: "));
  EXPECT_THAT(v.failures, HasSubstr("FAIL tool calls of reviewer: "));
}

TEST(SpecGenTest, FailsReadablyWhenAToolArgumentChanged) {
  const std::string yaml = Generate(ReviewLoop());
  std::vector<v1::TraceEvent> drifted = ReviewLoop();
  (*At(drifted, 6).mutable_attributes())["gen_ai.tool.call.arguments"] =
      R"({"path":"src/auth.py"})";
  Verdict v = Evaluate(yaml, drifted);
  EXPECT_FALSE(v.passed);
  EXPECT_THAT(v.failures, StartsWith("FAIL tool calls of executor: tool_calls by executor (exact)"));
  EXPECT_THAT(v.failures,
              HasSubstr("they first differ at position 1: expected "
                        "read_file({\"path\":\"src/login.py\"}), got "
                        "read_file({\"path\":\"src/auth.py\"}) (event #6): arguments differ at "
                        "path: expected \"src/login.py\", got \"src/auth.py\""));
  EXPECT_EQ(std::count(v.failures.begin(), v.failures.end(), '\n'), 0) << "one check fails";
}

TEST(SpecGenTest, FailsReadablyWhenFeedbackDoesNotReachTheExecutor) {
  const std::string yaml = Generate(ReviewLoop());
  std::vector<v1::TraceEvent> drifted = ReviewLoop();
  At(drifted, 14).mutable_request()->mutable_messages(1)->set_content("Please go on.");
  Verdict v = Evaluate(yaml, drifted);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.failures,
            "FAIL reviewer's feedback reaches executor: feedback_propagated: expected \"Found a "
            "SQL injection in login(): use parameterized queries\" to go from reviewer to "
            "executor: reviewer's answer in exchange #11 has it (#17 lacks it), but executor's "
            "only exchange after #11 (#14) does not carry it in any message of its request");
}

TEST(SpecGenTest, MatchModesLetTheRunGoOn) {
  std::vector<v1::TraceEvent> longer = ReviewLoop();
  longer.pop_back();  // run_ended
  AddExchange(&longer, "executor", "verification", "Tidy up.", "Done.", "continue",
              R"({"phase":"done"})");
  AddToolCall(&longer, "executor", "continue", R"({"phase":"done"})");
  AddPhase(&longer, "executor", "verification", "done");

  Verdict exact = Evaluate(Generate(ReviewLoop()), longer);
  EXPECT_FALSE(exact.passed);
  EXPECT_THAT(exact.failures, HasSubstr("expected the sequence to end, got \"executor\""));

  for (v1::SequenceMatch match : {v1::SEQUENCE_MATCH_PREFIX, v1::SEQUENCE_MATCH_SUBSEQUENCE}) {
    SpecOptions options;
    options.match = match;
    const std::string yaml = Generate(ReviewLoop(), options);
    EXPECT_THAT(yaml, HasSubstr(match == v1::SEQUENCE_MATCH_PREFIX ? "      match: prefix\n"
                                                                   : "      match: subsequence\n"));
    Verdict v = Evaluate(yaml, longer);
    EXPECT_TRUE(v.passed) << yaml << "\n" << v.failures;
  }
}

TEST(SpecGenTest, CollapseRepeatsCountsAnAgentsLoopOnce) {
  SpecOptions options;
  options.collapse_repeats = true;
  const std::string yaml = Generate(ReviewLoop(), options);
  EXPECT_THAT(yaml, HasSubstr("      agents: [orchestrator, executor, reviewer, executor, "
                              "reviewer]\n      collapse_repeats: true\n"));
  // One more executor step in a row still passes.
  std::vector<v1::TraceEvent> more = ReviewLoop();
  more.insert(more.begin() + 7, At(more, 8));
  Verdict v = Evaluate(yaml, more);
  EXPECT_THAT(v.failures, Not(HasSubstr("agents in order")));
}

std::vector<v1::TraceEvent> OneCall(const std::string& arguments) {
  std::vector<v1::TraceEvent> events;
  Add(&events, "run_started", "");
  AddExchange(&events, "writer", "", "Write it.", "", "write_file", arguments);
  AddToolCall(&events, "writer", "write_file", arguments);
  return events;
}

TEST(SpecGenTest, KeyArgumentsAreShortScalars) {
  const std::string long_text(kMaxKeyArgumentBytes + 1, 'x');
  const std::string arguments = R"({"path":"a.py","content":")" + long_text +
                                R"(","mode":420,"ratio":0.5,"append":false,"note":null,)"
                                R"("opts":{"x":1},"tags":["a"]})";
  const std::vector<v1::TraceEvent> events = OneCall(arguments);

  std::string yaml = Generate(events);
  EXPECT_THAT(yaml, HasSubstr(
                        "- {name: write_file, arguments: {append: false, mode: 420, path: "
                        "\"a.py\", ratio: 0.5}}\n"));
  EXPECT_TRUE(Evaluate(yaml, events).passed);

  SpecOptions all;
  all.arguments = SpecOptions::Arguments::kAll;
  yaml = Generate(events, all);
  EXPECT_THAT(yaml, HasSubstr("content: \"" + long_text + "\""));
  EXPECT_THAT(yaml, HasSubstr("note: null, opts: {x: 1}, path: \"a.py\", ratio: 0.5, tags: [\"a\"]}}"));
  EXPECT_TRUE(Evaluate(yaml, events).passed) << yaml;

  SpecOptions none;
  none.arguments = SpecOptions::Arguments::kNone;
  yaml = Generate(events, none);
  EXPECT_THAT(yaml, HasSubstr("      calls:\n        - write_file\n"));

  SpecOptions keep;
  keep.keep_arguments = {"content", "opts", "missing"};
  yaml = Generate(events, keep);
  EXPECT_THAT(yaml, HasSubstr("arguments: {content: \"" + long_text + "\", opts: {x: 1}}}"));
  EXPECT_TRUE(Evaluate(yaml, events).passed) << yaml;
}

TEST(SpecGenTest, StringsReadBackAsThemselves) {
  // Strings that look like other YAML values, and every character that
  // needs care in a YAML scalar.
  const std::string arguments =
      R"({"a":"true","b":"5","c":"null","d":"say \"hi\" \\ back","e":"tab\tnew\nline",)"
      R"("f":"caf\u00e9 \ud83d\ude00 \u2028 \u0085 \ufeff \u007f","g":"- [x]: #y",)"
      R"("true":1,"5":"k","key with: colon":"v"})";
  std::vector<v1::TraceEvent> events = OneCall(arguments);
  AddExchange(&events, "agent: #1", "", "Go.", "");
  AddPhase(&events, "agent: #1", "", "- phase, [two]");
  RunData run = RunOf(events);
  run.session = "weird: 'name' #2";

  absl::StatusOr<GeneratedSpec> spec = GenerateSpec(run, {});
  ASSERT_THAT(spec, IsOk());
  EXPECT_THAT(spec->yaml, HasSubstr("session: \"weird: 'name' #2\"\n"));
  EXPECT_THAT(spec->yaml, HasSubstr(R"(a: "true", b: "5", c: "null", d: "say \"hi\" \\ back")"));
  EXPECT_THAT(spec->yaml, HasSubstr(R"(\u2028 \u0085 \uFEFF \x7F")"));
  Verdict v = Evaluate(spec->yaml, events);
  EXPECT_TRUE(v.passed) << spec->yaml << "\n" << v.failures;

  // Types are kept: the string "5" is not the number 5.
  std::vector<v1::TraceEvent> drifted = events;
  (*At(drifted, 3).mutable_attributes())["gen_ai.tool.call.arguments"] =
      absl::StrReplaceAll(arguments, {{R"("b":"5")", R"("b":5)"}});
  v = Evaluate(spec->yaml, drifted);
  EXPECT_THAT(v.failures, HasSubstr("arguments differ at b: expected \"5\", got 5"));
}

TEST(SpecGenTest, FeedbackIsWhatTheAgentSaidNotWhatEveryoneWasTold) {
  std::vector<v1::TraceEvent> events;
  // The planner repeats the task, which the coder was told already: that is
  // no feedback. Its plan is (the longest new passage of it that fits).
  AddExchange(&events, "coder", "", "Build the parser for config files.", "On it.");
  AddExchange(&events, "planner", "", "Build the parser for config files.",
              "Build the parser for config files. Start with the tokenizer, then the grammar.");
  AddExchange(&events, "coder", "",
              "Plan: Build the parser for config files. Start with the tokenizer, then the "
              "grammar.",
              "Done.");
  const std::string yaml = Generate(events);
  EXPECT_THAT(yaml, HasSubstr("feedback_propagated: {from: planner, to: coder, keyword: \"for "
                              "config files. Start with the tokenizer, then the grammar\"}"));
  EXPECT_TRUE(Evaluate(yaml, events).passed) << yaml;
  // The coder's "On it." and "Done." reached nobody; the planner's answer
  // reached only the coder.
  EXPECT_THAT(yaml, Not(HasSubstr("coder's feedback")));

  // Without the plan in the coder's request the check fails.
  std::vector<v1::TraceEvent> drifted = events;
  At(drifted, 3).mutable_request()->mutable_messages(1)->set_content(
      "Plan: Build the parser for config files.");
  EXPECT_THAT(Evaluate(yaml, drifted).failures,
              HasSubstr("but coder's only exchange after #2 (#3) does not carry it"));
}

TEST(SpecGenTest, LeavesOutNoMissesWhenTheRunMissed) {
  std::vector<v1::TraceEvent> events = ReviewLoop();
  Add(&events, "miss", "executor", {{"understudy.miss.report", "no recording matches"}});
  const std::string yaml = Generate(events);
  EXPECT_THAT(yaml, HasSubstr("\n# no_misses left out: the run had 1 miss (#20)\n"));
  EXPECT_THAT(yaml, Not(HasSubstr("no_misses: true")));
  EXPECT_TRUE(Evaluate(yaml, events).passed) << yaml;
}

TEST(SpecGenTest, UnnamedAgentsAndToolsCompareAsASubsequence) {
  std::vector<v1::TraceEvent> events;
  AddExchange(&events, "lead", "", "Go.", "", "plan", R"({"steps":2})");
  AddToolCall(&events, "lead", "plan", R"({"steps":2})");
  AddExchange(&events, "", "", "Go on.", "");
  AddToolCall(&events, "", "", "{}");
  AddExchange(&events, "lead", "", "Go on.", "");
  AddPhase(&events, "lead", "", "");
  AddPhase(&events, "lead", "", "review");
  const std::string yaml = Generate(events);
  EXPECT_THAT(yaml, HasSubstr("# agent_sequence: 1 of 3 items have no name"));
  EXPECT_THAT(yaml, HasSubstr("# tool calls: 1 of 2 calls have no tool name"));
  EXPECT_THAT(yaml, HasSubstr("# phase_transitions: 1 of 2 items have no name"));
  EXPECT_THAT(yaml, HasSubstr("  - name: tool calls\n    tool_calls:\n      match: subsequence\n"));
  Verdict v = Evaluate(yaml, events);
  EXPECT_TRUE(v.passed) << yaml << "\n" << v.failures;
}

TEST(SpecGenTest, LeavesOutChecksTheOptionsTurnOff) {
  SpecOptions options;
  options.agent_sequence = false;
  options.tool_calls = false;
  options.phases = false;
  options.feedback = false;
  absl::StatusOr<GeneratedSpec> spec = GenerateSpec(RunOf(ReviewLoop()), options);
  ASSERT_THAT(spec, IsOk());
  EXPECT_EQ(spec->checks, 1);
  EXPECT_EQ(spec->run, "run-1");
  EXPECT_EQ(spec->session, "review");
  EXPECT_THAT(spec->yaml, StartsWith("# understudy spec of run run-1 (session review@2): 1 check\n"
                                     "schema: understudy.spec/v1\nsession: review\nassertions:\n"
                                     "  - name: no misses\n"));
}

TEST(SpecGenTest, NothingToCheckIsAFailedPrecondition) {
  std::vector<v1::TraceEvent> events;
  Add(&events, "run_started", "");
  Add(&events, "miss", "executor");
  Add(&events, "run_ended", "");
  EXPECT_THAT(GenerateSpec(RunOf(events), {}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("run run-1 (session review@2) gives nothing to check")));
}

TEST(SpecGenTest, RefusesMalformedOptions) {
  SpecOptions options;
  options.arguments = SpecOptions::Arguments::kAll;
  options.keep_arguments = {"path"};
  EXPECT_THAT(GenerateSpec(RunOf(ReviewLoop()), options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("keep_arguments")));
  options = {};
  options.keep_arguments = {""};
  EXPECT_THAT(GenerateSpec(RunOf(ReviewLoop()), options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("an empty name")));
  options = {};
  options.match = static_cast<v1::SequenceMatch>(9);
  EXPECT_THAT(GenerateSpec(RunOf(ReviewLoop()), options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("match")));
}

TEST(SpecGenTest, ParsesMatchAndArgumentsWords) {
  EXPECT_EQ(*ParseMatch("exact"), v1::SEQUENCE_MATCH_EXACT);
  EXPECT_EQ(*ParseMatch("prefix"), v1::SEQUENCE_MATCH_PREFIX);
  EXPECT_EQ(*ParseMatch("subsequence"), v1::SEQUENCE_MATCH_SUBSEQUENCE);
  EXPECT_THAT(ParseMatch("Exact"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("exact, prefix or subsequence"), HasSubstr("Exact"))));
  EXPECT_EQ(*ParseArguments("key"), SpecOptions::Arguments::kKey);
  EXPECT_EQ(*ParseArguments("all"), SpecOptions::Arguments::kAll);
  EXPECT_EQ(*ParseArguments("none"), SpecOptions::Arguments::kNone);
  EXPECT_THAT(ParseArguments("some"), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace testgen
}  // namespace understudy
