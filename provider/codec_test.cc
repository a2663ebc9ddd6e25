#include "provider/codec.h"

#include <string>
#include <utility>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace provider {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const CodecRegistry& Codecs() { return CodecRegistry::Builtin(); }

TEST(CodecRegistryTest, NamesEveryApiOnceWithItsUpstream) {
  for (const char* name :
       {"openai", "openai-responses", "openai-embeddings", "anthropic", "gemini", "cohere",
        "vertex", "ollama", "azure-openai", "azure-openai-responses", "azure-openai-embeddings",
        "bedrock", "bedrock-invoke"}) {
    const Codec* codec = Codecs().Find(name);
    ASSERT_NE(codec, nullptr) << name;
    EXPECT_EQ(codec->name(), name);
  }
  EXPECT_EQ(Codecs().Find("bedrock-agent"), nullptr);
  EXPECT_THAT(Codecs().UpstreamNames(),
              ElementsAre("openai", "anthropic", "gemini", "cohere", "vertex", "ollama", "azure",
                          "bedrock"));
  EXPECT_EQ(Codecs().Default().name(), "openai");
}

TEST(CodecRegistryTest, NamesEachBaseUrlVariableOnceInRegistrationOrder) {
  // The three OpenAI APIs share one variable, read with /v1 after the run's
  // prefix; `record|replay -- CMD` sets exactly these.
  using Pair = std::pair<std::string, std::string>;
  EXPECT_THAT(Codecs().BaseUrlVariables(),
              ElementsAre(Pair("OPENAI_BASE_URL", "/v1"), Pair("ANTHROPIC_BASE_URL", ""),
                          Pair("GOOGLE_GEMINI_BASE_URL", ""), Pair("CO_API_URL", ""),
                          Pair("GOOGLE_VERTEX_BASE_URL", ""),
                          Pair("OLLAMA_HOST", ""), Pair("AZURE_OPENAI_ENDPOINT", ""),
                          Pair("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "")));
}

TEST(CodecRegistryTest, EachApiNamesTheRequestFieldsItsMatchingIgnores) {
  std::vector<std::string> names;
  for (const Codec* codec : Codecs().All()) {
    names.emplace_back(codec->name());
    EXPECT_FALSE(codec->IgnoredRequestFields().empty()) << codec->name();
  }
  EXPECT_THAT(names, ElementsAre("openai", "openai-responses", "openai-embeddings", "anthropic",
                                 "gemini", "cohere", "vertex", "ollama", "azure-openai",
                                 "azure-openai-responses", "azure-openai-embeddings", "bedrock",
                                 "bedrock-invoke"));
  EXPECT_THAT(Codecs().Find("anthropic")->IgnoredRequestFields(),
              ElementsAre("stream", "metadata"));
  EXPECT_THAT(Codecs().Find("gemini")->IgnoredRequestFields(), ElementsAre("labels"));
  EXPECT_THAT(Codecs().Find("bedrock")->IgnoredRequestFields(), ElementsAre("requestMetadata"));
  EXPECT_THAT(Codecs().Find("ollama")->IgnoredRequestFields(), ElementsAre("stream", "keep_alive"));
  EXPECT_THAT(Codecs().Find("cohere")->IgnoredRequestFields(), ElementsAre("stream", "priority"));
}

TEST(CodecRegistryTest, RoutesPathsToTheirApi) {
  EXPECT_EQ(Codecs().ForPath("/v1/chat/completions")->name(), "openai");
  EXPECT_EQ(Codecs().ForPath("/v1/responses")->name(), "openai-responses");
  EXPECT_EQ(Codecs().ForPath("/v1/responses/resp_1")->name(), "openai-responses");
  EXPECT_EQ(Codecs().ForPath("/v1/embeddings")->name(), "openai-embeddings");
  EXPECT_EQ(Codecs().ForPath("/v1/messages")->name(), "anthropic");
  EXPECT_EQ(Codecs().ForPath("/v1beta/models/g:generateContent")->name(), "gemini");
  EXPECT_EQ(Codecs().ForPath("/v1/models/g:streamGenerateContent")->name(), "gemini");
  EXPECT_EQ(Codecs().ForPath("/v1/models"), nullptr);
  EXPECT_EQ(Codecs().ForPath("/v1/models/g"), nullptr);
  EXPECT_EQ(Codecs().ForPath("/v2/other"), nullptr);
  EXPECT_EQ(Codecs().ForPath("/model/m%3A0/converse")->name(), "bedrock");
  EXPECT_EQ(Codecs().ForPath("/model/m/converse-stream")->name(), "bedrock");
  EXPECT_EQ(Codecs().ForPath("/model/m/invoke")->name(), "bedrock-invoke");
  EXPECT_EQ(Codecs().ForPath("/model/m/invoke-with-response-stream")->name(), "bedrock-invoke");
  EXPECT_EQ(Codecs().ForPath("/model/m/count-tokens"), nullptr);
  EXPECT_EQ(Codecs().ForPath("/v2/chat")->name(), "cohere");
  EXPECT_EQ(Codecs().ForPath("/api/chat")->name(), "ollama");
  EXPECT_EQ(Codecs().ForPath("/api/generate")->name(), "ollama");
  EXPECT_EQ(Codecs().ForPath("/api/embed")->name(), "ollama");
  EXPECT_EQ(Codecs().ForPath("/api/tags")->name(), "ollama");
  EXPECT_EQ(Codecs().ForPath("/v1/projects/p/locations/us-central1/publishers/google/models/"
                             "g:generateContent")
                ->name(),
            "vertex");
  EXPECT_EQ(Codecs().ForPath("/v1beta1/publishers/google/models/g:streamGenerateContent")->name(),
            "vertex");
  EXPECT_EQ(Codecs().ForPath("/v1/projects/p/locations/l/publishers/anthropic/models/c:rawPredict"),
            nullptr);
  EXPECT_EQ(Codecs().ForPath("/v1/projects//locations/l/publishers/google/models/g:x"), nullptr);
  EXPECT_EQ(Codecs().NormalizePath("/messages"), "/v1/messages");
  EXPECT_EQ(Codecs().NormalizePath("/v1/chat/completions"), "/v1/chat/completions");
}

TEST(CodecRegistryTest, ListsRoutesInRegistrationOrder) {
  EXPECT_THAT(Codecs().Routes(),
              ElementsAre("POST /v1/chat/completions", "POST /v1/responses",
                          "GET /v1/responses/{id}", "POST /v1/embeddings",
                          "POST /v1/messages (also /messages)",
                          "POST /v1beta/models/{model}:generateContent",
                          "POST /v1beta/models/{model}:streamGenerateContent",
                          "POST /v2/chat",
                          "POST /v1/projects/{project}/locations/{location}/publishers/google/"
                          "models/{model}:generateContent",
                          "POST /v1/projects/{project}/locations/{location}/publishers/google/"
                          "models/{model}:streamGenerateContent",
                          "POST /v1/publishers/google/models/{model}:generateContent",
                          "POST /v1/publishers/google/models/{model}:streamGenerateContent",
                          "POST /api/chat", "POST /api/generate", "POST /api/embed",
                          "GET /api/tags",
                          "POST /openai/deployments/{deployment}/chat/completions",
                          "POST /openai/v1/chat/completions", "POST /openai/responses",
                          "POST /openai/v1/responses",
                          "POST /openai/deployments/{deployment}/embeddings",
                          "POST /openai/v1/embeddings", "POST /model/{modelId}/converse",
                          "POST /model/{modelId}/converse-stream", "POST /model/{modelId}/invoke",
                          "POST /model/{modelId}/invoke-with-response-stream"));
}

TEST(CodecRegistryTest, TellsClientsApartByTheirHeader) {
  const auto none = [](absl::string_view) { return absl::string_view(); };
  const auto versioned = [](absl::string_view name) {
    return name == "anthropic-version" ? absl::string_view("2023-06-01") : absl::string_view();
  };
  EXPECT_EQ(Codecs().ForClient(none).name(), "openai");
  EXPECT_EQ(Codecs().ForClient(versioned).name(), "anthropic");
}

TEST(CodecRegistryTest, ReplaysCommonAndApiHeaders) {
  for (const char* name : {"x-request-id", "request-id", "retry-after", "retry-after-ms",
                           "openai-processing-ms", "openai-version", "x-ratelimit-limit-requests",
                           "anthropic-ratelimit-tokens-limit"}) {
    EXPECT_TRUE(Codecs().ReplaysHeader(name)) << name;
  }
  EXPECT_FALSE(Codecs().ReplaysHeader("set-cookie"));
}

TEST(GeminiRouteTest, ReadsModelAndStreamFormFromThePath) {
  const Codec& gemini = *Codecs().Find("gemini");
  absl::StatusOr<CallRoute> whole =
      gemini.Route("POST", "/v1beta/models/models/g-1:generateContent", "key=k");
  ASSERT_THAT(whole, IsOk());
  EXPECT_EQ(whole->model, "g-1");
  EXPECT_EQ(whole->framing, StreamFraming::kNone);
  EXPECT_EQ(gemini.RecordedPath(*whole), "/v1beta/models/models/g-1:generateContent");
  EXPECT_EQ(gemini.ForwardPath(*whole), "/v1beta/models/models/g-1:generateContent?key=k");

  absl::StatusOr<CallRoute> sse =
      gemini.Route("POST", "/v1beta/models/g:streamGenerateContent", "alt=sse&key=k");
  ASSERT_THAT(sse, IsOk());
  EXPECT_EQ(sse->framing, StreamFraming::kSse);
  EXPECT_EQ(gemini.RecordedPath(*sse), "/v1beta/models/g:streamGenerateContent?alt=sse");
  EXPECT_EQ(gemini.StreamContentType(*sse), "text/event-stream; charset=utf-8");

  absl::StatusOr<CallRoute> array = gemini.Route("POST", "/v1/models/g:streamGenerateContent", "");
  ASSERT_THAT(array, IsOk());
  EXPECT_EQ(array->framing, StreamFraming::kJsonArray);
  EXPECT_EQ(gemini.StreamContentType(*array), "application/json");
  EXPECT_TRUE(gemini.SameForm(*array, "application/json"));
  EXPECT_FALSE(gemini.SameForm(*array, "text/event-stream"));

  absl::StatusOr<ParsedRequest> parsed =
      gemini.ParseRequest(*array, R"({"contents":[{"parts":[{"text":"hi"}]}]})");
  ASSERT_THAT(parsed, IsOk());
  EXPECT_EQ(parsed->canonical.model(), "g");
  EXPECT_TRUE(parsed->stream);
  EXPECT_EQ(parsed->stream_framing, StreamFraming::kJsonArray);
}

TEST(GeminiRouteTest, VertexReadsTheModelFromItsLongerPath) {
  const Codec& vertex = *Codecs().Find("vertex");
  EXPECT_EQ(vertex.upstream(), "vertex");
  EXPECT_EQ(vertex.BaseUrlVariable().first, "GOOGLE_VERTEX_BASE_URL");
  const std::string path =
      "/v1/projects/p-1/locations/us-central1/publishers/google/models/gemini-2.5-flash:"
      "streamGenerateContent";
  absl::StatusOr<CallRoute> sse = vertex.Route("POST", path, "alt=sse");
  ASSERT_THAT(sse, IsOk());
  EXPECT_EQ(sse->model, "gemini-2.5-flash");
  EXPECT_EQ(sse->framing, StreamFraming::kSse);
  EXPECT_EQ(vertex.RecordedPath(*sse), path + "?alt=sse");
  absl::StatusOr<CallRoute> express =
      vertex.Route("POST", "/v1/publishers/google/models/g:generateContent", "");
  ASSERT_THAT(express, IsOk());
  EXPECT_EQ(express->model, "g");
  EXPECT_THAT(vertex.Route("POST", "/v1/publishers/google/models/:generateContent", "").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("/v1/projects/{project}/locations/{location}/publishers/google/"
                                 "models/{model}:method")));
  // Gemini's error shape.
  EXPECT_THAT(vertex.ErrorBody(absl::NotFoundError("x"), ""), HasSubstr("\"NOT_FOUND\""));
}

TEST(GeminiRouteTest, RefusesOtherMethodsAndEmptyModels) {
  const Codec& gemini = *Codecs().Find("gemini");
  EXPECT_THAT(gemini.Route("POST", "/v1beta/models/g:countTokens", "").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("not \"countTokens\"")));
  EXPECT_THAT(gemini.Route("POST", "/v1beta/models/models/:generateContent", "").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("model name")));
}

TEST(StoredResponsesTest, FetchRouteAndIds) {
  const Codec& responses = *Codecs().Find("openai-responses");
  absl::StatusOr<CallRoute> fetch = responses.Route("GET", "/v1/responses/resp_9", "");
  ASSERT_THAT(fetch, IsOk());
  EXPECT_EQ(fetch->kind, CallRoute::Kind::kFetch);
  EXPECT_EQ(fetch->resource_id, "resp_9");
  EXPECT_EQ(responses.Route("POST", "/v1/responses", "")->kind, CallRoute::Kind::kGenerate);

  const StoredResponses* stored = responses.stored();
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(Codecs().Find("openai")->stored(), nullptr);
  v1::CompletionRequest request;
  request.set_model("m");
  v1::Exchange recorded;
  recorded.mutable_response()->set_id("resp_abc");
  EXPECT_EQ(stored->IdFor(request, recorded), "resp_abc");
  v1::Exchange scripted;
  scripted.mutable_response()->mutable_message()->set_content("hi");
  const std::string derived = stored->IdFor(request, scripted);
  EXPECT_TRUE(stored->IsOwnId(derived)) << derived;
  EXPECT_EQ(stored->IdFor(request, scripted), derived);
}

TEST(CodecErrorTest, RefusalsTakeEachApisShape) {
  EXPECT_THAT(Codecs().Default().RequestErrorBody(413, "too big"),
              HasSubstr(R"("code":"body_too_large")"));
  EXPECT_THAT(Codecs().Find("openai-embeddings")->RequestErrorBody(400, "bad"),
              HasSubstr(R"("code":"bad_request")"));
  EXPECT_THAT(Codecs().Find("anthropic")->RequestErrorBody(400, "bad"),
              HasSubstr(R"("type":"error")"));
  EXPECT_THAT(Codecs().Find("gemini")->RequestErrorBody(400, "bad"),
              HasSubstr(R"("status":"INVALID_ARGUMENT")"));
  EXPECT_EQ(Codecs().Find("bedrock")->RequestErrorBody(400, "bad"),
            R"({"__type":"ValidationException","message":"bad"})");
  EXPECT_EQ(Codecs().Find("ollama")->RequestErrorBody(400, "bad"), R"({"error":"bad"})");
  EXPECT_THAT(Codecs().Find("cohere")->RequestErrorBody(400, "bad"),
              HasSubstr(R"("message":"bad")"));
}

}  // namespace
}  // namespace provider
}  // namespace understudy
