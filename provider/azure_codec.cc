// The Azure OpenAI codecs (provider/azure.h): OpenAI's codec of each API
// behind Azure's routes.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "provider/azure.h"
#include "provider/embeddings.h"
#include "provider/openai.h"
#include "provider/responses.h"
#include "validation/utf8.h"

namespace understudy {
namespace provider {
namespace azure {
namespace {

constexpr absl::string_view kDeployments = "/openai/deployments/";
// AzureOpenAI's paths under a base URL ending in /v1 (OPENAI_BASE_URL).
constexpr absl::string_view kClientDeployments = "/v1/deployments/";
constexpr absl::string_view kV1 = "/openai/v1";

// One Azure form of an OpenAI API.
struct Api {
  absl::string_view name;
  // The API's OpenAI path ("/v1/chat/completions") and what follows a
  // deployment for it ("/chat/completions"; "" when Azure has no
  // deployment route for it).
  absl::string_view openai_path;
  absl::string_view deployment_suffix;
  // Azure's route without a deployment ("/openai/responses"; "" for none).
  absl::string_view plain_path;
};

constexpr Api kChat = {"azure-openai", "/v1/chat/completions", "/chat/completions", ""};
constexpr Api kEmbeddings = {"azure-openai-embeddings", "/v1/embeddings", "/embeddings", ""};
constexpr Api kResponses = {"azure-openai-responses", "/v1/responses", "", "/openai/responses"};

// True for `path` equal to `route` or naming a resource under it.
bool AtOrUnder(absl::string_view path, absl::string_view route) {
  return path == route || (absl::StartsWith(path, route) && path.size() > route.size() &&
                           path[route.size()] == '/');
}

class AzureCodec final : public Codec {
 public:
  AzureCodec(const Api& api, std::unique_ptr<Codec> openai)
      : api_(api), openai_(std::move(openai)) {}

  absl::string_view name() const override { return api_.name; }
  absl::string_view upstream() const override { return "azure"; }
  std::vector<std::pair<std::string, std::string>> CallAttributes() const override {
    return openai_->CallAttributes();
  }
  absl::Span<const absl::string_view> IgnoredRequestFields() const override {
    return openai_->IgnoredRequestFields();
  }
  // The openai package's AzureOpenAI and Python's AzureOpenAI read it
  // when given no base URL (the Node client prefers OPENAI_BASE_URL).
  std::pair<absl::string_view, absl::string_view> BaseUrlVariable() const override {
    return {"AZURE_OPENAI_ENDPOINT", ""};
  }

  std::vector<std::string> routes() const override {
    std::vector<std::string> out;
    if (!api_.deployment_suffix.empty()) {
      out.push_back(absl::StrCat("POST /openai/deployments/{deployment}", api_.deployment_suffix));
    }
    if (!api_.plain_path.empty()) out.push_back(absl::StrCat("POST ", api_.plain_path));
    out.push_back(absl::StrCat("POST ", kV1, api_.openai_path.substr(3)));
    return out;
  }
  std::string NormalizePath(absl::string_view path) const override {
    if (absl::ConsumePrefix(&path, kClientDeployments)) return absl::StrCat(kDeployments, path);
    return std::string(path);
  }
  bool Serves(absl::string_view path) const override {
    return !Deployment(path).empty() || OpenAiPath(path) != nullptr;
  }
  // AzureOpenAI under OPENAI_BASE_URL sends Responses to {B}/v1/responses
  // with its api-version; its other APIs go under a deployment.
  bool Claims(absl::string_view path, absl::string_view query) const override {
    return !api_.plain_path.empty() && !QueryParam(query, "api-version").empty() &&
           AtOrUnder(path, api_.openai_path);
  }
  absl::StatusOr<CallRoute> Route(absl::string_view method, absl::string_view path,
                                  absl::string_view query) const override {
    std::string openai_path;
    const absl::string_view deployment = Deployment(path);
    if (!deployment.empty()) {
      openai_path = std::string(api_.openai_path);
    } else if (const absl::string_view* base = OpenAiPath(path); base != nullptr) {
      openai_path = absl::StrCat(api_.openai_path, path.substr(base->size()));
    } else {
      openai_path = std::string(path);  // claimed: OpenAI's own path
    }
    if (!validation::IsValidUtf8(deployment)) {
      return absl::InvalidArgumentError(
          "path: the deployment in /openai/deployments/{deployment}/… is not valid UTF-8");
    }
    absl::StatusOr<CallRoute> call = openai_->Route(method, openai_path, query);
    if (!call.ok()) return call;
    call->path = std::string(path);
    call->model = std::string(deployment);
    return call;
  }
  std::string ForwardPath(const CallRoute& call) const override {
    const std::string path = AzurePath(call.path);
    return call.query.empty() ? path : absl::StrCat(path, "?", call.query);
  }
  // Azure's path and its api-version: nothing else of the query.
  std::string RecordedPath(const CallRoute& call) const override {
    const absl::string_view version = QueryParam(call.query, "api-version");
    const std::string path = AzurePath(call.path);
    return version.empty() ? path : absl::StrCat(path, "?api-version=", version);
  }
  bool ReplaysHeader(absl::string_view name) const override {
    return openai_->ReplaysHeader(name) || name == "apim-request-id" ||
           name == "x-ms-region" || name == "azureml-model-session";
  }

  absl::StatusOr<ParsedRequest> ParseRequest(const CallRoute& call,
                                             absl::string_view body) const override {
    return openai_->ParseRequest(call, body);
  }
  absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) const override {
    return openai_->ParseResponse(body);
  }
  std::unique_ptr<ChunkDecoder> NewDecoder() const override { return openai_->NewDecoder(); }
  absl::StatusOr<std::string> RenderBody(const v1::CompletionResponse& response,
                                         const RenderContext& context) const override {
    return openai_->RenderBody(response, context);
  }
  absl::StatusOr<std::unique_ptr<EventRenderer>> StreamRenderer(
      const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
      const RenderContext& context) const override {
    return openai_->StreamRenderer(chunks, context);
  }
  bool SameForm(const CallRoute& call, absl::string_view content_type) const override {
    return openai_->SameForm(call, content_type);
  }
  absl::StatusOr<std::string> ModelList(const std::vector<std::string>& models) const override {
    return openai_->ModelList(models);
  }
  const StoredResponses* stored() const override { return openai_->stored(); }
  std::string ErrorBody(const absl::Status& status, absl::string_view code) const override {
    return openai_->ErrorBody(status, code);
  }
  std::string RequestErrorBody(int http_status, absl::string_view message) const override {
    return openai_->RequestErrorBody(http_status, message);
  }

 private:
  // The deployment of /openai/deployments/{deployment}{suffix}, "" when
  // `path` is not that route.
  absl::string_view Deployment(absl::string_view path) const {
    if (api_.deployment_suffix.empty() || !absl::ConsumePrefix(&path, kDeployments) ||
        !absl::ConsumeSuffix(&path, api_.deployment_suffix) || absl::StrContains(path, '/')) {
      return "";
    }
    return path;
  }
  // Which of Azure's plain routes `path` is at or under, or null.
  const absl::string_view* OpenAiPath(absl::string_view path) const {
    if (AtOrUnder(path, v1_path_)) return &v1_path_;
    if (!api_.plain_path.empty() && AtOrUnder(path, api_.plain_path)) return &api_.plain_path;
    return nullptr;
  }
  // The path Azure serves for `path` (a claimed /v1/responses… becomes
  // /openai/responses…).
  std::string AzurePath(absl::string_view path) const {
    if (!api_.plain_path.empty() && absl::ConsumePrefix(&path, api_.openai_path)) {
      return absl::StrCat(api_.plain_path, path);
    }
    return std::string(path);
  }

  const Api& api_;
  const std::string v1_storage_ = absl::StrCat(kV1, api_.openai_path.substr(3));
  const absl::string_view v1_path_ = v1_storage_;
  std::unique_ptr<Codec> openai_;
};

}  // namespace

std::unique_ptr<Codec> NewChatCodec() {
  return std::make_unique<AzureCodec>(kChat, openai::NewCodec());
}
std::unique_ptr<Codec> NewResponsesCodec() {
  return std::make_unique<AzureCodec>(kResponses, responses::NewCodec());
}
std::unique_ptr<Codec> NewEmbeddingsCodec() {
  return std::make_unique<AzureCodec>(kEmbeddings, embeddings::NewCodec());
}

}  // namespace azure
}  // namespace provider
}  // namespace understudy
