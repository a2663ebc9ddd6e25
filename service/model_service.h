// understudy.v1.Model over gRPC: what an agent calls instead of its model.
#ifndef UNDERSTUDY_SERVICE_MODEL_SERVICE_H_
#define UNDERSTUDY_SERVICE_MODEL_SERVICE_H_

#include "engine/engine.h"
#include "metrics/metrics.h"
#include "service/call_tracker.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace service {

// Stateless and thin: unpacks the call, asks the engine, converts the status.
// Uses the callback API so a replayed answer costs no thread hand-off.
class ModelService final : public v1::Model::CallbackService {
 public:
  // Not owned; must outlive the service. Calls are counted by `tracker` and
  // refused with UNAVAILABLE once it drains; a unary call's time is observed
  // in `metrics` (may be null) as api "grpc".
  ModelService(engine::Engine* engine, CallTracker* tracker, metrics::Metrics* metrics = nullptr)
      : engine_(engine), tracker_(tracker), metrics_(metrics) {}

  grpc::ServerUnaryReactor* Complete(grpc::CallbackServerContext* context,
                                     const v1::CompletionRequest* request,
                                     v1::CompletionResponse* response) override;

  grpc::ServerWriteReactor<v1::CompletionChunk>* StreamComplete(
      grpc::CallbackServerContext* context, const v1::CompletionRequest* request) override;

 private:
  engine::Engine* const engine_;
  CallTracker* const tracker_;
  metrics::Metrics* const metrics_;
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_MODEL_SERVICE_H_
