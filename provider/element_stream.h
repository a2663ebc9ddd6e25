// How a streamed answer is framed on the wire, and the splitters that cut
// a stream that is not server-sent events into its elements as its bytes
// arrive. Pure: bytes in, segments out; no I/O.
#ifndef UNDERSTUDY_PROVIDER_ELEMENT_STREAM_H_
#define UNDERSTUDY_PROVIDER_ELEMENT_STREAM_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace understudy {
namespace provider {

// How a streamed answer is framed on the wire.
enum class StreamFraming {
  kNone,       // the route does not choose (the body asks, or no stream)
  kSse,        // server-sent events (SseParser)
  kJsonArray,  // one JSON array, element by element (JsonArraySplitter)
  kNdjson,     // one JSON object per line (NdjsonSplitter)
  kEventStream,  // AWS event stream binary frames (EventStreamSplitter, provider/event_stream.h)
};

// Cuts a stream into segments, each holding at most one element, as its
// bytes arrive. The segments and Rest(), concatenated, are exactly the
// bytes fed, so that a recording keeps the stream byte for byte and a
// replay sends it back with the same boundaries.
//
//   std::unique_ptr<ElementSplitter> splitter = NewSplitter(framing);
//   for (each piece of the body as it arrives) {
//     for (std::string& segment : splitter->Feed(piece)) {
//       decoder.DecodeElement(splitter->Element(segment)) ...
//     }
//     if (!splitter->status().ok()) { /* give up on the stream */ }
//   }
//   absl::Status end = splitter->Finish();   // the stream ended cleanly?
//   splitter->Element(splitter->Rest());     // an element in the tail?
//
// Pieces may be split anywhere. Not thread-safe: one splitter per stream.
class ElementSplitter {
 public:
  // Default bound on one segment's bytes.
  static constexpr size_t kDefaultMaxElementBytes = size_t{64} << 20;

  virtual ~ElementSplitter() = default;

  // Consumes `bytes` and returns the segments they complete, in order
  // (often none). Malformed input makes status() INVALID_ARGUMENT naming
  // the framing and the byte offset from the start of the stream; a
  // segment over the bound makes it RESOURCE_EXHAUSTED. Segments completed
  // before the error are still returned. After an error or Finish, returns
  // nothing and ignores `bytes`.
  virtual std::vector<std::string> Feed(absl::string_view bytes) = 0;
  // Ends the stream: OK when it ended where it may; else the first error.
  virtual absl::Status Finish() = 0;
  // OK, or the first error of Feed or Finish.
  virtual const absl::Status& status() const = 0;
  // The bytes fed that no returned segment holds.
  virtual const std::string& Rest() const = 0;
  // The element a segment (or Rest()) holds, as ChunkDecoder::DecodeElement
  // takes it; "" for one that holds none.
  virtual std::string Element(absl::string_view segment) const = 0;
};

// A new splitter for `framing`; null for kNone and kSse (SseParser).
std::unique_ptr<ElementSplitter> NewSplitter(StreamFraming framing);

// Splits a stream of JSON values, one per line ("application/x-ndjson", as
// Ollama streams): each segment is one line with its "\n". Blank lines
// are segments holding no element; a last line without "\n" stays in
// Rest() and is an element all the same. The splitter does not parse the
// lines: whoever decodes an element does.
class NdjsonSplitter final : public ElementSplitter {
 public:
  explicit NdjsonSplitter(size_t max_line_bytes = kDefaultMaxElementBytes);

  std::vector<std::string> Feed(absl::string_view bytes) override;
  // Always OK unless Feed failed: a stream may end after any line.
  absl::Status Finish() override;
  const absl::Status& status() const override { return status_; }
  const std::string& Rest() const override { return pending_; }
  // The line without its line break and the whitespace around it.
  std::string Element(absl::string_view segment) const override;

 private:
  const size_t max_line_bytes_;
  std::string pending_;
  size_t pending_offset_ = 0;
  bool finished_ = false;
  absl::Status status_;
};

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_ELEMENT_STREAM_H_
