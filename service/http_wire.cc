#include "service/http_wire.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/http_status.h"
#include "provider/anthropic.h"
#include "provider/embeddings.h"
#include "provider/gemini.h"
#include "provider/openai.h"
#include "provider/responses.h"
#include "recorder/canonical.h"

namespace understudy {
namespace service {
namespace {

// Decoders whose Decode has the codecs' common signature.
template <typename Decoder>
class SseDecoder final : public WireStreamDecoder {
 public:
  absl::StatusOr<std::optional<v1::CompletionChunk>> Decode(
      const provider::SseEvent& event) override {
    return decoder_.Decode(event);
  }

 private:
  Decoder decoder_;
};

class GeminiDecoder final : public WireStreamDecoder {
 public:
  absl::StatusOr<std::optional<v1::CompletionChunk>> Decode(
      const provider::SseEvent& event) override {
    return decoder_.Decode(event);
  }
  absl::StatusOr<std::optional<v1::CompletionChunk>> DecodeElement(
      absl::string_view json) override {
    return decoder_.DecodeElement(json);
  }

 private:
  provider::gemini::StreamDecoder decoder_;
};

// Embeddings never stream: every event is refused.
class NoStreamDecoder final : public WireStreamDecoder {
 public:
  absl::StatusOr<std::optional<v1::CompletionChunk>> Decode(const provider::SseEvent&) override {
    return absl::InvalidArgumentError("embeddings: a streamed answer was not expected");
  }
};

std::string ModelFor(const RenderContext& context, const v1::CompletionResponse& response) {
  if (!response.model().empty()) return response.model();
  if (context.call != nullptr && !context.call->model.empty()) return context.call->model;
  if (context.parsed != nullptr) return context.parsed->canonical.model();
  return "";
}

}  // namespace

absl::string_view NativeProvider(WireApi api) {
  switch (api) {
    case WireApi::kChatCompletions:
      return "openai";
    case WireApi::kMessages:
      return "anthropic";
    case WireApi::kResponses:
      return "openai-responses";
    case WireApi::kGemini:
      return "gemini";
    case WireApi::kEmbeddings:
      return "openai-embeddings";
  }
  return "openai";
}

absl::string_view UpstreamName(WireApi api) {
  switch (api) {
    case WireApi::kMessages:
      return "anthropic";
    case WireApi::kGemini:
      return "gemini";
    default:
      return "openai";
  }
}

replayer::TraceAttributes CallAttributes(WireApi api) {
  switch (api) {
    case WireApi::kChatCompletions:
      return {{std::string(kOpenAiApiType), "chat_completions"}};
    case WireApi::kResponses:
      return {{std::string(kOpenAiApiType), "responses"}};
    default:
      return {};
  }
}

std::string ErrorBody(WireApi api, const absl::Status& status, absl::string_view code) {
  switch (api) {
    case WireApi::kMessages:
      return provider::anthropic::ErrorBody(status.message(),
                                            provider::anthropic::ErrorType(status.code()));
    case WireApi::kGemini:
      return provider::gemini::ErrorBody(status);
    default:
      return provider::openai::ErrorBody(status.message(),
                                         provider::openai::ErrorType(status.code()), code);
  }
}

absl::StatusOr<provider::ParsedRequest> ParseRequest(const WireCall& call, absl::string_view body) {
  switch (call.api) {
    case WireApi::kChatCompletions:
      return provider::openai::ParseRequest(body);
    case WireApi::kMessages:
      return provider::anthropic::ParseRequest(body);
    case WireApi::kResponses:
      return provider::responses::ParseRequest(body);
    case WireApi::kEmbeddings:
      return provider::embeddings::ParseRequest(body);
    case WireApi::kGemini: {
      absl::StatusOr<provider::ParsedRequest> parsed =
          provider::gemini::ParseRequest(body, call.model);
      if (parsed.ok()) {
        parsed->stream = call.gemini_stream;
        parsed->include_usage = call.gemini_stream;
        parsed->json_array_stream = call.gemini_stream && !call.gemini_sse;
      }
      return parsed;
    }
  }
  return absl::InternalError("unknown API");
}

absl::StatusOr<v1::CompletionResponse> ParseResponse(WireApi api, absl::string_view body) {
  switch (api) {
    case WireApi::kChatCompletions:
      return provider::openai::ParseResponse(body);
    case WireApi::kMessages:
      return provider::anthropic::ParseResponse(body);
    case WireApi::kResponses:
      return provider::responses::ParseResponse(body);
    case WireApi::kGemini:
      return provider::gemini::ParseResponse(body);
    case WireApi::kEmbeddings:
      return provider::embeddings::ParseResponse(body);
  }
  return absl::InternalError("unknown API");
}

std::unique_ptr<WireStreamDecoder> WireStreamDecoder::For(WireApi api) {
  switch (api) {
    case WireApi::kChatCompletions:
      return std::make_unique<SseDecoder<provider::openai::StreamDecoder>>();
    case WireApi::kMessages:
      return std::make_unique<SseDecoder<provider::anthropic::StreamDecoder>>();
    case WireApi::kResponses:
      return std::make_unique<SseDecoder<provider::responses::StreamDecoder>>();
    case WireApi::kGemini:
      return std::make_unique<GeminiDecoder>();
    case WireApi::kEmbeddings:
      return std::make_unique<NoStreamDecoder>();
  }
  return std::make_unique<NoStreamDecoder>();
}

absl::StatusOr<std::optional<v1::CompletionChunk>> WireStreamDecoder::DecodeElement(
    absl::string_view) {
  return absl::UnimplementedError("only Gemini streams JSON array elements");
}

absl::StatusOr<std::string> RenderBody(WireApi api, const v1::CompletionResponse& response,
                                       const RenderContext& context) {
  switch (api) {
    case WireApi::kChatCompletions:
      return provider::openai::RenderResponse(response, context.created);
    case WireApi::kMessages:
      return provider::anthropic::RenderResponse(response);
    case WireApi::kResponses: {
      provider::responses::RenderMeta meta;
      meta.id = context.response_id;
      meta.created_at = context.created;
      meta.model = ModelFor(context, response);
      return provider::responses::RenderResponse(response, meta);
    }
    case WireApi::kGemini:
      return provider::gemini::RenderResponse(response, ModelFor(context, response));
    case WireApi::kEmbeddings:
      if (context.parsed == nullptr) return absl::InternalError("embeddings: no request");
      return provider::embeddings::RenderResponse(context.parsed->canonical,
                                                  ModelFor(context, response));
  }
  return absl::InternalError("unknown API");
}

absl::StatusOr<std::unique_ptr<provider::EventRenderer>> StreamRenderer(
    WireApi api, const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
    const RenderContext& context) {
  switch (api) {
    case WireApi::kChatCompletions: {
      const provider::openai::StreamMeta meta =
          context.recorded_body.empty()
              ? provider::openai::StreamMeta{context.created, "", ""}
              : provider::openai::StreamMetaFromBody(context.recorded_body, context.created);
      const bool include_usage = context.parsed != nullptr && context.parsed->include_usage;
      return provider::openai::StreamRenderer(chunks, include_usage, meta);
    }
    case WireApi::kMessages:
      return provider::anthropic::StreamRenderer(chunks);
    case WireApi::kResponses: {
      provider::responses::RenderMeta meta;
      meta.id = context.response_id;
      meta.created_at = context.created;
      meta.model = context.parsed != nullptr ? context.parsed->canonical.model() : "";
      return provider::responses::StreamRenderer(chunks, meta);
    }
    case WireApi::kGemini: {
      const bool sse = context.call == nullptr || context.call->gemini_sse;
      return provider::gemini::StreamRenderer(chunks, context.call != nullptr ? context.call->model : "",
                                              sse);
    }
    case WireApi::kEmbeddings:
      return absl::UnimplementedError("embeddings are never streamed");
  }
  return absl::InternalError("unknown API");
}

std::string ResponseIdFor(const v1::CompletionRequest& request, const v1::Exchange& exchange) {
  if (!exchange.response().id().empty() && absl::StartsWith(exchange.response().id(), "resp")) {
    return exchange.response().id();
  }
  // Same conversation and answer, same id: a scripted answer keeps its id
  // from one replay to the next.
  std::string seed = recorder::CanonicalText(request);
  absl::StrAppend(&seed, "\x1f", exchange.response().SerializeAsString());
  return provider::responses::DerivedId("resp_", seed);
}

std::string RecordedResponseObject(const v1::NativeExchange& native) {
  if (native.chunks_size() == 0) return native.response_body();
  for (int i = native.chunks_size() - 1; i >= 0; --i) {
    provider::SseParser parser;
    absl::StatusOr<std::vector<provider::SseEvent>> events = parser.Feed(native.chunks(i).data());
    if (!events.ok()) continue;
    absl::StatusOr<std::vector<provider::SseEvent>> rest = parser.Finish();
    if (rest.ok()) events->insert(events->end(), rest->begin(), rest->end());
    for (auto it = events->rbegin(); it != events->rend(); ++it) {
      std::string object = provider::responses::ResponseObjectFromEvent(it->data);
      if (!object.empty()) return object;
    }
  }
  return "";
}

bool IsEventStream(absl::string_view content_type) {
  return absl::StartsWith(absl::AsciiStrToLower(content_type), "text/event-stream");
}

}  // namespace service
}  // namespace understudy
