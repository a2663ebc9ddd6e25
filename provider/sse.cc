#include "provider/sse.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace understudy {
namespace provider {

SseParser::SseParser(size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {}

absl::Status SseParser::TooBig() const {
  return absl::ResourceExhaustedError(
      absl::StrCat("sse: event larger than ", max_event_bytes_, " bytes"));
}

absl::StatusOr<std::vector<SseEvent>> SseParser::Feed(absl::string_view bytes) {
  if (!status_.ok()) return status_;
  std::vector<SseEvent> out;
  buffer_.append(bytes.data(), bytes.size());
  status_ = ProcessLines(/*finishing=*/false, &out);
  if (status_.ok() && buffer_.size() - event_start_ > max_event_bytes_) status_ = TooBig();
  if (!status_.ok()) return status_;
  // Drop the bytes of dispatched events; what is left belongs to the open one.
  buffer_.erase(0, event_start_);
  line_start_ -= event_start_;
  scan_from_ -= event_start_;
  event_start_ = 0;
  return out;
}

absl::StatusOr<std::vector<SseEvent>> SseParser::Finish() {
  if (!status_.ok()) return status_;
  std::vector<SseEvent> out;
  status_ = ProcessLines(/*finishing=*/true, &out);
  if (status_.ok() && line_start_ < buffer_.size()) {
    // An unterminated last line.
    absl::string_view rest(buffer_);
    status_ = HandleLine(rest.substr(line_start_), buffer_.size(), &out);
  }
  // A missing final blank line still ends the event.
  if (status_.ok()) status_ = Dispatch(buffer_.size(), &out);
  if (!status_.ok()) return status_;
  status_ = absl::FailedPreconditionError("sse: stream already finished");
  buffer_.clear();
  return out;
}

absl::Status SseParser::ProcessLines(bool finishing, std::vector<SseEvent>* out) {
  while (true) {
    const size_t eol = buffer_.find_first_of("\r\n", std::max(line_start_, scan_from_));
    if (eol == std::string::npos) {
      scan_from_ = buffer_.size();
      return absl::OkStatus();
    }
    size_t terminator = 1;
    if (buffer_[eol] == '\r') {
      if (eol + 1 == buffer_.size() && !finishing) {
        // A "\n" may follow in the next piece: wait for it.
        scan_from_ = eol;
        return absl::OkStatus();
      }
      if (eol + 1 < buffer_.size() && buffer_[eol + 1] == '\n') terminator = 2;
    }
    absl::string_view all(buffer_);
    const size_t line_end = eol + terminator;
    absl::Status s = HandleLine(all.substr(line_start_, eol - line_start_), line_end, out);
    if (!s.ok()) return s;
    line_start_ = line_end;
  }
}

absl::Status SseParser::HandleLine(absl::string_view line, size_t line_end,
                                   std::vector<SseEvent>* out) {
  if (first_line_) {
    first_line_ = false;
    if (absl::StartsWith(line, "\xEF\xBB\xBF")) line.remove_prefix(3);
  }
  if (line.empty()) return Dispatch(line_end, out);
  if (line.front() == ':') return absl::OkStatus();  // comment
  absl::string_view field = line;
  absl::string_view value;
  const size_t colon = line.find(':');
  if (colon != absl::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (absl::StartsWith(value, " ")) value.remove_prefix(1);
  }
  if (field == "event") {
    event_name_.assign(value.data(), value.size());
  } else if (field == "data") {
    data_.append(value.data(), value.size());
    data_.push_back('\n');
    has_data_ = true;
  }
  return absl::OkStatus();
}

absl::Status SseParser::Dispatch(size_t end, std::vector<SseEvent>* out) {
  if (has_data_) {
    if (end - event_start_ > max_event_bytes_) return TooBig();
    SseEvent event;
    event.event = std::move(event_name_);
    data_.pop_back();  // the "\n" after the last data line
    event.data = std::move(data_);
    event.raw = buffer_.substr(event_start_, end - event_start_);
    out->push_back(std::move(event));
    event_start_ = end;
  }
  // Without data nothing is dispatched, but the event type is reset all the
  // same, and the block's bytes stay for the next event's raw.
  event_name_.clear();
  data_.clear();
  has_data_ = false;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SseEvent>> ParseSse(absl::string_view stream, size_t max_event_bytes) {
  SseParser parser(max_event_bytes);
  absl::StatusOr<std::vector<SseEvent>> events = parser.Feed(stream);
  if (!events.ok()) return events.status();
  absl::StatusOr<std::vector<SseEvent>> rest = parser.Finish();
  if (!rest.ok()) return rest.status();
  for (SseEvent& e : *rest) events->push_back(std::move(e));
  return events;
}

}  // namespace provider
}  // namespace understudy
