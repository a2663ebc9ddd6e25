// The Cohere Chat API v2 (POST /v2/chat) translated to and from
// understudy's canonical messages. Pure functions of their arguments: JSON
// text in, protos out and back; no HTTP, no I/O. The same set as openai.h:
//
//   ParseRequest / ParseResponse / StreamDecoder   recording through the API
//   RenderResponse / RenderStream / ErrorBody      replaying to a Cohere
//                                                  client what was recorded
//                                                  another way
//
// Shapes. Cohere's v2 messages are already a flat list of turns with
// OpenAI-style tool calls; the differences are in the names and the parts:
//   role "system" / "user" /     -> the same roles
//     "assistant" / "tool"
//   content: a string, or an     -> the message content: the text parts'
//     array of typed parts          text, concatenated (tool results made
//                                   only of documents: each document's
//                                   `data`, see ParseRequest)
//   assistant `tool_calls`       -> tool_calls {id, function.name,
//                                   function.arguments as sent (JSON text)}
//   tool `tool_call_id`          -> tool_call_id
//   tools[].function             -> ToolDefinition {name, description,
//                                   parameters as compact JSON}
//   temperature, p, max_tokens,  -> params temperature, top_p, max_tokens,
//     stop_sequences, seed          stop, seed
//   finish_reason                -> finish_reason, by one table
//                                   (FinishReasonFromCohere)
//   usage.tokens (else           -> usage input/output tokens
//     usage.billed_units)
// The part types a role may send are the SDK's (cohere-ai 8.x, its
// api/types): system "text"; user "text", "image_url"; assistant "text",
// "thinking"; tool "text", "document". Another type is an error.
//
// Lossless matching: what has no canonical field is kept verbatim in the
// `extra` of the request or of the message it came from (null fields are
// the same as absent ones):
//   - request fields other than those mapped and kIgnoredRequestFields
//     (k, frequency_penalty, presence_penalty, documents, tool_choice,
//     response_format, safety_mode, citation_options, strict_tools,
//     logprobs, thinking, ...);
//   - content arrays that are not only plain {type, text} parts (images,
//     thinking, documents, extra part fields): extra {"content": [the
//     parts]}, the canonical content still holding what is described above;
//   - a message's fields other than role, content and the role's own
//     (tool_calls for assistant, tool_call_id for tool): tool_plan,
//     citations, ...;
//   - tool calls of a type other than "function", or with fields beyond
//     id, type and function {name, arguments}: the whole list in the
//     message's extra {"tool_calls": [...]};
//   - tools of another type or with fields beyond type and function {name,
//     description, parameters}: the whole `tools` array in extra.
// What an answer carries besides text and tool calls (tool_plan, thinking,
// citations, logprobs) has no canonical field and is dropped from it.
#ifndef UNDERSTUDY_PROVIDER_COHERE_H_
#define UNDERSTUDY_PROVIDER_COHERE_H_

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
#include "provider/json_util.h"
#include "provider/parsed_request.h"
#include "provider/sse.h"
#include "provider/stream_render.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace provider {
namespace cohere {

// Top-level request fields that never change the model's answer, so
// ParseRequest leaves them out of the canonical request (and out of
// matching): how the answer is delivered (`stream`, which the SDK sets
// itself: chat() sends false, chatStream() true) and `priority`, which only
// orders requests in Cohere's queue under load (like OpenAI's
// service_tier). Everything else the SDK's V2ChatRequest holds can change
// the answer or its body (logprobs adds them, citation_options shapes the
// citations). Printed by `understudy serve --help`.
inline constexpr absl::string_view kIgnoredRequestFields[] = {"stream", "priority"};

// Translates a v2 chat request body (see the file comment for the shapes).
// Maps `model` (required string), `messages` (required array; `role`
// required, one of "system", "user", "assistant", "tool"; `content`
// required but for assistant turns, a string or an array of the role's
// part types; `tool_call_id` required for tool turns), `tools` and the
// sampling fields. A tool turn whose text parts give no text gets its
// document parts' `data` as content (a string as is, anything else as
// compact JSON with sorted keys, one per line), so that the trace shows the tool's result;
// the parts themselves are in the message's extra. Sets `stream`;
// `include_usage` equals `stream` (message-end always reports usage).
//
// Fails with INVALID_ARGUMENT naming the bad field's path and what was
// expected, e.g. "messages[1].role: expected \"system\", \"user\",
// \"assistant\" or \"tool\", got \"developer\"",
// "messages[0].content[1].type: expected \"text\" or \"image_url\", got
// \"video\"", "messages[2].tool_call_id: missing; expected a string",
// "body: invalid JSON at byte 3: ...", "body: invalid UTF-8 at byte 9".
// Thread-safe.
absl::StatusOr<ParsedRequest> ParseRequest(absl::string_view body);

// Translates a (non-streamed) chat response: `id`; of `message` (required
// object), the text parts of `content` concatenated as content (thinking
// and part types it does not know are dropped) and `tool_calls` as tool
// calls; `finish_reason` by FinishReasonFromCohere; usage from
// `usage.tokens`, each count falling back to `usage.billed_units`. The body
// names no model: `model` stays "". Fails with INVALID_ARGUMENT naming the
// bad field. Thread-safe.
absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body);

// The ChunkDecoder of a v2 chat stream (events "event: <type>\ndata:
// {"type": <type>, ...}"; the type is read from the data, else from the
// event name).
class StreamDecoder final : public ChunkDecoder {
 public:
  StreamDecoder() = default;

  // Decodes one event. Returns a chunk for:
  //   message-start    the id (a chunk even when there is none)
  //   content-start    of a text part with non-empty text: that text
  //   content-delta    of a text part: its non-empty text
  //   tool-call-start  a ToolCallDelta with id, name and the arguments'
  //                    first fragment when not empty; its index is the
  //                    call's ordinal among the stream's tool calls (0, 1,
  //                    ...), whatever `index` the event gives it
  //   tool-call-delta  an arguments fragment for that call
  //   message-end      finish_reason (mapped) and usage; sets done()
  // and std::nullopt for content-end, tool-plan-delta, tool-call-end,
  // citation-start/-end, debug, thinking parts, empty text, `data: [DONE]`
  // (which a proxy may add; it sets done()) and event types it does not
  // know.
  //
  // Fails with INVALID_ARGUMENT naming the bad field under "data" for
  // malformed data or a tool-call-delta for a call never started; with
  // FAILED_PRECONDITION for an event after the end; and for a message-end
  // that reports an error (`delta.error`) with DEADLINE_EXCEEDED (finish
  // reason TIMEOUT) or UNKNOWN, "upstream stream error (<finish reason>):
  // <error>".
  absl::StatusOr<std::optional<v1::CompletionChunk>> Decode(const SseEvent& event) override;

  // True once message-end (or [DONE]) was decoded.
  bool done() const override { return done_; }

 private:
  absl::StatusOr<std::optional<v1::CompletionChunk>> DecodeContent(const std::string& type,
                                                                   const Json& data);
  absl::StatusOr<std::optional<v1::CompletionChunk>> DecodeToolCall(const std::string& type,
                                                                    const Json& data);
  absl::StatusOr<std::optional<v1::CompletionChunk>> DecodeEnd(const Json& data);

  bool done_ = false;
  // Content index -> true for a thinking part, whose deltas carry nothing.
  std::map<int64_t, bool> thinking_;
  // The event's tool call index -> the call's ordinal.
  std::map<int64_t, int> tool_index_;
};

// `response` as a chat response body for a Cohere client, compact JSON with
// a fixed key order: id as in the response; message {role "assistant",
// content [one text part] (when there is text, or when there is neither
// text nor a tool call: [] then), tool_calls of type "function" with the
// arguments as recorded (when there are any)}; finish_reason
// (FinishReasonToCohere); usage {billed_units, tokens}, both with the
// response's counts (only when the response has usage).
std::string RenderResponse(const v1::CompletionResponse& response);

// `chunks` as the events of a v2 chat stream, each element one whole event
// ("event: <type>\ndata: {...}\n\n"), deterministic bytes: message-start
// (id of the first chunk that has one), then, when there is any text, a
// text part (content-start, one content-delta per chunk with text,
// content-end), then one tool-call-start/-delta.../-end group per tool
// index in index order (the start carrying the id, name and first
// fragment, one delta per later fragment; the fragments of interleaved
// parallel calls are regrouped per call, indexes renumbered 0, 1, ...),
// then message-end with FinishReasonToCohere of the last finish reason
// and, when a chunk has usage, the last usage. No terminator follows: the
// SDK reads until the stream closes (it would also stop at a data line
// containing "[DONE]", so the renderer writes that text in a string as
// "\u005bDONE]", the same JSON).
std::vector<std::string> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks);
// The same events one at a time (provider/stream_render.h): each content
// delta, tool call fragment and message-end with the index of the chunk it
// comes from; `chunks` must outlive the renderer.
std::unique_ptr<EventRenderer> StreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks);

// A Cohere error body: {"id":"<uuid>","message":"..."}, the id derived from
// the status (DerivedId, written as a UUID as Cohere's are) so that the same
// error is the same bytes in every replay. The SDK keeps the whole body
// (CohereError.body) and its class follows the HTTP status, which the
// listener takes from the status code (base/http_status.h).
std::string ErrorBody(const absl::Status& status);

// The `message` of a Cohere error body, "" when the body is not one.
std::string ErrorMessage(absl::string_view body);

// The finish-reason table, both ways. Cohere -> canonical (the table's
// names in any case): COMPLETE and STOP_SEQUENCE -> "stop", MAX_TOKENS ->
// "length", TOOL_CALL -> "tool_calls"; other values (ERROR, TIMEOUT) ->
// their lower case, "" stays "". So FinishReasonFromCohere of
// FinishReasonToCohere of a non-empty value it made is that value.
std::string FinishReasonFromCohere(absl::string_view finish_reason);
// Canonical -> Cohere, the first table row for the value: "stop" ->
// COMPLETE, "length" -> MAX_TOKENS, "tool_calls" -> TOOL_CALL; other values
// -> their upper case; "" becomes TOOL_CALL when `has_tool_calls`, else
// COMPLETE.
std::string FinishReasonToCohere(absl::string_view finish_reason, bool has_tool_calls);

// The cohere API's codec (provider/codec.h), as provider/codecs.cc registers it.
std::unique_ptr<Codec> NewCodec();

}  // namespace cohere
}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_COHERE_H_
