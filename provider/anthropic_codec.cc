// The Anthropic Messages codec (provider/codec.h).
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "nlohmann/json.hpp"
#include "provider/anthropic.h"

namespace understudy {
namespace provider {
namespace anthropic {
namespace {

class MessagesCodec final : public Codec {
 public:
  absl::string_view name() const override { return "anthropic"; }
  absl::Span<const absl::string_view> IgnoredRequestFields() const override {
    return kIgnoredRequestFields;
  }
  absl::string_view upstream() const override { return "anthropic"; }
  // @anthropic-ai/sdk and anthropic append /v1/messages, @ai-sdk/anthropic
  // appends /messages: the codec serves both.
  std::pair<absl::string_view, absl::string_view> BaseUrlVariable() const override {
    return {"ANTHROPIC_BASE_URL", ""};
  }
  std::vector<std::string> routes() const override {
    return {"POST /v1/messages (also /messages)"};
  }
  // The Anthropic SDKs disagree on where /v1 goes: @anthropic-ai/sdk and
  // `anthropic` append /v1/messages to ANTHROPIC_BASE_URL, @ai-sdk/anthropic
  // expects /v1 inside it and appends /messages. Both name one API, so the
  // same base URL (`/run/{run}`, as `record|replay -- CMD` sets it) serves
  // both; what is recorded and forwarded is always /v1/messages.
  std::string NormalizePath(absl::string_view path) const override {
    return path == "/messages" ? "/v1/messages" : std::string(path);
  }
  bool Serves(absl::string_view path) const override { return path == "/v1/messages"; }
  absl::string_view client_header() const override { return "anthropic-version"; }
  bool ReplaysHeader(absl::string_view name) const override {
    return absl::StartsWith(name, "anthropic-ratelimit-");
  }

  absl::StatusOr<ParsedRequest> ParseRequest(const CallRoute&,
                                             absl::string_view body) const override {
    return anthropic::ParseRequest(body);
  }
  absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) const override {
    return anthropic::ParseResponse(body);
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
    return anthropic::StreamRenderer(chunks);
  }
  absl::StatusOr<std::string> ModelList(const std::vector<std::string>& models) const override {
    nlohmann::ordered_json data = nlohmann::ordered_json::array();
    for (const std::string& m : models) {
      data.push_back({{"type", "model"}, {"id", m}, {"display_name", m},
                      {"created_at", "1970-01-01T00:00:00Z"}});
    }
    nlohmann::ordered_json list;
    list["data"] = data;
    list["has_more"] = false;
    list["first_id"] =
        models.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(models.front());
    list["last_id"] =
        models.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(models.back());
    return list.dump();
  }
  std::string ErrorBody(const absl::Status& status, absl::string_view) const override {
    return anthropic::ErrorBody(status.message(), ErrorType(status.code()));
  }
};

}  // namespace

std::unique_ptr<Codec> NewCodec() { return std::make_unique<MessagesCodec>(); }

}  // namespace anthropic
}  // namespace provider
}  // namespace understudy
