// testgen's reads of a run through a real server (gRPC), beside
// testgen/run_source_test.cc's reads of the database: the same runs, the
// same errors.
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "service/server.h"
#include "store/test_util.h"
#include "testgen/run_source.h"
#include "testgen/run_source_test_util.h"

namespace understudy {
namespace testgen {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

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
