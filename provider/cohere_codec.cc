// The Cohere Chat API v2 codec (provider/codec.h).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "provider/cohere.h"

namespace understudy {
namespace provider {
namespace cohere {
namespace {

class ChatCodec final : public Codec {
 public:
  absl::string_view name() const override { return "cohere"; }
  absl::string_view upstream() const override { return "cohere"; }
  absl::Span<const absl::string_view> IgnoredRequestFields() const override {
    return kIgnoredRequestFields;
  }
  // Cohere's Python client reads CO_API_URL (its `base_url` default) and
  // appends "/v2/chat". The `cohere-ai` Node SDK reads none (only
  // CO_API_KEY): its users pass that variable as `baseUrl` or
  // `environment` to CohereClientV2.
  std::pair<absl::string_view, absl::string_view> BaseUrlVariable() const override {
    return {"CO_API_URL", ""};
  }
  std::vector<std::string> routes() const override { return {"POST /v2/chat"}; }
  bool Serves(absl::string_view path) const override { return path == "/v2/chat"; }
  // The SDK waits for X-RateLimit-Reset (after Retry-After) before it
  // retries a 408, 429 or 5xx.
  bool ReplaysHeader(absl::string_view name) const override {
    return name == "x-ratelimit-reset";
  }

  absl::StatusOr<ParsedRequest> ParseRequest(const CallRoute&,
                                             absl::string_view body) const override {
    return cohere::ParseRequest(body);
  }
  absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) const override {
    return cohere::ParseResponse(body);
  }
  std::unique_ptr<ChunkDecoder> NewDecoder() const override {
    return std::make_unique<StreamDecoder>();
  }
  absl::StatusOr<std::string> RenderBody(const v1::CompletionResponse& response,
                                         const RenderContext&) const override {
    return RenderResponse(response);
  }
  absl::StatusOr<std::unique_ptr<EventRenderer>> StreamRenderer(
      const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
      const RenderContext&) const override {
    return cohere::StreamRenderer(chunks);
  }
  // Cohere's shape has no place for understudy's code: the SDK's error
  // class follows the HTTP status, which the listener sets from the status.
  std::string ErrorBody(const absl::Status& status, absl::string_view) const override {
    return cohere::ErrorBody(status);
  }
  // Cohere's `message`, else the default's `error.message`.
  std::string UpstreamErrorMessage(absl::string_view body) const override {
    std::string message = ErrorMessage(body);
    return message.empty() ? Codec::UpstreamErrorMessage(body) : message;
  }
};

}  // namespace

std::unique_ptr<Codec> NewCodec() { return std::make_unique<ChatCodec>(); }

}  // namespace cohere
}  // namespace provider
}  // namespace understudy
