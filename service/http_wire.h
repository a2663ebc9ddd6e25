// The model APIs the HTTP listener speaks, each as the codec calls it
// needs: parse a request body, read an upstream's answer (whole or event by
// event), render an answer that was not recorded over the same API, and
// shape an error. One switch per question, so that adding an API means
// adding a case here and a codec in provider/, not another branch in every
// caller.
#ifndef UNDERSTUDY_SERVICE_HTTP_WIRE_H_
#define UNDERSTUDY_SERVICE_HTTP_WIRE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_field.h"
#include "provider/parsed_request.h"
#include "provider/sse.h"
#include "provider/stream_render.h"
#include "replayer/engine.h"
#include "understudy/v1/completion.pb.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace service {

enum class WireApi {
  kChatCompletions,  // OpenAI POST /v1/chat/completions
  kMessages,         // Anthropic POST /v1/messages
  kResponses,        // OpenAI POST /v1/responses
  kGemini,           // Gemini POST /v1beta/models/{model}:generateContent
  kEmbeddings,       // OpenAI POST /v1/embeddings
};

// What a request's route says besides its body.
struct WireCall {
  WireApi api = WireApi::kChatCompletions;
  // Gemini: the model named in the path ("models/" removed).
  std::string model;
  // Gemini: :streamGenerateContent, and whether with `alt=sse`.
  bool gemini_stream = false;
  bool gemini_sse = false;
};

// NativeExchange.provider of exchanges recorded over `api`: "openai",
// "anthropic", "openai-responses", "gemini", "openai-embeddings". A
// recording is replayed byte for byte only to a caller of the same API.
absl::string_view NativeProvider(WireApi api);

// The --upstream name `api` forwards to: "openai" (Chat Completions,
// Responses, embeddings), "anthropic", "gemini".
absl::string_view UpstreamName(WireApi api);

// OpenTelemetry's attribute telling the OpenAI APIs apart. The GenAI
// conventions name both APIs' operation `chat` (gen_ai.operation.name) and
// give no other operation name to Responses; this says which one it was.
inline constexpr absl::string_view kOpenAiApiType = "openai.api.type";

// What the trace events of a call over `api` say of it besides its request
// (replayer::CallInfo::attributes): kOpenAiApiType = "chat_completions" or
// "responses" for those APIs; nothing for the others.
replayer::TraceAttributes CallAttributes(WireApi api);

// An error body in `api`'s shape; `code` is understudy's stable code ("" for
// none; Gemini's shape has no place for it).
std::string ErrorBody(WireApi api, const absl::Status& status, absl::string_view code);

// The body translated (provider/*.h ParseRequest). Gemini's stream flags
// come from `call`, not the body.
absl::StatusOr<provider::ParsedRequest> ParseRequest(const WireCall& call, absl::string_view body);

// An upstream's whole (not streamed) answer translated.
absl::StatusOr<v1::CompletionResponse> ParseResponse(WireApi api, absl::string_view body);

// Decodes a streamed answer, event by event (SSE), or element by element
// (Gemini's JSON array stream). One per stream; not thread-safe.
class WireStreamDecoder {
 public:
  static std::unique_ptr<WireStreamDecoder> For(WireApi api);
  virtual ~WireStreamDecoder() = default;
  // A chunk for an event that carries one, std::nullopt for one that does
  // not; a non-OK status for an error the stream reports.
  virtual absl::StatusOr<std::optional<v1::CompletionChunk>> Decode(
      const provider::SseEvent& event) = 0;
  // Gemini's JSON array elements (UNIMPLEMENTED for the others).
  virtual absl::StatusOr<std::optional<v1::CompletionChunk>> DecodeElement(
      absl::string_view json);
};

// What a rendered answer needs besides the exchange.
struct RenderContext {
  // `created` of the recording (0 for scripted answers), for OpenAI shapes.
  int64_t created = 0;
  // Responses: the response id to render (see ResponseIdFor).
  std::string response_id;
  // The request being answered (embeddings render from its inputs; Gemini
  // names the model of its path).
  const provider::ParsedRequest* parsed = nullptr;
  const WireCall* call = nullptr;
  // Chat Completions: what a whole recorded body said, for a stream.
  std::string recorded_body;
};

// `response` as a whole body in `api`'s shape.
absl::StatusOr<std::string> RenderBody(WireApi api, const v1::CompletionResponse& response,
                                       const RenderContext& context);

// `chunks` as a stream in `api`'s shape (SSE events, or Gemini's JSON array
// pieces), rendered one event at a time: each event that carries a chunk
// names it (its recorded offset paces the event). `chunks` must outlive the
// renderer; what it needs of `context` is copied. UNIMPLEMENTED for
// embeddings, which never stream.
absl::StatusOr<std::unique_ptr<provider::EventRenderer>> StreamRenderer(
    WireApi api, const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
    const RenderContext& context);

// Responses: the id the caller gets for `exchange`: the recorded one when it
// has one, otherwise one derived from the request and answer (same
// conversation, same id, in every process).
std::string ResponseIdFor(const v1::CompletionRequest& request, const v1::Exchange& exchange);

// Responses: the response object of a recorded native answer (its body, or
// the `response` of its last stream event), "" when there is none.
std::string RecordedResponseObject(const v1::NativeExchange& native);

// The stream form a recorded native exchange has: true for SSE.
bool IsEventStream(absl::string_view content_type);

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_HTTP_WIRE_H_
