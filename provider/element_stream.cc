#include "provider/element_stream.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "provider/event_stream.h"
#include "provider/json_array_stream.h"

namespace understudy {
namespace provider {

std::unique_ptr<ElementSplitter> NewSplitter(StreamFraming framing) {
  switch (framing) {
    case StreamFraming::kJsonArray:
      return std::make_unique<JsonArraySplitter>();
    case StreamFraming::kNdjson:
      return std::make_unique<NdjsonSplitter>();
    case StreamFraming::kEventStream:
      return std::make_unique<EventStreamSplitter>();
    case StreamFraming::kNone:
    case StreamFraming::kSse:
      break;
  }
  return nullptr;
}

NdjsonSplitter::NdjsonSplitter(size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

std::vector<std::string> NdjsonSplitter::Feed(absl::string_view bytes) {
  std::vector<std::string> segments;
  if (!status_.ok() || finished_) return segments;
  while (!bytes.empty()) {
    const size_t newline = bytes.find('\n');
    const size_t take = newline == absl::string_view::npos ? bytes.size() : newline + 1;
    // The line's bytes without its line break.
    const size_t line = pending_.size() + take - (newline == absl::string_view::npos ? 0 : 1);
    if (line > max_line_bytes_) {
      status_ = absl::ResourceExhaustedError(
          absl::StrCat("ndjson stream: line at byte ", pending_offset_, " longer than ",
                       max_line_bytes_, " bytes"));
      break;
    }
    pending_.append(bytes.data(), take);
    bytes.remove_prefix(take);
    if (newline == absl::string_view::npos) break;
    pending_offset_ += pending_.size();
    segments.push_back(std::move(pending_));
    pending_.clear();
  }
  return segments;
}

absl::Status NdjsonSplitter::Finish() {
  finished_ = true;
  return status_;
}

std::string NdjsonSplitter::Element(absl::string_view segment) const {
  return std::string(absl::StripAsciiWhitespace(segment));
}

}  // namespace provider
}  // namespace understudy
