// AWS Bedrock Runtime translated to and from understudy's canonical
// messages: the Converse API (POST /model/{modelId}/converse and
// /converse-stream) and InvokeModel with Anthropic's bodies (POST
// /model/{modelId}/invoke and /invoke-with-response-stream). Pure functions
// of their arguments: JSON text and event stream frames in, protos out and
// back; no HTTP, no I/O.
//
//   ParseRequest / ParseResponse                 Converse, recording
//   EventStreamSplitter + StreamDecoder::
//     DecodeElement(frame)                       ConverseStream's frames
//   RenderResponse / StreamRenderer / ErrorBody  replaying to a Converse
//                                                client
//   ParseInvokeRequest / InvokeStreamDecoder /   InvokeModel: Anthropic's
//   InvokeStreamRenderer                         Messages bodies
//                                                (provider/anthropic.h), its
//                                                stream events wrapped in
//                                                frames
//
// Streams. Both stream operations answer "application/vnd.amazon.eventstream"
// (provider/event_stream.h): one binary frame per event, with the string
// headers `:event-type`, `:content-type` ("application/json") and
// `:message-type` ("event"); the payload is the event's JSON. Converse's
// events: messageStart {role}, contentBlockStart {contentBlockIndex, start:
// {toolUse: {toolUseId, name}}} (tool blocks only), contentBlockDelta
// {contentBlockIndex, delta: {text} | {toolUse: {input: "<JSON fragment>"}}
// | {reasoningContent} | ...}, contentBlockStop, messageStop {stopReason},
// metadata {usage, metrics}. InvokeModel's: `chunk` {bytes: base64 of one
// Anthropic stream event's JSON}. AWS pads payloads with a random "p"
// member to hide their length: it is ignored, and rendered frames carry
// none (the SDKs read no such member). An error in the stream is a frame
// with `:message-type` "exception", `:exception-type` (throttlingException,
// validationException, modelStreamErrorException, ...) and a payload
// {"message": "..."}; or, for a service fault, `:message-type` "error" with
// `:error-code` and `:error-message` headers.
//
// Shapes (Converse). Bedrock keeps the system prompt beside the messages
// and the tool traffic inside them as content blocks, each an object with
// one member naming its kind:
//   `system` [{text}, ...]         -> a leading "system" message
//   role "user" / "assistant"      -> the same role
//   {text} blocks                  -> the message content, concatenated
//   {toolUse: {toolUseId, name,    -> the assistant message's tool_calls,
//     input}}                         arguments = `input` as compact JSON
//   {toolResult: {toolUseId,       -> one "tool" message each (tool_call_id
//     content, status}}               = toolUseId, content = its {text}
//                                     items and its {json} items as compact
//                                     JSON, concatenated), before the user
//                                     message holding the rest of the turn
//   inferenceConfig maxTokens,     -> params max_tokens, temperature, top_p,
//     temperature, topP,              stop
//     stopSequences
//   toolConfig.tools[].toolSpec    -> tools (name, description, parameters =
//     {name, description,             inputSchema.json as compact JSON)
//     inputSchema: {json}}
//   stopReason                     -> finish_reason (FinishReasonFromStopReason)
//
// Lossless matching: what has no canonical field is kept verbatim in the
// `extra` of the request or of the message it came from (null fields are the
// same as absent ones):
//   - top-level fields other than those mapped and kIgnoredRequestFields
//     (additionalModelRequestFields, guardrailConfig, promptVariables,
//     additionalModelResponseFieldPaths, performanceConfig, ...);
//   - inferenceConfig's other members under "inferenceConfig", toolConfig's
//     (toolChoice; and `tools` itself when a tool is more than a plain
//     toolSpec) under "toolConfig";
//   - content that is not exactly "one {text} block" (user, system) or "an
//     optional {text} block then plain {toolUse} blocks" (assistant), for
//     instance images, documents, reasoning, cachePoint, guardContent or
//     block kinds this codec does not know: extra {"content": [the blocks]}.
//     In a user turn "the blocks" are those other than toolResult; when a
//     toolResult follows another block, all of them;
//   - a message's fields other than role and content, in the extra of the
//     first canonical message made from it;
//   - a toolResult's content other than one {text} item (extra {"content":
//     [...]}) and its other fields (status) in its tool message's extra,
//     with the whole block (extra {"block": ...}) when the block holds more
//     than its toolResult member.
//
// InvokeModel bodies are Anthropic's Messages bodies as Bedrock takes them:
// `anthropic_version` ("bedrock-2023-05-31") and no `model` (the path names
// it); provider/anthropic.h's parser and renderers do the rest.
#ifndef UNDERSTUDY_PROVIDER_BEDROCK_H_
#define UNDERSTUDY_PROVIDER_BEDROCK_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_field.h"
#include "provider/anthropic.h"
#include "provider/chunk_decoder.h"
#include "provider/codec.h"
#include "provider/event_stream.h"
#include "provider/json_util.h"
#include "provider/parsed_request.h"
#include "provider/sse.h"
#include "provider/stream_render.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace provider {
namespace bedrock {

// The content type of Bedrock's streams.
inline constexpr absl::string_view kStreamContentType = "application/vnd.amazon.eventstream";

// Converse request fields that never change the model's answer, so
// ParseRequest leaves them out of the canonical request (and out of
// matching): `requestMetadata`, the caller's tags for invocation logs.
// How the answer is delivered is in the path, not the body. Printed by
// `understudy serve --help`.
inline constexpr absl::string_view kIgnoredRequestFields[] = {"requestMetadata"};

// Translates a Converse (or ConverseStream: the same body) request body
// (see the file comment for the shapes). `model` is the model id of the
// path, percent-decoded; it becomes `canonical.model`. Maps `messages`
// (required array; role "user" or "assistant"; content a required array of
// blocks), `system`, `inferenceConfig` and `toolConfig.tools`. Leaves
// `stream` false and `stream_framing` SSE: the codec sets them from the
// path.
//
// Fails with INVALID_ARGUMENT naming the bad field's path and what was
// expected, e.g. "messages: missing; expected an array of messages",
// "messages[1].content[0].toolUse.toolUseId: missing; expected a string",
// "messages[0].role: expected \"user\" or \"assistant\", got \"system\"",
// "inferenceConfig.maxTokens: expected an integer, got string", "body:
// invalid JSON at byte 3: ...". Thread-safe.
absl::StatusOr<ParsedRequest> ParseRequest(absl::string_view body, absl::string_view model);

// Translates a (non-streamed) Converse response: of output.message, the
// {text} blocks concatenated as content and the {toolUse} blocks as tool
// calls (id = toolUseId, arguments = `input` as compact JSON), other blocks
// (reasoningContent, ...) dropped; stopReason by FinishReasonFromStopReason;
// usage inputTokens / outputTokens. Converse answers carry no id and no
// model: both stay "". Fails with INVALID_ARGUMENT naming the bad field.
// Thread-safe.
absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body);

// The stop-reason table, both ways. Bedrock -> canonical: end_turn and
// stop_sequence -> "stop", tool_use -> "tool_calls", max_tokens -> "length",
// content_filtered and guardrail_intervened -> "content_filter"; other values
// (model_context_window_exceeded, ...) pass through, "" stays "".
std::string FinishReasonFromStopReason(absl::string_view stop_reason);
// Canonical -> Bedrock, the first table row for the value; other values
// pass through; "" becomes tool_use when `has_tool_calls`, else end_turn.
std::string StopReasonFromFinishReason(absl::string_view finish_reason, bool has_tool_calls);

// The ChunkDecoder of a ConverseStream answer.
class StreamDecoder final : public ChunkDecoder {
 public:
  StreamDecoder() = default;

  // UNIMPLEMENTED: Bedrock streams frames, never server-sent events.
  absl::StatusOr<std::optional<v1::CompletionChunk>> Decode(const SseEvent& event) override;

  // Decodes one whole frame (an EventStreamSplitter segment). Returns a
  // chunk for:
  //   contentBlockStart  of a toolUse block: a ToolCallDelta with id and
  //                      name, index = the block's ordinal among the
  //                      message's tool blocks (0, 1, ...)
  //   contentBlockDelta  {text}: content; {toolUse: {input}}: an arguments
  //                      fragment for its block's tool index
  //   messageStop        finish_reason (mapped); sets done()
  //   metadata           usage (when it has one)
  // and std::nullopt for messageStart, contentBlockStop, other block kinds
  // and deltas (reasoning, citations, ...) and event types it does not
  // know.
  //
  // Fails with INVALID_ARGUMENT naming the bad part under "element" for a
  // frame that does not decode, lacks its `:message-type` or `:event-type`
  // header, or whose payload is malformed ("element.payload.delta.text:
  // expected a string, got number"), and for a toolUse delta of a block that
  // was never started; for an exception frame, with the status its type
  // stands for (CodeFromErrorType), carrying its message: "upstream stream
  // error (throttlingException): Too many requests".
  absl::StatusOr<std::optional<v1::CompletionChunk>> DecodeElement(
      absl::string_view frame) override;

  // True once messageStop was decoded (the metadata event may follow).
  bool done() const override { return done_; }

 private:
  absl::StatusOr<std::optional<v1::CompletionChunk>> BlockStart(const Json& payload);
  absl::StatusOr<std::optional<v1::CompletionChunk>> BlockDelta(const Json& payload);

  bool done_ = false;
  int next_tool_index_ = 0;
  // Content block index -> tool index, or -1 for a block of another kind.
  std::map<int64_t, int> tool_index_of_block_;
};

// `response` as a Converse response body, compact JSON with AWS's sorted
// keys: metrics {latencyMs: 0}; output.message {content, role "assistant"},
// the content a {text} block when there is text (or nothing else), then one
// {toolUse: {input, name, toolUseId}} block per tool call, `input` the
// parsed arguments ({} when empty; arguments that are not JSON as
// {"arguments": "<the text>"}); stopReason (StopReasonFromFinishReason);
// usage {inputTokens, outputTokens, totalTokens}.
std::string RenderResponse(const v1::CompletionResponse& response);

// `chunks` as the frames of a ConverseStream answer, deterministic bytes:
// messageStart; the text block (index 0, when there is any text) as one
// contentBlockDelta per chunk with text, then contentBlockStop; then one
// block per tool index in index order: contentBlockStart (id and name of
// its first fragments that have them), one contentBlockDelta per arguments
// fragment (a fragment that only announces the call makes none),
// contentBlockStop; then messageStop with the stop reason of the last
// finish reason and metadata with the last usage (zeros when none) and
// latencyMs 0. Text and arguments frames name the chunk they carry; the
// others none. Bedrock streams blocks one after another, so the fragments
// of interleaved tool calls are regrouped per call. `chunks` must outlive
// the renderer.
std::unique_ptr<EventRenderer> StreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks);
// Every frame of StreamRenderer(chunks), in order.
std::vector<std::string> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks);

// One event frame as Bedrock sends it: string headers `:event-type`
// `event_type`, `:content-type` application/json, `:message-type` event,
// in that order, and `payload`. A payload too large for a frame makes an
// internalServerException frame saying so instead.
std::string EventFrame(absl::string_view event_type, absl::string_view payload);
// An exception frame: `:exception-type` `exception_type`, `:content-type`
// application/json, `:message-type` exception, payload {"message": ...}.
std::string ExceptionFrame(absl::string_view exception_type, absl::string_view message);

// An error body as Bedrock answers one: {"message": ..., "__type": <the
// error type ErrorType names>}. Bedrock itself names the type in the
// `x-amzn-errortype` header; the AWS SDKs read `__type` from the body when
// the header is absent.
std::string ErrorBody(const absl::Status& status);

// The error type of a status code: ValidationException (INVALID_ARGUMENT,
// FAILED_PRECONDITION, OUT_OF_RANGE, ALREADY_EXISTS),
// UnrecognizedClientException (UNAUTHENTICATED), AccessDeniedException
// (PERMISSION_DENIED), ResourceNotFoundException (NOT_FOUND),
// ThrottlingException (RESOURCE_EXHAUSTED), ModelTimeoutException
// (DEADLINE_EXCEEDED), ConflictException (ABORTED),
// ServiceUnavailableException (UNAVAILABLE), InternalServerException
// (everything else).
absl::string_view ErrorType(absl::StatusCode code);

// The status code an error type stands for, however it is spelled: an
// exception frame's "throttlingException", a header's
// "ThrottlingException:http://internal.amazon.com/coral/..." or a body's
// "com.amazonaws.bedrockruntime#ThrottlingException". ErrorType's types
// and also ServiceQuotaExceededException (RESOURCE_EXHAUSTED),
// ModelNotReadyException (UNAVAILABLE), ModelErrorException and
// ModelStreamErrorException (INTERNAL), ExpiredTokenException and
// InvalidSignatureException (UNAUTHENTICATED); UNKNOWN for any other.
absl::StatusCode CodeFromErrorType(absl::string_view type);

// The message of a Bedrock error body ({"message": ...}, or "Message" as
// AWS's front door spells it), "" when there is none.
std::string UpstreamErrorMessage(absl::string_view body);

// Translates an InvokeModel body for an Anthropic model (Anthropic's
// Messages body with `anthropic_version`, without `model`): as
// anthropic::ParseRequest with `model`, the path's model id, as the
// canonical model. A `model` the body gives anyway (Bedrock refuses it) is
// kept in the canonical extra. Leaves `stream` false: the codec sets it
// from the path. Errors as anthropic::ParseRequest's. Thread-safe.
absl::StatusOr<ParsedRequest> ParseInvokeRequest(absl::string_view body, absl::string_view model);

// The ChunkDecoder of an InvokeModelWithResponseStream answer from an
// Anthropic model.
class InvokeStreamDecoder final : public ChunkDecoder {
 public:
  InvokeStreamDecoder() = default;

  // UNIMPLEMENTED: Bedrock streams frames, never server-sent events.
  absl::StatusOr<std::optional<v1::CompletionChunk>> Decode(const SseEvent& event) override;

  // Decodes one whole frame: a `chunk` event's payload {"bytes": base64}
  // holds one Anthropic stream event, decoded by anthropic::StreamDecoder
  // (whose errors name its fields under "data"); other event types carry
  // nothing. Fails as StreamDecoder::DecodeElement does for a malformed
  // frame or an exception frame, and with INVALID_ARGUMENT
  // "element.payload.bytes: ..." when `bytes` is missing or not base64.
  absl::StatusOr<std::optional<v1::CompletionChunk>> DecodeElement(
      absl::string_view frame) override;

  // True once the Anthropic stream's message_stop was decoded.
  bool done() const override { return anthropic_.done(); }

 private:
  anthropic::StreamDecoder anthropic_;
};

// `chunks` as the frames of an InvokeModelWithResponseStream answer: the
// events anthropic::StreamRenderer makes of them, each the base64 `bytes`
// of a `chunk` frame (EventFrame). `chunks` must outlive the renderer.
std::unique_ptr<EventRenderer> InvokeStreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks);

// The Converse codec (provider/codec.h): "bedrock", upstream "bedrock",
// AWS_ENDPOINT_URL_BEDROCK_RUNTIME.
std::unique_ptr<Codec> NewCodec();
// The InvokeModel codec for Anthropic bodies: "bedrock-invoke", upstream
// "bedrock", the same variable.
std::unique_ptr<Codec> NewInvokeCodec();

}  // namespace bedrock
}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_BEDROCK_H_
