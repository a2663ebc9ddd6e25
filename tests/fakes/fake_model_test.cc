// The fake upstream plays its script as documented, in process and as the
// fake_model binary.
#include "tests/fakes/fake_model.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "tests/e2e/e2e_test_base.h"

namespace understudy {
namespace fakes {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::understudy::e2e::CallContext;
using ::understudy::e2e::FromGrpc;

// Plays the whole AgentLoop against `stub` directly (no understudy).
std::vector<v1::CompletionResponse> PlayLoop(v1::Model::Stub* stub) {
  AgentLoop loop;
  std::vector<v1::CompletionResponse> answers;
  for (int i = 0; i < AgentLoop::kSteps; ++i) {
    v1::CompletionRequest request = loop.Request(i);
    auto context = CallContext("", AgentLoop::Agent(i));
    v1::CompletionResponse response;
    if (AgentLoop::Streamed(i)) {
      auto reader = stub->StreamComplete(context.get(), request);
      std::vector<v1::CompletionChunk> chunks;
      v1::CompletionChunk chunk;
      while (reader->Read(&chunk)) chunks.push_back(chunk);
      EXPECT_TRUE(reader->Finish().ok());
      EXPECT_GE(chunks.size(), 3u);
      response = AssembleChunks(chunks);
    } else {
      EXPECT_TRUE(stub->Complete(context.get(), request, &response).ok());
    }
    loop.Observe(i, response);
    answers.push_back(response);
  }
  return answers;
}

TEST(FakeModelTest, PlaysTheReviewLoopAsScripted) {
  absl::StatusOr<std::unique_ptr<FakeModel>> fake = FakeModel::Start();
  ASSERT_TRUE(fake.ok()) << fake.status();
  auto stub = v1::Model::NewStub(
      grpc::CreateChannel((*fake)->address(), grpc::InsecureChannelCredentials()));
  std::vector<v1::CompletionResponse> a = PlayLoop(stub.get());
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a[0].message().tool_calls(0).name(), "continue");
  EXPECT_EQ(a[0].message().tool_calls(0).arguments(), R"({"phase":"execute"})");
  EXPECT_EQ(a[0].finish_reason(), "tool_calls");
  EXPECT_THAT(a[1].message().content(), HasSubstr("v1"));
  EXPECT_THAT(a[1].message().tool_calls(0).arguments(), Not(HasSubstr("validation")));
  EXPECT_EQ(a[2].message().content(), "FEEDBACK: missing input validation");
  EXPECT_EQ(a[3].message().tool_calls(0).arguments(), R"({"phase":"verification"})");
  EXPECT_THAT(a[4].message().content(), HasSubstr("input validation"));
  EXPECT_THAT(a[5].message().content(), HasSubstr("APPROVED"));
  EXPECT_EQ(a[5].finish_reason(), "stop");
  for (const v1::CompletionResponse& r : a) {
    EXPECT_GT(r.usage().input_tokens(), 0);
    EXPECT_GT(r.usage().output_tokens(), 0);
    EXPECT_TRUE(absl::StartsWith(r.id(), "fake-")) << r.id();
  }
  EXPECT_EQ((*fake)->calls(), 6);
  EXPECT_EQ((*fake)->stream_calls(), 3);
  EXPECT_THAT((*fake)->agents_seen(), ElementsAre("orchestrator", "executor", "reviewer",
                                                  "orchestrator", "executor", "reviewer"));

  // Deterministic: the same conversation gives the same bytes.
  std::vector<v1::CompletionResponse> b = PlayLoop(stub.get());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].SerializeAsString(), b[i].SerializeAsString()) << "step " << i;
  }
}

TEST(FakeModelTest, ChunksAssembleToTheUnaryAnswer) {
  AgentLoop loop;
  v1::CompletionRequest request = loop.Request(0);
  for (const char* agent : {"orchestrator", "executor", "reviewer", "someone"}) {
    std::vector<v1::CompletionChunk> chunks = ScriptedChunks(agent, request);
    EXPECT_GE(chunks.size(), 3u);
    EXPECT_EQ(AssembleChunks(chunks).SerializeAsString(),
              ScriptedAnswer(agent, request).SerializeAsString())
        << agent;
  }
  // The answer depends on the agent, not only on the request.
  EXPECT_NE(ScriptedAnswer("orchestrator", request).id(), ScriptedAnswer("executor", request).id());
}

TEST(FakeModelTest, StopRefusesFurtherCallsAndKeepsTheCount) {
  absl::StatusOr<std::unique_ptr<FakeModel>> fake = FakeModel::Start();
  ASSERT_TRUE(fake.ok()) << fake.status();
  auto stub = v1::Model::NewStub(
      grpc::CreateChannel((*fake)->address(), grpc::InsecureChannelCredentials()));
  AgentLoop loop;
  v1::CompletionResponse response;
  auto context = CallContext("", "reviewer");
  ASSERT_TRUE(stub->Complete(context.get(), loop.Request(0), &response).ok());
  (*fake)->Stop();
  auto context2 = CallContext("", "reviewer", absl::Seconds(5));
  EXPECT_THAT(FromGrpc(stub->Complete(context2.get(), loop.Request(0), &response)),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ((*fake)->calls(), 1);
}

TEST(FakeModelTest, BinaryPrintsItsAddressAndServesUntilSigterm) {
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  absl::StatusOr<std::unique_ptr<e2e::Child>> child =
      e2e::Child::Spawn({FAKE_MODEL_BIN, "--listen", "127.0.0.1:0"}, null_fd, out[1], null_fd);
  ::close(out[1]);
  ::close(null_fd);
  ASSERT_TRUE(child.ok()) << child.status();

  // First line, with a deadline.
  std::string line;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (line.find('\n') == std::string::npos && absl::Now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[256];
    ssize_t n = ::read(out[0], buf, sizeof(buf));
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  ASSERT_TRUE(absl::StartsWith(line, "fake_model listening 127.0.0.1:")) << line;
  std::string address = line.substr(std::string("fake_model listening ").size());
  address = address.substr(0, address.find('\n'));

  auto stub = v1::Model::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  std::vector<v1::CompletionResponse> answers = PlayLoop(stub.get());
  ASSERT_EQ(answers.size(), 6u);
  EXPECT_EQ(answers[2].message().content(), "FEEDBACK: missing input validation");

  // Close the connection first: gRPC 1.51 servers wait for open connections
  // until their shutdown deadline (see FakeModel::Stop).
  stub.reset();
  ASSERT_TRUE((*child)->Signal(SIGTERM).ok());
  EXPECT_THAT((*child)->Wait(absl::Now() + absl::Seconds(20)), e2e::IsOkAndHolds(0));
}

TEST(FakeModelTest, BinaryRejectsUnknownArguments) {
  absl::StatusOr<e2e::ProcessResult> r = e2e::RunProcess(FAKE_MODEL_BIN, {"--bogus"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_THAT(r->err, HasSubstr("usage: fake_model"));
}

}  // namespace
}  // namespace fakes
}  // namespace understudy
