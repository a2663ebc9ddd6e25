#include "provider/anthropic.h"

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
namespace anthropic {
namespace {

using fixtures::Chunks;
using fixtures::DecodeAnthropicStream;
using fixtures::Join;
using fixtures::kAnthropicRequest;
using fixtures::kAnthropicResponse;
using fixtures::kAnthropicToolStream;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Canonical(absl::string_view body) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(body);
  EXPECT_THAT(parsed, IsOk());
  return parsed.ok() ? provider::CanonicalText(parsed->canonical) : "";
}

std::string WithField(absl::string_view body, const std::string& key, const std::string& value) {
  Json j = Json::parse(body);
  if (value.empty()) {
    j.erase(key);
  } else {
    j[key] = Json::parse(value);
  }
  return DumpJson(j);
}

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

// The messages of a one-message request whose message is `message` (JSON).
std::vector<v1::Message> MessagesOf(const std::string& message) {
  absl::StatusOr<ParsedRequest> parsed =
      ParseRequest(R"({"model":"claude","max_tokens":10,"messages":[)" + message + "]}");
  EXPECT_THAT(parsed, IsOk());
  if (!parsed.ok()) return {};
  return {parsed->canonical.messages().begin(), parsed->canonical.messages().end()};
}

TEST(AnthropicParseRequestTest, MapsARecordedToolUseConversation) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(kAnthropicRequest);
  ASSERT_THAT(parsed, IsOk());
  EXPECT_TRUE(parsed->stream);
  EXPECT_TRUE(parsed->include_usage);
  const v1::CompletionRequest& r = parsed->canonical;
  EXPECT_EQ(r.model(), "claude-sonnet-4-20250514");
  ASSERT_EQ(r.messages_size(), 5);
  EXPECT_EQ(r.messages(0).role(), "system");
  EXPECT_EQ(r.messages(0).content(), "You are the executor. Use tools.");
  EXPECT_EQ(r.messages(1).role(), "user");
  const v1::Message& assistant = r.messages(2);
  EXPECT_EQ(assistant.role(), "assistant");
  EXPECT_EQ(assistant.content(), "I'll check both cities.");
  ASSERT_EQ(assistant.tool_calls_size(), 2);
  EXPECT_EQ(assistant.tool_calls(0).id(), "toolu_paris");
  EXPECT_EQ(assistant.tool_calls(0).name(), "get_weather");
  EXPECT_EQ(assistant.tool_calls(0).arguments(), R"({"city":"Paris"})");
  EXPECT_EQ(assistant.extra(), "");
  EXPECT_EQ(r.messages(3).role(), "tool");
  EXPECT_EQ(r.messages(3).tool_call_id(), "toolu_paris");
  EXPECT_EQ(r.messages(3).content(), "18C, cloudy");
  EXPECT_EQ(r.messages(4).role(), "tool");
  EXPECT_EQ(r.messages(4).tool_call_id(), "toolu_oslo");
  EXPECT_EQ(r.messages(4).content(), "4C, snow");
  EXPECT_EQ(r.messages(4).extra(), "");
  ASSERT_EQ(r.tools_size(), 1);
  EXPECT_EQ(r.tools(0).parameters(),
            R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");
  EXPECT_EQ(r.params().max_tokens(), 1024);
  EXPECT_DOUBLE_EQ(r.params().temperature(), 0.2);
  EXPECT_THAT(r.params().stop(), ElementsAre("END"));
  EXPECT_EQ(r.extra(), R"({"tool_choice":{"type":"auto"}})");
}

TEST(AnthropicParseRequestTest, KeyOrderDoesNotChangeTheCanonicalText) {
  const std::string reversed = DumpJson(Reversed(Json::parse(kAnthropicRequest)));
  EXPECT_EQ(Canonical(reversed), Canonical(kAnthropicRequest));
}

TEST(AnthropicParseRequestTest, DefaultIgnoredFieldsAreIgnoredOthersKept) {
  std::string ignored = WithField(kAnthropicRequest, "stream", "false");
  ignored = WithField(ignored, "metadata", R"({"user_id":"other"})");
  EXPECT_EQ(Canonical(ignored), Canonical(kAnthropicRequest));
  EXPECT_THAT(kIgnoredRequestFields, ElementsAre("stream", "metadata"));

  EXPECT_NE(Canonical(WithField(kAnthropicRequest, "tool_choice", R"({"type":"any"})")),
            Canonical(kAnthropicRequest));
  EXPECT_NE(Canonical(WithField(kAnthropicRequest, "top_k", "5")), Canonical(kAnthropicRequest));
  EXPECT_NE(Canonical(WithField(kAnthropicRequest, "thinking",
                                R"({"type":"enabled","budget_tokens":2048})")),
            Canonical(kAnthropicRequest));
}

TEST(AnthropicParseRequestTest, SingleTextBlockCollapsesLikeAString) {
  EXPECT_EQ(
      Canonical(
          R"({"model":"c","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]})"),
      Canonical(R"({"model":"c","messages":[{"role":"user","content":"hi"}]})"));
  EXPECT_EQ(Canonical(R"({"model":"c","system":[{"type":"text","text":"sys"}],"messages":[]})"),
            Canonical(R"({"model":"c","system":"sys","messages":[]})"));
}

TEST(AnthropicParseRequestTest, CacheControlAndSeveralBlocksAreKeptInExtra) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(R"({"model":"c","system":[
      {"type":"text","text":"You are Claude Code."},
      {"type":"text","text":" Be careful.","cache_control":{"type":"ephemeral"}}],
    "messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})");
  ASSERT_THAT(parsed, IsOk());
  const v1::Message& system = parsed->canonical.messages(0);
  EXPECT_EQ(system.content(), "You are Claude Code. Be careful.");
  EXPECT_EQ(system.extra(),
            R"({"content":[{"type":"text","text":"You are Claude Code."},)"
            R"({"type":"text","text":" Be careful.","cache_control":{"type":"ephemeral"}}]})");
  const v1::Message& user = parsed->canonical.messages(1);
  EXPECT_EQ(user.content(), "ab");
  EXPECT_EQ(user.extra(), R"({"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]})");
  // Two blocks are not the same as one with their text.
  EXPECT_NE(
      Canonical(
          R"({"model":"c","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})"),
      Canonical(R"({"model":"c","messages":[{"role":"user","content":"ab"}]})"));
}

TEST(AnthropicParseRequestTest, ImagesAndThinkingBlocksAreKeptInExtra) {
  std::vector<v1::Message> user = MessagesOf(R"({"role":"user","content":[
      {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}},
      {"type":"text","text":"What is this?"}]})");
  ASSERT_EQ(user.size(), 1u);
  EXPECT_EQ(user[0].content(), "What is this?");
  EXPECT_THAT(user[0].extra(), HasSubstr(R"("data":"iVBOR")"));

  std::vector<v1::Message> assistant = MessagesOf(R"({"role":"assistant","content":[
      {"type":"thinking","thinking":"Let me see.","signature":"sig"},
      {"type":"tool_use","id":"t1","name":"f","input":{}}]})");
  ASSERT_EQ(assistant.size(), 1u);
  ASSERT_EQ(assistant[0].tool_calls_size(), 1);
  EXPECT_EQ(assistant[0].tool_calls(0).arguments(), "{}");
  EXPECT_THAT(assistant[0].extra(), HasSubstr(R"("signature":"sig")"));
}

TEST(AnthropicParseRequestTest, ToolResultDetailsGoToTheToolMessageExtra) {
  std::vector<v1::Message> m = MessagesOf(R"({"role":"user","content":[
      {"type":"tool_result","tool_use_id":"t1","content":"boom","is_error":true},
      {"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"ok"}],
       "cache_control":{"type":"ephemeral"}},
      {"type":"text","text":"Continue."}]})");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].role(), "tool");
  EXPECT_EQ(m[0].content(), "boom");
  EXPECT_EQ(m[0].extra(), R"({"is_error":true})");
  EXPECT_EQ(m[1].content(), "ok");
  EXPECT_EQ(m[1].extra(), R"({"cache_control":{"type":"ephemeral"}})");
  EXPECT_EQ(m[2].role(), "user");
  EXPECT_EQ(m[2].content(), "Continue.");
  EXPECT_EQ(m[2].extra(), "");
}

TEST(AnthropicParseRequestTest, TextBeforeToolResultsKeepsTheWholeTurn) {
  const std::string in_order = R"({"role":"user","content":[
      {"type":"tool_result","tool_use_id":"t1","content":"r"},{"type":"text","text":"x"}]})";
  const std::string reordered = R"({"role":"user","content":[
      {"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"t1","content":"r"}]})";
  std::vector<v1::Message> m = MessagesOf(reordered);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_THAT(m[1].extra(), HasSubstr("tool_result"));
  EXPECT_NE(Canonical(R"({"model":"c","messages":[)" + in_order + "]}"),
            Canonical(R"({"model":"c","messages":[)" + reordered + "]}"));
}

TEST(AnthropicParseRequestTest, ServerToolsAreKeptInExtra) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(R"({"model":"c","messages":[],"tools":[
      {"name":"f","input_schema":{"type":"object"}},
      {"type":"web_search_20250305","name":"web_search","max_uses":5}]})");
  ASSERT_THAT(parsed, IsOk());
  ASSERT_EQ(parsed->canonical.tools_size(), 1);
  EXPECT_EQ(parsed->canonical.tools(0).name(), "f");
  EXPECT_THAT(parsed->canonical.extra(), HasSubstr("web_search_20250305"));
}

TEST(AnthropicParseRequestTest, BadFieldsAreNamedWithTheirPath) {
  struct Case {
    const char* body;
    const char* message;
  };
  const Case cases[] = {
      {R"({"model":"c","messages":[{"role":"system","content":"x"}]})",
       R"(messages[0].role: expected "user" or "assistant", got "system")"},
      {R"({"model":"c","messages":[{"role":"user"}]})",
       "messages[0].content: missing; expected a string or an array of content blocks"},
      {R"({"model":"c","messages":[{"role":"user","content":7}]})",
       "messages[0].content: expected a string or an array of content blocks, got number"},
      {R"({"model":"c","messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]})",
       "messages[0].content[0].tool_use_id: missing; expected a string"},
      {R"({"model":"c","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":"{}"}]}]})",
       "messages[0].content[0].input: expected an object, got string"},
      {R"({"model":"c","messages":[{"role":"user","content":[{"text":"x"}]}]})",
       "messages[0].content[0].type: missing; expected a string"},
      {R"({"model":"c","system":5,"messages":[]})",
       "system: expected a string or an array of content blocks, got number"},
      {R"({"model":"c","messages":[],"stop_sequences":"END"})",
       "stop_sequences: expected an array of strings, got string"},
      {R"({"model":"c","messages":[],"max_tokens":"10"})",
       "max_tokens: expected an integer, got string"},
      {R"({"model":"c","messages":[],"tools":[{"description":"d"}]})",
       "tools[0].name: missing; expected a string"},
      {R"({"messages":[]})", "model: missing; expected a string"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseRequest(c.body), StatusIs(absl::StatusCode::kInvalidArgument, c.message))
        << c.body;
  }
  EXPECT_THAT(ParseRequest("{\"model\": \"c\",\n \"messages\": [}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("body: invalid JSON at byte 29: syntax error")));
}

TEST(AnthropicParseResponseTest, MapsTextToolUseStopReasonAndUsage) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kAnthropicResponse);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->id(), "msg_01XYZ");
  EXPECT_EQ(r->model(), "claude-sonnet-4-20250514");
  EXPECT_EQ(r->message().role(), "assistant");
  EXPECT_EQ(r->message().content(), "I'll check both cities.");
  ASSERT_EQ(r->message().tool_calls_size(), 2);
  // The input keeps the key order the model produced.
  EXPECT_EQ(r->message().tool_calls(1).arguments(), R"({"city":"Oslo","units":"C"})");
  EXPECT_EQ(r->finish_reason(), "tool_calls");
  EXPECT_EQ(r->usage().input_tokens(), 410);
  EXPECT_EQ(r->usage().output_tokens(), 96);
}

TEST(AnthropicStopReasonTest, OneTableBothWays) {
  EXPECT_EQ(FinishReasonFromStopReason("end_turn"), "stop");
  EXPECT_EQ(FinishReasonFromStopReason("stop_sequence"), "stop");
  EXPECT_EQ(FinishReasonFromStopReason("tool_use"), "tool_calls");
  EXPECT_EQ(FinishReasonFromStopReason("max_tokens"), "length");
  EXPECT_EQ(FinishReasonFromStopReason("refusal"), "content_filter");
  EXPECT_EQ(FinishReasonFromStopReason("pause_turn"), "pause_turn");
  EXPECT_EQ(FinishReasonFromStopReason(""), "");
  EXPECT_EQ(StopReasonFromFinishReason("stop", false), "end_turn");
  EXPECT_EQ(StopReasonFromFinishReason("tool_calls", true), "tool_use");
  EXPECT_EQ(StopReasonFromFinishReason("length", false), "max_tokens");
  EXPECT_EQ(StopReasonFromFinishReason("content_filter", false), "refusal");
  EXPECT_EQ(StopReasonFromFinishReason("pause_turn", false), "pause_turn");
  EXPECT_EQ(StopReasonFromFinishReason("", true), "tool_use");
  EXPECT_EQ(StopReasonFromFinishReason("", false), "end_turn");
}

TEST(AnthropicStreamDecoderTest, ToolUseStreamAssemblesWithInputJsonFragments) {
  Chunks chunks = DecodeAnthropicStream(kAnthropicToolStream);
  // message_start, 2 text deltas, per tool: start + 2 or 3 fragments, message_delta.
  ASSERT_EQ(chunks.size(), 11);
  EXPECT_EQ(chunks[0].id(), "msg_01S");
  EXPECT_EQ(chunks[0].usage().input_tokens(), 410);
  EXPECT_EQ(chunks[3].tool_calls(0).index(), 0);
  EXPECT_EQ(chunks[3].tool_calls(0).id(), "toolu_paris");
  EXPECT_EQ(chunks[7].tool_calls(0).index(), 1);

  v1::CompletionResponse r = provider::AssembleResponse(chunks);
  EXPECT_EQ(r.id(), "msg_01S");
  EXPECT_EQ(r.model(), "claude-sonnet-4-20250514");
  EXPECT_EQ(r.message().content(), "I'll check both cities.");
  ASSERT_EQ(r.message().tool_calls_size(), 2);
  EXPECT_EQ(r.message().tool_calls(0).id(), "toolu_paris");
  EXPECT_EQ(r.message().tool_calls(0).name(), "get_weather");
  EXPECT_EQ(r.message().tool_calls(0).arguments(), R"({"city": "Paris"})");
  EXPECT_EQ(r.message().tool_calls(1).id(), "toolu_oslo");
  EXPECT_EQ(r.message().tool_calls(1).arguments(), R"({"city": "Oslo"})");
  EXPECT_EQ(r.finish_reason(), "tool_calls");
  EXPECT_EQ(r.usage().input_tokens(), 410);
  EXPECT_EQ(r.usage().output_tokens(), 96);
}

TEST(AnthropicStreamDecoderTest, ErrorEventBecomesAStatus) {
  StreamDecoder decoder;
  SseEvent e;
  e.event = "error";
  e.data = R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})";
  EXPECT_THAT(decoder.Decode(e), StatusIs(absl::StatusCode::kUnavailable,
                                          "upstream stream error (overloaded_error): Overloaded"));
}

TEST(AnthropicStreamDecoderTest, InputJsonForABlockNeverStartedIsAnError) {
  StreamDecoder decoder;
  SseEvent e;
  e.data =
      R"({"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{"}})";
  EXPECT_THAT(
      decoder.Decode(e),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "data.index: input_json_delta for content block 3, which was never started"));
}

TEST(AnthropicStreamDecoderTest, ServerToolInputIsNotAToolCall) {
  StreamDecoder decoder;
  SseEvent e;
  e.data =
      R"({"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}})";
  ASSERT_THAT(decoder.Decode(e), IsOk());
  e.data =
      R"({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"x\"}"}})";
  auto chunk = decoder.Decode(e);
  ASSERT_THAT(chunk, IsOk());
  EXPECT_FALSE(chunk->has_value());
  // A client tool after it is still tool index 0.
  e.data =
      R"({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}})";
  chunk = decoder.Decode(e);
  ASSERT_THAT(chunk, IsOk());
  ASSERT_TRUE(chunk->has_value());
  EXPECT_EQ((*chunk)->tool_calls(0).index(), 0);
}

TEST(AnthropicStreamDecoderTest, UnknownEventsAndThinkingDeltasCarryNothing) {
  StreamDecoder decoder;
  SseEvent e;
  for (
      const char* data :
      {R"({"type":"ping"})", R"({"type":"some_future_event","x":1})",
       R"({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})",
       R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}})",
       R"({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s"}})",
       R"({"type":"content_block_stop","index":0})"}) {
    e.data = data;
    auto chunk = decoder.Decode(e);
    ASSERT_THAT(chunk, IsOk()) << data;
    EXPECT_FALSE(chunk->has_value()) << data;
  }
  EXPECT_FALSE(decoder.done());
  e.data = R"({"type":"message_stop"})";
  ASSERT_THAT(decoder.Decode(e), IsOk());
  EXPECT_TRUE(decoder.done());
  EXPECT_THAT(decoder.Decode(e), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(AnthropicRenderTest, ResponseHasTheMessagesShape) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kAnthropicResponse);
  ASSERT_THAT(r, IsOk());
  absl::StatusOr<std::string> body = RenderResponse(*r);
  ASSERT_THAT(body, IsOk());
  EXPECT_EQ(
      *body,
      R"({"id":"msg_01XYZ","type":"message","role":"assistant","model":"claude-sonnet-4-20250514",)"
      R"("content":[{"type":"text","text":"I'll check both cities."},)"
      R"({"type":"tool_use","id":"toolu_paris","name":"get_weather","input":{"city":"Paris","units":"C"}},)"
      R"({"type":"tool_use","id":"toolu_oslo","name":"get_weather","input":{"city":"Oslo","units":"C"}}],)"
      R"("stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":410,"output_tokens":96}})");
  absl::StatusOr<v1::CompletionResponse> back = ParseResponse(*body);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->DebugString(), r->DebugString());
}

TEST(AnthropicRenderTest, ArgumentsThatAreNotAnObjectCannotBeRendered) {
  v1::CompletionResponse r;
  v1::ToolCall* call = r.mutable_message()->add_tool_calls();
  call->set_arguments("[1,2]");
  EXPECT_THAT(RenderResponse(r),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "cannot render as an Anthropic tool_use block: "
                       "message.tool_calls[0].arguments: expected a JSON object, got array"));
  call->set_arguments("{\"a\":");
  EXPECT_THAT(RenderResponse(r), StatusIs(absl::StatusCode::kFailedPrecondition,
                                          HasSubstr("arguments: invalid JSON at byte 5")));
  call->set_arguments("");
  absl::StatusOr<std::string> body = RenderResponse(r);
  ASSERT_THAT(body, IsOk());
  EXPECT_THAT(*body, HasSubstr(R"("input":{})"));
}

TEST(AnthropicRenderTest, StreamHasTheMessagesEventSequence) {
  Chunks chunks;
  v1::CompletionChunk* c = chunks.Add();
  c->set_id("msg_1");
  c->set_model("claude");
  c->set_content("Hi");
  v1::ToolCallDelta* d = c->add_tool_calls();
  d->set_index(0);
  d->set_id("toolu_1");
  d->set_name("f");
  d = chunks.Add()->add_tool_calls();
  d->set_index(0);
  d->set_arguments("{\"a\":1}");
  c = chunks.Add();
  c->set_finish_reason("tool_calls");
  c->mutable_usage()->set_input_tokens(5);
  c->mutable_usage()->set_output_tokens(7);
  EXPECT_THAT(
      RenderStream(chunks),
      ElementsAre(
          "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
          "\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude\",\"content\":[],"
          "\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,"
          "\"output_tokens\":0}}}\n\n",
          "event: ping\ndata: {\"type\":\"ping\"}\n\n",
          "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
          "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
          "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
          "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
          "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
          "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,"
          "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\","
          "\"input\":{}}}\n\n",
          "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,"
          "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":1}\"}}\n\n",
          "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
          "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
          "\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7}}\n\n",
          "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
}

TEST(AnthropicRenderTest, ToolUseStreamRoundTrips) {
  Chunks recorded = DecodeAnthropicStream(kAnthropicToolStream);
  const std::string rendered = Join(RenderStream(recorded));
  Chunks replayed = DecodeAnthropicStream(rendered);
  EXPECT_EQ(provider::AssembleResponse(replayed).DebugString(),
            provider::AssembleResponse(recorded).DebugString());
  ASSERT_EQ(replayed.size(), recorded.size());
  for (int i = 0; i < recorded.size(); ++i) {
    EXPECT_EQ(replayed[i].DebugString(), recorded[i].DebugString()) << i;
  }
  EXPECT_EQ(Join(RenderStream(replayed)), rendered);
}

TEST(AnthropicErrorTest, ErrorBodyHasAnthropicsShape) {
  EXPECT_EQ(
      ErrorBody("no recording matches", "not_found_error"),
      R"({"type":"error","error":{"type":"not_found_error","message":"no recording matches"}})");
  EXPECT_EQ(ErrorType(absl::StatusCode::kNotFound), "not_found_error");
  EXPECT_EQ(ErrorType(absl::StatusCode::kUnavailable), "overloaded_error");
  EXPECT_EQ(ErrorType(absl::StatusCode::kInternal), "api_error");
}

}  // namespace
}  // namespace anthropic
}  // namespace provider
}  // namespace understudy
