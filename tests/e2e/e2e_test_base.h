// What the end-to-end tests share: a fixture with a fresh directory and
// database per test, typed clients for the understudy services, and calls
// that turn grpc::Status into absl::Status so that base/status_matchers.h
// (StatusIs, IsOk) applies to RPC results.
//
// Every RPC made through these helpers has a deadline (kCallTimeout unless
// said otherwise), so a hung server fails a test instead of hanging it.
#ifndef UNDERSTUDY_TESTS_E2E_E2E_TEST_BASE_H_
#define UNDERSTUDY_TESTS_E2E_E2E_TEST_BASE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_process.h"
#include "tests/fakes/fake_model.h"
#include "understudy/v1/understudy.grpc.pb.h"

#define US_E2E_CONCAT_INNER_(a, b) a##b
#define US_E2E_CONCAT_(a, b) US_E2E_CONCAT_INNER_(a, b)

// `ASSERT_OK_AND_ASSIGN(auto x, F());` declares `x` from an OK StatusOr, or
// fails the test (returning from it) with the status.
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(US_E2E_CONCAT_(us_e2e_statusor_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, expr)             \
  auto statusor = (expr);                                           \
  ASSERT_TRUE(statusor.ok()) << #expr << ": " << statusor.status(); \
  lhs = std::move(statusor).value()

#define ASSERT_OK(expr) ASSERT_THAT((expr), ::understudy::IsOk())
#define EXPECT_OK(expr) EXPECT_THAT((expr), ::understudy::IsOk())

namespace understudy {
namespace e2e {

// Matches an OK absl::StatusOr<T> whose value matches `matcher`.
MATCHER_P(IsOkAndHolds, matcher, "") {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status().ToString();
    return false;
  }
  return ::testing::ExplainMatchResult(matcher, *arg, result_listener);
}

inline constexpr absl::Duration kCallTimeout = absl::Seconds(10);

// The absl::Status with the same code and message.
absl::Status FromGrpc(const grpc::Status& status);

// Stubs for every understudy service on one channel.
struct Clients {
  explicit Clients(std::shared_ptr<grpc::Channel> channel);

  // Closes the channel (the stubs must not be used afterwards).
  void Disconnect();

  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Model::Stub> model;
  std::unique_ptr<v1::Runs::Stub> runs;
  std::unique_ptr<v1::Recorder::Stub> recorder;
  std::unique_ptr<v1::Sessions::Stub> sessions;
  std::unique_ptr<v1::Traces::Stub> traces;
};

// A client context with a deadline `timeout` from now and, when not empty,
// the `understudy-run` and `understudy-agent` metadata.
std::unique_ptr<grpc::ClientContext> CallContext(absl::string_view run = "",
                                                 absl::string_view agent = "",
                                                 absl::Duration timeout = kCallTimeout);

absl::StatusOr<v1::Run> StartRun(Clients& c, const v1::StartRunRequest& request);
absl::StatusOr<v1::Run> StartRun(Clients& c, const std::string& session, v1::RunMode mode,
                                 std::optional<bool> strict = std::nullopt,
                                 const std::string& run_id = "");
absl::StatusOr<v1::RunSummary> EndRun(Clients& c, const std::string& run);
absl::StatusOr<v1::CompletionResponse> Complete(Clients& c, const std::string& run,
                                                const std::string& agent,
                                                const v1::CompletionRequest& request);
// The chunks of a streamed answer, in order; the call's error if it failed
// (even after some chunks).
absl::StatusOr<std::vector<v1::CompletionChunk>> StreamComplete(
    Clients& c, const std::string& run, const std::string& agent,
    const v1::CompletionRequest& request);
// Every event of `run` (all pages), in seq order.
absl::StatusOr<std::vector<v1::TraceEvent>> QueryTrace(Clients& c, const std::string& run,
                                                       const std::vector<std::string>& kinds = {},
                                                       const std::string& agent = "");
absl::StatusOr<v1::GetSessionResponse> GetSession(Clients& c, const std::string& name,
                                                  int64_t version = 0,
                                                  bool include_exchanges = true);
absl::StatusOr<std::string> ExportSession(Clients& c, const std::string& name, int64_t version = 0);
// One RecordExchanges call: the session on the first message, then one
// message per exchange; `close` on the last.
absl::StatusOr<v1::RecordExchangesResponse> RecordExchanges(
    Clients& c, const std::string& session, const std::vector<v1::Exchange>& exchanges,
    bool close = false, absl::Duration timeout = kCallTimeout);
// grpc.health.v1.Health/Check of `service` ("" for the server): the
// status enum value (1 is SERVING).
absl::StatusOr<int> HealthCheck(const std::shared_ptr<grpc::Channel>& channel,
                                const std::string& service = "");

// A request with one user message, for model "fake-gpt-1".
v1::CompletionRequest UserRequest(const std::string& content);

// The non-empty lines of a command's output, without their newlines.
std::vector<std::string> Lines(const std::string& text);

// A TCP socket connected to `address` (HOST:PORT, IPv4), or UNAVAILABLE.
// The caller closes it.
absl::StatusOr<int> ConnectTcp(const std::string& address);

// Connects to `address` (HOST:PORT, IPv4 loopback), sends `bytes`, and reads
// whatever comes back until the server closes or `timeout` passes. Returns
// the bytes read.
absl::StatusOr<std::string> SendRaw(const std::string& address, const std::string& bytes,
                                    absl::Duration timeout = absl::Seconds(2));

// Resident memory of process `pid` in MiB (VmRSS), or -1 when unknown.
int64_t RssMiB(pid_t pid);

// Evaluates `condition` every few milliseconds until it holds (true) or
// `timeout` passes (false). For outside state with no event to wait on,
// such as a file another process writes.
bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout);

// One step of fakes::AgentLoop as the client saw it.
struct StepResult {
  std::string agent;
  bool streamed = false;
  v1::CompletionRequest request;
  // The unary answer, or the one assembled from `chunks`.
  v1::CompletionResponse response;
  // Streamed steps only: the chunks exactly as received.
  std::vector<v1::CompletionChunk> chunks;
};

// Plays the first `step_count` steps of fakes::AgentLoop through understudy
// in `run`: each step is a Complete or StreamComplete call made as the step's
// agent. Stops at the first failure, whose status keeps its code and names
// the step.
absl::StatusOr<std::vector<StepResult>> RunAgentLoop(Clients& c, const std::string& run,
                                                     int step_count = fakes::AgentLoop::kSteps);

// Each test gets a fresh directory with a database path. The directory is
// removed afterwards unless the test failed or UNDERSTUDY_TEST_KEEP_DIRS is
// set, so that its logs (server-N.stderr) and database can be inspected.
class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  const std::string& dir() const { return dir_; }
  const std::string& db_path() const { return db_path_; }
  // `name` inside the test's directory.
  std::string Path(absl::string_view name) const;

  // Starts `understudy serve` on port 0 with the test's database (or `db`),
  // stderr into the test directory (server-N.stderr).
  absl::StatusOr<std::unique_ptr<ServerProcess>> StartServer(
      const std::string& upstream = "", const std::vector<std::string>& extra_args = {},
      const std::string& db = "");

  // Runs `understudy ARGS...` to completion (bounded by `timeout`).
  absl::StatusOr<ProcessResult> Cli(const std::vector<std::string>& args,
                                    const std::string& stdin_path = "",
                                    absl::Duration timeout = absl::Seconds(30));

  void WriteFile(const std::string& path, absl::string_view content);

  // Records fakes::AgentLoop into `session` through a server with a fake
  // upstream, ends the run and terminates the server (exit 0). Returns what
  // the client saw. Fails the test on any error (check HasFatalFailure()).
  void RecordGolden(const std::string& session, std::vector<StepResult>* steps,
                    std::string* run_id = nullptr);

 private:
  std::string dir_;
  std::string db_path_;
  int servers_started_ = 0;
};

}  // namespace e2e
}  // namespace understudy

#endif  // UNDERSTUDY_TESTS_E2E_E2E_TEST_BASE_H_
