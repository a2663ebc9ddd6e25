// The OpenAI Chat Completions API (POST /v1/chat/completions) translated to
// and from understudy's canonical messages. Pure functions of their
// arguments: JSON text in, protos out and back; no HTTP, no I/O.
//
// Recording through the API:
//   ParseRequest(body)            -> canonical request to match and store
//   ParseResponse(body)           -> canonical answer of a unary call
//   StreamDecoder::Decode(event)  -> canonical chunks of a streamed answer
//                                    (events from SseParser)
// Replaying to an OpenAI client an exchange recorded another way (over
// gRPC, or over the Anthropic API):
//   RenderResponse / RenderStream -> the body, or the SSE events, to send
//   ErrorBody                     -> an error in OpenAI's shape
// An exchange recorded over this very API is replayed from its stored native
// bytes instead; these renderings are what an OpenAI SDK accepts, not
// byte-for-byte what OpenAI once sent.
//
// Lossless matching: every request field that ParseRequest does not map to a
// canonical field is kept verbatim in `extra` (request or message), except
// the fields of kIgnoredRequestFields. Where a canonical field is a
// normalization (text-only content part arrays collapse to their text;
// `max_completion_tokens` and `max_tokens` are both `params.max_tokens`;
// role "developer" is role "system" with {"role":"developer"} in the message
// extra), the difference does not change the model's answer. Where a list
// cannot be mapped exactly (a content array with images, a tool with
// `strict`, a tool call of a type other than "function"), the canonical
// fields hold what can be mapped and the whole list is also kept in `extra`
// under its own key. `null` is the same as an absent field.
#ifndef UNDERSTUDY_PROVIDER_OPENAI_H_
#define UNDERSTUDY_PROVIDER_OPENAI_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_field.h"
#include "provider/chunk_decoder.h"
#include "provider/codec.h"
#include "provider/parsed_request.h"
#include "provider/sse.h"
#include "provider/stream_render.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace provider {
namespace openai {

// Top-level request fields that never change the model's answer, so
// ParseRequest leaves them out of the canonical request (and out of
// matching): how the answer is delivered (`stream`, `stream_options`),
// end-user and bookkeeping tags (`user`, `metadata`, `store`) and the
// processing tier (`service_tier`). Printed by `understudy serve --help`.
inline constexpr absl::string_view kIgnoredRequestFields[] = {
    "stream", "stream_options", "user", "metadata", "store", "service_tier",
};

// Translates a Chat Completions request body.
//
// Maps: `model` (required string); `messages` (required array): `role`
// (required string), `content` (string, or array of content parts),
// `name`, `tool_call_id`, assistant `tool_calls` of type "function" ->
// ToolCall{id, function.name, function.arguments as sent}; `tools` of type
// "function" -> ToolDefinition{name, description, parameters as compact
// JSON}; `temperature`, `top_p`, `max_completion_tokens` (else
// `max_tokens`), `stop` (string or array of strings) and `seed` -> params.
// Every other top-level field (`tool_choice`, `response_format`, `n`, ...)
// goes into `canonical.extra`, other message fields into the message's
// `extra`, both as compact JSON objects with sorted keys ("" when empty).
// Sets `stream` and `include_usage` (stream_options.include_usage).
//
// Fails with INVALID_ARGUMENT naming the bad field's path and what was
// expected (see json_util.h), e.g. "messages[2].content: expected a string
// or an array of content parts, got number", "model: missing; expected a
// string", "body: invalid JSON at byte 17: ...". Thread-safe.
absl::StatusOr<ParsedRequest> ParseRequest(absl::string_view body);

// Translates a (non-streamed) chat.completion body: `id`, `model`,
// choices[0].message (content, tool_calls) as an assistant message,
// choices[0].finish_reason, usage prompt_tokens/completion_tokens ->
// input/output tokens. Other choices, logprobs and refusals are dropped.
// Fails with INVALID_ARGUMENT naming the bad field (a body without choices
// included). Thread-safe.
absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body);

// The ChunkDecoder of a chat.completion.chunk stream (one chunk per event).
// Only choice 0 is read.
class StreamDecoder final : public ChunkDecoder {
 public:
  StreamDecoder() = default;

  // Decodes one event. Returns a chunk (id, model, delta content, tool-call
  // fragments with their index, finish_reason, usage) for every chunk
  // object, including ones with an empty delta and the usage-only chunk
  // with `choices: []`; std::nullopt for `data: [DONE]`, which also sets
  // done(). Fails with FAILED_PRECONDITION for an event after [DONE]; and
  // for an error object sent in the stream ({"error": {...}}) with a status
  // whose code follows the error's type (ErrorType's inverse; UNKNOWN for
  // types it does not know) and whose message is the error's.
  absl::StatusOr<std::optional<v1::CompletionChunk>> Decode(const SseEvent& event) override;

  // True once `data: [DONE]` was decoded.
  bool done() const override { return done_; }

 private:
  bool done_ = false;
};

// `response` as a chat.completion body for an OpenAI client, compact JSON
// with a fixed key order (same input, same bytes): id and model as in the
// response, `created` = created_unix_seconds, one choice whose message has
// role "assistant", `content` (null when the answer is only tool calls) and
// `tool_calls` of type "function" (when there are any), `finish_reason`
// (when empty: "tool_calls" if there are tool calls, else "stop"), and
// `usage` with total_tokens (omitted when the response has no usage).
std::string RenderResponse(const v1::CompletionResponse& response, int64_t created_unix_seconds);

// `chunks` as the events of a chat.completion.chunk stream, each element one
// whole event ("data: {...}\n\n"), deterministic bytes. One event per chunk
// in order, except chunks that carry nothing but usage; the first event's
// delta has role "assistant" (and `content`, "" or null as OpenAI sends it);
// tool-call fragments keep their index and carry id and type "function"
// when they have an id, function.name when they have a name, and
// function.arguments always; finish_reason stays on the chunk that has it.
// Every event uses the id and model of the first chunk that has them. With
// `include_usage`, every choice event has "usage":null and a final event
// with `choices: []` reports the last usage of the chunks (zeros if none
// had any). The last element is "data: [DONE]\n\n".
std::vector<std::string> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks, bool include_usage,
    int64_t created_unix_seconds);

// What a stream's events carry besides the chunks: `created` and, when not
// empty, `service_tier` and `system_fingerprint` (after `model`, as OpenAI
// orders them).
struct StreamMeta {
  int64_t created = 0;
  std::string service_tier;
  std::string system_fingerprint;
};
std::vector<std::string> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks, bool include_usage,
    const StreamMeta& meta);
// The same events one at a time (provider/stream_render.h), each chunk's
// event with that chunk's index; `chunks` must outlive the renderer.
std::unique_ptr<EventRenderer> StreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks, bool include_usage,
    const StreamMeta& meta);

// The StreamMeta of a recorded chat.completion body: its created,
// service_tier and system_fingerprint, so that a streaming caller replayed
// from a recording that was not streamed gets what the API said, the same
// every time. `fallback_created` when the body has none (or is not JSON).
StreamMeta StreamMetaFromBody(absl::string_view body, int64_t fallback_created);

// An OpenAI error body: {"error":{"message":...,"type":...,"param":null,
// "code":...}}, with "code":null when `code` is empty.
std::string ErrorBody(absl::string_view message, absl::string_view type, absl::string_view code);

// The OpenAI error type for a status code, for ErrorBody:
// "invalid_request_error" (INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION,
// OUT_OF_RANGE, ALREADY_EXISTS), "authentication_error" (UNAUTHENTICATED),
// "permission_error" (PERMISSION_DENIED), "rate_limit_error"
// (RESOURCE_EXHAUSTED), "timeout_error" (DEADLINE_EXCEEDED), "server_error"
// (everything else).
absl::string_view ErrorType(absl::StatusCode code);

// The openai API's codec (provider/codec.h), as provider/codecs.cc registers it.
std::unique_ptr<Codec> NewCodec();

}  // namespace openai
}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_OPENAI_H_
