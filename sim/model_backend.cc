#include "sim/model_backend.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "understudy/v1/understudy.grpc.pb.h"
#include "validation/utf8.h"

namespace understudy {
namespace sim {
namespace {

class GrpcModelBackend final : public ModelBackend {
 public:
  explicit GrpcModelBackend(GrpcModelOptions options) : options_(std::move(options)) {}

  absl::StatusOr<ModelAnswer> Complete(const ModelRequest& request) override {
    if (options_.addr.empty()) {
      return absl::FailedPreconditionError(
          "a model behaviour needs understudy's address: --addr HOST:PORT or UNDERSTUDY_ADDR");
    }
    if (stub_ == nullptr) {
      stub_ = v1::Model::NewStub(
          grpc::CreateChannel(options_.addr, grpc::InsecureChannelCredentials()));
    }
    v1::CompletionRequest call;
    call.set_model(request.model);
    if (!request.system_prompt.empty()) {
      v1::Message* system = call.add_messages();
      system->set_role("system");
      system->set_content(validation::SanitizeUtf8(request.system_prompt));
    }
    v1::Message* user = call.add_messages();
    user->set_role("user");
    user->set_content(validation::SanitizeUtf8(request.prompt));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + options_.deadline));
    if (!options_.run.empty()) context.AddMetadata("understudy-run", options_.run);
    if (!request.agent.empty()) {
      context.AddMetadata("understudy-agent", validation::SanitizeUtf8(request.agent));
    }
    v1::CompletionResponse response;
    grpc::Status status = stub_->Complete(&context, call, &response);
    if (!status.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          absl::StrCat("model request to ", options_.addr,
                                       " failed: ", status.error_message()));
    }
    ModelAnswer answer;
    answer.text = response.message().content();
    for (const v1::ToolCall& tool_call : response.message().tool_calls()) {
      answer.tool_calls.push_back({tool_call.id(), tool_call.name(), tool_call.arguments()});
    }
    return answer;
  }

 private:
  const GrpcModelOptions options_;
  std::unique_ptr<v1::Model::Stub> stub_;
};

}  // namespace

std::unique_ptr<ModelBackend> NewGrpcModelBackend(GrpcModelOptions options) {
  return std::make_unique<GrpcModelBackend>(std::move(options));
}

}  // namespace sim
}  // namespace understudy
