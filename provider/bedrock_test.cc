#include "provider/bedrock.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "provider/canonical.h"
#include "provider/chunks.h"
#include "provider/json_util.h"
#include "provider/test_fixtures.h"

namespace understudy {
namespace provider {
namespace bedrock {
namespace {

using fixtures::Chunks;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// An agent's third turn as @aws-sdk/client-bedrock-runtime sends it
// (ConverseCommand): the model asked for two tools and gets both results.
constexpr absl::string_view kRequest = R"({
  "messages": [
    {"role": "user", "content": [{"text": "What is the weather in Paris and in Oslo?"}]},
    {"role": "assistant", "content": [
      {"text": "I'll check both cities."},
      {"toolUse": {"toolUseId": "tooluse_paris", "name": "get_weather",
                   "input": {"city": "Paris"}}},
      {"toolUse": {"toolUseId": "tooluse_oslo", "name": "get_weather",
                   "input": {"city": "Oslo"}}}]},
    {"role": "user", "content": [
      {"toolResult": {"toolUseId": "tooluse_paris", "content": [{"text": "18C, cloudy"}]}},
      {"toolResult": {"toolUseId": "tooluse_oslo",
                      "content": [{"json": {"temp": 4, "sky": "snow"}}], "status": "success"}}]}
  ],
  "system": [{"text": "You are the executor. Use tools."}],
  "inferenceConfig": {"maxTokens": 512, "temperature": 0.2, "topP": 0.9, "stopSequences": ["END"]},
  "toolConfig": {
    "tools": [{"toolSpec": {"name": "get_weather", "description": "Current weather for a city.",
      "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}},
                               "required": ["city"]}}}}],
    "toolChoice": {"auto": {}}
  },
  "additionalModelRequestFields": {"top_k": 40},
  "requestMetadata": {"team": "agents"}
})";

// Its answer as Converse sends it (AWS's sorted keys).
constexpr absl::string_view kResponse =
    R"({"metrics":{"latencyMs":1432},"output":{"message":{"content":[)"
    R"({"text":"I'll check both cities."},)"
    R"({"toolUse":{"input":{"city":"Paris"},"name":"get_weather","toolUseId":"tooluse_paris"}},)"
    R"({"toolUse":{"input":{"city":"Oslo"},"name":"get_weather","toolUseId":"tooluse_oslo"}}],)"
    R"("role":"assistant"}},"stopReason":"tool_use","usage":{"cacheReadInputTokens":0,)"
    R"("inputTokens":412,"outputTokens":96,"totalTokens":508}})";

// The same answer streamed (ConverseStream), payloads padded with "p" as
// AWS pads them.
std::vector<std::string> StreamFrames() {
  return {
      EventFrame("messageStart",
                 R"({"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ","role":"assistant"})"),
      EventFrame("contentBlockDelta",
                 R"({"contentBlockIndex":0,"delta":{"text":"I'll check"},"p":"abcdef"})"),
      EventFrame("contentBlockDelta",
                 R"({"contentBlockIndex":0,"delta":{"text":" both cities."},"p":"abcdefghijk"})"),
      EventFrame("contentBlockStop", R"({"contentBlockIndex":0,"p":"abcd"})"),
      EventFrame("contentBlockStart",
                 R"({"contentBlockIndex":1,"p":"ab","start":{"toolUse":{"name":"get_weather",)"
                 R"("toolUseId":"tooluse_paris"}}})"),
      EventFrame("contentBlockDelta",
                 R"({"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"city\":"}},"p":"abc"})"),
      EventFrame("contentBlockDelta",
                 R"({"contentBlockIndex":1,"delta":{"toolUse":{"input":"\"Paris\"}"}},"p":"a"})"),
      EventFrame("contentBlockStop", R"({"contentBlockIndex":1,"p":"abcdefg"})"),
      EventFrame("contentBlockStart",
                 R"({"contentBlockIndex":2,"start":{"toolUse":{"name":"get_weather",)"
                 R"("toolUseId":"tooluse_oslo"}}})"),
      EventFrame("contentBlockDelta",
                 R"({"contentBlockIndex":2,"delta":{"toolUse":{"input":"{\"city\":\"Oslo\"}"}}})"),
      EventFrame("contentBlockStop", R"({"contentBlockIndex":2})"),
      EventFrame("messageStop", R"({"p":"abcdef","stopReason":"tool_use"})"),
      EventFrame("metadata",
                 R"({"metrics":{"latencyMs":1432},"p":"abc","usage":{"inputTokens":412,)"
                 R"("outputTokens":96,"totalTokens":508}})"),
  };
}

std::string Join(const std::vector<std::string>& frames) { return fixtures::Join(frames); }

// The frames of `stream` fed `piece` bytes at a time through the splitter;
// fails the test unless it ends cleanly.
std::vector<std::string> SplitFrames(absl::string_view stream, size_t piece) {
  EventStreamSplitter splitter;
  std::vector<std::string> out;
  for (size_t i = 0; i < stream.size(); i += piece) {
    for (std::string& s : splitter.Feed(stream.substr(i, piece))) out.push_back(std::move(s));
  }
  EXPECT_THAT(splitter.Finish(), IsOk());
  return out;
}

// The chunks `Decoder` makes of `frames`; fails the test on any error.
template <typename Decoder>
Chunks DecodeFrames(const std::vector<std::string>& frames) {
  Decoder decoder;
  Chunks chunks;
  for (const std::string& f : frames) {
    absl::StatusOr<std::optional<v1::CompletionChunk>> chunk = decoder.DecodeElement(f);
    EXPECT_THAT(chunk, IsOk());
    if (chunk.ok() && chunk->has_value()) *chunks.Add() = **chunk;
  }
  EXPECT_TRUE(decoder.done());
  return chunks;
}

// The headers and payload of `frame`, for assertions.
event_stream::Frame Decoded(absl::string_view frame) {
  absl::StatusOr<event_stream::Frame> decoded = event_stream::DecodeFrame(frame);
  EXPECT_THAT(decoded, IsOk());
  return decoded.ok() ? *decoded : event_stream::Frame{};
}

const Codec& ConverseApi() { return *CodecRegistry::Builtin().Find("bedrock"); }
const Codec& InvokeApi() { return *CodecRegistry::Builtin().Find("bedrock-invoke"); }

// --- Converse requests ---

TEST(BedrockParseRequestTest, MapsAConverseTurn) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(kRequest, "anthropic.claude-3-5-sonnet");
  ASSERT_THAT(parsed, IsOk());
  const v1::CompletionRequest& r = parsed->canonical;
  EXPECT_EQ(r.model(), "anthropic.claude-3-5-sonnet");
  EXPECT_FALSE(parsed->stream);
  ASSERT_EQ(r.messages_size(), 5);
  EXPECT_EQ(r.messages(0).role(), "system");
  EXPECT_EQ(r.messages(0).content(), "You are the executor. Use tools.");
  EXPECT_EQ(r.messages(0).extra(), "");
  EXPECT_EQ(r.messages(1).role(), "user");
  EXPECT_EQ(r.messages(1).content(), "What is the weather in Paris and in Oslo?");
  EXPECT_EQ(r.messages(1).extra(), "");
  const v1::Message& assistant = r.messages(2);
  EXPECT_EQ(assistant.role(), "assistant");
  EXPECT_EQ(assistant.content(), "I'll check both cities.");
  EXPECT_EQ(assistant.extra(), "");
  ASSERT_EQ(assistant.tool_calls_size(), 2);
  EXPECT_EQ(assistant.tool_calls(0).id(), "tooluse_paris");
  EXPECT_EQ(assistant.tool_calls(0).name(), "get_weather");
  EXPECT_EQ(assistant.tool_calls(0).arguments(), R"({"city":"Paris"})");
  EXPECT_EQ(r.messages(3).role(), "tool");
  EXPECT_EQ(r.messages(3).tool_call_id(), "tooluse_paris");
  EXPECT_EQ(r.messages(3).content(), "18C, cloudy");
  EXPECT_EQ(r.messages(3).extra(), "");
  // A JSON result: its text is the compact JSON; the exact content and the
  // status stay in extra.
  EXPECT_EQ(r.messages(4).content(), R"({"temp":4,"sky":"snow"})");
  EXPECT_EQ(r.messages(4).extra(),
            R"({"content":[{"json":{"temp":4,"sky":"snow"}}],"status":"success"})");
  EXPECT_EQ(r.params().max_tokens(), 512);
  EXPECT_DOUBLE_EQ(r.params().temperature(), 0.2);
  EXPECT_DOUBLE_EQ(r.params().top_p(), 0.9);
  EXPECT_THAT(r.params().stop(), ElementsAre("END"));
  ASSERT_EQ(r.tools_size(), 1);
  EXPECT_EQ(r.tools(0).name(), "get_weather");
  EXPECT_EQ(r.tools(0).description(), "Current weather for a city.");
  EXPECT_EQ(r.tools(0).parameters(),
            R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");
  // toolChoice and the model's own fields change the answer; the caller's
  // request metadata does not.
  EXPECT_EQ(r.extra(), R"({"toolConfig":{"toolChoice":{"auto":{}}},)"
                       R"("additionalModelRequestFields":{"top_k":40}})");
}

TEST(BedrockParseRequestTest, RequestMetadataNeverChangesTheMatch) {
  Json body = Json::parse(kRequest);
  const std::string before = CanonicalText(ParseRequest(DumpJson(body), "m")->canonical);
  body["requestMetadata"] = Json{{"team", "other"}};
  EXPECT_EQ(CanonicalText(ParseRequest(DumpJson(body), "m")->canonical), before);
  body["inferenceConfig"]["maxTokens"] = 513;
  EXPECT_NE(CanonicalText(ParseRequest(DumpJson(body), "m")->canonical), before);
}

TEST(BedrockParseRequestTest, KeepsBlocksItHasNoCanonicalPlaceFor) {
  constexpr absl::string_view kBody = R"({"messages": [
    {"role": "user", "content": [
      {"text": "What is in this picture?"},
      {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}},
      {"futureBlock": {"x": 1}}]},
    {"role": "assistant", "content": [
      {"reasoningContent": {"reasoningText": {"text": "Hmm.", "signature": "sig"}}},
      {"text": "A cat."}]},
    {"role": "user", "content": [{"text": "Sure?"}, {"cachePoint": {"type": "default"}}],
     "note": "kept"}
  ],
  "system": [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}]})";
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(kBody, "m");
  ASSERT_THAT(parsed, IsOk());
  const v1::CompletionRequest& r = parsed->canonical;
  ASSERT_EQ(r.messages_size(), 4);
  EXPECT_EQ(r.messages(0).content(), "Be brief.");
  EXPECT_EQ(r.messages(0).extra(),
            R"({"content":[{"text":"Be brief."},{"cachePoint":{"type":"default"}}]})");
  EXPECT_EQ(r.messages(1).content(), "What is in this picture?");
  EXPECT_THAT(r.messages(1).extra(), HasSubstr(R"("futureBlock":{"x":1})"));
  EXPECT_THAT(r.messages(1).extra(), HasSubstr(R"("image":{"format":"png")"));
  EXPECT_EQ(r.messages(2).content(), "A cat.");
  EXPECT_THAT(r.messages(2).extra(), HasSubstr("reasoningContent"));
  EXPECT_EQ(r.messages(3).content(), "Sure?");
  EXPECT_EQ(r.messages(3).extra(),
            R"({"note":"kept","content":[{"text":"Sure?"},{"cachePoint":{"type":"default"}}]})");
}

TEST(BedrockParseRequestTest, AToolResultAfterOtherBlocksKeepsTheTurnsOrder) {
  constexpr absl::string_view kBody = R"({"messages": [{"role": "user", "content": [
      {"text": "Here:"},
      {"toolResult": {"toolUseId": "t1", "content": [{"text": "ok"}]}}]}]})";
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(kBody, "m");
  ASSERT_THAT(parsed, IsOk());
  const v1::CompletionRequest& r = parsed->canonical;
  ASSERT_EQ(r.messages_size(), 2);
  EXPECT_EQ(r.messages(0).role(), "tool");
  EXPECT_EQ(r.messages(0).content(), "ok");
  EXPECT_EQ(r.messages(1).role(), "user");
  EXPECT_EQ(r.messages(1).content(), "Here:");
  EXPECT_THAT(r.messages(1).extra(), HasSubstr("toolResult"));
}

TEST(BedrockParseRequestTest, KeepsToolsThatAreMoreThanAToolSpec) {
  constexpr absl::string_view kBody = R"({"messages": [], "toolConfig": {"tools": [
      {"toolSpec": {"name": "a", "inputSchema": {"json": {}}}},
      {"cachePoint": {"type": "default"}}]}})";
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(kBody, "m");
  ASSERT_THAT(parsed, IsOk());
  ASSERT_EQ(parsed->canonical.tools_size(), 1);
  EXPECT_EQ(parsed->canonical.tools(0).parameters(), "{}");
  EXPECT_EQ(parsed->canonical.extra(),
            R"({"toolConfig":{"tools":[{"toolSpec":{"name":"a","inputSchema":{"json":{}}}},)"
            R"({"cachePoint":{"type":"default"}}]}})");
}

TEST(BedrockParseRequestTest, BadBodiesNameTheFieldAndWhatWasExpected) {
  const auto error = [](absl::string_view body) {
    return std::string(ParseRequest(body, "m").status().message());
  };
  EXPECT_THAT(error("{"), HasSubstr("body: invalid JSON at byte 1"));
  EXPECT_THAT(error("{\"messages\": [], \"x\": \"\xff\"}"), HasSubstr("body: invalid UTF-8"));
  EXPECT_EQ(error("[]"), "body: expected a JSON object, got array");
  EXPECT_EQ(error("{}"), "messages: missing; expected an array of messages");
  EXPECT_EQ(error(R"({"messages": {}})"), "messages: expected an array of messages, got object");
  EXPECT_EQ(error(R"({"messages": [{"role": "system", "content": []}]})"),
            "messages[0].role: expected \"user\" or \"assistant\", got \"system\"");
  EXPECT_EQ(error(R"({"messages": [{"role": "user", "content": "hi"}]})"),
            "messages[0].content: expected an array of content blocks, got string");
  EXPECT_EQ(error(R"({"messages": [{"role": "user"}]})"),
            "messages[0].content: missing; expected an array of content blocks");
  EXPECT_EQ(error(R"({"messages": [{"role": "user", "content": [7]}]})"),
            "messages[0].content[0]: expected a content block object, got number");
  EXPECT_EQ(error(R"({"messages": [{"role": "user", "content": [{"text": 1}]}]})"),
            "messages[0].content[0].text: expected a string, got number");
  EXPECT_EQ(error(R"({"messages": [{"role": "assistant", "content": [)"
                  R"({"toolUse": {"name": "a", "input": {}}}]}]})"),
            "messages[0].content[0].toolUse.toolUseId: missing; expected a string");
  EXPECT_EQ(error(R"({"messages": [{"role": "assistant", "content": [)"
                  R"({"toolUse": {"toolUseId": "t", "name": "a"}}]}]})"),
            "messages[0].content[0].toolUse.input: missing; expected a JSON value");
  EXPECT_EQ(error(R"({"messages": [{"role": "user", "content": [)"
                  R"({"toolResult": {"toolUseId": "t", "content": "x"}}]}]})"),
            "messages[0].content[0].toolResult.content: expected an array of tool result "
            "content blocks, got string");
  EXPECT_EQ(error(R"({"messages": [], "system": "hi"})"),
            "system: expected an array of system content blocks, got string");
  EXPECT_EQ(error(R"({"messages": [], "inferenceConfig": {"maxTokens": "5"}})"),
            "inferenceConfig.maxTokens: expected an integer, got string");
  EXPECT_EQ(error(R"({"messages": [], "inferenceConfig": {"stopSequences": ["a", 1]}})"),
            "inferenceConfig.stopSequences[1]: expected a string, got number");
  EXPECT_EQ(error(R"({"messages": [], "toolConfig": {"tools": [{"toolSpec": {}}]}})"),
            "toolConfig.tools[0].toolSpec.name: missing; expected a string");
  EXPECT_EQ(error(R"({"messages": [], "toolConfig": []})"),
            "toolConfig: expected an object, got array");
}

// --- Converse answers ---

TEST(BedrockParseResponseTest, MapsAConverseAnswer) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kResponse);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->id(), "");
  EXPECT_EQ(r->message().role(), "assistant");
  EXPECT_EQ(r->message().content(), "I'll check both cities.");
  ASSERT_EQ(r->message().tool_calls_size(), 2);
  EXPECT_EQ(r->message().tool_calls(1).id(), "tooluse_oslo");
  EXPECT_EQ(r->message().tool_calls(1).arguments(), R"({"city":"Oslo"})");
  EXPECT_EQ(r->finish_reason(), "tool_calls");
  EXPECT_EQ(r->usage().input_tokens(), 412);
  EXPECT_EQ(r->usage().output_tokens(), 96);
}

TEST(BedrockParseResponseTest, BadAnswersNameTheField) {
  EXPECT_THAT(ParseResponse("{}"),
              StatusIs(absl::StatusCode::kInvalidArgument, "output: missing; expected an object"));
  EXPECT_THAT(ParseResponse(R"({"output": {"message": {"content": {}}}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "output.message.content: expected an array of content blocks, got object"));
  EXPECT_THAT(
      ParseResponse(R"({"output": {"message": {"content": []}}, "usage": {"inputTokens": "1"}})"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("usage.inputTokens")));
}

TEST(BedrockRenderResponseTest, RendersWhatParsesBackTheSame) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kResponse);
  ASSERT_THAT(r, IsOk());
  const std::string rendered = RenderResponse(*r);
  EXPECT_EQ(
      rendered,
      R"({"metrics":{"latencyMs":0},"output":{"message":{"content":[)"
      R"({"text":"I'll check both cities."},)"
      R"({"toolUse":{"input":{"city":"Paris"},"name":"get_weather","toolUseId":"tooluse_paris"}},)"
      R"({"toolUse":{"input":{"city":"Oslo"},"name":"get_weather","toolUseId":"tooluse_oslo"}}],)"
      R"("role":"assistant"}},"stopReason":"tool_use","usage":{"inputTokens":412,)"
      R"("outputTokens":96,"totalTokens":508}})");
  absl::StatusOr<v1::CompletionResponse> back = ParseResponse(rendered);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->DebugString(), r->DebugString());
}

TEST(BedrockRenderResponseTest, RendersAnswersRecordedElsewhere) {
  v1::CompletionResponse r;
  r.mutable_message()->add_tool_calls()->set_arguments("not json");
  r.set_finish_reason("length");
  EXPECT_EQ(RenderResponse(r),
            R"({"metrics":{"latencyMs":0},"output":{"message":{"content":[{"toolUse":)"
            R"({"input":{"arguments":"not json"},"name":"","toolUseId":""}}],"role":"assistant"}},)"
            R"("stopReason":"max_tokens","usage":{"inputTokens":0,"outputTokens":0,)"
            R"("totalTokens":0}})");
  EXPECT_THAT(RenderResponse(v1::CompletionResponse()), HasSubstr(R"("content":[{"text":""}])"));
}

TEST(BedrockStopReasonTest, MapsBothWays) {
  EXPECT_EQ(FinishReasonFromStopReason("end_turn"), "stop");
  EXPECT_EQ(FinishReasonFromStopReason("stop_sequence"), "stop");
  EXPECT_EQ(FinishReasonFromStopReason("tool_use"), "tool_calls");
  EXPECT_EQ(FinishReasonFromStopReason("max_tokens"), "length");
  EXPECT_EQ(FinishReasonFromStopReason("guardrail_intervened"), "content_filter");
  EXPECT_EQ(FinishReasonFromStopReason("model_context_window_exceeded"),
            "model_context_window_exceeded");
  EXPECT_EQ(FinishReasonFromStopReason(""), "");
  EXPECT_EQ(StopReasonFromFinishReason("stop", false), "end_turn");
  EXPECT_EQ(StopReasonFromFinishReason("content_filter", false), "content_filtered");
  EXPECT_EQ(StopReasonFromFinishReason("", true), "tool_use");
  EXPECT_EQ(StopReasonFromFinishReason("", false), "end_turn");
}

// --- ConverseStream ---

TEST(BedrockStreamTest, FramesAreWhatTheSdkEncodes) {
  // @smithy/core's EventStreamCodec encoded this very event (see
  // event_stream_test.cc): same header order, same bytes.
  EXPECT_EQ(
      absl::BytesToHexString(EventFrame(
          "contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"abcd"})")),
      "0000009f00000057c37babff0b3a6576656e742d74797065070011636f6e74656e74426c6f636b44656c"
      "74610d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e0d3a6d657373616"
      "7652d747970650700056576656e747b22636f6e74656e74426c6f636b496e646578223a302c2264656c74"
      "61223a7b2274657874223a224869227d2c2270223a2261626364227df2ace5ff");
}

TEST(BedrockStreamTest, AssemblesToTheAnswerSentWhole) {
  const std::string stream = Join(StreamFrames());
  for (size_t piece : {size_t{1}, size_t{7}, size_t{64}, stream.size()}) {
    const std::vector<std::string> frames = SplitFrames(stream, piece);
    ASSERT_EQ(frames, StreamFrames()) << piece;
    const Chunks chunks = DecodeFrames<StreamDecoder>(frames);
    ASSERT_EQ(chunks.size(), 9);
    EXPECT_EQ(chunks[0].content(), "I'll check");
    EXPECT_EQ(chunks[2].tool_calls(0).id(), "tooluse_paris");
    EXPECT_EQ(chunks[2].tool_calls(0).index(), 0);
    EXPECT_EQ(chunks[4].tool_calls(0).arguments(), "\"Paris\"}");
    EXPECT_EQ(chunks[5].tool_calls(0).index(), 1);
    EXPECT_EQ(AssembleResponse(chunks).DebugString(), ParseResponse(kResponse)->DebugString());
  }
}

TEST(BedrockStreamTest, RendersFramesThatDecodeToTheSameChunks) {
  const Chunks recorded = DecodeFrames<StreamDecoder>(StreamFrames());
  std::unique_ptr<EventRenderer> renderer = StreamRenderer(recorded);
  const std::vector<RenderedEvent> events = RenderAll(*renderer);
  std::vector<std::string> types;
  std::vector<int> carried;
  std::vector<std::string> frames;
  for (const RenderedEvent& e : events) {
    const event_stream::Frame frame = Decoded(e.text);
    types.push_back(frame.StringHeader(":event-type"));
    EXPECT_EQ(frame.headers.size(), 3u);
    EXPECT_EQ(frame.headers[1].name, ":content-type");
    EXPECT_EQ(frame.StringHeader(":message-type"), "event");
    carried.push_back(e.chunk);
    frames.push_back(e.text);
  }
  EXPECT_THAT(types,
              ElementsAre("messageStart", "contentBlockDelta", "contentBlockDelta",
                          "contentBlockStop", "contentBlockStart", "contentBlockDelta",
                          "contentBlockDelta", "contentBlockStop", "contentBlockStart",
                          "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"));
  EXPECT_THAT(carried, ElementsAre(-1, 0, 1, -1, -1, 3, 4, -1, -1, 6, -1, -1, -1));
  EXPECT_EQ(Decoded(frames[4]).payload,
            R"({"contentBlockIndex":1,"start":{"toolUse":{"name":"get_weather",)"
            R"("toolUseId":"tooluse_paris"}}})");
  EXPECT_EQ(Decoded(frames[12]).payload,
            R"({"metrics":{"latencyMs":0},"usage":{"inputTokens":412,"outputTokens":96,)"
            R"("totalTokens":508}})");
  const Chunks replayed = DecodeFrames<StreamDecoder>(SplitFrames(Join(frames), 5));
  EXPECT_EQ(AssembleResponse(replayed).DebugString(), AssembleResponse(recorded).DebugString());
  EXPECT_EQ(RenderStream(recorded), frames);
}

TEST(BedrockStreamTest, RegroupsInterleavedToolCallsFromAnotherApi) {
  const Chunks recorded = fixtures::DecodeOpenAiStream(fixtures::kOpenAiParallelStream);
  const Chunks replayed = DecodeFrames<StreamDecoder>(RenderStream(recorded));
  const v1::CompletionResponse want = AssembleResponse(recorded);
  const v1::CompletionResponse got = AssembleResponse(replayed);
  EXPECT_EQ(got.message().content(), want.message().content());
  ASSERT_EQ(got.message().tool_calls_size(), want.message().tool_calls_size());
  for (int i = 0; i < got.message().tool_calls_size(); ++i) {
    EXPECT_EQ(got.message().tool_calls(i).DebugString(),
              want.message().tool_calls(i).DebugString());
  }
  EXPECT_EQ(got.finish_reason(), want.finish_reason());
  EXPECT_EQ(got.usage().DebugString(), want.usage().DebugString());
}

TEST(BedrockStreamTest, AnEmptyAnswerStillEndsTheMessage) {
  const std::vector<std::string> frames = RenderStream(Chunks());
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(Decoded(frames[1]).payload, R"({"stopReason":"end_turn"})");
}

TEST(BedrockStreamTest, ExceptionsFailWithTheStatusTheirTypeStandsFor) {
  StreamDecoder decoder;
  EXPECT_THAT(decoder.DecodeElement(EventFrame("messageStart", R"({"role":"assistant"})")), IsOk());
  EXPECT_THAT(decoder.DecodeElement(ExceptionFrame("throttlingException", "Too many requests")),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "upstream stream error (throttlingException): Too many requests"));
  EXPECT_THAT(decoder.DecodeElement(ExceptionFrame("modelStreamErrorException", "boom")),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("boom")));
  EXPECT_THAT(decoder.DecodeElement(ExceptionFrame("validationException", "bad")),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(decoder.DecodeElement(ExceptionFrame("brandNewException", "?")),
              StatusIs(absl::StatusCode::kUnknown));
  event_stream::Frame error;
  error.headers = {{":message-type", std::string("error")},
                   {":error-code", std::string("InternalServerException")},
                   {":error-message", std::string("try later")}};
  EXPECT_THAT(decoder.DecodeElement(*event_stream::EncodeFrame(error)),
              StatusIs(absl::StatusCode::kInternal,
                       "upstream stream error (InternalServerException): try later"));
}

TEST(BedrockStreamTest, MalformedFramesNameWhatIsWrong) {
  StreamDecoder decoder;
  std::string corrupt = EventFrame("messageStop", "{}");
  corrupt[20] ^= 1;
  EXPECT_THAT(decoder.DecodeElement(corrupt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("element: event stream frame: message CRC")));
  event_stream::Frame untyped;
  untyped.payload = "{}";
  EXPECT_THAT(decoder.DecodeElement(*event_stream::EncodeFrame(untyped)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "element.headers.:message-type: missing; expected a string"));
  untyped.headers = {{":message-type", std::string("event")}};
  EXPECT_THAT(decoder.DecodeElement(*event_stream::EncodeFrame(untyped)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "element.headers.:event-type: missing; expected a string"));
  EXPECT_THAT(
      decoder.DecodeElement(EventFrame("contentBlockDelta", "[")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("element.payload: invalid JSON")));
  EXPECT_THAT(decoder.DecodeElement(
                  EventFrame("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"text":1}})")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "element.payload.delta.text: expected a string, got number"));
  EXPECT_THAT(decoder.DecodeElement(EventFrame("contentBlockDelta", R"({"delta":{"text":"a"}})")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "element.payload.contentBlockIndex: missing; expected an integer"));
  EXPECT_THAT(
      decoder.DecodeElement(EventFrame(
          "contentBlockDelta", R"({"contentBlockIndex":3,"delta":{"toolUse":{"input":"{"}}})")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "element.payload.contentBlockIndex: toolUse delta for content block 3, "
               "which was never started"));
  EXPECT_THAT(decoder.Decode(SseEvent()), StatusIs(absl::StatusCode::kUnimplemented));
}

TEST(BedrockStreamTest, SkipsWhatCarriesNothing) {
  StreamDecoder decoder;
  for (const std::string& frame :
       {EventFrame("messageStart", R"({"role":"assistant"})"),
        EventFrame("contentBlockDelta",
                   R"({"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"hm"}}})"),
        EventFrame("contentBlockStart",
                   R"({"contentBlockIndex":1,"start":{"image":{"format":"png"}}})"),
        EventFrame("contentBlockDelta",
                   R"({"contentBlockIndex":1,"delta":{"toolUse":{"input":"x"}}})"),
        EventFrame("contentBlockStop", R"({"contentBlockIndex":1})"),
        EventFrame("somethingNew", "not even JSON"), EventFrame("metadata", R"({"metrics":{}})")}) {
    absl::StatusOr<std::optional<v1::CompletionChunk>> chunk = decoder.DecodeElement(frame);
    ASSERT_THAT(chunk, IsOk());
    EXPECT_FALSE(chunk->has_value());
  }
  EXPECT_FALSE(decoder.done());
}

// --- Errors ---

TEST(BedrockErrorTest, ErrorTypesBothWays) {
  EXPECT_EQ(ErrorType(absl::StatusCode::kResourceExhausted), "ThrottlingException");
  EXPECT_EQ(ErrorType(absl::StatusCode::kInvalidArgument), "ValidationException");
  EXPECT_EQ(ErrorType(absl::StatusCode::kFailedPrecondition), "ValidationException");
  EXPECT_EQ(ErrorType(absl::StatusCode::kNotFound), "ResourceNotFoundException");
  EXPECT_EQ(ErrorType(absl::StatusCode::kUnavailable), "ServiceUnavailableException");
  EXPECT_EQ(ErrorType(absl::StatusCode::kDeadlineExceeded), "ModelTimeoutException");
  EXPECT_EQ(ErrorType(absl::StatusCode::kUnknown), "InternalServerException");
  EXPECT_EQ(CodeFromErrorType("ThrottlingException"), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CodeFromErrorType("throttlingException"), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CodeFromErrorType("ValidationException:http://internal.amazon.com/coral/x/"),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeFromErrorType("com.amazonaws.bedrockruntime#AccessDeniedException"),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(CodeFromErrorType("ServiceQuotaExceededException"),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CodeFromErrorType("Nope"), absl::StatusCode::kUnknown);
}

TEST(BedrockErrorTest, BodiesTakeBedrocksShape) {
  EXPECT_EQ(ErrorBody(absl::ResourceExhaustedError("Too many requests")),
            R"({"__type":"ThrottlingException","message":"Too many requests"})");
  EXPECT_EQ(UpstreamErrorMessage(R"({"message":"Rate exceeded"})"), "Rate exceeded");
  EXPECT_EQ(UpstreamErrorMessage(R"({"Message":"User is not authorized"})"),
            "User is not authorized");
  EXPECT_EQ(UpstreamErrorMessage("<html>"), "");
  EXPECT_EQ(ConverseApi().UpstreamErrorMessage(R"({"message":"Rate exceeded"})"), "Rate exceeded");
  EXPECT_EQ(InvokeApi().ErrorBody(absl::NotFoundError("no model"), "x"),
            R"({"__type":"ResourceNotFoundException","message":"no model"})");
  EXPECT_EQ(ConverseApi().RequestErrorBody(413, "too big"),
            R"({"__type":"ValidationException","message":"too big"})");
}

// --- The codecs ---

TEST(BedrockCodecTest, ReadsTheModelIdFromThePath) {
  const Codec& api = ConverseApi();
  EXPECT_EQ(api.upstream(), "bedrock");
  EXPECT_EQ(api.BaseUrlVariable().first, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME");
  EXPECT_EQ(api.aws_signing_name(), "bedrock");
  EXPECT_EQ(InvokeApi().aws_signing_name(), "bedrock");
  const std::string path = "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse";
  ASSERT_TRUE(api.Serves(path));
  absl::StatusOr<CallRoute> whole = api.Route("POST", path, "");
  ASSERT_THAT(whole, IsOk());
  EXPECT_EQ(whole->model, "anthropic.claude-3-5-sonnet-20240620-v1:0");
  EXPECT_EQ(whole->framing, StreamFraming::kNone);
  EXPECT_EQ(api.RecordedPath(*whole), path);
  EXPECT_EQ(api.ForwardPath(*whole), path);

  const std::string arn =
      "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2F"
      "us.anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse-stream";
  absl::StatusOr<CallRoute> stream = api.Route("POST", arn, "");
  ASSERT_THAT(stream, IsOk());
  EXPECT_EQ(stream->model,
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/"
            "us.anthropic.claude-3-5-sonnet-20241022-v2:0");
  EXPECT_EQ(stream->framing, StreamFraming::kEventStream);
  EXPECT_EQ(api.StreamContentType(*stream), "application/vnd.amazon.eventstream");
  EXPECT_TRUE(api.SameForm(*stream, "application/vnd.amazon.eventstream"));
  EXPECT_FALSE(api.SameForm(*stream, "application/json"));
  EXPECT_TRUE(api.SameForm(*whole, "application/json"));

  absl::StatusOr<ParsedRequest> parsed = api.ParseRequest(*stream, kRequest);
  ASSERT_THAT(parsed, IsOk());
  EXPECT_TRUE(parsed->stream);
  EXPECT_TRUE(parsed->include_usage);
  EXPECT_EQ(parsed->stream_framing, StreamFraming::kEventStream);
  EXPECT_EQ(parsed->canonical.model(), stream->model);
  parsed = api.ParseRequest(*whole, kRequest);
  ASSERT_THAT(parsed, IsOk());
  EXPECT_FALSE(parsed->stream);
}

TEST(BedrockCodecTest, RefusesPathsItDoesNotServe) {
  const Codec& api = ConverseApi();
  EXPECT_FALSE(api.Serves("/model/m/invoke"));
  EXPECT_FALSE(api.Serves("/model/m/count-tokens"));
  EXPECT_FALSE(api.Serves("/models/m/converse"));
  EXPECT_TRUE(InvokeApi().Serves("/model/m/invoke"));
  EXPECT_TRUE(InvokeApi().Serves("/model/m/invoke-with-response-stream"));
  EXPECT_FALSE(InvokeApi().Serves("/model/m/invoke-with-bidirectional-stream"));
  EXPECT_THAT(api.Route("POST", "/model//converse", "").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the model id in /model/{modelId}/converse is empty")));
  EXPECT_THAT(api.Route("POST", "/model/a%zz/converse", "").status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(api.Route("POST", "/model/a%ff/converse", "").status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(api.Route("POST", "/model/a%2/converse", "").status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(BedrockCodecTest, ReplaysBedrocksHeaders) {
  for (const char* name :
       {"x-amzn-requestid", "x-amzn-errortype", "x-amzn-bedrock-invocation-latency",
        "x-amzn-bedrock-output-token-count"}) {
    EXPECT_TRUE(ConverseApi().ReplaysHeader(name)) << name;
  }
  EXPECT_FALSE(ConverseApi().ReplaysHeader("x-amz-security-token"));
  for (absl::string_view field : ConverseApi().IgnoredRequestFields()) {
    EXPECT_NE(field, "authorization");
  }
}

// --- InvokeModel (Anthropic on Bedrock) ---

// kAnthropicRequest as Bedrock takes it: no model, anthropic_version.
std::string InvokeBody() {
  Json body = Json::parse(fixtures::kAnthropicRequest);
  body.erase("model");
  body.erase("stream");
  body["anthropic_version"] = "bedrock-2023-05-31";
  return DumpJson(body);
}

TEST(BedrockInvokeTest, ParsesAnthropicBodiesWithThePathsModel) {
  absl::StatusOr<ParsedRequest> parsed =
      ParseInvokeRequest(InvokeBody(), "anthropic.claude-3-5-sonnet-20240620-v1:0");
  ASSERT_THAT(parsed, IsOk());
  absl::StatusOr<ParsedRequest> direct = anthropic::ParseRequest(fixtures::kAnthropicRequest);
  ASSERT_THAT(direct, IsOk());
  v1::CompletionRequest want = direct->canonical;
  want.set_model("anthropic.claude-3-5-sonnet-20240620-v1:0");
  Json extra = Json::parse(want.extra());
  extra["anthropic_version"] = "bedrock-2023-05-31";
  want.set_extra(DumpJson(extra));
  EXPECT_EQ(CanonicalText(parsed->canonical), CanonicalText(want));
  EXPECT_FALSE(parsed->stream);

  // A model in the body is kept for matching; the path's is the model.
  Json with_model = Json::parse(InvokeBody());
  with_model["model"] = "claude-x";
  parsed = ParseInvokeRequest(DumpJson(with_model), "m");
  ASSERT_THAT(parsed, IsOk());
  EXPECT_EQ(parsed->canonical.model(), "m");
  EXPECT_THAT(parsed->canonical.extra(), HasSubstr(R"("model":"claude-x")"));

  EXPECT_THAT(ParseInvokeRequest(R"({"anthropic_version":"bedrock-2023-05-31"})", "m"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "messages: missing; expected an array of messages"));
  EXPECT_THAT(ParseInvokeRequest(R"({"inputText":"hi"})", "amazon.titan-text-express-v1"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("messages: missing")));
  EXPECT_THAT(ParseInvokeRequest("[1]", "m"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                       "body: expected a JSON object, got array"));
}

// An Anthropic stream's events as InvokeModelWithResponseStream frames them.
std::vector<std::string> InvokeFrames(absl::string_view sse) {
  std::vector<std::string> frames;
  absl::StatusOr<std::vector<SseEvent>> events = ParseSse(sse);
  EXPECT_THAT(events, IsOk());
  for (const SseEvent& e : *events) {
    frames.push_back(EventFrame("chunk", absl::StrCat(R"({"bytes":")", absl::Base64Escape(e.data),
                                                      R"(","p":"abcdefgh"})")));
  }
  return frames;
}

TEST(BedrockInvokeTest, DecodesAnthropicEventsInChunkFrames) {
  const std::vector<std::string> frames = InvokeFrames(fixtures::kAnthropicToolStream);
  const Chunks chunks = DecodeFrames<InvokeStreamDecoder>(SplitFrames(Join(frames), 3));
  const Chunks want = fixtures::DecodeAnthropicStream(fixtures::kAnthropicToolStream);
  ASSERT_EQ(chunks.size(), want.size());
  for (int i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].DebugString(), want[i].DebugString()) << i;
  }
}

TEST(BedrockInvokeTest, RendersChunkFramesThatDecodeToTheSameChunks) {
  const Chunks recorded = fixtures::DecodeAnthropicStream(fixtures::kAnthropicToolStream);
  const std::vector<std::string> frames = RenderAllText(*InvokeStreamRenderer(recorded));
  const std::vector<std::string> sse = anthropic::RenderStream(recorded);
  ASSERT_EQ(frames.size(), sse.size());
  const event_stream::Frame first = Decoded(frames[0]);
  EXPECT_EQ(first.StringHeader(":event-type"), "chunk");
  Json payload = Json::parse(first.payload);
  std::string data;
  ASSERT_TRUE(absl::Base64Unescape(payload["bytes"].get<std::string>(), &data));
  EXPECT_EQ(absl::StrCat("event: message_start\ndata: ", data, "\n\n"), sse[0]);
  const Chunks replayed = DecodeFrames<InvokeStreamDecoder>(frames);
  EXPECT_EQ(AssembleResponse(replayed).DebugString(), AssembleResponse(recorded).DebugString());
}

TEST(BedrockInvokeTest, BadChunksNameTheirField) {
  InvokeStreamDecoder decoder;
  EXPECT_THAT(
      decoder.DecodeElement(EventFrame("chunk", R"({"bytes":"!!"})")),
      StatusIs(absl::StatusCode::kInvalidArgument, "element.payload.bytes: expected base64 text"));
  EXPECT_THAT(decoder.DecodeElement(EventFrame("chunk", R"({})")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "element.payload.bytes: missing; expected a string"));
  EXPECT_THAT(decoder.DecodeElement(ExceptionFrame("modelTimeoutException", "slow")),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(decoder.DecodeElement(EventFrame(
                  "chunk", absl::StrCat(R"({"bytes":")", absl::Base64Escape("{"), R"("})"))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("data: invalid JSON")));
}

TEST(BedrockInvokeTest, TheCodecAnswersInAnthropicsShapeNamingThePathsModel) {
  const Codec& api = InvokeApi();
  EXPECT_EQ(api.upstream(), "bedrock");
  EXPECT_THAT(api.IgnoredRequestFields(), ElementsAre("stream", "metadata"));
  absl::StatusOr<CallRoute> call = api.Route(
      "POST", "/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke-with-response-stream", "");
  ASSERT_THAT(call, IsOk());
  absl::StatusOr<ParsedRequest> parsed = api.ParseRequest(*call, InvokeBody());
  ASSERT_THAT(parsed, IsOk());
  EXPECT_TRUE(parsed->stream);
  EXPECT_EQ(parsed->stream_framing, StreamFraming::kEventStream);
  v1::CompletionResponse response;
  response.mutable_message()->set_content("hi");
  RenderContext context;
  context.call = &*call;
  absl::StatusOr<std::string> body = api.RenderBody(response, context);
  ASSERT_THAT(body, IsOk());
  EXPECT_THAT(*body, HasSubstr(R"("model":"anthropic.claude-3-haiku-20240307-v1:0")"));
  EXPECT_THAT(api.ParseResponse(fixtures::kAnthropicResponse), IsOk());
}

}  // namespace
}  // namespace bedrock
}  // namespace provider
}  // namespace understudy
