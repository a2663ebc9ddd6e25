#include "sim/model_backend.h"

#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/env.h"
#include "base/fd_io.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "understudy/v1/understudy.grpc.pb.h"
#include "validation/utf8.h"

namespace understudy {
namespace sim {

void ModelCancellation::Cancel() {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return;
  cancelled_ = true;
  if (canceller_) canceller_();
}

bool ModelCancellation::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

bool ModelCancellation::SetCanceller(std::function<void()> canceller) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return false;
  canceller_ = std::move(canceller);
  return true;
}

void ModelCancellation::ClearCanceller() {
  std::function<void()> dropped;
  absl::MutexLock lock(&mu_);
  canceller_.swap(dropped);
}

bool ModelCancellation::WaitForCancel(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&cancelled_), timeout);
}

// Owned by the ModelCall and by its thread, whichever ends last.
struct ModelCall::Shared {
  ModelCancellation cancellation;
  WakePipe ready;  // woken by the call's thread once `result` is in
  absl::Mutex mu;
  std::optional<absl::StatusOr<ModelAnswer>> result ABSL_GUARDED_BY(mu);
  bool ended ABSL_GUARDED_BY(mu) = false;  // the work returned (and is gone)
};

absl::StatusOr<std::unique_ptr<ModelCall>> ModelCall::Start(Work work) {
  auto shared = std::make_shared<Shared>();
  if (shared->ready.read_fd() < 0) {
    return absl::ResourceExhaustedError("model call: could not make a pipe");
  }
  std::thread thread;
  try {
    thread = std::thread([shared, work = std::move(work)]() mutable {
      absl::StatusOr<ModelAnswer> result = work(shared->cancellation);
      // In case the work left its canceller behind: it may refer to the
      // work's stack, gone now.
      shared->cancellation.ClearCanceller();
      // What the work owns goes here, on this thread, before the owner can
      // hear that the call ended and stop waiting for it.
      work = nullptr;
      {
        absl::MutexLock lock(&shared->mu);
        shared->result = std::move(result);
        shared->ended = true;
      }
      shared->ready.Wake();
    });
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(absl::StrCat("model call: no thread: ", e.what()));
  }
  return std::unique_ptr<ModelCall>(new ModelCall(std::move(shared), std::move(thread)));
}

ModelCall::ModelCall(std::shared_ptr<Shared> shared, std::thread thread)
    : shared_(std::move(shared)), thread_(std::move(thread)) {}

ModelCall::~ModelCall() {
  shared_->cancellation.Cancel();
  bool ended;
  {
    absl::MutexLock lock(&shared_->mu);
    ended = shared_->mu.AwaitWithTimeout(absl::Condition(&shared_->ended), kCancelWait);
  }
  // Ended: the thread has only the wake-up left to do. Otherwise it keeps
  // `shared_` (and what its work owns) alive until it ends.
  if (ended) {
    thread_.join();
  } else {
    thread_.detach();
  }
}

int ModelCall::ready_fd() const { return shared_->ready.read_fd(); }

std::optional<absl::StatusOr<ModelAnswer>> ModelCall::TakeResult() {
  absl::MutexLock lock(&shared_->mu);
  std::optional<absl::StatusOr<ModelAnswer>> result = std::move(shared_->result);
  shared_->result.reset();
  return result;
}

namespace {

// Everything one gRPC call needs, owned by its work: the call may outlive
// the backend (ModelCall::Work).
struct GrpcCall {
  std::shared_ptr<v1::Model::Stub> stub;
  GrpcModelOptions options;
  std::string agent;
  v1::CompletionRequest request;
};

// On the call's thread.
absl::StatusOr<ModelAnswer> CompleteOnce(const GrpcCall& call, ModelCancellation& cancellation) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(Env::Default()->Now() + call.options.deadline));
  if (!call.options.run.empty()) context.AddMetadata("understudy-run", call.options.run);
  if (!call.agent.empty()) context.AddMetadata("understudy-agent", call.agent);
  // TryCancel is thread-safe, and gRPC honours it even before the call
  // starts; ClearCanceller makes sure it is not running when `context` goes.
  if (!cancellation.SetCanceller([&context] { context.TryCancel(); })) {
    return absl::CancelledError("model request cancelled");
  }
  v1::CompletionResponse response;
  const grpc::Status status = call.stub->Complete(&context, call.request, &response);
  cancellation.ClearCanceller();
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StrCat("model request to ", call.options.addr,
                                     " failed: ", status.error_message()));
  }
  ModelAnswer answer;
  answer.text = response.message().content();
  for (const v1::ToolCall& tool_call : response.message().tool_calls()) {
    answer.tool_calls.push_back({tool_call.id(), tool_call.name(), tool_call.arguments()});
  }
  return answer;
}

class GrpcModelBackend final : public ModelBackend {
 public:
  explicit GrpcModelBackend(GrpcModelOptions options) : options_(std::move(options)) {}

  absl::StatusOr<std::unique_ptr<ModelCall>> Start(const ModelRequest& request) override {
    if (options_.addr.empty()) {
      return ModelCall::Start([](ModelCancellation&) -> absl::StatusOr<ModelAnswer> {
        return absl::FailedPreconditionError(
            "a model behaviour needs understudy's address: --addr HOST:PORT or UNDERSTUDY_ADDR");
      });
    }
    if (stub_ == nullptr) {
      stub_ = v1::Model::NewStub(
          grpc::CreateChannel(options_.addr, grpc::InsecureChannelCredentials()));
    }
    auto call = std::make_shared<GrpcCall>();
    call->stub = stub_;
    call->options = options_;
    if (!request.agent.empty()) call->agent = validation::SanitizeUtf8(request.agent);
    call->request.set_model(request.model);
    if (!request.system_prompt.empty()) {
      v1::Message* system = call->request.add_messages();
      system->set_role("system");
      system->set_content(validation::SanitizeUtf8(request.system_prompt));
    }
    v1::Message* user = call->request.add_messages();
    user->set_role("user");
    user->set_content(validation::SanitizeUtf8(request.prompt));
    return ModelCall::Start([call = std::move(call)](ModelCancellation& cancellation) {
      return CompleteOnce(*call, cancellation);
    });
  }

 private:
  const GrpcModelOptions options_;
  // Created by Start (one thread); shared with the calls' threads, whose use
  // of it is thread-safe.
  std::shared_ptr<v1::Model::Stub> stub_;
};

}  // namespace

std::unique_ptr<ModelBackend> NewGrpcModelBackend(GrpcModelOptions options) {
  return std::make_unique<GrpcModelBackend>(std::move(options));
}

}  // namespace sim
}  // namespace understudy
