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
//   * kChatShortStreamRequestBody: the request body of the short streaming
//     case; it contains "stream":true and the phrase "short answer", which
//     is how the servers tell it from kChatStreamRequestBody (a substring
//     check, as above).
//   * SseShortEvent(i) for i in [0, kSseShortEventCount): the i-th event of
//     the short streaming answer to it, each a complete "data: ...\n\n"
//     frame, the shape of a short real chat completion stream: event 0 is
//     the role chunk (delta {"role":"assistant","content":"","refusal":
//     null}), events 1..8 carry the content pieces ShortStreamPiece(0..7)
//     (they join to "Sure! Here is the short answer for the SSE
//     benchmark."), event 9 the finish chunk (delta {}, finish_reason
//     "stop"), event 10 "data: [DONE]\n\n": 11 events, sent at once. The
//     last piece, " SSE benchmark.", is kShortStreamMarker: a load client
//     finds it in the raw bytes of this answer and of no other.
//   * kResponsesPath, kResponsesRequestBody, kResponsesStreamRequestBody: the
//     OpenAI Responses API route and its two request bodies (a plain `input`
//     string; the stream one contains "stream":true, as above).
//   * kResponseObjectBody: the body of every 200 answer to a non-streaming
//     POST /v1/responses (application/json). ~1 KB, shaped like the
//     `response` object OpenAI returns for gpt-4o-mini: one completed
//     `message` output item with one `output_text` part, usage with its
//     details, and the echoed request settings.
//   * ResponsesEvent(i) for i in [0, kResponsesEventCount): the i-th event
//     of the streaming answer to POST /v1/responses, each a complete
//     "event: TYPE\ndata: {...}\n\n" frame whose JSON carries that "type" and
//     "sequence_number": i, in OpenAI's order: response.created,
//     response.in_progress, response.output_item.added,
//     response.content_part.added, then kResponsesDeltaCount
//     response.output_text.delta events with the pieces
//     ResponsesDelta(0..11) = "step00 ", "step01 ", ..., "step11 ", then
//     response.output_text.done, response.content_part.done,
//     response.output_item.done (each with the whole text) and
//     response.completed (the whole `response` object, with usage): 20
//     events. The pieces are all 7 characters, so a tool that cuts a text
//     into fixed-size pieces (aimock's chunkSize) can send the same ones.
//   * kOllamaChatPath, kOllamaChatRequestBody: Ollama's chat route and the
//     request of the NDJSON streaming case (Ollama streams by default; the
//     body also says "stream":true, as its npm and Python clients do).
//   * OllamaChatLine(i) for i in [0, kOllamaLineCount): the i-th line of the
//     answer to it (Content-Type: application/x-ndjson), each one compact
//     JSON object ended by "\n", Ollama's shape: lines 0..198 are
//     {"model":"llama3.2:3b","created_at":"2026-01-01T00:00:00Z","message":
//     {"role":"assistant","content":"piece N "},"done":false} with N = i;
//     line 199 has content "", "done_reason":"stop", "done":true and the
//     durations and token counts Ollama closes a stream with: 200 lines,
//     sent at once. "piece 198 " (kOllamaStreamMarker) is the last piece.
//   * kBedrockStreamPath, kBedrockStreamRequestBody: AWS Bedrock's
//     ConverseStream route for the model "bench-model" and the request of
//     the event stream case (a Converse body: no model, no stream flag; the
//     path says both).
//   * BedrockStreamEvent(i) for i in [0, kBedrockEventCount): the type and
//     JSON payload of the i-th event of the answer to it, in Bedrock's
//     order: messageStart {"role":"assistant"}, then 198 contentBlockDelta
//     {"contentBlockIndex":0,"delta":{"text":"piece N "}} with N = 0..197,
//     then messageStop {"stopReason":"end_turn"}: 200 events. Bedrock ends
//     its streams with a metadata event (usage) after messageStop; it is
//     left out so that the stream has the 200 events of the other stream
//     cases. "piece 197 " (kBedrockStreamMarker) is the last piece. A server
//     sends each as one "application/vnd.amazon.eventstream" frame (the
//     layout is in provider/event_stream.h) with the string headers
//     :event-type TYPE, :content-type "application/json" and :message-type
//     "event", in that order, and the payload as is; the framing (and its
//     CRC32s) is the server's, so this header needs no zlib.
//   * kA2aStreamPath, kA2aStreamRequestBody: an A2A agent's JSON-RPC route
//     (understudy serves the agent "bench" there) and the request of the
//     A2A stream case: SendStreamingMessage (v1.0) with id 1 and a fixed
//     messageId.
//   * A2aStreamEvent(i) for i in [0, kA2aEventCount): the i-th SSE event of
//     the answer to it, "data: " + one JSON-RPC response with id 1 + "\n\n",
//     as @a2a-js/sdk's server sends them: 0 is the task, submitted
//     ({"task":{...}}); 1..198 artifact updates whose one text part is
//     "piece N " with N = i ({"artifactUpdate":{...}}); 199 the status
//     update that completes it ({"statusUpdate":{...}}): 200 events, sent
//     at once. "piece 198 " (kA2aStreamMarker) is the last piece.
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

inline constexpr std::string_view kChatShortStreamRequestBody =
    R"({"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user",)"
    R"("content":"Stream a short answer for the SSE benchmark."}]})";

inline constexpr int kShortStreamPieceCount = 8;
inline constexpr int kSseShortEventCount = kShortStreamPieceCount + 3;
inline constexpr std::string_view kShortStreamMarker = " SSE benchmark.";

// The i-th content piece of the short stream. Precondition:
// 0 <= i < kShortStreamPieceCount.
inline std::string_view ShortStreamPiece(int i) {
  static constexpr std::string_view kPieces[kShortStreamPieceCount] = {
      "Sure",   "!",       " Here is", " the",
      " short", " answer", " for the", kShortStreamMarker};
  return kPieces[i];
}

// Returns the i-th SSE frame of the short streaming chat answer (see
// contract above). Precondition: 0 <= i < kSseShortEventCount.
inline std::string SseShortEvent(int i) {
  if (i == kSseShortEventCount - 1) return "data: [DONE]\n\n";
  std::string delta;
  std::string finish = "null";
  if (i == 0) {
    delta = R"({"role":"assistant","content":"","refusal":null})";
  } else if (i <= kShortStreamPieceCount) {
    delta = std::string(R"({"content":")") +
            std::string(ShortStreamPiece(i - 1)) + R"("})";
  } else {
    delta = "{}";
    finish = R"("stop")";
  }
  return std::string(R"(data: {"id":"chatcmpl-understudy-bench-0003",)"
                     R"("object":"chat.completion.chunk","created":1718000000,)"
                     R"("model":"gpt-4o-mini-2024-07-18",)"
                     R"("system_fingerprint":"fp_bench0001",)"
                     R"("choices":[{"index":0,"delta":)") +
         delta + R"(,"logprobs":null,"finish_reason":)" + finish + "}]}\n\n";
}

inline constexpr std::string_view kResponsesPath = "/v1/responses";

inline constexpr std::string_view kResponsesRequestBody =
    R"({"model":"gpt-4o-mini",)"
    R"("input":"Say hello for the Responses benchmark."})";

inline constexpr std::string_view kResponseObjectBody =
    R"({"id":"resp_understudy_bench_0001","object":"response",)"
    R"("created_at":1718000000,"status":"completed","background":false,)"
    R"("error":null,"incomplete_details":null,"instructions":null,)"
    R"("max_output_tokens":null,"max_tool_calls":null,)"
    R"("model":"gpt-4o-mini-2024-07-18",)"
    R"("output":[{"id":"msg_understudy_bench_0001","type":"message",)"
    R"("status":"completed","content":[{"type":"output_text",)"
    R"("annotations":[],"logprobs":[],)"
    R"("text":"Hello! This is a recorded answer replayed by understudy )"
    R"(for the Responses benchmark."}],"role":"assistant"}],)"
    R"("parallel_tool_calls":true,"previous_response_id":null,)"
    R"("prompt_cache_key":null,"reasoning":{"effort":null,"summary":null},)"
    R"("safety_identifier":null,"service_tier":"default","store":true,)"
    R"("temperature":1.0,"text":{"format":{"type":"text"},)"
    R"("verbosity":"medium"},"tool_choice":"auto","tools":[],)"
    R"("top_logprobs":0,"top_p":1.0,"truncation":"disabled",)"
    R"("usage":{"input_tokens":14,"input_tokens_details":{"cached_tokens":0},)"
    R"("output_tokens":17,"output_tokens_details":{"reasoning_tokens":0},)"
    R"("total_tokens":31},"user":null,"metadata":{}})";

inline constexpr std::string_view kResponsesStreamRequestBody =
    R"({"model":"gpt-4o-mini","stream":true,)"
    R"("input":"Stream the plan for the Responses SSE benchmark."})";

inline constexpr int kResponsesDeltaCount = 12;
inline constexpr int kResponsesEventCount = kResponsesDeltaCount + 8;

// The i-th text piece of the streaming Responses answer, "step00 " ..
// "step11 ". Precondition: 0 <= i < kResponsesDeltaCount.
inline std::string ResponsesDelta(int i) {
  return std::string("step") + (i < 10 ? "0" : "") + std::to_string(i) + " ";
}

// Returns the i-th SSE frame of the streaming Responses answer (see
// contract above). Precondition: 0 <= i < kResponsesEventCount.
inline std::string ResponsesEvent(int i) {
  std::string text;
  for (int k = 0; k < kResponsesDeltaCount; ++k) text += ResponsesDelta(k);
  const std::string item = R"("item_id":"msg_understudy_bench_0002",)"
                           R"("output_index":0,"content_index":0,)";
  const std::string part_done =
      R"({"type":"output_text","annotations":[],"logprobs":[],"text":")" +
      text + R"("})";
  const std::string message_done =
      R"({"id":"msg_understudy_bench_0002","type":"message",)"
      R"("status":"completed","content":[)" +
      part_done + R"(],"role":"assistant"})";
  // The response object of response.created/in_progress (status
  // "in_progress", no output, no usage) or of response.completed.
  auto response = [&](bool completed) {
    return std::string(
               R"({"id":"resp_understudy_bench_0002","object":"response",)"
               R"("created_at":1718000000,"status":")") +
           (completed ? "completed" : "in_progress") +
           R"(","background":false,"error":null,)"
           R"("incomplete_details":null,"instructions":null,)"
           R"("max_output_tokens":null,"max_tool_calls":null,)"
           R"("model":"gpt-4o-mini-2024-07-18","output":[)" +
           (completed ? message_done : "") +
           R"(],"parallel_tool_calls":true,"previous_response_id":null,)"
           R"("prompt_cache_key":null,)"
           R"("reasoning":{"effort":null,"summary":null},)"
           R"("safety_identifier":null,"service_tier":"auto","store":true,)"
           R"("temperature":1.0,"text":{"format":{"type":"text"},)"
           R"("verbosity":"medium"},"tool_choice":"auto","tools":[],)"
           R"("top_logprobs":0,"top_p":1.0,"truncation":"disabled","usage":)" +
           (completed ? R"({"input_tokens":16,"input_tokens_details":)"
                        R"({"cached_tokens":0},"output_tokens":24,)"
                        R"("output_tokens_details":{"reasoning_tokens":0},)"
                        R"("total_tokens":40})"
                      : "null") +
           R"(,"user":null,"metadata":{}})";
  };
  constexpr int kFirstDelta = 4;
  std::string type, fields;
  if (i == 0 || i == 1) {
    type = i == 0 ? "response.created" : "response.in_progress";
    fields = R"("response":)" + response(false);
  } else if (i == 2 || i == kResponsesEventCount - 2) {
    type = i == 2 ? "response.output_item.added" : "response.output_item.done";
    fields = R"("output_index":0,"item":)" +
             (i == 2 ? std::string(R"({"id":"msg_understudy_bench_0002",)"
                                   R"("type":"message","status":"in_progress",)"
                                   R"("content":[],"role":"assistant"})")
                     : message_done);
  } else if (i == 3 || i == kResponsesEventCount - 3) {
    type =
        i == 3 ? "response.content_part.added" : "response.content_part.done";
    fields = item + R"("part":)" +
             (i == 3 ? std::string(R"({"type":"output_text","annotations":[],)"
                                   R"("logprobs":[],"text":""})")
                     : part_done);
  } else if (i < kFirstDelta + kResponsesDeltaCount) {
    type = "response.output_text.delta";
    fields = item + R"("delta":")" + ResponsesDelta(i - kFirstDelta) +
             R"(","logprobs":[],"obfuscation":"bench")";
  } else if (i == kResponsesEventCount - 4) {
    type = "response.output_text.done";
    fields = item + R"("text":")" + text + R"(","logprobs":[])";
  } else {
    type = "response.completed";
    fields = R"("response":)" + response(true);
  }
  return "event: " + type + "\ndata: {\"type\":\"" + type +
         "\",\"sequence_number\":" + std::to_string(i) + "," + fields + "}\n\n";
}

inline constexpr std::string_view kOllamaChatPath = "/api/chat";

inline constexpr std::string_view kOllamaChatRequestBody =
    R"({"model":"llama3.2:3b","messages":[{"role":"user",)"
    R"("content":"Stream the plan for the NDJSON benchmark."}],)"
    R"("stream":true})";

inline constexpr int kOllamaLineCount = 200;
inline constexpr std::string_view kOllamaStreamMarker = "piece 198 ";

// Returns the i-th line of the Ollama chat stream, "\n" included (see
// contract above). Precondition: 0 <= i < kOllamaLineCount.
inline std::string OllamaChatLine(int i) {
  const std::string head =
      R"({"model":"llama3.2:3b","created_at":"2026-01-01T00:00:00Z",)"
      R"("message":{"role":"assistant","content":")";
  if (i < kOllamaLineCount - 1) {
    return head + "piece " + std::to_string(i) + R"( "},"done":false})" + "\n";
  }
  return head +
         R"("},"done_reason":"stop","done":true,)"
         R"("total_duration":2034567890,"load_duration":12345678,)"
         R"("prompt_eval_count":18,"prompt_eval_duration":23456789,)"
         R"("eval_count":199,"eval_duration":1987654321})" +
         "\n";
}

inline constexpr std::string_view kBedrockStreamPath =
    "/model/bench-model/converse-stream";

inline constexpr std::string_view kBedrockStreamRequestBody =
    R"({"messages":[{"role":"user","content":[{"text":)"
    R"("Stream the plan for the event stream benchmark."}]}],)"
    R"("inferenceConfig":{"maxTokens":512}})";

inline constexpr int kBedrockEventCount = 200;
inline constexpr std::string_view kBedrockStreamMarker = "piece 197 ";

// One event of a Bedrock stream: its :event-type and its JSON payload.
struct BedrockEvent {
  std::string type;
  std::string payload;
};

// Returns the i-th event of the Bedrock ConverseStream answer (see contract
// above). Precondition: 0 <= i < kBedrockEventCount.
inline BedrockEvent BedrockStreamEvent(int i) {
  if (i == 0) return {"messageStart", R"({"role":"assistant"})"};
  if (i == kBedrockEventCount - 1) {
    return {"messageStop", R"({"stopReason":"end_turn"})"};
  }
  return {"contentBlockDelta",
          R"({"contentBlockIndex":0,"delta":{"text":"piece )" +
              std::to_string(i - 1) + R"( "}})"};
}

inline constexpr std::string_view kA2aStreamPath = "/a2a/bench";

inline constexpr std::string_view kA2aStreamRequestBody =
    R"({"jsonrpc":"2.0","method":"SendStreamingMessage","params":{"message":)"
    R"({"messageId":"bench-message","role":"ROLE_USER","parts":[{"text":)"
    R"("Stream the plan for the A2A benchmark."}]},"configuration":{}},"id":1})";

inline constexpr int kA2aEventCount = 200;
inline constexpr std::string_view kA2aStreamMarker = "piece 198 ";

// Returns the i-th event of the A2A stream, framing included (see contract
// above). Precondition: 0 <= i < kA2aEventCount.
inline std::string A2aStreamEvent(int i) {
  const std::string ids = R"("taskId":"bench-task","contextId":"bench-context")";
  std::string result;
  if (i == 0) {
    result = R"({"task":{"id":"bench-task","contextId":"bench-context",)"
             R"("status":{"state":"TASK_STATE_SUBMITTED"},"history":[{"messageId":)"
             R"("bench-message","contextId":"bench-context","taskId":"bench-task",)"
             R"("role":"ROLE_USER","parts":[{"text":"Stream the plan for the A2A )"
             R"(benchmark."}]}]}})";
  } else if (i < kA2aEventCount - 1) {
    result = R"({"artifactUpdate":{)" + ids +
             R"(,"artifact":{"artifactId":"plan","parts":[{"text":"piece )" +
             std::to_string(i) + R"( "}]},"append":true}})";
  } else {
    result = R"({"statusUpdate":{)" + ids +
             R"(,"status":{"state":"TASK_STATE_COMPLETED"}}})";
  }
  return R"(data: {"jsonrpc":"2.0","id":1,"result":)" + result + "}\n\n";
}

}  // namespace understudy::bench

#endif  // UNDERSTUDY_BENCH_HTTP_CHOICE_BENCH_BODIES_H_
