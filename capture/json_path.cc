#include "capture/json_path.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace understudy {
namespace capture {

absl::StatusOr<JsonPath> JsonPath::Parse(absl::string_view text) {
  JsonPath path;
  path.text_ = std::string(text);
  if (text.empty()) return absl::InvalidArgumentError("empty path");
  size_t i = 0;
  while (i < text.size()) {
    Step step;
    if (text[i] == '[') {
      size_t close = text.find(']', i);
      if (close == absl::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat("no ] after [ at ", i + 1));
      }
      absl::string_view inside = text.substr(i + 1, close - i - 1);
      size_t n = 0;
      if (inside == "*") {
        step.kind = Step::kEvery;
      } else if (absl::SimpleAtoi(inside, &n)) {
        step.kind = Step::kIndex;
        step.index = n;
      } else {
        return absl::InvalidArgumentError(absl::StrCat("expected [*] or [N], got [", inside, "]"));
      }
      i = close + 1;
      if (i < text.size() && text[i] == '.') ++i;
    } else {
      size_t end = text.find_first_of(".[", i);
      if (end == absl::string_view::npos) end = text.size();
      if (end == i) return absl::InvalidArgumentError(absl::StrCat("empty key at ", i + 1));
      step.kind = Step::kKey;
      step.key = std::string(text.substr(i, end - i));
      i = end;
      if (i < text.size() && text[i] == '.') {
        ++i;
        if (i == text.size()) return absl::InvalidArgumentError("ends with '.'");
      }
    }
    path.steps_.push_back(std::move(step));
  }
  return path;
}

}  // namespace capture
}  // namespace understudy
