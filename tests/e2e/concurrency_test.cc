// Runs never see each other's state: many runs replaying one session at
// once on one server each get the whole recording, in order.
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "tests/e2e/e2e_test_base.h"

namespace understudy {
namespace e2e {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;

constexpr int kRuns = 16;
constexpr int kSteps = fakes::AgentLoop::kSteps;

// What one replaying thread saw.
struct RunOutcome {
  absl::Status status;
  std::string run_id;
  std::vector<StepResult> steps;
  v1::RunSummary summary;
  std::vector<v1::TraceEvent> events;
};

RunOutcome ReplayOnce(Clients& c, const std::string& run_id) {
  RunOutcome out;
  out.run_id = run_id;
  absl::StatusOr<v1::Run> run = StartRun(c, "golden", v1::RUN_MODE_REPLAY, true, run_id);
  if (!run.ok()) {
    out.status = run.status();
    return out;
  }
  absl::StatusOr<std::vector<StepResult>> steps = RunAgentLoop(c, run_id);
  if (!steps.ok()) {
    out.status = steps.status();
    return out;
  }
  out.steps = std::move(*steps);
  absl::StatusOr<v1::RunSummary> summary = EndRun(c, run_id);
  if (!summary.ok()) {
    out.status = summary.status();
    return out;
  }
  out.summary = std::move(*summary);
  absl::StatusOr<std::vector<v1::TraceEvent>> events = QueryTrace(c, run_id);
  if (!events.ok()) {
    out.status = events.status();
    return out;
  }
  out.events = std::move(*events);
  return out;
}

class ConcurrencyTest : public E2eTest {};

TEST_F(ConcurrencyTest, SixteenConcurrentReplaysEachSeeTheWholeSessionInOrder) {
  std::vector<StepResult> golden;
  RecordGolden("golden", &golden);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());

  // Half the threads share one channel (one HTTP/2 connection), half have
  // their own, so both multiplexed and parallel connections are exercised.
  Clients shared(server->NewChannel());
  std::vector<std::unique_ptr<Clients>> own;
  for (int i = 0; i < kRuns / 2; ++i)
    own.push_back(std::make_unique<Clients>(server->NewChannel()));

  std::vector<RunOutcome> outcomes(kRuns);
  absl::Notification go;
  std::vector<std::thread> threads;
  for (int i = 0; i < kRuns; ++i) {
    Clients* c = i % 2 == 0 ? &shared : own[i / 2].get();
    threads.emplace_back([&, i, c] {
      // Every call below has a deadline, so the thread always finishes.
      go.WaitForNotificationWithTimeout(absl::Seconds(30));
      outcomes[i] = ReplayOnce(*c, absl::StrFormat("replay-%02d", i));
    });
  }
  go.Notify();
  for (std::thread& t : threads) t.join();

  for (int r = 0; r < kRuns; ++r) {
    SCOPED_TRACE(outcomes[r].run_id);
    const RunOutcome& o = outcomes[r];
    ASSERT_OK(o.status);
    ASSERT_THAT(o.steps, SizeIs(kSteps));
    for (int i = 0; i < kSteps; ++i) {
      EXPECT_EQ(o.steps[i].response.SerializeAsString(), golden[i].response.SerializeAsString())
          << "step " << i;
      ASSERT_EQ(o.steps[i].chunks.size(), golden[i].chunks.size()) << "step " << i;
      for (size_t k = 0; k < golden[i].chunks.size(); ++k) {
        EXPECT_EQ(o.steps[i].chunks[k].SerializeAsString(),
                  golden[i].chunks[k].SerializeAsString())
            << "step " << i << " chunk " << k;
      }
    }
    EXPECT_EQ(o.summary.run().id(), o.run_id);
    EXPECT_EQ(o.summary.run().served(), kSteps);
    EXPECT_EQ(o.summary.run().misses(), 0);
    EXPECT_THAT(o.summary.misses(), SizeIs(0));
    EXPECT_THAT(o.summary.unconsumed(), SizeIs(0));
    // Exactly this run's events: no other run's exchange leaked in.
    std::vector<std::string> agents;
    int exchanges = 0, executions = 0;
    for (int i = 0; i < static_cast<int>(o.events.size()); ++i) {
      EXPECT_EQ(o.events[i].run(), o.run_id);
      EXPECT_EQ(o.events[i].seq(), i + 1);
      if (o.events[i].kind() == "exchange") agents.push_back(o.events[i].agent());
      exchanges += o.events[i].kind() == "exchange";
      executions += o.events[i].kind() == "agent_execution";
    }
    ASSERT_EQ(exchanges, kSteps);
    // The agent changes at every step of the loop.
    EXPECT_EQ(executions, kSteps);
    EXPECT_EQ(o.events.front().kind(), "run_started");
    EXPECT_EQ(o.events.back().kind(), "run_ended");
    EXPECT_THAT(agents, ElementsAre("orchestrator", "executor", "reviewer", "orchestrator",
                                    "executor", "reviewer"));
  }
  shared.Disconnect();
  for (auto& c : own) c->Disconnect();
  EXPECT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
}

}  // namespace
}  // namespace e2e
}  // namespace understudy
