// The executor/reviewer loop, recorded from the fake upstream, replayed and
// asserted on from C++ with the GoogleTest helpers of clients/cpp — agent
// sequence, tool calls, phase transitions, feedback propagation — and with
// `understudy assert` and `understudy show` on the same run. Broken
// expectations are checked for the words a newcomer reads.
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "clients/cpp/understudy_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"
#include "tests/e2e/e2e_test_base.h"

namespace understudy {
namespace e2e {
namespace {

using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using test::ExpectedCall;
using test::RunTrace;
using test::ScopedRun;

// No rules: the answers come from the recording; the extractor turns
// continue(phase=...) calls into phase_transition events.
constexpr char kPhases[] = R"(schema: understudy.scenario/v1
name: phases
extractors:
  phase: {tool: continue, argument: phase}
)";

const std::vector<std::string> kLoop = {"orchestrator", "executor", "reviewer",
                                        "orchestrator", "executor", "reviewer"};

// A spec as a user would keep it next to the test.
constexpr char kSpec[] = R"(assertions:
  - name: the executor hands over to verification
    select: {kind: tool_call, agent: orchestrator, tool: continue}
    position: last
    expect:
      attributes:
        gen_ai.tool.call.arguments: {json_subset: {phase: verification}}
  - agent_sequence: {agents: [orchestrator, executor, reviewer], match: prefix}
  - phase_transitions: [execute, verification]
  - tool_calls: {agent: executor, match: subsequence, calls: [write_file, run_tests]}
  - feedback_propagated: {from: reviewer, to: executor, keyword: missing input validation}
  - count: {select: {kind: exchange}, eq: 6}
  - no_misses: true
)";

class AssertionsTest : public E2eTest {
 protected:
  // Records the loop, starts a replaying server and plays the loop in a
  // run with the phase extractor. Fails the test on any error.
  void ReplayLoop() {
    std::vector<StepResult> golden;
    RecordGolden("golden", &golden, &record_run_);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_OK_AND_ASSIGN(server_, StartServer());
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    ASSERT_OK_AND_ASSIGN(ScopedRun run,
                         ScopedRun::Start(channel_, test::Replay("golden", kPhases)));
    run_.emplace(std::move(run));
    Clients c(channel_);
    ASSERT_OK_AND_ASSIGN(std::vector<StepResult> steps, RunAgentLoop(c, run_->id()));
    ASSERT_EQ(steps.size(), golden.size());
  }

  std::string record_run_;
  std::unique_ptr<ServerProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::optional<ScopedRun> run_;
};

TEST_F(AssertionsTest, ReplayedReviewLoopPassesEveryCheck) {
  ReplayLoop();
  ASSERT_FALSE(HasFatalFailure());
  RunTrace trace = run_->trace();

  EXPECT_THAT(trace, test::HasAgentSequence(kLoop));
  EXPECT_THAT(trace, test::HasAgentSequence({"orchestrator", "reviewer"},
                                            v1::SEQUENCE_MATCH_SUBSEQUENCE));
  EXPECT_THAT(trace, test::HasToolCalls("orchestrator", {{"continue", R"({"phase":"execute"})"},
                                                         {"continue", R"({"phase":"verification"})"}}));
  EXPECT_THAT(trace, test::HasToolCalls("executor", {{"write_file", R"({"path":"sum.py"})"},
                                                     {"run_tests", R"({"verbose":false})"},
                                                     {"write_file"},
                                                     {"run_tests"}}));
  EXPECT_THAT(trace, test::HasPhaseTransitions({"execute", "verification"}));
  EXPECT_THAT(trace, test::PropagatesFeedback("reviewer", "executor", "missing input validation"));
  EXPECT_THAT(trace, test::HasNoMisses());
  EXPECT_THAT(trace, test::SatisfiesSpec(kSpec));
  EXPECT_THAT(trace, test::Satisfies(test::Count(test::Kind({"agent_execution"}),
                                                 v1::COMPARISON_EQ, 6)));
  // The negations read as well as the matchers.
  EXPECT_THAT(trace, Not(test::HasPhaseTransitions({"verification"})));
  EXPECT_THAT(trace, Not(test::PropagatesFeedback("executor", "reviewer", "no such words")));

  // The events behind the verdicts are there to read too.
  ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> results,
                       trace.Events(test::Kind({"tool_result"})));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].agent(), "orchestrator");
  EXPECT_THAT(results[0].attributes().at("gen_ai.tool.call.result"),
              HasSubstr("missing input validation"));

  ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, run_->End());
  EXPECT_EQ(summary.run().served(), 6);
  EXPECT_THAT(trace, test::ConsumedAll());
  EXPECT_TRUE(test::Passes(trace, {test::NoMisses(), test::AllConsumed()}));
}

TEST_F(AssertionsTest, BrokenExpectationsPrintWhatDifferedAndWhere) {
  ReplayLoop();
  ASSERT_FALSE(HasFatalFailure());
  RunTrace trace = run_->trace();

  // What a newcomer sees when EXPECT_THAT fails: the expectation, then the
  // run and the server's explanation.
  const auto wrong_order =
      test::HasAgentSequence({"orchestrator", "reviewer", "executor"}, v1::SEQUENCE_MATCH_PREFIX);
  EXPECT_EQ(::testing::DescribeMatcher<const RunTrace&>(wrong_order),
            "passes agent_sequence (prefix) [orchestrator, reviewer, executor]");
  EXPECT_NONFATAL_FAILURE(
      EXPECT_THAT(trace, wrong_order),
      "Expected: passes agent_sequence (prefix) [orchestrator, reviewer, executor]");
  ::testing::StringMatchResultListener listener;
  EXPECT_FALSE(wrong_order.MatchAndExplain(trace, &listener));
  std::cout << "A broken agent_sequence expectation reads:\n  " << listener.str() << "\n";
  EXPECT_THAT(listener.str(),
              AllOf(StartsWith("which fails: agent_sequence (prefix)"),
                    HasSubstr("expected [orchestrator, reviewer, executor]"),
                    HasSubstr("first differ at position 2"),
                    HasSubstr("expected \"reviewer\", got \"executor\""),
                    ContainsRegex("event #[0-9]+")));

  // A tool call with the wrong argument names the argument.
  ::testing::StringMatchResultListener calls;
  EXPECT_FALSE(test::HasToolCalls("orchestrator", {{"continue", R"({"phase":"execute"})"},
                                                   {"continue", R"({"phase":"done"})"}})
                   .MatchAndExplain(trace, &calls));
  std::cout << "A broken tool_calls expectation reads:\n  " << calls.str() << "\n";
  EXPECT_THAT(calls.str(), AllOf(HasSubstr("tool_calls by orchestrator (exact)"),
                                 HasSubstr("position 2"), HasSubstr("arguments differ"),
                                 HasSubstr("done"), HasSubstr("verification")));

  ::testing::StringMatchResultListener phases;
  EXPECT_FALSE(
      test::HasPhaseTransitions({"execute", "review", "verification"}).MatchAndExplain(trace, &phases));
  EXPECT_THAT(phases.str(), AllOf(HasSubstr("phase_transitions (exact)"), HasSubstr("position 2"),
                                  HasSubstr("\"review\"")));

  // Feedback that never reached the executor says which answer had it.
  ::testing::StringMatchResultListener feedback;
  EXPECT_FALSE(
      test::PropagatesFeedback("reviewer", "executor", "APPROVED").MatchAndExplain(trace, &feedback));
  std::cout << "A broken feedback_propagated expectation reads:\n  " << feedback.str() << "\n";
  EXPECT_THAT(feedback.str(), AllOf(HasSubstr("feedback_propagated"), HasSubstr("\"APPROVED\""),
                                    HasSubstr("reviewer"), HasSubstr("executor")));

  // Passes() carries the whole report: every check, PASS or FAIL.
  ::testing::AssertionResult all =
      test::Passes(trace, {test::NoMisses(), test::AgentSequence({"executor"})});
  EXPECT_FALSE(all);
  EXPECT_THAT(all.message(), AllOf(HasSubstr("PASS no_misses"), HasSubstr("FAIL agent_sequence")));

  // A malformed assertion is an error naming the field, not a failed check.
  ::testing::StringMatchResultListener malformed;
  EXPECT_FALSE(test::HasToolCalls("", {{"continue", "[1, 2]"}}).MatchAndExplain(trace, &malformed));
  EXPECT_THAT(malformed.str(), AllOf(HasSubstr("could not be checked"), HasSubstr("INVALID_ARGUMENT"),
                                     HasSubstr("calls[0].arguments")));
  // An unknown run is named.
  RunTrace nowhere(channel_, "no-such-run");
  ::testing::StringMatchResultListener unknown;
  EXPECT_FALSE(test::HasNoMisses().MatchAndExplain(nowhere, &unknown));
  EXPECT_THAT(unknown.str(), AllOf(HasSubstr("NOT_FOUND"), HasSubstr("no-such-run")));
}

TEST_F(AssertionsTest, AssertCommandChecksTheRunFromTheDatabaseAndTheServer) {
  ReplayLoop();
  ASSERT_FALSE(HasFatalFailure());
  const std::string run = run_->id();
  const std::string spec = Path("checks.yaml");
  WriteFile(spec, kSpec);

  // Live, through the server.
  ASSERT_OK_AND_ASSIGN(ProcessResult live,
                       Cli({"assert", "--run", run, "--addr", server_->address(), spec}));
  EXPECT_EQ(live.exit_code, 0) << live.out << live.err;
  EXPECT_THAT(live.out, AllOf(HasSubstr("PASS the executor hands over to verification\n"),
                              HasSubstr("PASS feedback_propagated\n"),
                              HasSubstr("7 of 7 checks passed\n")));

  ASSERT_OK(run_->End().status());
  ASSERT_OK_AND_ASSIGN(int exit, server_->Terminate());
  ASSERT_EQ(exit, 0);

  // Afterwards, from the database.
  ASSERT_OK_AND_ASSIGN(ProcessResult stored, Cli({"assert", "--run", run, "--db", db_path(), spec}));
  EXPECT_EQ(stored.exit_code, 0) << stored.out << stored.err;
  EXPECT_EQ(stored.out, live.out);

  // A failing check: exit 1, the explanation on its FAIL line.
  const std::string broken = Path("broken.yaml");
  WriteFile(broken, R"(assertions:
  - phase_transitions: [execute, review, verification]
  - all_consumed: true
)");
  ASSERT_OK_AND_ASSIGN(ProcessResult failed,
                       Cli({"assert", "--run", run, "--db", db_path(), broken}));
  EXPECT_EQ(failed.exit_code, 1) << failed.err;
  EXPECT_THAT(failed.out, AllOf(HasSubstr("FAIL phase_transitions: phase_transitions (exact)"),
                                HasSubstr("PASS all_consumed\n"),
                                HasSubstr("1 of 2 checks passed\n")));

  // --json: the AssertResponse.
  ASSERT_OK_AND_ASSIGN(ProcessResult json,
                       Cli({"assert", "--run", run, "--db", db_path(), broken, "--json"}));
  EXPECT_EQ(json.exit_code, 1);
  EXPECT_THAT(json.out, AllOf(StartsWith("{"), HasSubstr("\"passed\":false"),
                              HasSubstr("\"divergence_index\"")));

  // An invalid spec: exit 2, every problem with its line, nothing checked.
  const std::string invalid = Path("invalid.yaml");
  WriteFile(invalid, R"(assertions:
  - agent_sequense: [a]
  - count: {select: {kind: exchange}, eq: many}
)");
  ASSERT_OK_AND_ASSIGN(ProcessResult bad, Cli({"assert", "--run", run, "--db", db_path(), invalid}));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, AllOf(HasSubstr(absl::StrCat(invalid, ":2:")),
                             HasSubstr("did you mean \"agent_sequence\""),
                             HasSubstr(absl::StrCat(invalid, ":3:"))));
  EXPECT_EQ(bad.out, "");

  // Unknown run, missing database, missing spec, unreachable server: exit 3.
  ASSERT_OK_AND_ASSIGN(ProcessResult unknown,
                       Cli({"assert", "--run", "no-such-run", "--db", db_path(), spec}));
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_THAT(unknown.err, HasSubstr("unknown run \"no-such-run\""));
  ASSERT_OK_AND_ASSIGN(ProcessResult nodb,
                       Cli({"assert", "--run", run, "--db", Path("absent.db"), spec}));
  EXPECT_EQ(nodb.exit_code, 3);
  EXPECT_THAT(nodb.err, HasSubstr("absent.db"));
  ASSERT_OK_AND_ASSIGN(ProcessResult nospec,
                       Cli({"assert", "--run", run, "--db", db_path(), Path("absent.yaml")}));
  EXPECT_EQ(nospec.exit_code, 3);
  EXPECT_THAT(nospec.err, HasSubstr("absent.yaml"));
  ASSERT_OK_AND_ASSIGN(ProcessResult down,
                       Cli({"assert", "--run", run, "--addr", server_->address(), spec}));
  EXPECT_EQ(down.exit_code, 3);
  EXPECT_THAT(down.err, HasSubstr(server_->address()));
}

TEST_F(AssertionsTest, ShowPrintsTheLoopAsATimeline) {
  ReplayLoop();
  ASSERT_FALSE(HasFatalFailure());
  const std::string run = run_->id();
  ASSERT_OK(run_->End().status());
  ASSERT_OK_AND_ASSIGN(int exit, server_->Terminate());
  ASSERT_EQ(exit, 0);

  ASSERT_OK_AND_ASSIGN(ProcessResult shown, Cli({"show", run, "--db", db_path()}));
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  std::cout << shown.out;
  // Piped: no color codes.
  EXPECT_THAT(shown.out, Not(HasSubstr("\x1b[")));
  // One "▶ turn" line per agent execution, in the loop's order.
  std::vector<std::string> turns;
  for (absl::string_view line : absl::StrSplit(shown.out, '\n', absl::SkipEmpty())) {
    if (!absl::StrContains(line, "▶ turn")) continue;
    std::vector<std::string> words = absl::StrSplit(line, ' ');
    ASSERT_GE(words.size(), 2u) << line;
    turns.push_back(words[1]);
  }
  EXPECT_EQ(turns, kLoop);
  EXPECT_THAT(shown.out,
              AllOf(StartsWith("#1 run started (replay golden@1, scenario phases)\n"),
                    HasSubstr("#6 executor (phase: execute) ▶ turn 1 (after orchestrator)\n"),
                    HasSubstr("   → tool continue {phase: \"execute\"}\n"),
                    HasSubstr("#16 phase execute → verification\n"),
                    HasSubstr("   ← result continue: \"reviewer: FEEDBACK: missing input validation\"\n"),
                    HasSubstr("#23 run ended: served 6, misses 0, unconsumed 0\n")));

  // Colored when asked, the same words.
  ASSERT_OK_AND_ASSIGN(ProcessResult colored,
                       Cli({"show", run, "--db", db_path(), "--color", "always"}));
  EXPECT_EQ(colored.exit_code, 0);
  EXPECT_THAT(colored.out, HasSubstr("\x1b["));
  // --json: one event per line, as many as the trace holds.
  ASSERT_OK_AND_ASSIGN(ProcessResult json, Cli({"show", run, "--db", db_path(), "--json"}));
  EXPECT_EQ(json.exit_code, 0);
  const std::vector<std::string> events = absl::StrSplit(json.out, '\n', absl::SkipEmpty());
  ASSERT_OK_AND_ASSIGN(ProcessResult traced, Cli({"trace", run, "--db", db_path(), "--json"}));
  EXPECT_EQ(json.out, traced.out);
  EXPECT_GT(events.size(), 12u);
  // Unknown: exit 1, named.
  ASSERT_OK_AND_ASSIGN(ProcessResult unknown, Cli({"show", "nothing-here", "--db", db_path()}));
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("unknown run or session \"nothing-here\""));
}

// A simulated terminal agent's turns (`understudy sim`, docs/sim.md), its
// sim.state events faked with Emit: WaitForState and WaitForDone.
TEST_F(AssertionsTest, WaitForStateAndDoneFollowASimulatedAgent) {
  ASSERT_OK_AND_ASSIGN(server_, StartServer());
  channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
  // A run scripted by its scenario alone: no recording, no upstream.
  ASSERT_OK_AND_ASSIGN(ScopedRun run,
                       ScopedRun::Start(channel_, test::Replay("", "schema: understudy.scenario/v1\n"
                                                                   "name: scripted\n"
                                                                   "default:\n"
                                                                   "  respond: {content: hi}\n")));
  RunTrace trace = run.trace();
  auto state = [&](const std::string& agent, const std::string& to, const std::string& from) {
    absl::StatusOr<v1::TraceEvent> e = trace.Emit(
        "sim.state", {{"understudy.sim.state", to}, {"understudy.sim.state.from", from}}, agent);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? e->seq() : -1;
  };
  state("coder", "STARTING", "");
  const int64_t idle = state("coder", "IDLE", "STARTING");
  state("coder", "WORKING", "IDLE");
  state("other", "WORKING", "IDLE");
  const int64_t other_done = state("other", "IDLE", "WORKING");  // not coder's turn

  ASSERT_OK_AND_ASSIGN(v1::TraceEvent first, trace.WaitForState("coder", "IDLE", absl::Seconds(1)));
  EXPECT_EQ(first.seq(), idle);
  ASSERT_OK_AND_ASSIGN(v1::TraceEvent other, trace.WaitForDone("other", absl::Seconds(1)));
  EXPECT_EQ(other.seq(), other_done);
  EXPECT_EQ(trace.WaitForState("coder", "IDLE", absl::Milliseconds(300), idle).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  // STARTING -> IDLE is no turn.
  EXPECT_EQ(trace.WaitForDone("coder", absl::Milliseconds(300)).status().code(),
            absl::StatusCode::kDeadlineExceeded);

  const int64_t done = state("coder", "IDLE", "WORKING");
  ASSERT_OK_AND_ASSIGN(v1::TraceEvent turn, trace.WaitForDone("coder", absl::Seconds(1), idle));
  EXPECT_EQ(turn.seq(), done);
  EXPECT_EQ(turn.agent(), "coder");
  // IDLE -> DONE (an exit between turns) ends no turn; ASKING -> CRASHED does.
  const int64_t exited = state("coder", "DONE", "IDLE");
  EXPECT_EQ(trace.WaitForDone("coder", absl::Milliseconds(300), done).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  ASSERT_OK_AND_ASSIGN(v1::TraceEvent bye, trace.WaitForState("coder", "DONE", absl::Seconds(1)));
  EXPECT_EQ(bye.seq(), exited);
  state("asker", "ASKING", "WORKING");
  const int64_t crashed = state("asker", "CRASHED", "ASKING");
  ASSERT_OK_AND_ASSIGN(v1::TraceEvent crash, trace.WaitForDone("asker", absl::Seconds(1)));
  EXPECT_EQ(crash.seq(), crashed);
}

}  // namespace
}  // namespace e2e
}  // namespace understudy
