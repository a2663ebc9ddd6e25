// The Ollama codec (provider/codec.h): three generation routes and the
// model list, one codec. The route says which endpoint a request is for;
// the body says whether it streams (NDJSON, the default) or not; a whole
// answer says by its fields which endpoint it answers.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "provider/ollama.h"

namespace understudy {
namespace provider {
namespace ollama {
namespace {

// Where Ollama lists the models it has.
constexpr absl::string_view kTagsPath = "/api/tags";

// The endpoint an answer is rendered for: the route's, else the one the
// request's operation names.
Endpoint EndpointFor(const RenderContext& context) {
  if (context.call != nullptr) {
    if (std::optional<Endpoint> endpoint = EndpointOf(context.call->path)) return *endpoint;
  }
  return context.parsed != nullptr ? EndpointOfRequest(context.parsed->canonical) : Endpoint::kChat;
}

class OllamaCodec final : public Codec {
 public:
  absl::string_view name() const override { return "ollama"; }
  absl::string_view upstream() const override { return "ollama"; }
  absl::Span<const absl::string_view> IgnoredRequestFields() const override {
    return kIgnoredRequestFields;
  }
  // The Python client (ollama-python) and the ollama CLI read OLLAMA_HOST,
  // path included. The npm client (ollama-js) reads none: its users pass
  // this URL as `host`.
  std::pair<absl::string_view, absl::string_view> BaseUrlVariable() const override {
    return {"OLLAMA_HOST", ""};
  }

  std::vector<std::string> routes() const override {
    return {"POST /api/chat", "POST /api/generate", "POST /api/embed", "GET /api/tags"};
  }
  bool Serves(absl::string_view path) const override {
    return EndpointOf(path).has_value() || path == kTagsPath;
  }
  // GET /api/tags lists the run's models (ModelList), as Ollama lists the
  // models it has pulled; the other routes are generations.
  absl::StatusOr<CallRoute> Route(absl::string_view method, absl::string_view path,
                                  absl::string_view query) const override {
    absl::StatusOr<CallRoute> call = Codec::Route(method, path, query);
    if (call.ok() && path == kTagsPath) call->kind = CallRoute::Kind::kListModels;
    return call;
  }

  absl::StatusOr<ParsedRequest> ParseRequest(const CallRoute& call,
                                             absl::string_view body) const override {
    const std::optional<Endpoint> endpoint = EndpointOf(call.path);
    if (!endpoint.has_value()) {
      return absl::NotFoundError(
          "ollama: the route names none of /api/chat, /api/generate, /api/embed");
    }
    return ollama::ParseRequest(*endpoint, body);
  }
  absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) const override {
    return ollama::ParseResponse(body);
  }
  std::unique_ptr<ChunkDecoder> NewDecoder() const override {
    return std::make_unique<StreamDecoder>();
  }
  absl::StatusOr<std::string> RenderBody(const v1::CompletionResponse& response,
                                         const RenderContext& context) const override {
    const Endpoint endpoint = EndpointFor(context);
    if (endpoint != Endpoint::kEmbed) {
      return RenderResponse(response, endpoint, ModelFor(context, response), context.created);
    }
    if (context.parsed == nullptr) return absl::InternalError("ollama embed: no request");
    return RenderEmbedResponse(context.parsed->canonical, ModelFor(context, response));
  }
  absl::StatusOr<std::unique_ptr<EventRenderer>> StreamRenderer(
      const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
      const RenderContext& context) const override {
    StreamShape shape;
    shape.endpoint = EndpointFor(context);
    if (shape.endpoint == Endpoint::kEmbed) {
      return absl::UnimplementedError("ollama: /api/embed answers are never streamed");
    }
    shape.model = ModelFor(context, v1::CompletionResponse());
    shape.created = context.created;
    shape.recorded_body = context.recorded_body;
    return ollama::StreamRenderer(chunks, shape);
  }
  // Whether a call streams is in its body, not its route, and the listener
  // asks only about a call that streams (service/http_render.cc): a
  // recording has its form when it was streamed as NDJSON.
  bool SameForm(const CallRoute&, absl::string_view recorded_content_type) const override {
    return IsNdjson(recorded_content_type);
  }
  std::string StreamContentType(const CallRoute&) const override {
    return std::string(kNdjsonContentType);
  }
  absl::StatusOr<std::string> ModelList(const std::vector<std::string>& models) const override {
    return ollama::ModelList(models);
  }

  std::string ErrorBody(const absl::Status& status, absl::string_view) const override {
    return ollama::ErrorBody(status);
  }
  std::string UpstreamErrorMessage(absl::string_view body) const override {
    return ErrorMessage(body);
  }
};

}  // namespace

std::unique_ptr<Codec> NewCodec() { return std::make_unique<OllamaCodec>(); }

}  // namespace ollama
}  // namespace provider
}  // namespace understudy
