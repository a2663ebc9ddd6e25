// A scripted stand-in for a real model provider, for end-to-end tests and the
// README quickstart.
//
// FakeModel serves understudy.v1.Model (Complete and StreamComplete) on a
// loopback port in this process. Its answers are pure functions of the
// calling agent (the request's `agent` field, which understudy sets on what
// it forwards, or call metadata `understudy-agent` from a direct client) and
// the request, so recording the same conversation twice gives
// the same bytes, and a replay can be compared with a recording byte for
// byte. It plays a three-agent review loop:
//
//   orchestrator  calls tool `continue` with {"phase":"execute"}, or with
//                 {"phase":"verification"} once the conversation carries
//                 reviewer feedback;
//   executor      writes an implementation (tool `write_file`); its answer
//                 adds input validation once the reviewer's feedback is among
//                 its messages;
//   reviewer      answers "FEEDBACK: missing input validation" until the work
//                 under review mentions validation, then "APPROVED".
//
// Streamed answers come in several chunks: text fragments, then tool-call
// deltas by index (id and name on the first fragment, arguments split in
// two), then a last chunk with the finish reason and usage. Assembling the
// chunks (AssembleChunks) gives exactly the unary answer.
//
// AgentLoop drives the client side of the same loop: the six requests the
// agents send, each built from the answers before it.
#ifndef UNDERSTUDY_TESTS_FAKES_FAKE_MODEL_H_
#define UNDERSTUDY_TESTS_FAKES_FAKE_MODEL_H_

#include <atomic>
#include <set>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/server.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace fakes {

// The scripted answer of `agent` to `request`. Deterministic: the answer id
// is "fake-" plus a hash of (agent, request bytes); `run` and `agent` fields
// of the request are ignored.
v1::CompletionResponse ScriptedAnswer(absl::string_view agent,
                                      const v1::CompletionRequest& request);

// ScriptedAnswer split into the chunks of a stream (at least three).
std::vector<v1::CompletionChunk> ScriptedChunks(absl::string_view agent,
                                                const v1::CompletionRequest& request);

// The response a non-streaming caller would have got: text concatenated,
// tool-call deltas joined by index, last finish reason and usage, first id
// and model. `offset_micros` is ignored.
v1::CompletionResponse AssembleChunks(const std::vector<v1::CompletionChunk>& chunks);

// An in-process fake upstream. Thread-safe.
class FakeModel {
 public:
  // Listens on `listen` (port 0 picks a free port) and serves until Stop or
  // destruction. UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<FakeModel>> Start(
      const std::string& listen = "127.0.0.1:0");

  // Stops serving.
  ~FakeModel();
  FakeModel(const FakeModel&) = delete;
  FakeModel& operator=(const FakeModel&) = delete;

  // host:port actually bound.
  const std::string& address() const { return address_; }
  // The --upstream value for understudy: grpc://host:port.
  std::string target() const { return "grpc://" + address_; }

  // Calls received so far (each counted on arrival, before it is answered).
  int64_t complete_calls() const { return complete_calls_.load(); }
  int64_t stream_calls() const { return stream_calls_.load(); }
  int64_t calls() const { return complete_calls() + stream_calls(); }

  // The calling agent of every call, in arrival order.
  std::vector<std::string> agents_seen() const;
  // Every call metadata key any call carried.
  std::set<std::string> metadata_keys_seen() const;
  // The `authorization` metadata of the last call ("" when absent): lets a
  // test prove credentials reach the upstream.
  std::string last_authorization() const;

  // Stops accepting calls and waits (at most 5 seconds) for the ones in
  // flight, then cancels them. Afterwards the port refuses connections.
  // Idempotent. gRPC 1.51 also waits out those 5 seconds while a client
  // keeps an idle connection open, so close channels first when it matters.
  void Stop();

 private:
  class Service;
  FakeModel();

  void Observe(const grpc::ServerContext& context, const std::string& agent);

  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::atomic<int64_t> complete_calls_{0};
  std::atomic<int64_t> stream_calls_{0};

  mutable absl::Mutex mu_;
  std::vector<std::string> agents_seen_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> metadata_keys_seen_ ABSL_GUARDED_BY(mu_);
  std::string last_authorization_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

// The client side of the three-agent loop: orchestrator, executor, reviewer,
// orchestrator, executor, reviewer. Each request is built from the answers
// to the earlier steps, as real agents would, so a replay that answers
// differently would change later requests (and miss).
//
// Usage:
//   AgentLoop loop;
//   for (int i = 0; i < AgentLoop::kSteps; ++i) {
//     v1::CompletionRequest request = loop.Request(i);
//     v1::CompletionResponse response = ...;  // ask the model as loop.agent(i)
//     loop.Observe(i, response);
//   }
// Not thread-safe; one loop per conversation.
class AgentLoop {
 public:
  static constexpr int kSteps = 6;
  static constexpr char kModel[] = "fake-gpt-1";

  // "orchestrator", "executor" or "reviewer".
  static const char* Agent(int step);
  // Whether the step asks for a streamed answer (executor and reviewer in
  // the first round, executor in the second).
  static bool Streamed(int step);

  // The request step `step` sends. Requires Observe for every earlier step.
  v1::CompletionRequest Request(int step) const;
  // Records the answer to step `step`.
  void Observe(int step, const v1::CompletionResponse& response);

 private:
  std::vector<v1::CompletionResponse> answers_;
};

}  // namespace fakes
}  // namespace understudy

#endif  // UNDERSTUDY_TESTS_FAKES_FAKE_MODEL_H_
