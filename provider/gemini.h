// The Google Gemini API (POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent) translated to and from understudy's canonical
// messages. Pure functions of their arguments: JSON text in, protos out and
// back; no HTTP, no I/O. The same set as openai.h, plus what Gemini's
// second stream shape needs:
//
//   ParseRequest / ParseResponse                 recording through the API
//   StreamDecoder::Decode(event)                 `?alt=sse` streams (events
//                                                from SseParser)
//   JsonArraySplitter + StreamDecoder::
//     DecodeElement(ElementJson(segment))        streams without alt=sse: one
//                                                JSON array, sent element by
//                                                element
//   RenderResponse / RenderStream / ErrorBody    replaying to a Gemini client
//                                                what was recorded another way
//
// Shapes. Gemini keeps the system prompt beside the turns and the tool
// traffic inside them as parts; the canonical form is a flat list of turns:
//   `systemInstruction`        -> a leading "system" message (its text)
//   role "user" / "model"      -> "user" / "assistant" (absent: "user")
//   `text` parts               -> the message content, concatenated
//   `functionCall` parts       -> the message's tool_calls, id = the call's
//                                 `id` or "", arguments = `args` as compact
//                                 JSON ("{}" when absent)
//   `functionResponse` parts   -> one "tool" message each (name, tool_call_id
//                                 = `id` or "", content = `response` as
//                                 compact JSON), before the message holding
//                                 the content's other parts, if any
//   finishReason               -> finish_reason (see ParseResponse)
//
// Spelling. Like the API, ParseRequest reads every field it maps under its
// JSON name (lowerCamelCase, `systemInstruction`) or its proto name
// (snake_case, `system_instruction`, as Google's REST samples write it);
// a field given under both names is an error. Fields kept in `extra` keep
// the spelling they were sent with, except the container of the unmapped
// generationConfig members, always "generationConfig".
//
// Lossless matching: what has no canonical field is kept verbatim in the
// `extra` of the request or of the message it came from (null fields are
// the same as absent ones):
//   - top-level fields other than those mapped and kIgnoredRequestFields
//     (toolConfig, safetySettings, cachedContent, ...);
//   - the members of `generationConfig` other than temperature, topP,
//     maxOutputTokens, stopSequences and seed, under "generationConfig"
//     (responseMimeType, responseSchema, thinkingConfig, topK, ...);
//   - a content's fields other than role and parts, and role "function"
//     (the API's older role for function responses, read as "user"), in
//     the extra of the first canonical message made from it;
//   - parts the canonical message cannot reproduce exactly: the whole
//     `parts` array in the extra of the first message made from the content
//     (its content still holds the text of the non-thought text parts).
//     Exact are: at most one plain {text} part, first, followed by plain
//     {functionCall: {name, args, id}} parts; or only plain
//     {functionResponse: {name, response, id}} parts. Anything else (several
//     text parts, thought parts, thoughtSignature, inlineData, fileData,
//     executableCode, a functionResponse beside other parts, ...) is kept;
//   - a system instruction that is not one plain text part: its `parts`
//     (and fields other than role) in the system message's extra. The role
//     of a system instruction is dropped: the API ignores it;
//   - tools other than `functionDeclarations` (googleSearch, codeExecution,
//     ...) or declarations with fields beyond name, description and one of
//     parameters / parametersJsonSchema: the whole `tools` array in extra.
#ifndef UNDERSTUDY_PROVIDER_GEMINI_H_
#define UNDERSTUDY_PROVIDER_GEMINI_H_

#include <cstddef>
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
#include "provider/json_array_stream.h"
#include "provider/parsed_request.h"
#include "provider/sse.h"
#include "provider/stream_render.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace provider {
namespace gemini {

// Top-level request fields that never change the model's answer, so
// ParseRequest leaves them out of the canonical request (and out of
// matching): Vertex AI's billing `labels`. Everything else in a
// GenerateContentRequest (safetySettings, toolConfig, cachedContent, ...)
// can change the answer. How the answer is delivered is not in the body at
// all (the URL says :streamGenerateContent and alt=sse). Printed by
// `understudy serve --help`.
inline constexpr absl::string_view kIgnoredRequestFields[] = {"labels"};

// Translates a GenerateContentRequest body (see the file comment for the
// shapes). `model` is the model of the URL path without its "models/"
// prefix; it becomes `canonical.model`. Maps `contents` (required array),
// `systemInstruction` (a Content, or a plain string as some clients send),
// `tools[].functionDeclarations[]` (name, description, parameters or
// parametersJsonSchema as compact JSON) and `generationConfig` temperature,
// topP, maxOutputTokens (params.max_tokens), stopSequences (params.stop) and
// seed. Leaves `stream` and `include_usage` false and `stream_framing` SSE: the
// service sets them from the URL.
//
// Fails with INVALID_ARGUMENT naming the bad field's path and what was
// expected, e.g. "contents: missing; expected an array of contents",
// "contents[1].parts[0]: unknown part; expected one of text, inlineData,
// fileData, functionCall, functionResponse, ...", "contents[0].role:
// expected \"user\", \"model\" or \"function\", got \"system\"",
// "generationConfig.top_p: given twice, also as topP", "body: invalid JSON
// at byte 3: ...". Thread-safe.
absl::StatusOr<ParsedRequest> ParseRequest(absl::string_view body, absl::string_view model);

// Translates a (non-streamed) GenerateContentResponse: responseId -> id,
// modelVersion -> model; of candidate 0 (the one with `index` 0), the
// non-thought text parts concatenated as content and the functionCall parts
// as tool calls (id = `id` or "", arguments = `args` as compact JSON, "{}"
// when absent), other parts dropped; usageMetadata promptTokenCount /
// candidatesTokenCount -> input / output tokens. finish_reason is
// "tool_calls" for STOP when the answer has function calls (Gemini says STOP
// for those), else by FinishReasonFromGemini; a body with no candidates but
// a promptFeedback.blockReason is an empty answer with finish_reason
// "content_filter". Fails with INVALID_ARGUMENT naming the bad field, a
// body with neither candidates nor a block reason included. Thread-safe.
absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body);

// Gemini's finishReason as a canonical finish_reason: "" -> "", STOP ->
// "stop", MAX_TOKENS -> "length", SAFETY, RECITATION, BLOCKLIST,
// PROHIBITED_CONTENT and SPII -> "content_filter", any other -> its lower
// case ("malformed_function_call"), so that FinishReasonToGemini gives it
// back.
std::string FinishReasonFromGemini(absl::string_view reason);

// The reverse, for rendering: "stop" and "tool_calls" -> STOP, "length" ->
// MAX_TOKENS, "content_filter" -> SAFETY, "" -> "", any other -> its upper
// case.
std::string FinishReasonToGemini(absl::string_view finish_reason);

// The ChunkDecoder of a Gemini stream, one chunk per
// GenerateContentResponse, as SSE events or JSON-array elements. Gemini
// sends every functionCall part whole (name and all its arguments at once),
// so each becomes one ToolCallDelta with id, name and arguments, its index the number of function calls the stream carried
// before it (0, 1, ...).
class StreamDecoder final : public ChunkDecoder {
 public:
  StreamDecoder() = default;

  // Decodes one event of an `?alt=sse` stream. Returns a chunk (id from
  // responseId, model from modelVersion, the content and tool calls of
  // candidate 0 as in ParseResponse, finish_reason, usage from
  // usageMetadata) for every GenerateContentResponse, including ones with
  // no candidates; std::nullopt for `data: [DONE]`, which Gemini does not
  // send but proxies in front of it may. STOP is "tool_calls" once the
  // stream has carried a function call, so the chunks assemble to what
  // ParseResponse makes of the same answer sent whole. Events after the one
  // that finished the answer are decoded too.
  //
  // Fails with INVALID_ARGUMENT naming the bad field under "data" for
  // malformed data; and, for an error object sent in the stream
  // ({"error": {"code": 429, "message": ..., "status":
  // "RESOURCE_EXHAUSTED"}}), with the code its `status` names
  // (CodeFromStatusName; from the HTTP `code` when there is no status) and
  // the message "upstream stream error (STATUS): <message>".
  absl::StatusOr<std::optional<v1::CompletionChunk>> Decode(const SseEvent& event) override;

  // Decodes one element of a JSON-array stream (ElementJson of a
  // JsonArraySplitter segment), as Decode does the data of an event; paths
  // in errors start with "element".
  absl::StatusOr<std::optional<v1::CompletionChunk>> DecodeElement(absl::string_view json) override;

  // True once a chunk with a finish reason (or a prompt block reason) was
  // decoded, or `data: [DONE]`.
  bool done() const override { return done_; }

 private:
  absl::StatusOr<std::optional<v1::CompletionChunk>> DecodeJson(absl::string_view text,
                                                                absl::string_view where);

  bool done_ = false;
  int32_t next_tool_index_ = 0;
};


// `response` as a GenerateContentResponse for a Gemini client, compact JSON
// with a fixed key order: one candidate whose content (role "model") has a
// text part when there is text, then one functionCall part per tool call
// ({"id" when not empty, "name", "args"}), or a single empty text part when
// there is neither; finishReason FinishReasonToGemini(finish_reason), STOP
// when empty; index 0; usageMetadata with totalTokenCount (when the response
// has usage); modelVersion = response.model, or `model` when that is empty;
// responseId when the id is not empty.
//
// `args` must be a JSON object: arguments that are one are sent as parsed
// (their key order kept), empty arguments as {}, and anything else (text
// that is not JSON, or JSON that is not an object, as another provider may
// have recorded) as {"arguments": "<the text>"}, so nothing is lost and a
// client's JSON parse of the call still succeeds.
std::string RenderResponse(const v1::CompletionResponse& response, absl::string_view model);

// `chunks` as a Gemini stream, one element per chunk, deterministic bytes.
// Each chunk is a GenerateContentResponse shaped as RenderResponse's (but
// without a finishReason unless the chunk has one, and with usageMetadata
// only on chunks with usage), with the id and model of the first chunk
// that has them (`model` when none has one). A tool call is sent whole, as
// Gemini does, in the chunk that holds its last fragment: fragments are
// joined per index (id and name from the first that has them, arguments
// concatenated). An empty `chunks` is rendered as one empty answer with
// finishReason STOP.
//
// With `sse`, each element is an event "data: {...}\r\n\r\n" (Google ends
// its events with CRLF). Without, the elements are the segments of a JSON
// array as Google sends it: "[{...}", "\n,\r\n{...}", ..., and one last
// element "\n]" that closes the array, so elements map 1:1 to chunks
// except the last.
std::vector<std::string> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks, absl::string_view model,
    bool sse);
// The same elements one at a time (provider/stream_render.h), each chunk's
// with that chunk's index; `chunks` must outlive the renderer.
std::unique_ptr<EventRenderer> StreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks, absl::string_view model,
    bool sse);

// A Google API error body:
// {"error":{"code":<HTTP status>,"message":"...","status":"<CODE_NAME>"}},
// the HTTP status by HttpStatusFor (base/http_status.h) and the code's
// canonical name as absl spells it (INVALID_ARGUMENT, NOT_FOUND,
// RESOURCE_EXHAUSTED, ...).
std::string ErrorBody(const absl::Status& status);

// The status code a Google error `status` names ("RESOURCE_EXHAUSTED" ->
// kResourceExhausted); kUnknown for names it does not know.
absl::StatusCode CodeFromStatusName(absl::string_view name);

// The Gemini API's codec (provider/codec.h), as provider/codecs.cc
// registers it: "gemini", upstream "gemini".
std::unique_ptr<Codec> NewCodec();
// Vertex AI's Gemini codec: the same bodies under Vertex's routes
// (/v1/projects/{p}/locations/{l}/publishers/google/models/{m}:method, and
// /v1/publishers/google/models/{m}:method for an API key's express mode);
// "vertex", upstream "vertex", GOOGLE_VERTEX_BASE_URL.
std::unique_ptr<Codec> NewVertexCodec();

}  // namespace gemini
}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_GEMINI_H_
