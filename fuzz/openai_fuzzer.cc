// The OpenAI codec both ways (provider/openai.h): request and response
// bodies, stream events; what parses renders, and a rendered response
// parses back to the same canonical answer.
#include <cstddef>
#include <cstdint>

#include "absl/strings/match.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/stream_util.h"
#include "provider/canonical.h"
#include "provider/openai.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  namespace openai = provider::openai;
  const absl::string_view body = fuzz::View(data, size);

  absl::StatusOr<provider::ParsedRequest> request = openai::ParseRequest(body);
  if (request.ok()) {
    const std::string canonical = provider::CanonicalText(request->canonical);
    FUZZ_CHECK(canonical == provider::CanonicalText(request->canonical),
               "the canonical text is a function of the request");
  } else {
    FUZZ_CHECK(absl::IsInvalidArgument(request.status()), "a bad body is INVALID_ARGUMENT");
  }

  absl::StatusOr<v1::CompletionResponse> response = openai::ParseResponse(body);
  if (response.ok()) {
    const std::string rendered = openai::RenderResponse(*response, 1);
    absl::StatusOr<v1::CompletionResponse> again = openai::ParseResponse(rendered);
    FUZZ_CHECK(again.ok(), "a rendered response parses");
    FUZZ_CHECK(openai::RenderResponse(*again, 1) == rendered, "rendering is stable");
  }

  // The same bytes as a stream.
  const google::protobuf::RepeatedPtrField<v1::CompletionChunk> chunks =
      fuzz::DecodeStream<openai::StreamDecoder>(body);
  for (const std::string& e : openai::RenderStream(chunks, /*include_usage=*/true, 7)) {
    FUZZ_CHECK(absl::StartsWith(e, "data: ") && absl::EndsWith(e, "\n\n"),
               "rendered events are whole SSE events");
  }
  return 0;
}
