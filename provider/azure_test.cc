#include "provider/azure.h"

#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "provider/codec.h"

namespace understudy {
namespace provider {
namespace {

using ::testing::HasSubstr;

const CodecRegistry& Codecs() { return CodecRegistry::Builtin(); }

// The route `path?query` resolves to through the registry, as the
// listener resolves it.
struct Resolved {
  const Codec* codec = nullptr;
  CallRoute call;
};
Resolved Resolve(absl::string_view method, absl::string_view path, absl::string_view query) {
  Resolved out;
  const std::string normalized = Codecs().NormalizePath(path);
  out.codec = Codecs().ForPath(normalized, query);
  if (out.codec == nullptr) return out;
  absl::StatusOr<CallRoute> call = out.codec->Route(method, normalized, query);
  EXPECT_THAT(call, IsOk()) << path;
  if (call.ok()) out.call = *call;
  return out;
}

TEST(AzureTest, DeploymentRoutesForwardAndRecordUnderAzuresPath) {
  Resolved chat =
      Resolve("POST", "/openai/deployments/gpt-4o-prod/chat/completions", "api-version=2024-10-21");
  ASSERT_NE(chat.codec, nullptr);
  EXPECT_EQ(chat.codec->name(), "azure-openai");
  EXPECT_EQ(chat.codec->upstream(), "azure");
  EXPECT_EQ(chat.call.model, "gpt-4o-prod");
  EXPECT_EQ(chat.codec->ForwardPath(chat.call),
            "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21");
  EXPECT_EQ(chat.codec->RecordedPath(chat.call),
            "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21");

  Resolved embed = Resolve("POST", "/openai/deployments/e/embeddings", "api-version=v&x=1");
  ASSERT_NE(embed.codec, nullptr);
  EXPECT_EQ(embed.codec->name(), "azure-openai-embeddings");
  EXPECT_EQ(embed.codec->RecordedPath(embed.call), "/openai/deployments/e/embeddings?api-version=v");
  EXPECT_EQ(embed.codec->ForwardPath(embed.call),
            "/openai/deployments/e/embeddings?api-version=v&x=1");
}

TEST(AzureTest, TheNodeClientUnderOpenAiBaseUrlIsAzureToo) {
  // AzureOpenAI with OPENAI_BASE_URL=http://…/v1: deployments under /v1.
  Resolved chat = Resolve("POST", "/v1/deployments/d/chat/completions", "api-version=V");
  ASSERT_NE(chat.codec, nullptr);
  EXPECT_EQ(chat.codec->name(), "azure-openai");
  EXPECT_EQ(chat.codec->ForwardPath(chat.call),
            "/openai/deployments/d/chat/completions?api-version=V");
  // Its Responses calls carry only the api-version to tell them apart.
  Resolved responses = Resolve("POST", "/v1/responses", "api-version=V");
  ASSERT_NE(responses.codec, nullptr);
  EXPECT_EQ(responses.codec->name(), "azure-openai-responses");
  EXPECT_EQ(responses.codec->ForwardPath(responses.call), "/openai/responses?api-version=V");
  Resolved fetch = Resolve("GET", "/v1/responses/resp_1", "api-version=V");
  ASSERT_NE(fetch.codec, nullptr);
  EXPECT_EQ(fetch.call.kind, CallRoute::Kind::kFetch);
  EXPECT_EQ(fetch.call.resource_id, "resp_1");
  EXPECT_EQ(fetch.codec->ForwardPath(fetch.call), "/openai/responses/resp_1?api-version=V");
  // Without it, OpenAI's.
  EXPECT_EQ(Resolve("POST", "/v1/responses", "").codec->name(), "openai-responses");
  EXPECT_EQ(Resolve("POST", "/v1/chat/completions", "api-version=V").codec->name(), "openai");
}

TEST(AzureTest, TheV1ApiAndPlainResponsesRoutes) {
  Resolved v1 = Resolve("POST", "/openai/v1/responses", "");
  ASSERT_NE(v1.codec, nullptr);
  EXPECT_EQ(v1.codec->name(), "azure-openai-responses");
  EXPECT_EQ(v1.codec->ForwardPath(v1.call), "/openai/v1/responses");
  Resolved fetch = Resolve("GET", "/openai/responses/resp_9", "api-version=V");
  ASSERT_NE(fetch.codec, nullptr);
  EXPECT_EQ(fetch.call.resource_id, "resp_9");
  EXPECT_EQ(Resolve("POST", "/openai/v1/chat/completions", "").codec->name(), "azure-openai");
  EXPECT_EQ(Resolve("POST", "/openai/v1/embeddings", "").codec->name(),
            "azure-openai-embeddings");
}

TEST(AzureTest, UnknownOrMalformedDeploymentPathsAreNotServed) {
  for (const char* path : {"/openai/deployments//chat/completions",
                           "/openai/deployments/a/b/chat/completions",
                           "/openai/deployments/d/completions", "/openai/deployments/d",
                           "/openai/chat/completions", "/openai/responsesx"}) {
    EXPECT_EQ(Codecs().ForPath(Codecs().NormalizePath(path), "api-version=1"), nullptr) << path;
  }
  const Codec& chat = *Codecs().Find("azure-openai");
  EXPECT_THAT(chat.Route("POST", "/openai/deployments/\xff/chat/completions", "").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid UTF-8")));
}

TEST(AzureTest, BodiesErrorsAndHeadersAreOpenAis) {
  const Codec& chat = *Codecs().Find("azure-openai");
  const Codec& openai = *Codecs().Find("openai");
  CallRoute call;
  constexpr absl::string_view kBody =
      R"({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"stream":true})";
  absl::StatusOr<ParsedRequest> azure_parsed = chat.ParseRequest(call, kBody);
  absl::StatusOr<ParsedRequest> openai_parsed = openai.ParseRequest(call, kBody);
  ASSERT_THAT(azure_parsed, IsOk());
  ASSERT_THAT(openai_parsed, IsOk());
  EXPECT_EQ(azure_parsed->canonical.SerializeAsString(),
            openai_parsed->canonical.SerializeAsString());
  EXPECT_TRUE(azure_parsed->stream);
  EXPECT_EQ(chat.ErrorBody(absl::InvalidArgumentError("m"), "c"),
            openai.ErrorBody(absl::InvalidArgumentError("m"), "c"));
  EXPECT_TRUE(chat.ReplaysHeader("apim-request-id"));
  EXPECT_TRUE(chat.ReplaysHeader("x-ratelimit-remaining-tokens"));
  EXPECT_FALSE(chat.ReplaysHeader("api-key"));
  EXPECT_EQ(chat.BaseUrlVariable().first, "AZURE_OPENAI_ENDPOINT");
  EXPECT_NE(Codecs().Find("azure-openai-responses")->stored(), nullptr);
}

}  // namespace
}  // namespace provider
}  // namespace understudy
