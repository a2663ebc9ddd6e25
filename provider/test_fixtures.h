// Recorded-style provider traffic and small helpers shared by the provider
// tests. The bodies follow what the official SDKs send and what the APIs
// answer (ids shortened), including their key order and null fields.
#ifndef UNDERSTUDY_PROVIDER_TEST_FIXTURES_H_
#define UNDERSTUDY_PROVIDER_TEST_FIXTURES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_field.h"
#include "gtest/gtest.h"
#include "provider/anthropic.h"
#include "provider/json_array_stream.h"
#include "provider/openai.h"
#include "provider/sse.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace provider {
namespace fixtures {

// An agent's third turn: it asked for two tools in parallel and sends back
// both results. Streamed, with usage.
inline constexpr absl::string_view kOpenAiRequest = R"({
  "messages": [
    {"role": "system", "content": "You are the executor. Use tools."},
    {"role": "user", "content": "What is the weather in Paris and in Oslo?"},
    {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
      {"id": "call_paris", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
      {"id": "call_oslo", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "call_paris", "content": "18C, cloudy"},
    {"role": "tool", "tool_call_id": "call_oslo", "content": [{"type": "text", "text": "4C, snow"}]}
  ],
  "model": "gpt-4o-2024-08-06",
  "max_completion_tokens": 512,
  "parallel_tool_calls": true,
  "seed": 7,
  "stop": ["END"],
  "stream": true,
  "stream_options": {"include_usage": true},
  "temperature": 0.2,
  "tool_choice": "auto",
  "tools": [{"type": "function", "function": {"name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}],
  "top_p": 1,
  "user": "user-1234",
  "metadata": {"trace": "abc"}
})";

inline constexpr absl::string_view kOpenAiResponse = R"({
  "id": "chatcmpl-A1b2C3",
  "object": "chat.completion",
  "created": 1727000000,
  "model": "gpt-4o-2024-08-06",
  "choices": [{
    "index": 0,
    "message": {
      "role": "assistant",
      "content": null,
      "tool_calls": [
        {"id": "call_paris", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
        {"id": "call_oslo", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}],
      "refusal": null
    },
    "logprobs": null,
    "finish_reason": "tool_calls"
  }],
  "usage": {"prompt_tokens": 82, "completion_tokens": 40, "total_tokens": 122,
            "prompt_tokens_details": {"cached_tokens": 0}},
  "system_fingerprint": "fp_abc"
})";

// Two parallel tool calls whose fragments interleave, then the finish
// chunk, the usage chunk and [DONE].
inline constexpr absl::string_view kOpenAiParallelStream =
    "data: {\"id\":\"chatcmpl-P1\",\"object\":\"chat.completion.chunk\",\"created\":1727000001,"
    "\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_abc\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"role\":\"assistant\",\"content\":null,\"refusal\":null},\"logprobs\":null,"
    "\"finish_reason\":null}],\"usage\":null}\n\n"
    "data: {\"id\":\"chatcmpl-P1\",\"object\":\"chat.completion.chunk\",\"created\":1727000001,"
    "\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{"
    "\"index\":0,"
    "\"id\":\"call_paris\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
    "\"arguments\":\"\"}}]},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n"
    "data: {\"id\":\"chatcmpl-P1\",\"object\":\"chat.completion.chunk\",\"created\":1727000001,"
    "\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{"
    "\"index\":1,"
    "\"id\":\"call_oslo\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
    "\"arguments\":\"{\\\"ci\"}}]},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n"
    "data: {\"id\":\"chatcmpl-P1\",\"object\":\"chat.completion.chunk\",\"created\":1727000001,"
    "\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{"
    "\"index\":0,"
    "\"function\":{\"arguments\":\"{\\\"city\\\": "
    "\"}}]},\"logprobs\":null,\"finish_reason\":null}],"
    "\"usage\":null}\n\n"
    "data: {\"id\":\"chatcmpl-P1\",\"object\":\"chat.completion.chunk\",\"created\":1727000001,"
    "\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":["
    "{\"index\":1,\"function\":{\"arguments\":\"ty\\\": \\\"Oslo\\\"}\"}},"
    "{\"index\":0,\"function\":{\"arguments\":\"\\\"Paris\\\"}\"}}]},\"logprobs\":null,"
    "\"finish_reason\":null}],\"usage\":null}\n\n"
    "data: {\"id\":\"chatcmpl-P1\",\"object\":\"chat.completion.chunk\",\"created\":1727000001,"
    "\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,"
    "\"finish_reason\":\"tool_calls\"}],\"usage\":null}\n\n"
    "data: {\"id\":\"chatcmpl-P1\",\"object\":\"chat.completion.chunk\",\"created\":1727000001,"
    "\"model\":\"gpt-4o-2024-08-06\",\"choices\":[],\"usage\":{\"prompt_tokens\":82,"
    "\"completion_tokens\":40,\"total_tokens\":122}}\n\n"
    "data: [DONE]\n\n";

// The same conversation as kOpenAiRequest, as the Anthropic SDK sends it.
inline constexpr absl::string_view kAnthropicRequest = R"({
  "max_tokens": 1024,
  "messages": [
    {"role": "user", "content": "What is the weather in Paris and in Oslo?"},
    {"role": "assistant", "content": [
      {"type": "text", "text": "I'll check both cities."},
      {"type": "tool_use", "id": "toolu_paris", "name": "get_weather", "input": {"city": "Paris"}},
      {"type": "tool_use", "id": "toolu_oslo", "name": "get_weather", "input": {"city": "Oslo"}}]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_paris", "content": "18C, cloudy"},
      {"type": "tool_result", "tool_use_id": "toolu_oslo",
       "content": [{"type": "text", "text": "4C, snow"}]}]}
  ],
  "model": "claude-sonnet-4-20250514",
  "system": "You are the executor. Use tools.",
  "temperature": 0.2,
  "stop_sequences": ["END"],
  "tool_choice": {"type": "auto"},
  "tools": [{"name": "get_weather", "description": "Current weather for a city.",
             "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                              "required": ["city"]}}],
  "stream": true,
  "metadata": {"user_id": "user-1234"}
})";

inline constexpr absl::string_view kAnthropicResponse = R"({
  "id": "msg_01XYZ",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-20250514",
  "content": [
    {"type": "text", "text": "I'll check both cities."},
    {"type": "tool_use", "id": "toolu_paris", "name": "get_weather", "input": {"city": "Paris", "units": "C"}},
    {"type": "tool_use", "id": "toolu_oslo", "name": "get_weather", "input": {"city": "Oslo", "units": "C"}}
  ],
  "stop_reason": "tool_use",
  "stop_sequence": null,
  "usage": {"input_tokens": 410, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0, "output_tokens": 96}
})";

// A streamed answer with text and two tool_use blocks whose input arrives
// in input_json_delta fragments.
inline constexpr absl::string_view kAnthropicToolStream =
    "event: message_start\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01S\",\"type\":\"message\","
    "\"role\":\"assistant\",\"model\":\"claude-sonnet-4-20250514\",\"content\":[],"
    "\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":410,"
    "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":2}}}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
    "\"text\":\"\"}}\n\n"
    "event: ping\n"
    "data: {\"type\": \"ping\"}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
    "\"text\":\"I'll check \"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
    "\"text\":\"both cities.\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\","
    "\"id\":\"toolu_paris\",\"name\":\"get_weather\",\"input\":{}}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
    "\"partial_json\":\"\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
    "\"partial_json\":\"{\\\"city\\\": \\\"Pa\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
    "\"partial_json\":\"ris\\\"}\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\","
    "\"id\":\"toolu_oslo\",\"name\":\"get_weather\",\"input\":{}}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\","
    "\"partial_json\":\"{\\\"city\\\"\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\","
    "\"partial_json\":\": \\\"Oslo\\\"}\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":2}\n\n"
    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\","
    "\"stop_sequence\":null},\"usage\":{\"output_tokens\":96}}\n\n"
    "event: message_stop\n"
    "data: {\"type\":\"message_stop\"}\n\n";

using Chunks = google::protobuf::RepeatedPtrField<v1::CompletionChunk>;

// The canonical chunks of a whole stream, decoded with `Decoder`; fails the
// test on any error or when the stream does not end properly.
template <typename Decoder>
Chunks DecodeStream(absl::string_view stream) {
  Chunks chunks;
  absl::StatusOr<std::vector<SseEvent>> events = ParseSse(stream);
  EXPECT_TRUE(events.ok()) << events.status();
  if (!events.ok()) return chunks;
  Decoder decoder;
  for (const SseEvent& e : *events) {
    auto chunk = decoder.Decode(e);
    EXPECT_TRUE(chunk.ok()) << chunk.status() << " in " << e.raw;
    if (chunk.ok() && chunk->has_value()) *chunks.Add() = **chunk;
  }
  EXPECT_TRUE(decoder.done());
  return chunks;
}

inline Chunks DecodeOpenAiStream(absl::string_view stream) {
  return DecodeStream<openai::StreamDecoder>(stream);
}
inline Chunks DecodeAnthropicStream(absl::string_view stream) {
  return DecodeStream<anthropic::StreamDecoder>(stream);
}

inline std::string Join(const std::vector<std::string>& events) {
  std::string out;
  for (const std::string& e : events) out += e;
  return out;
}

// The segments a splitter makes of `text` fed `piece` bytes at a time,
// followed by its Rest(); fails the test unless the array ends properly.
inline std::vector<std::string> Split(absl::string_view text, size_t piece) {
  JsonArraySplitter splitter;
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size(); i += piece) {
    for (std::string& s : splitter.Feed(text.substr(i, piece))) out.push_back(std::move(s));
  }
  EXPECT_THAT(splitter.Finish(), ::testing::Eq(absl::OkStatus()));
  out.push_back(splitter.Rest());
  return out;
}

}  // namespace fixtures
}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_TEST_FIXTURES_H_
