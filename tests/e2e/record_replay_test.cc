// Journeys 1 and 2 end to end: record the three-agent loop from a live
// upstream through the real binary, restart it, and replay strictly with the
// upstream gone; drift is a precise miss.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/e2e_test_base.h"

namespace understudy {
namespace e2e {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;

constexpr int kSteps = fakes::AgentLoop::kSteps;

std::string JsonQuoted(const std::string& s) { return nlohmann::json(s).dump(); }

std::vector<std::string> AgentsOf(const std::vector<v1::TraceEvent>& events) {
  std::vector<std::string> agents;
  for (const v1::TraceEvent& e : events) agents.push_back(e.agent());
  return agents;
}

// Event kinds in order; the tool_call events that follow answers with tool
// calls only when `with_tool_calls`.
std::vector<std::string> KindsOf(const std::vector<v1::TraceEvent>& events,
                                 bool with_tool_calls = false) {
  std::vector<std::string> kinds;
  for (const v1::TraceEvent& e : events) {
    if (with_tool_calls || e.kind() != "tool_call") kinds.push_back(e.kind());
  }
  return kinds;
}

std::string Attr(const v1::TraceEvent& e, const std::string& key) {
  auto it = e.attributes().find(key);
  return it == e.attributes().end() ? "<absent>" : it->second;
}

class RecordReplayTest : public E2eTest {};

TEST_F(RecordReplayTest, ReplayAfterRestartIsByteIdenticalWithUpstreamStopped) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<fakes::FakeModel> fake, fakes::FakeModel::Start());
  std::vector<StepResult> recorded;
  std::string record_run;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer(fake->target()));
    Clients c(server->NewChannel());
    ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "golden", v1::RUN_MODE_RECORD));
    record_run = run.id();
    EXPECT_EQ(run.session_version(), 1);
    ASSERT_OK_AND_ASSIGN(recorded, RunAgentLoop(c, run.id()));
    ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, EndRun(c, run.id()));
    EXPECT_EQ(summary.run().recorded(), kSteps);
    EXPECT_EQ(summary.run().served(), kSteps);
    EXPECT_EQ(summary.run().misses(), 0);
    c.Disconnect();
    ASSERT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
  }
  // The loop went as scripted, and the agents reached the upstream.
  ASSERT_THAT(recorded, SizeIs(kSteps));
  EXPECT_EQ(recorded[2].response.message().content(), "FEEDBACK: missing input validation");
  EXPECT_THAT(recorded[4].request.DebugString(), HasSubstr("FEEDBACK: missing input validation"));
  EXPECT_THAT(recorded[5].response.message().content(), HasSubstr("APPROVED"));
  EXPECT_EQ(recorded[3].response.message().tool_calls(0).arguments(),
            R"({"phase":"verification"})");
  EXPECT_THAT(fake->agents_seen(), ElementsAre("orchestrator", "executor", "reviewer",
                                               "orchestrator", "executor", "reviewer"));
  // understudy's own routing metadata never reaches the upstream.
  for (const std::string& key : fake->metadata_keys_seen()) {
    EXPECT_FALSE(absl::StartsWith(key, "understudy-")) << key;
  }
  EXPECT_EQ(fake->stream_calls(), 3);
  EXPECT_EQ(fake->complete_calls(), 3);

  // The upstream goes away for good; the server restarts on the same file
  // (still configured with the dead upstream, which strict replay never uses).
  fake->Stop();
  const int64_t calls_before = fake->calls();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer(fake->target()));
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "golden", v1::RUN_MODE_REPLAY));
  EXPECT_TRUE(run.strict());
  EXPECT_EQ(run.session_version(), 1);
  ASSERT_OK_AND_ASSIGN(std::vector<StepResult> replayed, RunAgentLoop(c, run.id()));
  EXPECT_EQ(fake->calls(), calls_before);

  ASSERT_OK_AND_ASSIGN(v1::GetSessionResponse session, GetSession(c, "golden"));
  ASSERT_THAT(session.exchanges(), SizeIs(kSteps));
  ASSERT_THAT(replayed, SizeIs(kSteps));
  for (int i = 0; i < kSteps; ++i) {
    SCOPED_TRACE(absl::StrCat("step ", i, " (", recorded[i].agent, ")"));
    EXPECT_EQ(replayed[i].request.SerializeAsString(), recorded[i].request.SerializeAsString());
    EXPECT_EQ(replayed[i].response.SerializeAsString(), recorded[i].response.SerializeAsString());
    ASSERT_EQ(replayed[i].chunks.size(), recorded[i].chunks.size());
    const v1::Exchange& stored = session.exchanges(i);
    for (size_t k = 0; k < replayed[i].chunks.size(); ++k) {
      // Byte for byte the stream the recording run got (timing included)...
      EXPECT_EQ(replayed[i].chunks[k].SerializeAsString(),
                recorded[i].chunks[k].SerializeAsString())
          << "chunk " << k;
      // ...which is exactly what was stored.
      EXPECT_EQ(replayed[i].chunks[k].SerializeAsString(), stored.chunks(k).SerializeAsString())
          << "chunk " << k;
    }
    if (recorded[i].streamed) {
      EXPECT_GE(recorded[i].chunks.size(), 3u);
    }
  }

  ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, EndRun(c, run.id()));
  EXPECT_EQ(summary.run().misses(), 0);
  EXPECT_THAT(summary.misses(), SizeIs(0));
  EXPECT_THAT(summary.unconsumed(), SizeIs(0));
  EXPECT_EQ(summary.run().served(), kSteps);
  EXPECT_EQ(summary.run().state(), v1::RUN_STATE_ENDED);

  ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> exchanges,
                       QueryTrace(c, run.id(), {"exchange"}));
  EXPECT_THAT(AgentsOf(exchanges), ElementsAre("orchestrator", "executor", "reviewer",
                                               "orchestrator", "executor", "reviewer"));
  for (int i = 0; i < static_cast<int>(exchanges.size()); ++i) {
    SCOPED_TRACE(absl::StrCat("exchange event ", i));
    if (i > 0) {
      EXPECT_GT(exchanges[i].seq(), exchanges[i - 1].seq());
    }
    EXPECT_EQ(Attr(exchanges[i], "understudy.answer.source"), "recording");
    EXPECT_EQ(Attr(exchanges[i], "understudy.exchange.seq"), absl::StrCat(i + 1));
    EXPECT_EQ(Attr(exchanges[i], "understudy.streamed"),
              fakes::AgentLoop::Streamed(i) ? "true" : "false");
    EXPECT_EQ(exchanges[i].response().SerializeAsString(),
              recorded[i].response.SerializeAsString());
  }
  ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> all, QueryTrace(c, run.id()));
  // Each tool call the answers carry is a tool_call event after its exchange.
  std::vector<std::string> kinds = KindsOf(all, /*with_tool_calls=*/true);
  int tool_calls = 0;
  for (const auto& r : recorded) tool_calls += r.response.message().tool_calls_size();
  EXPECT_GT(tool_calls, 0);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "tool_call"), tool_calls);
  kinds.erase(std::remove(kinds.begin(), kinds.end(), "tool_call"), kinds.end());
  // Every request of the loop comes from a new agent; the orchestrator's
  // second request carries the result of its tool call.
  EXPECT_THAT(kinds, ElementsAre("run_started", "agent_execution", "exchange", "agent_execution",
                                 "exchange", "agent_execution", "exchange", "agent_execution",
                                 "tool_result", "exchange", "agent_execution", "exchange",
                                 "agent_execution", "exchange", "run_ended"));
  for (int i = 0; i < static_cast<int>(all.size()); ++i) EXPECT_EQ(all[i].seq(), i + 1);

  // The recording run's trace survived the restart too.
  ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> recorded_events,
                       QueryTrace(c, record_run, {"exchange"}));
  ASSERT_THAT(recorded_events, SizeIs(kSteps));
  for (const v1::TraceEvent& e : recorded_events) {
    EXPECT_EQ(Attr(e, "understudy.answer.source"), "upstream");
  }
  c.Disconnect();
  EXPECT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
}

TEST_F(RecordReplayTest, ChangedPromptIsNotFoundNamingTheFieldWithBothValues) {
  std::vector<StepResult> golden;
  RecordGolden("golden", &golden);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "golden", v1::RUN_MODE_REPLAY));

  // Step 0 with a different task: NOT_FOUND, the report names the field.
  v1::CompletionRequest changed = golden[0].request;
  const std::string original_task = changed.messages(1).content();
  const std::string new_task = "Task: add a product(a, b) function to product.py.";
  changed.mutable_messages(1)->set_content(new_task);
  absl::StatusOr<v1::CompletionResponse> miss = Complete(c, run.id(), "orchestrator", changed);
  EXPECT_THAT(miss, StatusIs(absl::StatusCode::kNotFound, HasSubstr("closest is exchange #1")));
  EXPECT_THAT(miss, StatusIs(absl::StatusCode::kNotFound,
                             HasSubstr(absl::StrCat("\n  messages[1].content: recorded ",
                                                    JsonQuoted(original_task), " got ",
                                                    JsonQuoted(new_task)))));

  // A strict miss consumes nothing: the real step 0 still answers.
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse first,
                       Complete(c, run.id(), "orchestrator", golden[0].request));
  EXPECT_EQ(first.SerializeAsString(), golden[0].response.SerializeAsString());

  // A streamed step with a changed message misses the same way.
  v1::CompletionRequest changed_stream = golden[1].request;
  const std::string original_brief = changed_stream.messages(1).content();
  const std::string new_brief = "URGENT: " + original_brief;
  changed_stream.mutable_messages(1)->set_content(new_brief);
  EXPECT_THAT(StreamComplete(c, run.id(), "executor", changed_stream),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("closest is exchange #2")));

  ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, EndRun(c, run.id()));
  EXPECT_EQ(summary.run().misses(), 2);
  EXPECT_EQ(summary.run().served(), 1);
  ASSERT_THAT(summary.misses(), SizeIs(2));
  const v1::MissReport& report = summary.misses(0);
  EXPECT_EQ(report.closest_seq(), 1);
  EXPECT_EQ(report.agent(), "orchestrator");
  EXPECT_FALSE(report.consumed_only());
  ASSERT_THAT(report.diffs(), SizeIs(1));
  EXPECT_EQ(report.diffs(0).path(), "messages[1].content");
  EXPECT_EQ(report.diffs(0).recorded(), JsonQuoted(original_task));
  EXPECT_EQ(report.diffs(0).got(), JsonQuoted(new_task));
  EXPECT_EQ(report.text(), miss.status().message());
  const v1::MissReport& stream_report = summary.misses(1);
  EXPECT_EQ(stream_report.closest_seq(), 2);
  ASSERT_THAT(stream_report.diffs(), SizeIs(1));
  EXPECT_EQ(stream_report.diffs(0).path(), "messages[1].content");
  // Long values are abbreviated (to about 120 characters) in reports.
  EXPECT_THAT(stream_report.diffs(0).recorded(),
              StartsWith(JsonQuoted(original_brief).substr(0, 100)));
  EXPECT_THAT(stream_report.diffs(0).got(), StartsWith(JsonQuoted(new_brief).substr(0, 100)));
  std::vector<int64_t> unconsumed;
  for (const v1::ExchangeRef& ref : summary.unconsumed()) unconsumed.push_back(ref.seq());
  EXPECT_THAT(unconsumed, ElementsAre(2, 3, 4, 5, 6));

  // Both misses are trace events, in order with the answer between them.
  ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> events, QueryTrace(c, run.id()));
  EXPECT_THAT(KindsOf(events), ElementsAre("run_started", "agent_execution", "miss", "exchange",
                                           "agent_execution", "miss", "run_ended"));
  ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> misses, QueryTrace(c, run.id(), {"miss"}));
  ASSERT_THAT(misses, SizeIs(2));
  EXPECT_EQ(misses[0].agent(), "orchestrator");
  EXPECT_EQ(misses[0].seq(), report.event_seq());
  EXPECT_EQ(Attr(misses[0], "understudy.miss.report"), report.text());
  EXPECT_EQ(misses[0].request().messages(1).content(), new_task);
  EXPECT_EQ(misses[1].agent(), "executor");
  EXPECT_EQ(misses[1].seq(), stream_report.event_seq());
}

TEST_F(RecordReplayTest, RepeatedRequestReportsTheConsumedRecording) {
  std::vector<StepResult> golden;
  RecordGolden("golden", &golden);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "golden", v1::RUN_MODE_REPLAY));

  ASSERT_OK(Complete(c, run.id(), "orchestrator", golden[0].request).status());
  EXPECT_THAT(Complete(c, run.id(), "orchestrator", golden[0].request),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("an identical recording, exchange #1, exists but this run "
                                 "already used it")));

  ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, EndRun(c, run.id()));
  ASSERT_THAT(summary.misses(), SizeIs(1));
  EXPECT_TRUE(summary.misses(0).consumed_only());
  EXPECT_EQ(summary.misses(0).closest_seq(), 1);
  EXPECT_THAT(summary.misses(0).diffs(), SizeIs(0));
  EXPECT_THAT(summary.unconsumed(), SizeIs(kSteps - 1));
}

TEST_F(RecordReplayTest, SameRequestFromAnotherAgentMissesOnTheAgent) {
  std::vector<StepResult> golden;
  RecordGolden("golden", &golden);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "golden", v1::RUN_MODE_REPLAY));

  EXPECT_THAT(Complete(c, run.id(), "executor", golden[0].request),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("agent: recorded \"orchestrator\" got \"executor\"")));
}

TEST_F(RecordReplayTest, NonStrictReplayAnswersFromTheClosestRecordingAndReportsTheMiss) {
  std::vector<StepResult> golden;
  RecordGolden("golden", &golden);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "golden", v1::RUN_MODE_REPLAY, /*strict=*/false));
  EXPECT_FALSE(run.strict());

  v1::CompletionRequest changed = golden[0].request;
  changed.mutable_params()->set_temperature(0.7);
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse answer,
                       Complete(c, run.id(), "orchestrator", changed));
  EXPECT_EQ(answer.SerializeAsString(), golden[0].response.SerializeAsString());

  ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, EndRun(c, run.id()));
  ASSERT_THAT(summary.misses(), SizeIs(1));
  EXPECT_EQ(summary.misses(0).served_seq(), 1);
  ASSERT_THAT(summary.misses(0).diffs(), SizeIs(1));
  EXPECT_EQ(summary.misses(0).diffs(0).path(), "params.temperature");
  ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> events, QueryTrace(c, run.id()));
  EXPECT_THAT(KindsOf(events),
              ElementsAre("run_started", "agent_execution", "miss", "exchange", "run_ended"));
  EXPECT_EQ(Attr(events[3], "understudy.answer.source"), "closest_recording");
}

TEST_F(RecordReplayTest, RecordedUpstreamErrorReplaysWithTheSameStatus) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<fakes::FakeModel> fake, fakes::FakeModel::Start());
  v1::CompletionRequest request;
  request.set_model("fake-gpt-1");
  v1::Message* m = request.add_messages();
  m->set_role("user");
  m->set_content("FAIL: this prompt is refused");
  absl::Status live;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer(fake->target()));
    Clients c(server->NewChannel());
    ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "refusal", v1::RUN_MODE_RECORD));
    live = Complete(c, run.id(), "executor", request).status();
    EXPECT_THAT(live, StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("fake model refuses: FAIL: this prompt is refused")));
    ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, EndRun(c, run.id()));
    EXPECT_EQ(summary.run().recorded(), 1);
    c.Disconnect();
    ASSERT_THAT(server->Terminate(), IsOkAndHolds(0));
  }
  fake->Stop();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "refusal", v1::RUN_MODE_REPLAY));
  absl::Status replayed = Complete(c, run.id(), "executor", request).status();
  EXPECT_EQ(replayed.code(), live.code());
  EXPECT_EQ(replayed.message(), live.message());
  ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, EndRun(c, run.id()));
  EXPECT_EQ(summary.run().misses(), 0);
  EXPECT_THAT(summary.unconsumed(), SizeIs(0));
}

TEST_F(RecordReplayTest, SigtermDuringARecordRunClosesTheSessionAndExitsZero) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<fakes::FakeModel> fake, fakes::FakeModel::Start());
  std::string run_id;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer(fake->target()));
    Clients c(server->NewChannel());
    ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "interrupted", v1::RUN_MODE_RECORD));
    run_id = run.id();
    ASSERT_OK(RunAgentLoop(c, run.id(), /*step_count=*/3).status());
    ASSERT_OK_AND_ASSIGN(v1::GetSessionResponse open, GetSession(c, "interrupted", 0, false));
    EXPECT_EQ(open.session().state(), v1::SESSION_STATE_OPEN);
    // No EndRun: the signal ends the run.
    c.Disconnect();
    ASSERT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
    EXPECT_THAT(server->Stderr(), HasSubstr("signal=SIGTERM"));
    EXPECT_THAT(server->Stderr(), HasSubstr("stopped status=ok"));
  }
  fake->Stop();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::GetSessionResponse closed, GetSession(c, "interrupted", 0, true));
  EXPECT_EQ(closed.session().state(), v1::SESSION_STATE_CLOSED);
  EXPECT_EQ(closed.session().exchange_count(), 3);
  EXPECT_THAT(closed.session().agents(), ElementsAre("orchestrator", "executor", "reviewer"));
  v1::GetRunRequest get;
  get.set_run(run_id);
  v1::Run run;
  auto context = CallContext();
  ASSERT_TRUE(c.runs->GetRun(context.get(), get, &run).ok());
  EXPECT_EQ(run.state(), v1::RUN_STATE_ENDED);
  EXPECT_EQ(run.recorded(), 3);
  ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> events, QueryTrace(c, run_id));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind(), "run_ended");
  // The cut-short recording replays.
  ASSERT_OK_AND_ASSIGN(v1::Run replay, StartRun(c, "interrupted", v1::RUN_MODE_REPLAY));
  EXPECT_OK(RunAgentLoop(c, replay.id(), /*step_count=*/3).status());
  ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, EndRun(c, replay.id()));
  EXPECT_THAT(summary.unconsumed(), SizeIs(0));
  EXPECT_THAT(summary.misses(), SizeIs(0));
}

}  // namespace
}  // namespace e2e
}  // namespace understudy
