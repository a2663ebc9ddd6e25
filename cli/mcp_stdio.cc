#include "cli/mcp_stdio.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "validation/json_bounds.h"
#include "validation/utf8.h"

namespace understudy {
namespace cli {

LineSplitter::LineSplitter(size_t max_line_bytes) : max_(max_line_bytes) {}

void LineSplitter::Feed(absl::string_view data, std::vector<Line>* lines) {
  while (!data.empty()) {
    const size_t newline = data.find('\n');
    const absl::string_view piece = data.substr(0, newline);
    if (discarding_) {
      if (newline == absl::string_view::npos) return;
      lines->push_back(Line{"", true});
      discarding_ = false;
      data.remove_prefix(newline + 1);
      continue;
    }
    // One byte of slack for a '\r' that the '\n' may still follow.
    if (partial_.size() + piece.size() > max_ + 1) {
      partial_.clear();
      partial_.shrink_to_fit();
      if (newline == absl::string_view::npos) {
        discarding_ = true;
        return;
      }
      lines->push_back(Line{"", true});
      data.remove_prefix(newline + 1);
      continue;
    }
    partial_.append(piece.data(), piece.size());
    if (newline == absl::string_view::npos) return;
    data.remove_prefix(newline + 1);
    if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
    if (partial_.size() > max_) {
      lines->push_back(Line{"", true});
    } else {
      lines->push_back(Line{std::move(partial_), false});
    }
    partial_.clear();
  }
}

void LineSplitter::Finish(std::vector<Line>* lines) {
  if (discarding_) {
    lines->push_back(Line{"", true});
    discarding_ = false;
    return;
  }
  if (partial_.empty()) return;
  if (partial_.back() == '\r') partial_.pop_back();
  lines->push_back(partial_.size() > max_ ? Line{"", true} : Line{std::move(partial_), false});
  partial_.clear();
}
absl::StatusOr<std::string> ToOneLine(std::string text) {
  if (text.find_first_of("\r\n") == std::string::npos) return text;
  const nlohmann::ordered_json j = validation::ParseJsonOrDiscarded<nlohmann::ordered_json>(text);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat("a message with line breaks that is not JSON: ",
                                                   validation::Shorten(text, 200)));
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}
}  // namespace cli
}  // namespace understudy
