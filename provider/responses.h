// The OpenAI Responses API (POST /v1/responses) translated to and from
// understudy's canonical messages. Pure functions of their arguments: JSON
// text in, protos out and back; no HTTP, no I/O.
//
// Recording through the API:
//   ParseRequest(body)            -> canonical request to match and store
//   ParseResponse(body)           -> canonical answer of a unary call
//   StreamDecoder::Decode(event)  -> canonical chunks of a streamed answer
//                                    (events from SseParser)
//   ResponseObjectFromEvent(data) -> the response object a stream ended with
//   ResponseIdOf(body)            -> its id (GET /v1/responses/{id})
// Replaying to a Responses client an exchange recorded another way (over
// gRPC, Chat Completions, or a scripted answer):
//   RenderResponse / RenderStream -> the response object, or the SSE events
//   ErrorEvent                    -> an in-stream error
// Error bodies are OpenAI's (openai::ErrorBody). An exchange recorded over
// this very API is replayed from its stored native bytes instead; these
// renderings are what the OpenAI SDKs accept, not what OpenAI once sent.
//
// How input items become canonical messages (ParseRequest):
//   `instructions` (string)       -> the first message, role "system"
//   `input` (string)              -> one user message
//   message item                  -> a message of its role ("developer" is
//                                    role "system" with {"role":"developer"}
//                                    in the message extra, as in openai.h)
//   function_call item            -> an assistant message with that one tool
//                                    call; its extra holds
//                                    {"type":"function_call"} and the item's
//                                    other fields (id, status, ...). Calls the
//                                    model made together stay one message
//                                    each: nothing is merged, nothing lost.
//   function_call_output item     -> a "tool" message answering call_id
//   any other documented item     -> a message with empty content whose
//   (reasoning, web_search_call,     extra is {"item": <the whole item>}:
//   computer_call_output, ...)       role "assistant" for what the model
//                                    produced, "tool" for tool outputs, "user"
//                                    for what the caller adds (references,
//                                    approvals)
//   item_reference                -> the same, and its place and id in
//                                    ParsedRequest::item_references: the
//                                    service puts the item it names there
//                                    when the run issued it (OutputItems)
//
// Lossless matching: every request field that ParseRequest does not map to
// a canonical field is kept verbatim in `extra` (request or message),
// except the fields of kIgnoredRequestFields. The normalizations (the same
// model answer either way): a content-part array of text parts only
// collapses to its joined text, and an empty `annotations` or `logprobs`
// list on a text part counts as absent (clients send back the output items
// they got, which carry both); `type: "message"` is implied by `role`.
// Lists that cannot be mapped exactly (content with images or files, tools
// that are not plain functions) keep the mappable part in canonical fields
// and the whole list in `extra` under its own key. `null` is the same as an
// absent field.
#ifndef UNDERSTUDY_PROVIDER_RESPONSES_H_
#define UNDERSTUDY_PROVIDER_RESPONSES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_field.h"
#include "provider/chunk_decoder.h"
#include "provider/codec.h"
#include "provider/derived_id.h"
#include "provider/parsed_request.h"
#include "provider/sse.h"
#include "provider/stream_render.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace provider {
namespace responses {

// Top-level request fields that never change the model's answer, so
// ParseRequest leaves them out of the canonical request (and out of
// matching): delivery (`stream`, `stream_options`, `background`), end-user
// and bookkeeping tags (`user`, `metadata`, `store`, `safety_identifier`),
// caching and processing tier (`prompt_cache_key`, `service_tier`), and
// `previous_response_id`, which ParseRequest moves to
// ParsedRequest::previous_response_id (the service resolves it to the
// conversation it names). Printed by `understudy serve --help`.
inline constexpr absl::string_view kIgnoredRequestFields[] = {
    "stream",
    "stream_options",
    "user",
    "metadata",
    "store",
    "service_tier",
    "prompt_cache_key",
    "safety_identifier",
    "background",
    "previous_response_id",
};

// Translates a Responses API request body.
//
// Maps: `model` (required string); `instructions` (a string; an array of
// prompt items stays in extra); `input` (a string, or an array of input
// items, as in the file comment); message content: a string, or an array
// of `input_text`/`output_text` parts (joined text) and other parts
// (`input_image`, `input_file`, `refusal`, ...; the whole array then also
// goes into the message extra under "content"); function_call_output
// `output` likewise (under "output"); `tools` of type "function" ->
// ToolDefinition{name, description, parameters as compact JSON}, and when
// any tool is another type (hosted tools) or has fields beyond those
// (`strict`), the whole array also goes into extra under "tools";
// `temperature`, `top_p`, `max_output_tokens` -> params. Every other
// top-level field (`tool_choice`, `parallel_tool_calls`, `text`,
// `reasoning`, `include`, `truncation`, `prompt`, ...) goes into
// `canonical.extra`. Sets `stream`, `include_usage` (= stream: Responses
// streams always report usage) and `previous_response_id`.
//
// Fails with INVALID_ARGUMENT naming the bad field's path, e.g.
// "input[2].type: unknown item type \"bogus\"; expected one of message,
// function_call, ...", "input[0].content: expected a string or an array of
// content parts, got number", "model: missing; expected a string",
// "body: invalid JSON at byte 17: ...". Thread-safe.
absl::StatusOr<ParsedRequest> ParseRequest(absl::string_view body);

// The output items of a response object (a body, or the `response` of a
// stream's final event) that have an id, each with the message ParseRequest
// makes of that item when a caller sends it back as input: an output
// `message` is an assistant message with its text, a `function_call` an
// assistant message with that call, any other item a message holding it
// whole. This is what an `item_reference` to one of them stands for.
// Items that do not parse as input items are left out; so is everything of
// a body that is not a response object (an empty list). Thread-safe.
std::vector<std::pair<std::string, v1::Message>> OutputItems(absl::string_view response_object);

// Translates a (non-streamed) `response` object: `id`, `model`; the text
// of every `output_text` part of the `message` output items, joined, as the
// assistant message's content; each `function_call` output item as a
// ToolCall{call_id, name, arguments}; usage input/output_tokens. The finish
// reason: "tool_calls" when there are function calls, else "stop" for
// status "completed", "length" for status "incomplete" with reason
// "max_output_tokens", "content_filter" for reason "content_filter", else
// the status itself ("" when there is none). Refusals, reasoning and the
// other output item types are dropped. Fails with INVALID_ARGUMENT naming
// the bad field (a body without `output` included). Thread-safe.
absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body);

// The ChunkDecoder of a Responses stream. The event type is the data's
// `type` (the SSE `event:` name when the data has none).
class StreamDecoder final : public ChunkDecoder {
 public:
  StreamDecoder() = default;

  // Decodes one event into at most one chunk:
  //   response.created                -> id and model
  //   response.output_text.delta      -> content
  //   response.output_item.added with a function_call item
  //                                   -> ToolCallDelta{index: output_index,
  //                                      id: call_id, name}
  //   response.function_call_arguments.delta
  //                                   -> ToolCallDelta{index: output_index,
  //                                      arguments: delta}
  //   response.completed / response.incomplete
  //                                   -> finish_reason (as ParseResponse says
  //                                      for the event's response) and usage;
  //                                      sets done()
  // and std::nullopt for every other event (in_progress, content parts,
  // *.done, reasoning and hosted-tool events, types it does not know), so
  // that provider::AssembleResponse over the chunks equals ParseResponse of
  // the final response object. The `offset_micros` of the chunk is left for
  // the caller.
  //
  // Fails with INVALID_ARGUMENT naming the bad field under "data" for
  // malformed data; with FAILED_PRECONDITION for an event after the stream
  // ended; for an `error` event, and for `response.failed` (which also sets
  // done()), with a status whose code follows the error's type or code
  // (OpenAiErrorStatusCode in json_util.h; UNKNOWN when it knows neither)
  // and whose message ends with the error's message.
  absl::StatusOr<std::optional<v1::CompletionChunk>> Decode(const SseEvent& event) override;

  // True once response.completed, response.incomplete or response.failed
  // was decoded.
  bool done() const override { return done_; }

 private:
  bool done_ = false;
};

// What a rendering adds to the canonical answer.
struct RenderMeta {
  // The response id. When empty: the canonical response's id when it
  // already is a Responses id ("resp_..."), else DerivedId("resp_", its id)
  // (or, for an answer without an id, of its serialized bytes).
  std::string id;
  // `created_at`, in Unix seconds.
  int64_t created_at = 0;
  // The model, for a canonical response whose `model` is empty.
  std::string model;
};

// `response` as a Responses `response` object, compact JSON with a fixed
// key order (same input, same bytes). `output` holds a `message` item
// (id "msg_...", one output_text part with empty annotations and logprobs)
// when there is text, then one `function_call` item per tool call (id
// "fc_...", call_id, name, arguments; a call without an id gets
// DerivedId("call_", ...)), item ids derived from the response id and the
// item's position. `status` is "incomplete" with incomplete_details.reason
// "max_output_tokens" for finish_reason "length" (reason "content_filter"
// for "content_filter"), "completed" otherwise, so that ParseResponse gives
// the finish reason back. `usage` has the token details and total_tokens
// (null when the response has no usage); request echo fields the SDKs read
// (`instructions`, `temperature`, `tools`, ...) have neutral values.
// Thread-safe.
std::string RenderResponse(const v1::CompletionResponse& response, const RenderMeta& meta);

// `chunks` as the events of a Responses stream, deterministic bytes, with
// `sequence_number` 0, 1, 2, ...: response.created and
// response.in_progress (status "in_progress", no output); when there is
// text, output_item.added (message), content_part.added, one
// output_text.delta per chunk with content, output_text.done,
// content_part.done, output_item.done; for each tool call (in index
// order), output_item.added (function_call, empty arguments), one
// function_call_arguments.delta per non-empty fragment,
// function_call_arguments.done, output_item.done; last,
// response.completed (response.incomplete for finish reasons "length" and
// "content_filter") carrying RenderResponse's object for
// provider::AssembleResponse(chunks). The deltas map 1:1 to chunks
// (RenderedEvent::chunk); since the text item comes before the call items,
// and each call's fragments together, their chunk indices decrease where
// the recorded chunks interleaved text and calls, or parallel calls.
// Thread-safe.
std::vector<RenderedEvent> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks, const RenderMeta& meta);
// The same events one at a time (provider/stream_render.h); `chunks` must
// outlive the renderer, which holds the assembled answer (its last events
// carry it whole).
std::unique_ptr<EventRenderer> StreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks, const RenderMeta& meta);

// An `error` event: "event: error\ndata: {...}\n\n" with `type` "error",
// `sequence_number`, and `code` (null when empty), `message` and `param`
// (null) at the top level, as the API reference documents, and also nested
// under `error`, as the API actually sends them: the SDKs read one or the
// other (openai-python raises only on the nested form). Thread-safe.
std::string ErrorEvent(absl::string_view message, absl::string_view code, int64_t sequence_number);

// The compact JSON of the `response` member of the data of a
// response.completed, response.incomplete or response.failed event (keys in
// their order); "" for any other event or data that is not JSON. Used to
// answer GET /v1/responses/{id} for recordings that were streamed.
// Thread-safe.
std::string ResponseObjectFromEvent(absl::string_view data);

// The `id` of a response object body; "" when it has none or is not JSON.
// Thread-safe.
std::string ResponseIdOf(absl::string_view body);

// The responses API's codec (provider/codec.h), as provider/codecs.cc registers it.
std::unique_ptr<Codec> NewCodec();

}  // namespace responses
}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_RESPONSES_H_
