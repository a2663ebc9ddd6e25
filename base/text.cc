#include "base/text.h"

namespace understudy {

std::string Shorten(absl::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  std::string out(text.substr(0, end));
  out += "...";
  return out;
}

}  // namespace understudy
