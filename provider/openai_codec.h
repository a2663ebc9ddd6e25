// What the OpenAI APIs (Chat Completions, Responses, embeddings) share as
// codecs (provider/codec.h): one upstream, one error shape, one set of
// replayed headers, one trace attribute telling them apart.
#ifndef UNDERSTUDY_PROVIDER_OPENAI_CODEC_H_
#define UNDERSTUDY_PROVIDER_OPENAI_CODEC_H_

#include <string>

#include "absl/strings/string_view.h"
#include "provider/codec.h"
#include "trace/vocabulary.h"

namespace understudy {
namespace provider {

// OpenTelemetry's attribute telling the OpenAI APIs apart. The GenAI
// conventions name both APIs' operation `chat` (gen_ai.operation.name) and
// give no other operation name to Responses; this says which one it was.
inline constexpr absl::string_view kOpenAiApiType = trace::attr::kOpenAiApiType;

// The base of the OpenAI APIs' codecs: upstream "openai", OpenAI's error
// shape ({"error": {...}} with understudy's code), the listener's own
// refusals as `invalid_request_error` with code "body_too_large" (413) or
// "bad_request", and OpenAI's response headers replayed (processing time,
// version, x-ratelimit-*).
class OpenAiFamilyCodec : public Codec {
 public:
  absl::string_view upstream() const override { return "openai"; }
  // openai for Node and Python, @openai/agents, @ai-sdk/openai: the URL
  // ends in /v1.
  std::pair<absl::string_view, absl::string_view> BaseUrlVariable() const override {
    return {"OPENAI_BASE_URL", "/v1"};
  }
  bool ReplaysHeader(absl::string_view name) const override;
  std::string ErrorBody(const absl::Status& status, absl::string_view code) const override;
  std::string RequestErrorBody(int http_status, absl::string_view message) const override;
};

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_OPENAI_CODEC_H_
