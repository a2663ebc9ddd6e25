#include "provider/responses.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "provider/canonical.h"
#include "provider/chunks.h"
#include "provider/json_util.h"
#include "provider/sse.h"

namespace understudy {
namespace provider {
namespace responses {
namespace {

using Chunks = google::protobuf::RepeatedPtrField<v1::CompletionChunk>;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// An agent's second turn as the openai-python SDK sends it: the output
// items of the first response are sent back as input, with the results of
// the two calls the model made in parallel.
constexpr absl::string_view kRequest = R"({
  "model": "gpt-5-2025-08-07",
  "instructions": "You are the executor. Use tools.",
  "input": [
    {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris and Oslo?"}]},
    {"id": "rs_01", "type": "reasoning", "summary": [], "encrypted_content": "gAAAA"},
    {"id": "msg_01", "type": "message", "status": "completed", "role": "assistant",
     "content": [{"type": "output_text", "annotations": [], "logprobs": [],
                  "text": "I'll check both cities."}]},
    {"id": "fc_01", "type": "function_call", "status": "completed",
     "arguments": "{\"city\":\"Paris\"}", "call_id": "call_paris", "name": "get_weather"},
    {"id": "fc_02", "type": "function_call", "status": "completed",
     "arguments": "{\"city\":\"Oslo\"}", "call_id": "call_oslo", "name": "get_weather"},
    {"type": "function_call_output", "call_id": "call_paris", "output": "18C, cloudy"},
    {"type": "function_call_output", "call_id": "call_oslo",
     "output": [{"type": "input_text", "text": "4C, snow"}]}
  ],
  "tools": [{"type": "function", "name": "get_weather",
             "description": "Current weather for a city.",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}],
  "tool_choice": "auto",
  "parallel_tool_calls": true,
  "reasoning": {"effort": "medium"},
  "include": ["reasoning.encrypted_content"],
  "max_output_tokens": 2048,
  "temperature": 1,
  "store": false,
  "stream": true,
  "metadata": {"trace": "abc"},
  "user": "user-1234"
})";

// What the API answered to kRequest's first turn (ids shortened).
constexpr absl::string_view kResponse = R"({
  "id": "resp_68a1", "object": "response", "created_at": 1755000000, "status": "completed",
  "background": false, "error": null, "incomplete_details": null,
  "instructions": "You are the executor. Use tools.", "max_output_tokens": 2048,
  "model": "gpt-5-2025-08-07",
  "output": [
    {"id": "rs_01", "type": "reasoning", "summary": []},
    {"id": "msg_01", "type": "message", "status": "completed",
     "content": [{"type": "output_text", "annotations": [], "logprobs": [],
                  "text": "I'll check both cities."}], "role": "assistant"},
    {"id": "fc_01", "type": "function_call", "status": "completed",
     "arguments": "{\"city\":\"Paris\"}", "call_id": "call_paris", "name": "get_weather"},
    {"id": "fc_02", "type": "function_call", "status": "completed",
     "arguments": "{\"city\":\"Oslo\"}", "call_id": "call_oslo", "name": "get_weather"}
  ],
  "parallel_tool_calls": true, "previous_response_id": null,
  "reasoning": {"effort": "medium", "summary": null}, "store": false, "temperature": 1.0,
  "text": {"format": {"type": "text"}, "verbosity": "medium"}, "tool_choice": "auto",
  "tools": [], "top_p": 1.0, "truncation": "disabled",
  "usage": {"input_tokens": 82, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 140, "output_tokens_details": {"reasoning_tokens": 64},
            "total_tokens": 222},
  "user": null, "metadata": {}
})";

// kResponse streamed, as the API sends it: a reasoning item, a text
// message in two deltas, then two function calls in parallel, each with
// its argument fragments. The final response.completed event is added by
// CapturedStream().
constexpr absl::string_view kStreamStart = R"sse(event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_68a1","object":"response","created_at":1755000000,"status":"in_progress","background":false,"error":null,"incomplete_details":null,"instructions":"You are the executor. Use tools.","max_output_tokens":2048,"model":"gpt-5-2025-08-07","output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":"medium","summary":null},"store":false,"temperature":1.0,"text":{"format":{"type":"text"},"verbosity":"medium"},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":null,"user":null,"metadata":{}}}

event: response.in_progress
data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_68a1","object":"response","created_at":1755000000,"status":"in_progress","background":false,"error":null,"incomplete_details":null,"instructions":"You are the executor. Use tools.","max_output_tokens":2048,"model":"gpt-5-2025-08-07","output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":"medium","summary":null},"store":false,"temperature":1.0,"text":{"format":{"type":"text"},"verbosity":"medium"},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":null,"user":null,"metadata":{}}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_01","type":"reasoning","summary":[]}}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"rs_01","type":"reasoning","summary":[]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":{"id":"msg_01","type":"message","status":"in_progress","content":[],"role":"assistant"}}

event: response.content_part.added
data: {"type":"response.content_part.added","sequence_number":5,"item_id":"msg_01","output_index":1,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":6,"item_id":"msg_01","output_index":1,"content_index":0,"delta":"I'll check","logprobs":[],"obfuscation":"Zq4"}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":7,"item_id":"msg_01","output_index":1,"content_index":0,"delta":" both cities.","logprobs":[],"obfuscation":"k"}

event: response.output_text.done
data: {"type":"response.output_text.done","sequence_number":8,"item_id":"msg_01","output_index":1,"content_index":0,"text":"I'll check both cities.","logprobs":[]}

event: response.content_part.done
data: {"type":"response.content_part.done","sequence_number":9,"item_id":"msg_01","output_index":1,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":"I'll check both cities."}}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":10,"output_index":1,"item":{"id":"msg_01","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"I'll check both cities."}],"role":"assistant"}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":11,"output_index":2,"item":{"id":"fc_01","type":"function_call","status":"in_progress","arguments":"","call_id":"call_paris","name":"get_weather"}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":12,"item_id":"fc_01","output_index":2,"delta":"{\"city\":","obfuscation":"P"}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":13,"item_id":"fc_01","output_index":2,"delta":"\"Paris\"}","obfuscation":"Ue"}

event: response.function_call_arguments.done
data: {"type":"response.function_call_arguments.done","sequence_number":14,"item_id":"fc_01","output_index":2,"arguments":"{\"city\":\"Paris\"}"}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":15,"output_index":2,"item":{"id":"fc_01","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"call_paris","name":"get_weather"}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":16,"output_index":3,"item":{"id":"fc_02","type":"function_call","status":"in_progress","arguments":"","call_id":"call_oslo","name":"get_weather"}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":17,"item_id":"fc_02","output_index":3,"delta":"{\"city\":\"Os","obfuscation":"m"}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":18,"item_id":"fc_02","output_index":3,"delta":"lo\"}","obfuscation":"Qa"}

event: response.function_call_arguments.done
data: {"type":"response.function_call_arguments.done","sequence_number":19,"item_id":"fc_02","output_index":3,"arguments":"{\"city\":\"Oslo\"}"}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":20,"output_index":3,"item":{"id":"fc_02","type":"function_call","status":"completed","arguments":"{\"city\":\"Oslo\"}","call_id":"call_oslo","name":"get_weather"}}

)sse";

std::string CapturedStream() {
  return absl::StrCat(kStreamStart,
                      "event: response.completed\n"
                      "data: {\"type\":\"response.completed\",\"sequence_number\":21,\"response\":",
                      DumpJson(Json::parse(kResponse)), "}\n\n");
}

// The chunks of a whole stream; fails the test on any error.
Chunks Decode(absl::string_view stream) {
  Chunks chunks;
  absl::StatusOr<std::vector<SseEvent>> events = ParseSse(stream);
  EXPECT_THAT(events, IsOk());
  if (!events.ok()) return chunks;
  StreamDecoder decoder;
  for (const SseEvent& e : *events) {
    absl::StatusOr<std::optional<v1::CompletionChunk>> chunk = decoder.Decode(e);
    EXPECT_THAT(chunk, IsOk()) << e.raw;
    if (chunk.ok() && chunk->has_value()) *chunks.Add() = **chunk;
  }
  EXPECT_TRUE(decoder.done());
  return chunks;
}

SseEvent Event(absl::string_view data, absl::string_view name = "") {
  SseEvent e;
  e.event = std::string(name);
  e.data = std::string(data);
  return e;
}

ParsedRequest Parse(absl::string_view body) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(body);
  EXPECT_THAT(parsed, IsOk());
  return parsed.ok() ? *std::move(parsed) : ParsedRequest();
}

// The canonical text of a body that must parse.
std::string Canonical(absl::string_view body) {
  return provider::CanonicalText(Parse(body).canonical);
}

std::string Messages(absl::string_view input) {
  return absl::StrCat(R"({"model":"m","input":)", input, "}");
}

// --- ParseRequest ---

TEST(ResponsesParseRequest, StringInputIsOneUserMessage) {
  const ParsedRequest parsed = Parse(R"({"model":"gpt-4.1","input":"Hello"})");
  EXPECT_EQ(provider::CanonicalText(parsed.canonical),
            R"({"messages":[{"content":"Hello","role":"user"}],"model":"gpt-4.1"})");
  EXPECT_FALSE(parsed.stream);
  EXPECT_FALSE(parsed.include_usage);
  EXPECT_EQ(parsed.previous_response_id, "");
}

TEST(ResponsesParseRequest, MapsAnAgentTurnWithOutputItemsSentBack) {
  const ParsedRequest parsed = Parse(kRequest);
  EXPECT_TRUE(parsed.stream);
  EXPECT_TRUE(parsed.include_usage);
  const v1::CompletionRequest& r = parsed.canonical;
  EXPECT_EQ(r.model(), "gpt-5-2025-08-07");
  ASSERT_EQ(r.messages_size(), 8);
  EXPECT_EQ(r.messages(0).role(), "system");
  EXPECT_EQ(r.messages(0).content(), "You are the executor. Use tools.");
  EXPECT_EQ(r.messages(1).role(), "user");
  EXPECT_EQ(r.messages(1).content(), "Weather in Paris and Oslo?");
  EXPECT_EQ(r.messages(1).extra(), "");
  EXPECT_EQ(r.messages(2).role(), "assistant");
  EXPECT_EQ(r.messages(2).content(), "");
  EXPECT_EQ(
      r.messages(2).extra(),
      R"({"item":{"id":"rs_01","type":"reasoning","summary":[],"encrypted_content":"gAAAA"}})");
  EXPECT_EQ(r.messages(3).role(), "assistant");
  EXPECT_EQ(r.messages(3).content(), "I'll check both cities.");
  EXPECT_EQ(r.messages(3).extra(), R"({"id":"msg_01","status":"completed"})");
  for (int i : {4, 5}) {
    EXPECT_EQ(r.messages(i).role(), "assistant");
    EXPECT_EQ(r.messages(i).content(), "");
    ASSERT_EQ(r.messages(i).tool_calls_size(), 1);
    EXPECT_EQ(r.messages(i).tool_calls(0).name(), "get_weather");
  }
  EXPECT_EQ(r.messages(4).tool_calls(0).id(), "call_paris");
  EXPECT_EQ(r.messages(4).tool_calls(0).arguments(), R"({"city":"Paris"})");
  EXPECT_EQ(r.messages(4).extra(), R"({"type":"function_call","id":"fc_01","status":"completed"})");
  EXPECT_EQ(r.messages(5).tool_calls(0).id(), "call_oslo");
  EXPECT_EQ(r.messages(6).role(), "tool");
  EXPECT_EQ(r.messages(6).tool_call_id(), "call_paris");
  EXPECT_EQ(r.messages(6).content(), "18C, cloudy");
  EXPECT_EQ(r.messages(6).extra(), "");
  EXPECT_EQ(r.messages(7).tool_call_id(), "call_oslo");
  EXPECT_EQ(r.messages(7).content(), "4C, snow");  // a text-only output collapses
  EXPECT_EQ(r.messages(7).extra(), "");
  ASSERT_EQ(r.tools_size(), 1);
  EXPECT_EQ(r.tools(0).name(), "get_weather");
  EXPECT_EQ(r.tools(0).description(), "Current weather for a city.");
  EXPECT_EQ(r.tools(0).parameters(),
            R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");
  EXPECT_EQ(r.params().max_tokens(), 2048);
  EXPECT_EQ(r.params().temperature(), 1.0);
  EXPECT_FALSE(r.params().has_top_p());
  // Ignored fields (store, stream, metadata, user) are not in extra.
  EXPECT_EQ(r.extra(),
            R"({"tool_choice":"auto","parallel_tool_calls":true,"reasoning":{"effort":"medium"},)"
            R"("include":["reasoning.encrypted_content"]})");
}

TEST(ResponsesParseRequest, PassesEveryOtherItemTypeThroughWhole) {
  const struct {
    const char* item;
    const char* role;
  } kCases[] = {
      {R"({"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"oslo"}})",
       "assistant"},
      {R"({"type":"file_search_call","id":"fs_1","queries":["q"],"status":"completed"})",
       "assistant"},
      {R"({"type":"computer_call","id":"cu_1","call_id":"c1","action":{"type":"click","x":1,"y":2},"pending_safety_checks":[],"status":"completed"})",
       "assistant"},
      {R"({"type":"computer_call_output","call_id":"c1","output":{"type":"computer_screenshot","image_url":"data:image/png;base64,AA"}})",
       "tool"},
      {R"({"type":"image_generation_call","id":"ig_1","result":"AA","status":"completed"})",
       "assistant"},
      {R"({"type":"code_interpreter_call","id":"ci_1","code":"1+1","container_id":"c","outputs":[],"status":"completed"})",
       "assistant"},
      {R"({"type":"local_shell_call","id":"ls_1","call_id":"l1","action":{"type":"exec","command":["ls"],"env":{}},"status":"completed"})",
       "assistant"},
      {R"({"type":"local_shell_call_output","id":"lso_1","output":"a.txt"})", "tool"},
      {R"({"type":"shell_call","call_id":"s1","action":{"commands":["ls"]}})", "assistant"},
      {R"({"type":"shell_call_output","call_id":"s1","output":[]})", "tool"},
      {R"({"type":"apply_patch_call","call_id":"p1","operation":{"type":"delete_file","path":"a"},"status":"completed"})",
       "assistant"},
      {R"({"type":"apply_patch_call_output","call_id":"p1","status":"completed"})", "tool"},
      {R"({"type":"mcp_list_tools","id":"ml_1","server_label":"s","tools":[]})", "assistant"},
      {R"({"type":"mcp_approval_request","id":"mr_1","arguments":"{}","name":"t","server_label":"s"})",
       "assistant"},
      {R"({"type":"mcp_approval_response","approval_request_id":"mr_1","approve":true})", "user"},
      {R"({"type":"mcp_call","id":"mc_1","arguments":"{}","name":"t","server_label":"s"})",
       "assistant"},
      {R"({"type":"custom_tool_call","call_id":"ct1","input":"x","name":"grammar"})", "assistant"},
      {R"({"type":"custom_tool_call_output","call_id":"ct1","output":"ok"})", "tool"},
      {R"({"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}]})",
       "assistant"},
      {R"({"type":"item_reference","id":"msg_9"})", "user"},
      {R"({"id":"msg_9"})", "user"},  // an item_reference without its optional type
      {R"({"type":"compaction","id":"cp_1","encrypted_content":"x"})", "assistant"},
      {R"({"type":"compaction_trigger"})", "user"},
      {R"({"type":"tool_search_call","arguments":{}})", "assistant"},
      {R"({"type":"tool_search_output","tools":[]})", "tool"},
      {R"({"type":"additional_tools","role":"developer","tools":[]})", "system"},
      {R"({"type":"program","id":"p","call_id":"p1","code":"x","fingerprint":"f"})", "assistant"},
      {R"({"type":"program_output","id":"po","call_id":"p1","result":"r","status":"completed"})",
       "tool"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.item);
    const ParsedRequest parsed = Parse(Messages(absl::StrCat("[", c.item, "]")));
    ASSERT_EQ(parsed.canonical.messages_size(), 1);
    const v1::Message& m = parsed.canonical.messages(0);
    EXPECT_EQ(m.role(), c.role);
    EXPECT_EQ(m.content(), "");
    EXPECT_EQ(m.tool_calls_size(), 0);
    EXPECT_EQ(m.extra(), absl::StrCat(R"({"item":)", c.item, "}"));
  }
}

TEST(ResponsesParseRequest, NotesEachItemReferenceWithItsMessage) {
  const ParsedRequest parsed = Parse(R"({"model":"m","instructions":"Be brief.","input":[
      {"role":"user","content":"Hi"},
      {"type":"item_reference","id":"msg_1"},
      {"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
      {"id":"rs_2"},
      {"type":"item_reference","id":7},
      {"type":"function_call_output","call_id":"c1","output":"ok"}]})");
  ASSERT_EQ(parsed.canonical.messages_size(), 7);
  ASSERT_EQ(parsed.item_references.size(), 2u) << "an id that is not a string names nothing";
  EXPECT_EQ(parsed.item_references[0].message, 2);
  EXPECT_EQ(parsed.item_references[0].id, "msg_1");
  EXPECT_EQ(parsed.item_references[1].message, 4);
  EXPECT_EQ(parsed.item_references[1].id, "rs_2");
  // Until the service puts the item in its place, a reference is matched as sent.
  EXPECT_EQ(parsed.canonical.messages(2).extra(),
            R"({"item":{"type":"item_reference","id":"msg_1"}})");
  EXPECT_TRUE(Parse(Messages(R"([{"role":"user","content":"Hi"}])")).item_references.empty());
}

TEST(ResponsesOutputItems, EachItemReadsAsItWouldSentBack) {
  const std::vector<std::pair<std::string, v1::Message>> items = OutputItems(kResponse);
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0].first, "rs_01");
  EXPECT_EQ(items[1].first, "msg_01");
  EXPECT_EQ(items[2].first, "fc_01");
  EXPECT_EQ(items[3].first, "fc_02");
  // kRequest sends these very items back (the reasoning with its encrypted
  // content too): by reference they read the same.
  const ParsedRequest sent = Parse(kRequest);
  for (int i : {1, 2, 3}) {
    EXPECT_EQ(items[i].second.ShortDebugString(), sent.canonical.messages(i + 2).ShortDebugString())
        << items[i].first;
  }
  EXPECT_EQ(items[1].second.role(), "assistant");
  EXPECT_EQ(items[1].second.content(), "I'll check both cities.");
  EXPECT_EQ(items[0].second.role(), "assistant");
  EXPECT_EQ(items[0].second.extra(), R"({"item":{"id":"rs_01","type":"reasoning","summary":[]}})");
}

TEST(ResponsesOutputItems, WhatIsNoResponseHoldsNoItems) {
  EXPECT_TRUE(OutputItems("").empty());
  EXPECT_TRUE(OutputItems("not json").empty());
  EXPECT_TRUE(OutputItems(R"({"id":"resp_1"})").empty());
  EXPECT_TRUE(OutputItems(R"({"output":{"id":"x"}})").empty());
  // Items without an id, or that are no input items, are left out.
  const auto items = OutputItems(
      R"({"output":[{"type":"message","role":"assistant","content":"a"},)"
      R"({"id":"x_1","type":"bogus"},{"id":"msg_2","type":"message","role":"assistant","content":"b"}]})");
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].first, "msg_2");
  EXPECT_EQ(items[0].second.content(), "b");
}

TEST(ResponsesParseRequest, InstructionsComeFirstAsTheSystemPrompt) {
  const ParsedRequest parsed = Parse(R"({"model":"m","input":"Hi","instructions":"Be brief."})");
  EXPECT_EQ(provider::CanonicalText(parsed.canonical),
            R"({"messages":[{"content":"Be brief.","role":"system"},)"
            R"({"content":"Hi","role":"user"}],"model":"m"})");

  // An array of prompt items stays in extra.
  const ParsedRequest items = Parse(
      R"({"model":"m","input":"Hi","instructions":[{"role":"developer","content":"Be brief."}]})");
  ASSERT_EQ(items.canonical.messages_size(), 1);
  EXPECT_EQ(items.canonical.extra(),
            R"({"instructions":[{"role":"developer","content":"Be brief."}]})");
}

TEST(ResponsesParseRequest, DeveloperIsTheSystemRoleMarkedInExtra) {
  const ParsedRequest parsed =
      Parse(Messages(R"([{"type":"message","role":"developer","content":"Rules."}])"));
  ASSERT_EQ(parsed.canonical.messages_size(), 1);
  EXPECT_EQ(parsed.canonical.messages(0).role(), "system");
  EXPECT_EQ(parsed.canonical.messages(0).content(), "Rules.");
  EXPECT_EQ(parsed.canonical.messages(0).extra(), R"({"role":"developer"})");
}

TEST(ResponsesParseRequest, TypeMessageIsImpliedByRole) {
  EXPECT_EQ(Canonical(Messages(R"([{"type":"message","role":"user","content":"Hi"}])")),
            Canonical(Messages(R"([{"role":"user","content":"Hi"}])")));
  EXPECT_EQ(Canonical(Messages(R"([{"role":"user","content":"Hi"}])")),
            Canonical(Messages(R"("Hi")")));
}

TEST(ResponsesParseRequest, ImagesKeepTheWholeContentArrayInExtra) {
  const std::string content =
      R"([{"type":"input_text","text":"What is this?"},)"
      R"({"type":"input_image","image_url":"data:image/png;base64,iVBO","detail":"auto"},)"
      R"({"type":"input_file","file_id":"file-1"}])";
  const ParsedRequest parsed =
      Parse(Messages(absl::StrCat(R"([{"role":"user","content":)", content, "}]")));
  ASSERT_EQ(parsed.canonical.messages_size(), 1);
  EXPECT_EQ(parsed.canonical.messages(0).content(), "What is this?");
  EXPECT_EQ(parsed.canonical.messages(0).extra(), absl::StrCat(R"({"content":)", content, "}"));
}

TEST(ResponsesParseRequest, TextPartsWithAnnotationsOrRefusalsKeepTheArray) {
  const std::string annotated =
      R"([{"type":"output_text","text":"See [1].","annotations":[{"type":"url_citation",)"
      R"("start_index":4,"end_index":7,"url":"https://x.test","title":"x"}]}])";
  const ParsedRequest a =
      Parse(Messages(absl::StrCat(R"([{"role":"assistant","content":)", annotated, "}]")));
  EXPECT_EQ(a.canonical.messages(0).content(), "See [1].");
  EXPECT_EQ(a.canonical.messages(0).extra(), absl::StrCat(R"({"content":)", annotated, "}"));

  const std::string refusal = R"([{"type":"refusal","refusal":"I can't."}])";
  const ParsedRequest r =
      Parse(Messages(absl::StrCat(R"([{"role":"assistant","content":)", refusal, "}]")));
  EXPECT_EQ(r.canonical.messages(0).content(), "");
  EXPECT_EQ(r.canonical.messages(0).extra(), absl::StrCat(R"({"content":)", refusal, "}"));

  // Empty annotations and logprobs say nothing: the parts collapse.
  EXPECT_EQ(Canonical(Messages(R"([{"role":"assistant","content":[{"type":"output_text",)"
                               R"("text":"a","annotations":[],"logprobs":[]},)"
                               R"({"type":"output_text","text":"b"}]}])")),
            Canonical(Messages(R"([{"role":"assistant","content":"ab"}])")));
}

TEST(ResponsesParseRequest, FunctionCallOutputWithAnImageKeepsTheArray) {
  const std::string output =
      R"([{"type":"input_text","text":"chart:"},{"type":"input_image","image_url":"https://x.test/c.png"}])";
  const ParsedRequest parsed = Parse(Messages(absl::StrCat(
      R"([{"type":"function_call_output","call_id":"c1","id":"fco_1","status":"completed","output":)",
      output, "}]")));
  const v1::Message& m = parsed.canonical.messages(0);
  EXPECT_EQ(m.role(), "tool");
  EXPECT_EQ(m.tool_call_id(), "c1");
  EXPECT_EQ(m.content(), "chart:");
  EXPECT_EQ(m.extra(),
            absl::StrCat(R"({"output":)", output, R"(,"id":"fco_1","status":"completed"})"));
}

TEST(ResponsesParseRequest, PlainFunctionToolsMapExactly) {
  const ParsedRequest parsed =
      Parse(R"({"model":"m","input":"x","tools":[{"type":"function","name":"f","description":null,)"
            R"("parameters":{"type":"object","properties":{}}}]})");
  ASSERT_EQ(parsed.canonical.tools_size(), 1);
  EXPECT_EQ(parsed.canonical.tools(0).name(), "f");
  EXPECT_EQ(parsed.canonical.tools(0).parameters(), R"({"type":"object","properties":{}})");
  EXPECT_EQ(parsed.canonical.extra(), "");
}

TEST(ResponsesParseRequest, HostedToolsAndStrictKeepTheToolsInExtra) {
  const std::string tools = R"([{"type":"function","name":"f","parameters":{"type":"object"}},)"
                            R"({"type":"web_search","search_context_size":"low"}])";
  const ParsedRequest hosted =
      Parse(absl::StrCat(R"({"model":"m","input":"x","tools":)", tools, "}"));
  ASSERT_EQ(hosted.canonical.tools_size(), 1);
  EXPECT_EQ(hosted.canonical.tools(0).name(), "f");
  EXPECT_EQ(hosted.canonical.extra(), absl::StrCat(R"({"tools":)", tools, "}"));

  const std::string strict = R"([{"type":"function","name":"f","parameters":{},"strict":true}])";
  const ParsedRequest s = Parse(absl::StrCat(R"({"model":"m","input":"x","tools":)", strict, "}"));
  ASSERT_EQ(s.canonical.tools_size(), 1);
  EXPECT_EQ(s.canonical.extra(), absl::StrCat(R"({"tools":)", strict, "}"));
}

TEST(ResponsesParseRequest, StructuredOutputFormatAndOtherFieldsGoToExtra) {
  const ParsedRequest parsed =
      Parse(R"({"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"w",)"
            R"("schema":{"type":"object"},"strict":true}},"truncation":"auto","top_logprobs":2,)"
            R"("max_tool_calls":3,"prompt":{"id":"pmpt_1"},"top_p":0.5,"conversation":null})");
  EXPECT_EQ(parsed.canonical.params().top_p(), 0.5);
  EXPECT_EQ(parsed.canonical.extra(),
            R"({"text":{"format":{"type":"json_schema","name":"w","schema":{"type":"object"},)"
            R"("strict":true}},"truncation":"auto","top_logprobs":2,"max_tool_calls":3,)"
            R"("prompt":{"id":"pmpt_1"}})");
}

TEST(ResponsesParseRequest, IgnoredFieldsAreLeftOutAndPreviousResponseIdMovedOut) {
  const std::string with_all = Canonical(
      R"({"model":"m","input":"x","stream":true,"stream_options":{"include_obfuscation":false},)"
      R"("user":"u","metadata":{"a":"b"},"store":true,"service_tier":"flex",)"
      R"("prompt_cache_key":"k","safety_identifier":"s","background":false,)"
      R"("previous_response_id":"resp_1"})");
  EXPECT_EQ(with_all, Canonical(R"({"model":"m","input":"x"})"));
  EXPECT_THAT(with_all, Not(HasSubstr("extra")));
  EXPECT_EQ(
      Parse(R"({"model":"m","input":"x","previous_response_id":"resp_68a1"})").previous_response_id,
      "resp_68a1");
}

TEST(ResponsesParseRequest, ExtraDoesNotDependOnKeyOrder) {
  EXPECT_EQ(Canonical(R"({"model":"m","input":"x","reasoning":{"effort":"low","summary":"auto"},)"
                      R"("tool_choice":"required"})"),
            Canonical(R"({"tool_choice":"required","reasoning":{"summary":"auto","effort":"low"},)"
                      R"("input":"x","model":"m"})"));
}

TEST(ResponsesParseRequest, UnknownItemTypeNamesTheKnownOnes) {
  EXPECT_THAT(ParseRequest(Messages(R"(["a",{"role":"user","content":"b"},{"type":"bogus"}])")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "input[0]: expected an input item object, got string"));
  EXPECT_THAT(
      ParseRequest(Messages(R"([{"role":"user","content":"a"},{"role":"user","content":"b"},)"
                            R"({"type":"bogus"}])")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "input[2].type: unknown item type \"bogus\"; expected one of message, "
               "function_call, function_call_output, file_search_call, computer_call, "
               "computer_call_output, web_search_call, tool_search_call, tool_search_output, "
               "additional_tools, reasoning, compaction, image_generation_call, "
               "code_interpreter_call, local_shell_call, local_shell_call_output, shell_call, "
               "shell_call_output, apply_patch_call, apply_patch_call_output, mcp_list_tools, "
               "mcp_approval_request, mcp_approval_response, mcp_call, custom_tool_call_output, "
               "custom_tool_call, compaction_trigger, item_reference, program, program_output"));
}

TEST(ResponsesParseRequest, WrongTypesNameThePath) {
  const struct {
    std::string body;
    std::string message;
  } kCases[] = {
      {R"({"input":"x"})", "model: missing; expected a string"},
      {R"({"model":7,"input":"x"})", "model: expected a string, got number"},
      {R"({"model":"m","input":7})",
       "input: expected a string or an array of input items, got number"},
      {R"({"model":"m","instructions":{}})",
       "instructions: expected a string or an array of input items, got object"},
      {Messages(R"([{"content":"x"}])"), "input[0].type: missing; expected a string"},
      {Messages(R"([{"type":7}])"), "input[0].type: expected a string, got number"},
      {Messages(R"([{"role":"bot","content":"x"}])"),
       "input[0].role: unknown role \"bot\"; expected one of user, assistant, system, developer"},
      {Messages(R"([{"role":"user","content":5}])"),
       "input[0].content: expected a string or an array of content parts, got number"},
      {Messages(R"([{"role":"user","content":[1]}])"),
       "input[0].content[0]: expected a content part object, got number"},
      {Messages(R"([{"role":"user","content":[{"text":"x"}]}])"),
       "input[0].content[0].type: missing; expected a string"},
      {Messages(R"([{"role":"user","content":[{"type":"input_text","text":3}]}])"),
       "input[0].content[0].text: expected a string, got number"},
      {Messages(R"([{"type":"function_call","name":"f","arguments":"{}"}])"),
       "input[0].call_id: missing; expected a string"},
      {Messages(R"([{"type":"function_call","call_id":"c","name":"f","arguments":{}}])"),
       "input[0].arguments: expected a string, got object"},
      {Messages(R"([{"type":"function_call_output","call_id":"c"}])"),
       "input[0].output: missing; expected a string or an array of content parts"},
      {Messages(R"([{"type":"function_call_output","call_id":"c","output":true}])"),
       "input[0].output: expected a string or an array of content parts, got boolean"},
      {R"({"model":"m","tools":{}})", "tools: expected an array of tools, got object"},
      {R"({"model":"m","tools":[{"name":"f"}]})", "tools[0].type: missing; expected a string"},
      {R"({"model":"m","tools":[{"type":"function"}]})",
       "tools[0].name: missing; expected a string"},
      {R"({"model":"m","temperature":"hot"})", "temperature: expected a number, got string"},
      {R"({"model":"m","max_output_tokens":1.5})",
       "max_output_tokens: expected an integer, got number 1.5"},
      {R"({"model":"m","stream":"yes"})", "stream: expected a boolean, got string"},
      {R"({"model":"m","previous_response_id":5})",
       "previous_response_id: expected a string, got number"},
  };
  for (const auto& c : kCases) {
    EXPECT_THAT(ParseRequest(c.body), StatusIs(absl::StatusCode::kInvalidArgument, c.message))
        << c.body;
  }
}

TEST(ResponsesParseRequest, BadJsonIsRejected) {
  EXPECT_THAT(ParseRequest("[]"), StatusIs(absl::StatusCode::kInvalidArgument,
                                           "body: expected a JSON object, got array"));
  EXPECT_THAT(ParseRequest(R"({"model":)"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                     HasSubstr("body: invalid JSON at byte")));
  EXPECT_THAT(ParseRequest("{\"model\":\"m\",\"input\":\"\xff\"}"),
              StatusIs(absl::StatusCode::kInvalidArgument, "body: invalid UTF-8 at byte 22"));
  const std::string deep = Messages(std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_THAT(ParseRequest(deep), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("body: JSON nested deeper than")));
}

// --- ParseResponse ---

TEST(ResponsesParseResponse, MapsTextAndFunctionCalls) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kResponse);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->id(), "resp_68a1");
  EXPECT_EQ(r->model(), "gpt-5-2025-08-07");
  EXPECT_EQ(r->message().role(), "assistant");
  EXPECT_EQ(r->message().content(), "I'll check both cities.");
  ASSERT_EQ(r->message().tool_calls_size(), 2);
  EXPECT_EQ(r->message().tool_calls(0).id(), "call_paris");
  EXPECT_EQ(r->message().tool_calls(0).name(), "get_weather");
  EXPECT_EQ(r->message().tool_calls(0).arguments(), R"({"city":"Paris"})");
  EXPECT_EQ(r->message().tool_calls(1).id(), "call_oslo");
  EXPECT_EQ(r->finish_reason(), "tool_calls");
  EXPECT_EQ(r->usage().input_tokens(), 82);
  EXPECT_EQ(r->usage().output_tokens(), 140);
}

TEST(ResponsesParseResponse, FinishReasonFollowsStatus) {
  const auto finish = [](absl::string_view status, absl::string_view details) {
    absl::StatusOr<v1::CompletionResponse> r = ParseResponse(
        absl::StrCat(R"({"id":"resp_1","status":)", status, R"(,"incomplete_details":)", details,
                     R"(,"output":[{"type":"message","content":[{"type":"output_text","text":"a"},)"
                     R"({"type":"refusal","refusal":"no"}]}]})"));
    EXPECT_THAT(r, IsOk());
    EXPECT_EQ(r->message().content(), "a");
    return r.ok() ? r->finish_reason() : "";
  };
  EXPECT_EQ(finish(R"("completed")", "null"), "stop");
  EXPECT_EQ(finish(R"("incomplete")", R"({"reason":"max_output_tokens"})"), "length");
  EXPECT_EQ(finish(R"("incomplete")", R"({"reason":"content_filter"})"), "content_filter");
  EXPECT_EQ(finish(R"("incomplete")", "{}"), "incomplete");
  EXPECT_EQ(finish(R"("failed")", "null"), "failed");
  EXPECT_EQ(finish("null", "null"), "");
}

TEST(ResponsesParseResponse, BadBodiesNameTheField) {
  const struct {
    std::string body;
    std::string message;
  } kCases[] = {
      {"[]", "body: expected a response object, got array"},
      {R"({"id":"r"})", "output: missing; expected an array of output items"},
      {R"({"output":{}})", "output: expected an array of output items, got object"},
      {R"({"output":[3]})", "output[0]: expected an output item object, got number"},
      {R"({"output":[{}]})", "output[0].type: missing; expected a string"},
      {R"({"output":[{"type":"function_call","name":"f"}]})",
       "output[0].call_id: missing; expected a string"},
      {R"({"output":[{"type":"message","content":"x"}]})",
       "output[0].content: expected an array of content parts, got string"},
      {R"({"output":[{"type":"message","content":[{"type":"output_text"}]}]})",
       "output[0].content[0].text: missing; expected a string"},
      {R"({"output":[],"usage":{"input_tokens":"1"}})",
       "usage.input_tokens: expected an integer, got string"},
      {R"({"output":[],"incomplete_details":"x"})",
       "incomplete_details: expected an object, got string"},
      {R"({"output":[],"id":1})", "id: expected a string, got number"},
  };
  for (const auto& c : kCases) {
    EXPECT_THAT(ParseResponse(c.body), StatusIs(absl::StatusCode::kInvalidArgument, c.message))
        << c.body;
  }
}

// --- StreamDecoder ---

TEST(ResponsesStreamDecoder, CapturedStreamAssemblesToTheCompletedResponse) {
  const Chunks chunks = Decode(CapturedStream());
  // created, 2 text deltas, 2 x (call added + 2 argument deltas), completed.
  ASSERT_EQ(chunks.size(), 10);
  EXPECT_EQ(chunks[0].id(), "resp_68a1");
  EXPECT_EQ(chunks[0].model(), "gpt-5-2025-08-07");
  EXPECT_EQ(chunks[1].content(), "I'll check");
  EXPECT_EQ(chunks[2].content(), " both cities.");
  ASSERT_EQ(chunks[3].tool_calls_size(), 1);
  EXPECT_EQ(chunks[3].tool_calls(0).index(), 2);
  EXPECT_EQ(chunks[3].tool_calls(0).id(), "call_paris");
  EXPECT_EQ(chunks[3].tool_calls(0).name(), "get_weather");
  EXPECT_EQ(chunks[3].tool_calls(0).arguments(), "");
  EXPECT_EQ(chunks[4].tool_calls(0).index(), 2);
  EXPECT_EQ(chunks[4].tool_calls(0).arguments(), R"({"city":)");
  EXPECT_EQ(chunks[6].tool_calls(0).index(), 3);
  EXPECT_EQ(chunks[9].finish_reason(), "tool_calls");
  EXPECT_EQ(chunks[9].usage().output_tokens(), 140);

  absl::StatusOr<v1::CompletionResponse> unary = ParseResponse(kResponse);
  ASSERT_THAT(unary, IsOk());
  const v1::CompletionResponse assembled = provider::AssembleResponse(chunks);
  EXPECT_EQ(assembled.DebugString(), unary->DebugString());
}

TEST(ResponsesStreamDecoder, EventsThatAddNothingAreNull) {
  StreamDecoder decoder;
  for (const char* data : {
           R"({"type":"response.in_progress","sequence_number":1,"response":{}})",
           R"({"type":"response.content_part.added","sequence_number":2})",
           R"({"type":"response.output_text.done","sequence_number":3,"text":"x"})",
           R"({"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning"}})",
           R"({"type":"response.reasoning_summary_text.delta","delta":"thinking"})",
           R"({"type":"response.web_search_call.searching","output_index":0})",
           R"({"type":"response.refusal.delta","delta":"no"})",
           R"({"type":"response.something_new"})",
       }) {
    absl::StatusOr<std::optional<v1::CompletionChunk>> chunk = decoder.Decode(Event(data));
    ASSERT_THAT(chunk, IsOk()) << data;
    EXPECT_FALSE(chunk->has_value()) << data;
  }
  EXPECT_FALSE(decoder.done());
}

TEST(ResponsesStreamDecoder, UsesTheEventNameWhenDataHasNoType) {
  StreamDecoder decoder;
  absl::StatusOr<std::optional<v1::CompletionChunk>> chunk =
      decoder.Decode(Event(R"({"delta":"hi"})", "response.output_text.delta"));
  ASSERT_THAT(chunk, IsOk());
  ASSERT_TRUE(chunk->has_value());
  EXPECT_EQ((*chunk)->content(), "hi");
  EXPECT_THAT(
      decoder.Decode(Event(R"({"delta":"hi"})")),
      StatusIs(absl::StatusCode::kInvalidArgument, "data.type: missing; expected a string"));
}

TEST(ResponsesStreamDecoder, IncompleteEndsWithLength) {
  StreamDecoder decoder;
  absl::StatusOr<std::optional<v1::CompletionChunk>> chunk =
      decoder.Decode(Event(R"({"type":"response.incomplete","response":{"status":"incomplete",)"
                           R"("incomplete_details":{"reason":"max_output_tokens"},"output":[],)"
                           R"("usage":{"input_tokens":5,"output_tokens":16}}})"));
  ASSERT_THAT(chunk, IsOk());
  ASSERT_TRUE(chunk->has_value());
  EXPECT_EQ((*chunk)->finish_reason(), "length");
  EXPECT_EQ((*chunk)->usage().output_tokens(), 16);
  EXPECT_TRUE(decoder.done());
  EXPECT_THAT(
      decoder.Decode(Event(R"({"type":"response.output_text.delta","delta":"x"})")),
      StatusIs(absl::StatusCode::kFailedPrecondition, "data: event after the end of the stream"));
}

TEST(ResponsesStreamDecoder, ErrorEventsBecomeStatuses) {
  // As the API sends it (nested), and as its reference documents it (flat).
  StreamDecoder decoder;
  EXPECT_THAT(decoder.Decode(Event(R"({"type":"error","sequence_number":2,"error":{"type":)"
                                   R"("insufficient_quota","code":"credit_balance_exhausted",)"
                                   R"("message":"No credits.","param":null}})",
                                   "error")),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "upstream stream error (insufficient_quota): No credits."));
  EXPECT_THAT(decoder.Decode(Event(R"({"type":"error","sequence_number":2,)"
                                   R"("code":"rate_limit_exceeded","message":"Slow down.",)"
                                   R"("param":null})")),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "upstream stream error (rate_limit_exceeded): Slow down."));
  EXPECT_THAT(decoder.Decode(Event(R"({"type":"error","code":"invalid_image","message":"Bad."})")),
              StatusIs(absl::StatusCode::kUnknown, "upstream stream error (invalid_image): Bad."));
  EXPECT_FALSE(decoder.done());

  EXPECT_THAT(
      decoder.Decode(Event(R"({"type":"response.failed","sequence_number":9,"response":)"
                           R"({"id":"resp_1","status":"failed","error":{"code":)"
                           R"("server_error","message":"The model failed."},"output":[]}})")),
      StatusIs(absl::StatusCode::kUnavailable,
               "upstream response failed (server_error): The model failed."));
  EXPECT_TRUE(decoder.done());
}

TEST(ResponsesStreamDecoder, MalformedEventsNameTheField) {
  const struct {
    const char* data;
    const char* message;
  } kCases[] = {
      {"[1]", "data: expected an event object, got array"},
      {"{", "data: invalid JSON at byte 1"},
      {R"({"type":5})", "data.type: expected a string, got number"},
      {R"({"type":"response.created"})", "data.response: missing; expected a response object"},
      {R"({"type":"response.output_text.delta","delta":1})",
       "data.delta: expected a string, got number"},
      {R"({"type":"response.function_call_arguments.delta","output_index":-1,"delta":"x"})",
       "data.output_index: expected an integer in [0, 2^31), got -1"},
      {R"({"type":"response.function_call_arguments.delta","delta":"x"})",
       "data.output_index: missing; expected an integer"},
      {R"({"type":"response.output_item.added","output_index":0,"item":{"type":"function_call",)"
       R"("name":"f"}})",
       "data.item.call_id: missing; expected a string"},
      {R"({"type":"response.completed","response":{"output":[{"type":"function_call"}]}})",
       "data.response.output[0].call_id: missing; expected a string"},
  };
  for (const auto& c : kCases) {
    StreamDecoder decoder;
    EXPECT_THAT(decoder.Decode(Event(c.data)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.data;
  }
}

// --- Rendering ---

// A canonical answer recorded over Chat Completions: text in two chunks,
// then two calls whose fragments interleave, then usage.
Chunks ChatChunks() {
  Chunks chunks;
  for (const char* text : {
           R"pb(id: "chatcmpl-P1" model: "gpt-4o" content: "Checking")pb",
           R"pb(content: " both.")pb",
           R"pb(tool_calls { index: 0 id: "call_paris" name: "get_weather" })pb",
           R"pb(tool_calls { index: 1 id: "call_oslo" name: "get_weather" arguments: "{\"ci" })pb",
           R"pb(tool_calls { index: 0 arguments: "{\"city\":\"Paris\"}" }
                tool_calls { index: 1 arguments: "ty\":\"Oslo\"}" })pb",
           R"pb(finish_reason: "tool_calls"
                usage { input_tokens: 82 output_tokens: 40 })pb",
       }) {
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, chunks.Add())) << text;
  }
  return chunks;
}

RenderMeta Meta() {
  RenderMeta meta;
  meta.id = "resp_test";
  meta.created_at = 1755000000;
  return meta;
}

TEST(ResponsesRender, TextResponseExactBytes) {
  v1::CompletionResponse r;
  r.set_model("gpt-4o");
  r.mutable_message()->set_role("assistant");
  r.mutable_message()->set_content("Hi!");
  r.set_finish_reason("stop");
  r.mutable_usage()->set_input_tokens(3);
  r.mutable_usage()->set_output_tokens(2);
  EXPECT_EQ(
      RenderResponse(r, Meta()),
      absl::StrCat(
          R"({"id":"resp_test","object":"response","created_at":1755000000,"status":"completed",)"
          R"("background":false,"error":null,"incomplete_details":null,"instructions":null,)"
          R"("max_output_tokens":null,"model":"gpt-4o","output":[{"id":")",
          DerivedId("msg_", "resp_test#0"),
          R"(","type":"message","status":"completed","content":[{"type":"output_text",)"
          R"("annotations":[],"logprobs":[],"text":"Hi!"}],"role":"assistant"}],)"
          R"("parallel_tool_calls":true,"previous_response_id":null,)"
          R"("reasoning":{"effort":null,"summary":null},"temperature":1.0,)"
          R"("text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,)"
          R"("truncation":"disabled","usage":{"input_tokens":3,"input_tokens_details":)"
          R"({"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},)"
          R"("total_tokens":5},"metadata":{}})"));
}

TEST(ResponsesRender, RenderedResponseParsesBack) {
  const v1::CompletionResponse original = provider::AssembleResponse(ChatChunks());
  const std::string body = RenderResponse(original, Meta());
  absl::StatusOr<v1::CompletionResponse> parsed = ParseResponse(body);
  ASSERT_THAT(parsed, IsOk());
  v1::CompletionResponse expected = original;
  expected.set_id("resp_test");
  EXPECT_EQ(parsed->DebugString(), expected.DebugString());
  EXPECT_EQ(RenderResponse(*parsed, Meta()), body);

  // The same answer parsed from the captured API response renders and
  // parses back to itself too.
  absl::StatusOr<v1::CompletionResponse> captured = ParseResponse(kResponse);
  ASSERT_THAT(captured, IsOk());
  absl::StatusOr<v1::CompletionResponse> again = ParseResponse(RenderResponse(*captured, {}));
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->DebugString(), captured->DebugString());
}

TEST(ResponsesRender, LengthAndContentFilterRenderAsIncomplete) {
  for (const char* reason : {"length", "content_filter"}) {
    v1::CompletionResponse r;
    r.set_id("resp_1");
    r.mutable_message()->set_role("assistant");
    r.mutable_message()->set_content("cut");
    r.set_finish_reason(reason);
    const std::string body = RenderResponse(r, {});
    EXPECT_THAT(body, HasSubstr(R"("status":"incomplete")"));
    absl::StatusOr<v1::CompletionResponse> parsed = ParseResponse(body);
    ASSERT_THAT(parsed, IsOk());
    EXPECT_EQ(parsed->DebugString(), r.DebugString());
  }
}

TEST(ResponsesRender, IdsAreDerivedWhenMissing) {
  v1::CompletionResponse r;
  r.set_id("chatcmpl-1");
  r.mutable_message()->add_tool_calls()->set_name("f");
  RenderMeta meta;
  meta.model = "gpt-4o";
  absl::StatusOr<v1::CompletionResponse> parsed = ParseResponse(RenderResponse(r, meta));
  ASSERT_THAT(parsed, IsOk());
  const std::string id = DerivedId("resp_", "chatcmpl-1");
  EXPECT_EQ(parsed->id(), id);
  EXPECT_EQ(parsed->model(), "gpt-4o");
  EXPECT_EQ(parsed->message().tool_calls(0).id(), DerivedId("call_", absl::StrCat(id, "#0")));

  r.set_id("resp_kept");
  EXPECT_THAT(RenderResponse(r, {}), HasSubstr(R"({"id":"resp_kept",)"));
  r.clear_id();
  EXPECT_EQ(ResponseIdOf(RenderResponse(r, {})), ResponseIdOf(RenderResponse(r, {})));
  EXPECT_THAT(ResponseIdOf(RenderResponse(r, {})), testing::StartsWith("resp_"));
}

TEST(ResponsesRender, StreamEventOrderAndSequenceNumbers) {
  const std::vector<RenderedEvent> events = RenderStream(ChatChunks(), Meta());
  std::vector<std::string> shape;
  for (size_t i = 0; i < events.size(); ++i) {
    const std::string& text = events[i].text;
    ASSERT_TRUE(absl::StartsWith(text, "event: ") && absl::EndsWith(text, "\n\n")) << text;
    const size_t data_at = text.find("\ndata: ");
    ASSERT_NE(data_at, std::string::npos);
    const std::string name = text.substr(7, data_at - 7);
    const Json data = Json::parse(text.substr(data_at + 7));
    EXPECT_EQ(data["type"], name);
    EXPECT_EQ(data["sequence_number"], i);
    shape.push_back(absl::StrCat(name, " ", events[i].chunk));
  }
  EXPECT_THAT(
      shape,
      ElementsAre("response.created -1", "response.in_progress -1", "response.output_item.added -1",
                  "response.content_part.added -1", "response.output_text.delta 0",
                  "response.output_text.delta 1", "response.output_text.done -1",
                  "response.content_part.done -1", "response.output_item.done -1",
                  "response.output_item.added -1", "response.function_call_arguments.delta 4",
                  "response.function_call_arguments.done -1", "response.output_item.done -1",
                  "response.output_item.added -1", "response.function_call_arguments.delta 3",
                  "response.function_call_arguments.delta 4",
                  "response.function_call_arguments.done -1", "response.output_item.done -1",
                  "response.completed -1"));
  EXPECT_EQ(events[4].text,
            absl::StrCat(R"(event: response.output_text.delta)", "\n",
                         R"(data: {"type":"response.output_text.delta","sequence_number":4,)"
                         R"("item_id":")",
                         DerivedId("msg_", "resp_test#0"),
                         R"(","output_index":0,"content_index":0,"delta":"Checking",)"
                         R"("logprobs":[]})",
                         "\n\n"));
  EXPECT_EQ(events[9].text,
            absl::StrCat("event: response.output_item.added\n",
                         R"(data: {"type":"response.output_item.added","sequence_number":9,)"
                         R"("output_index":1,"item":{"id":")",
                         DerivedId("fc_", "resp_test#1"),
                         R"(","type":"function_call","status":"in_progress","arguments":"",)"
                         R"("call_id":"call_paris","name":"get_weather"}})",
                         "\n\n"));
}

TEST(ResponsesRender, StreamDecodesToTheSameAnswer) {
  const Chunks chunks = ChatChunks();
  std::string stream;
  for (const RenderedEvent& e : RenderStream(chunks, Meta())) stream += e.text;
  const v1::CompletionResponse decoded = provider::AssembleResponse(Decode(stream));
  v1::CompletionResponse expected = provider::AssembleResponse(chunks);
  expected.set_id("resp_test");
  EXPECT_EQ(decoded.DebugString(), expected.DebugString());

  // The final event carries what RenderResponse renders.
  absl::StatusOr<std::vector<SseEvent>> last = ParseSse(RenderStream(chunks, Meta()).back().text);
  ASSERT_THAT(last, IsOk());
  ASSERT_EQ(last->size(), 1u);
  EXPECT_EQ(ResponseObjectFromEvent((*last)[0].data),
            RenderResponse(provider::AssembleResponse(chunks), Meta()));
}

TEST(ResponsesRender, EmptyStreamIsCreatedThenCompleted) {
  const std::vector<RenderedEvent> events = RenderStream(Chunks(), Meta());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_THAT(events[2].text, HasSubstr(R"("output":[])"));
  EXPECT_THAT(events[2].text, HasSubstr("event: response.completed\n"));
}

TEST(ResponsesRender, DerivedIdIsStable) {
  // Pinned: ids must not change across builds, or replays would differ.
  EXPECT_EQ(DerivedId("resp_", ""), "resp_f52a15e9a9b5e89b292417dcc0d778ab");
  EXPECT_EQ(DerivedId("msg_", "resp_test#0"), "msg_66b6e182ff9deef5f17a5390def8925a");
  EXPECT_NE(DerivedId("x", "a"), DerivedId("x", "b"));
  EXPECT_EQ(DerivedId("fc_", "abc").size(), 3u + 32u);
}

TEST(ResponsesRender, ErrorEventExactBytesAndDecodes) {
  const std::string event = ErrorEvent("Slow down.", "rate_limit_exceeded", 7);
  EXPECT_EQ(event,
            "event: error\n"
            R"(data: {"type":"error","sequence_number":7,"code":"rate_limit_exceeded",)"
            R"("message":"Slow down.","param":null,"error":{"code":"rate_limit_exceeded",)"
            R"("message":"Slow down.","param":null}})"
            "\n\n");
  absl::StatusOr<std::vector<SseEvent>> events = ParseSse(event);
  ASSERT_THAT(events, IsOk());
  ASSERT_EQ(events->size(), 1u);
  StreamDecoder decoder;
  EXPECT_THAT(decoder.Decode((*events)[0]),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "upstream stream error (rate_limit_exceeded): Slow down."));
  EXPECT_THAT(ErrorEvent("x", "", 0), HasSubstr(R"("code":null)"));
}

TEST(ResponsesRender, ResponseObjectFromEventAndIdOf) {
  EXPECT_EQ(
      ResponseObjectFromEvent(
          R"({"type":"response.completed","sequence_number":3,"response":{"id":"resp_1", "output":[]}})"),
      R"({"id":"resp_1","output":[]})");
  EXPECT_EQ(ResponseObjectFromEvent(R"({"type":"response.failed","response":{"id":"r"}})"),
            R"({"id":"r"})");
  EXPECT_EQ(ResponseObjectFromEvent(R"({"type":"response.created","response":{"id":"r"}})"), "");
  EXPECT_EQ(ResponseObjectFromEvent("not json"), "");
  EXPECT_EQ(ResponseIdOf(kResponse), "resp_68a1");
  EXPECT_EQ(ResponseIdOf(R"({"id":3})"), "");
  EXPECT_EQ(ResponseIdOf("[]"), "");
}

}  // namespace
}  // namespace responses
}  // namespace provider
}  // namespace understudy
