// GoogleTest helpers for tests of LLM-agent systems replayed by understudy:
// open a run, then state what must hold of its trace with gMock matchers
// that print the server's readable verdict when they fail.
//
//   auto channel = grpc::CreateChannel(addr, grpc::InsecureChannelCredentials());
//   ASSERT_OK_AND_ASSIGN(ScopedRun run, ScopedRun::Start(channel, Replay("golden")));
//   RunMyAgents(run.openai_base_url(http_addr));     // or gRPC with run.id()
//   RunTrace trace = run.trace();
//   EXPECT_THAT(trace, HasAgentSequence({"orchestrator", "executor", "reviewer"}));
//   EXPECT_THAT(trace, HasToolCalls("executor", {{"continue", R"({"phase":"verification"})"}},
//                                   v1::SEQUENCE_MATCH_SUBSEQUENCE));
//   EXPECT_THAT(trace, HasPhaseTransitions({"execute", "verification"}));
//   EXPECT_THAT(trace, PropagatesFeedback("reviewer", "executor", "missing input validation"));
//   EXPECT_THAT(trace, SatisfiesSpec(yaml));           // docs/assertions.md
//
// A failing matcher prints what was expected and the server's explanation:
//
//   Value of: trace
//   Expected: passes agent_sequence (exact) [orchestrator, reviewer]
//     Actual: run "r1", which fails: agent_sequence (exact): expected
//   [orchestrator, reviewer] but the run had [orchestrator, executor, reviewer];
//   they first differ at position 2: expected "reviewer", got "executor" (event #5)
//
// The checks run on the server (Traces.Assert), so C++, Python and Node
// tests get the same verdicts and the same words. Every RPC has a deadline;
// an RPC error fails the matcher with the status, never hangs the test.
//
// Thread-safety: a RunTrace is immutable and may be shared; a ScopedRun is
// owned by one test.
#ifndef UNDERSTUDY_CLIENTS_CPP_UNDERSTUDY_TESTING_H_
#define UNDERSTUDY_CLIENTS_CPP_UNDERSTUDY_TESTING_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpcpp/channel.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace test {

// How long each RPC of these helpers may take.
inline constexpr absl::Duration kDefaultCallTimeout = absl::Seconds(10);

// The absl::Status with `status`'s code and message.
absl::Status FromGrpc(const grpc::Status& status);

// One run's trace on a server: queries and checks over its Traces service.
class RunTrace {
 public:
  RunTrace(std::shared_ptr<grpc::Channel> channel, std::string run,
           absl::Duration timeout = kDefaultCallTimeout);

  const std::string& run() const { return run_; }

  // Traces.Assert: every assertion's verdict. A failed check is a result
  // (passed false); the error statuses are the server's (NOT_FOUND for an
  // unknown run, INVALID_ARGUMENT naming a malformed assertion's field).
  absl::StatusOr<v1::AssertResponse> Check(const std::vector<v1::Assertion>& assertions) const;

  // The run's events that `filter` matches, in seq order (every page).
  absl::StatusOr<std::vector<v1::TraceEvent>> Events(const v1::EventFilter& filter = {}) const;

  // Traces.WaitFor: the first event `filter` matches, past or future;
  // DEADLINE_EXCEEDED (with the run's state) when none comes in `timeout`.
  absl::StatusOr<v1::TraceEvent> WaitFor(const v1::EventFilter& filter,
                                         absl::Duration timeout) const;

  // For a simulated terminal agent (`understudy sim --agent NAME`,
  // docs/sim.md): the first sim.state event of `agent` entering `state`
  // ("IDLE", "WORKING", "ASKING", "DONE", "CRASHED") with a seq above
  // `after_seq`, past or future. Errors as WaitFor.
  absl::StatusOr<v1::TraceEvent> WaitForState(const std::string& agent, const std::string& state,
                                              absl::Duration timeout,
                                              int64_t after_seq = 0) const;

  // The first sim.state event above `after_seq` in which `agent` finished a
  // turn: it went from WORKING or ASKING to IDLE, DONE or CRASHED. Pass the
  // previous turn's seq to wait for the next one. Errors as WaitFor.
  absl::StatusOr<v1::TraceEvent> WaitForDone(const std::string& agent, absl::Duration timeout,
                                             int64_t after_seq = 0) const;

  // Traces.Emit: appends a custom event (kind [a-z][a-z0-9_.]*, not one of
  // understudy's own) and returns it with its seq.
  absl::StatusOr<v1::TraceEvent> Emit(const std::string& kind,
                                      const std::map<std::string, std::string>& attributes = {},
                                      const std::string& agent = "") const;

 private:
  std::unique_ptr<grpc::ClientContext> Context() const;

  std::shared_ptr<grpc::Channel> channel_;
  std::shared_ptr<v1::Traces::Stub> traces_;
  std::string run_;
  absl::Duration timeout_;
};

// gtest prints a RunTrace as `run "ID"`.
void PrintTo(const RunTrace& trace, std::ostream* os);

// A run started for a test and ended when it goes out of scope (if End was
// not called). Move-only.
class ScopedRun {
 public:
  // Runs.StartRun(request); the server's error when it refuses.
  static absl::StatusOr<ScopedRun> Start(std::shared_ptr<grpc::Channel> channel,
                                         const v1::StartRunRequest& request,
                                         absl::Duration timeout = kDefaultCallTimeout);

  ScopedRun(ScopedRun&& other) noexcept;
  ScopedRun& operator=(ScopedRun&& other) noexcept;
  ScopedRun(const ScopedRun&) = delete;
  ScopedRun& operator=(const ScopedRun&) = delete;
  // Ends the run unless End was called; an error is ignored (the server
  // ends every run at shutdown anyway).
  ~ScopedRun();

  const std::string& id() const { return run_.id(); }
  // The run as StartRun returned it.
  const v1::Run& run() const { return run_; }
  RunTrace trace() const { return RunTrace(channel_, run_.id(), timeout_); }
  // Metadata for gRPC Model calls of this run ("understudy-run" and, when
  // `agent` is set, "understudy-agent"), set on `context`.
  void Attach(grpc::ClientContext* context, const std::string& agent = "") const;
  // Base URLs for unmodified agents on the HTTP API at `http` ("HOST:PORT"
  // or "http://HOST:PORT"): OpenAI's ".../run/ID/v1" and Anthropic's
  // ".../run/ID"; with `agent`, ".../run/ID/agent/NAME/...".
  std::string openai_base_url(const std::string& http, const std::string& agent = "") const;
  std::string anthropic_base_url(const std::string& http, const std::string& agent = "") const;

  // Runs.EndRun once; later calls return the same summary.
  absl::StatusOr<v1::RunSummary> End();

 private:
  ScopedRun(std::shared_ptr<grpc::Channel> channel, v1::Run run, absl::Duration timeout);

  std::shared_ptr<grpc::Channel> channel_;
  v1::Run run_;
  absl::Duration timeout_;
  std::optional<absl::StatusOr<v1::RunSummary>> summary_;
};

// StartRun requests. `trace_level`: what the run's trace keeps (FULL,
// SUMMARY: start, misses and end, OFF; docs/assertions.md "Trace levels");
// UNSPECIFIED keeps the server's --trace-level.
v1::StartRunRequest Replay(const std::string& session, const std::string& scenario_text = "",
                           v1::TraceLevel trace_level = v1::TRACE_LEVEL_UNSPECIFIED);
v1::StartRunRequest Record(const std::string& session,
                           v1::TraceLevel trace_level = v1::TRACE_LEVEL_UNSPECIFIED);

// ---------------------------------------------------------------------------
// Assertions (the v1::Assertion messages, see docs/assertions.md).

struct ExpectedCall {
  std::string name;
  // A JSON object the call's arguments must contain; "" for any arguments.
  std::string arguments = "";
};

v1::Assertion AgentSequence(const std::vector<std::string>& agents,
                            v1::SequenceMatch match = v1::SEQUENCE_MATCH_EXACT,
                            bool collapse_repeats = false);
v1::Assertion PhaseTransitions(const std::vector<std::string>& phases,
                               v1::SequenceMatch match = v1::SEQUENCE_MATCH_EXACT);
// `agent` "" checks every agent's calls.
v1::Assertion ToolCalls(const std::string& agent, const std::vector<ExpectedCall>& calls,
                        v1::SequenceMatch match = v1::SEQUENCE_MATCH_EXACT);
v1::Assertion FeedbackPropagated(const std::string& from, const std::string& to,
                                 const std::string& keyword);
v1::Assertion Count(const v1::EventFilter& filter, v1::Comparison comparison, int64_t n);
v1::Assertion NoMisses();
v1::Assertion AllConsumed();
// A selector-plus-checks spec document, YAML or JSON.
v1::Assertion Spec(const std::string& text);
// The filter of events of these kinds (and, when set, this agent).
v1::EventFilter Kind(const std::vector<std::string>& kinds, const std::string& agent = "");

// ---------------------------------------------------------------------------
// Matchers on a RunTrace. Each asks the server once per match.

// Passes when every assertion passes; on failure the listener gets each
// failed check's explanation.
::testing::Matcher<const RunTrace&> Satisfies(v1::Assertion assertion);
::testing::Matcher<const RunTrace&> SatisfiesAll(std::vector<v1::Assertion> assertions);
::testing::Matcher<const RunTrace&> SatisfiesSpec(const std::string& text);

::testing::Matcher<const RunTrace&> HasAgentSequence(
    const std::vector<std::string>& agents, v1::SequenceMatch match = v1::SEQUENCE_MATCH_EXACT);
::testing::Matcher<const RunTrace&> HasPhaseTransitions(
    const std::vector<std::string>& phases, v1::SequenceMatch match = v1::SEQUENCE_MATCH_EXACT);
::testing::Matcher<const RunTrace&> HasToolCalls(
    const std::string& agent, const std::vector<ExpectedCall>& calls,
    v1::SequenceMatch match = v1::SEQUENCE_MATCH_EXACT);
::testing::Matcher<const RunTrace&> PropagatesFeedback(const std::string& from,
                                                       const std::string& to,
                                                       const std::string& keyword);
::testing::Matcher<const RunTrace&> HasNoMisses();
::testing::Matcher<const RunTrace&> ConsumedAll();

// For EXPECT_TRUE: success, or failure carrying the whole report.
//   EXPECT_TRUE(Passes(trace, {NoMisses(), AllConsumed()}));
::testing::AssertionResult Passes(const RunTrace& trace,
                                  const std::vector<v1::Assertion>& assertions);

// How a matcher describes an assertion: "agent_sequence (exact)
// [orchestrator, executor]", "no_misses", ...
std::string Describe(const v1::Assertion& assertion);

}  // namespace test
}  // namespace understudy

#endif  // UNDERSTUDY_CLIENTS_CPP_UNDERSTUDY_TESTING_H_
