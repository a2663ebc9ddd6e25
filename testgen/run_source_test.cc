#include "testgen/run_source.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "service/server.h"
#include "store/store.h"
#include "store/test_util.h"

namespace understudy {
namespace testgen {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A database holding two versions of session "golden" and three runs:
//   run-b  golden@1, started at 100, ended, with a summary
//   run-a  golden@2, started at 200 (the latest: ids do not order runs)
//   solo   no session, started at 300, still active
// and session "unused", which no run used. Each run's trace has three
// events whose kinds name the run.
class RunSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.path = dir_.File("understudy.db");
    absl::StatusOr<std::unique_ptr<store::Store>> opened = store::Store::Open(options);
    ASSERT_THAT(opened, IsOk());
    store_ = *std::move(opened);
    ASSERT_THAT(store_->CreateSessionVersion("golden"), IsOk());
    ASSERT_THAT(store_->CreateSessionVersion("golden"), IsOk());
    ASSERT_THAT(store_->CreateSessionVersion("unused"), IsOk());
    AddRun("run-b", "golden", 1, 100, v1::RUN_STATE_ENDED);
    AddRun("run-a", "golden", 2, 200, v1::RUN_STATE_ENDED);
    AddRun("solo", "", 0, 300, v1::RUN_STATE_ACTIVE);
    v1::RunSummary summary;
    ASSERT_THAT(store_->GetRun("run-b"), IsOk());
    *summary.mutable_run() = *store_->GetRun("run-b");
    summary.add_unconsumed()->set_seq(4);
    ASSERT_THAT(store_->SaveRunSummary(summary), IsOk());
    ASSERT_THAT(store_->Flush(), IsOk());
  }

  void AddRun(const std::string& id, const std::string& session, int64_t version,
              int64_t started, v1::RunState state) {
    v1::Run run;
    run.set_id(id);
    run.set_session(session);
    run.set_session_version(version);
    run.set_mode(v1::RUN_MODE_REPLAY);
    run.set_state(state);
    run.set_started_at_micros(started);
    ASSERT_THAT(store_->SaveRun(run), IsOk());
    std::vector<v1::TraceEvent> events;
    for (const char* kind : {"run_started", "exchange", "run_ended"}) {
      v1::TraceEvent& e = events.emplace_back();
      e.set_run(id);
      e.set_seq(static_cast<int64_t>(events.size()));
      e.set_kind(kind);
      e.set_agent(id);  // names the run in assertions below
    }
    store_->AppendEvents(std::move(events));
  }

  static std::vector<std::string> Agents(const RunData& run) {
    std::vector<std::string> agents;
    for (const v1::TraceEvent& e : run.events) {
      agents.push_back(absl::StrCat(e.seq(), " ", e.kind(), " ", e.agent()));
    }
    return agents;
  }

  store::ScopedTempDir dir_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(RunSourceTest, ARunIdGivesThatRunWithItsSummary) {
  absl::StatusOr<RunData> run = LoadRun(*store_, "run-b");
  ASSERT_THAT(run, IsOk());
  EXPECT_EQ(run->run, "run-b");
  EXPECT_EQ(run->session, "golden");
  EXPECT_EQ(run->session_version, 1);
  EXPECT_THAT(Agents(*run), ElementsAre("1 run_started run-b", "2 exchange run-b",
                                        "3 run_ended run-b"));
  ASSERT_TRUE(run->summary.has_value());
  ASSERT_EQ(run->summary->unconsumed_size(), 1);
  EXPECT_EQ(run->summary->unconsumed(0).seq(), 4);
}

TEST_F(RunSourceTest, AnActiveRunHasNoSummary) {
  absl::StatusOr<RunData> run = LoadRun(*store_, "solo");
  ASSERT_THAT(run, IsOk());
  EXPECT_EQ(run->session, "");
  EXPECT_EQ(run->events.size(), 3u);
  EXPECT_FALSE(run->summary.has_value());
}

TEST_F(RunSourceTest, ASessionGivesItsLatestRun) {
  absl::StatusOr<RunData> latest = LoadRun(*store_, "golden");
  ASSERT_THAT(latest, IsOk());
  EXPECT_EQ(latest->run, "run-a");
  EXPECT_EQ(latest->session_version, 2);
  EXPECT_FALSE(latest->summary.has_value()) << "ended, but no summary was stored";

  absl::StatusOr<RunData> first = LoadRun(*store_, "golden@1");
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(first->run, "run-b");
}

TEST_F(RunSourceTest, UnknownRefsAreNotFound) {
  EXPECT_THAT(LoadRun(*store_, "nope"),
              StatusIs(absl::StatusCode::kNotFound, "no run or session \"nope\""));
  EXPECT_THAT(LoadRun(*store_, "golden@7"),
              StatusIs(absl::StatusCode::kNotFound, "no run or session \"golden@7\""));
  EXPECT_THAT(LoadRun(*store_, "golden@x"),
              StatusIs(absl::StatusCode::kNotFound, "no run or session \"golden@x\""));
  EXPECT_THAT(LoadRun(*store_, "unused"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("session \"unused\" has no runs")));
  EXPECT_THAT(LoadRun(*store_, ""), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(RunSourceTest, AServerGivesTheSameRuns) {
  store_.reset();  // the server opens the database itself
  service::ServerOptions options;
  options.db_path = dir_.File("understudy.db");
  options.listen = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<service::Server>> server = service::Server::Start(options);
  ASSERT_THAT(server, IsOk());
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel((*server)->grpc_address(), grpc::InsecureChannelCredentials());

  absl::StatusOr<RunData> latest = LoadRun(channel, "golden", absl::Seconds(10));
  ASSERT_THAT(latest, IsOk());
  EXPECT_EQ(latest->run, "run-a");
  EXPECT_EQ(latest->session, "golden");
  EXPECT_EQ(latest->session_version, 2);
  EXPECT_THAT(Agents(*latest), ElementsAre("1 run_started run-a", "2 exchange run-a",
                                           "3 run_ended run-a"));
  EXPECT_FALSE(latest->summary.has_value());

  absl::StatusOr<RunData> by_id = LoadRun(channel, "run-b", absl::Seconds(10));
  ASSERT_THAT(by_id, IsOk());
  EXPECT_EQ(by_id->run, "run-b");

  EXPECT_THAT(LoadRun(channel, "nope", absl::Seconds(10)),
              StatusIs(absl::StatusCode::kNotFound, "no run or session \"nope\""));
  EXPECT_THAT(LoadRun(channel, "unused", absl::Seconds(10)),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("has no runs")));

  // The same resolution without the events, for tools that read the run
  // their own way (query_trace).
  absl::StatusOr<v1::Run> resolved = ResolveRun(channel, "golden", absl::Seconds(10));
  ASSERT_THAT(resolved, IsOk());
  EXPECT_EQ(resolved->id(), "run-a");
  EXPECT_EQ(ResolveRun(channel, "golden@1", absl::Seconds(10))->id(), "run-b");
  EXPECT_EQ(ResolveRun(channel, "run-b", absl::Seconds(10))->id(), "run-b");
  EXPECT_THAT(ResolveRun(channel, "nope", absl::Seconds(10)),
              StatusIs(absl::StatusCode::kNotFound, "no run or session \"nope\""));
  EXPECT_THAT((*server)->Shutdown(), IsOk());
}

TEST(RunSourceServerTest, AnUnreachableServerIsUnavailable) {
  // A port nothing listens on: bound and closed by a server that has stopped.
  service::ServerOptions options;
  store::ScopedTempDir dir;
  options.db_path = dir.File("understudy.db");
  options.listen = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<service::Server>> server = service::Server::Start(options);
  ASSERT_THAT(server, IsOk());
  const std::string address = (*server)->grpc_address();
  server->reset();
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  absl::StatusOr<RunData> run = LoadRun(channel, "golden", absl::Seconds(2));
  EXPECT_TRUE(absl::IsUnavailable(run.status()) || absl::IsDeadlineExceeded(run.status()))
      << run.status();
  EXPECT_THAT(run.status().message(), HasSubstr("run \"golden\""));
}

}  // namespace
}  // namespace testgen
}  // namespace understudy
