// Decoding a body as a provider's SSE stream, for the codec fuzzers.
#ifndef UNDERSTUDY_FUZZ_STREAM_UTIL_H_
#define UNDERSTUDY_FUZZ_STREAM_UTIL_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_field.h"
#include "provider/sse.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace fuzz {

// Every chunk `Decoder` (provider::openai/anthropic::StreamDecoder) makes of
// `body` read as SSE events; undecodable events are skipped.
template <typename Decoder>
google::protobuf::RepeatedPtrField<v1::CompletionChunk> DecodeStream(absl::string_view body) {
  google::protobuf::RepeatedPtrField<v1::CompletionChunk> chunks;
  provider::SseParser parser;
  Decoder decoder;
  absl::StatusOr<std::vector<provider::SseEvent>> events = parser.Feed(body);
  if (!events.ok()) return chunks;
  absl::StatusOr<std::vector<provider::SseEvent>> rest = parser.Finish();
  if (rest.ok()) events->insert(events->end(), rest->begin(), rest->end());
  for (const provider::SseEvent& e : *events) {
    absl::StatusOr<std::optional<v1::CompletionChunk>> chunk = decoder.Decode(e);
    if (chunk.ok() && chunk->has_value()) *chunks.Add() = **chunk;
  }
  return chunks;
}

}  // namespace fuzz
}  // namespace understudy

#endif  // UNDERSTUDY_FUZZ_STREAM_UTIL_H_
