// A JSON array that arrives as a stream, element by element: Gemini's
// streamGenerateContent answer when the caller does not ask for SSE. Pure:
// bytes in, segments out; no I/O.
#ifndef UNDERSTUDY_PROVIDER_JSON_ARRAY_STREAM_H_
#define UNDERSTUDY_PROVIDER_JSON_ARRAY_STREAM_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "provider/element_stream.h"

namespace understudy {
namespace provider {

// Splits a stream sent as one JSON array whose elements are objects (Gemini's
// streamGenerateContent without alt=sse: GenerateContentResponse objects),
//
//   [{...}\n,\r\n{...}\n]
//
// into segments as its bytes arrive, each ending right after the closing
// brace of one element: "[{...}", "\n,\r\n{...}". What follows the last
// element (the "]" and any whitespace) stays in Rest(). The segments and
// Rest(), concatenated, are exactly the bytes fed, so that a recording keeps
// the stream byte for byte and a replay can send it back with the same
// boundaries.
//
//   JsonArraySplitter splitter;
//   for (each piece of the body as it arrives) {
//     for (std::string& segment : splitter.Feed(piece)) {
//       decoder.DecodeElement(ElementJson(segment)) ...
//     }
//     if (!splitter.status().ok()) { /* give up on the stream */ }
//   }
//   absl::Status end = splitter.Finish();  // the array was closed?
//   std::string tail = splitter.Rest();    // "\n]"
//
// Pieces may be split anywhere. Elements must be objects; the splitter
// follows strings (escapes included) and bracket nesting, and leaves the
// rest of JSON's grammar to whoever parses an element.
// Not thread-safe: one splitter per stream.
class JsonArraySplitter final : public ElementSplitter {
 public:
  // `max_element_bytes` bounds the bytes buffered for one segment, so that
  // a stream that never closes its element cannot grow memory without
  // limit.
  explicit JsonArraySplitter(size_t max_element_bytes = kDefaultMaxElementBytes);

  JsonArraySplitter(const JsonArraySplitter&) = delete;
  JsonArraySplitter& operator=(const JsonArraySplitter&) = delete;

  // Consumes `bytes` and returns the segments they complete, in order
  // (often none). On malformed input (a byte that cannot come next, such as
  // "x" before "[", "]" closing a "{", "," after the "[", anything but
  // whitespace after the closing "]") status() becomes INVALID_ARGUMENT
  // "json array stream: expected ... at byte N, got ...", with N counted
  // from the start of the stream; a segment over the bound makes it
  // RESOURCE_EXHAUSTED "json array stream: element larger than N bytes".
  // Segments completed before the error are still returned. After an error
  // or Finish, returns nothing and ignores `bytes`.
  std::vector<std::string> Feed(absl::string_view bytes) override;

  // Ends the stream. OK when the array was closed; else the first error, or
  // INVALID_ARGUMENT "json array stream: ended at byte N before the array
  // was opened | inside an element | before the closing ']'".
  absl::Status Finish() override;

  // OK, or the first error of Feed or Finish.
  const absl::Status& status() const override { return status_; }

  // The bytes fed that no returned segment holds: after a successful
  // Finish, the closing "]" and what surrounds it; after an error, the
  // bytes of the segment that failed, up to the end of the Feed call that
  // found the error.
  const std::string& Rest() const override { return pending_; }

  // ElementJson(segment).
  std::string Element(absl::string_view segment) const override;

 private:
  enum class State { kBeforeArray, kAfterOpen, kAfterComma, kInElement, kAfterElement, kClosed };

  absl::Status Fail(absl::string_view expected, size_t at) const;

  const size_t max_element_bytes_;
  State state_ = State::kBeforeArray;
  // Bytes of the open segment, from where the previous one ended.
  std::string pending_;
  // Offset in the stream of pending_[0].
  size_t pending_offset_ = 0;
  // Inside an element: within a string, just after a backslash in one, and
  // the closing brackets still expected, innermost last.
  bool in_string_ = false;
  bool escaped_ = false;
  std::string closers_;
  bool finished_ = false;
  absl::Status status_;
};

// The element a JsonArraySplitter segment holds, without the "[" or ","
// before it and the whitespace around it; "" for a segment holding no
// element (the closing "]").
std::string ElementJson(absl::string_view segment);

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_JSON_ARRAY_STREAM_H_
