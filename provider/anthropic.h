// The Anthropic Messages API (POST /v1/messages) translated to and from
// understudy's canonical messages. Pure functions of their arguments: JSON
// text in, protos out and back; no HTTP, no I/O. The same set as openai.h:
//
//   ParseRequest / ParseResponse / StreamDecoder   recording through the API
//   RenderResponse / RenderStream / ErrorBody      replaying to an Anthropic
//                                                  client what was recorded
//                                                  another way
//
// Shapes. Anthropic puts the system prompt beside the messages and the tool
// traffic inside them as content blocks; the canonical form is a flat list
// of turns like OpenAI's:
//   top-level `system`            -> a leading "system" message
//   assistant `tool_use` blocks   -> the assistant message's tool_calls,
//                                    arguments = `input` as compact JSON
//   user `tool_result` blocks     -> one "tool" message each (tool_call_id =
//                                    tool_use_id, content = the result text),
//                                    before the user message holding the rest
//                                    of that turn's blocks, if any
//   stop_reason                   -> finish_reason, by one table
//                                    (FinishReasonFromStopReason)
//
// Lossless matching: what has no canonical field is kept verbatim in the
// `extra` of the request or of the message it came from (null fields are
// the same as absent ones):
//   - request fields other than those mapped and kIgnoredRequestFields
//     (tool_choice, top_k, thinking, ...);
//   - content that is not exactly "one text block" (user, system, tool
//     result) or "an optional text block then tool_use blocks" (assistant),
//     for instance several text blocks, images, documents, thinking blocks or
//     cache_control: extra {"content": [the blocks]}, the canonical content
//     still holding the concatenated text of the text blocks. In a user
//     turn "the blocks" are those other than tool_result; when a tool_result
//     follows another block, all of them;
//   - a message's fields other than role and content, in the extra of the
//     first canonical message made from it;
//   - a tool_result's fields other than tool_use_id and plain-text content
//     (is_error, cache_control, image content) in its tool message's extra;
//   - tools with a `type` (server tools) or fields beyond name, description
//     and input_schema: the whole `tools` array in extra {"tools": [...]}.
#ifndef UNDERSTUDY_PROVIDER_ANTHROPIC_H_
#define UNDERSTUDY_PROVIDER_ANTHROPIC_H_

#include <cstdint>
#include <map>
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
namespace anthropic {

// Top-level request fields that never change the model's answer, so
// ParseRequest leaves them out of the canonical request (and out of
// matching): how the answer is delivered (`stream`) and the caller's tags
// (`metadata`). Printed by `understudy serve --help`.
inline constexpr absl::string_view kIgnoredRequestFields[] = {"stream", "metadata"};

// Translates a Messages API request body (see the file comment for the
// shapes). Maps `model` (required string), `system`, `messages` (required
// array; role "user" or "assistant"; content a string or an array of
// blocks), `tools` (name, description, input_schema -> parameters as compact
// JSON), and `max_tokens`, `temperature`, `top_p`, `stop_sequences` ->
// params. Sets `stream`; `include_usage` equals `stream`.
//
// Fails with INVALID_ARGUMENT naming the bad field's path and what was
// expected, e.g. "messages[1].content[0].tool_use_id: missing; expected a
// string", "messages[0].role: expected \"user\" or \"assistant\", got
// \"system\"", "body: invalid JSON at byte 3: ...". Thread-safe.
absl::StatusOr<ParsedRequest> ParseRequest(absl::string_view body);

// Translates a (non-streamed) message body: `id`, `model`, the text blocks
// concatenated as content, `tool_use` blocks as tool calls (arguments =
// `input` as compact JSON, keys in the order sent), stop_reason mapped by
// FinishReasonFromStopReason, usage input_tokens/output_tokens. Other
// blocks (thinking, server tool results) are dropped. Fails with
// INVALID_ARGUMENT naming the bad field. Thread-safe.
absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body);

// The ChunkDecoder of a Messages stream.
class StreamDecoder final : public ChunkDecoder {
 public:
  StreamDecoder() = default;

  // Decodes one event (its type read from the data's "type", else the SSE
  // event name). Returns a chunk for:
  //   message_start        id, model, usage (input tokens, output so far)
  //   content_block_start  of a tool_use block: a ToolCallDelta with id and
  //                        name, index = the block's ordinal among the
  //                        message's tool_use blocks (0, 1, ...); of a text
  //                        block with non-empty text: that text
  //   content_block_delta  text_delta: content; input_json_delta: an
  //                        arguments fragment for its block's tool index
  //   message_delta        finish_reason (mapped) and usage: output tokens
  //                        with the input tokens of message_start (or of
  //                        message_delta when it reports them)
  // and std::nullopt for ping, content_block_stop, message_stop (which sets
  // done()), other block types and deltas (thinking, signatures, citations)
  // and event types it does not know, as the API asks clients to do.
  //
  // Fails with INVALID_ARGUMENT naming the bad field under "data" for
  // malformed data or an input_json_delta for a block that was never
  // started (one for a started block of another type, such as
  // server_tool_use, carries nothing); with FAILED_PRECONDITION for an event after message_stop;
  // and for an `error` event with the status its error type stands for (overloaded_error ->
  // UNAVAILABLE, rate_limit_error -> RESOURCE_EXHAUSTED, api_error -> INTERNAL, ...; UNKNOWN
  // otherwise), carrying the error's message.
  absl::StatusOr<std::optional<v1::CompletionChunk>> Decode(const SseEvent& event) override;

  // True once message_stop was decoded.
  bool done() const override { return done_; }

 private:
  bool done_ = false;
  int next_tool_index_ = 0;
  // Content block index -> tool index, or -1 for a block of another type.
  std::map<int64_t, int> tool_index_of_block_;
  int64_t input_tokens_ = 0;
};

// `response` as a message body for an Anthropic client, compact JSON with a
// fixed key order: id and model as in the response, type "message", role
// "assistant", content blocks (a text block when there is text, then one
// tool_use block per tool call with `input` = the parsed arguments, `{}` for
// empty arguments), stop_reason (StopReasonFromFinishReason),
// stop_sequence null, usage input/output tokens.
// Fails with FAILED_PRECONDITION when a tool call's arguments are not a
// JSON object, which the Messages API cannot carry (the message names the
// call: "message.tool_calls[0].arguments: ...").
absl::StatusOr<std::string> RenderResponse(const v1::CompletionResponse& response);

// `chunks` as the events of a Messages stream, each element one whole event
// ("event: NAME\ndata: {...}\n\n"), deterministic bytes: message_start (id
// and model of the first chunk that has them; the usage of the first chunk
// if it has one, else the final input tokens and 0 output tokens), ping,
// then the text block (index 0, when there is any text) with one text_delta
// per chunk that has text, then one tool_use block per tool index in index
// order with one input_json_delta per fragment (a fragment that only
// announces the id and name makes none), then message_delta with the
// stop_reason of the last finish reason and the final output tokens, and
// message_stop. Anthropic streams blocks one after another, so the
// fragments of interleaved parallel tool calls are regrouped per call.
std::vector<std::string> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks);
// The same events one at a time (provider/stream_render.h), none tied to a
// chunk's offset; `chunks` must outlive the renderer.
std::unique_ptr<EventRenderer> StreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks);

// An Anthropic error body: {"type":"error","error":{"type":...,"message":...}}.
std::string ErrorBody(absl::string_view message, absl::string_view type);

// The Anthropic error type for a status code, for ErrorBody:
// "invalid_request_error" (INVALID_ARGUMENT, FAILED_PRECONDITION,
// OUT_OF_RANGE, ALREADY_EXISTS), "authentication_error",
// "permission_error", "not_found_error", "rate_limit_error"
// (RESOURCE_EXHAUSTED), "timeout_error" (DEADLINE_EXCEEDED),
// "overloaded_error" (UNAVAILABLE), "api_error" (everything else).
absl::string_view ErrorType(absl::StatusCode code);

// The stop-reason table, both ways. Anthropic -> canonical: end_turn and
// stop_sequence -> "stop", tool_use -> "tool_calls", max_tokens -> "length",
// refusal -> "content_filter"; other values (pause_turn, ...) pass through
// unchanged, "" stays "".
std::string FinishReasonFromStopReason(absl::string_view stop_reason);
// Canonical -> Anthropic, the first table row for the value: "stop" ->
// end_turn, "tool_calls" -> tool_use, "length" -> max_tokens,
// "content_filter" -> refusal; other values pass through; "" becomes
// tool_use when `has_tool_calls`, else end_turn.
std::string StopReasonFromFinishReason(absl::string_view finish_reason, bool has_tool_calls);

// The anthropic API's codec (provider/codec.h), as provider/codecs.cc registers it.
std::unique_ptr<Codec> NewCodec();

}  // namespace anthropic
}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_ANTHROPIC_H_
