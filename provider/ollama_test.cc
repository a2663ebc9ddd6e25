#include "provider/ollama.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "provider/canonical.h"
#include "provider/chunks.h"
#include "provider/element_stream.h"
#include "provider/embeddings.h"
#include "provider/json_util.h"
#include "provider/test_fixtures.h"

namespace understudy {
namespace provider {
namespace ollama {
namespace {

using fixtures::Chunks;
using fixtures::Join;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// An agent's third turn as the npm client (ollama-js) sends it: the model
// asked for two tools and gets both results back.
constexpr absl::string_view kChatRequest = R"({
  "model": "llama3.1:8b",
  "messages": [
    {"role": "system", "content": "You are the executor. Use tools."},
    {"role": "user", "content": "What is the weather in Paris and in Oslo?"},
    {"role": "assistant", "content": "", "tool_calls": [
      {"function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}},
      {"function": {"index": 1, "name": "get_weather", "arguments": {"city": "Oslo"}}}]},
    {"role": "tool", "content": "18C, cloudy", "tool_name": "get_weather"},
    {"role": "tool", "content": "4C, snow", "tool_name": "get_weather"}
  ],
  "tools": [{"type": "function", "function": {"name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}],
  "options": {"temperature": 0.2, "top_p": 0.9, "num_predict": 512, "stop": ["END"],
              "seed": 7, "top_k": 40, "num_ctx": 8192},
  "format": "json",
  "think": false,
  "keep_alive": "5m",
  "stream": true
})";

// The whole answer to a first turn: some text, then two tool calls.
constexpr absl::string_view kChatResponse =
    R"({"model":"llama3.1:8b","created_at":"2025-06-01T10:00:00.123456Z",)"
    R"("message":{"role":"assistant","content":"I'll check","tool_calls":[)"
    R"({"function":{"index":0,"name":"get_weather","arguments":{"city":"Paris"}}},)"
    R"({"function":{"index":1,"name":"get_weather","arguments":{"city":"Oslo"}}}]},)"
    R"("done_reason":"stop","done":true,"total_duration":812345678,"load_duration":12345678,)"
    R"("prompt_eval_count":60,"prompt_eval_duration":200000000,"eval_count":24,)"
    R"("eval_duration":600000000})";

// The same answer streamed: NDJSON, one object per line.
constexpr absl::string_view kChatStream =
    R"({"model":"llama3.1:8b","created_at":"2025-06-01T10:00:00.1Z","message":{"role":"assistant","content":"I'll"},"done":false})"
    "\n"
    R"({"model":"llama3.1:8b","created_at":"2025-06-01T10:00:00.2Z","message":{"role":"assistant","content":" check"},"done":false})"
    "\n"
    R"({"model":"llama3.1:8b","created_at":"2025-06-01T10:00:00.3Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"index":0,"name":"get_weather","arguments":{"city":"Paris"}}}]},"done":false})"
    "\n"
    R"({"model":"llama3.1:8b","created_at":"2025-06-01T10:00:00.4Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"index":1,"name":"get_weather","arguments":{"city":"Oslo"}}}]},"done":false})"
    "\n"
    R"({"model":"llama3.1:8b","created_at":"2025-06-01T10:00:00.5Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"total_duration":812345678,"load_duration":12345678,"prompt_eval_count":60,"prompt_eval_duration":200000000,"eval_count":24,"eval_duration":600000000})"
    "\n";

constexpr absl::string_view kGenerateRequest = R"({
  "model": "llama3.2", "prompt": "Why is the sky blue?", "system": "Be brief.",
  "suffix": "", "template": "", "context": [1, 2, 3], "raw": false, "images": ["aGk="],
  "format": "json", "options": {"temperature": 0, "mirostat": 0},
  "stream": false, "keep_alive": -1
})";

constexpr absl::string_view kGenerateResponse =
    R"({"model":"llama3.2","created_at":"2025-06-01T10:00:00Z","response":"Rayleigh scattering.",)"
    R"("done":true,"done_reason":"length","context":[1,2,3,4],"total_duration":5,)"
    R"("load_duration":1,"prompt_eval_count":26,"prompt_eval_duration":2,"eval_count":5,)"
    R"("eval_duration":2})";

constexpr absl::string_view kGenerateStream =
    R"({"model":"llama3.2","created_at":"2025-06-01T10:00:00Z","response":"Rayleigh","done":false})"
    "\n"
    R"({"model":"llama3.2","created_at":"2025-06-01T10:00:01Z","response":" scattering.","done":false})"
    "\n"
    R"({"model":"llama3.2","created_at":"2025-06-01T10:00:02Z","response":"","done":true,"done_reason":"length","context":[1,2,3,4],"total_duration":5,"load_duration":1,"prompt_eval_count":26,"prompt_eval_duration":2,"eval_count":5,"eval_duration":2})"
    "\n";

constexpr absl::string_view kEmbedRequest =
    R"({"model":"nomic-embed-text","input":["a","b"],"truncate":true,"dimensions":8,)"
    R"("keep_alive":"1m"})";

constexpr absl::string_view kEmbedResponse =
    R"({"model":"nomic-embed-text","embeddings":[[0.1,-0.2],[0.3,0.4]],"total_duration":1,)"
    R"("load_duration":1,"prompt_eval_count":2})";

// The segments an NdjsonSplitter makes of `stream` fed `piece` bytes at a
// time, then its Rest() when not empty; fails the test if it refuses.
std::vector<std::string> SplitLines(absl::string_view stream, size_t piece) {
  NdjsonSplitter splitter;
  std::vector<std::string> out;
  for (size_t i = 0; i < stream.size(); i += piece) {
    for (std::string& s : splitter.Feed(stream.substr(i, piece))) out.push_back(std::move(s));
  }
  EXPECT_THAT(splitter.Finish(), IsOk());
  if (!splitter.Rest().empty()) out.push_back(splitter.Rest());
  return out;
}

// The chunks of a whole NDJSON stream, decoded line by line as the relay
// does; fails the test on any error or when the stream does not end.
Chunks DecodeNdjson(absl::string_view stream, size_t piece) {
  Chunks chunks;
  NdjsonSplitter splitter;
  StreamDecoder decoder;
  for (const std::string& segment : SplitLines(stream, piece)) {
    const std::string element = splitter.Element(segment);
    if (element.empty()) continue;
    absl::StatusOr<std::optional<v1::CompletionChunk>> chunk = decoder.DecodeElement(element);
    EXPECT_THAT(chunk, IsOk()) << segment;
    if (chunk.ok() && chunk->has_value()) *chunks.Add() = **chunk;
  }
  EXPECT_TRUE(decoder.done());
  return chunks;
}

ParsedRequest Parse(Endpoint endpoint, absl::string_view body) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(endpoint, body);
  EXPECT_THAT(parsed, IsOk());
  return parsed.ok() ? *std::move(parsed) : ParsedRequest();
}

std::string Canonical(Endpoint endpoint, absl::string_view body) {
  return CanonicalText(Parse(endpoint, body).canonical);
}

// ---- Requests ----

TEST(OllamaParseRequest, MapsARecordedAgentChat) {
  const ParsedRequest parsed = Parse(Endpoint::kChat, kChatRequest);
  const v1::CompletionRequest& r = parsed.canonical;
  EXPECT_EQ(r.model(), "llama3.1:8b");
  EXPECT_EQ(r.operation(), "");
  ASSERT_EQ(r.messages_size(), 5);
  EXPECT_EQ(r.messages(0).role(), "system");
  EXPECT_EQ(r.messages(1).content(), "What is the weather in Paris and in Oslo?");
  const v1::Message& assistant = r.messages(2);
  EXPECT_EQ(assistant.role(), "assistant");
  ASSERT_EQ(assistant.tool_calls_size(), 2);
  EXPECT_EQ(assistant.tool_calls(0).id(), "");
  EXPECT_EQ(assistant.tool_calls(0).name(), "get_weather");
  EXPECT_EQ(assistant.tool_calls(0).arguments(), R"({"city":"Paris"})");
  EXPECT_EQ(assistant.tool_calls(1).arguments(), R"({"city":"Oslo"})");
  EXPECT_EQ(assistant.extra(), "");  // the indexes are the calls' positions
  EXPECT_EQ(r.messages(3).role(), "tool");
  EXPECT_EQ(r.messages(3).name(), "get_weather");
  EXPECT_EQ(r.messages(4).content(), "4C, snow");
  ASSERT_EQ(r.tools_size(), 1);
  EXPECT_EQ(r.tools(0).name(), "get_weather");
  EXPECT_EQ(r.tools(0).description(), "Current weather for a city.");
  EXPECT_EQ(r.tools(0).parameters(),
            R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");
  EXPECT_DOUBLE_EQ(r.params().temperature(), 0.2);
  EXPECT_DOUBLE_EQ(r.params().top_p(), 0.9);
  EXPECT_EQ(r.params().max_tokens(), 512);
  EXPECT_THAT(r.params().stop(), ElementsAre("END"));
  EXPECT_EQ(r.params().seed(), 7);
  EXPECT_EQ(r.extra(), R"({"format":"json","options":{"num_ctx":8192,"top_k":40},"think":false})");
  EXPECT_TRUE(parsed.stream);
  EXPECT_TRUE(parsed.include_usage);
  EXPECT_EQ(parsed.stream_framing, StreamFraming::kNdjson);
}

TEST(OllamaParseRequest, StreamsUnlessTheBodySaysNot) {
  for (absl::string_view body :
       {R"({"model":"m"})", R"({"model":"m","stream":null})", R"({"model":"m","stream":true})"}) {
    const ParsedRequest parsed = Parse(Endpoint::kChat, body);
    EXPECT_TRUE(parsed.stream) << body;
    EXPECT_TRUE(parsed.include_usage) << body;
    EXPECT_EQ(parsed.stream_framing, StreamFraming::kNdjson) << body;
  }
  const ParsedRequest whole = Parse(Endpoint::kGenerate, R"({"model":"m","stream":false})");
  EXPECT_FALSE(whole.stream);
  EXPECT_FALSE(whole.include_usage);
  EXPECT_EQ(whole.stream_framing, StreamFraming::kSse);  // the default: no element stream
  EXPECT_TRUE(Parse(Endpoint::kGenerate, R"({"model":"m"})").stream);
  EXPECT_FALSE(Parse(Endpoint::kEmbed, R"({"model":"m","input":"x","stream":true})").stream);
}

TEST(OllamaParseRequest, IgnoredFieldsAreIgnoredOthersMatter) {
  EXPECT_THAT(kIgnoredRequestFields, ElementsAre("stream", "keep_alive"));
  const std::string base = Canonical(Endpoint::kChat, R"({"model":"m","messages":[]})");
  EXPECT_EQ(
      Canonical(Endpoint::kChat, R"({"model":"m","messages":[],"keep_alive":0,"stream":false})"),
      base);
  EXPECT_NE(Canonical(Endpoint::kChat, R"({"model":"m","messages":[],"format":"json"})"), base);
  EXPECT_NE(Canonical(Endpoint::kChat, R"({"model":"m","messages":[],"options":{"top_k":1}})"),
            base);
  // Key order and nulls do not matter.
  EXPECT_EQ(Canonical(Endpoint::kChat, R"({"think":true,"format":null,"model":"m"})"),
            Canonical(Endpoint::kChat, R"({"model":"m","think":true})"));
}

TEST(OllamaParseRequest, ToolCallsCarryObjectArguments) {
  const ParsedRequest parsed = Parse(Endpoint::kChat, R"({"model":"m","messages":[
    {"role":"assistant","tool_calls":[{"id":"call_1","function":{"name":"f",
      "arguments":{"b":[1,2],"a":{"x":null}}}},{"function":{"name":"g"}}]}]})");
  const v1::Message& m = parsed.canonical.messages(0);
  ASSERT_EQ(m.tool_calls_size(), 2);
  EXPECT_EQ(m.tool_calls(0).id(), "call_1");
  EXPECT_EQ(m.tool_calls(0).arguments(), R"({"b":[1,2],"a":{"x":null}})");  // as sent
  EXPECT_EQ(m.tool_calls(1).arguments(), "{}");
  EXPECT_EQ(m.content(), "");
  EXPECT_EQ(m.extra(), "");
}

TEST(OllamaParseRequest, ToolCallsTheCanonicalOnesCannotRepeatAreKept) {
  // An index that is not the call's position, and a field beyond those mapped.
  for (absl::string_view calls :
       {R"([{"function":{"index":3,"name":"f","arguments":{}}}])",
        R"([{"type":"function","function":{"name":"f","arguments":{}}}])"}) {
    const ParsedRequest parsed =
        Parse(Endpoint::kChat,
              absl::StrCat(R"({"model":"m","messages":[{"role":"assistant","tool_calls":)", calls,
                           "}]}"));
    const v1::Message& m = parsed.canonical.messages(0);
    ASSERT_EQ(m.tool_calls_size(), 1) << calls;
    EXPECT_EQ(m.tool_calls(0).name(), "f");
    EXPECT_THAT(m.extra(), HasSubstr(R"({"tool_calls":[)")) << calls;
  }
}

TEST(OllamaParseRequest, MessageFieldsWithoutACanonicalPlaceGoToExtra) {
  const ParsedRequest parsed = Parse(Endpoint::kChat, R"({"model":"m","messages":[
    {"role":"user","content":"what is this?","images":["aGk="]},
    {"role":"assistant","content":"a cat","thinking":"looks furry"}]})");
  EXPECT_EQ(parsed.canonical.messages(0).extra(), R"({"images":["aGk="]})");
  EXPECT_EQ(parsed.canonical.messages(1).extra(), R"({"thinking":"looks furry"})");
  EXPECT_EQ(parsed.canonical.messages(1).content(), "a cat");
}

TEST(OllamaParseRequest, OtherToolsKeepTheWholeToolsArray) {
  const ParsedRequest parsed = Parse(Endpoint::kChat, R"({"model":"m","tools":[
    {"type":"function","function":{"name":"f","parameters":{"type":"object"}}},
    {"type":"web_search"}]})");
  ASSERT_EQ(parsed.canonical.tools_size(), 1);
  EXPECT_EQ(parsed.canonical.tools(0).name(), "f");
  EXPECT_THAT(parsed.canonical.extra(), HasSubstr(R"("tools":[)"));
  EXPECT_THAT(parsed.canonical.extra(), HasSubstr("web_search"));
}

TEST(OllamaParseRequest, GenerateIsASystemAndAUserMessage) {
  const ParsedRequest parsed = Parse(Endpoint::kGenerate, kGenerateRequest);
  const v1::CompletionRequest& r = parsed.canonical;
  EXPECT_EQ(r.model(), "llama3.2");
  EXPECT_EQ(r.operation(), "text_completion");
  ASSERT_EQ(r.messages_size(), 2);
  EXPECT_EQ(r.messages(0).role(), "system");
  EXPECT_EQ(r.messages(0).content(), "Be brief.");
  EXPECT_EQ(r.messages(1).role(), "user");
  EXPECT_EQ(r.messages(1).content(), "Why is the sky blue?");
  EXPECT_TRUE(r.params().has_temperature());
  EXPECT_EQ(r.extra(),
            R"({"context":[1,2,3],"format":"json","images":["aGk="],"options":{"mirostat":0},)"
            R"("raw":false,"suffix":"","template":""})");
  EXPECT_FALSE(parsed.stream);

  // No system, no prompt: one empty user message (Ollama loads the model).
  const ParsedRequest bare = Parse(Endpoint::kGenerate, R"({"model":"m","system":""})");
  ASSERT_EQ(bare.canonical.messages_size(), 1);
  EXPECT_EQ(bare.canonical.messages(0).role(), "user");
  EXPECT_EQ(bare.canonical.messages(0).content(), "");
}

TEST(OllamaParseRequest, ChatAndGenerateNeverMatchEachOther) {
  EXPECT_NE(
      Canonical(Endpoint::kChat, R"({"model":"m","messages":[{"role":"user","content":"hi"}]})"),
      Canonical(Endpoint::kGenerate, R"({"model":"m","prompt":"hi"})"));
}

TEST(OllamaParseRequest, EmbedIsTheCanonicalEmbeddingsForm) {
  const ParsedRequest parsed = Parse(Endpoint::kEmbed, kEmbedRequest);
  const v1::CompletionRequest& r = parsed.canonical;
  EXPECT_EQ(r.operation(), "embeddings");
  EXPECT_EQ(r.model(), "nomic-embed-text");
  ASSERT_EQ(r.messages_size(), 2);
  EXPECT_EQ(r.messages(0).role(), "user");
  EXPECT_EQ(r.messages(1).content(), "b");
  EXPECT_EQ(r.extra(), R"({"dimensions":8,"truncate":true})");
  EXPECT_FALSE(parsed.stream);

  EXPECT_EQ(Parse(Endpoint::kEmbed, R"({"model":"m","input":"one"})").canonical.messages_size(), 1);
  // No input: Ollama loads the model and answers no vectors.
  for (absl::string_view body :
       {R"({"model":"m"})", R"({"model":"m","input":""})", R"({"model":"m","input":[]})"}) {
    EXPECT_EQ(Parse(Endpoint::kEmbed, body).canonical.messages_size(), 0) << body;
  }
}

TEST(OllamaParseRequest, BadFieldsAreNamedWithTheirPath) {
  struct Case {
    Endpoint endpoint;
    absl::string_view body;
    absl::string_view message;
  };
  const Case cases[] = {
      {Endpoint::kChat, "[1]", "body: expected a JSON object, got array"},
      {Endpoint::kChat, R"({"messages":[]})", "model: missing; expected a string"},
      {Endpoint::kChat, R"({"model":7})", "model: expected a string, got number"},
      {Endpoint::kChat, R"({"model":"m","messages":{}})",
       "messages: expected an array of messages, got object"},
      {Endpoint::kChat, R"({"model":"m","messages":["hi"]})",
       "messages[0]: expected a message object, got string"},
      {Endpoint::kChat, R"({"model":"m","messages":[{"content":"hi"}]})",
       "messages[0].role: missing; expected a string"},
      {Endpoint::kChat, R"({"model":"m","messages":[{"role":"robot"}]})",
       R"(messages[0].role: expected "system", "user", "assistant" or "tool", got "robot")"},
      {Endpoint::kChat, R"({"model":"m","messages":[{"role":"user","content":["hi"]}]})",
       "messages[0].content: expected a string, got array"},
      {Endpoint::kChat,
       R"({"model":"m","messages":[{"role":"user"},{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{\"a\":1}"}}]}]})",
       "messages[1].tool_calls[0].function.arguments: expected an object, got string"},
      {Endpoint::kChat,
       R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":{}}]}]})",
       "messages[0].tool_calls[0].function.name: missing; expected a string"},
      {Endpoint::kChat,
       R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"name":"f"}]}]})",
       "messages[0].tool_calls[0].function: missing; expected an object"},
      {Endpoint::kChat, R"({"model":"m","messages":[{"role":"assistant","tool_calls":{}}]})",
       "messages[0].tool_calls: expected an array of tool calls, got object"},
      {Endpoint::kChat, R"({"model":"m","messages":[{"role":"tool","tool_name":1}]})",
       "messages[0].tool_name: expected a string, got number"},
      {Endpoint::kChat, R"({"model":"m","tools":[{"type":"function"}]})",
       "tools[0].function: missing; expected an object"},
      {Endpoint::kChat, R"({"model":"m","options":[]})", "options: expected an object, got array"},
      {Endpoint::kChat, R"({"model":"m","options":{"temperature":"hot"}})",
       "options.temperature: expected a number, got string"},
      {Endpoint::kChat, R"({"model":"m","options":{"num_predict":1.5}})",
       "options.num_predict: expected an integer, got number 1.5"},
      {Endpoint::kChat, R"({"model":"m","options":{"stop":"END"}})",
       "options.stop: expected an array of strings, got string"},
      {Endpoint::kChat, R"({"model":"m","options":{"stop":["a",2]}})",
       "options.stop[1]: expected a string, got number"},
      {Endpoint::kChat, R"({"model":"m","stream":"yes"})",
       "stream: expected a boolean, got string"},
      {Endpoint::kGenerate, R"({"model":"m","prompt":["hi"]})",
       "prompt: expected a string, got array"},
      {Endpoint::kGenerate, R"({"model":"m","system":{}})",
       "system: expected a string, got object"},
      {Endpoint::kEmbed, R"({"model":"m","input":3})",
       "input: expected a string or an array of strings, got number"},
      {Endpoint::kEmbed, R"({"model":"m","input":["a",[1]]})",
       "input[1]: expected a string, got array"},
      {Endpoint::kEmbed, R"({"model":"m","input":"a","dimensions":0})",
       "dimensions: expected an integer in [1, 65536], got 0"},
      {Endpoint::kEmbed, R"({"model":"m","input":"a","dimensions":"8"})",
       "dimensions: expected an integer in [1, 65536], got string"},
      {Endpoint::kEmbed, R"({"model":"m","input":"a","truncate":"no"})",
       "truncate: expected a boolean, got string"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseRequest(c.endpoint, c.body),
                StatusIs(absl::StatusCode::kInvalidArgument, std::string(c.message)))
        << c.body;
  }
}

TEST(OllamaParseRequest, HostileBodiesFailCleanly) {
  const std::string deep =
      R"({"model":"m","x":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_THAT(ParseRequest(Endpoint::kChat, deep),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("body: JSON nested deeper than 256 levels")));
  EXPECT_THAT(ParseRequest(Endpoint::kChat, "{\"model\":\"m\xC3\x28\"}"),
              StatusIs(absl::StatusCode::kInvalidArgument, "body: invalid UTF-8 at byte 11"));
  EXPECT_THAT(ParseRequest(Endpoint::kGenerate, R"({"model": oops})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("body: invalid JSON at byte 10: syntax error")));
  EXPECT_THAT(ParseRequest(Endpoint::kEmbed, ""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("body: invalid JSON")));
  const std::vector<std::string> inputs(embeddings::kMaxInputs + 1, R"("a")");
  EXPECT_THAT(ParseRequest(Endpoint::kEmbed, absl::StrCat(R"({"model":"m","input":[)",
                                                          absl::StrJoin(inputs, ","), "]}")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "input: expected at most 2048 inputs, got 2049"));
}

// ---- Whole answers ----

TEST(OllamaParseResponse, MapsAChatAnswerWithToolCalls) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kChatResponse);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->id(), "");
  EXPECT_EQ(r->model(), "llama3.1:8b");
  EXPECT_EQ(r->message().role(), "assistant");
  EXPECT_EQ(r->message().content(), "I'll check");
  ASSERT_EQ(r->message().tool_calls_size(), 2);
  EXPECT_EQ(r->message().tool_calls(1).name(), "get_weather");
  EXPECT_EQ(r->message().tool_calls(1).arguments(), R"({"city":"Oslo"})");
  EXPECT_EQ(r->finish_reason(), "tool_calls");  // Ollama says "stop" for those
  EXPECT_EQ(r->usage().input_tokens(), 60);
  EXPECT_EQ(r->usage().output_tokens(), 24);
}

TEST(OllamaParseResponse, MapsAGenerateAnswer) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kGenerateResponse);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->message().content(), "Rayleigh scattering.");
  EXPECT_EQ(r->finish_reason(), "length");
  EXPECT_EQ(r->usage().input_tokens(), 26);
  // No done_reason: "stop" when done.
  absl::StatusOr<v1::CompletionResponse> old =
      ParseResponse(R"({"model":"m","response":"x","done":true})");
  ASSERT_THAT(old, IsOk());
  EXPECT_EQ(old->finish_reason(), "stop");
  EXPECT_FALSE(old->has_usage());
}

TEST(OllamaParseResponse, MapsAnEmbedAnswer) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kEmbedResponse);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->model(), "nomic-embed-text");
  EXPECT_EQ(r->message().role(), "assistant");
  EXPECT_EQ(r->message().content(), "");
  EXPECT_EQ(r->finish_reason(), "stop");
  EXPECT_EQ(r->usage().input_tokens(), 2);
}

TEST(OllamaParseResponse, MalformedAnswersNameTheField) {
  const std::pair<absl::string_view, absl::string_view> cases[] = {
      {"{}",
       "message: missing; expected a message object (chat), or a `response` string (generate) "
       "or an `embeddings` array (embed)"},
      {R"({"error":"model not found"})",
       "message: missing; expected a message object (chat), or a `response` string (generate) "
       "or an `embeddings` array (embed)"},
      {R"({"message":"hi"})", "message: expected a message object, got string"},
      {R"({"message":{"content":1}})", "message.content: expected a string, got number"},
      {R"({"message":{"tool_calls":[{"function":{"name":"f","arguments":[]}}]}})",
       "message.tool_calls[0].function.arguments: expected an object, got array"},
      {R"({"response":"x","done":"yes"})", "done: expected a boolean, got string"},
      {R"({"response":"x","eval_count":"3"})", "eval_count: expected an integer, got string"},
      {R"({"embeddings":[[0.1,"x"]]})", "embeddings[0][1]: expected a number, got string"},
      {R"({"embeddings":[1]})", "embeddings[0]: expected an array of numbers, got number"},
      {R"({"embeddings":{}})", "embeddings: expected an array of embeddings, got object"},
      {"[]", "body: expected a JSON object, got array"},
  };
  for (const auto& [body, message] : cases) {
    EXPECT_THAT(ParseResponse(body),
                StatusIs(absl::StatusCode::kInvalidArgument, std::string(message)))
        << body;
  }
}

// ---- Streams ----

TEST(OllamaStreamDecoder, NdjsonStreamAssemblesToTheWholeAnswer) {
  absl::StatusOr<v1::CompletionResponse> whole = ParseResponse(kChatResponse);
  ASSERT_THAT(whole, IsOk());
  for (size_t piece : {size_t{1}, size_t{7}, kChatStream.size()}) {
    std::vector<std::string> segments = SplitLines(kChatStream, piece);
    ASSERT_EQ(segments.size(), 5u);
    EXPECT_EQ(Join(segments), kChatStream);
    const Chunks chunks = DecodeNdjson(kChatStream, piece);
    ASSERT_EQ(chunks.size(), 5);
    EXPECT_EQ(chunks[0].content(), "I'll");
    EXPECT_EQ(chunks[0].model(), "llama3.1:8b");
    ASSERT_EQ(chunks[2].tool_calls_size(), 1);
    EXPECT_EQ(chunks[2].tool_calls(0).index(), 0);
    EXPECT_EQ(chunks[2].tool_calls(0).arguments(), R"({"city":"Paris"})");
    EXPECT_EQ(chunks[3].tool_calls(0).index(), 1);
    EXPECT_EQ(chunks[3].finish_reason(), "");
    EXPECT_EQ(chunks[4].finish_reason(), "tool_calls");
    EXPECT_EQ(AssembleResponse(chunks).DebugString(), whole->DebugString());
  }
}

TEST(OllamaStreamDecoder, GenerateStreamAndALastLineWithoutABreak) {
  std::string stream(kGenerateStream);
  stream.pop_back();  // the last line stays in the splitter's Rest()
  const Chunks chunks = DecodeNdjson(stream, 5);
  ASSERT_EQ(chunks.size(), 3);
  absl::StatusOr<v1::CompletionResponse> whole = ParseResponse(kGenerateResponse);
  ASSERT_THAT(whole, IsOk());
  EXPECT_EQ(AssembleResponse(chunks).DebugString(), whole->DebugString());
}

TEST(OllamaStreamDecoder, DoneOnlyAfterTheDoneLine) {
  StreamDecoder decoder;
  std::vector<std::string> lines = absl::StrSplit(kChatStream, '\n', absl::SkipEmpty());
  ASSERT_THAT(decoder.DecodeElement(lines[0]), IsOk());
  EXPECT_FALSE(decoder.done());
  absl::StatusOr<std::optional<v1::CompletionChunk>> last = decoder.DecodeElement(lines[4]);
  ASSERT_THAT(last, IsOk());
  EXPECT_EQ((*last)->finish_reason(), "stop");  // this decoder saw no call
  EXPECT_EQ((*last)->usage().output_tokens(), 24);
  EXPECT_TRUE(decoder.done());
}

TEST(OllamaStreamDecoder, AnErrorLineBecomesAStatus) {
  StreamDecoder decoder;
  EXPECT_THAT(
      decoder.DecodeElement(R"({"error":"an error was encountered while running the model"})"),
      StatusIs(absl::StatusCode::kUnknown,
               "upstream stream error: an error was encountered while running the model"));
  SseEvent event;
  event.data = R"({"error":{"message":"overloaded"}})";
  EXPECT_THAT(decoder.Decode(event),
              StatusIs(absl::StatusCode::kUnknown, "upstream stream error: overloaded"));
}

TEST(OllamaStreamDecoder, MalformedLinesNameTheField) {
  StreamDecoder decoder;
  EXPECT_THAT(decoder.DecodeElement("[1]"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "element: expected a stream line object, got array"));
  EXPECT_THAT(decoder.DecodeElement(R"({"message":[]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "element.message: expected a message object, got array"));
  EXPECT_THAT(
      decoder.DecodeElement(R"({"response":"x","done":1})"),
      StatusIs(absl::StatusCode::kInvalidArgument, "element.done: expected a boolean, got number"));
  EXPECT_THAT(decoder.DecodeElement("{\"response\":\"\xff\"}"),
              StatusIs(absl::StatusCode::kInvalidArgument, "element: invalid UTF-8 at byte 13"));
  EXPECT_THAT(decoder.DecodeElement("{oops"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("element: invalid JSON")));
  SseEvent keepalive;
  EXPECT_THAT(decoder.Decode(keepalive), IsOk());
  EXPECT_FALSE(decoder.done());
}

// ---- Rendering ----

v1::CompletionResponse ToolAnswer() {
  v1::CompletionResponse r;
  r.set_model("llama3.1:8b");
  r.mutable_message()->set_role("assistant");
  r.mutable_message()->set_content("I'll check");
  v1::ToolCall* call = r.mutable_message()->add_tool_calls();
  call->set_id("call_1");
  call->set_name("get_weather");
  call->set_arguments(R"({"city":"Paris"})");
  r.set_finish_reason("tool_calls");
  r.mutable_usage()->set_input_tokens(60);
  r.mutable_usage()->set_output_tokens(24);
  return r;
}

TEST(OllamaRender, ChatAnswerHasOllamasShape) {
  EXPECT_EQ(
      RenderResponse(ToolAnswer(), Endpoint::kChat, "ignored", 1700000000),
      R"({"model":"llama3.1:8b","created_at":"2023-11-14T22:13:20Z","message":{"role":"assistant",)"
      R"("content":"I'll check","tool_calls":[{"id":"call_1","function":{"index":0,)"
      R"("name":"get_weather","arguments":{"city":"Paris"}}}]},"done":true,"done_reason":"stop",)"
      R"("total_duration":0,"load_duration":0,"prompt_eval_count":60,"prompt_eval_duration":0,)"
      R"("eval_count":24,"eval_duration":0})");
}

TEST(OllamaRender, GenerateAnswerHasOllamasShape) {
  v1::CompletionResponse r;
  r.mutable_message()->set_content("Rayleigh scattering.");
  r.set_finish_reason("length");
  EXPECT_EQ(RenderResponse(r, Endpoint::kGenerate, "llama3.2", 0),
            R"({"model":"llama3.2","created_at":"1970-01-01T00:00:00Z",)"
            R"("response":"Rayleigh scattering.","done":true,"done_reason":"length",)"
            R"("total_duration":0,"load_duration":0,"prompt_eval_count":0,)"
            R"("prompt_eval_duration":0,"eval_count":0,"eval_duration":0})");
}

TEST(OllamaRender, AnswersRoundTripThroughParseResponse) {
  v1::CompletionResponse answer = ToolAnswer();
  v1::ToolCall* odd = answer.mutable_message()->add_tool_calls();
  odd->set_name("raw");
  odd->set_arguments("not json");  // as another API may have recorded it
  const std::string body = RenderResponse(answer, Endpoint::kChat, "m", 5);
  absl::StatusOr<v1::CompletionResponse> back = ParseResponse(body);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->message().content(), "I'll check");
  ASSERT_EQ(back->message().tool_calls_size(), 2);
  EXPECT_EQ(back->message().tool_calls(0).id(), "call_1");
  EXPECT_EQ(back->message().tool_calls(1).arguments(), R"({"arguments":"not json"})");
  EXPECT_EQ(back->finish_reason(), "tool_calls");
  EXPECT_EQ(back->usage().DebugString(), answer.usage().DebugString());
  EXPECT_EQ(RenderResponse(*back, Endpoint::kChat, "m", 5), body);
  // A recorded Ollama answer parses, renders and parses to the same answer.
  absl::StatusOr<v1::CompletionResponse> recorded = ParseResponse(kChatResponse);
  ASSERT_THAT(recorded, IsOk());
  absl::StatusOr<v1::CompletionResponse> again =
      ParseResponse(RenderResponse(*recorded, Endpoint::kChat, "", 0));
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->DebugString(), recorded->DebugString());
}

TEST(OllamaRender, RecordedStreamsRoundTripLineForLine) {
  for (const auto& [stream, endpoint] :
       {std::pair{kChatStream, Endpoint::kChat}, std::pair{kGenerateStream, Endpoint::kGenerate}}) {
    const Chunks chunks = DecodeNdjson(stream, stream.size());
    StreamShape shape;
    shape.endpoint = endpoint;
    shape.created = 1700000000;
    const std::vector<std::string> lines = RenderStream(chunks, shape);
    ASSERT_EQ(lines.size(), static_cast<size_t>(chunks.size()));
    for (const std::string& line : lines) {
      EXPECT_THAT(line, HasSubstr(R"("created_at":"2023-11-14T22:13:20Z")"));
      EXPECT_EQ(line.back(), '\n');
    }
    const std::string rendered = Join(lines);
    EXPECT_EQ(SplitLines(rendered, 3), lines);
    const Chunks again = DecodeNdjson(rendered, 3);
    ASSERT_EQ(again.size(), chunks.size());
    for (int i = 0; i < chunks.size(); ++i) {
      EXPECT_EQ(again[i].DebugString(), chunks[i].DebugString()) << i;
    }
    EXPECT_EQ(RenderStream(again, shape), lines);  // same inputs, same bytes
  }
}

TEST(OllamaRender, StreamLinesHaveOllamasShape) {
  Chunks chunks;
  chunks.Add()->set_content("Hi");
  v1::CompletionChunk* last = chunks.Add();
  last->set_finish_reason("stop");
  last->mutable_usage()->set_input_tokens(3);
  last->mutable_usage()->set_output_tokens(1);
  StreamShape shape;
  shape.model = "m";
  std::unique_ptr<EventRenderer> renderer = StreamRenderer(chunks, shape);
  std::vector<RenderedEvent> events = RenderAll(*renderer);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].chunk, 0);
  EXPECT_EQ(events[0].text,
            R"({"model":"m","created_at":"1970-01-01T00:00:00Z","message":{"role":"assistant",)"
            R"("content":"Hi"},"done":false})"
            "\n");
  EXPECT_EQ(events[1].chunk, 1);
  EXPECT_EQ(events[1].text,
            R"({"model":"m","created_at":"1970-01-01T00:00:00Z","message":{"role":"assistant",)"
            R"("content":""},"done":true,"done_reason":"stop","total_duration":0,)"
            R"("load_duration":0,"prompt_eval_count":3,"prompt_eval_duration":0,"eval_count":1,)"
            R"("eval_duration":0})"
            "\n");
}

TEST(OllamaRender, ToolCallFragmentsAreJoinedIntoWholeCalls) {
  // As an OpenAI stream records a call: id and name first, arguments after.
  Chunks chunks;
  v1::ToolCallDelta* first = chunks.Add()->add_tool_calls();
  first->set_index(0);
  first->set_id("call_1");
  first->set_name("get_weather");
  first->set_arguments(R"({"city":)");
  chunks.Add()->add_tool_calls()->set_arguments(R"("Paris"})");
  chunks.Add()->set_finish_reason("tool_calls");
  const std::vector<std::string> lines = RenderStream(chunks, StreamShape{});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], Not(HasSubstr("tool_calls")));
  EXPECT_THAT(lines[1], HasSubstr(R"("tool_calls":[{"id":"call_1","function":{"index":0,)"
                                  R"("name":"get_weather","arguments":{"city":"Paris"}}}])"));
  EXPECT_THAT(lines[2], HasSubstr(R"("done":true,"done_reason":"stop")"));
}

TEST(OllamaRender, AnEmptyStreamIsOneDoneLine) {
  const Chunks none;
  StreamShape shape;
  shape.endpoint = Endpoint::kGenerate;
  shape.model = "m";
  std::unique_ptr<EventRenderer> renderer = StreamRenderer(none, shape);
  std::vector<RenderedEvent> events = RenderAll(*renderer);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].chunk, -1);
  EXPECT_THAT(events[0].text, HasSubstr(R"("response":"","done":true,"done_reason":"stop")"));
}

TEST(OllamaRender, AStreamFromARecordedBodySaysWhatTheBodySaid) {
  absl::StatusOr<v1::CompletionResponse> whole = ParseResponse(kGenerateResponse);
  ASSERT_THAT(whole, IsOk());
  Chunks chunks;
  *chunks.Add() = ChunkFromResponse(*whole);
  StreamShape shape;
  shape.endpoint = Endpoint::kGenerate;
  shape.created = 1700000000;
  shape.recorded_body = std::string(kGenerateResponse);
  const std::vector<std::string> lines = RenderStream(chunks, shape);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            R"({"model":"llama3.2","created_at":"2025-06-01T10:00:00Z",)"
            R"("response":"Rayleigh scattering.","done":true,"done_reason":"length",)"
            R"("context":[1,2,3,4],"total_duration":5,"load_duration":1,"prompt_eval_count":26,)"
            R"("prompt_eval_duration":2,"eval_count":5,"eval_duration":2})"
            "\n");
}

TEST(OllamaRender, EmbedAnswerIsDeterministicPseudoEmbeddings) {
  const ParsedRequest parsed = Parse(Endpoint::kEmbed, kEmbedRequest);
  const std::string body = RenderEmbedResponse(parsed.canonical, "nomic-embed-text");
  EXPECT_EQ(RenderEmbedResponse(parsed.canonical, "nomic-embed-text"), body);
  absl::StatusOr<Json> json = ParseJson(body, "body");
  ASSERT_THAT(json, IsOk());
  EXPECT_EQ((*json)["model"], "nomic-embed-text");
  ASSERT_EQ((*json)["embeddings"].size(), 2u);
  ASSERT_EQ((*json)["embeddings"][0].size(), 8u);  // the request's dimensions
  const std::vector<float> expected = embeddings::PseudoEmbedding("a", 8);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(static_cast<float>((*json)["embeddings"][0][i].get<double>()), expected[i]) << i;
  }
  EXPECT_EQ((*json)["prompt_eval_count"], 2);
  EXPECT_THAT(ParseResponse(body), IsOk());

  const ParsedRequest plain = Parse(Endpoint::kEmbed, R"({"model":"all-minilm","input":"x"})");
  absl::StatusOr<Json> small = ParseJson(RenderEmbedResponse(plain.canonical, "all-minilm"), "b");
  ASSERT_THAT(small, IsOk());
  EXPECT_EQ((*small)["embeddings"][0].size(), 384u);
  EXPECT_EQ(DefaultEmbedDimensions("nomic-embed-text:latest"), 768);
  EXPECT_EQ(DefaultEmbedDimensions("mxbai-embed-large"), 1024);
  const ParsedRequest none = Parse(Endpoint::kEmbed, R"({"model":"m"})");
  EXPECT_EQ(RenderEmbedResponse(none.canonical, "m"),
            R"({"model":"m","embeddings":[],"total_duration":0,"load_duration":0,)"
            R"("prompt_eval_count":0})");
}

TEST(OllamaRender, ErrorBodiesAndModelList) {
  EXPECT_EQ(ErrorBody(absl::NotFoundError("model \"x\" not found")),
            R"({"error":"model \"x\" not found"})");
  EXPECT_EQ(ErrorMessage(R"({"error":"model 'x' not found, try pulling it first"})"),
            "model 'x' not found, try pulling it first");
  EXPECT_EQ(ErrorMessage(R"({"error":{"message":"m"}})"), "m");
  EXPECT_EQ(ErrorMessage("Internal Server Error"), "");
  EXPECT_EQ(ErrorMessage(R"({"error":1})"), "");

  const std::string list = ModelList({"llama3.2", "nomic-embed-text"});
  EXPECT_EQ(ModelList({"llama3.2", "nomic-embed-text"}), list);
  absl::StatusOr<Json> json = ParseJson(list, "list");
  ASSERT_THAT(json, IsOk());
  ASSERT_EQ((*json)["models"].size(), 2u);
  const Json& first = (*json)["models"][0];
  EXPECT_EQ(first["name"], "llama3.2");
  EXPECT_EQ(first["model"], "llama3.2");
  EXPECT_EQ(first["modified_at"], "1970-01-01T00:00:00Z");
  EXPECT_EQ(first["size"], 0);
  EXPECT_EQ(first["digest"].get<std::string>().size(), 64u);
  EXPECT_NE(first["digest"], (*json)["models"][1]["digest"]);
  EXPECT_EQ(first["details"]["format"], "gguf");
  EXPECT_EQ(ModelList({}), R"({"models":[]})");
}

TEST(OllamaRender, FinishReasonsBothWays) {
  EXPECT_EQ(FinishReasonFromOllama("stop", false), "stop");
  EXPECT_EQ(FinishReasonFromOllama("stop", true), "tool_calls");
  EXPECT_EQ(FinishReasonFromOllama("length", true), "length");
  EXPECT_EQ(FinishReasonFromOllama("load", false), "load");
  EXPECT_EQ(FinishReasonToOllama("tool_calls"), "stop");
  EXPECT_EQ(FinishReasonToOllama(""), "stop");
  EXPECT_EQ(FinishReasonToOllama("length"), "length");
  EXPECT_EQ(CreatedAt(1700000000), "2023-11-14T22:13:20Z");
}

// ---- The codec ----

const Codec& Ollama() {
  const Codec* codec = CodecRegistry::Builtin().Find("ollama");
  EXPECT_NE(codec, nullptr);
  return *codec;
}

absl::StatusOr<CallRoute> RouteOf(absl::string_view path) {
  return Ollama().Route("POST", path, "");
}

TEST(OllamaCodec, NamesRoutesAndVariables) {
  const Codec& codec = Ollama();
  EXPECT_EQ(codec.name(), "ollama");
  EXPECT_EQ(codec.upstream(), "ollama");
  EXPECT_EQ(codec.BaseUrlVariable(),
            (std::pair<absl::string_view, absl::string_view>("OLLAMA_HOST", "")));
  EXPECT_THAT(codec.routes(), ElementsAre("POST /api/chat", "POST /api/generate", "POST /api/embed",
                                          "GET /api/tags"));
  for (absl::string_view path : {"/api/chat", "/api/generate", "/api/embed", "/api/tags"}) {
    EXPECT_EQ(CodecRegistry::Builtin().ForPath(path), &codec) << path;
  }
  EXPECT_FALSE(codec.Serves("/api/embeddings"));
  EXPECT_FALSE(codec.Serves("/api/show"));
  EXPECT_THAT(codec.IgnoredRequestFields(), ElementsAre("stream", "keep_alive"));
}

TEST(OllamaCodec, TagsListTheRunsModels) {
  const Codec& codec = Ollama();
  absl::StatusOr<CallRoute> tags = codec.Route("GET", "/api/tags", "");
  ASSERT_THAT(tags, IsOk());
  EXPECT_EQ(tags->kind, CallRoute::Kind::kListModels);
  EXPECT_EQ(tags->path, "/api/tags");
  absl::StatusOr<CallRoute> chat = RouteOf("/api/chat");
  ASSERT_THAT(chat, IsOk());
  EXPECT_EQ(chat->kind, CallRoute::Kind::kGenerate);
  EXPECT_EQ(chat->framing, StreamFraming::kNone);  // the body says whether it streams
  EXPECT_THAT(codec.ParseRequest(*tags, "{}"), StatusIs(absl::StatusCode::kNotFound));
}

TEST(OllamaCodec, StreamsAreNdjson) {
  const Codec& codec = Ollama();
  absl::StatusOr<CallRoute> chat = RouteOf("/api/chat");
  ASSERT_THAT(chat, IsOk());
  EXPECT_EQ(codec.StreamContentType(*chat), "application/x-ndjson");
  EXPECT_TRUE(codec.SameForm(*chat, "application/x-ndjson"));
  EXPECT_TRUE(codec.SameForm(*chat, "Application/X-NDJSON; charset=utf-8"));
  EXPECT_FALSE(codec.SameForm(*chat, "application/json; charset=utf-8"));
  EXPECT_FALSE(codec.SameForm(*chat, "text/event-stream"));
  EXPECT_TRUE(IsNdjson(" application/x-ndjson "));
  EXPECT_FALSE(IsNdjson("application/x-ndjsonx"));
}

TEST(OllamaCodec, TheRouteChoosesTheEndpoint) {
  const Codec& codec = Ollama();
  absl::StatusOr<CallRoute> generate = RouteOf("/api/generate");
  ASSERT_THAT(generate, IsOk());
  absl::StatusOr<ParsedRequest> parsed = codec.ParseRequest(*generate, kGenerateRequest);
  ASSERT_THAT(parsed, IsOk());
  EXPECT_EQ(parsed->canonical.operation(), "text_completion");

  // An answer recorded over another API, rendered for each route.
  RenderContext context;
  context.call = &*generate;
  context.parsed = &*parsed;
  context.created = 1700000000;
  v1::CompletionResponse answer;
  answer.mutable_message()->set_content("Blue.");
  absl::StatusOr<std::string> body = codec.RenderBody(answer, context);
  ASSERT_THAT(body, IsOk());
  EXPECT_THAT(*body, HasSubstr(R"({"model":"llama3.2","created_at":"2023-11-14T22:13:20Z",)"
                               R"("response":"Blue.","done":true)"));

  absl::StatusOr<CallRoute> chat = RouteOf("/api/chat");
  ASSERT_THAT(chat, IsOk());
  context.call = &*chat;
  body = codec.RenderBody(answer, context);
  ASSERT_THAT(body, IsOk());
  EXPECT_THAT(*body, HasSubstr(R"("message":{"role":"assistant","content":"Blue."})"));

  Chunks chunks;
  *chunks.Add() = ChunkFromResponse(answer);
  absl::StatusOr<std::unique_ptr<EventRenderer>> renderer = codec.StreamRenderer(chunks, context);
  ASSERT_THAT(renderer, IsOk());
  const std::vector<std::string> lines = RenderAllText(**renderer);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr(R"("model":"llama3.2")"));

  absl::StatusOr<CallRoute> embed = RouteOf("/api/embed");
  ASSERT_THAT(embed, IsOk());
  absl::StatusOr<ParsedRequest> embed_request = codec.ParseRequest(*embed, kEmbedRequest);
  ASSERT_THAT(embed_request, IsOk());
  context.call = &*embed;
  context.parsed = &*embed_request;
  body = codec.RenderBody(v1::CompletionResponse(), context);
  ASSERT_THAT(body, IsOk());
  EXPECT_THAT(*body, HasSubstr(R"({"model":"nomic-embed-text","embeddings":[[)"));
  EXPECT_THAT(codec.StreamRenderer(chunks, context).status(),
              StatusIs(absl::StatusCode::kUnimplemented));
  context.parsed = nullptr;
  EXPECT_THAT(codec.RenderBody(v1::CompletionResponse(), context).status(),
              StatusIs(absl::StatusCode::kInternal));
}

TEST(OllamaCodec, WithoutARouteTheRequestChoosesTheEndpoint) {
  const Codec& codec = Ollama();
  const ParsedRequest generate = Parse(Endpoint::kGenerate, R"({"model":"m","prompt":"p"})");
  RenderContext context;
  context.parsed = &generate;
  v1::CompletionResponse answer;
  answer.mutable_message()->set_content("x");
  absl::StatusOr<std::string> body = codec.RenderBody(answer, context);
  ASSERT_THAT(body, IsOk());
  EXPECT_THAT(*body, HasSubstr(R"("response":"x")"));
  EXPECT_EQ(EndpointOfRequest(v1::CompletionRequest()), Endpoint::kChat);
}

TEST(OllamaCodec, ErrorsTakeOllamasShape) {
  const Codec& codec = Ollama();
  EXPECT_EQ(codec.ErrorBody(absl::InvalidArgumentError("messages: bad"), "some_code"),
            R"({"error":"messages: bad"})");
  EXPECT_EQ(codec.RequestErrorBody(413, "too big"), R"({"error":"too big"})");
  EXPECT_EQ(codec.UpstreamErrorMessage(R"({"error":"model \"x\" not found"})"),
            "model \"x\" not found");
  absl::StatusOr<std::string> list = codec.ModelList({"m"});
  ASSERT_THAT(list, IsOk());
  EXPECT_THAT(*list, HasSubstr(R"({"models":[{"name":"m","model":"m",)"));
}

}  // namespace
}  // namespace ollama
}  // namespace provider
}  // namespace understudy
