// The Ollama codec both ways (provider/ollama.h): request bodies of its
// three endpoints, whole answers and NDJSON streams. What parses renders, a
// rendered answer parses back and renders the same, and the NDJSON
// splitter loses no byte and finds the same lines however the bytes are
// split; what the decoder makes of them renders into lines that split,
// decode and render again to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "fuzz/fuzz_util.h"
#include "nlohmann/json.hpp"
#include "provider/canonical.h"
#include "provider/element_stream.h"
#include "provider/ollama.h"
#include "validation/json_bounds.h"

namespace {

using namespace understudy;  // NOLINT: a fuzz target's local shorthand
namespace ollama = provider::ollama;
using Chunks = google::protobuf::RepeatedPtrField<v1::CompletionChunk>;

// Rendering an embed answer allocates inputs x dimensions floats; above
// this many it is skipped so that a run stays fast (ParseRequest bounds
// both factors).
constexpr int64_t kRenderBudget = 1 << 16;

// The dimensions RenderEmbedResponse(request, "m") gives each vector.
int64_t Dimensions(const v1::CompletionRequest& request) {
  const nlohmann::json extra = validation::ParseJsonOrDiscarded<nlohmann::json>(request.extra());
  if (extra.is_object() && extra.contains("dimensions") &&
      extra["dimensions"].is_number_integer()) {
    return extra["dimensions"].get<int64_t>();
  }
  return ollama::DefaultEmbedDimensions("m");
}

// The segments of `input` fed in two pieces split at `at`, then Rest() when
// not empty. Returns false when the splitter refuses the input.
bool SplitInTwo(absl::string_view input, size_t at, std::vector<std::string>* out) {
  provider::NdjsonSplitter splitter;
  for (absl::string_view piece : {input.substr(0, at), input.substr(at)}) {
    for (std::string& s : splitter.Feed(piece)) out->push_back(std::move(s));
  }
  if (!splitter.Finish().ok()) return false;
  if (!splitter.Rest().empty()) out->push_back(splitter.Rest());
  return true;
}

// The chunks the decoder makes of `segments`, skipping lines it refuses.
Chunks Decode(const std::vector<std::string>& segments, bool* all_decoded) {
  provider::NdjsonSplitter splitter;
  ollama::StreamDecoder decoder;
  Chunks chunks;
  *all_decoded = true;
  for (const std::string& segment : segments) {
    const std::string element = splitter.Element(segment);
    if (element.empty()) continue;
    absl::StatusOr<std::optional<v1::CompletionChunk>> chunk = decoder.DecodeElement(element);
    *all_decoded = *all_decoded && chunk.ok();
    if (chunk.ok() && chunk->has_value()) *chunks.Add() = **chunk;
  }
  return chunks;
}

void CheckRequests(absl::string_view body) {
  for (ollama::Endpoint endpoint :
       {ollama::Endpoint::kChat, ollama::Endpoint::kGenerate, ollama::Endpoint::kEmbed}) {
    absl::StatusOr<provider::ParsedRequest> request = ollama::ParseRequest(endpoint, body);
    if (!request.ok()) {
      FUZZ_CHECK(absl::IsInvalidArgument(request.status()), "a bad body is INVALID_ARGUMENT");
      continue;
    }
    absl::StatusOr<provider::ParsedRequest> twice = ollama::ParseRequest(endpoint, body);
    FUZZ_CHECK(twice.ok() && provider::CanonicalText(request->canonical) ==
                                 provider::CanonicalText(twice->canonical),
               "the canonical text is a function of the request");
    FUZZ_CHECK(ollama::EndpointOfRequest(request->canonical) == endpoint,
               "the canonical request names its endpoint");
    FUZZ_CHECK(request->stream == (request->stream_framing == provider::StreamFraming::kNdjson),
               "a stream is NDJSON");
    if (endpoint != ollama::Endpoint::kEmbed) continue;
    FUZZ_CHECK(!request->stream, "embed never streams");
    if (int64_t{request->canonical.messages_size()} * Dimensions(request->canonical) >
        kRenderBudget) {
      continue;
    }
    const std::string rendered = ollama::RenderEmbedResponse(request->canonical, "m");
    FUZZ_CHECK(rendered == ollama::RenderEmbedResponse(request->canonical, "m"),
               "an embed answer is deterministic");
    FUZZ_CHECK(ollama::ParseResponse(rendered).ok(), "a rendered embed answer parses");
    const nlohmann::json answer = validation::ParseJsonOrDiscarded<nlohmann::json>(rendered);
    FUZZ_CHECK(answer.is_object() && answer["embeddings"].size() ==
                                         static_cast<size_t>(request->canonical.messages_size()),
               "one vector per input");
  }
}

void CheckResponse(absl::string_view body) {
  absl::StatusOr<v1::CompletionResponse> response = ollama::ParseResponse(body);
  if (!response.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(response.status()), "a bad body is INVALID_ARGUMENT");
    return;
  }
  for (ollama::Endpoint endpoint : {ollama::Endpoint::kChat, ollama::Endpoint::kGenerate}) {
    const std::string rendered = ollama::RenderResponse(*response, endpoint, "m", 7);
    absl::StatusOr<v1::CompletionResponse> again = ollama::ParseResponse(rendered);
    FUZZ_CHECK(again.ok(), "a rendered answer parses");
    FUZZ_CHECK(again->message().content() == response->message().content(),
               "rendering keeps the text");
    if (endpoint == ollama::Endpoint::kChat) {
      FUZZ_CHECK(again->message().tool_calls_size() == response->message().tool_calls_size(),
                 "rendering keeps the calls");
    }
    FUZZ_CHECK(ollama::RenderResponse(*again, endpoint, "m", 7) == rendered, "rendering is stable");
  }
}

void CheckStream(absl::string_view body, size_t at) {
  std::vector<std::string> whole;
  std::vector<std::string> split;
  const bool accepted = SplitInTwo(body, body.size(), &whole);
  FUZZ_CHECK(accepted == SplitInTwo(body, at, &split), "acceptance does not depend on the split");
  if (!accepted) return;
  FUZZ_CHECK(whole == split, "the lines do not depend on the split");
  std::string joined;
  for (const std::string& s : whole) joined += s;
  FUZZ_CHECK(joined == body, "lines and rest are the bytes fed");

  bool all_decoded = true;  // the fuzz input's lines need not all decode
  const Chunks chunks = Decode(whole, &all_decoded);
  for (ollama::Endpoint endpoint : {ollama::Endpoint::kChat, ollama::Endpoint::kGenerate}) {
    ollama::StreamShape shape;
    shape.endpoint = endpoint;
    shape.model = "m";
    shape.recorded_body = std::string(body);  // a whole body, when it is one
    const std::vector<std::string> lines = ollama::RenderStream(chunks, shape);
    FUZZ_CHECK(lines.size() == static_cast<size_t>(chunks.empty() ? 1 : chunks.size()),
               "one line per chunk");
    std::string rendered;
    for (const std::string& line : lines) {
      FUZZ_CHECK(absl::StartsWith(line, "{") && absl::EndsWith(line, "}\n"),
                 "rendered lines are whole lines");
      rendered += line;
    }
    std::vector<std::string> resplit;
    FUZZ_CHECK(SplitInTwo(rendered, rendered.size() / 2, &resplit), "a rendered stream splits");
    FUZZ_CHECK(resplit == lines, "rendered lines are the splitter's segments");
    bool rendered_decoded = true;
    const Chunks back = Decode(resplit, &rendered_decoded);
    FUZZ_CHECK(rendered_decoded && back.size() == static_cast<int>(lines.size()),
               "every rendered line decodes");
    shape.recorded_body.clear();
    FUZZ_CHECK(ollama::RenderStream(back, shape) == ollama::RenderStream(chunks, shape),
               "rendering what a rendered stream decodes to gives the same bytes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body = fuzz::View(data, size);
  CheckRequests(body);
  CheckResponse(body);
  CheckStream(body, size == 0 ? 0 : data[0] % (size + 1));
  return 0;
}
