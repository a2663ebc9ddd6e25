// Incremental parser for server-sent events (the text/event-stream format
// both providers stream completions in), following the WHATWG HTML
// "event stream interpretation" rules:
//
//   SseParser parser;
//   for (each piece of the body as it arrives) {
//     absl::StatusOr<std::vector<SseEvent>> events = parser.Feed(piece);
//     if (!events.ok()) { /* too big: give up on the stream */ }
//     for (SseEvent& e : *events) { ... e.event, e.data, e.raw ... }
//   }
//   absl::StatusOr<std::vector<SseEvent>> rest = parser.Finish();
//
// Pieces may be split anywhere (mid-line, mid-"\r\n", mid-UTF-8 sequence);
// the events are the same however the bytes are split. Lines end with "\n",
// "\r\n" or a lone "\r". A blank line ends an event. Lines starting with ":"
// are comments (keep-alives) and are skipped; `id:` and `retry:` fields are
// not interpreted (they stay in `raw`).
//
// Blocks that carry no `data:` field (a keep-alive comment on its own, say)
// dispatch no event, as the standard says; their bytes are not lost but
// become the start of the next event's `raw`, so that the raws of all the
// events, concatenated, are the bytes of the stream (up to any data-less
// bytes after the last event). That is what a byte-identical replay needs.
#ifndef UNDERSTUDY_PROVIDER_SSE_H_
#define UNDERSTUDY_PROVIDER_SSE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace understudy {
namespace provider {

// One dispatched server-sent event.
struct SseEvent {
  // Value of the event's last `event:` field; "" when it had none (the
  // standard's default type, "message").
  std::string event;
  // Values of the event's `data:` fields joined with "\n".
  std::string data;
  // The event's bytes as they arrived, its terminating blank line included
  // (absent only for a last event the stream did not terminate), preceded by
  // those of any data-less blocks since the previous event.
  std::string raw;
};

// Not thread-safe: one parser per stream, fed from one thread at a time.
class SseParser {
 public:
  // Default bound on one event's bytes (`raw`).
  static constexpr size_t kDefaultMaxEventBytes = 4 << 20;

  // `max_event_bytes` bounds the bytes buffered for one event, so that a
  // stream that never ends its event cannot grow memory without limit.
  explicit SseParser(size_t max_event_bytes = kDefaultMaxEventBytes);

  SseParser(const SseParser&) = delete;
  SseParser& operator=(const SseParser&) = delete;

  // Consumes `bytes` and returns the events they complete, in order (often
  // none). Fails with RESOURCE_EXHAUSTED "sse: event larger than N bytes"
  // when an event (complete or still open) exceeds the bound. After a
  // failure, or after Finish, every call fails with the first error or
  // FAILED_PRECONDITION.
  absl::StatusOr<std::vector<SseEvent>> Feed(absl::string_view bytes);

  // Ends the stream: an unterminated last line counts as a line, and an
  // event left open by a missing final blank line is dispatched (with a
  // `raw` that ends where the stream did). Same errors as Feed.
  absl::StatusOr<std::vector<SseEvent>> Finish();

 private:
  // Splits buffer_ into lines from line_start_ and handles them. At the end
  // of the stream (`finishing`) a trailing "\r" ends a line instead of
  // waiting for a possible "\n".
  absl::Status ProcessLines(bool finishing, std::vector<SseEvent>* out);
  // Handles one complete line, without its terminator, that ends at
  // `line_end` (the offset just past its terminator) in buffer_.
  absl::Status HandleLine(absl::string_view line, size_t line_end, std::vector<SseEvent>* out);
  // Emits the open event (if it has data) with the raw bytes up to `end`.
  absl::Status Dispatch(size_t end, std::vector<SseEvent>* out);
  absl::Status TooBig() const;

  const size_t max_event_bytes_;
  // Bytes not yet part of a dispatched event: the open event's lines and the
  // current partial line. Compacted after each Feed.
  std::string buffer_;
  size_t event_start_ = 0;  // where the open event's raw bytes begin
  size_t line_start_ = 0;   // where the current partial line begins
  size_t scan_from_ = 0;    // no line terminator in [line_start_, scan_from_)
  bool first_line_ = true;  // a UTF-8 BOM may start the stream
  std::string event_name_;
  std::string data_;
  bool has_data_ = false;
  absl::Status status_;  // first error, or FAILED_PRECONDITION after Finish
};

// The events of a complete stream: Feed(stream) then Finish().
absl::StatusOr<std::vector<SseEvent>> ParseSse(
    absl::string_view stream, size_t max_event_bytes = SseParser::kDefaultMaxEventBytes);

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_SSE_H_
