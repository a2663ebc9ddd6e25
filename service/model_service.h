// understudy.v1.Model over gRPC: what an agent calls instead of its model.
#ifndef UNDERSTUDY_SERVICE_MODEL_SERVICE_H_
#define UNDERSTUDY_SERVICE_MODEL_SERVICE_H_

#include "replayer/engine.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace service {

// Stateless and thin: unpacks the call, asks the engine, converts the status.
// Uses the callback API so a replayed answer costs no thread hand-off.
class ModelService final : public v1::Model::CallbackService {
 public:
  // `engine` is not owned and must outlive the service.
  explicit ModelService(replayer::Engine* engine) : engine_(engine) {}

  grpc::ServerUnaryReactor* Complete(grpc::CallbackServerContext* context,
                                     const v1::CompletionRequest* request,
                                     v1::CompletionResponse* response) override;

  grpc::ServerWriteReactor<v1::CompletionChunk>* StreamComplete(
      grpc::CallbackServerContext* context, const v1::CompletionRequest* request) override;

 private:
  replayer::Engine* const engine_;
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_MODEL_SERVICE_H_
