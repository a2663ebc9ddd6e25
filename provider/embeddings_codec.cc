// The OpenAI embeddings codec (provider/codec.h). Embeddings never stream.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "provider/embeddings.h"
#include "provider/openai_codec.h"

namespace understudy {
namespace provider {
namespace embeddings {
namespace {

// Every event is refused: an embeddings answer is never streamed.
class NoStreamDecoder final : public ChunkDecoder {
 public:
  absl::StatusOr<std::optional<v1::CompletionChunk>> Decode(const SseEvent&) override {
    return absl::InvalidArgumentError("embeddings: a streamed answer was not expected");
  }
  bool done() const override { return false; }
};

class EmbeddingsCodec final : public OpenAiFamilyCodec {
 public:
  absl::string_view name() const override { return "openai-embeddings"; }
  absl::Span<const absl::string_view> IgnoredRequestFields() const override {
    return kIgnoredRequestFields;
  }
  std::vector<std::string> routes() const override { return {"POST /v1/embeddings"}; }
  bool Serves(absl::string_view path) const override { return path == "/v1/embeddings"; }

  absl::StatusOr<ParsedRequest> ParseRequest(const CallRoute&,
                                             absl::string_view body) const override {
    return embeddings::ParseRequest(body);
  }
  absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) const override {
    return embeddings::ParseResponse(body);
  }
  std::unique_ptr<ChunkDecoder> NewDecoder() const override {
    return std::make_unique<NoStreamDecoder>();
  }
  absl::StatusOr<std::string> RenderBody(const v1::CompletionResponse& response,
                                         const RenderContext& context) const override {
    if (context.parsed == nullptr) return absl::InternalError("embeddings: no request");
    return RenderResponse(context.parsed->canonical, ModelFor(context, response));
  }
  absl::StatusOr<std::unique_ptr<EventRenderer>> StreamRenderer(
      const google::protobuf::RepeatedPtrField<v1::CompletionChunk>&,
      const RenderContext&) const override {
    return absl::UnimplementedError("embeddings are never streamed");
  }
};

}  // namespace

std::unique_ptr<Codec> NewCodec() { return std::make_unique<EmbeddingsCodec>(); }

}  // namespace embeddings
}  // namespace provider
}  // namespace understudy
