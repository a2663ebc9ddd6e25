#include "provider/json_array_stream.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace understudy {
namespace provider {
namespace {

// JSON's whitespace.
bool IsWhitespace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::string JsonArraySplitter::Element(absl::string_view segment) const {
  return ElementJson(segment);
}

JsonArraySplitter::JsonArraySplitter(size_t max_element_bytes)
    : max_element_bytes_(max_element_bytes) {}

absl::Status JsonArraySplitter::Fail(absl::string_view expected, size_t at) const {
  return absl::InvalidArgumentError(absl::StrCat("json array stream: expected ", expected,
                                                 " at byte ", pending_offset_ + at, ", got '",
                                                 absl::CHexEscape(pending_.substr(at, 1)), "'"));
}

std::vector<std::string> JsonArraySplitter::Feed(absl::string_view bytes) {
  std::vector<std::string> segments;
  if (!status_.ok() || finished_) return segments;
  size_t start = 0;  // of the open segment in pending_
  size_t i = pending_.size();
  pending_.append(bytes.data(), bytes.size());
  for (; i < pending_.size() && status_.ok(); ++i) {
    const char c = pending_[i];
    if (i - start >= max_element_bytes_) {
      status_ = absl::ResourceExhaustedError(
          absl::StrCat("json array stream: element larger than ", max_element_bytes_, " bytes"));
      break;
    }
    switch (state_) {
      case State::kBeforeArray:
        if (c == '[') {
          state_ = State::kAfterOpen;
        } else if (!IsWhitespace(c)) {
          status_ = Fail("'['", i);
        }
        break;
      case State::kAfterOpen:
      case State::kAfterComma:
        if (c == '{') {
          state_ = State::kInElement;
          closers_ = "}";
        } else if (c == ']' && state_ == State::kAfterOpen) {
          state_ = State::kClosed;
        } else if (!IsWhitespace(c)) {
          status_ = Fail(state_ == State::kAfterOpen ? "'{' or ']'" : "'{'", i);
        }
        break;
      case State::kInElement:
        if (in_string_) {
          if (escaped_) {
            escaped_ = false;
          } else if (c == '\\') {
            escaped_ = true;
          } else if (c == '"') {
            in_string_ = false;
          }
        } else if (c == '"') {
          in_string_ = true;
        } else if (c == '{') {
          closers_ += '}';
        } else if (c == '[') {
          closers_ += ']';
        } else if (c == '}' || c == ']') {
          if (c != closers_.back()) {
            status_ = Fail(closers_.back() == '}' ? "'}'" : "']'", i);
            break;
          }
          closers_.pop_back();
          if (closers_.empty()) {
            segments.push_back(pending_.substr(start, i + 1 - start));
            start = i + 1;
            state_ = State::kAfterElement;
          }
        }
        break;
      case State::kAfterElement:
        if (c == ',') {
          state_ = State::kAfterComma;
        } else if (c == ']') {
          state_ = State::kClosed;
        } else if (!IsWhitespace(c)) {
          status_ = Fail("',' or ']'", i);
        }
        break;
      case State::kClosed:
        if (!IsWhitespace(c)) status_ = Fail("only whitespace after the closing ']'", i);
        break;
    }
  }
  pending_.erase(0, start);
  pending_offset_ += start;
  return segments;
}

absl::Status JsonArraySplitter::Finish() {
  if (finished_ || !status_.ok()) return status_;
  finished_ = true;
  const size_t end = pending_offset_ + pending_.size();
  switch (state_) {
    case State::kClosed:
      return status_;
    case State::kBeforeArray:
      status_ = absl::InvalidArgumentError(
          absl::StrCat("json array stream: ended at byte ", end, " before the array was opened"));
      break;
    case State::kInElement:
      status_ = absl::InvalidArgumentError(
          absl::StrCat("json array stream: ended at byte ", end, " inside an element"));
      break;
    default:
      status_ = absl::InvalidArgumentError(
          absl::StrCat("json array stream: ended at byte ", end, " before the closing ']'"));
      break;
  }
  return status_;
}

std::string ElementJson(absl::string_view segment) {
  segment = absl::StripLeadingAsciiWhitespace(segment);
  if (!segment.empty() && (segment.front() == '[' || segment.front() == ',')) {
    segment.remove_prefix(1);
  }
  segment = absl::StripAsciiWhitespace(segment);
  if (segment.empty() || segment.front() != '{') return "";
  return std::string(segment);
}

}  // namespace provider
}  // namespace understudy
