// The Anthropic codec both ways (provider/anthropic.h).
#include <cstddef>
#include <cstdint>

#include "absl/strings/match.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/stream_util.h"
#include "provider/anthropic.h"
#include "provider/canonical.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  namespace anthropic = provider::anthropic;
  const absl::string_view body = fuzz::View(data, size);

  absl::StatusOr<provider::ParsedRequest> request = anthropic::ParseRequest(body);
  if (request.ok()) {
    (void)provider::CanonicalText(request->canonical);
  } else {
    FUZZ_CHECK(absl::IsInvalidArgument(request.status()), "a bad body is INVALID_ARGUMENT");
  }

  absl::StatusOr<v1::CompletionResponse> response = anthropic::ParseResponse(body);
  if (response.ok()) {
    absl::StatusOr<std::string> rendered = anthropic::RenderResponse(*response);
    if (rendered.ok()) {
      absl::StatusOr<v1::CompletionResponse> again = anthropic::ParseResponse(*rendered);
      FUZZ_CHECK(again.ok(), "a rendered response parses");
    }
  }

  const google::protobuf::RepeatedPtrField<v1::CompletionChunk> chunks =
      fuzz::DecodeStream<anthropic::StreamDecoder>(body);
  for (const std::string& e : anthropic::RenderStream(chunks)) {
    FUZZ_CHECK(absl::EndsWith(e, "\n\n"), "rendered events are whole SSE events");
  }
  return 0;
}
