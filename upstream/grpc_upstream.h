// ModelUpstream over gRPC: forwards to another server's understudy.v1.Model
// service (a real model gateway, or a scripted fake in tests).
#ifndef UNDERSTUDY_UPSTREAM_GRPC_UPSTREAM_H_
#define UNDERSTUDY_UPSTREAM_GRPC_UPSTREAM_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "understudy/v1/understudy.grpc.pb.h"
#include "upstream/upstream.h"

namespace understudy {
namespace upstream {

class GrpcUpstream final : public ModelUpstream {
 public:
  // `target` is `grpc://host:port` (plaintext). INVALID_ARGUMENT for any
  // other form. Connects lazily: an unreachable upstream fails calls with
  // UNAVAILABLE, not Create.
  static absl::StatusOr<std::unique_ptr<GrpcUpstream>> Create(absl::string_view target);

  // Uses `stub` (for tests: a mock); takes ownership.
  explicit GrpcUpstream(std::unique_ptr<v1::Model::StubInterface> stub);

  void Complete(const UpstreamCall& call, const v1::CompletionRequest& request,
                std::function<void(absl::StatusOr<v1::CompletionResponse>)> done) override;
  void StreamComplete(const UpstreamCall& call, const v1::CompletionRequest& request,
                      std::function<void(const v1::CompletionChunk&)> on_chunk,
                      std::function<void(absl::Status)> on_done) override;

 private:
  std::unique_ptr<v1::Model::StubInterface> stub_;
};

}  // namespace upstream
}  // namespace understudy

#endif  // UNDERSTUDY_UPSTREAM_GRPC_UPSTREAM_H_
