// Built against the installed understudy-dev package only: asserts, with the
// installed helper, on a run that packaging/verify/deb.sh replayed, on the
// server it started. UNDERSTUDY_ADDR is the server's gRPC address,
// UNDERSTUDY_RUN the replayed run (one chat completion of session "smoke").
#include <cstdlib>
#include <string>

#include "clients/cpp/understudy_testing.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"

namespace {

namespace v1 = ::understudy::v1;
using ::testing::Not;
using ::understudy::test::ConsumedAll;
using ::understudy::test::Count;
using ::understudy::test::HasNoMisses;
using ::understudy::test::Kind;
using ::understudy::test::Replay;
using ::understudy::test::RunTrace;
using ::understudy::test::Satisfies;
using ::understudy::test::ScopedRun;

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

class InstalledHelperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Env("UNDERSTUDY_ADDR").empty()) << "UNDERSTUDY_ADDR (the gRPC address) is not set";
    ASSERT_FALSE(Env("UNDERSTUDY_RUN").empty()) << "UNDERSTUDY_RUN (the replayed run) is not set";
    channel_ = grpc::CreateChannel(Env("UNDERSTUDY_ADDR"), grpc::InsecureChannelCredentials());
  }

  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(InstalledHelperTest, TheReplayedRunAnsweredItsOneRequestFromTheRecording) {
  RunTrace trace(channel_, Env("UNDERSTUDY_RUN"));
  EXPECT_THAT(trace, HasNoMisses());
  EXPECT_THAT(trace, ConsumedAll());
  EXPECT_THAT(trace, Satisfies(Count(Kind({"exchange"}), v1::COMPARISON_EQ, 1)));
  // A matcher that must not pass, so that the ones above mean something.
  EXPECT_THAT(trace, Not(Satisfies(Count(Kind({"exchange"}), v1::COMPARISON_EQ, 2))));
}

TEST_F(InstalledHelperTest, AReplayThatSendsNothingLeavesTheRecordingUnconsumed) {
  absl::StatusOr<ScopedRun> run = ScopedRun::Start(channel_, Replay("smoke"));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_FALSE(run->id().empty());
  absl::StatusOr<v1::RunSummary> summary = run->End();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->unconsumed_size(), 1);
  EXPECT_THAT(run->trace(), Not(ConsumedAll()));
}

}  // namespace
