// The Gemini codecs (provider/codec.h): the Gemini API and Vertex AI, one
// body in two route forms; the model and the stream form are in the route,
// `…/models/{model}:{method}[?alt=sse]`.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "provider/gemini.h"
#include "validation/utf8.h"

namespace understudy {
namespace provider {
namespace gemini {
namespace {

// The `{model}` and `{method}` of `rest`, "{model}:{method}" (`method` is
// what follows the last ':'); false when there is no ':'.
bool SplitModel(absl::string_view rest, absl::string_view* model, absl::string_view* method) {
  const size_t colon = rest.rfind(':');
  if (colon == absl::string_view::npos) return false;
  *model = rest.substr(0, colon);
  *method = rest.substr(colon + 1);
  return true;
}

// The Gemini API's paths: /{v1beta|v1}/models/{model}:{method}.
bool SplitGeminiPath(absl::string_view path, absl::string_view* model,
                     absl::string_view* method) {
  for (absl::string_view prefix : {"/v1beta/models/", "/v1/models/"}) {
    if (absl::ConsumePrefix(&path, prefix)) return SplitModel(path, model, method);
  }
  return false;
}

// Vertex AI's: /{v1|v1beta1}/[projects/{p}/locations/{l}/]publishers/
// {publisher}/models/{model}:{method} (without a project: the express
// mode of an API key). Only Google's models speak Gemini's body.
bool SplitVertexPath(absl::string_view path, absl::string_view* model,
                     absl::string_view* method) {
  if (!absl::ConsumePrefix(&path, "/v1/") && !absl::ConsumePrefix(&path, "/v1beta1/")) {
    return false;
  }
  if (absl::ConsumePrefix(&path, "projects/")) {
    const std::vector<absl::string_view> parts = absl::StrSplit(path, absl::MaxSplits('/', 3));
    if (parts.size() != 4 || parts[0].empty() || parts[1] != "locations" || parts[2].empty()) {
      return false;
    }
    path = parts[3];
  }
  if (!absl::ConsumePrefix(&path, "publishers/google/models/")) return false;
  return SplitModel(path, model, method);
}

// What tells the Gemini API and Vertex AI apart; the bodies are the same.
struct Dialect {
  absl::string_view name;
  absl::string_view base_url_variable;
  bool (*split)(absl::string_view, absl::string_view*, absl::string_view*);
  std::vector<std::string> (*routes)();
  absl::string_view path_form;  // as errors name it
};

constexpr Dialect kGemini = {
    "gemini", "GOOGLE_GEMINI_BASE_URL", SplitGeminiPath,
    [] {
      return std::vector<std::string>{"POST /v1beta/models/{model}:generateContent",
                                      "POST /v1beta/models/{model}:streamGenerateContent"};
    },
    "/v1beta/models/{model}:method"};

constexpr Dialect kVertex = {
    "vertex", "GOOGLE_VERTEX_BASE_URL", SplitVertexPath,
    [] {
      return std::vector<std::string>{
          "POST /v1/projects/{project}/locations/{location}/publishers/google/models/"
          "{model}:generateContent",
          "POST /v1/projects/{project}/locations/{location}/publishers/google/models/"
          "{model}:streamGenerateContent",
          "POST /v1/publishers/google/models/{model}:generateContent",
          "POST /v1/publishers/google/models/{model}:streamGenerateContent"};
    },
    "/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:method"};

class GeminiCodec final : public Codec {
 public:
  explicit GeminiCodec(const Dialect& dialect) : dialect_(dialect) {}

  absl::string_view name() const override { return dialect_.name; }
  absl::Span<const absl::string_view> IgnoredRequestFields() const override {
    return kIgnoredRequestFields;
  }
  absl::string_view upstream() const override { return dialect_.name; }
  // @google/genai (GOOGLE_VERTEX_BASE_URL with `vertexai: true`).
  // @ai-sdk/google reads none: its users pass this URL + "/v1beta" as
  // `baseURL`.
  std::pair<absl::string_view, absl::string_view> BaseUrlVariable() const override {
    return {dialect_.base_url_variable, ""};
  }
  std::vector<std::string> routes() const override { return dialect_.routes(); }
  bool Serves(absl::string_view path) const override {
    absl::string_view model;
    absl::string_view method;
    return dialect_.split(path, &model, &method);
  }
  absl::StatusOr<CallRoute> Route(absl::string_view http_method, absl::string_view path,
                                  absl::string_view query) const override {
    absl::string_view model;
    absl::string_view method;
    dialect_.split(path, &model, &method);
    CallRoute call;
    call.path = std::string(path);
    call.query = std::string(query);
    if (method == "streamGenerateContent") {
      call.framing =
          QueryParam(query, "alt") == "sse" ? StreamFraming::kSse : StreamFraming::kJsonArray;
    } else if (method != "generateContent") {
      return absl::NotFoundError(absl::StrCat(
          "no route for ", http_method, " ", path,
          ": understudy serves the Gemini methods generateContent and streamGenerateContent, "
          "not \"",
          absl::CHexEscape(method.substr(0, 100)), "\""));
    }
    absl::ConsumePrefix(&model, "models/");
    if (model.empty() || !validation::IsValidUtf8(model)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "path: the model name in ", dialect_.path_form, " is empty or not valid UTF-8"));
    }
    call.model = std::string(model);
    return call;
  }
  // The query (alt, and a key given there) goes upstream as sent.
  std::string ForwardPath(const CallRoute& call) const override {
    return call.query.empty() ? call.path : absl::StrCat(call.path, "?", call.query);
  }
  // No query, but for the stream form (never `key`, a credential).
  std::string RecordedPath(const CallRoute& call) const override {
    return call.framing == StreamFraming::kSse ? absl::StrCat(call.path, "?alt=sse") : call.path;
  }

  absl::StatusOr<ParsedRequest> ParseRequest(const CallRoute& call,
                                             absl::string_view body) const override {
    absl::StatusOr<ParsedRequest> parsed = gemini::ParseRequest(body, call.model);
    if (parsed.ok()) {
      parsed->stream = call.framing != StreamFraming::kNone;
      parsed->include_usage = parsed->stream;
      if (call.framing == StreamFraming::kJsonArray) parsed->stream_framing = call.framing;
    }
    return parsed;
  }
  absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) const override {
    return gemini::ParseResponse(body);
  }
  std::unique_ptr<ChunkDecoder> NewDecoder() const override {
    return std::make_unique<StreamDecoder>();
  }
  absl::StatusOr<std::string> RenderBody(const v1::CompletionResponse& response,
                                         const RenderContext& context) const override {
    return RenderResponse(response, ModelFor(context, response));
  }
  absl::StatusOr<std::unique_ptr<EventRenderer>> StreamRenderer(
      const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
      const RenderContext& context) const override {
    const bool sse = context.call == nullptr || context.call->framing == StreamFraming::kSse;
    return gemini::StreamRenderer(chunks, context.call != nullptr ? context.call->model : "", sse);
  }
  // Gemini streams in two forms; recorded events replay only to a caller
  // asking for the same one.
  bool SameForm(const CallRoute& call, absl::string_view recorded_content_type) const override {
    return IsEventStream(recorded_content_type) == (call.framing == StreamFraming::kSse);
  }
  std::string StreamContentType(const CallRoute& call) const override {
    return call.framing == StreamFraming::kSse ? Codec::StreamContentType(call)
                                               : "application/json";
  }
  std::string ErrorBody(const absl::Status& status, absl::string_view) const override {
    return gemini::ErrorBody(status);
  }

 private:
  const Dialect& dialect_;
};

}  // namespace

std::unique_ptr<Codec> NewCodec() { return std::make_unique<GeminiCodec>(kGemini); }
std::unique_ptr<Codec> NewVertexCodec() { return std::make_unique<GeminiCodec>(kVertex); }

}  // namespace gemini
}  // namespace provider
}  // namespace understudy
