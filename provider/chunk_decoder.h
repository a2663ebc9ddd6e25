// The stream decoder every model API's codec provides: a streamed answer
// turned into canonical chunks as it arrives.
#ifndef UNDERSTUDY_PROVIDER_CHUNK_DECODER_H_
#define UNDERSTUDY_PROVIDER_CHUNK_DECODER_H_

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "provider/sse.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace provider {

// Turns the events of a streamed answer into canonical chunks, one per
// event that carries something, so that chunk boundaries (and the caller's
// arrival times) are kept; AssembleResponse (provider/chunks.h) joins them
// into the answer the API's ParseResponse makes of the same answer sent
// whole. Each API's decoder says which events carry what; all of them:
// - return a chunk for an event that carries one (its `offset_micros` is
//   left for the caller) and std::nullopt for one that carries nothing
//   (keep-alives, structural events, types the decoder does not know);
// - fail with INVALID_ARGUMENT naming the bad field under "data" (under
//   "element" for DecodeElement) for malformed data, and with the status
//   the error's type stands for, carrying its message, for an error the
//   stream itself reports;
// - report done() once the event that ends the answer was decoded.
// Not thread-safe: one decoder per stream, events in stream order.
class ChunkDecoder {
 public:
  virtual ~ChunkDecoder() = default;

  // Decodes one server-sent event.
  virtual absl::StatusOr<std::optional<v1::CompletionChunk>> Decode(const SseEvent& event) = 0;

  // Decodes one element of a stream framed otherwise than SSE, as the
  // stream's ElementSplitter (provider/element_stream.h) gives it: a JSON
  // array's element, an NDJSON line, an event-stream frame's bytes. As
  // Decode does the data of an event. UNIMPLEMENTED for an API that never
  // streams that way.
  virtual absl::StatusOr<std::optional<v1::CompletionChunk>> DecodeElement(
      absl::string_view json);

  // True once the event that ends the answer was decoded.
  virtual bool done() const = 0;
};

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_CHUNK_DECODER_H_
