// The Ollama API (POST /api/chat, /api/generate and /api/embed) translated
// to and from understudy's canonical messages. Pure functions of their
// arguments: JSON text in, protos out and back; no HTTP, no I/O.
//
//   ParseRequest(endpoint, body)               recording through the API
//   ParseResponse(body)                        a whole answer of any endpoint
//   NdjsonSplitter + StreamDecoder::
//     DecodeElement(Element(segment))          a streamed answer: one JSON
//                                              object per line
//   RenderResponse / RenderEmbedResponse /     replaying to an Ollama client
//   StreamRenderer / ErrorBody / ModelList     what was recorded another way
//
// An exchange recorded over this very API is replayed from its stored
// native bytes instead.
//
// Streams. Ollama streams unless the body says `"stream": false` (the
// default is true, though the npm and Python clients always send the
// field). A stream is NDJSON ("application/x-ndjson"): one object per line,
// each a piece of the answer with "done": false, the last with "done":
// true, the done reason and the counts. /api/embed never streams.
//
// Shapes (chat):
//   `messages[].role`           -> role: "system", "user", "assistant" or
//                                  "tool" (others are refused)
//   `messages[].content`        -> content (absent: "")
//   `messages[].tool_calls`     -> tool_calls: id = `id` or "", name =
//                                  function.name, arguments = the
//                                  function.arguments OBJECT as compact JSON
//                                  ("{}" when absent); Ollama's arguments are
//                                  an object, never a string
//   `messages[].tool_name`      -> name (the tool a "tool" message answers)
//   `tools[]` of type function  -> tools (name, description, parameters)
//   `options` temperature, top_p, num_predict, stop, seed
//                               -> params (temperature, top_p, max_tokens,
//                                  stop, seed)
// Shapes (generate): `system` (when not empty) -> a leading "system"
// message, `prompt` -> one "user" message (absent: ""), `options` as for
// chat, and canonical.operation "text_completion" (OpenTelemetry's name for
// a prompt-in, text-out call), so that a chat and a generate request never
// match each other's recordings: their native bodies differ in shape.
// Shapes (embed): canonical.operation "embeddings", one "user" message per
// input in order (provider/embeddings.h's canonical form).
// Answers: `message.content` (chat) or `response` (generate) -> content,
// `message.tool_calls` -> tool calls, `done_reason` -> finish_reason (see
// FinishReasonFromOllama), `prompt_eval_count` / `eval_count` -> input /
// output tokens; Ollama has no response id (id ""). `thinking`, `context`,
// `logprobs` and the durations have no canonical place: they survive only in
// a native replay.
//
// Lossless matching: what has no canonical field is kept verbatim in the
// `extra` of the request or of the message it came from, as compact JSON
// with sorted keys (null fields are the same as absent ones):
//   - top-level fields other than those mapped and kIgnoredRequestFields
//     (format, think, logprobs, top_logprobs; generate's suffix, template,
//     raw, context, images; embed's truncate, dimensions, options);
//   - the members of `options` other than the five mapped, under "options"
//     (top_k, num_ctx, repeat_penalty, ...);
//   - a message's fields other than role, content, tool_calls and tool_name
//     (images, thinking, ...);
//   - tool calls the canonical ones cannot reproduce exactly (fields beyond
//     id and function {index, name, arguments}, or an index that is not the
//     call's position): the whole `tool_calls` array in the message's extra;
//   - tools other than {type: "function", function: {name, description,
//     parameters}}: the whole `tools` array in the request's extra.
//
// Rendered answers are deterministic (same inputs, same bytes): created_at
// is the RenderContext's `created` as RFC 3339 UTC, durations are 0.
#ifndef UNDERSTUDY_PROVIDER_OLLAMA_H_
#define UNDERSTUDY_PROVIDER_OLLAMA_H_

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
namespace ollama {

// Top-level request fields that never change the model's answer, so
// ParseRequest leaves them out of the canonical request (and out of
// matching): how the answer is delivered (`stream`) and how long the server
// keeps the model loaded afterwards (`keep_alive`). Printed by `understudy
// serve --help`.
inline constexpr absl::string_view kIgnoredRequestFields[] = {"stream", "keep_alive"};

// The content type of an Ollama stream.
inline constexpr absl::string_view kNdjsonContentType = "application/x-ndjson";

// canonical.operation of a /api/generate request.
inline constexpr absl::string_view kGenerateOperation = "text_completion";

// The endpoints the codec serves.
enum class Endpoint { kChat, kGenerate, kEmbed };

// The endpoint `path` (normalized, no query) names; nullopt for any other
// path.
std::optional<Endpoint> EndpointOf(absl::string_view path);

// The endpoint a canonical request was made for, by its operation
// ("embeddings", kGenerateOperation, else chat): how to answer it when no
// route says.
Endpoint EndpointOfRequest(const v1::CompletionRequest& canonical);

// True when `content_type` is NDJSON's (any case, parameters ignored).
bool IsNdjson(absl::string_view content_type);

// Translates a request body of `endpoint` (see the file comment for the
// shapes). Chat: `model` (required string), `messages` (array; absent: none),
// `tools`, `options`. Generate: `model`, `prompt`, `system`, `options`.
// Embed: `model`, `input` (a string or an array of strings; absent, "" and
// [] are no input at all, as Ollama loads the model for them), `dimensions`
// (when given, an integer in [1, embeddings::kMaxDimensions]). Chat and
// generate set `stream` from `stream` (a boolean; absent: true), and then
// `include_usage` (the last line always has the counts) and
// `stream_framing` kNdjson; embed never streams.
//
// Fails with INVALID_ARGUMENT naming the bad field's path and what was
// expected, e.g. "messages[0].role: expected \"system\", \"user\",
// \"assistant\" or \"tool\", got \"robot\"",
// "messages[1].tool_calls[0].function.arguments: expected an object, got
// string", "options.temperature: expected a number, got string", "stream:
// expected a boolean, got string", "body: invalid JSON at byte 3: ...",
// "body: invalid UTF-8 at byte 9". Thread-safe.
absl::StatusOr<ParsedRequest> ParseRequest(Endpoint endpoint, absl::string_view body);

// Translates a whole (not streamed) answer of any endpoint, told apart by
// its fields: `message` (chat), `response` (generate) or `embeddings`
// (embed). Chat and generate as in the file comment; finish_reason is
// FinishReasonFromOllama of done_reason (absent: "stop" when done, else "").
// Embed: model and prompt_eval_count (input tokens), an empty assistant
// message and finish_reason "stop"; the vectors, checked to be arrays of
// numbers, stay in the stored native body. Fails with INVALID_ARGUMENT
// naming the bad field (a body with none of the three included).
// Thread-safe.
absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body);

// Ollama's done_reason as a canonical finish_reason: "stop" is
// "tool_calls" when the answer has tool calls (`has_calls`), else "stop";
// any other ("length", "load", "unload") is kept as it is.
std::string FinishReasonFromOllama(absl::string_view done_reason, bool has_calls);

// The reverse, for rendering: "tool_calls" and "" are "stop"; any other is
// kept ("stop", "length", "content_filter", ...).
std::string FinishReasonToOllama(absl::string_view finish_reason);

// The ChunkDecoder of an Ollama stream: one chunk per line (chat or
// generate), so that the recorded boundaries are kept. Ollama sends each
// tool call whole (name and all its arguments at once), so each becomes one
// ToolCallDelta with id, name and arguments, its index the number of calls
// the stream carried before it (0, 1, ...).
class StreamDecoder final : public ChunkDecoder {
 public:
  StreamDecoder() = default;

  // Decodes one line (NdjsonSplitter::Element of a segment). Returns a
  // chunk (model, the line's content or response, its tool calls; on the
  // line with "done": true the finish reason, FinishReasonFromOllama of
  // done_reason; usage when the line has counts) for every line, including
  // ones that carry only thinking. Fails with INVALID_ARGUMENT naming the
  // bad field under "element"; and, for an error line ({"error": "..."}),
  // with UNKNOWN (the line names no kind) and the message "upstream stream
  // error: <message>".
  absl::StatusOr<std::optional<v1::CompletionChunk>> DecodeElement(absl::string_view json) override;

  // The same for the data of a server-sent event (a server in front of
  // Ollama that re-frames its stream); paths start with "data". An event
  // with no data carries nothing.
  absl::StatusOr<std::optional<v1::CompletionChunk>> Decode(const SseEvent& event) override;

  // True once a line with "done": true was decoded.
  bool done() const override { return done_; }

 private:
  absl::StatusOr<std::optional<v1::CompletionChunk>> DecodeJson(absl::string_view text,
                                                                absl::string_view where);

  bool done_ = false;
  int32_t next_tool_index_ = 0;
};

// `unix_seconds` as Ollama's created_at, RFC 3339 in UTC
// ("1970-01-01T00:00:00Z").
std::string CreatedAt(int64_t unix_seconds);

// `response` as a whole chat or generate answer (`endpoint` kChat or
// kGenerate), compact JSON with a fixed key order: model (the response's,
// else `model`), created_at = CreatedAt(created), `message` {role
// "assistant", content, tool_calls when any: [{"id" when not empty,
// "function": {"index", "name", "arguments"}}]} or `response` (generate:
// tool calls have no place and are left out), done true, done_reason =
// FinishReasonToOllama, then total_duration, load_duration,
// prompt_eval_count, prompt_eval_duration, eval_count, eval_duration (the
// durations 0, the counts the usage's, 0 without).
//
// `arguments` must be a JSON object: arguments that are one are sent as
// parsed (their key order kept), empty arguments as {}, and anything else
// (text that is not JSON, or JSON that is not an object, as another API may
// have recorded) as {"arguments": "<the text>"}, so nothing is lost and the
// client still gets an object.
std::string RenderResponse(const v1::CompletionResponse& response, Endpoint endpoint,
                           absl::string_view model, int64_t created);

// The number of dimensions RenderEmbedResponse gives `model` when the
// request does not say: 384 for names starting with "all-minilm", 1024 for
// "mxbai-embed-large", else 768 (nomic-embed-text, the most pulled).
int64_t DefaultEmbedDimensions(absl::string_view model);

// An /api/embed answer to `request` (a canonical embeddings request, as
// ParseRequest makes it) with provider/embeddings.h's PseudoEmbedding of
// each input, in order, with the request's `dimensions` (from its extra)
// or DefaultEmbedDimensions(model). Each value is the float32's shortest
// form that reads back the same. prompt_eval_count is the sum over the
// inputs of ceil(bytes / 4); durations are 0. Compact JSON, fixed key
// order: {"model":...,"embeddings":[[...]],"total_duration":0,
// "load_duration":0,"prompt_eval_count":N}. Thread-safe.
std::string RenderEmbedResponse(const v1::CompletionRequest& request, absl::string_view model);

// What a rendered stream needs besides its chunks.
struct StreamShape {
  // kChat or kGenerate: lines with `message` or with `response`.
  Endpoint endpoint = Endpoint::kChat;
  // The model, when no chunk names one.
  std::string model;
  // created_at of every line (CreatedAt).
  int64_t created = 0;
  // A whole answer recorded over this API ("" for none): its created_at,
  // durations and generate `context` go into the stream, so that the stream
  // says what the body said.
  std::string recorded_body;
};

// `chunks` as an Ollama stream, one line ("{...}\n") per chunk,
// deterministic bytes: each a chat or generate line shaped as
// RenderResponse's, "done": false, with the chunk's content and the tool
// calls whose last fragment it holds (fragments joined per index: id and
// name from the first that has them, arguments concatenated); the last
// chunk's line is the "done": true one, with the done reason of the last
// chunk that has a finish reason and the counts of the last that has usage.
// An empty `chunks` is one empty done line. `chunks` must outlive the
// renderer; each event names its chunk.
std::unique_ptr<EventRenderer> StreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
    const StreamShape& shape);
// Every line of StreamRenderer at once.
std::vector<std::string> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
    const StreamShape& shape);

// Ollama's error body: {"error":"<message>"} (Ollama's errors carry no
// code; the HTTP status says it).
std::string ErrorBody(const absl::Status& status);

// The message of an Ollama error body ({"error": "..."}), else that of the
// common {"error": {"message": ...}} shape; "" when it holds neither.
std::string ErrorMessage(absl::string_view body);

// `models` as GET /api/tags answers: {"models":[{"name","model",
// "modified_at","size","digest","details":{...}}]}, in the given order, with
// values that depend on the name alone (modified_at the epoch, size 0, a
// digest of 64 hex digits derived from the name, details with format
// "gguf" and empty strings elsewhere).
std::string ModelList(const std::vector<std::string>& models);

// The Ollama API's codec (provider/codec.h), as provider/codecs.cc
// registers it.
std::unique_ptr<Codec> NewCodec();

}  // namespace ollama
}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_OLLAMA_H_
