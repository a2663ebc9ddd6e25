// The OpenAI Responses codec (provider/codec.h), with its stored responses:
// previous_response_id chains, item references and GET /v1/responses/{id}.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "provider/canonical.h"
#include "provider/openai_codec.h"
#include "provider/responses.h"

namespace understudy {
namespace provider {
namespace responses {
namespace {

constexpr absl::string_view kPath = "/v1/responses";
constexpr absl::string_view kFetchPrefix = "/v1/responses/";

class Stored final : public StoredResponses {
 public:
  absl::string_view fetch_route() const override { return "/v1/responses/{id}"; }
  bool IsOwnId(absl::string_view id) const override { return absl::StartsWith(id, "resp"); }
  std::string IdFor(const v1::CompletionRequest& request,
                    const v1::Exchange& exchange) const override {
    if (!exchange.response().id().empty() && IsOwnId(exchange.response().id())) {
      return exchange.response().id();
    }
    // Same conversation and answer, same id: a scripted answer keeps its id
    // from one replay to the next.
    std::string seed = CanonicalText(request);
    absl::StrAppend(&seed, "\x1f", exchange.response().SerializeAsString());
    return DerivedId("resp_", seed);
  }
  std::string IdOf(absl::string_view object) const override { return ResponseIdOf(object); }
  std::string RecordedObject(const v1::NativeExchange& native) const override {
    if (native.chunks_size() == 0) return native.response_body();
    for (int i = native.chunks_size() - 1; i >= 0; --i) {
      SseParser parser;
      absl::StatusOr<std::vector<SseEvent>> events = parser.Feed(native.chunks(i).data());
      if (!events.ok()) continue;
      absl::StatusOr<std::vector<SseEvent>> rest = parser.Finish();
      if (rest.ok()) events->insert(events->end(), rest->begin(), rest->end());
      for (auto it = events->rbegin(); it != events->rend(); ++it) {
        std::string object = ResponseObjectFromEvent(it->data);
        if (!object.empty()) return object;
      }
    }
    return "";
  }
  std::vector<std::pair<std::string, v1::Message>> OutputItems(
      absl::string_view object) const override {
    return responses::OutputItems(object);
  }
};

class ResponsesCodec final : public OpenAiFamilyCodec {
 public:
  absl::string_view name() const override { return "openai-responses"; }
  absl::Span<const absl::string_view> IgnoredRequestFields() const override {
    return kIgnoredRequestFields;
  }
  std::vector<std::pair<std::string, std::string>> CallAttributes() const override {
    return {{std::string(kOpenAiApiType), "responses"}};
  }
  std::vector<std::string> routes() const override {
    return {"POST /v1/responses", "GET /v1/responses/{id}"};
  }
  bool Serves(absl::string_view path) const override {
    return path == kPath || absl::StartsWith(path, kFetchPrefix);
  }
  absl::StatusOr<CallRoute> Route(absl::string_view method, absl::string_view path,
                                  absl::string_view query) const override {
    absl::StatusOr<CallRoute> call = Codec::Route(method, path, query);
    if (call.ok() && absl::ConsumePrefix(&path, kFetchPrefix)) {
      call->kind = CallRoute::Kind::kFetch;
      call->resource_id = std::string(path);
    }
    return call;
  }

  absl::StatusOr<ParsedRequest> ParseRequest(const CallRoute&,
                                             absl::string_view body) const override {
    return responses::ParseRequest(body);
  }
  absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) const override {
    return responses::ParseResponse(body);
  }
  std::unique_ptr<ChunkDecoder> NewDecoder() const override {
    return std::make_unique<StreamDecoder>();
  }
  absl::StatusOr<std::string> RenderBody(const v1::CompletionResponse& response,
                                         const RenderContext& context) const override {
    RenderMeta meta;
    meta.id = context.response_id;
    meta.created_at = context.created;
    meta.model = ModelFor(context, response);
    return RenderResponse(response, meta);
  }
  absl::StatusOr<std::unique_ptr<EventRenderer>> StreamRenderer(
      const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
      const RenderContext& context) const override {
    RenderMeta meta;
    meta.id = context.response_id;
    meta.created_at = context.created;
    meta.model = context.parsed != nullptr ? context.parsed->canonical.model() : "";
    return responses::StreamRenderer(chunks, meta);
  }
  const StoredResponses* stored() const override { return &stored_; }

 private:
  Stored stored_;
};

}  // namespace

std::unique_ptr<Codec> NewCodec() { return std::make_unique<ResponsesCodec>(); }

}  // namespace responses
}  // namespace provider
}  // namespace understudy
