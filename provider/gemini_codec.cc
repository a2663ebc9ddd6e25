// The Gemini codec (provider/codec.h): the model and the stream form are in
// the route, `/{version}/models/{model}:{method}[?alt=sse]`.
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

constexpr absl::string_view kPrefixes[] = {"/v1beta/models/", "/v1/models/"};

// The `{model}` and `{method}` of a Gemini path (`method` is what follows
// the last ':'); false for other paths.
bool SplitPath(absl::string_view path, absl::string_view* model, absl::string_view* method) {
  for (absl::string_view prefix : kPrefixes) {
    if (!absl::StartsWith(path, prefix)) continue;
    absl::string_view rest = path.substr(prefix.size());
    const size_t colon = rest.rfind(':');
    if (colon == absl::string_view::npos) return false;
    *model = rest.substr(0, colon);
    *method = rest.substr(colon + 1);
    return true;
  }
  return false;
}

// The value of query parameter `name` ("" when absent). Values are compared
// as sent; none of the parameters read here needs percent-decoding.
absl::string_view QueryParam(absl::string_view query, absl::string_view name) {
  for (absl::string_view pair : absl::StrSplit(query, '&')) {
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) {
      return eq == absl::string_view::npos ? absl::string_view() : pair.substr(eq + 1);
    }
  }
  return {};
}

class GeminiCodec final : public Codec {
 public:
  absl::string_view name() const override { return "gemini"; }
  absl::Span<const absl::string_view> IgnoredRequestFields() const override {
    return kIgnoredRequestFields;
  }
  absl::string_view upstream() const override { return "gemini"; }
  // @google/genai. @ai-sdk/google reads none: its users pass this URL +
  // "/v1beta" as `baseURL`.
  std::pair<absl::string_view, absl::string_view> BaseUrlVariable() const override {
    return {"GOOGLE_GEMINI_BASE_URL", ""};
  }
  std::vector<std::string> routes() const override {
    return {"POST /v1beta/models/{model}:generateContent",
            "POST /v1beta/models/{model}:streamGenerateContent"};
  }
  bool Serves(absl::string_view path) const override {
    absl::string_view model;
    absl::string_view method;
    return SplitPath(path, &model, &method);
  }
  absl::StatusOr<CallRoute> Route(absl::string_view http_method, absl::string_view path,
                                  absl::string_view query) const override {
    absl::string_view model;
    absl::string_view method;
    SplitPath(path, &model, &method);
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
      return absl::InvalidArgumentError(
          "path: the model name in /v1beta/models/{model}:method is empty or not valid UTF-8");
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
      parsed->json_array_stream = call.framing == StreamFraming::kJsonArray;
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
};

}  // namespace

std::unique_ptr<Codec> NewCodec() { return std::make_unique<GeminiCodec>(); }

}  // namespace gemini
}  // namespace provider
}  // namespace understudy
