#include "provider/openai.h"

#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "provider/canonical.h"
#include "provider/chunks.h"
#include "provider/json_util.h"
#include "provider/test_fixtures.h"

namespace understudy {
namespace provider {
namespace openai {
namespace {

using fixtures::Chunks;
using fixtures::DecodeOpenAiStream;
using fixtures::Join;
using fixtures::kOpenAiParallelStream;
using fixtures::kOpenAiRequest;
using fixtures::kOpenAiResponse;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// The canonical text of a body that must parse.
std::string Canonical(absl::string_view body) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(body);
  EXPECT_THAT(parsed, IsOk());
  return parsed.ok() ? provider::CanonicalText(parsed->canonical) : "";
}

// `body` with one top-level field set to `value` (JSON text), or removed
// when `value` is empty.
std::string WithField(absl::string_view body, const std::string& key, const std::string& value) {
  Json j = Json::parse(body);
  if (value.empty()) {
    j.erase(key);
  } else {
    j[key] = Json::parse(value);
  }
  return DumpJson(j);
}

// `value` with the keys of every object in reverse order.
Json Reversed(const Json& value) {
  if (value.is_array()) {
    Json out = Json::array();
    for (const Json& v : value) out.push_back(Reversed(v));
    return out;
  }
  if (!value.is_object()) return value;
  std::vector<std::pair<std::string, Json>> items;
  for (auto it = value.begin(); it != value.end(); ++it)
    items.emplace_back(it.key(), Reversed(*it));
  Json out = Json::object();
  for (auto it = items.rbegin(); it != items.rend(); ++it) out[it->first] = it->second;
  return out;
}

TEST(OpenAiParseRequestTest, MapsARecordedAgentRequest) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(kOpenAiRequest);
  ASSERT_THAT(parsed, IsOk());
  EXPECT_TRUE(parsed->stream);
  EXPECT_TRUE(parsed->include_usage);
  const v1::CompletionRequest& r = parsed->canonical;
  EXPECT_EQ(r.model(), "gpt-4o-2024-08-06");
  ASSERT_EQ(r.messages_size(), 5);
  EXPECT_EQ(r.messages(0).role(), "system");
  EXPECT_EQ(r.messages(0).content(), "You are the executor. Use tools.");
  const v1::Message& assistant = r.messages(2);
  EXPECT_EQ(assistant.role(), "assistant");
  EXPECT_EQ(assistant.content(), "");
  ASSERT_EQ(assistant.tool_calls_size(), 2);
  EXPECT_EQ(assistant.tool_calls(1).id(), "call_oslo");
  EXPECT_EQ(assistant.tool_calls(1).name(), "get_weather");
  EXPECT_EQ(assistant.tool_calls(1).arguments(), "{\"city\": \"Oslo\"}");
  EXPECT_EQ(assistant.extra(), "");  // "refusal": null is no field at all
  EXPECT_EQ(r.messages(3).role(), "tool");
  EXPECT_EQ(r.messages(3).tool_call_id(), "call_paris");
  EXPECT_EQ(r.messages(4).content(), "4C, snow");  // a text-only part array
  EXPECT_EQ(r.messages(4).extra(), "");
  ASSERT_EQ(r.tools_size(), 1);
  EXPECT_EQ(r.tools(0).name(), "get_weather");
  EXPECT_EQ(r.tools(0).description(), "Current weather for a city.");
  EXPECT_EQ(r.tools(0).parameters(),
            R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");
  EXPECT_DOUBLE_EQ(r.params().temperature(), 0.2);
  EXPECT_DOUBLE_EQ(r.params().top_p(), 1.0);
  EXPECT_EQ(r.params().max_tokens(), 512);
  EXPECT_EQ(r.params().seed(), 7);
  EXPECT_THAT(r.params().stop(), ElementsAre("END"));
  EXPECT_EQ(r.extra(), R"({"parallel_tool_calls":true,"tool_choice":"auto"})");
}

TEST(OpenAiParseRequestTest, KeyOrderDoesNotChangeTheCanonicalText) {
  const std::string reversed = DumpJson(Reversed(Json::parse(kOpenAiRequest)));
  ASSERT_NE(reversed, DumpJson(Json::parse(kOpenAiRequest)));
  EXPECT_EQ(Canonical(reversed), Canonical(kOpenAiRequest));
}

TEST(OpenAiParseRequestTest, DefaultIgnoredFieldsAreIgnored) {
  std::string other = std::string(kOpenAiRequest);
  other = WithField(other, "stream", "false");
  other = WithField(other, "stream_options", "");
  other = WithField(other, "user", "\"someone-else\"");
  other = WithField(other, "metadata", "");
  other = WithField(other, "store", "true");
  other = WithField(other, "service_tier", "\"flex\"");
  EXPECT_EQ(Canonical(other), Canonical(kOpenAiRequest));
  EXPECT_THAT(kIgnoredRequestFields,
              ElementsAre("stream", "stream_options", "user", "metadata", "store", "service_tier"));
}

TEST(OpenAiParseRequestTest, OtherUnknownFieldsAreKeptAndMatter) {
  const std::string required = WithField(kOpenAiRequest, "tool_choice", "\"required\"");
  EXPECT_NE(Canonical(required), Canonical(kOpenAiRequest));
  const std::string format =
      WithField(kOpenAiRequest, "response_format", R"({"type":"json_object"})");
  EXPECT_NE(Canonical(format), Canonical(kOpenAiRequest));
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(format);
  ASSERT_THAT(parsed, IsOk());
  EXPECT_THAT(parsed->canonical.extra(), HasSubstr(R"("response_format":{"type":"json_object"})"));
}

TEST(OpenAiParseRequestTest, NullFieldsAreTheSameAsAbsentOnes) {
  const std::string with_nulls =
      WithField(WithField(kOpenAiRequest, "frequency_penalty", "null"), "temperature", "null");
  EXPECT_EQ(Canonical(with_nulls), Canonical(WithField(kOpenAiRequest, "temperature", "")));
}

TEST(OpenAiParseRequestTest, TextPartArraysCollapseToTheirText) {
  const std::string as_string = R"({"model":"m","messages":[{"role":"user","content":"ab"}]})";
  const std::string as_parts =
      R"({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})";
  EXPECT_EQ(Canonical(as_parts), Canonical(as_string));
}

TEST(OpenAiParseRequestTest, NonTextPartsAreKeptInTheMessageExtra) {
  const std::string image = R"({"model":"m","messages":[{"role":"user","content":[
      {"type":"text","text":"What is this?"},
      {"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]})";
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(image);
  ASSERT_THAT(parsed, IsOk());
  const v1::Message& m = parsed->canonical.messages(0);
  EXPECT_EQ(m.content(), "What is this?");
  EXPECT_EQ(m.extra(), R"({"content":[{"type":"text","text":"What is this?"},)"
                       R"({"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]})");
  std::string other = image;
  other.replace(other.find("a.png"), 5, "b.png");
  EXPECT_NE(Canonical(other), Canonical(image));
}

TEST(OpenAiParseRequestTest, DeveloperRoleIsASystemMessageMarkedInExtra) {
  absl::StatusOr<ParsedRequest> parsed =
      ParseRequest(R"({"model":"o3","messages":[{"role":"developer","content":"Be brief."}]})");
  ASSERT_THAT(parsed, IsOk());
  EXPECT_EQ(parsed->canonical.messages(0).role(), "system");
  EXPECT_EQ(parsed->canonical.messages(0).extra(), R"({"role":"developer"})");
  EXPECT_NE(Canonical(R"({"model":"o3","messages":[{"role":"developer","content":"Be brief."}]})"),
            Canonical(R"({"model":"o3","messages":[{"role":"system","content":"Be brief."}]})"));
}

TEST(OpenAiParseRequestTest, MaxCompletionTokensAndMaxTokensAreTheSameParam) {
  const std::string a = R"({"model":"m","messages":[],"max_tokens":100})";
  const std::string b = R"({"model":"m","messages":[],"max_completion_tokens":100})";
  EXPECT_EQ(Canonical(a), Canonical(b));
  absl::StatusOr<ParsedRequest> both =
      ParseRequest(R"({"model":"m","messages":[],"max_completion_tokens":100,"max_tokens":50})");
  ASSERT_THAT(both, IsOk());
  EXPECT_EQ(both->canonical.params().max_tokens(), 100);
  EXPECT_EQ(both->canonical.extra(), R"({"max_tokens":50})");
}

TEST(OpenAiParseRequestTest, StopAsAStringIsAOneElementList) {
  EXPECT_EQ(Canonical(R"({"model":"m","messages":[],"stop":"END"})"),
            Canonical(R"({"model":"m","messages":[],"stop":["END"]})"));
}

TEST(OpenAiParseRequestTest, StrictToolsAreKeptWholeInExtra) {
  const std::string strict = R"({"model":"m","messages":[],"tools":[{"type":"function",
      "function":{"name":"f","parameters":{"type":"object"},"strict":true}}]})";
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(strict);
  ASSERT_THAT(parsed, IsOk());
  ASSERT_EQ(parsed->canonical.tools_size(), 1);
  EXPECT_EQ(parsed->canonical.tools(0).name(), "f");
  EXPECT_THAT(parsed->canonical.extra(), HasSubstr(R"("strict":true)"));
  std::string loose = strict;
  loose.replace(loose.find(",\"strict\":true"), 14, "");
  EXPECT_NE(Canonical(loose), Canonical(strict));
}

TEST(OpenAiParseRequestTest, StreamOptionsWithoutStreamReportNoUsage) {
  absl::StatusOr<ParsedRequest> parsed =
      ParseRequest(R"({"model":"m","messages":[],"stream_options":{"include_usage":true}})");
  ASSERT_THAT(parsed, IsOk());
  EXPECT_FALSE(parsed->stream);
  EXPECT_FALSE(parsed->include_usage);
}

TEST(OpenAiParseRequestTest, BadFieldsAreNamedWithTheirPath) {
  struct Case {
    const char* body;
    const char* message;
  };
  const Case cases[] = {
      {R"({"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":3}]})",
       "messages[2].content: expected a string or an array of content parts, got number"},
      {R"({"messages":[]})", "model: missing; expected a string"},
      {R"({"model":7,"messages":[]})", "model: expected a string, got number"},
      {R"({"model":"m"})", "messages: missing; expected an array of messages"},
      {R"({"model":"m","messages":{}})", "messages: expected an array of messages, got object"},
      {R"({"model":"m","messages":[{"content":"x"}]})",
       "messages[0].role: missing; expected a string"},
      {R"({"model":"m","messages":["hi"]})", "messages[0]: expected a message object, got string"},
      {R"({"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]})",
       "messages[0].content[0].text: missing; expected a string"},
      {R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{"a":1}}}]}]})",
       "messages[0].tool_calls[0].function.arguments: expected a string (JSON text), got object"},
      {R"({"model":"m","messages":[],"tools":[{"type":"function","function":{"description":"d"}}]})",
       "tools[0].function.name: missing; expected a string"},
      {R"({"model":"m","messages":[],"stop":5})",
       "stop: expected a string or an array of strings, got number"},
      {R"({"model":"m","messages":[],"stop":["a",null]})", "stop[1]: expected a string, got null"},
      {R"({"model":"m","messages":[],"max_tokens":1.5})",
       "max_tokens: expected an integer, got number 1.5"},
      {R"({"model":"m","messages":[],"temperature":"hot"})",
       "temperature: expected a number, got string"},
      {R"({"model":"m","messages":[],"stream":"yes"})", "stream: expected a boolean, got string"},
      {R"([1,2])", "body: expected a JSON object, got array"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseRequest(c.body), StatusIs(absl::StatusCode::kInvalidArgument, c.message))
        << c.body;
  }
}

TEST(OpenAiParseRequestTest, NonJsonBodyNamesTheByte) {
  EXPECT_THAT(ParseRequest(R"({"model": "gpt-4o", oops})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("body: invalid JSON at byte 20: syntax error")));
}

TEST(OpenAiParseRequestTest, HostileBodiesFailCleanly) {
  const std::string deep = R"({"model":"m","messages":[],"x":)" + std::string(100000, '[') +
                           std::string(100000, ']') + "}";
  EXPECT_THAT(ParseRequest(deep), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("body: JSON nested deeper than 256 levels")));
  EXPECT_THAT(ParseRequest(R"({"model":"m","messages":[],"max_tokens":1e999})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "body: invalid JSON: number overflow parsing '1e999'"));
  EXPECT_THAT(ParseRequest(R"({"model":"m","messages":[],"seed":123456789012345678901234567890})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("seed: expected an integer, got number")));
  EXPECT_THAT(ParseRequest("{\"model\":\"m\xC3\x28\",\"messages\":[]}"),
              StatusIs(absl::StatusCode::kInvalidArgument, "body: invalid UTF-8 at byte 11"));
  // A huge number in a pass-through field is kept (as a double).
  absl::StatusOr<ParsedRequest> big = ParseRequest(
      R"({"model":"m","messages":[],"logit_bias":{"1":123456789012345678901234567890}})");
  ASSERT_THAT(big, IsOk());
  EXPECT_EQ(big->canonical.extra(), R"({"logit_bias":{"1":1.2345678901234568e+29}})");
}

TEST(OpenAiParseResponseTest, MapsToolCallsFinishReasonAndUsage) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kOpenAiResponse);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->id(), "chatcmpl-A1b2C3");
  EXPECT_EQ(r->model(), "gpt-4o-2024-08-06");
  EXPECT_EQ(r->message().role(), "assistant");
  EXPECT_EQ(r->message().content(), "");
  ASSERT_EQ(r->message().tool_calls_size(), 2);
  EXPECT_EQ(r->message().tool_calls(0).id(), "call_paris");
  EXPECT_EQ(r->message().tool_calls(0).arguments(), R"({"city":"Paris"})");
  EXPECT_EQ(r->finish_reason(), "tool_calls");
  EXPECT_EQ(r->usage().input_tokens(), 82);
  EXPECT_EQ(r->usage().output_tokens(), 40);
}

TEST(OpenAiParseResponseTest, BodyWithoutChoicesIsAnError) {
  EXPECT_THAT(ParseResponse(R"({"id":"x","choices":[]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "choices: expected a non-empty array of choices, got an empty array"));
  EXPECT_THAT(ParseResponse(R"({"error":{"message":"bad"}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "choices: missing; expected a non-empty array of choices"));
  EXPECT_THAT(ParseResponse(R"({"choices":[{"message":{"content":5}}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "choices[0].message.content: expected a string, got number"));
}

TEST(OpenAiStreamDecoderTest, InterleavedParallelToolCallsAssemblePerIndex) {
  Chunks chunks = DecodeOpenAiStream(kOpenAiParallelStream);
  ASSERT_EQ(chunks.size(), 7);  // one per chunk event; [DONE] makes none
  EXPECT_EQ(chunks[0].id(), "chatcmpl-P1");
  EXPECT_EQ(chunks[4].tool_calls_size(), 2);
  EXPECT_EQ(chunks[5].finish_reason(), "tool_calls");
  EXPECT_TRUE(chunks[6].has_usage());
  EXPECT_FALSE(chunks[5].has_usage());

  v1::CompletionResponse r = provider::AssembleResponse(chunks);
  EXPECT_EQ(r.id(), "chatcmpl-P1");
  EXPECT_EQ(r.model(), "gpt-4o-2024-08-06");
  ASSERT_EQ(r.message().tool_calls_size(), 2);
  EXPECT_EQ(r.message().tool_calls(0).id(), "call_paris");
  EXPECT_EQ(r.message().tool_calls(0).arguments(), R"({"city": "Paris"})");
  EXPECT_EQ(r.message().tool_calls(1).id(), "call_oslo");
  EXPECT_EQ(r.message().tool_calls(1).arguments(), R"({"city": "Oslo"})");
  EXPECT_EQ(r.finish_reason(), "tool_calls");
  EXPECT_EQ(r.usage().input_tokens(), 82);
  EXPECT_EQ(r.usage().output_tokens(), 40);
}

TEST(OpenAiStreamDecoderTest, EveryTcpSplitOfTheStreamDecodesTheSame) {
  const v1::CompletionResponse expected =
      provider::AssembleResponse(DecodeOpenAiStream(kOpenAiParallelStream));
  for (size_t i = 0; i <= kOpenAiParallelStream.size(); i += 7) {
    SseParser parser;
    StreamDecoder decoder;
    Chunks chunks;
    for (absl::string_view piece :
         {kOpenAiParallelStream.substr(0, i), kOpenAiParallelStream.substr(i)}) {
      absl::StatusOr<std::vector<SseEvent>> events = parser.Feed(piece);
      ASSERT_THAT(events, IsOk());
      for (const SseEvent& e : *events) {
        auto chunk = decoder.Decode(e);
        ASSERT_THAT(chunk, IsOk());
        if (chunk->has_value()) *chunks.Add() = **chunk;
      }
    }
    EXPECT_TRUE(decoder.done());
    EXPECT_EQ(provider::AssembleResponse(chunks).DebugString(), expected.DebugString());
  }
}

TEST(OpenAiStreamDecoderTest, ErrorObjectInTheStreamBecomesAStatus) {
  StreamDecoder decoder;
  SseEvent e;
  e.data = R"({"error":{"message":"The server had an error","type":"server_error","code":null}})";
  EXPECT_THAT(decoder.Decode(e),
              StatusIs(absl::StatusCode::kUnavailable,
                       "upstream stream error (server_error): The server had an error"));
}

TEST(OpenAiStreamDecoderTest, MalformedChunksNameTheField) {
  StreamDecoder decoder;
  SseEvent e;
  e.data = R"({"choices":[{"index":0,"delta":{"tool_calls":[{"id":"x"}]}}]})";
  EXPECT_THAT(decoder.Decode(e),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "data.choices[0].delta.tool_calls[0].index: missing; expected an integer"));
  e.data = R"({"choices":[{"index":0,"delta":{"content":1}}]})";
  EXPECT_THAT(decoder.Decode(e),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "data.choices[0].delta.content: expected a string, got number"));
  e.data = "not json";
  EXPECT_THAT(decoder.Decode(e), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("data: invalid JSON at byte 1")));
}

TEST(OpenAiStreamDecoderTest, OtherChoicesAreIgnored) {
  StreamDecoder decoder;
  SseEvent e;
  e.data =
      R"({"choices":[{"index":1,"delta":{"content":"B"}},{"index":0,"delta":{"content":"A"}}]})";
  auto chunk = decoder.Decode(e);
  ASSERT_THAT(chunk, IsOk());
  EXPECT_EQ((*chunk)->content(), "A");
}

TEST(OpenAiStreamDecoderTest, EventAfterDoneIsAnError) {
  StreamDecoder decoder;
  SseEvent done;
  done.data = "[DONE]";
  auto end = decoder.Decode(done);
  ASSERT_THAT(end, IsOk());
  EXPECT_FALSE(end->has_value());
  EXPECT_TRUE(decoder.done());
  EXPECT_THAT(decoder.Decode(done), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(OpenAiRenderTest, ResponseWithOnlyToolCallsHasNullContent) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kOpenAiResponse);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(RenderResponse(*r, 1727000000),
            R"({"id":"chatcmpl-A1b2C3","object":"chat.completion","created":1727000000,)"
            R"("model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant",)"
            R"("content":null,"tool_calls":[{"id":"call_paris","type":"function","function":)"
            R"({"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"call_oslo",)"
            R"("type":"function","function":{"name":"get_weather","arguments":)"
            R"("{\"city\":\"Oslo\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],)"
            R"("usage":{"prompt_tokens":82,"completion_tokens":40,"total_tokens":122}})");
}

TEST(OpenAiRenderTest, TextResponseWithoutFinishReasonSaysStop) {
  v1::CompletionResponse r;
  r.set_id("r1");
  r.set_model("m");
  r.mutable_message()->set_content("Hello");
  EXPECT_EQ(
      RenderResponse(r, 5),
      R"({"id":"r1","object":"chat.completion","created":5,"model":"m","choices":[{"index":0,)"
      R"("message":{"role":"assistant","content":"Hello"},"logprobs":null,)"
      R"("finish_reason":"stop"}]})");
}

TEST(OpenAiRenderTest, ResponseRoundTripsThroughParseResponse) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kOpenAiResponse);
  ASSERT_THAT(r, IsOk());
  absl::StatusOr<v1::CompletionResponse> back = ParseResponse(RenderResponse(*r, 1));
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->DebugString(), r->DebugString());
}

TEST(OpenAiRenderTest, StreamHasRoleFirstFinishOnItsChunkAndUsageLast) {
  Chunks chunks;
  v1::CompletionChunk* c = chunks.Add();
  c->set_id("r1");
  c->set_model("m");
  c->set_content("Hel");
  chunks.Add()->set_content("lo");
  c = chunks.Add();
  c->set_finish_reason("stop");
  c->mutable_usage()->set_input_tokens(3);
  c->mutable_usage()->set_output_tokens(2);
  const std::string head =
      R"(data: {"id":"r1","object":"chat.completion.chunk","created":9,"model":"m",)";
  EXPECT_THAT(
      RenderStream(chunks, /*include_usage=*/true, 9),
      ElementsAre(
          head + R"("choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},)"
                 R"("logprobs":null,"finish_reason":null}],"usage":null})"
                 "\n\n",
          head + R"("choices":[{"index":0,"delta":{"content":"lo"},"logprobs":null,)"
                 R"("finish_reason":null}],"usage":null})"
                 "\n\n",
          head + R"("choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],)"
                 R"("usage":null})"
                 "\n\n",
          head + R"("choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,)"
                 R"("total_tokens":5}})"
                 "\n\n",
          "data: [DONE]\n\n"));
}

TEST(OpenAiRenderTest, StreamWithoutIncludeUsageHasNoUsage) {
  Chunks chunks;
  v1::CompletionChunk* c = chunks.Add();
  c->set_content("Hi");
  c->set_finish_reason("stop");
  c->mutable_usage()->set_output_tokens(1);
  std::vector<std::string> events = RenderStream(chunks, /*include_usage=*/false, 1);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_THAT(events[0], Not(HasSubstr("usage")));
  EXPECT_EQ(events[1], "data: [DONE]\n\n");
}

TEST(OpenAiRenderTest, StreamMetaFromARecordedBodyKeepsCreatedTierAndFingerprint) {
  const StreamMeta meta = StreamMetaFromBody(
      R"({"id":"x","created":1700000000,"service_tier":"default","system_fingerprint":"fp_1"})", 5);
  EXPECT_EQ(meta.created, 1700000000);
  EXPECT_EQ(meta.service_tier, "default");
  EXPECT_EQ(meta.system_fingerprint, "fp_1");
  EXPECT_EQ(StreamMetaFromBody("not json", 5).created, 5);
  EXPECT_EQ(StreamMetaFromBody(R"({"created":"soon"})", 5).created, 5);

  google::protobuf::RepeatedPtrField<v1::CompletionChunk> chunks;
  v1::CompletionChunk* c = chunks.Add();
  c->set_id("x");
  c->set_model("m");
  c->set_content("hi");
  c->set_finish_reason("stop");
  std::vector<std::string> events = RenderStream(chunks, /*include_usage=*/false, meta);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0],
            "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
            "\"model\":\"m\",\"service_tier\":\"default\",\"system_fingerprint\":\"fp_1\","
            "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},"
            "\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n");
}

TEST(OpenAiRenderTest, ToolCallFragmentsCarryIndexIdTypeAndFunction) {
  Chunks chunks;
  v1::ToolCallDelta* d = chunks.Add()->add_tool_calls();
  d->set_index(1);
  d->set_id("call_b");
  d->set_name("read");
  d = chunks.Add()->add_tool_calls();
  d->set_index(1);
  d->set_arguments("{}");
  std::vector<std::string> events = RenderStream(chunks, false, 0);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_THAT(events[0], HasSubstr(R"("delta":{"role":"assistant","content":null,"tool_calls":)"
                                   R"([{"index":1,"id":"call_b","type":"function","function":)"
                                   R"({"name":"read","arguments":""}}]})"));
  EXPECT_THAT(events[1], HasSubstr(R"("delta":{"tool_calls":[{"index":1,"function":)"
                                   R"({"arguments":"{}"}}]})"));
}

TEST(OpenAiRenderTest, ParallelToolCallStreamRoundTrips) {
  Chunks recorded = DecodeOpenAiStream(kOpenAiParallelStream);
  const std::string rendered = Join(RenderStream(recorded, /*include_usage=*/true, 1727000001));
  Chunks replayed = DecodeOpenAiStream(rendered);
  EXPECT_EQ(provider::AssembleResponse(replayed).DebugString(),
            provider::AssembleResponse(recorded).DebugString());
  // Chunk boundaries survive too: rendering what was decoded is stable.
  ASSERT_EQ(replayed.size(), recorded.size());
  for (int i = 0; i < recorded.size(); ++i) {
    EXPECT_EQ(replayed[i].DebugString(), recorded[i].DebugString()) << i;
  }
  EXPECT_EQ(Join(RenderStream(replayed, true, 1727000001)), rendered);
}

TEST(OpenAiRenderTest, SameInputSameBytes) {
  Chunks recorded = DecodeOpenAiStream(kOpenAiParallelStream);
  EXPECT_EQ(RenderStream(recorded, true, 1), RenderStream(recorded, true, 1));
}

TEST(OpenAiErrorTest, ErrorBodyHasOpenAisShape) {
  EXPECT_EQ(ErrorBody("no recording matches", "invalid_request_error", "understudy_miss"),
            R"({"error":{"message":"no recording matches","type":"invalid_request_error",)"
            R"("param":null,"code":"understudy_miss"}})");
  EXPECT_EQ(ErrorBody("boom", "server_error", ""),
            R"({"error":{"message":"boom","type":"server_error","param":null,"code":null}})");
  EXPECT_EQ(ErrorType(absl::StatusCode::kNotFound), "invalid_request_error");
  EXPECT_EQ(ErrorType(absl::StatusCode::kResourceExhausted), "rate_limit_error");
  EXPECT_EQ(ErrorType(absl::StatusCode::kInternal), "server_error");
}

}  // namespace
}  // namespace openai
}  // namespace provider
}  // namespace understudy
