#include "provider/gemini.h"

#include <string>
#include <vector>

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
namespace gemini {
namespace {

using fixtures::Chunks;
using fixtures::Join;
using fixtures::Split;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// An agent's third turn as the JS SDK (@google/genai) sends it: the model
// asked for two tools and gets both results back.
constexpr absl::string_view kRequest = R"({
  "contents": [
    {"role": "user", "parts": [{"text": "What is the weather in Paris and in Oslo?"}]},
    {"role": "model", "parts": [
      {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
      {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]},
    {"role": "user", "parts": [
      {"functionResponse": {"name": "get_weather", "response": {"result": "18C, cloudy"}}},
      {"functionResponse": {"name": "get_weather", "response": {"result": "4C, snow"}}}]}
  ],
  "systemInstruction": {"role": "user", "parts": [{"text": "You are the executor. Use tools."}]},
  "tools": [{"functionDeclarations": [{"name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}},
                   "required": ["city"]}}]}],
  "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
  "generationConfig": {"temperature": 0.2, "topP": 0.95, "maxOutputTokens": 512,
                       "stopSequences": ["END"], "seed": 7, "responseMimeType": "text/plain",
                       "thinkingConfig": {"thinkingBudget": 0}},
  "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
  "labels": {"team": "agents"}
})";

// The same request as Google's REST samples spell it (proto field names).
constexpr absl::string_view kSnakeCaseRequest = R"({
  "system_instruction": {"parts": [{"text": "You are the executor. Use tools."}]},
  "contents": [
    {"role": "user", "parts": [{"text": "What is the weather in Paris and in Oslo?"}]},
    {"role": "model", "parts": [
      {"function_call": {"name": "get_weather", "args": {"city": "Paris"}}},
      {"function_call": {"name": "get_weather", "args": {"city": "Oslo"}}}]},
    {"role": "user", "parts": [
      {"function_response": {"name": "get_weather", "response": {"result": "18C, cloudy"}}},
      {"function_response": {"name": "get_weather", "response": {"result": "4C, snow"}}}]}
  ],
  "tools": [{"function_declarations": [{"name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}},
                   "required": ["city"]}}]}],
  "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
  "generation_config": {"temperature": 0.2, "top_p": 0.95, "max_output_tokens": 512,
                        "stop_sequences": ["END"], "seed": 7, "responseMimeType": "text/plain",
                        "thinkingConfig": {"thinkingBudget": 0}},
  "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]
})";

// An answer with text and two function calls, as generateContent sends it
// (Google's spacing; the first call carries a thought signature).
constexpr absl::string_view kResponse =
    R"({"candidates": [{"content": {"parts": [{"text": "I'll check both cities."},)"
    R"({"functionCall": {"name": "get_weather","args": {"city": "Paris"}},)"
    R"("thoughtSignature": "CiQBEU0y"},{"functionCall": {"name": "get_weather",)"
    R"("args": {"city": "Oslo"}}}],"role": "model"},"finishReason": "STOP","index": 0}],)"
    R"("usageMetadata": {"promptTokenCount": 60,"candidatesTokenCount": 41,)"
    R"("totalTokenCount": 106,"thoughtsTokenCount": 5},"modelVersion": "gemini-2.5-flash",)"
    R"("responseId": "r-1"})";

// The same answer streamed: text in two chunks, each call in its own chunk,
// then an empty chunk that finishes with STOP.
const std::vector<std::string>& StreamElements() {
  static const auto* elements = new std::vector<std::string>{
      R"({"candidates": [{"content": {"parts": [{"text": "I'll check"}],"role": "model"},)"
      R"("index": 0}],"usageMetadata": {"promptTokenCount": 60,"totalTokenCount": 65,)"
      R"("thoughtsTokenCount": 5},"modelVersion": "gemini-2.5-flash","responseId": "r-1"})",
      R"({"candidates": [{"content": {"parts": [{"text": " both cities."}],"role": "model"},)"
      R"("index": 0}],"usageMetadata": {"promptTokenCount": 60,"candidatesTokenCount": 5,)"
      R"("totalTokenCount": 70},"modelVersion": "gemini-2.5-flash","responseId": "r-1"})",
      R"({"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_weather",)"
      R"("args": {"city": "Paris"}},"thoughtSignature": "CiQBEU0y"}],"role": "model"},)"
      R"("index": 0}],"usageMetadata": {"promptTokenCount": 60,"candidatesTokenCount": 25,)"
      R"("totalTokenCount": 90},"modelVersion": "gemini-2.5-flash","responseId": "r-1"})",
      R"({"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_weather",)"
      R"("args": {"city": "Oslo"}}}],"role": "model"},"index": 0}],"usageMetadata": )"
      R"({"promptTokenCount": 60,"candidatesTokenCount": 41,"totalTokenCount": 106},)"
      R"("modelVersion": "gemini-2.5-flash","responseId": "r-1"})",
      R"({"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},)"
      R"("finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 60,)"
      R"("candidatesTokenCount": 41,"totalTokenCount": 106,"thoughtsTokenCount": 5},)"
      R"("modelVersion": "gemini-2.5-flash","responseId": "r-1"})",
  };
  return *elements;
}

std::string SseStream() {
  std::string out;
  for (const std::string& e : StreamElements()) out += "data: " + e + "\r\n\r\n";
  return out;
}

std::string JsonArrayStream() {
  std::string out = "[";
  for (size_t i = 0; i < StreamElements().size(); ++i) {
    out += (i == 0 ? "" : "\n,\r\n") + StreamElements()[i];
  }
  return out + "\n]";
}

// The canonical text of a body that must parse.
std::string Canonical(absl::string_view body) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(body, "gemini-2.5-flash");
  EXPECT_THAT(parsed, IsOk());
  return parsed.ok() ? provider::CanonicalText(parsed->canonical) : "";
}

// The canonical request of a body that must parse.
v1::CompletionRequest Parsed(absl::string_view body) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(body, "gemini-2.5-flash");
  EXPECT_THAT(parsed, IsOk());
  return parsed.ok() ? parsed->canonical : v1::CompletionRequest();
}

constexpr char kPartKinds[] =
    "unknown part; expected one of text, inlineData, fileData, functionCall, functionResponse, "
    "executableCode, codeExecutionResult, toolCall, toolResponse";

TEST(GeminiParseRequest, MapsARecordedAgentRequest) {
  absl::StatusOr<ParsedRequest> parsed = ParseRequest(kRequest, "gemini-2.5-flash");
  ASSERT_THAT(parsed, IsOk());
  EXPECT_FALSE(parsed->stream);
  EXPECT_EQ(parsed->stream_framing, StreamFraming::kSse);
  const v1::CompletionRequest& r = parsed->canonical;
  EXPECT_EQ(r.model(), "gemini-2.5-flash");
  ASSERT_EQ(r.messages_size(), 5);
  EXPECT_EQ(r.messages(0).role(), "system");
  EXPECT_EQ(r.messages(0).content(), "You are the executor. Use tools.");
  EXPECT_EQ(r.messages(0).extra(), "");  // the role of a system instruction is ignored
  EXPECT_EQ(r.messages(1).role(), "user");
  EXPECT_EQ(r.messages(1).content(), "What is the weather in Paris and in Oslo?");
  const v1::Message& model = r.messages(2);
  EXPECT_EQ(model.role(), "assistant");
  EXPECT_EQ(model.content(), "");
  EXPECT_EQ(model.extra(), "");
  ASSERT_EQ(model.tool_calls_size(), 2);
  EXPECT_EQ(model.tool_calls(0).id(), "");
  EXPECT_EQ(model.tool_calls(0).name(), "get_weather");
  EXPECT_EQ(model.tool_calls(0).arguments(), R"({"city":"Paris"})");
  EXPECT_EQ(model.tool_calls(1).arguments(), R"({"city":"Oslo"})");
  for (int i : {3, 4}) {
    EXPECT_EQ(r.messages(i).role(), "tool");
    EXPECT_EQ(r.messages(i).name(), "get_weather");
    EXPECT_EQ(r.messages(i).tool_call_id(), "");
    EXPECT_EQ(r.messages(i).extra(), "");
  }
  EXPECT_EQ(r.messages(3).content(), R"({"result":"18C, cloudy"})");
  EXPECT_EQ(r.messages(4).content(), R"({"result":"4C, snow"})");
  ASSERT_EQ(r.tools_size(), 1);
  EXPECT_EQ(r.tools(0).name(), "get_weather");
  EXPECT_EQ(r.tools(0).description(), "Current weather for a city.");
  EXPECT_EQ(r.tools(0).parameters(),
            R"({"type":"OBJECT","properties":{"city":{"type":"STRING"}},"required":["city"]})");
  EXPECT_DOUBLE_EQ(r.params().temperature(), 0.2);
  EXPECT_DOUBLE_EQ(r.params().top_p(), 0.95);
  EXPECT_EQ(r.params().max_tokens(), 512);
  EXPECT_EQ(r.params().seed(), 7);
  EXPECT_THAT(r.params().stop(), ElementsAre("END"));
  EXPECT_EQ(
      r.extra(),
      R"({"generationConfig":{"responseMimeType":"text/plain","thinkingConfig":)"
      R"({"thinkingBudget":0}},"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}},)"
      R"("safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]})");
}

TEST(GeminiParseRequest, ProtoFieldNamesMeanTheSame) {
  EXPECT_EQ(Canonical(kSnakeCaseRequest), Canonical(kRequest));
}

TEST(GeminiParseRequest, IgnoredFieldsAreIgnoredOthersMatter) {
  EXPECT_THAT(kIgnoredRequestFields, ElementsAre("labels"));
  Json body = Json::parse(kRequest);
  body["labels"] = Json::parse(R"({"team":"other"})");
  EXPECT_EQ(Canonical(DumpJson(body)), Canonical(kRequest));
  body["cachedContent"] = "cachedContents/abc";
  EXPECT_NE(Canonical(DumpJson(body)), Canonical(kRequest));
  EXPECT_THAT(Parsed(DumpJson(body)).extra(), HasSubstr(R"("cachedContent":"cachedContents/abc")"));
}

TEST(GeminiParseRequest, KeyOrderAndNullsDoNotMatter) {
  EXPECT_EQ(Canonical(R"({"contents":[{"parts":[{"text":"hi"}],"role":"user"}],)"
                      R"("generationConfig":{"topP":1,"temperature":0},"toolConfig":null})"),
            Canonical(R"({"generationConfig":{"temperature":0,"topP":1},)"
                      R"("contents":[{"role":"user","parts":[{"text":"hi"}]}]})"));
}

TEST(GeminiParseRequest, SystemInstructionAsStringOrContent) {
  const std::string plain =
      Canonical(R"({"contents":[],"systemInstruction":{"parts":[{"text":"Be brief."}]}})");
  EXPECT_EQ(Canonical(R"({"contents":[],"systemInstruction":"Be brief."})"), plain);
  EXPECT_EQ(
      Canonical(
          R"({"contents":[],"system_instruction":{"role":"system","parts":[{"text":"Be brief."}]}})"),
      plain);
  v1::CompletionRequest r =
      Parsed(R"({"contents":[],"systemInstruction":{"parts":[{"text":"Be "},{"text":"brief."}]}})");
  ASSERT_EQ(r.messages_size(), 1);
  EXPECT_EQ(r.messages(0).role(), "system");
  EXPECT_EQ(r.messages(0).content(), "Be brief.");
  EXPECT_EQ(r.messages(0).extra(), R"({"parts":[{"text":"Be "},{"text":"brief."}]})");
}

TEST(GeminiParseRequest, EveryPartKindIsMappedOrKept) {
  v1::CompletionRequest r = Parsed(R"j({"contents":[
    {"role":"user","parts":[{"text":"Look at this:"},
      {"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}},
      {"fileData":{"mimeType":"application/pdf","fileUri":"files/abc"}}]},
    {"role":"model","parts":[{"text":"Let me think.","thought":true},{"text":"Running code."},
      {"executableCode":{"language":"PYTHON","code":"print(1)"}},
      {"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"1\n"}},
      {"functionCall":{"name":"f","id":"c1"},"thoughtSignature":"c2ln"}]}]})j");
  ASSERT_EQ(r.messages_size(), 2);
  EXPECT_EQ(r.messages(0).role(), "user");
  EXPECT_EQ(r.messages(0).content(), "Look at this:");
  EXPECT_EQ(r.messages(0).extra(),
            R"({"parts":[{"text":"Look at this:"},{"inlineData":{"mimeType":"image/png",)"
            R"("data":"iVBORw0KGgo="}},{"fileData":{"mimeType":"application/pdf",)"
            R"("fileUri":"files/abc"}}]})");
  const v1::Message& model = r.messages(1);
  EXPECT_EQ(model.role(), "assistant");
  EXPECT_EQ(model.content(), "Running code.");  // thoughts are not content
  ASSERT_EQ(model.tool_calls_size(), 1);
  EXPECT_EQ(model.tool_calls(0).id(), "c1");
  EXPECT_EQ(model.tool_calls(0).arguments(), "{}");  // no args
  EXPECT_EQ(model.extra(),
            R"({"parts":[{"text":"Let me think.","thought":true},{"text":"Running code."},)"
            R"j({"executableCode":{"language":"PYTHON","code":"print(1)"}},)j"
            R"({"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"1\n"}},)"
            R"({"functionCall":{"name":"f","id":"c1"},"thoughtSignature":"c2ln"}]})");
}

TEST(GeminiParseRequest, OnlyTextThenCallsIsExact) {
  EXPECT_EQ(Parsed(R"({"contents":[{"role":"model","parts":[{"text":"Sure."},)"
                   R"({"functionCall":{"name":"f","args":{"a":1}}}]}]})")
                .messages(0)
                .extra(),
            "");
  // A call before the text, or two text parts, cannot be told apart in the
  // canonical message: the parts are kept.
  EXPECT_EQ(Parsed(R"({"contents":[{"role":"model","parts":[)"
                   R"({"functionCall":{"name":"f","args":{"a":1}}},{"text":"Sure."}]}]})")
                .messages(0)
                .extra(),
            R"({"parts":[{"functionCall":{"name":"f","args":{"a":1}}},{"text":"Sure."}]})");
  EXPECT_EQ(Parsed(R"({"contents":[{"parts":[{"text":"a"},{"text":"b"}]}]})").messages(0).extra(),
            R"({"parts":[{"text":"a"},{"text":"b"}]})");
}

TEST(GeminiParseRequest, FunctionResponsesBecomeOneToolMessageEach) {
  v1::CompletionRequest r = Parsed(R"({"contents":[{"role":"user","parts":[
    {"functionResponse":{"name":"f","id":"c1","response":{"ok":true}}},
    {"text":"Also, hurry."},
    {"functionResponse":{"name":"g","id":"c2"}}], "cacheHint":1}]})");
  ASSERT_EQ(r.messages_size(), 3);
  EXPECT_EQ(r.messages(0).role(), "tool");
  EXPECT_EQ(r.messages(0).name(), "f");
  EXPECT_EQ(r.messages(0).tool_call_id(), "c1");
  EXPECT_EQ(r.messages(0).content(), R"({"ok":true})");
  // Mixed with other parts: all of them in the first message's extra.
  EXPECT_EQ(
      r.messages(0).extra(),
      R"({"parts":[{"functionResponse":{"name":"f","id":"c1","response":{"ok":true}}},)"
      R"({"text":"Also, hurry."},{"functionResponse":{"name":"g","id":"c2"}}],"cacheHint":1})");
  EXPECT_EQ(r.messages(1).role(), "tool");
  EXPECT_EQ(r.messages(1).tool_call_id(), "c2");
  EXPECT_EQ(r.messages(1).content(), "");
  EXPECT_EQ(r.messages(1).extra(), "");
  EXPECT_EQ(r.messages(2).role(), "user");
  EXPECT_EQ(r.messages(2).content(), "Also, hurry.");
  EXPECT_EQ(r.messages(2).extra(), "");
}

TEST(GeminiParseRequest, FunctionRoleIsKeptInExtra) {
  v1::CompletionRequest r = Parsed(R"({"contents":[{"role":"function","parts":[)"
                                   R"({"functionResponse":{"name":"f","response":{"x":1}}}]}]})");
  ASSERT_EQ(r.messages_size(), 1);
  EXPECT_EQ(r.messages(0).role(), "tool");
  EXPECT_EQ(r.messages(0).extra(), R"({"role":"function"})");
}

TEST(GeminiParseRequest, OtherToolsKeepTheWholeToolsArray) {
  v1::CompletionRequest r = Parsed(R"({"contents":[],"tools":[
    {"functionDeclarations":[{"name":"a","parametersJsonSchema":{"type":"object"}}]},
    {"googleSearch":{}}]})");
  ASSERT_EQ(r.tools_size(), 1);
  EXPECT_EQ(r.tools(0).name(), "a");
  EXPECT_EQ(r.tools(0).parameters(), R"({"type":"object"})");
  EXPECT_EQ(r.extra(), R"({"tools":[{"functionDeclarations":[{"name":"a","parametersJsonSchema":)"
                       R"({"type":"object"}}]},{"googleSearch":{}}]})");
  // parametersJsonSchema alone is exact: it is the parameters.
  EXPECT_EQ(Parsed(R"({"contents":[],"tools":[{"functionDeclarations":[)"
                   R"({"name":"a","parametersJsonSchema":{"type":"object"}}]}]})")
                .extra(),
            "");
  EXPECT_EQ(Parsed(R"({"contents":[],"tools":[{"functionDeclarations":[)"
                   R"({"name":"a","behavior":"NON_BLOCKING"}]}]})")
                .extra(),
            R"({"tools":[{"functionDeclarations":[{"name":"a","behavior":"NON_BLOCKING"}]}]})");
}

TEST(GeminiParseRequest, GenerationConfigKeepsOnlyUnmappedMembers) {
  v1::CompletionRequest r = Parsed(R"({"contents":[],"generationConfig":{"topK":40,)"
                                   R"("maxOutputTokens":100,"candidateCount":1}})");
  EXPECT_EQ(r.params().max_tokens(), 100);
  EXPECT_EQ(r.extra(), R"({"generationConfig":{"topK":40,"candidateCount":1}})");
  r = Parsed(R"({"contents":[],"generationConfig":{"temperature":1}})");
  EXPECT_EQ(r.extra(), "");
  EXPECT_TRUE(r.params().has_temperature());
  EXPECT_FALSE(r.params().has_top_p());
}

TEST(GeminiParseRequest, BadFieldsAreNamedWithTheirPath) {
  struct Case {
    std::string body;
    std::string message;
  };
  const std::string kinds = kPartKinds;
  const Case cases[] = {
      {R"({"contents":[{"parts":[{"text":"a"}]},{"parts":[{"bogus":1}]}]})",
       "contents[1].parts[0]: " + kinds},
      {R"({"contents":[],"system_instruction":{"parts":[{"thought_x":1}]}})",
       "system_instruction.parts[0]: " + kinds},
      {R"({})", "contents: missing; expected an array of contents"},
      {R"({"contents":{}})", "contents: expected an array of contents, got object"},
      {R"({"contents":["hi"]})", "contents[0]: expected a content object, got string"},
      {R"({"contents":[{"role":"system","parts":[]}]})",
       R"(contents[0].role: expected "user", "model" or "function", got "system")"},
      {R"({"contents":[{"role":1}]})", "contents[0].role: expected a string, got number"},
      {R"({"contents":[{"parts":{"text":"a"}}]})",
       "contents[0].parts: expected an array of parts, got object"},
      {R"({"contents":[{"parts":["a"]}]})",
       "contents[0].parts[0]: expected a part object, got string"},
      {R"({"contents":[{"parts":[{"text":5}]}]})",
       "contents[0].parts[0].text: expected a string, got number"},
      {R"({"contents":[{"parts":[{"text":"a","thought":"yes"}]}]})",
       "contents[0].parts[0].thought: expected a boolean, got string"},
      {R"({"contents":[{"parts":[{"functionCall":{"args":{}}}]}]})",
       "contents[0].parts[0].functionCall.name: missing; expected a string"},
      {R"({"contents":[{"parts":[{"functionCall":{"name":"f","args":"{}"}}]}]})",
       "contents[0].parts[0].functionCall.args: expected an object, got string"},
      {R"({"contents":[{"parts":[{"function_response":{"name":"f","response":[1]}}]}]})",
       "contents[0].parts[0].function_response.response: expected an object, got array"},
      {R"({"contents":[],"systemInstruction":5})",
       "systemInstruction: expected a content object or a string, got number"},
      {R"({"contents":[],"tools":{}})", "tools: expected an array of tools, got object"},
      {R"({"contents":[],"tools":[{"functionDeclarations":[{"description":"d"}]}]})",
       "tools[0].functionDeclarations[0].name: missing; expected a string"},
      {R"({"contents":[],"tools":[{"function_declarations":{}}]})",
       "tools[0].function_declarations: expected an array of function declarations, got object"},
      {R"({"contents":[],"generationConfig":[]})",
       "generationConfig: expected an object, got array"},
      {R"({"contents":[],"generationConfig":{"maxOutputTokens":1.5}})",
       "generationConfig.maxOutputTokens: expected an integer, got number 1.5"},
      {R"({"contents":[],"generation_config":{"top_p":"high"}})",
       "generation_config.top_p: expected a number, got string"},
      {R"({"contents":[],"generationConfig":{"stopSequences":"END"}})",
       "generationConfig.stopSequences: expected an array of strings, got string"},
      {R"({"contents":[],"generationConfig":{"stopSequences":["a",1]}})",
       "generationConfig.stopSequences[1]: expected a string, got number"},
      {R"({"contents":[],"generationConfig":{"topP":1,"top_p":1}})",
       "generationConfig.top_p: given twice, also as topP"},
      {R"({"contents":[],"systemInstruction":"a","system_instruction":"b"})",
       "system_instruction: given twice, also as systemInstruction"},
      {R"([1])", "body: expected a JSON object, got array"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseRequest(c.body, "m"), StatusIs(absl::StatusCode::kInvalidArgument, c.message))
        << c.body;
  }
}

TEST(GeminiParseRequest, HostileBodiesFailCleanly) {
  const std::string deep =
      R"({"contents":[],"x":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_THAT(ParseRequest(deep, "m"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("body: JSON nested deeper than 256 levels")));
  EXPECT_THAT(ParseRequest("{\"contents\":[{\"parts\":[{\"text\":\"\xC3\x28\"}]}]}", "m"),
              StatusIs(absl::StatusCode::kInvalidArgument, "body: invalid UTF-8 at byte 32"));
  EXPECT_THAT(ParseRequest(R"({"contents": oops})", "m"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("body: invalid JSON at byte 13: syntax error")));
  EXPECT_THAT(ParseRequest("", "m"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("body: invalid JSON")));
}

TEST(GeminiParseResponse, MapsTextFunctionCallsAndUsage) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kResponse);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->id(), "r-1");
  EXPECT_EQ(r->model(), "gemini-2.5-flash");
  EXPECT_EQ(r->message().role(), "assistant");
  EXPECT_EQ(r->message().content(), "I'll check both cities.");
  ASSERT_EQ(r->message().tool_calls_size(), 2);
  EXPECT_EQ(r->message().tool_calls(0).id(), "");
  EXPECT_EQ(r->message().tool_calls(0).name(), "get_weather");
  EXPECT_EQ(r->message().tool_calls(0).arguments(), R"({"city":"Paris"})");
  EXPECT_EQ(r->message().tool_calls(1).arguments(), R"({"city":"Oslo"})");
  EXPECT_EQ(r->finish_reason(), "tool_calls");  // Gemini says STOP
  EXPECT_EQ(r->usage().input_tokens(), 60);
  EXPECT_EQ(r->usage().output_tokens(), 41);
}

TEST(GeminiParseResponse, FinishReasonsAndThoughts) {
  const auto reason = [](absl::string_view finish) {
    absl::StatusOr<v1::CompletionResponse> r = ParseResponse(
        absl::StrCat(R"({"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":")",
                     finish, R"("}]})"));
    EXPECT_THAT(r, IsOk());
    return r.ok() ? r->finish_reason() : "";
  };
  EXPECT_EQ(reason("STOP"), "stop");
  EXPECT_EQ(reason("MAX_TOKENS"), "length");
  for (absl::string_view filtered :
       {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII"}) {
    EXPECT_EQ(reason(filtered), "content_filter") << filtered;
  }
  EXPECT_EQ(reason("MALFORMED_FUNCTION_CALL"), "malformed_function_call");
  EXPECT_EQ(FinishReasonToGemini("malformed_function_call"), "MALFORMED_FUNCTION_CALL");

  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(
      R"({"candidates":[{"content":{"parts":[{"text":"hmm","thought":true},{"text":"Hi"}]},)"
      R"("index":0}]})");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->message().content(), "Hi");
  EXPECT_EQ(r->finish_reason(), "");
  EXPECT_FALSE(r->has_usage());
  // Only candidate 0 counts.
  r = ParseResponse(R"({"candidates":[{"index":1,"content":{"parts":[{"text":"B"}]}},)"
                    R"({"index":0,"content":{"parts":[{"text":"A"}]}}]})");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->message().content(), "A");
}

TEST(GeminiParseResponse, BlockedPromptIsAContentFilterAnswer) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(
      R"({"promptFeedback": {"blockReason": "SAFETY","safetyRatings": []},)"
      R"("usageMetadata": {"promptTokenCount": 8,"totalTokenCount": 8},"modelVersion": "g"})");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->finish_reason(), "content_filter");
  EXPECT_EQ(r->message().role(), "assistant");
  EXPECT_EQ(r->message().content(), "");
  EXPECT_EQ(r->usage().input_tokens(), 8);
}

TEST(GeminiParseResponse, MalformedBodiesNameTheField) {
  EXPECT_THAT(ParseResponse(R"({"error":{"code":400,"message":"bad"}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "candidates: missing; expected a non-empty array of candidates"));
  EXPECT_THAT(ParseResponse(R"({"candidates":[]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "candidates: expected a candidate with index 0, got none"));
  EXPECT_THAT(ParseResponse(R"({"candidates":[{"content":{"parts":[{"text":1}]}}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "candidates[0].content.parts[0].text: expected a string, got number"));
  EXPECT_THAT(ParseResponse(R"({"candidates":[{"finishReason":3}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "candidates[0].finishReason: expected a string, got number"));
  EXPECT_THAT(ParseResponse(R"({"candidates":[{}],"usageMetadata":{"promptTokenCount":"1"}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "usageMetadata.promptTokenCount: expected an integer, got string"));
}

TEST(GeminiStreamDecoder, SseStreamAssemblesToTheWholeAnswer) {
  Chunks chunks = fixtures::DecodeStream<StreamDecoder>(SseStream());
  ASSERT_EQ(chunks.size(), 5);
  EXPECT_EQ(chunks[0].content(), "I'll check");
  EXPECT_EQ(chunks[0].id(), "r-1");
  EXPECT_EQ(chunks[0].model(), "gemini-2.5-flash");
  EXPECT_EQ(chunks[0].usage().input_tokens(), 60);
  ASSERT_EQ(chunks[2].tool_calls_size(), 1);
  EXPECT_EQ(chunks[2].tool_calls(0).index(), 0);
  EXPECT_EQ(chunks[2].tool_calls(0).name(), "get_weather");
  EXPECT_EQ(chunks[2].tool_calls(0).arguments(), R"({"city":"Paris"})");
  ASSERT_EQ(chunks[3].tool_calls_size(), 1);
  EXPECT_EQ(chunks[3].tool_calls(0).index(), 1);
  EXPECT_EQ(chunks[3].finish_reason(), "");
  EXPECT_EQ(chunks[4].finish_reason(), "tool_calls");  // STOP after calls

  absl::StatusOr<v1::CompletionResponse> whole = ParseResponse(kResponse);
  ASSERT_THAT(whole, IsOk());
  EXPECT_EQ(provider::AssembleResponse(chunks).DebugString(), whole->DebugString());
}

TEST(GeminiStreamDecoder, DoneAfterTheFinishingChunk) {
  StreamDecoder decoder;
  SseEvent e;
  e.data = StreamElements()[0];
  ASSERT_THAT(decoder.Decode(e), IsOk());
  EXPECT_FALSE(decoder.done());
  e.data = StreamElements()[4];
  absl::StatusOr<std::optional<v1::CompletionChunk>> last = decoder.Decode(e);
  ASSERT_THAT(last, IsOk());
  EXPECT_EQ((*last)->finish_reason(), "stop");  // this decoder saw no call
  EXPECT_TRUE(decoder.done());
}

TEST(GeminiStreamDecoder, JsonArrayStreamDecodesLikeTheSseStream) {
  const Chunks sse = fixtures::DecodeStream<StreamDecoder>(SseStream());
  const std::string array = JsonArrayStream();
  for (size_t piece : {size_t{1}, size_t{7}, array.size()}) {
    std::vector<std::string> segments = Split(array, piece);
    ASSERT_EQ(segments.size(), 6u);
    EXPECT_EQ(segments.back(), "\n]");
    StreamDecoder decoder;
    Chunks chunks;
    for (size_t i = 0; i + 1 < segments.size(); ++i) {
      absl::StatusOr<std::optional<v1::CompletionChunk>> c =
          decoder.DecodeElement(ElementJson(segments[i]));
      ASSERT_THAT(c, IsOk());
      *chunks.Add() = **c;
    }
    EXPECT_TRUE(decoder.done());
    ASSERT_EQ(chunks.size(), sse.size());
    for (int i = 0; i < chunks.size(); ++i) {
      EXPECT_EQ(chunks[i].DebugString(), sse[i].DebugString()) << i;
    }
  }
}

TEST(GeminiStreamDecoder, ErrorObjectInTheStreamBecomesAStatus) {
  StreamDecoder decoder;
  SseEvent e;
  e.data =
      R"({"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}})";
  EXPECT_THAT(decoder.Decode(e),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "upstream stream error (RESOURCE_EXHAUSTED): Resource has been exhausted "
                       "(e.g. check quota)."));
  EXPECT_THAT(
      decoder.DecodeElement(R"({"error":{"code":503,"message":"overloaded"}})"),
      StatusIs(absl::StatusCode::kUnavailable, "upstream stream error (no status): overloaded"));
}

TEST(GeminiStreamDecoder, MalformedChunksNameTheField) {
  StreamDecoder decoder;
  SseEvent e;
  e.data = R"({"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":[1]}}]}}]})";
  EXPECT_THAT(decoder.Decode(e),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "data.candidates[0].content.parts[0].functionCall.args: expected an "
                       "object, got array"));
  e.data = R"({"candidates":{}})";
  EXPECT_THAT(decoder.Decode(e),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "data.candidates: expected an array of candidates, got object"));
  e.data = "not json";
  EXPECT_THAT(decoder.Decode(e), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("data: invalid JSON at byte 1")));
  EXPECT_THAT(decoder.DecodeElement("[1]"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "element: expected a GenerateContentResponse object, got array"));
  // A chunk without candidates (usage only) is a chunk.
  absl::StatusOr<std::optional<v1::CompletionChunk>> c =
      decoder.DecodeElement(R"({"usageMetadata":{"promptTokenCount":3}})");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ((*c)->usage().input_tokens(), 3);
}

TEST(GeminiRender, ResponseHasGeminisShape) {
  v1::CompletionResponse r;
  r.set_id("r-1");
  r.set_model("gemini-2.5-flash");
  r.mutable_message()->set_content("Hi");
  v1::ToolCall* call = r.mutable_message()->add_tool_calls();
  call->set_name("get_weather");
  call->set_arguments(R"({"city": "Paris", "units": "C"})");
  call = r.mutable_message()->add_tool_calls();
  call->set_id("call_2");
  call->set_name("f");
  call->set_arguments("not json");
  r.set_finish_reason("tool_calls");
  r.mutable_usage()->set_input_tokens(3);
  r.mutable_usage()->set_output_tokens(4);
  EXPECT_EQ(RenderResponse(r, "ignored-when-the-response-has-one"),
            R"({"candidates":[{"content":{"parts":[{"text":"Hi"},{"functionCall":)"
            R"({"name":"get_weather","args":{"city":"Paris","units":"C"}}},{"functionCall":)"
            R"({"id":"call_2","name":"f","args":{"arguments":"not json"}}}],"role":"model"},)"
            R"("finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,)"
            R"("candidatesTokenCount":4,"totalTokenCount":7},"modelVersion":"gemini-2.5-flash",)"
            R"("responseId":"r-1"})");
}

TEST(GeminiRender, EmptyResponseIsOneEmptyTextPartThatStops) {
  EXPECT_EQ(RenderResponse(v1::CompletionResponse(), "gemini-2.0-flash"),
            R"({"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},)"
            R"("finishReason":"STOP","index":0}],"modelVersion":"gemini-2.0-flash"})");
  v1::CompletionResponse r;
  r.set_finish_reason("length");
  EXPECT_THAT(RenderResponse(r, ""), HasSubstr(R"("finishReason":"MAX_TOKENS")"));
  r.set_finish_reason("content_filter");
  EXPECT_THAT(RenderResponse(r, ""), HasSubstr(R"("finishReason":"SAFETY")"));
}

TEST(GeminiRender, ResponseRoundTripsThroughParseResponse) {
  absl::StatusOr<v1::CompletionResponse> r = ParseResponse(kResponse);
  ASSERT_THAT(r, IsOk());
  const std::string rendered = RenderResponse(*r, "");
  absl::StatusOr<v1::CompletionResponse> back = ParseResponse(rendered);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->DebugString(), r->DebugString());
  EXPECT_EQ(RenderResponse(*back, ""), rendered);
}

Chunks SmallStream() {
  Chunks chunks;
  v1::CompletionChunk* c = chunks.Add();
  c->set_id("r1");
  c->set_model("m");
  c->set_content("Hel");
  chunks.Add()->set_content("lo");
  c = chunks.Add();
  v1::ToolCallDelta* d = c->add_tool_calls();
  d->set_name("f");
  d->set_arguments(R"({"a":1})");
  c->set_finish_reason("tool_calls");
  c->mutable_usage()->set_input_tokens(3);
  c->mutable_usage()->set_output_tokens(2);
  return chunks;
}

TEST(GeminiRender, SseStreamHasOneCrlfEventPerChunk) {
  const std::string text = R"({"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"},)"
                           R"("index":0}],"modelVersion":"m","responseId":"r1"})";
  const std::string lo = R"({"candidates":[{"content":{"parts":[{"text":"lo"}],"role":"model"},)"
                         R"("index":0}],"modelVersion":"m","responseId":"r1"})";
  const std::string call =
      R"({"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":1}}}],)"
      R"("role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":)"
      R"({"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5},)"
      R"("modelVersion":"m","responseId":"r1"})";
  EXPECT_THAT(RenderStream(SmallStream(), "x", /*sse=*/true),
              ElementsAre("data: " + text + "\r\n\r\n", "data: " + lo + "\r\n\r\n",
                          "data: " + call + "\r\n\r\n"));
  EXPECT_THAT(RenderStream(SmallStream(), "x", /*sse=*/false),
              ElementsAre("[" + text, "\n,\r\n" + lo, "\n,\r\n" + call, "\n]"));

  const Chunks decoded =
      fixtures::DecodeStream<StreamDecoder>(Join(RenderStream(SmallStream(), "x", true)));
  EXPECT_EQ(provider::AssembleResponse(decoded).DebugString(),
            provider::AssembleResponse(SmallStream()).DebugString());
}

TEST(GeminiRender, RecordedStreamsRoundTripBothWays) {
  const Chunks recorded = fixtures::DecodeStream<StreamDecoder>(SseStream());
  for (bool sse : {true, false}) {
    const std::vector<std::string> events = RenderStream(recorded, "", sse);
    ASSERT_EQ(events.size(), recorded.size() + (sse ? 0 : 1));
    Chunks replayed;
    if (sse) {
      replayed = fixtures::DecodeStream<StreamDecoder>(Join(events));
    } else {
      const std::vector<std::string> segments = Split(Join(events), 3);
      // The splitter finds the boundaries the renderer made.
      EXPECT_EQ(segments, events);
      StreamDecoder decoder;
      for (size_t i = 0; i + 1 < segments.size(); ++i) {
        auto chunk = decoder.DecodeElement(ElementJson(segments[i]));
        ASSERT_THAT(chunk, IsOk());
        *replayed.Add() = **chunk;
      }
    }
    ASSERT_EQ(replayed.size(), recorded.size());
    for (int i = 0; i < recorded.size(); ++i) {
      EXPECT_EQ(replayed[i].DebugString(), recorded[i].DebugString()) << sse << i;
    }
    EXPECT_EQ(RenderStream(replayed, "", sse), events);
  }
}

TEST(GeminiRender, ToolCallFragmentsAreJoinedIntoWholeCalls) {
  const Chunks openai = fixtures::DecodeOpenAiStream(fixtures::kOpenAiParallelStream);
  const std::vector<std::string> events = RenderStream(openai, "", true);
  ASSERT_EQ(events.size(), static_cast<size_t>(openai.size()));
  // Both calls end in the chunk where their last fragments are (4).
  EXPECT_THAT(events[4],
              HasSubstr(R"("parts":[{"functionCall":{"id":"call_paris","name":"get_weather",)"
                        R"("args":{"city":"Paris"}}},{"functionCall":{"id":"call_oslo",)"
                        R"("name":"get_weather","args":{"city":"Oslo"}}}])"));
  const v1::CompletionResponse r =
      provider::AssembleResponse(fixtures::DecodeStream<StreamDecoder>(Join(events)));
  ASSERT_EQ(r.message().tool_calls_size(), 2);
  EXPECT_EQ(r.message().tool_calls(0).id(), "call_paris");
  EXPECT_EQ(r.message().tool_calls(1).arguments(), R"({"city":"Oslo"})");
  EXPECT_EQ(r.finish_reason(), "tool_calls");
  EXPECT_EQ(r.usage().input_tokens(), 82);
  EXPECT_EQ(r.id(), "chatcmpl-P1");
}

TEST(GeminiRender, EmptyStreamIsOneFinishedEmptyAnswer) {
  const std::string empty = R"({"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},)"
                            R"("finishReason":"STOP","index":0}],"modelVersion":"g"})";
  EXPECT_THAT(RenderStream(Chunks(), "g", true), ElementsAre("data: " + empty + "\r\n\r\n"));
  EXPECT_THAT(RenderStream(Chunks(), "g", false), ElementsAre("[" + empty, "\n]"));
}

TEST(GeminiError, ErrorBodyHasGooglesShape) {
  EXPECT_EQ(ErrorBody(absl::ResourceExhaustedError("Quota exceeded")),
            R"({"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}})");
  EXPECT_EQ(ErrorBody(absl::NotFoundError("no recording matches \"x\"")),
            R"({"error":{"code":404,"message":"no recording matches \"x\"",)"
            R"("status":"NOT_FOUND"}})");
  EXPECT_EQ(ErrorBody(absl::InvalidArgumentError("contents: missing")),
            R"({"error":{"code":400,"message":"contents: missing","status":"INVALID_ARGUMENT"}})");
}

TEST(GeminiError, StatusNamesRoundTrip) {
  for (int code = 0; code <= 16; ++code) {
    const auto c = static_cast<absl::StatusCode>(code);
    EXPECT_EQ(CodeFromStatusName(absl::StatusCodeToString(c)), c) << code;
  }
  EXPECT_EQ(CodeFromStatusName("RESOURCE_EXHAUSTED"), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CodeFromStatusName("resource_exhausted"), absl::StatusCode::kUnknown);
  EXPECT_EQ(CodeFromStatusName(""), absl::StatusCode::kUnknown);
}

}  // namespace
}  // namespace gemini
}  // namespace provider
}  // namespace understudy
