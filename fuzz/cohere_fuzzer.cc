// The Cohere codec both ways (provider/cohere.h): request and response
// bodies and stream events. A request's canonical text is a function of it;
// a rendered answer parses back to the same answer and renders the same; a
// rendered stream is whole events the SDK reads to the end, decoding to the
// answer its chunks make and rendering the same again.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/stream_util.h"
#include "provider/canonical.h"
#include "provider/chunks.h"
#include "provider/cohere.h"

namespace {

using namespace understudy;  // NOLINT: a fuzz target's local shorthand
namespace cohere = provider::cohere;
using Chunks = google::protobuf::RepeatedPtrField<v1::CompletionChunk>;

void CheckRequest(absl::string_view body) {
  absl::StatusOr<provider::ParsedRequest> request = cohere::ParseRequest(body);
  if (!request.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(request.status()), "a bad body is INVALID_ARGUMENT");
    return;
  }
  absl::StatusOr<provider::ParsedRequest> twice = cohere::ParseRequest(body);
  FUZZ_CHECK(twice.ok() && provider::CanonicalText(request->canonical) ==
                               provider::CanonicalText(twice->canonical),
             "the canonical text is a function of the request");
}

void CheckResponse(absl::string_view body) {
  absl::StatusOr<v1::CompletionResponse> response = cohere::ParseResponse(body);
  if (!response.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(response.status()), "a bad body is INVALID_ARGUMENT");
    return;
  }
  const std::string rendered = cohere::RenderResponse(*response);
  absl::StatusOr<v1::CompletionResponse> again = cohere::ParseResponse(rendered);
  FUZZ_CHECK(again.ok(), "a rendered response parses");
  // A body without a finish reason is rendered with the one its answer
  // implies; everything else comes back as it was.
  v1::CompletionResponse expected = *response;
  if (expected.finish_reason().empty()) expected.set_finish_reason(again->finish_reason());
  FUZZ_CHECK(again->SerializeAsString() == expected.SerializeAsString(),
             "a rendered response parses back to the same answer");
  FUZZ_CHECK(cohere::RenderResponse(*again) == rendered, "rendering is stable");
}

// Every event of `events` joined, checking each is a whole SSE event the
// SDK reads past.
std::string JoinEvents(const std::vector<std::string>& events) {
  std::string out;
  for (const std::string& e : events) {
    FUZZ_CHECK(absl::StartsWith(e, "event: ") && absl::EndsWith(e, "}\n\n"),
               "rendered events are whole SSE events");
    FUZZ_CHECK(!absl::StrContains(e, "[DONE]"), "no rendered event stops the SDK's reader");
    out += e;
  }
  return out;
}

void CheckStream(absl::string_view body) {
  const Chunks chunks = fuzz::DecodeStream<cohere::StreamDecoder>(body);
  const std::string rendered = JoinEvents(cohere::RenderStream(chunks));
  const Chunks again = fuzz::DecodeStream<cohere::StreamDecoder>(rendered);
  v1::CompletionResponse expected = provider::AssembleResponse(chunks);
  const v1::CompletionResponse replayed = provider::AssembleResponse(again);
  if (expected.finish_reason().empty()) expected.set_finish_reason(replayed.finish_reason());
  FUZZ_CHECK(replayed.SerializeAsString() == expected.SerializeAsString(),
             "a rendered stream decodes to the answer its chunks make");
  FUZZ_CHECK(JoinEvents(cohere::RenderStream(again)) == rendered, "stream rendering is stable");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body = fuzz::View(data, size);
  CheckRequest(body);
  CheckResponse(body);
  CheckStream(body);
  return 0;
}
