#include "upstream/grpc_upstream.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"

namespace understudy {
namespace upstream {
namespace {

absl::Status FromGrpc(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

// The call's credentials and deadline. understudy's own metadata
// (understudy-run, understudy-agent) is routing for understudy and never
// goes upstream; the agent travels in the request's `agent` field, which is
// part of the Model protocol the upstream speaks.
void Prepare(const UpstreamCall& call, grpc::ClientContext* ctx,
             v1::CompletionRequest* request) {
  for (const auto& [name, value] : call.headers) {
    if (absl::StartsWithIgnoreCase(name, "understudy-")) continue;
    ctx->AddMetadata(name, value);
  }
  if (call.deadline != absl::InfiniteFuture()) {
    ctx->set_deadline(absl::ToChronoTime(call.deadline));
  }
  request->clear_run();
  request->set_agent(call.agent);
}

// Owns one unary call until its callback runs.
struct UnaryCall {
  grpc::ClientContext ctx;
  v1::CompletionRequest request;
  v1::CompletionResponse response;
  std::function<void(absl::StatusOr<v1::CompletionResponse>)> done;
};

// Reads one server stream and deletes itself when it is over.
class StreamReader final : public grpc::ClientReadReactor<v1::CompletionChunk> {
 public:
  StreamReader(std::function<void(const v1::CompletionChunk&)> on_chunk,
               std::function<void(absl::Status)> on_done)
      : on_chunk_(std::move(on_chunk)), on_done_(std::move(on_done)) {}

  void Start(v1::Model::StubInterface* stub, const UpstreamCall& call,
             v1::CompletionRequest request) {
    request_ = std::move(request);
    Prepare(call, &ctx_, &request_);
    cancel_ = call.cancel;
    if (cancel_ != nullptr) cancel_->Set([this] { ctx_.TryCancel(); });
    stub->async()->StreamComplete(&ctx_, &request_, this);
    StartRead(&chunk_);
    StartCall();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows with the status.
    on_chunk_(chunk_);
    StartRead(&chunk_);
  }

  void OnDone(const grpc::Status& s) override {
    if (cancel_ != nullptr) cancel_->Clear();  // before the context goes
    on_done_(FromGrpc(s));
    delete this;
  }

 private:
  grpc::ClientContext ctx_;
  std::shared_ptr<UpstreamCancel> cancel_;
  v1::CompletionRequest request_;
  v1::CompletionChunk chunk_;
  std::function<void(const v1::CompletionChunk&)> on_chunk_;
  std::function<void(absl::Status)> on_done_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<GrpcUpstream>> GrpcUpstream::Create(absl::string_view target) {
  constexpr absl::string_view kScheme = "grpc://";
  if (!absl::StartsWith(target, kScheme) || target.size() == kScheme.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--upstream: expected grpc://HOST:PORT, got \"", target, "\""));
  }
  std::string address(target.substr(kScheme.size()));
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto channel =
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  return std::make_unique<GrpcUpstream>(v1::Model::NewStub(channel));
}

GrpcUpstream::GrpcUpstream(std::unique_ptr<v1::Model::StubInterface> stub)
    : stub_(std::move(stub)) {}

void GrpcUpstream::Complete(const UpstreamCall& call, const v1::CompletionRequest& request,
                            std::function<void(absl::StatusOr<v1::CompletionResponse>)> done) {
  auto* state = new UnaryCall;
  state->request = request;
  Prepare(call, &state->ctx, &state->request);
  state->done = std::move(done);
  stub_->async()->Complete(&state->ctx, &state->request, &state->response,
                           [state](grpc::Status s) {
                             if (s.ok()) {
                               state->done(std::move(state->response));
                             } else {
                               state->done(FromGrpc(s));
                             }
                             delete state;
                           });
}

void GrpcUpstream::StreamComplete(const UpstreamCall& call, const v1::CompletionRequest& request,
                                  std::function<void(const v1::CompletionChunk&)> on_chunk,
                                  std::function<void(absl::Status)> on_done) {
  auto* reader = new StreamReader(std::move(on_chunk), std::move(on_done));
  reader->Start(stub_.get(), call, request);
}

}  // namespace upstream
}  // namespace understudy
