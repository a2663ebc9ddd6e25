// Fixed payloads shared by the HTTP baseline servers and the load client in
// bench/http_choice/, so every server answers with byte-identical bodies and
// the figures compare the HTTP layer only.
//
// Contract:
//   * kChatCompletionBody: the body of every 200 answer to a non-streaming
//     POST /v1/chat/completions (Content-Type: application/json). ~400 bytes,
//     shaped like an OpenAI `chat.completion` object; its content never
//     changes, so a client may compare it byte for byte.
//   * kChatRequestBody: the request body the load client sends to that route.
//     The servers do not parse it (they only need to consume it).
//   * SseEvent(i) for i in [0, kSseEventCount): the i-th Server-Sent Event of
//     GET /stream (Content-Type: text/event-stream), each a complete
//     "data: ...\n\n" frame; events 0..N-2 are chat.completion.chunk objects
//     and the last one is "data: [DONE]\n\n". A server sends event 0 at once
//     and each following event kSseEventInterval after the previous one, so a
//     stream is held open for about (kSseEventCount-1) * kSseEventInterval.
//   * kChatStreamRequestBody: the request body of the streaming case; it
//     contains the substring "stream":true, which is how the servers tell it
//     from kChatRequestBody (no JSON parsing on the baseline's request path).
//   * SseChatEvent(i) for i in [0, kSseChatEventCount): the i-th Server-Sent
//     Event of the streaming answer to POST /v1/chat/completions, each a
//     complete "data: ...\n\n" frame shaped like OpenAI's stream: events
//     0..198 are chat.completion.chunk objects whose delta.content pieces are
//     "tok0 ", "tok1 ", ..., "tok198 " (event 0 also carries role
//     "assistant"; event 198 carries finish_reason "stop", the others null),
//     and event 199 is "data: [DONE]\n\n". The answer is sent at once, with
//     no pacing, so it measures the streaming path and not a timer.
//
// Everything here is immutable and safe to use from any thread.
#ifndef UNDERSTUDY_BENCH_HTTP_CHOICE_BENCH_BODIES_H_
#define UNDERSTUDY_BENCH_HTTP_CHOICE_BENCH_BODIES_H_

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace understudy::bench {

inline constexpr std::string_view kChatCompletionPath = "/v1/chat/completions";
inline constexpr std::string_view kStreamPath = "/stream";

inline constexpr std::string_view kChatCompletionBody =
    R"({"id":"chatcmpl-understudy-bench-0001","object":"chat.completion",)"
    R"("created":1718000000,"model":"gpt-4o-mini-2024-07-18",)"
    R"("choices":[{"index":0,"message":{"role":"assistant",)"
    R"("content":"Hello! This is a recorded answer replayed by understudy )"
    R"(for the HTTP baseline benchmark.","refusal":null},)"
    R"("logprobs":null,"finish_reason":"stop"}],)"
    R"("usage":{"prompt_tokens":19,"completion_tokens":17,"total_tokens":36},)"
    R"("system_fingerprint":"fp_bench0001"})";

inline constexpr std::string_view kChatRequestBody =
    R"({"model":"gpt-4o-mini","messages":[{"role":"user",)"
    R"("content":"Say hello for the HTTP baseline benchmark."}]})";

inline constexpr int kSseEventCount = 20;
inline constexpr std::chrono::milliseconds kSseEventInterval{50};

// Returns the i-th SSE frame (see contract above). Precondition:
// 0 <= i < kSseEventCount.
inline std::string SseEvent(int i) {
  if (i == kSseEventCount - 1) return "data: [DONE]\n\n";
  return std::string(
             R"(data: {"id":"chatcmpl-understudy-bench-0001",)"
             R"("object":"chat.completion.chunk","created":1718000000,)"
             R"("model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,)"
             R"("delta":{"content":"tok)") +
         std::to_string(i) + R"( "},"finish_reason":null}]})" + "\n\n";
}

inline constexpr std::string_view kChatStreamRequestBody =
    R"({"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user",)"
    R"("content":"Stream the plan for the SSE benchmark."}]})";

inline constexpr int kSseChatEventCount = 200;

// Returns the i-th SSE frame of the streaming chat answer (see contract
// above). Precondition: 0 <= i < kSseChatEventCount.
inline std::string SseChatEvent(int i) {
  if (i == kSseChatEventCount - 1) return "data: [DONE]\n\n";
  const std::string role = i == 0 ? R"("role":"assistant",)" : "";
  const std::string finish = i == kSseChatEventCount - 2 ? R"("stop")" : "null";
  return std::string(R"(data: {"id":"chatcmpl-understudy-bench-0002",)"
                     R"("object":"chat.completion.chunk","created":1718000000,)"
                     R"("model":"gpt-4o-mini-2024-07-18",)"
                     R"("system_fingerprint":"fp_bench0001",)"
                     R"("choices":[{"index":0,"delta":{)") +
         role + R"("content":"tok)" + std::to_string(i) +
         R"( "},"logprobs":null,"finish_reason":)" + finish + "}]}\n\n";
}

}  // namespace understudy::bench

#endif  // UNDERSTUDY_BENCH_HTTP_CHOICE_BENCH_BODIES_H_
