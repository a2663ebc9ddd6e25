// The OpenAI family's shared codec behaviour, and the Chat Completions
// codec.
#include "provider/openai_codec.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "nlohmann/json.hpp"
#include "provider/openai.h"

namespace understudy {
namespace provider {

bool OpenAiFamilyCodec::ReplaysHeader(absl::string_view name) const {
  return name == "openai-processing-ms" || name == "openai-version" ||
         absl::StartsWith(name, "x-ratelimit-");
}

std::string OpenAiFamilyCodec::ErrorBody(const absl::Status& status,
                                         absl::string_view code) const {
  return openai::ErrorBody(status.message(), openai::ErrorType(status.code()), code);
}

std::string OpenAiFamilyCodec::RequestErrorBody(int http_status,
                                                absl::string_view message) const {
  return openai::ErrorBody(message, "invalid_request_error",
                           http_status == 413 ? "body_too_large" : "bad_request");
}

namespace openai {
namespace {

class ChatCompletionsCodec final : public OpenAiFamilyCodec {
 public:
  absl::string_view name() const override { return "openai"; }
  absl::Span<const absl::string_view> IgnoredRequestFields() const override {
    return kIgnoredRequestFields;
  }
  std::vector<std::pair<std::string, std::string>> CallAttributes() const override {
    return {{std::string(kOpenAiApiType), "chat_completions"}};
  }
  std::vector<std::string> routes() const override { return {"POST /v1/chat/completions"}; }
  bool Serves(absl::string_view path) const override { return path == "/v1/chat/completions"; }

  absl::StatusOr<ParsedRequest> ParseRequest(const CallRoute&,
                                             absl::string_view body) const override {
    return openai::ParseRequest(body);
  }
  absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) const override {
    return openai::ParseResponse(body);
  }
  std::unique_ptr<ChunkDecoder> NewDecoder() const override {
    return std::make_unique<StreamDecoder>();
  }
  absl::StatusOr<std::string> RenderBody(const v1::CompletionResponse& response,
                                         const RenderContext& context) const override {
    return RenderResponse(response, context.created);
  }
  absl::StatusOr<std::unique_ptr<EventRenderer>> StreamRenderer(
      const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
      const RenderContext& context) const override {
    const StreamMeta meta = context.recorded_body.empty()
                                ? StreamMeta{context.created, "", ""}
                                : StreamMetaFromBody(context.recorded_body, context.created);
    const bool include_usage = context.parsed != nullptr && context.parsed->include_usage;
    return openai::StreamRenderer(chunks, include_usage, meta);
  }
  absl::StatusOr<std::string> ModelList(const std::vector<std::string>& models) const override {
    nlohmann::ordered_json data = nlohmann::ordered_json::array();
    for (const std::string& m : models) {
      data.push_back({{"id", m}, {"object", "model"}, {"created", 0}, {"owned_by", "understudy"}});
    }
    nlohmann::ordered_json list;
    list["object"] = "list";
    list["data"] = data;
    return list.dump();
  }
};

}  // namespace

std::unique_ptr<Codec> NewCodec() { return std::make_unique<ChatCompletionsCodec>(); }

}  // namespace openai
}  // namespace provider
}  // namespace understudy
