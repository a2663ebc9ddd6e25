#include "provider/cohere.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "provider/canonical.h"
#include "provider/chunks.h"
#include "provider/json_util.h"
#include "provider/test_fixtures.h"

namespace understudy {
namespace provider {
namespace cohere {
namespace {

using fixtures::Chunks;
using fixtures::Join;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// An agent's third turn as the cohere-ai SDK sends it (snake_case on the
// wire): it asked for two tools and sends back both results, one as a
// document. Streamed.
constexpr absl::string_view kRequest = R"({
  "model": "command-a-03-2025",
  "messages": [
    {"role": "system", "content": "You are the executor. Use tools."},
    {"role": "user", "content": "What is the weather in Paris and in Oslo?"},
    {"role": "assistant", "tool_plan": "I will check both cities.", "tool_calls": [
      {"id": "get_weather_p1", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
      {"id": "get_weather_o2", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "get_weather_p1", "content": "18C, cloudy"},
    {"role": "tool", "tool_call_id": "get_weather_o2", "content": [
      {"type": "document", "document": {"data": {"temperature": "4C", "sky": "snow"}}}]}
  ],
  "tools": [{"type": "function", "function": {"name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}],
  "temperature": 0.2,
  "p": 0.9,
  "k": 40,
  "max_tokens": 512,
  "stop_sequences": ["END"],
  "seed": 7,
  "tool_choice": "REQUIRED",
  "priority": 0,
  "stream": true
})";

constexpr absl::string_view kToolResponse = R"({
  "id": "5d4f2a1e-7a5b-4b8e-9a51-0c6d2f1e9b3a",
  "message": {
    "role": "assistant",
    "tool_plan": "I will look up the weather in both cities.",
    "tool_calls": [
      {"id": "get_weather_p1", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
      {"id": "get_weather_o2", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]
  },
  "finish_reason": "TOOL_CALL",
  "usage": {"billed_units": {"input_tokens": 37, "output_tokens": 40},
            "tokens": {"input_tokens": 1012, "output_tokens": 75}}
})";

constexpr absl::string_view kTextResponse = R"({
  "id": "c14c80c3-18eb-4519-9460-6c92edd8cfb4",
  "message": {"role": "assistant", "content": [
    {"type": "thinking", "thinking": "Both results are in."},
    {"type": "text", "text": "Paris: 18C, cloudy. Oslo: 4C, snow."}]},
  "finish_reason": "COMPLETE",
  "usage": {"billed_units": {"input_tokens": 60, "output_tokens": 12},
            "tokens": {"input_tokens": 1100, "output_tokens": 12}}
})";

// The answer of kToolResponse streamed: a tool plan, then two calls whose
// arguments arrive in fragments.
constexpr absl::string_view kToolStream =
    "event: message-start\n"
    "data: {\"id\":\"29f14a5a-1b2c-4d5e-8f90-a1b2c3d4e5f6\",\"type\":\"message-start\","
    "\"delta\":{\"message\":{\"role\":\"assistant\",\"content\":[],\"tool_plan\":\"\","
    "\"tool_calls\":[],\"citations\":[]}}}\n\n"
    "event: tool-plan-delta\n"
    "data: {\"type\":\"tool-plan-delta\",\"delta\":{\"message\":{\"tool_plan\":\"I will\"}}}\n\n"
    "event: tool-plan-delta\n"
    "data: {\"type\":\"tool-plan-delta\",\"delta\":{\"message\":{\"tool_plan\":\" look.\"}}}\n\n"
    "event: tool-call-start\n"
    "data: {\"type\":\"tool-call-start\",\"index\":0,\"delta\":{\"message\":{\"tool_calls\":"
    "{\"id\":\"get_weather_p1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
    "\"arguments\":\"\"}}}}}\n\n"
    "event: tool-call-delta\n"
    "data: {\"type\":\"tool-call-delta\",\"index\":0,\"delta\":{\"message\":{\"tool_calls\":"
    "{\"function\":{\"arguments\":\"{\\\"city\\\":\"}}}}}\n\n"
    "event: tool-call-delta\n"
    "data: {\"type\":\"tool-call-delta\",\"index\":0,\"delta\":{\"message\":{\"tool_calls\":"
    "{\"function\":{\"arguments\":\"\\\"Paris\\\"}\"}}}}}\n\n"
    "event: tool-call-end\n"
    "data: {\"type\":\"tool-call-end\",\"index\":0}\n\n"
    "event: tool-call-start\n"
    "data: {\"type\":\"tool-call-start\",\"index\":1,\"delta\":{\"message\":{\"tool_calls\":"
    "{\"id\":\"get_weather_o2\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
    "\"arguments\":\"\"}}}}}\n\n"
    "event: tool-call-delta\n"
    "data: {\"type\":\"tool-call-delta\",\"index\":1,\"delta\":{\"message\":{\"tool_calls\":"
    "{\"function\":{\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}}}}}\n\n"
    "event: tool-call-end\n"
    "data: {\"type\":\"tool-call-end\",\"index\":1}\n\n"
    "event: message-end\n"
    "data: {\"type\":\"message-end\",\"delta\":{\"finish_reason\":\"TOOL_CALL\",\"usage\":"
    "{\"billed_units\":{\"input_tokens\":37,\"output_tokens\":40},\"tokens\":"
    "{\"input_tokens\":1012,\"output_tokens\":75}}}}\n\n";

// A text answer streamed.
constexpr absl::string_view kTextStream =
    "event: message-start\n"
    "data: {\"id\":\"a8fc192e-4bb8-4e15-ae1f-a174e8b02ae8\",\"type\":\"message-start\","
    "\"delta\":{\"message\":{\"role\":\"assistant\",\"content\":[],\"tool_plan\":\"\","
    "\"tool_calls\":[],\"citations\":[]}}}\n\n"
    "event: content-start\n"
    "data: {\"type\":\"content-start\",\"index\":0,\"delta\":{\"message\":{\"content\":"
    "{\"type\":\"text\",\"text\":\"\"}}}}\n\n"
    "event: content-delta\n"
    "data: {\"type\":\"content-delta\",\"index\":0,\"delta\":{\"message\":{\"content\":"
    "{\"text\":\"Paris: 18C\"}}}}\n\n"
    "event: content-delta\n"
    "data: {\"type\":\"content-delta\",\"index\":0,\"delta\":{\"message\":{\"content\":"
    "{\"text\":\", cloudy.\"}}}}\n\n"
    "event: content-end\n"
    "data: {\"type\":\"content-end\",\"index\":0}\n\n"
    "event: message-end\n"
    "data: {\"type\":\"message-end\",\"delta\":{\"finish_reason\":\"COMPLETE\",\"usage\":"
    "{\"billed_units\":{\"input_tokens\":60,\"output_tokens\":4},\"tokens\":"
    "{\"input_tokens\":1100,\"output_tokens\":4}}}}\n\n";

Chunks Decode(absl::string_view stream) { return fixtures::DecodeStream<StreamDecoder>(stream); }

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

// `value` with every object's keys in reverse order.
Json Reversed(const Json& value) {
  if (value.is_array()) {
    Json out = Json::array();
    for (const Json& v : value) out.push_back(Reversed(v));
    return out;
  }
  if (!value.is_object()) return value;
  std::vector<std::pair<std::string, Json>> items;
  for (auto it = value.begin(); it != value.end(); ++it) {
    items.emplace_back(it.key(), Reversed(*it));
  }
  Json out = Json::object();
  for (auto it = items.rbegin(); it != items.rend(); ++it) out[it->first] = it->second;
  return out;
}

// A request whose only message is `message` (JSON).
std::string OneMessage(const std::string& message) {
  return R"({"model":"command-a","messages":[)" + message + "]}";
}

// The canonical message of a one-message request.
v1::Message MessageOf(const std::string& message) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(OneMessage(message));
  EXPECT_THAT(parsed, IsOk());
  if (!parsed.ok() || parsed->canonical.messages_size() != 1) return {};
  return parsed->canonical.messages(0);
}

TEST(CohereParseRequestTest, MapsARecordedToolConversation) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(kRequest);
  ASSERT_THAT(parsed, IsOk());
  EXPECT_TRUE(parsed->stream);
  EXPECT_TRUE(parsed->include_usage);
  const v1::CompletionRequest& r = parsed->canonical;
  EXPECT_EQ(r.model(), "command-a-03-2025");
  ASSERT_EQ(r.messages_size(), 5);
  EXPECT_EQ(r.messages(0).role(), "system");
  EXPECT_EQ(r.messages(0).content(), "You are the executor. Use tools.");
  EXPECT_EQ(r.messages(0).extra(), "");
  EXPECT_EQ(r.messages(1).role(), "user");
  const v1::Message& assistant = r.messages(2);
  EXPECT_EQ(assistant.role(), "assistant");
  EXPECT_EQ(assistant.content(), "");
  ASSERT_EQ(assistant.tool_calls_size(), 2);
  EXPECT_EQ(assistant.tool_calls(0).id(), "get_weather_p1");
  EXPECT_EQ(assistant.tool_calls(0).name(), "get_weather");
  EXPECT_EQ(assistant.tool_calls(1).arguments(), R"({"city":"Oslo"})");
  EXPECT_EQ(assistant.extra(), R"({"tool_plan":"I will check both cities."})");
  EXPECT_EQ(r.messages(3).role(), "tool");
  EXPECT_EQ(r.messages(3).tool_call_id(), "get_weather_p1");
  EXPECT_EQ(r.messages(3).content(), "18C, cloudy");
  EXPECT_EQ(r.messages(3).extra(), "");
  // A result given as a document: its data as the content, the parts kept.
  EXPECT_EQ(r.messages(4).tool_call_id(), "get_weather_o2");
  EXPECT_EQ(r.messages(4).content(), R"({"sky":"snow","temperature":"4C"})");
  EXPECT_EQ(r.messages(4).extra(),
            R"({"content":[{"type":"document","document":{"data":{"temperature":"4C",)"
            R"("sky":"snow"}}}]})");
  ASSERT_EQ(r.tools_size(), 1);
  EXPECT_EQ(r.tools(0).name(), "get_weather");
  EXPECT_EQ(r.tools(0).description(), "Current weather for a city.");
  EXPECT_EQ(r.tools(0).parameters(),
            R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");
  EXPECT_DOUBLE_EQ(r.params().temperature(), 0.2);
  EXPECT_DOUBLE_EQ(r.params().top_p(), 0.9);
  EXPECT_EQ(r.params().max_tokens(), 512);
  EXPECT_EQ(r.params().seed(), 7);
  EXPECT_THAT(r.params().stop(), ElementsAre("END"));
  EXPECT_EQ(r.extra(), R"({"k":40,"tool_choice":"REQUIRED"})");
}

TEST(CohereParseRequestTest, KeyOrderDoesNotChangeTheCanonicalText) {
  const std::string reversed = DumpJson(Reversed(Json::parse(kRequest)));
  EXPECT_EQ(Canonical(reversed), Canonical(kRequest));
}

TEST(CohereParseRequestTest, DefaultIgnoredFieldsAreIgnoredOthersKept) {
  std::string ignored = WithField(kRequest, "stream", "false");
  ignored = WithField(ignored, "priority", "3");
  EXPECT_EQ(Canonical(ignored), Canonical(kRequest));
  EXPECT_EQ(Canonical(WithField(kRequest, "priority", "")), Canonical(kRequest));
  EXPECT_THAT(kIgnoredRequestFields, ElementsAre("stream", "priority"));

  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"k", "0"},
           {"tool_choice", R"("NONE")"},
           {"frequency_penalty", "0.5"},
           {"presence_penalty", "0.5"},
           {"response_format", R"({"type":"json_object"})"},
           {"safety_mode", R"("STRICT")"},
           {"documents", R"(["Paris is in France."])"},
           {"citation_options", R"({"mode":"FAST"})"},
           {"strict_tools", "true"},
           {"logprobs", "true"},
           {"thinking", R"({"type":"enabled","token_budget":2048})"},
           {"temperature", "0.3"},
           {"p", "0.5"},
           {"max_tokens", "100"},
           {"stop_sequences", R"(["STOP"])"},
           {"seed", "8"}}) {
    EXPECT_NE(Canonical(WithField(kRequest, key, value)), Canonical(kRequest)) << key;
  }
}

TEST(CohereParseRequestTest, NullFieldsAreAbsentOnes) {
  EXPECT_EQ(Canonical(WithField(kRequest, "k", "null")),
            Canonical(WithField(kRequest, "k", "")));
  EXPECT_EQ(Canonical(R"({"model":"m","messages":[],"seed":null,"tools":null})"),
            Canonical(R"({"model":"m","messages":[]})"));
}

TEST(CohereParseRequestTest, PlainTextPartsCollapseLikeAString) {
  for (const char* role : {"system", "user", "assistant"}) {
    const std::string as_parts = std::string(R"({"role":")") + role +
                                 R"(","content":[{"type":"text","text":"hi"}]})";
    const std::string as_string = std::string(R"({"role":")") + role + R"(","content":"hi"})";
    EXPECT_EQ(Canonical(OneMessage(as_parts)), Canonical(OneMessage(as_string))) << role;
  }
  v1::Message tool = MessageOf(
      R"({"role":"tool","tool_call_id":"t","content":[{"type":"text","text":"ok"}]})");
  EXPECT_EQ(tool.content(), "ok");
  EXPECT_EQ(tool.extra(), "");
}

TEST(CohereParseRequestTest, ImagesThinkingAndDocumentsAreKeptInExtra) {
  v1::Message user = MessageOf(R"({"role":"user","content":[
      {"type":"text","text":"What is this?"},
      {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}}]})");
  EXPECT_EQ(user.content(), "What is this?");
  EXPECT_THAT(user.extra(), HasSubstr("iVBOR"));

  v1::Message assistant = MessageOf(R"({"role":"assistant","content":[
      {"type":"thinking","thinking":"Let me see."},{"type":"text","text":"Done."}]})");
  EXPECT_EQ(assistant.content(), "Done.");
  EXPECT_THAT(assistant.extra(), HasSubstr("Let me see."));

  // Text and documents: the text is the content; a string document as is.
  v1::Message mixed = MessageOf(R"({"role":"tool","tool_call_id":"t","content":[
      {"type":"text","text":"see the document"},
      {"type":"document","document":{"data":"{\"a\":1}","id":"doc-1"}}]})");
  EXPECT_EQ(mixed.content(), "see the document");
  EXPECT_THAT(mixed.extra(), HasSubstr("doc-1"));
  v1::Message documents = MessageOf(R"({"role":"tool","tool_call_id":"t","content":[
      {"type":"document","document":{"data":"first"}},
      {"type":"document","document":{"data":[1,2]}}]})");
  EXPECT_EQ(documents.content(), "first\n[1,2]");
}

TEST(CohereParseRequestTest, MessageFieldsWithoutACanonicalOneGoToItsExtra) {
  v1::Message assistant = MessageOf(R"({"role":"assistant","content":"See [1].",
      "citations":[{"start":4,"end":7,"text":"[1]"}]})");
  EXPECT_EQ(assistant.content(), "See [1].");
  EXPECT_EQ(assistant.extra(), R"({"citations":[{"start":4,"end":7,"text":"[1]"}]})");
  // A field that belongs to another role is not read as this role's.
  v1::Message user = MessageOf(R"({"role":"user","content":"x","tool_call_id":"t"})");
  EXPECT_EQ(user.tool_call_id(), "");
  EXPECT_EQ(user.extra(), R"({"tool_call_id":"t"})");
}

TEST(CohereParseRequestTest, ToolCallsAndToolsBeyondTheCanonicalFormAreKeptWhole) {
  v1::Message extra_field = MessageOf(R"({"role":"assistant","tool_calls":[
      {"id":"c1","type":"function","function":{"name":"f","arguments":"{}"},"x":1}]})");
  ASSERT_EQ(extra_field.tool_calls_size(), 1);
  EXPECT_THAT(extra_field.extra(), HasSubstr(R"("tool_calls":[)"));
  v1::Message no_arguments = MessageOf(
      R"({"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f"}}]})");
  ASSERT_EQ(no_arguments.tool_calls_size(), 1);
  EXPECT_EQ(no_arguments.tool_calls(0).arguments(), "");
  EXPECT_THAT(no_arguments.extra(), HasSubstr("tool_calls"));
  v1::Message exact = MessageOf(R"({"role":"assistant","tool_calls":[
      {"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]})");
  EXPECT_EQ(exact.extra(), "");

  absl::StatusOr<ParsedRequest> parsed = ParseRequest(R"({"model":"m","messages":[],"tools":[
      {"type":"function","function":{"name":"f","parameters":{"type":"object"}}},
      {"type":"function","function":{"name":"g","strict":true}}]})");
  ASSERT_THAT(parsed, IsOk());
  ASSERT_EQ(parsed->canonical.tools_size(), 2);
  EXPECT_THAT(parsed->canonical.extra(), HasSubstr(R"("strict":true)"));
}

TEST(CohereParseRequestTest, BadFieldsAreNamedWithTheirPath) {
  struct Case {
    std::string body;
    const char* message;
  };
  const Case cases[] = {
      {R"({"messages":[]})", "model: missing; expected a string"},
      {R"({"model":7,"messages":[]})", "model: expected a string, got number"},
      {R"({"model":"m"})", "messages: missing; expected an array of messages"},
      {R"({"model":"m","messages":{}})", "messages: expected an array of messages, got object"},
      {OneMessage(R"("hi")"), "messages[0]: expected a message object, got string"},
      {OneMessage(R"({"content":"x"})"), "messages[0].role: missing; expected a string"},
      {OneMessage(R"({"role":"developer","content":"x"})"),
       R"(messages[0].role: expected "system", "user", "assistant" or "tool", got "developer")"},
      {OneMessage(R"({"role":"user"})"),
       "messages[0].content: missing; expected a string or an array of content parts"},
      {OneMessage(R"({"role":"user","content":7})"),
       "messages[0].content: expected a string or an array of content parts, got number"},
      {OneMessage(R"({"role":"user","content":[{"type":"video","url":"x"}]})"),
       R"(messages[0].content[0].type: expected "text" or "image_url", got "video")"},
      {OneMessage(R"({"role":"system","content":[{"type":"image_url","image_url":{}}]})"),
       R"(messages[0].content[0].type: expected "text", got "image_url")"},
      {OneMessage(R"({"role":"assistant","content":[{"type":"document","document":{}}]})"),
       R"(messages[0].content[0].type: expected "text" or "thinking", got "document")"},
      {OneMessage(R"({"role":"tool","tool_call_id":"t","content":[{"type":"thinking","thinking":"x"}]})"),
       R"(messages[0].content[0].type: expected "text" or "document", got "thinking")"},
      {OneMessage(R"({"role":"user","content":[{"text":"x"}]})"),
       "messages[0].content[0].type: missing; expected a string"},
      {OneMessage(R"({"role":"user","content":["x"]})"),
       "messages[0].content[0]: expected a content part object, got string"},
      {OneMessage(R"({"role":"user","content":[{"type":"text","text":5}]})"),
       "messages[0].content[0].text: expected a string, got number"},
      {OneMessage(R"({"role":"user","content":[{"type":"image_url","image_url":"http://x"}]})"),
       "messages[0].content[0].image_url: expected an object, got string"},
      {OneMessage(R"({"role":"tool","tool_call_id":"t","content":[{"type":"document"}]})"),
       "messages[0].content[0].document: missing; expected an object"},
      {OneMessage(R"({"role":"assistant","content":[{"type":"thinking"}]})"),
       "messages[0].content[0].thinking: missing; expected a string"},
      {OneMessage(R"({"role":"tool","content":"x"})"),
       "messages[0].tool_call_id: missing; expected a string"},
      {OneMessage(R"({"role":"assistant","tool_calls":{}})"),
       "messages[0].tool_calls: expected an array of tool calls, got object"},
      {OneMessage(R"({"role":"assistant","tool_calls":[{"id":"c","type":"function"}]})"),
       "messages[0].tool_calls[0].function: missing; expected an object"},
      {OneMessage(
           R"({"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":{}}}]})"),
       "messages[0].tool_calls[0].function.arguments: expected a string (JSON text), got object"},
      {R"({"model":"m","messages":[],"tools":{}})", "tools: expected an array of tools, got object"},
      {R"({"model":"m","messages":[],"tools":[{"type":"function"}]})",
       "tools[0].function: missing; expected an object"},
      {R"({"model":"m","messages":[],"tools":[{"type":"function","function":{"description":"d"}}]})",
       "tools[0].function.name: missing; expected a string"},
      {R"({"model":"m","messages":[],"stop_sequences":"END"})",
       "stop_sequences: expected an array of strings, got string"},
      {R"({"model":"m","messages":[],"max_tokens":"10"})",
       "max_tokens: expected an integer, got string"},
      {R"({"model":"m","messages":[],"p":"high"})", "p: expected a number, got string"},
      {R"({"model":"m","messages":[],"seed":1.5})", "seed: expected an integer, got number 1.5"},
      {R"({"model":"m","messages":[],"stream":"yes"})", "stream: expected a boolean, got string"},
      {"[]", "body: expected a JSON object, got array"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseRequest(c.body), StatusIs(absl::StatusCode::kInvalidArgument, c.message))
        << c.body;
  }
}

TEST(CohereParseRequestTest, MalformedJsonAndInvalidUtf8AreRefused) {
  EXPECT_THAT(ParseRequest("{\"model\": \"m\",\n \"messages\": [}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("body: invalid JSON at byte 29: syntax error")));
  EXPECT_THAT(ParseRequest(""), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("body: invalid JSON")));
  EXPECT_THAT(ParseRequest("{\"model\":\"m\xff\",\"messages\":[]}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("body: invalid UTF-8")));
  EXPECT_THAT(ParseResponse("{\"id\":\"\xc3\x28\"}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("body: invalid UTF-8")));
}

TEST(CohereParseResponseTest, MapsToolCallsFinishReasonAndUsage) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kToolResponse);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->id(), "5d4f2a1e-7a5b-4b8e-9a51-0c6d2f1e9b3a");
  EXPECT_EQ(r->model(), "");
  EXPECT_EQ(r->message().role(), "assistant");
  EXPECT_EQ(r->message().content(), "");  // the tool plan has no canonical place
  ASSERT_EQ(r->message().tool_calls_size(), 2);
  EXPECT_EQ(r->message().tool_calls(0).id(), "get_weather_p1");
  EXPECT_EQ(r->message().tool_calls(0).name(), "get_weather");
  EXPECT_EQ(r->message().tool_calls(1).arguments(), R"({"city":"Oslo"})");
  EXPECT_EQ(r->finish_reason(), "tool_calls");
  // `tokens`, not `billed_units`.
  EXPECT_EQ(r->usage().input_tokens(), 1012);
  EXPECT_EQ(r->usage().output_tokens(), 75);
}

TEST(CohereParseResponseTest, TextPartsAreTheContentThinkingIsDropped) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kTextResponse);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->message().content(), "Paris: 18C, cloudy. Oslo: 4C, snow.");
  EXPECT_EQ(r->message().tool_calls_size(), 0);
  EXPECT_EQ(r->finish_reason(), "stop");
}

TEST(CohereParseResponseTest, UsageFallsBackToBilledUnits) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(
      R"({"id":"x","message":{"role":"assistant"},"finish_reason":"MAX_TOKENS",
          "usage":{"billed_units":{"input_tokens":3,"output_tokens":4},
                   "tokens":{"output_tokens":9}}})");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->usage().input_tokens(), 3);
  EXPECT_EQ(r->usage().output_tokens(), 9);
  EXPECT_EQ(r->finish_reason(), "length");
}

TEST(CohereParseResponseTest, BadFieldsAreNamedWithTheirPath) {
  struct Case {
    const char* body;
    const char* message;
  };
  const Case cases[] = {
      {R"({"id":"x"})", "message: missing; expected a message object"},
      {R"({"message":[]})", "message: expected a message object, got array"},
      {R"({"id":1,"message":{}})", "id: expected a string, got number"},
      {R"({"message":{"content":5}})",
       "message.content: expected a string or an array of content parts, got number"},
      {R"({"message":{"content":[{"type":"text"}]}})",
       "message.content[0].text: missing; expected a string"},
      {R"({"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":[]}}]}})",
       "message.tool_calls[0].function.arguments: expected a string (JSON text), got array"},
      {R"({"message":{},"finish_reason":1})", "finish_reason: expected a string, got number"},
      {R"({"message":{},"usage":[]})", "usage: expected a usage object, got array"},
      {R"({"message":{},"usage":{"tokens":{"input_tokens":"9"}}})",
       "usage.tokens.input_tokens: expected an integer, got string"},
      {"17", "body: expected a JSON object, got number"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseResponse(c.body), StatusIs(absl::StatusCode::kInvalidArgument, c.message))
        << c.body;
  }
  EXPECT_THAT(ParseResponse("{\"message\":"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("body: invalid JSON")));
}

TEST(CohereParseResponseTest, UnknownAnswerPartsAreDropped) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(
      R"({"message":{"content":[{"type":"audio","audio":"x"},{"type":"text","text":"a"}]}})");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->message().content(), "a");
}

TEST(CohereFinishReasonTest, OneTableBothWays) {
  EXPECT_EQ(FinishReasonFromCohere("COMPLETE"), "stop");
  EXPECT_EQ(FinishReasonFromCohere("STOP_SEQUENCE"), "stop");
  EXPECT_EQ(FinishReasonFromCohere("MAX_TOKENS"), "length");
  EXPECT_EQ(FinishReasonFromCohere("TOOL_CALL"), "tool_calls");
  EXPECT_EQ(FinishReasonFromCohere("ERROR"), "error");
  EXPECT_EQ(FinishReasonFromCohere("TIMEOUT"), "timeout");
  EXPECT_EQ(FinishReasonFromCohere(""), "");
  EXPECT_EQ(FinishReasonFromCohere("Complete"), "stop");
  // What the table made comes back the same through a Cohere client.
  for (const char* reason : {"COMPLETE", "STOP_SEQUENCE", "complete", "tool_calls", "Weird",
                             "ERROR", "stop"}) {
    const std::string canonical = FinishReasonFromCohere(reason);
    EXPECT_EQ(FinishReasonFromCohere(FinishReasonToCohere(canonical, false)), canonical) << reason;
  }
  EXPECT_EQ(FinishReasonToCohere("stop", false), "COMPLETE");
  EXPECT_EQ(FinishReasonToCohere("length", false), "MAX_TOKENS");
  EXPECT_EQ(FinishReasonToCohere("tool_calls", true), "TOOL_CALL");
  EXPECT_EQ(FinishReasonToCohere("error", false), "ERROR");
  EXPECT_EQ(FinishReasonToCohere("content_filter", false), "CONTENT_FILTER");
  EXPECT_EQ(FinishReasonToCohere("", true), "TOOL_CALL");
  EXPECT_EQ(FinishReasonToCohere("", false), "COMPLETE");
}

TEST(CohereStreamDecoderTest, ToolStreamAssemblesToTheWholeAnswer) {
  Chunks chunks = Decode(kToolStream);
  // message-start, per call: start + fragments, message-end.
  ASSERT_EQ(chunks.size(), 7);
  EXPECT_EQ(chunks[0].id(), "29f14a5a-1b2c-4d5e-8f90-a1b2c3d4e5f6");
  EXPECT_EQ(chunks[1].tool_calls(0).index(), 0);
  EXPECT_EQ(chunks[1].tool_calls(0).id(), "get_weather_p1");
  EXPECT_EQ(chunks[1].tool_calls(0).name(), "get_weather");
  EXPECT_EQ(chunks[4].tool_calls(0).index(), 1);

  v1::CompletionResponse streamed = provider::AssembleResponse(chunks);
  absl::StatusOr<v1::CompletionResponse> whole = ParseResponse(kToolResponse);
  ASSERT_THAT(whole, IsOk());
  streamed.set_id(whole->id());
  EXPECT_EQ(streamed.DebugString(), whole->DebugString());
}

TEST(CohereStreamDecoderTest, TextStreamAssembles) {
  Chunks chunks = Decode(kTextStream);
  ASSERT_EQ(chunks.size(), 4);
  v1::CompletionResponse r = provider::AssembleResponse(chunks);
  EXPECT_EQ(r.id(), "a8fc192e-4bb8-4e15-ae1f-a174e8b02ae8");
  EXPECT_EQ(r.message().content(), "Paris: 18C, cloudy.");
  EXPECT_EQ(r.finish_reason(), "stop");
  EXPECT_EQ(r.usage().input_tokens(), 1100);
  EXPECT_EQ(r.usage().output_tokens(), 4);
}

TEST(CohereStreamDecoderTest, StructuralThinkingAndUnknownEventsCarryNothing) {
  StreamDecoder decoder;
  SseEvent e;
  for (const char* data : {
           R"({"type":"content-start","index":0,"delta":{"message":{"content":{"type":"thinking","thinking":""}}}})",
           R"({"type":"content-delta","index":0,"delta":{"message":{"content":{"thinking":"hm"}}}})",
           R"({"type":"content-delta","index":0,"delta":{"message":{"content":{"text":"hm"}}}})",
           R"({"type":"content-end","index":0})",
           R"({"type":"content-start","index":1,"delta":{"message":{"content":{"type":"text","text":""}}}})",
           R"({"type":"content-delta","index":1,"delta":{"message":{"content":{"text":""}}}})",
           R"({"type":"tool-plan-delta","delta":{"message":{"tool_plan":"I will"}}})",
           R"({"type":"citation-start","index":0,"delta":{"message":{"citations":{"start":0}}}})",
           R"({"type":"citation-end","index":0})",
           R"({"type":"debug","prompt":"..."})",
           R"({"type":"some-future-event","x":1})",
       }) {
    e.data = data;
    auto chunk = decoder.Decode(e);
    ASSERT_THAT(chunk, IsOk()) << data;
    EXPECT_FALSE(chunk->has_value()) << data;
  }
  e.data = R"({"type":"content-delta","index":1,"delta":{"message":{"content":{"text":"ok"}}}})";
  auto text = decoder.Decode(e);
  ASSERT_THAT(text, IsOk());
  ASSERT_TRUE(text->has_value());
  EXPECT_EQ((*text)->content(), "ok");
  EXPECT_FALSE(decoder.done());
  e.data = R"({"type":"message-end","delta":{"finish_reason":"COMPLETE"}})";
  ASSERT_THAT(decoder.Decode(e), IsOk());
  EXPECT_TRUE(decoder.done());
  EXPECT_THAT(decoder.Decode(e), StatusIs(absl::StatusCode::kFailedPrecondition,
                                          "data: event after message-end"));
  // A proxy's terminator after the end is no error.
  e.data = "[DONE]";
  EXPECT_THAT(decoder.Decode(e), IsOk());
}

TEST(CohereStreamDecoderTest, TheEventNameTypesDataWithoutOne) {
  StreamDecoder decoder;
  SseEvent e;
  e.event = "content-delta";
  e.data = R"({"index":0,"delta":{"message":{"content":{"text":"hi"}}}})";
  auto chunk = decoder.Decode(e);
  ASSERT_THAT(chunk, IsOk());
  ASSERT_TRUE(chunk->has_value());
  EXPECT_EQ((*chunk)->content(), "hi");
}

TEST(CohereStreamDecoderTest, CallIndexesBecomeOrdinals) {
  StreamDecoder decoder;
  SseEvent e;
  e.data =
      R"({"type":"tool-call-start","index":3,"delta":{"message":{"tool_calls":{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\""}}}}})";
  auto start = decoder.Decode(e);
  ASSERT_THAT(start, IsOk());
  ASSERT_TRUE(start->has_value());
  EXPECT_EQ((*start)->tool_calls(0).index(), 0);
  EXPECT_EQ((*start)->tool_calls(0).arguments(), "{\"a\"");
  e.data =
      R"({"type":"tool-call-delta","index":3,"delta":{"message":{"tool_calls":{"function":{"arguments":":1}"}}}}})";
  auto delta = decoder.Decode(e);
  ASSERT_THAT(delta, IsOk());
  ASSERT_TRUE(delta->has_value());
  EXPECT_EQ((*delta)->tool_calls(0).index(), 0);
  EXPECT_EQ((*delta)->tool_calls(0).arguments(), ":1}");
  EXPECT_EQ((*delta)->tool_calls(0).name(), "");
}

TEST(CohereStreamDecoderTest, MalformedEventsAreNamedUnderData) {
  struct Case {
    const char* data;
    const char* message;
  };
  const Case cases[] = {
      {R"({"type":"tool-call-delta","index":2,"delta":{"message":{"tool_calls":{"function":{"arguments":"x"}}}}})",
       "data.index: tool-call-delta for tool call 2, which was never started"},
      {R"({"type":"tool-call-start","delta":{}})", "data.index: missing; expected an integer"},
      {R"({"type":"content-delta","index":"0"})", "data.index: expected an integer, got string"},
      {R"({"type":"content-delta","index":0,"delta":"x"})",
       "data.delta: expected an object, got string"},
      {R"({"type":"content-delta","index":0,"delta":{"message":[]}})",
       "data.delta.message: expected an object, got array"},
      {R"({"type":"content-delta","index":0,"delta":{"message":{"content":"x"}}})",
       "data.delta.message.content: expected an object, got string"},
      {R"({"type":"content-delta","index":0,"delta":{"message":{"content":{"text":1}}}})",
       "data.delta.message.content.text: expected a string, got number"},
      {R"({"type":"tool-call-start","index":0,"delta":{"message":{"tool_calls":{"id":"c","function":"f"}}}})",
       "data.delta.message.tool_calls.function: expected an object, got string"},
      {R"({"type":"message-start","id":5})", "data.id: expected a string, got number"},
      {R"({"type":"message-end","delta":{"usage":{"tokens":[]}}})",
       "data.delta.usage.tokens: expected a usage object, got array"},
      {R"({"type":7})", "data.type: expected a string, got number"},
      {"[1]", "data: expected an event object, got array"},
  };
  for (const Case& c : cases) {
    StreamDecoder decoder;
    SseEvent e;
    e.data = c.data;
    EXPECT_THAT(decoder.Decode(e), StatusIs(absl::StatusCode::kInvalidArgument, c.message))
        << c.data;
  }
  StreamDecoder decoder;
  SseEvent e;
  e.data = "{\"type\":";
  EXPECT_THAT(decoder.Decode(e),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("data: invalid JSON")));
}

TEST(CohereStreamDecoderTest, AnErrorAtTheEndBecomesAStatus) {
  StreamDecoder decoder;
  SseEvent e;
  e.data = R"({"type":"message-end","delta":{"finish_reason":"ERROR","error":"model crashed"}})";
  EXPECT_THAT(decoder.Decode(e),
              StatusIs(absl::StatusCode::kUnknown, "upstream stream error (ERROR): model crashed"));
  StreamDecoder timed_out;
  e.data = R"({"type":"message-end","delta":{"finish_reason":"TIMEOUT","error":"too slow"}})";
  EXPECT_THAT(timed_out.Decode(e), StatusIs(absl::StatusCode::kDeadlineExceeded,
                                            "upstream stream error (TIMEOUT): too slow"));
}

TEST(CohereRenderTest, ResponseHasTheChatShape) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kToolResponse);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(RenderResponse(*r),
            R"({"id":"5d4f2a1e-7a5b-4b8e-9a51-0c6d2f1e9b3a","message":{"role":"assistant",)"
            R"("tool_calls":[{"id":"get_weather_p1","type":"function","function":)"
            R"({"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},)"
            R"({"id":"get_weather_o2","type":"function","function":)"
            R"({"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},)"
            R"("finish_reason":"TOOL_CALL","usage":{"billed_units":{"input_tokens":1012,)"
            R"("output_tokens":75},"tokens":{"input_tokens":1012,"output_tokens":75}}})");

  v1::CompletionResponse text;
  text.set_id("r1");
  text.mutable_message()->set_content("Hello.");
  EXPECT_EQ(RenderResponse(text),
            R"({"id":"r1","message":{"role":"assistant","content":[{"type":"text",)"
            R"("text":"Hello."}]},"finish_reason":"COMPLETE"})");
  EXPECT_EQ(RenderResponse(v1::CompletionResponse()),
            R"({"id":"","message":{"role":"assistant","content":[]},"finish_reason":"COMPLETE"})");
}

TEST(CohereRenderTest, ResponsesRoundTrip) {
  for (absl::string_view body : {kToolResponse, kTextResponse}) {
    absl::StatusOr<v1::CompletionResponse> r = ParseResponse(body);
    ASSERT_THAT(r, IsOk());
    const std::string rendered = RenderResponse(*r);
    absl::StatusOr<v1::CompletionResponse> back = ParseResponse(rendered);
    ASSERT_THAT(back, IsOk());
    EXPECT_EQ(back->DebugString(), r->DebugString());
    EXPECT_EQ(RenderResponse(*back), rendered);
  }
}

TEST(CohereRenderTest, StreamHasTheChatEventSequence) {
  Chunks chunks;
  v1::CompletionChunk* c = chunks.Add();
  c->set_id("r1");
  c->set_content("Hi");
  v1::ToolCallDelta* d = c->add_tool_calls();
  d->set_index(0);
  d->set_id("c1");
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
          "event: message-start\ndata: {\"id\":\"r1\",\"type\":\"message-start\",\"delta\":"
          "{\"message\":{\"role\":\"assistant\",\"content\":[],\"tool_plan\":\"\","
          "\"tool_calls\":[],\"citations\":[]}}}\n\n",
          "event: content-start\ndata: {\"type\":\"content-start\",\"index\":0,\"delta\":"
          "{\"message\":{\"content\":{\"type\":\"text\",\"text\":\"\"}}}}\n\n",
          "event: content-delta\ndata: {\"type\":\"content-delta\",\"index\":0,\"delta\":"
          "{\"message\":{\"content\":{\"text\":\"Hi\"}}}}\n\n",
          "event: content-end\ndata: {\"type\":\"content-end\",\"index\":0}\n\n",
          "event: tool-call-start\ndata: {\"type\":\"tool-call-start\",\"index\":0,\"delta\":"
          "{\"message\":{\"tool_calls\":{\"id\":\"c1\",\"type\":\"function\",\"function\":"
          "{\"name\":\"f\",\"arguments\":\"\"}}}}}\n\n",
          "event: tool-call-delta\ndata: {\"type\":\"tool-call-delta\",\"index\":0,\"delta\":"
          "{\"message\":{\"tool_calls\":{\"function\":{\"arguments\":\"{\\\"a\\\":1}\"}}}}}\n\n",
          "event: tool-call-end\ndata: {\"type\":\"tool-call-end\",\"index\":0}\n\n",
          "event: message-end\ndata: {\"type\":\"message-end\",\"delta\":{\"finish_reason\":"
          "\"TOOL_CALL\",\"usage\":{\"billed_units\":{\"input_tokens\":5,\"output_tokens\":7},"
          "\"tokens\":{\"input_tokens\":5,\"output_tokens\":7}}}}\n\n"));
}

TEST(CohereRenderTest, ContentEventsArePacedByTheirChunks) {
  Chunks chunks = Decode(kTextStream);
  std::vector<int> paced;
  for (const RenderedEvent& e : RenderAll(*StreamRenderer(chunks))) paced.push_back(e.chunk);
  // message-start, content-start, two deltas (chunks 1 and 2), content-end,
  // message-end (chunk 3).
  EXPECT_THAT(paced, ElementsAre(-1, -1, 1, 2, -1, 3));
}

TEST(CohereRenderTest, RecordedStreamsRoundTrip) {
  for (absl::string_view stream : {kToolStream, kTextStream}) {
    Chunks recorded = Decode(stream);
    const std::string rendered = Join(RenderStream(recorded));
    Chunks replayed = Decode(rendered);
    ASSERT_EQ(replayed.size(), recorded.size());
    for (int i = 0; i < recorded.size(); ++i) {
      EXPECT_EQ(replayed[i].DebugString(), recorded[i].DebugString()) << i;
    }
    EXPECT_EQ(Join(RenderStream(replayed)), rendered);
  }
}

TEST(CohereRenderTest, InterleavedParallelCallsAreRegroupedPerCall) {
  Chunks openai = fixtures::DecodeOpenAiStream(fixtures::kOpenAiParallelStream);
  const std::string rendered = Join(RenderStream(openai));
  Chunks cohere = Decode(rendered);
  v1::CompletionResponse expected = provider::AssembleResponse(openai);
  expected.clear_model();  // a Cohere stream names no model
  EXPECT_EQ(provider::AssembleResponse(cohere).DebugString(), expected.DebugString());
}

TEST(CohereRenderTest, AStreamCarriesTheDoneMarkerInTextSafely) {
  Chunks chunks;
  chunks.Add()->set_content("All [DONE] here.");
  const std::vector<std::string> events = RenderStream(chunks);
  for (const std::string& e : events) {
    // The SDK stops at a data line that contains the marker.
    EXPECT_FALSE(absl::StrContains(e, "[DONE]")) << e;
  }
  EXPECT_EQ(provider::AssembleResponse(Decode(Join(events))).message().content(),
            "All [DONE] here.");
}

TEST(CohereRenderTest, AnEmptyStreamStillStartsAndEnds) {
  EXPECT_THAT(
      RenderStream(Chunks()),
      ElementsAre(HasSubstr("message-start"),
                  "event: message-end\ndata: {\"type\":\"message-end\",\"delta\":"
                  "{\"finish_reason\":\"COMPLETE\"}}\n\n"));
}

TEST(CohereErrorTest, ErrorBodyHasCoheresShape) {
  const std::string body = ErrorBody(absl::NotFoundError("no recording matches"));
  absl::StatusOr<Json> parsed = ParseJson(body, "body");
  ASSERT_THAT(parsed, IsOk());
  ASSERT_EQ(parsed->size(), 2u);
  const std::string id = (*parsed)["id"].get<std::string>();
  EXPECT_EQ(id.size(), 36u);
  EXPECT_EQ(id[8], '-');
  EXPECT_EQ(id[23], '-');
  EXPECT_EQ((*parsed)["message"], "no recording matches");
  EXPECT_EQ(ErrorBody(absl::NotFoundError("no recording matches")), body);
  EXPECT_NE(ErrorBody(absl::NotFoundError("another")), body);
  EXPECT_EQ(ErrorMessage(body), "no recording matches");
  EXPECT_EQ(ErrorMessage(R"({"message":5})"), "");
  EXPECT_EQ(ErrorMessage("not json"), "");
}

TEST(CohereCodecTest, IsRegisteredUnderItsRouteWithThePythonClientsBaseUrl) {
  const Codec* codec = CodecRegistry::Builtin().Find("cohere");
  ASSERT_NE(codec, nullptr);
  EXPECT_EQ(codec->upstream(), "cohere");
  EXPECT_THAT(codec->routes(), ElementsAre("POST /v2/chat"));
  EXPECT_TRUE(codec->Serves("/v2/chat"));
  EXPECT_FALSE(codec->Serves("/v1/chat"));
  EXPECT_EQ(CodecRegistry::Builtin().ForPath("/v2/chat"), codec);
  EXPECT_EQ(codec->BaseUrlVariable().first, "CO_API_URL");
  EXPECT_EQ(codec->BaseUrlVariable().second, "");
  EXPECT_THAT(codec->IgnoredRequestFields(), ElementsAre("stream", "priority"));
  EXPECT_TRUE(codec->ReplaysHeader("x-ratelimit-reset"));
  EXPECT_EQ(codec->client_header(), "");
}

TEST(CohereCodecTest, ReadsRendersAndShapesErrors) {
  const Codec& codec = *CodecRegistry::Builtin().Find("cohere");
  absl::StatusOr<CallRoute> call = codec.Route("POST", "/v2/chat", "");
  ASSERT_THAT(call, IsOk());
  absl::StatusOr<ParsedRequest> parsed = codec.ParseRequest(*call, kRequest);
  ASSERT_THAT(parsed, IsOk());
  EXPECT_EQ(parsed->canonical.model(), "command-a-03-2025");

  absl::StatusOr<v1::CompletionResponse> r = codec.ParseResponse(kTextResponse);
  ASSERT_THAT(r, IsOk());
  RenderContext context;
  absl::StatusOr<std::string> body = codec.RenderBody(*r, context);
  ASSERT_THAT(body, IsOk());
  EXPECT_EQ(*body, RenderResponse(*r));

  Chunks chunks = Decode(kToolStream);
  absl::StatusOr<std::unique_ptr<EventRenderer>> renderer = codec.StreamRenderer(chunks, context);
  ASSERT_THAT(renderer, IsOk());
  EXPECT_EQ(RenderAllText(**renderer), RenderStream(chunks));
  std::unique_ptr<ChunkDecoder> decoder = codec.NewDecoder();
  SseEvent e;
  e.data = R"({"type":"message-end","delta":{"finish_reason":"COMPLETE"}})";
  ASSERT_THAT(decoder->Decode(e), IsOk());
  EXPECT_TRUE(decoder->done());

  EXPECT_THAT(codec.ErrorBody(absl::InvalidArgumentError("messages: missing"), "invalid_request"),
              HasSubstr(R"("message":"messages: missing")"));
  EXPECT_EQ(codec.UpstreamErrorMessage(R"({"id":"abc","message":"invalid api token"})"),
            "invalid api token");
  EXPECT_EQ(codec.UpstreamErrorMessage(R"({"error":{"message":"from a proxy"}})"), "from a proxy");
  EXPECT_EQ(codec.UpstreamErrorMessage("<html>"), "");
}

}  // namespace
}  // namespace cohere
}  // namespace provider
}  // namespace understudy
