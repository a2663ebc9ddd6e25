#include "trace/assertions.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trace/test_trace.h"

namespace understudy {
namespace trace {
namespace {

using testing::Add;
using testing::AddExchange;
using testing::AddToolCall;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReviewLoop;
using ::testing::StartsWith;

v1::AssertionResult Eval(const v1::Assertion& a, const std::vector<v1::TraceEvent>& events,
                         const v1::RunSummary* summary = nullptr) {
  absl::StatusOr<v1::AssertionResult> r = Evaluate(a, TraceView{&events, summary});
  EXPECT_THAT(r, IsOk());
  return r.ok() ? *r : v1::AssertionResult();
}

std::vector<int64_t> Seqs(const v1::AssertionResult& r) {
  return {r.event_seqs().begin(), r.event_seqs().end()};
}

v1::Assertion Agents(std::vector<std::string> agents, v1::SequenceMatch match,
                     bool collapse = false) {
  v1::Assertion a;
  for (const std::string& agent : agents) a.mutable_agent_sequence()->add_agents(agent);
  a.mutable_agent_sequence()->set_match(match);
  a.mutable_agent_sequence()->set_collapse_repeats(collapse);
  return a;
}

v1::Assertion Phases(std::vector<std::string> phases, v1::SequenceMatch match) {
  v1::Assertion a;
  for (const std::string& phase : phases) a.mutable_phase_transitions()->add_phases(phase);
  a.mutable_phase_transitions()->set_match(match);
  return a;
}

v1::Assertion Calls(const std::string& agent,
                    std::vector<std::pair<std::string, std::string>> calls,
                    v1::SequenceMatch match) {
  v1::Assertion a;
  a.mutable_tool_calls()->set_agent(agent);
  a.mutable_tool_calls()->set_match(match);
  for (const auto& [name, arguments] : calls) {
    v1::ExpectedToolCall* call = a.mutable_tool_calls()->add_calls();
    call->set_name(name);
    call->set_arguments(arguments);
  }
  return a;
}

v1::Assertion Feedback(const std::string& from, const std::string& to, const std::string& keyword) {
  v1::Assertion a;
  a.mutable_feedback_propagated()->set_from(from);
  a.mutable_feedback_propagated()->set_to(to);
  a.mutable_feedback_propagated()->set_keyword(keyword);
  return a;
}

v1::Assertion CountOf(const std::string& kind, v1::Comparison op, int64_t n) {
  v1::Assertion a;
  if (!kind.empty()) a.mutable_count()->mutable_filter()->add_kinds(kind);
  a.mutable_count()->set_comparison(op);
  a.mutable_count()->set_n(n);
  return a;
}

// orchestrator (#2) hands straight to the reviewer (#5): no executor.
std::vector<v1::TraceEvent> SkippedExecutor() {
  std::vector<v1::TraceEvent> ev;
  Add(&ev, "run_started", "");
  AddExchange(&ev, "orchestrator", "", "Add a login endpoint.", "", "continue",
              R"({"phase":"execute"})");
  testing::AddToolCall(&ev, "orchestrator", "continue", R"({"phase":"execute"})");
  testing::AddPhase(&ev, "orchestrator", "", "execute");
  AddExchange(&ev, "reviewer", "execute", "Review.", "Nothing to review.");
  Add(&ev, "run_ended", "");
  return ev;
}

// ---------------------------------------------------------------------------
// agent_sequence

TEST(AgentSequenceTest, ExactPassesOnEveryExchangeInOrder) {
  v1::AssertionResult r =
      Eval(Agents({"orchestrator", "executor", "executor", "reviewer", "executor", "reviewer"},
                  v1::SEQUENCE_MATCH_EXACT),
           ReviewLoop());
  EXPECT_TRUE(r.passed()) << r.explanation();
  EXPECT_EQ(r.name(), "agent_sequence");
  EXPECT_EQ(r.divergence_index(), -1);
  EXPECT_THAT(Seqs(r), ElementsAre(2, 5, 8, 11, 14, 17));
  EXPECT_EQ(r.explanation(),
            "agent_sequence (exact): the run had [orchestrator, executor, executor, reviewer, "
            "executor, reviewer] as expected (events #2, #5, #8, #11, #14, #17)");
}

TEST(AgentSequenceTest, ExactFailureNamesTheFirstDivergenceAndItsEvent) {
  v1::AssertionResult r =
      Eval(Agents({"orchestrator", "executor", "reviewer"}, v1::SEQUENCE_MATCH_EXACT),
           SkippedExecutor());
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.explanation(),
            "agent_sequence (exact): expected [orchestrator, executor, reviewer] but the run had "
            "[orchestrator, reviewer]; they first differ at position 2: expected \"executor\", "
            "got \"reviewer\" (event #5)");
  EXPECT_EQ(r.expected(), "[orchestrator, executor, reviewer]");
  EXPECT_EQ(r.actual(), "[orchestrator, reviewer]");
  EXPECT_EQ(r.divergence_index(), 1);
  EXPECT_THAT(Seqs(r), ElementsAre(2, 5));
}

TEST(AgentSequenceTest, CollapseRepeatsMergesConsecutiveExchangesOfAnAgent) {
  const std::vector<std::string> loop = {"orchestrator", "executor", "reviewer", "executor",
                                         "reviewer"};
  v1::AssertionResult collapsed =
      Eval(Agents(loop, v1::SEQUENCE_MATCH_EXACT, /*collapse=*/true), ReviewLoop());
  EXPECT_TRUE(collapsed.passed()) << collapsed.explanation();
  EXPECT_THAT(Seqs(collapsed), ElementsAre(2, 5, 11, 14, 17));  // a run's first event

  v1::AssertionResult raw = Eval(Agents(loop, v1::SEQUENCE_MATCH_EXACT), ReviewLoop());
  EXPECT_FALSE(raw.passed());
  EXPECT_EQ(raw.divergence_index(), 2);
  EXPECT_THAT(raw.explanation(),
              HasSubstr("they first differ at position 3: expected \"reviewer\", got "
                        "\"executor\" (event #8)"));
}

TEST(AgentSequenceTest, ExactFailsWhenTheRunStopsEarlyOrGoesOn) {
  v1::AssertionResult shorter =
      Eval(Agents({"orchestrator", "reviewer", "executor"}, v1::SEQUENCE_MATCH_EXACT),
           SkippedExecutor());
  EXPECT_FALSE(shorter.passed());
  EXPECT_EQ(shorter.divergence_index(), 2);
  EXPECT_THAT(shorter.explanation(),
              HasSubstr("; they first differ at position 3: expected \"executor\", but the run's "
                        "sequence ended after 2 items"));

  v1::AssertionResult longer =
      Eval(Agents({"orchestrator"}, v1::SEQUENCE_MATCH_EXACT), SkippedExecutor());
  EXPECT_FALSE(longer.passed());
  EXPECT_EQ(longer.divergence_index(), 1);
  EXPECT_THAT(longer.explanation(),
              HasSubstr("; they first differ at position 2: expected the sequence to end, got "
                        "\"reviewer\" (event #5)"));

  v1::AssertionResult none = Eval(Agents({"orchestrator"}, v1::SEQUENCE_MATCH_EXACT), {});
  EXPECT_FALSE(none.passed());
  EXPECT_EQ(none.explanation(),
            "agent_sequence (exact): expected [orchestrator] but the run had []; they first "
            "differ at position 1: expected \"orchestrator\", but the run had none");
}

TEST(AgentSequenceTest, PrefixAllowsMoreAfterwards) {
  v1::AssertionResult r =
      Eval(Agents({"orchestrator", "executor"}, v1::SEQUENCE_MATCH_PREFIX), ReviewLoop());
  EXPECT_TRUE(r.passed()) << r.explanation();
  EXPECT_THAT(Seqs(r), ElementsAre(2, 5));
  v1::AssertionResult wrong = Eval(Agents({"executor"}, v1::SEQUENCE_MATCH_PREFIX), ReviewLoop());
  EXPECT_FALSE(wrong.passed());
  EXPECT_EQ(wrong.divergence_index(), 0);
  EXPECT_THAT(wrong.explanation(),
              StartsWith("agent_sequence (prefix): expected [executor] but the run had "));
}

TEST(AgentSequenceTest, SubsequencePassesWithOthersBetween) {
  v1::AssertionResult r =
      Eval(Agents({"orchestrator", "reviewer", "reviewer"}, v1::SEQUENCE_MATCH_SUBSEQUENCE),
           ReviewLoop());
  EXPECT_TRUE(r.passed()) << r.explanation();
  EXPECT_THAT(Seqs(r), ElementsAre(2, 11, 17));
  EXPECT_EQ(r.explanation(),
            "agent_sequence (subsequence): found [orchestrator, reviewer, reviewer] in that order "
            "in [orchestrator, executor, executor, reviewer, executor, reviewer] (events #2, #11, "
            "#17)");
}

TEST(AgentSequenceTest, SubsequenceDivergenceIsTheFirstItemNotFoundAfterThePreviousMatch) {
  // orchestrator (#2) then reviewer (#11) match; no orchestrator after #11.
  v1::AssertionResult r = Eval(Agents({"orchestrator", "reviewer", "orchestrator", "executor"},
                                      v1::SEQUENCE_MATCH_SUBSEQUENCE),
                               ReviewLoop());
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.divergence_index(), 2);
  EXPECT_EQ(r.explanation(),
            "agent_sequence (subsequence): expected [orchestrator, reviewer, orchestrator, "
            "executor] but the run had [orchestrator, executor, executor, reviewer, executor, "
            "reviewer]; the expected \"orchestrator\" (item 3) does not occur after \"reviewer\" "
            "(position 4, event #11); it occurs only before that (position 1, event #2)");
  EXPECT_THAT(Seqs(r), ElementsAre(2, 11));

  v1::AssertionResult absent =
      Eval(Agents({"planner"}, v1::SEQUENCE_MATCH_SUBSEQUENCE), ReviewLoop());
  EXPECT_EQ(absent.divergence_index(), 0);
  EXPECT_THAT(absent.explanation(),
              HasSubstr("; the expected \"planner\" (item 1) does not occur at all"));
}

TEST(AgentSequenceTest, LongRunsAreListedShortenedButTheDivergenceIsNamed) {
  std::vector<v1::TraceEvent> events;
  for (int i = 0; i < 100; ++i) AddExchange(&events, i == 70 ? "reviewer" : "executor", "", "", "");
  std::vector<std::string> expected(100, "executor");
  v1::AssertionResult r = Eval(Agents(expected, v1::SEQUENCE_MATCH_EXACT), events);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.divergence_index(), 70);
  EXPECT_THAT(r.actual(), ::testing::EndsWith(", executor, ... and 60 more]"));
  EXPECT_THAT(r.explanation(), ::testing::EndsWith("; they first differ at position 71: expected "
                                                   "\"executor\", got \"reviewer\" (event #71)"));
}

// ---------------------------------------------------------------------------
// phase_transitions

TEST(PhaseTransitionsTest, ReadsTheTargetOfEachTransition) {
  v1::AssertionResult r = Eval(
      Phases({"discovery", "execute", "verification"}, v1::SEQUENCE_MATCH_EXACT), ReviewLoop());
  EXPECT_TRUE(r.passed()) << r.explanation();
  EXPECT_THAT(Seqs(r), ElementsAre(4, 10, 16));
  EXPECT_EQ(r.name(), "phase_transitions");
}

TEST(PhaseTransitionsTest, SkippedPhaseIsExplained) {
  v1::AssertionResult r =
      Eval(Phases({"discovery", "verification"}, v1::SEQUENCE_MATCH_EXACT), ReviewLoop());
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.explanation(),
            "phase_transitions (exact): expected [discovery, verification] but the run had "
            "[discovery, execute, verification]; they first differ at position 2: expected "
            "\"verification\", got \"execute\" (event #10)");
  EXPECT_TRUE(
      Eval(Phases({"discovery", "verification"}, v1::SEQUENCE_MATCH_SUBSEQUENCE), ReviewLoop())
          .passed());
  v1::AssertionResult backwards =
      Eval(Phases({"verification", "execute"}, v1::SEQUENCE_MATCH_SUBSEQUENCE), ReviewLoop());
  EXPECT_FALSE(backwards.passed());
  EXPECT_EQ(backwards.divergence_index(), 1);
}

// ---------------------------------------------------------------------------
// tool_calls

TEST(ToolCallsTest, ArgumentsAreAJsonSubset) {
  v1::AssertionResult r =
      Eval(Calls("executor", {{"read_file", ""}, {"continue", R"({"phase":"verification"})"}},
                 v1::SEQUENCE_MATCH_SUBSEQUENCE),
           ReviewLoop());
  EXPECT_TRUE(r.passed()) << r.explanation();
  EXPECT_THAT(Seqs(r), ElementsAre(6, 15));
  EXPECT_EQ(r.expected(), R"([read_file, continue({"phase":"verification"})])");
  EXPECT_EQ(
      r.actual(),
      R"([read_file({"path":"src/login.py"}), continue({"files":["src/login.py"],"phase":"execute"}), continue({"phase":"verification"})])");
}

TEST(ToolCallsTest, ExactOverEveryAgentsCalls) {
  v1::AssertionResult r = Eval(Calls("",
                                     {{"continue", ""},
                                      {"read_file", ""},
                                      {"continue", R"({"phase":"execute"})"},
                                      {"request_changes", ""},
                                      {"continue", ""}},
                                     v1::SEQUENCE_MATCH_EXACT),
                               ReviewLoop());
  EXPECT_TRUE(r.passed()) << r.explanation();
  EXPECT_THAT(Seqs(r), ElementsAre(3, 6, 9, 12, 15));
}

TEST(ToolCallsTest, WrongArgumentsPointAtTheClosestCall) {
  v1::AssertionResult r =
      Eval(Calls("executor", {{"read_file", ""}, {"continue", R"({"phase":"review"})"}},
                 v1::SEQUENCE_MATCH_SUBSEQUENCE),
           ReviewLoop());
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.divergence_index(), 1);
  EXPECT_EQ(
      r.explanation(),
      R"(tool_calls by executor (subsequence): expected [read_file, continue({"phase":"review"})] )"
      R"(but the run had [read_file({"path":"src/login.py"}), continue({"files":["src/login.py"],"phase":"execute"}), )"
      R"(continue({"phase":"verification"})]; the expected continue({"phase":"review"}) (item 2) )"
      R"(does not occur after read_file({"path":"src/login.py"}) (position 1, event #6); the closest )"
      R"(after it is continue({"files":["src/login.py"],"phase":"execute"}) (event #9): arguments )"
      R"(differ at phase: expected "review", got "execute")");
  EXPECT_THAT(Seqs(r), ElementsAre(6, 9));
}

TEST(ToolCallsTest, ExactMismatchExplainsArguments) {
  v1::AssertionResult r = Eval(
      Calls("reviewer", {{"request_changes", R"({"issues":["XSS"]})"}}, v1::SEQUENCE_MATCH_EXACT),
      ReviewLoop());
  EXPECT_FALSE(r.passed());
  EXPECT_THAT(
      r.explanation(),
      HasSubstr(
          R"j((event #12): arguments differ at issues: expected ["XSS"], got ["SQL injection in login()"])j"));
}

// A call whose arguments are too long to show whole shows the keys the
// expectation checks, not the first 100 bytes (a file's content, sorted
// first, would hide the path the test is about).
TEST(ToolCallsTest, LongArgumentsShowTheKeysTheExpectationNames) {
  std::vector<v1::TraceEvent> events;
  const std::string content(300, 'x');
  AddToolCall(&events, "executor", "write_file",
              absl::StrCat(R"({"content":")", content, R"(","mode":"w","path":"a.py"})"));
  v1::AssertionResult r =
      Eval(Calls("executor", {{"write_file", R"({"path":"b.py"})"}}, v1::SEQUENCE_MATCH_EXACT),
           events);
  EXPECT_FALSE(r.passed());
  EXPECT_THAT(r.explanation(),
              HasSubstr(R"(but the run had [write_file({"path":"a.py", ... 2 more keys})])"));
  EXPECT_THAT(r.explanation(),
              HasSubstr(R"(arguments differ at path: expected "b.py", got "a.py")"));
  EXPECT_THAT(r.explanation(), Not(HasSubstr("xxxx")));

  // A key the expectation names that the call lacks: only the count.
  r = Eval(Calls("executor", {{"write_file", R"({"phase":"x"})"}}, v1::SEQUENCE_MATCH_EXACT),
           events);
  EXPECT_THAT(r.explanation(), HasSubstr(R"(write_file({... 3 keys}))"));
  // Short arguments are shown whole, as before.
  events.clear();
  AddToolCall(&events, "executor", "write_file", R"({"content":"x","path":"a.py"})");
  r = Eval(Calls("executor", {{"write_file", R"({"path":"b.py"})"}}, v1::SEQUENCE_MATCH_EXACT),
           events);
  EXPECT_THAT(r.explanation(), HasSubstr(R"(write_file({"content":"x","path":"a.py"}))"));
}

TEST(ToolCallsTest, ArgumentsThatAreNotJsonNeverSatisfyAnArgumentCheck) {
  std::vector<v1::TraceEvent> events = ReviewLoop();
  (*events[14].mutable_attributes())["gen_ai.tool.call.arguments"] = "phase=verification";
  v1::AssertionResult r = Eval(Calls("executor",
                                     {{"read_file", ""},
                                      {"continue", R"({"phase":"execute"})"},
                                      {"continue", R"({"phase":"verification"})"}},
                                     v1::SEQUENCE_MATCH_EXACT),
                               events);
  EXPECT_FALSE(r.passed());
  EXPECT_THAT(r.explanation(),
              HasSubstr(R"(; they first differ at position 3: expected )"
                        R"(continue({"phase":"verification"}), got continue(phase=verification) )"
                        R"((event #15): its arguments are not valid JSON)"));
  // Without an argument check the name is enough.
  EXPECT_TRUE(
      Eval(Calls("executor", {{"continue", ""}}, v1::SEQUENCE_MATCH_SUBSEQUENCE), events).passed());
}

TEST(ToolCallsTest, ExpectedArgumentsMustBeAJsonObject) {
  EXPECT_THAT(
      Evaluate(Calls("", {{"continue", ""}, {"continue", "[1,2]"}}, v1::SEQUENCE_MATCH_EXACT),
               TraceView{nullptr, nullptr}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               StartsWith("tool_calls.calls[1].arguments: not a JSON object: \"[1,2]\"")));
  EXPECT_THAT(
      Evaluate(Calls("", {{"", ""}}, v1::SEQUENCE_MATCH_EXACT), TraceView{}),
      StatusIs(absl::StatusCode::kInvalidArgument, "tool_calls.calls[0].name: must not be empty"));
}

// ---------------------------------------------------------------------------
// feedback_propagated

TEST(FeedbackPropagatedTest, PassesWhenALaterRequestCarriesTheKeyword) {
  v1::AssertionResult r = Eval(Feedback("reviewer", "executor", "SQL injection"), ReviewLoop());
  EXPECT_TRUE(r.passed()) << r.explanation();
  EXPECT_THAT(Seqs(r), ElementsAre(11, 14));
  EXPECT_EQ(r.explanation(),
            "feedback_propagated: reviewer's answer in exchange #11 has \"SQL injection\" and "
            "executor's later request in exchange #14 carries it");
}

TEST(FeedbackPropagatedTest, ToolCallArgumentsCountAsTheAnswer) {
  std::vector<v1::TraceEvent> events = ReviewLoop();
  events[10].mutable_response()->mutable_message()->set_content("See the issues.");
  EXPECT_TRUE(Eval(Feedback("reviewer", "executor", "SQL injection"), events).passed());
}

TEST(FeedbackPropagatedTest, FirstHalfFailsWhenTheSourceNeverSaysIt) {
  v1::AssertionResult r = Eval(Feedback("reviewer", "executor", "XSS"), ReviewLoop());
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.explanation(),
            "feedback_propagated: expected \"XSS\" to go from reviewer to executor, but no answer "
            "of reviewer has it: its 2 exchanges (#11, #17) lack it in their response content and "
            "tool call arguments");
  EXPECT_THAT(Seqs(r), ElementsAre(11, 17));

  v1::AssertionResult nobody = Eval(Feedback("planner", "executor", "XSS"), ReviewLoop());
  EXPECT_EQ(nobody.explanation(),
            "feedback_propagated: expected \"XSS\" to go from planner to executor, but planner "
            "made no exchanges (agents with exchanges: orchestrator, executor, reviewer)");
}

TEST(FeedbackPropagatedTest, SecondHalfFailsWhenNoLaterRequestCarriesIt) {
  std::vector<v1::TraceEvent> events = ReviewLoop();
  events[13].mutable_request()->mutable_messages(1)->set_content("Please fix the problems.");
  v1::AssertionResult r = Eval(Feedback("reviewer", "executor", "SQL injection"), events);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.explanation(),
            "feedback_propagated: expected \"SQL injection\" to go from reviewer to executor: "
            "reviewer's answer in exchange #11 has it (#17 lacks it), but executor's only "
            "exchange after #11 (#14) does not carry it in any message of its request");
  EXPECT_THAT(Seqs(r), ElementsAre(11, 14));

  v1::AssertionResult too_late = Eval(Feedback("executor", "orchestrator", "Fixed"), events);
  EXPECT_FALSE(too_late.passed());
  EXPECT_EQ(too_late.explanation(),
            "feedback_propagated: expected \"Fixed\" to go from executor to orchestrator: "
            "executor's answer in exchange #14 has it (#5, #8 lack it), but orchestrator made no "
            "exchange after #14");
}

TEST(FeedbackPropagatedTest, OnlyLaterExchangesOfTheTargetCount) {
  v1::AssertionResult r = Eval(Feedback("executor", "reviewer", "login.py"), ReviewLoop());
  EXPECT_TRUE(r.passed()) << r.explanation();  // #5's call args -> #11's request
  EXPECT_THAT(Seqs(r), ElementsAre(5, 11));
  v1::AssertionResult back = Eval(Feedback("reviewer", "orchestrator", "SQL"), ReviewLoop());
  EXPECT_FALSE(back.passed());
  EXPECT_THAT(back.explanation(), HasSubstr("orchestrator made no exchange after #11"));
}

TEST(FeedbackPropagatedTest, AllFieldsAreRequired) {
  EXPECT_THAT(Evaluate(Feedback("reviewer", "executor", ""), TraceView{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "feedback_propagated.keyword: must not be empty"));
}

// ---------------------------------------------------------------------------
// count

TEST(CountTest, EveryComparison) {
  const std::vector<v1::TraceEvent> events = ReviewLoop();  // 5 tool calls
  struct Case {
    v1::Comparison op;
    int64_t n;
    bool passes;
  };
  for (const Case& c : {Case{v1::COMPARISON_EQ, 5, true}, Case{v1::COMPARISON_EQ, 4, false},
                        Case{v1::COMPARISON_NE, 5, false}, Case{v1::COMPARISON_NE, 0, true},
                        Case{v1::COMPARISON_LT, 6, true}, Case{v1::COMPARISON_LT, 5, false},
                        Case{v1::COMPARISON_LE, 5, true}, Case{v1::COMPARISON_LE, 4, false},
                        Case{v1::COMPARISON_GT, 4, true}, Case{v1::COMPARISON_GT, 5, false},
                        Case{v1::COMPARISON_GE, 5, true}, Case{v1::COMPARISON_GE, 6, false}}) {
    v1::AssertionResult r = Eval(CountOf("tool_call", c.op, c.n), events);
    EXPECT_EQ(r.passed(), c.passes)
        << v1::Comparison_Name(c.op) << " " << c.n << ": " << r.explanation();
    EXPECT_EQ(r.actual(), "5");
  }
}

TEST(CountTest, ExplainsWhatMatched) {
  v1::Assertion a = CountOf("tool_call", v1::COMPARISON_GE, 1);
  a.mutable_count()->mutable_filter()->set_agent("executor");
  a.mutable_count()->mutable_filter()->set_tool("continue");
  v1::AssertionResult pass = Eval(a, ReviewLoop());
  EXPECT_TRUE(pass.passed());
  EXPECT_EQ(pass.explanation(),
            "count (kind=tool_call agent=executor tool=continue): 2 events matched (#9, #15), as "
            "expected (at least 1)");
  EXPECT_EQ(pass.expected(), ">= 1");
  EXPECT_THAT(Seqs(pass), ElementsAre(9, 15));

  v1::AssertionResult fail = Eval(CountOf("phase_transition", v1::COMPARISON_EQ, 0), ReviewLoop());
  EXPECT_FALSE(fail.passed());
  EXPECT_EQ(fail.explanation(),
            "count (kind=phase_transition): expected exactly 0 events to match, but 3 (#4, #10, "
            "#16) did");
  v1::AssertionResult none = Eval(CountOf("miss", v1::COMPARISON_GE, 1), ReviewLoop());
  EXPECT_EQ(none.explanation(),
            "count (kind=miss): expected at least 1 event to match, but none did");
}

TEST(CountTest, InvalidFilterOrComparisonIsAnError) {
  v1::Assertion a = CountOf("", v1::COMPARISON_EQ, 0);
  (*a.mutable_count()->mutable_filter()->mutable_attribute_patterns())["gen_ai.tool.name"] = "[";
  EXPECT_THAT(Evaluate(a, TraceView{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("count.filter.attribute_patterns[\"gen_ai.tool.name\"]: invalid "
                                  "RE2 pattern: ")));
  v1::Assertion bad = CountOf("miss", static_cast<v1::Comparison>(42), 0);
  EXPECT_THAT(Evaluate(bad, TraceView{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "count.comparison: unknown Comparison value 42"));
}

// ---------------------------------------------------------------------------
// no_misses, all_consumed

TEST(NoMissesTest, ListsEachMissWithItsReport) {
  v1::Assertion a;
  a.set_no_misses(true);
  EXPECT_TRUE(Eval(a, ReviewLoop()).passed());
  EXPECT_EQ(Eval(a, ReviewLoop()).explanation(), "no_misses: the run had no misses");

  std::vector<v1::TraceEvent> events = ReviewLoop();
  events.pop_back();
  Add(&events, "miss", "executor",
      {{"understudy.miss.report",
        "no recording matches agent executor's request; closest #4 differs at "
        "messages[1].content"}});
  Add(&events, "miss", "reviewer");
  v1::AssertionResult r = Eval(a, events);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.explanation(),
            "no_misses: the run had 2 misses: event #19 (agent executor): no recording matches "
            "agent executor's request; closest #4 differs at messages[1].content; event #20 "
            "(agent reviewer)");
  EXPECT_THAT(Seqs(r), ElementsAre(19, 20));
  EXPECT_EQ(r.actual(), "2 misses");
}

TEST(AllConsumedTest, NeedsTheSummaryOfAnEndedRun) {
  v1::Assertion a;
  a.set_all_consumed(true);
  EXPECT_THAT(Evaluate(a, TraceView{nullptr, nullptr}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("the run is still active; end it first")));
  v1::RunSummary summary;
  EXPECT_TRUE(Eval(a, ReviewLoop(), &summary).passed());
  v1::ExchangeRef* ref = summary.add_unconsumed();
  ref->set_seq(3);
  ref->set_agent("reviewer");
  summary.add_unconsumed()->set_seq(4);
  v1::AssertionResult r = Eval(a, ReviewLoop(), &summary);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.explanation(),
            "all_consumed: 2 recorded exchanges of the session were never used: #3 (agent "
            "reviewer), #4");
}

// ---------------------------------------------------------------------------
// Evaluate, EvaluateAll

TEST(EvaluateTest, MalformedAssertionsAreErrors) {
  EXPECT_THAT(Evaluate(v1::Assertion(), TraceView{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("assertion: no check set")));
  v1::Assertion off;
  off.set_no_misses(false);
  EXPECT_THAT(Evaluate(off, TraceView{}),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("no_misses: must be true")));
  v1::Assertion match = Agents({"a"}, static_cast<v1::SequenceMatch>(9));
  EXPECT_THAT(Evaluate(match, TraceView{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("agent_sequence.match: unknown SequenceMatch value 9")));
}

TEST(EvaluateTest, NamesAndOrdering) {
  v1::Assertion a = Phases({"discovery", "execute"}, v1::SEQUENCE_MATCH_PREFIX);
  a.set_name("reaches execution");
  std::vector<v1::TraceEvent> events = ReviewLoop();
  std::reverse(events.begin(), events.end());  // read by seq, not by position
  v1::AssertionResult r = Eval(a, events);
  EXPECT_EQ(r.name(), "reaches execution");
  EXPECT_TRUE(r.passed()) << r.explanation();
}

TEST(EvaluateAllTest, ReportsEveryResult) {
  std::vector<v1::Assertion> assertions = {
      Agents({"orchestrator", "executor"}, v1::SEQUENCE_MATCH_SUBSEQUENCE),
      CountOf("miss", v1::COMPARISON_EQ, 1), Feedback("reviewer", "executor", "SQL injection")};
  assertions[1].set_name("one miss");
  const std::vector<v1::TraceEvent> events = ReviewLoop();
  absl::StatusOr<v1::AssertResponse> response = EvaluateAll(assertions, TraceView{&events});
  ASSERT_THAT(response, IsOk());
  EXPECT_FALSE(response->passed());
  ASSERT_EQ(response->results_size(), 3);
  EXPECT_EQ(response->report(),
            "PASS agent_sequence\n"
            "FAIL one miss: count (kind=miss): expected exactly 1 event to match, but none did\n"
            "PASS feedback_propagated");

  assertions.erase(assertions.begin() + 1);
  v1::AssertRequest request;
  request.mutable_assertions()->Add(assertions.begin(), assertions.end());
  response = EvaluateAll(request.assertions(), TraceView{&events});
  ASSERT_THAT(response, IsOk());
  EXPECT_TRUE(response->passed());
}

TEST(EvaluateAllTest, ErrorsNameTheAssertion) {
  std::vector<v1::Assertion> assertions = {
      CountOf("miss", v1::COMPARISON_EQ, 0),
      Calls("executor", {{"continue", "phase: verification"}}, v1::SEQUENCE_MATCH_EXACT)};
  EXPECT_THAT(EvaluateAll(assertions, TraceView{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("assertions[1].tool_calls.calls[0].arguments: not a JSON "
                                  "object")));
  EXPECT_THAT(EvaluateAll(std::vector<v1::Assertion>{}, TraceView{}), IsOk());
}

TEST(EvaluateAllTest, SpecAssertionsContributeOneResultPerItem) {
  v1::Assertion spec;
  spec.set_spec(R"yaml(
assertions:
  - no_misses: true
  - name: executor verifies
    select: {kind: tool_call, agent: executor, tool: continue}
    position: last
    expect:
      attributes:
        gen_ai.tool.call.arguments: {json_subset: {phase: verification}}
)yaml");
  const std::vector<v1::TraceEvent> events = ReviewLoop();
  absl::StatusOr<v1::AssertResponse> response =
      EvaluateAll(std::vector<v1::Assertion>{spec, CountOf("exchange", v1::COMPARISON_EQ, 6)},
                  TraceView{&events});
  ASSERT_THAT(response, IsOk());
  EXPECT_TRUE(response->passed()) << response->report();
  EXPECT_EQ(response->report(), "PASS no_misses\nPASS executor verifies\nPASS count");

  // Evaluate gives one combined verdict for the document.
  absl::StatusOr<v1::AssertionResult> combined = Evaluate(spec, TraceView{&events});
  ASSERT_THAT(combined, IsOk());
  EXPECT_TRUE(combined->passed());
  EXPECT_EQ(combined->name(), "spec");
  EXPECT_EQ(combined->explanation(),
            "spec: 2 passed, 0 failed of 2 checks\nPASS no_misses\nPASS executor verifies");

  v1::Assertion broken;
  broken.set_spec("assertions:\n  - no_mises: true\n");
  EXPECT_THAT(EvaluateAll(std::vector<v1::Assertion>{broken}, TraceView{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "assertions[0].spec:2:5: error: assertions[0].no_mises: unknown field (did you "
                       "mean \"no_misses\"?)"));
}

// A simulated terminal agent (`understudy sim`) emits sim.* events: its
// prompts count as agent turns unless model-backed (their exchange already
// counts), and its tool events as tool calls.
std::vector<v1::TraceEvent> SimulatedRun() {
  std::vector<v1::TraceEvent> ev;
  AddExchange(&ev, "orchestrator", "", "Plan the work.", "", "continue", "{}");
  Add(&ev, "sim.state", "coder", {{"understudy.sim.state", "WORKING"}});
  Add(&ev, "sim.prompt", "coder", {{"understudy.sim.prompt", "deploy"}});
  Add(&ev, "sim.tool_call", "coder",
      {{"gen_ai.tool.name", "Bash"}, {"gen_ai.tool.call.arguments", R"({"command":"ls"})"}});
  Add(&ev, "sim.tool_result", "coder", {{"gen_ai.tool.name", "Bash"}});
  // A model-backed prompt: its exchange is the turn.
  Add(&ev, "sim.prompt", "coder",
      {{"understudy.sim.prompt", "think"}, {"understudy.sim.model", "true"}});
  AddExchange(&ev, "coder", "", "think", "", "read_file", R"({"path":"a.txt"})");
  AddToolCall(&ev, "coder", "read_file", R"({"path":"a.txt"})");
  // The sim acting on that answer: the same call, by its id.
  Add(&ev, "sim.tool_call", "coder",
      {{"gen_ai.tool.name", "read_file"}, {"gen_ai.tool.call.id", ev.back().attributes().at("gen_ai.tool.call.id")},
       {"gen_ai.tool.call.arguments", R"({"path":"a.txt"})"}});
  Add(&ev, "sim.prompt", "reviewer", {{"understudy.sim.prompt", "review"}});
  return ev;
}

TEST(AgentSequenceTest, CountsSimulatedPromptsButNotModelBackedOnesTwice) {
  const std::vector<v1::TraceEvent> events = SimulatedRun();
  v1::AssertionResult r =
      Eval(Agents({"orchestrator", "coder", "coder", "reviewer"}, v1::SEQUENCE_MATCH_EXACT), events);
  EXPECT_TRUE(r.passed()) << r.explanation();
  EXPECT_THAT(Seqs(r), ElementsAre(1, 3, 7, 10));
  r = Eval(Agents({"orchestrator", "coder", "reviewer"}, v1::SEQUENCE_MATCH_EXACT, true), events);
  EXPECT_TRUE(r.passed()) << r.explanation();
}

TEST(AgentSequenceTest, AnA2aCallIsTheCalledAgentsTurnInRecordAndReplayAlike) {
  auto call = [](std::vector<v1::TraceEvent>* events, const std::string& kind) {
    Add(events, kind, "orchestrator", {{"understudy.a2a.agent", "researcher"}});
  };
  // Recorded: the researcher's own model exchanges happen inside the call.
  std::vector<v1::TraceEvent> recorded;
  AddExchange(&recorded, "orchestrator", "", "q", "a");
  Add(&recorded, "a2a_exchange", "orchestrator", {{"understudy.a2a.agent", "researcher"}});
  call(&recorded, "agent_call");
  AddExchange(&recorded, "researcher", "", "q", "a");
  AddExchange(&recorded, "researcher", "", "q", "a");
  call(&recorded, "agent_result");
  AddExchange(&recorded, "orchestrator", "", "q", "a");
  AddExchange(&recorded, "researcher", "", "q", "a");  // outside any call: a turn of its own
  // Replayed: the call is answered from the recording, the researcher never runs.
  std::vector<v1::TraceEvent> replayed;
  AddExchange(&replayed, "orchestrator", "", "q", "a");
  call(&replayed, "agent_call");
  call(&replayed, "agent_result");
  AddExchange(&replayed, "orchestrator", "", "q", "a");
  AddExchange(&replayed, "researcher", "", "q", "a");
  const v1::Assertion expected = Agents({"orchestrator", "researcher", "orchestrator", "researcher"},
                                        v1::SEQUENCE_MATCH_EXACT);
  v1::AssertionResult r = Eval(expected, recorded);
  EXPECT_TRUE(r.passed()) << r.explanation();
  EXPECT_THAT(Seqs(r), ElementsAre(1, 3, 7, 8));
  r = Eval(expected, replayed);
  EXPECT_TRUE(r.passed()) << r.explanation();
}

// A model-backed sim's tool call is traced twice — the model's tool_call and
// the sim's sim.tool_call with the same id — and counted once.
TEST(ToolCallsTest, CountsSimulatedToolCalls) {
  const std::vector<v1::TraceEvent> events = SimulatedRun();
  v1::AssertionResult r =
      Eval(Calls("coder", {{"Bash", R"({"command":"ls"})"}, {"read_file", ""}},
                 v1::SEQUENCE_MATCH_EXACT),
           events);
  EXPECT_TRUE(r.passed()) << r.explanation();
  EXPECT_THAT(Seqs(r), ElementsAre(4, 8));
  r = Eval(Calls("coder", {{"Bash", R"({"command":"rm"})"}}, v1::SEQUENCE_MATCH_PREFIX), events);
  EXPECT_FALSE(r.passed());
  EXPECT_THAT(r.explanation(), HasSubstr("arguments differ"));
}

// The view a reader following `plan` builds: kinds no check reads are left
// out; events of which a check reads only the header are references without
// the whole event (when the agent field is set, as the plan requires).
std::vector<EventRef> Planned(const std::vector<v1::TraceEvent>& events, const ReadPlan& plan) {
  std::vector<EventRef> out;
  for (const v1::TraceEvent& e : events) {
    if (!plan.Reads(e.kind())) continue;
    const bool whole = e.agent().empty() || plan.ReadsBody(e.kind());
    out.push_back({e.seq(), e.kind(), e.agent(), whole ? &e : nullptr});
  }
  return out;
}

TEST(ReadPlanTest, NamesWhatEachCheckReads) {
  google::protobuf::RepeatedPtrField<v1::Assertion> a;
  *a.Add() = Agents({"executor"}, v1::SEQUENCE_MATCH_PREFIX);
  *a.Add() = CountOf("tool_call", v1::COMPARISON_GE, 1);
  a.Add()->set_no_misses(true);
  ReadPlan plan = ReadPlan::For(a);
  EXPECT_TRUE(plan.Reads("exchange"));
  EXPECT_FALSE(plan.ReadsBody("exchange"));
  EXPECT_TRUE(plan.Reads("tool_call"));
  EXPECT_FALSE(plan.ReadsBody("tool_call"));
  EXPECT_TRUE(plan.ReadsBody("miss"));
  EXPECT_FALSE(plan.Reads("phase_transition"));
  EXPECT_FALSE(plan.Reads("run_started"));
  // A simulated prompt is read whole, for understudy.sim.model.
  EXPECT_TRUE(plan.ReadsBody("sim.prompt"));
  EXPECT_FALSE(plan.Reads("sim.tool_call"));

  *a.Add() = Feedback("reviewer", "executor", "validation");
  plan = ReadPlan::For(a);
  EXPECT_TRUE(plan.ReadsBody("exchange"));

  v1::Assertion by_agent = CountOf("", v1::COMPARISON_GE, 1);
  by_agent.mutable_count()->mutable_filter()->set_agent("executor");
  google::protobuf::RepeatedPtrField<v1::Assertion> any;
  *any.Add() = by_agent;
  plan = ReadPlan::For(any);
  EXPECT_TRUE(plan.Reads("custom"));
  EXPECT_TRUE(plan.ReadsBody("custom"));
}

// Whatever the assertions, evaluating them on the events their plan reads
// gives the same response, byte for byte, as on the whole trace: passing
// and failing checks of every kind.
TEST(ReadPlanTest, PlannedReadsGiveTheSameResponseAsTheWholeTrace) {
  std::vector<v1::TraceEvent> events = ReviewLoop();
  Add(&events, "miss", "executor", {{"understudy.miss.report", "messages[1].content differs"}});
  Add(&events, "custom", "", {{"gen_ai.agent.name", "reviewer"}});
  v1::Assertion by_agent = CountOf("", v1::COMPARISON_EQ, 3);
  by_agent.mutable_count()->mutable_filter()->set_agent("reviewer");
  v1::Assertion tool_by_attr = CountOf("tool_call", v1::COMPARISON_GE, 1);
  (*tool_by_attr.mutable_count()->mutable_filter()->mutable_attribute_patterns())
      ["gen_ai.tool.call.arguments"] = "verification";
  v1::Assertion spec;
  spec.set_spec("assertions:\n  - count: {select: {kind: custom}, eq: 1}\n");
  v1::Assertion no_misses;
  no_misses.set_no_misses(true);
  const std::vector<v1::Assertion> checks = {
      Agents({"orchestrator", "executor"}, v1::SEQUENCE_MATCH_PREFIX),
      Agents({"reviewer", "orchestrator"}, v1::SEQUENCE_MATCH_EXACT, /*collapse=*/true),
      Phases({"execute", "verification"}, v1::SEQUENCE_MATCH_SUBSEQUENCE),
      Calls("", {{"continue", R"({"phase":"verification"})"}}, v1::SEQUENCE_MATCH_SUBSEQUENCE),
      Calls("executor", {{"continue", ""}}, v1::SEQUENCE_MATCH_EXACT),
      Feedback("reviewer", "executor", "validation"),
      Feedback("executor", "reviewer", "no such words"),
      CountOf("tool_call", v1::COMPARISON_GE, 1),
      CountOf("", v1::COMPARISON_LT, 3),
      CountOf("exchange", v1::COMPARISON_EQ, 6),
      by_agent,
      tool_by_attr,
      no_misses,
      spec,
  };
  int failed = 0;
  for (size_t i = 0; i < checks.size(); ++i) {
    SCOPED_TRACE(i);
    google::protobuf::RepeatedPtrField<v1::Assertion> one;
    *one.Add() = checks[i];
    const std::vector<EventRef> planned = Planned(events, ReadPlan::For(one));
    absl::StatusOr<v1::AssertResponse> whole = EvaluateAll(one, TraceView{&events});
    TraceView part_view;
    part_view.refs = &planned;
    absl::StatusOr<v1::AssertResponse> part = EvaluateAll(one, part_view);
    ASSERT_THAT(whole, IsOk());
    ASSERT_THAT(part, IsOk());
    EXPECT_EQ(part->SerializeAsString(), whole->SerializeAsString())
        << "planned: " << part->report() << "\nwhole: " << whole->report();
    if (!whole->passed()) ++failed;
  }
  // The list holds both verdicts, so equal responses are not a given.
  EXPECT_GT(failed, 2);
  EXPECT_LT(failed, static_cast<int>(checks.size()) - 2);

  // All at once: the plan is the union.
  google::protobuf::RepeatedPtrField<v1::Assertion> all(checks.begin(), checks.end());
  const std::vector<EventRef> planned = Planned(events, ReadPlan::For(all));
  TraceView part_view;
  part_view.refs = &planned;
  EXPECT_EQ(EvaluateAll(all, part_view)->SerializeAsString(),
            EvaluateAll(all, TraceView{&events})->SerializeAsString());
}

}  // namespace
}  // namespace trace
}  // namespace understudy
