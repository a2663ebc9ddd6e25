// The Gemini codec both ways (provider/gemini.h): request and response
// bodies, `alt=sse` events and JSON-array streams. What parses renders, a
// rendered answer parses back and renders the same, and the JSON-array
// splitter loses no byte and finds the same segments however the bytes are
// split.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/stream_util.h"
#include "provider/canonical.h"
#include "provider/gemini.h"

namespace {

using namespace understudy;  // NOLINT: a fuzz target's local shorthand
namespace gemini = provider::gemini;
using Chunks = google::protobuf::RepeatedPtrField<v1::CompletionChunk>;

// The segments of `input` fed in two pieces split at `at`, then Rest().
// Returns false when the splitter rejects the input.
bool SplitInTwo(absl::string_view input, size_t at, std::vector<std::string>* out) {
  provider::JsonArraySplitter splitter;
  for (absl::string_view piece : {input.substr(0, at), input.substr(at)}) {
    for (std::string& s : splitter.Feed(piece)) out->push_back(std::move(s));
  }
  if (!splitter.Finish().ok()) return false;
  out->push_back(splitter.Rest());
  return true;
}

void CheckJsonArrayStream(absl::string_view body, size_t at) {
  std::vector<std::string> whole;
  std::vector<std::string> split;
  const bool accepted = SplitInTwo(body, body.size(), &whole);
  FUZZ_CHECK(accepted == SplitInTwo(body, at, &split), "acceptance does not depend on the split");
  if (!accepted) return;
  FUZZ_CHECK(whole == split, "the segments do not depend on the split");
  std::string joined;
  for (const std::string& s : whole) joined += s;
  FUZZ_CHECK(joined == body, "segments and rest are the bytes fed");

  gemini::StreamDecoder decoder;
  Chunks chunks;
  for (size_t i = 0; i + 1 < whole.size(); ++i) {
    const std::string element = provider::ElementJson(whole[i]);
    FUZZ_CHECK(absl::StartsWith(element, "{") && absl::EndsWith(element, "}"),
               "every segment holds one object");
    absl::StatusOr<std::optional<v1::CompletionChunk>> chunk = decoder.DecodeElement(element);
    if (chunk.ok() && chunk->has_value()) *chunks.Add() = **chunk;
  }
  FUZZ_CHECK(provider::ElementJson(whole.back()).empty(), "the rest holds no element");

  // Rendered as a JSON array, the chunks split where the renderer cut.
  const std::vector<std::string> events = gemini::RenderStream(chunks, "m", /*sse=*/false);
  std::string rendered;
  for (const std::string& e : events) rendered += e;
  std::vector<std::string> resplit;
  FUZZ_CHECK(SplitInTwo(rendered, rendered.size() / 2, &resplit), "a rendered array splits");
  FUZZ_CHECK(resplit == events, "rendered elements are the splitter's segments");
  gemini::StreamDecoder again;
  for (size_t i = 0; i + 1 < resplit.size(); ++i) {
    FUZZ_CHECK(again.DecodeElement(provider::ElementJson(resplit[i])).ok(),
               "a rendered element decodes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body = fuzz::View(data, size);

  absl::StatusOr<provider::ParsedRequest> request = gemini::ParseRequest(body, "m");
  if (request.ok()) {
    absl::StatusOr<provider::ParsedRequest> twice = gemini::ParseRequest(body, "m");
    FUZZ_CHECK(twice.ok() && provider::CanonicalText(request->canonical) ==
                                 provider::CanonicalText(twice->canonical),
               "the canonical text is a function of the request");
  } else {
    FUZZ_CHECK(absl::IsInvalidArgument(request.status()), "a bad body is INVALID_ARGUMENT");
  }

  absl::StatusOr<v1::CompletionResponse> response = gemini::ParseResponse(body);
  if (response.ok()) {
    const std::string rendered = gemini::RenderResponse(*response, "m");
    absl::StatusOr<v1::CompletionResponse> again = gemini::ParseResponse(rendered);
    FUZZ_CHECK(again.ok(), "a rendered response parses");
    FUZZ_CHECK(again->message().content() == response->message().content() &&
                   again->message().tool_calls_size() == response->message().tool_calls_size(),
               "rendering keeps the text and the calls");
    FUZZ_CHECK(gemini::RenderResponse(*again, "m") == rendered, "rendering is stable");
  } else {
    FUZZ_CHECK(absl::IsInvalidArgument(response.status()), "a bad body is INVALID_ARGUMENT");
  }

  // The same bytes as an `alt=sse` stream.
  const Chunks chunks = fuzz::DecodeStream<gemini::StreamDecoder>(body);
  const std::vector<std::string> events = gemini::RenderStream(chunks, "m", /*sse=*/true);
  FUZZ_CHECK(!events.empty(), "a rendered stream has an event");
  std::string rendered;
  for (const std::string& e : events) {
    FUZZ_CHECK(absl::StartsWith(e, "data: {") && absl::EndsWith(e, "}\r\n\r\n"),
               "rendered events are whole SSE events");
    rendered += e;
  }
  FUZZ_CHECK(
      fuzz::DecodeStream<gemini::StreamDecoder>(rendered).size() == static_cast<int>(events.size()),
      "every rendered event decodes");

  // And as a JSON-array stream.
  CheckJsonArrayStream(body, size == 0 ? 0 : data[0] % (size + 1));
  return 0;
}
