#include "sim/trace_sink.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace understudy {
namespace sim {
namespace {

// Traces.Emit that records what it gets, or refuses it.
class FakeTraces final : public v1::Traces::Service {
 public:
  grpc::Status Emit(grpc::ServerContext*, const v1::EmitRequest* request,
                    v1::TraceEvent*) override {
    absl::MutexLock lock(&mu_);
    if (refuse_) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such run");
    requests_.push_back(*request);
    return grpc::Status::OK;
  }
  std::vector<v1::EmitRequest> requests() {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  void set_refuse(bool refuse) {
    absl::MutexLock lock(&mu_);
    refuse_ = refuse;
  }

 private:
  absl::Mutex mu_;
  std::vector<v1::EmitRequest> requests_ ABSL_GUARDED_BY(mu_);
  bool refuse_ ABSL_GUARDED_BY(mu_) = false;
};

class TraceSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    addr_ = "127.0.0.1:" + std::to_string(port);
  }
  void TearDown() override { server_->Shutdown(); }

  FakeTraces service_;
  std::unique_ptr<grpc::Server> server_;
  std::string addr_;
};

TEST_F(TraceSinkTest, SendsEventsInOrderWithRunAgentAndValidUtf8) {
  TraceSinkOptions options;
  options.addr = addr_;
  options.run = "run-1";
  options.agent = "coder";
  TraceSink sink(options);
  ASSERT_TRUE(sink.enabled());
  for (int i = 0; i < 50; ++i) {
    sink.Emit("sim.state", {{"n", std::to_string(i)}, {"bad", "x\xff"}});
  }
  ASSERT_TRUE(sink.Flush(absl::Seconds(5)));
  std::vector<v1::EmitRequest> got = service_.requests();
  ASSERT_EQ(got.size(), 50u);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(got[i].run(), "run-1");
    EXPECT_EQ(got[i].agent(), "coder");
    EXPECT_EQ(got[i].kind(), "sim.state");
    EXPECT_EQ(got[i].attributes().at("n"), std::to_string(i));
    EXPECT_EQ(got[i].attributes().at("bad"), "x\xEF\xBF\xBD");
  }
}

TEST_F(TraceSinkTest, FailuresAreReportedOnceAndCounted) {
  service_.set_refuse(true);
  absl::Mutex mu;
  std::vector<std::string> errors;
  TraceSinkOptions options;
  options.addr = addr_;
  options.run = "run-1";
  options.on_error = [&](const std::string& message) {
    absl::MutexLock lock(&mu);
    errors.push_back(message);
  };
  TraceSink sink(options);
  for (int i = 0; i < 3; ++i) sink.Emit("sim.state", {});
  ASSERT_TRUE(sink.Flush(absl::Seconds(5)));
  EXPECT_EQ(sink.failed(), 3u);
  absl::MutexLock lock(&mu);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], ::testing::HasSubstr("no such run"));
}

TEST_F(TraceSinkTest, DisabledWithoutAddressOrRun) {
  TraceSinkOptions no_run;
  no_run.addr = addr_;
  TraceSink sink(no_run);
  EXPECT_FALSE(sink.enabled());
  sink.Emit("sim.state", {});
  EXPECT_TRUE(sink.Flush(absl::ZeroDuration()));
  EXPECT_TRUE(service_.requests().empty());
}

TEST(TraceSinkUnreachableTest, FlushIsBoundedAndTheQueueIsBounded) {
  TraceSinkOptions options;
  options.addr = "127.0.0.1:1";  // nothing listens
  options.run = "run-1";
  options.max_queue = 5;
  options.call_deadline = absl::Milliseconds(200);
  const absl::Time start = absl::Now();
  {
    TraceSink sink(options);
    for (int i = 0; i < 20; ++i) sink.Emit("sim.state", {});
    EXPECT_GE(sink.dropped(), 14u);
    sink.Flush(absl::Milliseconds(300));
  }  // the destructor gives up within about a second
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

// A server that takes the connection and never answers: the exit pays one
// bound (the Flush the simulator makes), not that and the destructor's.
TEST(TraceSinkUnreachableTest, ExitWaitsOnceForAServerThatNeverAnswers) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 8), 0);  // connections complete; nobody reads them
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  TraceSinkOptions options;
  options.addr = absl::StrCat("127.0.0.1:", ntohs(address.sin_port));
  options.run = "run-1";
  options.call_deadline = absl::Seconds(10);
  absl::Time destroyed;
  {
    TraceSink sink(options);
    sink.Emit("sim.state", {});
    EXPECT_FALSE(sink.Flush(absl::Milliseconds(300)));
    destroyed = absl::Now();
  }
  EXPECT_LT(absl::Now() - destroyed, absl::Milliseconds(700));
  close(listener);
}

}  // namespace
}  // namespace sim
}  // namespace understudy
