// The AWS event stream framing (provider/event_stream.h) and the Bedrock
// codecs (provider/bedrock.h). The splitter loses no byte and finds the
// same frames however the bytes are split; every frame it cuts decodes and
// encodes back to its bytes, as does any frame DecodeFrame accepts (also one
// sealed with valid checksums around the input, so that the headers parser
// is reached past the CRCs). What the decoders make of the frames renders
// into frames that split and decode again; request and answer bodies parse
// deterministically or fail with INVALID_ARGUMENT, and what parses renders
// and parses back.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "provider/bedrock.h"
#include "provider/canonical.h"
#include "provider/chunks.h"
#include "provider/event_stream.h"

namespace {

using namespace understudy;  // NOLINT: a fuzz target's local shorthand
namespace bedrock = provider::bedrock;
namespace event_stream = provider::event_stream;
using Chunks = google::protobuf::RepeatedPtrField<v1::CompletionChunk>;

// The frames of `input` fed in two pieces split at `at`; false when the
// splitter refuses the input (`rest` then holds nothing useful).
bool SplitInTwo(absl::string_view input, size_t at, std::vector<std::string>* out,
                std::string* rest) {
  provider::EventStreamSplitter splitter;
  for (absl::string_view piece : {input.substr(0, at), input.substr(at)}) {
    for (std::string& s : splitter.Feed(piece)) out->push_back(std::move(s));
  }
  *rest = splitter.Rest();
  return splitter.Finish().ok();
}

// A frame whose prelude and checksums are right around `input`: its first
// byte picks how much of the rest is the headers section.
std::string Sealed(absl::string_view input) {
  if (input.empty()) return "";
  const size_t headers = std::min<size_t>(static_cast<uint8_t>(input[0]), input.size() - 1);
  const size_t total = 16 + input.size() - 1;
  std::string out;
  for (uint32_t v : {static_cast<uint32_t>(total), static_cast<uint32_t>(headers)}) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
  }
  const uint32_t prelude = event_stream::Crc32(out);
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(prelude >> shift));
  out.append(input.data() + 1, input.size() - 1);
  const uint32_t message = event_stream::Crc32(out);
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(message >> shift));
  return out;
}

// A frame DecodeFrame accepts encodes back to its bytes.
void CheckFrame(absl::string_view bytes) {
  absl::StatusOr<event_stream::Frame> frame = event_stream::DecodeFrame(bytes);
  if (!frame.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(frame.status()), "a bad frame is INVALID_ARGUMENT");
    return;
  }
  absl::StatusOr<std::string> encoded = event_stream::EncodeFrame(*frame);
  FUZZ_CHECK(encoded.ok() && *encoded == bytes, "a decoded frame encodes to its bytes");
}

// The chunks `Decoder` makes of `frames`, skipping frames it refuses.
template <typename Decoder>
Chunks Decode(const std::vector<std::string>& frames) {
  Decoder decoder;
  Chunks chunks;
  for (const std::string& f : frames) {
    absl::StatusOr<std::optional<v1::CompletionChunk>> chunk = decoder.DecodeElement(f);
    if (chunk.ok() && chunk->has_value()) *chunks.Add() = **chunk;
  }
  return chunks;
}

// Rendered frames split back into themselves, and each decodes.
template <typename Decoder>
Chunks CheckRendered(const std::vector<std::string>& frames) {
  std::string joined;
  for (const std::string& f : frames) joined += f;
  std::vector<std::string> split;
  std::string rest;
  FUZZ_CHECK(SplitInTwo(joined, joined.size() / 3, &split, &rest), "rendered frames split");
  FUZZ_CHECK(split == frames && rest.empty(), "rendered frames are the splitter's segments");
  Decoder decoder;
  Chunks chunks;
  for (const std::string& f : frames) {
    absl::StatusOr<std::optional<v1::CompletionChunk>> chunk = decoder.DecodeElement(f);
    FUZZ_CHECK(chunk.ok(), "a rendered frame decodes");
    if (chunk->has_value()) *chunks.Add() = **chunk;
  }
  FUZZ_CHECK(decoder.done(), "a rendered stream ends its message");
  return chunks;
}

void CheckStream(absl::string_view body, size_t at) {
  std::vector<std::string> whole;
  std::vector<std::string> split;
  std::string whole_rest;
  std::string split_rest;
  const bool accepted = SplitInTwo(body, body.size(), &whole, &whole_rest);
  FUZZ_CHECK(accepted == SplitInTwo(body, at, &split, &split_rest),
             "acceptance does not depend on the split");
  FUZZ_CHECK(whole == split, "the frames do not depend on the split");
  std::string joined;
  for (const std::string& f : whole) {
    CheckFrame(f);
    joined += f;
  }
  if (accepted) FUZZ_CHECK(joined == body && whole_rest.empty(), "frames are the bytes fed");

  // Converse: the chunks render as frames that decode to the same answer.
  const Chunks chunks = Decode<bedrock::StreamDecoder>(whole);
  const Chunks replayed = CheckRendered<bedrock::StreamDecoder>(bedrock::RenderStream(chunks));
  const v1::CompletionResponse want = provider::AssembleResponse(chunks);
  const v1::CompletionResponse got = provider::AssembleResponse(replayed);
  FUZZ_CHECK(got.message().content() == want.message().content(), "rendering keeps the text");
  FUZZ_CHECK(got.message().tool_calls_size() == want.message().tool_calls_size(),
             "rendering keeps the tool calls");
  for (int i = 0; i < got.message().tool_calls_size(); ++i) {
    FUZZ_CHECK(got.message().tool_calls(i).arguments() == want.message().tool_calls(i).arguments(),
               "rendering keeps the arguments");
  }

  // InvokeModel: Anthropic events in chunk frames.
  const Chunks invoked = Decode<bedrock::InvokeStreamDecoder>(whole);
  CheckRendered<bedrock::InvokeStreamDecoder>(
      provider::RenderAllText(*bedrock::InvokeStreamRenderer(invoked)));
}

void CheckBodies(absl::string_view body) {
  absl::StatusOr<provider::ParsedRequest> request = bedrock::ParseRequest(body, "m");
  if (request.ok()) {
    absl::StatusOr<provider::ParsedRequest> twice = bedrock::ParseRequest(body, "m");
    FUZZ_CHECK(twice.ok() && provider::CanonicalText(request->canonical) ==
                                 provider::CanonicalText(twice->canonical),
               "the canonical text is a function of the request");
  } else {
    FUZZ_CHECK(absl::IsInvalidArgument(request.status()), "a bad body is INVALID_ARGUMENT");
  }
  absl::StatusOr<provider::ParsedRequest> invoke = bedrock::ParseInvokeRequest(body, "m");
  FUZZ_CHECK(invoke.ok() || absl::IsInvalidArgument(invoke.status()),
             "a bad InvokeModel body is INVALID_ARGUMENT");
  if (invoke.ok()) FUZZ_CHECK(invoke->canonical.model() == "m", "the path names the model");

  absl::StatusOr<v1::CompletionResponse> response = bedrock::ParseResponse(body);
  if (!response.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(response.status()), "a bad answer is INVALID_ARGUMENT");
    return;
  }
  const std::string rendered = bedrock::RenderResponse(*response);
  absl::StatusOr<v1::CompletionResponse> again = bedrock::ParseResponse(rendered);
  FUZZ_CHECK(again.ok(), "a rendered answer parses");
  FUZZ_CHECK(again->message().content() == response->message().content() &&
                 again->message().tool_calls_size() == response->message().tool_calls_size(),
             "rendering keeps the text and the calls");
  FUZZ_CHECK(bedrock::RenderResponse(*again) == rendered, "rendering is stable");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body = fuzz::View(data, size);
  CheckFrame(body);
  CheckFrame(Sealed(body));
  CheckStream(body, size == 0 ? 0 : data[0] % (size + 1));
  CheckBodies(body);
  bedrock::UpstreamErrorMessage(body);
  return 0;
}
