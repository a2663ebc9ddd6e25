// The `model` behaviour's brain (docs/sim.md "Model-backed behaviour"): the
// prompt goes to understudy's Model.Complete as the agent's request, so a
// recorded or scripted model session drives the simulated terminal agent.
//
//   std::unique_ptr<ModelBackend> model = NewGrpcModelBackend({addr, run});
//   absl::StatusOr<ModelAnswer> answer = model->Complete({agent, model, system, prompt});
//
// An interface so that the simulator's tests answer without a server.
#ifndef UNDERSTUDY_SIM_MODEL_BACKEND_H_
#define UNDERSTUDY_SIM_MODEL_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace understudy {
namespace sim {

struct ModelRequest {
  std::string agent;          // call metadata understudy-agent ("" none)
  std::string model;          // CompletionRequest.model
  std::string system_prompt;  // a system message first when not empty
  std::string prompt;         // the user message
};

struct ModelToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text, as the model wrote it
};

struct ModelAnswer {
  std::string text;
  std::vector<ModelToolCall> tool_calls;
};

// Thread-compatible: one call at a time.
class ModelBackend {
 public:
  virtual ~ModelBackend() = default;
  // The answer, or the call's error (NOT_FOUND for a replay miss,
  // UNAVAILABLE when the server cannot be reached, FAILED_PRECONDITION when
  // no address was given), its message naming what failed.
  virtual absl::StatusOr<ModelAnswer> Complete(const ModelRequest& request) = 0;
};

struct GrpcModelOptions {
  std::string addr;  // HOST:PORT; "" answers every call FAILED_PRECONDITION
  std::string run;   // call metadata understudy-run ("" the server's default run)
  absl::Duration deadline = absl::Seconds(30);
};

// Model.Complete over an insecure channel, dialled on the first call.
std::unique_ptr<ModelBackend> NewGrpcModelBackend(GrpcModelOptions options);

}  // namespace sim
}  // namespace understudy

#endif  // UNDERSTUDY_SIM_MODEL_BACKEND_H_
