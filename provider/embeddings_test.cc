#include "provider/embeddings.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "provider/canonical.h"
#include "provider/json_util.h"

namespace understudy {
namespace provider {
namespace embeddings {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// What openai-node sends for `embeddings.create({model, input})`: it asks
// for base64 when its caller did not choose an encoding.
constexpr absl::string_view kSdkRequest = R"({
  "model": "text-embedding-3-small",
  "input": ["The food was delicious.", "The waiter was friendly."],
  "encoding_format": "base64",
  "user": "user-1234"
})";

// A recorded answer to a float request (values as the API prints them).
constexpr absl::string_view kFloatResponse = R"({
  "object": "list",
  "data": [
    {"object": "embedding", "index": 0,
     "embedding": [0.0023064255, -0.009327292, 1.0, -2.5e-07]},
    {"object": "embedding", "index": 1, "embedding": [1, -2, 0.5]}
  ],
  "model": "text-embedding-3-small",
  "usage": {"prompt_tokens": 8, "total_tokens": 8}
})";

// The same vectors as a base64 answer; the strings were computed outside
// this code base (Python: base64.b64encode(struct.pack('<ffff', ...))).
constexpr absl::string_view kBase64Response = R"({
  "object": "list",
  "data": [
    {"object": "embedding", "index": 0, "embedding": "ZicXO4DRGLwAAIA/vTeGtA=="},
    {"object": "embedding", "index": 1, "embedding": "AACAPwAAAMAAAAA/"}
  ],
  "model": "text-embedding-3-small",
  "usage": {"prompt_tokens": 8, "total_tokens": 8}
})";

ParsedRequest MustParse(absl::string_view body) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(body);
  EXPECT_THAT(parsed, IsOk());
  return parsed.ok() ? *parsed : ParsedRequest{};
}

std::string Canonical(absl::string_view body) {
  return provider::CanonicalText(MustParse(body).canonical);
}

// The contents of the messages of `request`.
std::vector<std::string> Contents(const v1::CompletionRequest& request) {
  std::vector<std::string> out;
  for (const v1::Message& m : request.messages()) out.push_back(m.content());
  return out;
}

double Norm(const std::vector<float>& v) {
  double sum = 0;
  for (const float x : v) sum += static_cast<double>(x) * x;
  return std::sqrt(sum);
}

// A canonical request for RenderResponse: `inputs` as ParseRequest makes
// them, with `extra` as the request extra.
v1::CompletionRequest Request(const std::vector<std::string>& inputs, const std::string& extra) {
  v1::CompletionRequest r;
  r.set_model("text-embedding-3-small");
  r.set_operation("embeddings");
  for (const std::string& text : inputs) {
    v1::Message* m = r.add_messages();
    m->set_role("user");
    m->set_content(text);
  }
  r.set_extra(extra);
  return r;
}

TEST(EmbeddingsRequestTest, StringInputIsOneUserMessage) {
  const ParsedRequest parsed =
      MustParse(R"({"model":"text-embedding-3-small","input":"hello world"})");
  EXPECT_EQ(parsed.canonical.operation(), "embeddings");
  EXPECT_EQ(parsed.canonical.model(), "text-embedding-3-small");
  ASSERT_EQ(parsed.canonical.messages_size(), 1);
  EXPECT_EQ(parsed.canonical.messages(0).role(), "user");
  EXPECT_EQ(parsed.canonical.messages(0).content(), "hello world");
  EXPECT_EQ(parsed.canonical.messages(0).extra(), "");
  EXPECT_EQ(parsed.canonical.extra(), "");
  EXPECT_FALSE(parsed.stream);
  EXPECT_FALSE(parsed.include_usage);
  EXPECT_EQ(provider::CanonicalText(parsed.canonical),
            R"({"messages":[{"content":"hello world","role":"user"}],)"
            R"("model":"text-embedding-3-small","operation":"embeddings"})");
}

TEST(EmbeddingsRequestTest, ArrayOfStringsIsOneMessagePerStringInOrder) {
  const ParsedRequest parsed = MustParse(kSdkRequest);
  EXPECT_THAT(Contents(parsed.canonical),
              ElementsAre("The food was delicious.", "The waiter was friendly."));
  for (const v1::Message& m : parsed.canonical.messages()) {
    EXPECT_EQ(m.role(), "user");
    EXPECT_EQ(m.extra(), "");
  }
  EXPECT_EQ(parsed.canonical.extra(), R"({"encoding_format":"base64"})");
}

TEST(EmbeddingsRequestTest, TokenArrayIsOneMessageMarkedAsTokens) {
  const ParsedRequest parsed = MustParse(R"({"model":"m","input":[1, 20, 300, 0]})");
  ASSERT_EQ(parsed.canonical.messages_size(), 1);
  EXPECT_EQ(parsed.canonical.messages(0).role(), "user");
  EXPECT_EQ(parsed.canonical.messages(0).content(), "[1,20,300,0]");
  EXPECT_EQ(parsed.canonical.messages(0).extra(), R"({"tokens":true})");
}

TEST(EmbeddingsRequestTest, ArrayOfTokenArraysIsOneMessagePerArray) {
  const ParsedRequest parsed = MustParse(R"({"model":"m","input":[[5], [7, 8], [9]]})");
  EXPECT_THAT(Contents(parsed.canonical), ElementsAre("[5]", "[7,8]", "[9]"));
  for (const v1::Message& m : parsed.canonical.messages()) {
    EXPECT_EQ(m.extra(), R"({"tokens":true})");
  }
}

TEST(EmbeddingsRequestTest, TokensNeverMatchTheTextOfTheirDigits) {
  EXPECT_NE(Canonical(R"({"model":"m","input":[1,2]})"),
            Canonical(R"({"model":"m","input":"[1,2]"})"));
}

TEST(EmbeddingsRequestTest, UserIsIgnored) {
  EXPECT_THAT(kIgnoredRequestFields, ElementsAre("user"));
  EXPECT_EQ(Canonical(R"({"model":"m","input":"x","user":"alice"})"),
            Canonical(R"({"model":"m","input":"x","user":"bob"})"));
  EXPECT_EQ(Canonical(R"({"model":"m","input":"x","user":"alice"})"),
            Canonical(R"({"model":"m","input":"x"})"));
}

TEST(EmbeddingsRequestTest, OtherFieldsGoToExtraWithSortedKeys) {
  const ParsedRequest parsed =
      MustParse(R"({"zeta":{"b":2,"a":1},"dimensions":256,"input":"x","encoding_format":"float",)"
                R"("model":"m","user":"u","absent":null})");
  EXPECT_EQ(parsed.canonical.extra(),
            R"({"dimensions":256,"encoding_format":"float","zeta":{"a":1,"b":2}})");
}

TEST(EmbeddingsRequestTest, EncodingFormatChangesTheCanonicalRequest) {
  EXPECT_NE(Canonical(R"({"model":"m","input":"x","encoding_format":"float"})"),
            Canonical(R"({"model":"m","input":"x","encoding_format":"base64"})"));
}

TEST(EmbeddingsRequestTest, OptionsReadBackFromExtra) {
  EmbeddingsOptions options =
      OptionsOf(MustParse(R"({"model":"m","input":"x","encoding_format":"base64",)"
                          R"("dimensions":512})")
                    .canonical);
  EXPECT_TRUE(options.base64);
  EXPECT_EQ(options.dimensions, 512);

  options =
      OptionsOf(MustParse(R"({"model":"m","input":"x","encoding_format":"float"})").canonical);
  EXPECT_FALSE(options.base64);
  EXPECT_EQ(options.dimensions, 0);
}

TEST(EmbeddingsRequestTest, OptionsOfAnyExtraFallBackToDefaults) {
  for (const std::string extra :
       {"", "not json", "[1]", R"({"dimensions":0})", R"({"dimensions":70000})",
        R"({"dimensions":"8","encoding_format":7})", R"({"encoding_format":"int8"})"}) {
    const EmbeddingsOptions options = OptionsOf(Request({"x"}, extra));
    EXPECT_FALSE(options.base64) << extra;
    EXPECT_EQ(options.dimensions, 0) << extra;
  }
}

TEST(EmbeddingsRequestTest, BadInputsNameTheirPath) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"input":"x"})", "model: missing; expected a string"},
      {R"({"model":3,"input":"x"})", "model: expected a string, got number"},
      {R"({"model":"m"})", "input: missing; expected a string or an array of strings or token ids"},
      {R"({"model":"m","input":null})",
       "input: missing; expected a string or an array of strings or token ids"},
      {R"({"model":"m","input":{"text":"x"}})",
       "input: expected a string or an array of strings or token ids, got object"},
      {R"({"model":"m","input":""})", "input: expected a non-empty string, got an empty string"},
      {R"({"model":"m","input":[]})", "input: expected a non-empty array, got an empty array"},
      {R"({"model":"m","input":["a","b",3]})", "input[2]: expected a string, got number"},
      {R"({"model":"m","input":["a",""]})",
       "input[1]: expected a non-empty string, got an empty string"},
      {R"({"model":"m","input":[1,"a"]})",
       "input[1]: expected a token id (a non-negative integer), got string"},
      {R"({"model":"m","input":[1,2.5]})",
       "input[1]: expected a token id (a non-negative integer), got number 2.5"},
      {R"({"model":"m","input":[-1]})",
       "input[0]: expected a token id (a non-negative integer), got number -1"},
      {R"({"model":"m","input":[18446744073709551615]})",
       "input[0]: expected a token id (a non-negative integer), got number "
       "18446744073709551615"},
      {R"({"model":"m","input":[[1],[]]})",
       "input[1]: expected a non-empty array of token ids, got an empty array"},
      {R"({"model":"m","input":[[1],"a"]})",
       "input[1]: expected an array of token ids, got string"},
      {R"({"model":"m","input":[[1],[2,null]]})",
       "input[1][1]: expected a token id (a non-negative integer), got null"},
      {R"({"model":"m","input":[{"a":1}]})",
       "input[0]: expected a string, a token id or an array of token ids, got object"},
      {R"({"model":"m","input":[true]})",
       "input[0]: expected a string, a token id or an array of token ids, got boolean"},
      {R"({"model":"m","input":"x","encoding_format":"int8"})",
       R"(encoding_format: expected "float" or "base64", got "int8")"},
      {R"({"model":"m","input":"x","encoding_format":"FLOAT"})",
       R"(encoding_format: expected "float" or "base64", got "FLOAT")"},
      {R"({"model":"m","input":"x","encoding_format":1})",
       R"(encoding_format: expected "float" or "base64", got number)"},
      {R"({"model":"m","input":"x","dimensions":0})",
       "dimensions: expected an integer in [1, 65536], got 0"},
      {R"({"model":"m","input":"x","dimensions":-5})",
       "dimensions: expected an integer in [1, 65536], got -5"},
      {R"({"model":"m","input":"x","dimensions":65537})",
       "dimensions: expected an integer in [1, 65536], got 65537"},
      {R"({"model":"m","input":"x","dimensions":1e9})",
       "dimensions: expected an integer in [1, 65536], got 1000000000.0"},
      {R"({"model":"m","input":"x","dimensions":8.5})",
       "dimensions: expected an integer in [1, 65536], got 8.5"},
      {R"({"model":"m","input":"x","dimensions":"8"})",
       "dimensions: expected an integer in [1, 65536], got string"},
      {"[1,2]", "body: expected a JSON object, got array"},
  };
  for (const auto& [body, message] : cases) {
    EXPECT_THAT(ParseRequest(body), StatusIs(absl::StatusCode::kInvalidArgument, message)) << body;
  }
}

TEST(EmbeddingsRequestTest, AcceptsTheApiLimitOfInputsAndNoMore) {
  std::string inputs;
  for (size_t i = 0; i < kMaxInputs; ++i) absl::StrAppend(&inputs, i == 0 ? "" : ",", "\"a\"");
  EXPECT_EQ(
      MustParse(absl::StrCat(R"({"model":"m","input":[)", inputs, "]}")).canonical.messages_size(),
      2048);
  EXPECT_THAT(ParseRequest(absl::StrCat(R"({"model":"m","input":[)", inputs, R"(,"a"]})")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "input: expected at most 2048 inputs, got 2049"));
  // A long token array is one input.
  std::string tokens;
  for (int i = 0; i < 3000; ++i) absl::StrAppend(&tokens, i == 0 ? "" : ",", i);
  EXPECT_EQ(
      MustParse(absl::StrCat(R"({"model":"m","input":[)", tokens, "]}")).canonical.messages_size(),
      1);
}

TEST(EmbeddingsRequestTest, MalformedJsonIsInvalidArgument) {
  EXPECT_THAT(
      ParseRequest(R"({"model":"m","input":)"),
      StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("body: invalid JSON at byte")));
  EXPECT_THAT(ParseRequest(""),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("body: invalid JSON")));
}

TEST(EmbeddingsRequestTest, DeepJsonIsRefusedBeforeParsing) {
  const std::string deep = absl::StrCat(R"({"model":"m","input":"x","extra":)",
                                        std::string(100000, '['), std::string(100000, ']'), "}");
  EXPECT_THAT(ParseRequest(deep), StatusIs(absl::StatusCode::kInvalidArgument,
                                           StartsWith("body: JSON nested deeper than 256 levels")));
  EXPECT_THAT(Vectors(deep), StatusIs(absl::StatusCode::kInvalidArgument,
                                      StartsWith("body: JSON nested deeper than 256 levels")));
}

TEST(EmbeddingsRequestTest, InvalidUtf8IsRefused) {
  const std::string body = "{\"model\":\"m\",\"input\":\"caf\xc3\x28\"}";
  EXPECT_THAT(ParseRequest(body),
              StatusIs(absl::StatusCode::kInvalidArgument, "body: invalid UTF-8 at byte 25"));
  EXPECT_THAT(ParseResponse(body),
              StatusIs(absl::StatusCode::kInvalidArgument, "body: invalid UTF-8 at byte 25"));
}

TEST(EmbeddingsResponseTest, FloatBodyParses) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kFloatResponse);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->model(), "text-embedding-3-small");
  EXPECT_EQ(r->id(), "");
  EXPECT_EQ(r->message().role(), "assistant");
  EXPECT_EQ(r->message().content(), "");
  EXPECT_EQ(r->finish_reason(), "stop");
  ASSERT_TRUE(r->has_usage());
  EXPECT_EQ(r->usage().input_tokens(), 8);
  EXPECT_EQ(r->usage().output_tokens(), 0);

  absl::StatusOr<std::vector<std::vector<float>>> v = Vectors(kFloatResponse);
  ASSERT_THAT(v, IsOk());
  EXPECT_THAT(*v, ElementsAre(ElementsAre(0.0023064255f, -0.009327292f, 1.0f, -2.5e-07f),
                              ElementsAre(1.0f, -2.0f, 0.5f)));
}

TEST(EmbeddingsResponseTest, Base64BodyDecodesToTheSameFloats) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kBase64Response);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->usage().input_tokens(), 8);
  absl::StatusOr<std::vector<std::vector<float>>> b = Vectors(kBase64Response);
  absl::StatusOr<std::vector<std::vector<float>>> f = Vectors(kFloatResponse);
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(*b, *f);
}

TEST(EmbeddingsResponseTest, BodyWithoutUsageHasNone) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(R"({"data":[],"model":"m"})");
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->has_usage());
  EXPECT_THAT(Vectors(R"({"data":[]})"), IsOk());
}

TEST(EmbeddingsResponseTest, BadBodiesNameTheirPath) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"object":"list"})", "data: missing; expected an array of embeddings"},
      {R"({"error":{"message":"bad key"}})", "data: missing; expected an array of embeddings"},
      {R"({"data":{}})", "data: expected an array of embeddings, got object"},
      {R"({"data":[[0.1]]})", "data[0]: expected an embedding object, got array"},
      {R"({"data":[{"embedding":[0.1]},{"index":1}]})",
       "data[1].embedding: missing; expected an array of numbers or a base64 string"},
      {R"({"data":[{"embedding":{"x":1}}]})",
       "data[0].embedding: expected an array of numbers or a base64 string, got object"},
      {R"({"data":[{"embedding":[0.1,"0.2"]}]})",
       "data[0].embedding[1]: expected a number, got string"},
      {R"({"data":[{"embedding":[1e39]}]})",
       "data[0].embedding[0]: expected a number in the float32 range, got 1e+39"},
      {R"({"data":[{"embedding":"!!!!"}]})", "data[0].embedding: invalid base64"},
      {R"({"data":[{"embedding":"AAAAAAAA"}]})",
       "data[0].embedding: expected base64 of float32 values, got 6 bytes"},
      {R"({"data":[{"index":"0","embedding":[]}]})",
       "data[0].index: expected an integer, got string"},
      {R"({"data":[],"model":7})", "model: expected a string, got number"},
      {R"({"data":[],"usage":[]})", "usage: expected a usage object, got array"},
      {R"({"data":[],"usage":{"prompt_tokens":"8"}})",
       "usage.prompt_tokens: expected an integer, got string"},
      {R"({"data":[],"usage":{"prompt_tokens":8,"total_tokens":1.5}})",
       "usage.total_tokens: expected an integer, got number 1.5"},
      {"\"list\"", "body: expected a JSON object, got string"},
  };
  for (const auto& [body, message] : cases) {
    EXPECT_THAT(ParseResponse(body), StatusIs(absl::StatusCode::kInvalidArgument, message)) << body;
    // Vectors reads only `data`: it fails on the same data, and only there.
    if (absl::StartsWith(message, "data") || absl::StartsWith(message, "body")) {
      EXPECT_THAT(Vectors(body), StatusIs(absl::StatusCode::kInvalidArgument, message)) << body;
    } else {
      EXPECT_THAT(Vectors(body), IsOk()) << body;
    }
  }
}

TEST(EmbeddingsRenderTest, DefaultDimensionsFollowTheModelName) {
  EXPECT_EQ(DefaultDimensions("text-embedding-3-small"), 1536);
  EXPECT_EQ(DefaultDimensions("text-embedding-ada-002"), 1536);
  EXPECT_EQ(DefaultDimensions("text-embedding-3-large"), 3072);
  EXPECT_EQ(DefaultDimensions("my-local-embedder"), 1536);
}

// The expected values were computed outside this code base by a Python
// transcription of the documented generator (FNV-1a 64, splitmix64, top 53
// bits to [-1, 1), normalized, float32, shortest repr).
TEST(EmbeddingsRenderTest, FloatBodyHasKnownBytes) {
  const std::string body = RenderResponse(Request({"hello", "world"}, R"({"dimensions":4})"), "m");
  EXPECT_EQ(body, R"({"object":"list","data":[)"
                  R"({"object":"embedding","index":0,"embedding":)"
                  R"([0.7465276,0.1959498,-0.5421744,-0.33218542]},)"
                  R"({"object":"embedding","index":1,"embedding":)"
                  R"([0.7879119,0.016883725,0.5276557,0.31700042]}],)"
                  R"("model":"m","usage":{"prompt_tokens":4,"total_tokens":4}})");
  EXPECT_EQ(RenderResponse(Request({"hello", "world"}, R"({"dimensions":4})"), "m"), body);
}

TEST(EmbeddingsRenderTest, Base64BodyHasKnownBytes) {
  const std::string body = RenderResponse(
      Request({"hello", "world"}, R"({"dimensions":4,"encoding_format":"base64"})"), "m");
  EXPECT_EQ(body, R"({"object":"list","data":[)"
                  R"({"object":"embedding","index":0,"embedding":"bxw/PxCnSD7xywq/NRSqvg=="},)"
                  R"({"object":"embedding","index":1,"embedding":"mLRJP71PijxyFAc/4U2iPg=="}],)"
                  R"("model":"m","usage":{"prompt_tokens":4,"total_tokens":4}})");
}

TEST(EmbeddingsRenderTest, SameTextSameVectorOtherTextOtherVector) {
  const v1::CompletionRequest request = Request({"alpha", "beta", "alpha"}, "");
  const std::string body = RenderResponse(request, "text-embedding-3-small");
  EXPECT_EQ(RenderResponse(request, "text-embedding-3-small"), body);
  absl::StatusOr<std::vector<std::vector<float>>> v = Vectors(body);
  ASSERT_THAT(v, IsOk());
  ASSERT_EQ(v->size(), 3u);
  EXPECT_EQ((*v)[0], (*v)[2]);
  EXPECT_NE((*v)[0], (*v)[1]);
  for (const std::vector<float>& vector : *v) {
    EXPECT_EQ(vector.size(), 1536u);
    EXPECT_NEAR(Norm(vector), 1.0, 1e-5);
  }
  // The same text gets the same vector in another request too.
  absl::StatusOr<std::vector<std::vector<float>>> alone =
      Vectors(RenderResponse(Request({"alpha"}, ""), "text-embedding-3-small"));
  ASSERT_THAT(alone, IsOk());
  EXPECT_EQ((*alone)[0], (*v)[0]);
}

TEST(EmbeddingsRenderTest, BothEncodingsCarryExactlyThePseudoEmbedding) {
  for (const std::string extra :
       {R"({"encoding_format":"float"})", R"({"encoding_format":"base64"})"}) {
    const std::string body =
        RenderResponse(Request({"Paris is in France.", "日本語"}, extra), "text-embedding-3-large");
    absl::StatusOr<std::vector<std::vector<float>>> v = Vectors(body);
    ASSERT_THAT(v, IsOk()) << extra;
    ASSERT_EQ(v->size(), 2u);
    EXPECT_EQ((*v)[0], PseudoEmbedding("Paris is in France.", 3072)) << extra;
    EXPECT_EQ((*v)[1], PseudoEmbedding("日本語", 3072)) << extra;
    EXPECT_NEAR(Norm((*v)[1]), 1.0, 1e-5);
  }
}

TEST(EmbeddingsRenderTest, RequestedDimensionsAreHonoured) {
  absl::StatusOr<std::vector<std::vector<float>>> v =
      Vectors(RenderResponse(Request({"x"}, R"({"dimensions":1})"), "text-embedding-3-large"));
  ASSERT_THAT(v, IsOk());
  EXPECT_THAT(*v, ElementsAre(ElementsAre(::testing::AnyOf(1.0f, -1.0f))));
}

TEST(EmbeddingsRenderTest, RenderedBodyParsesWithItsUsage) {
  // From a parsed request: 3 token ids + ceil(11 / 4) = 3 + 3.
  const ParsedRequest parsed = MustParse(R"({"model":"m","input":[[1,2,3],[4]],"dimensions":8})");
  ParsedRequest text = MustParse(R"({"model":"m","input":"hello world","dimensions":8})");
  const std::string body = RenderResponse(parsed.canonical, "text-embedding-3-small");
  EXPECT_THAT(body, HasSubstr(R"("usage":{"prompt_tokens":4,"total_tokens":4})"));
  EXPECT_THAT(RenderResponse(text.canonical, "m"),
              HasSubstr(R"("usage":{"prompt_tokens":3,"total_tokens":3})"));
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(body);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->model(), "text-embedding-3-small");
  EXPECT_EQ(r->usage().input_tokens(), 4);
  absl::StatusOr<std::vector<std::vector<float>>> v = Vectors(body);
  ASSERT_THAT(v, IsOk());
  ASSERT_EQ(v->size(), 2u);
  EXPECT_EQ((*v)[0].size(), 8u);
  EXPECT_EQ((*v)[0], PseudoEmbedding("[1,2,3]", 8));
}

TEST(EmbeddingsRenderTest, NoInputsGiveAnEmptyList) {
  EXPECT_EQ(
      RenderResponse(Request({}, ""), "m"),
      R"({"object":"list","data":[],"model":"m","usage":{"prompt_tokens":0,"total_tokens":0}})");
}

TEST(EmbeddingsRenderTest, PseudoEmbeddingIsUnitLengthForManySizes) {
  for (const int64_t d : {1, 2, 3, 17, 256, 1536, 3072, 65536}) {
    const std::vector<float> v = PseudoEmbedding("some text", d);
    ASSERT_EQ(v.size(), static_cast<size_t>(d));
    EXPECT_NEAR(Norm(v), 1.0, 1e-5) << d;
  }
  EXPECT_TRUE(PseudoEmbedding("x", 0).empty());
  EXPECT_NE(PseudoEmbedding("x", 16), PseudoEmbedding("y", 16));
  EXPECT_EQ(PseudoEmbedding("", 16), PseudoEmbedding("", 16));
}

}  // namespace
}  // namespace embeddings
}  // namespace provider
}  // namespace understudy
