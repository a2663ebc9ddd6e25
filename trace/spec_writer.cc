#include "trace/spec_writer.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace understudy {
namespace trace {
namespace {

// Decodes the UTF-8 sequence at s[*i], advancing *i; -1 (and one byte) for
// an invalid one.
int32_t NextCodePoint(absl::string_view s, size_t* i) {
  const unsigned char c = static_cast<unsigned char>(s[*i]);
  int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || *i + len > s.size()) {
    ++*i;
    return -1;
  }
  int32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k < len; ++k) {
    const unsigned char d = static_cast<unsigned char>(s[*i + k]);
    if ((d >> 6) != 0x2) {
      ++*i;
      return -1;
    }
    cp = (cp << 6) | (d & 0x3F);
  }
  *i += len;
  return cp;
}

// Whether `s` may be written as a plain scalar, in block or flow context,
// and read back as the same string (never as a number, boolean or null).
bool SafePlain(absl::string_view s) {
  if (s.empty() || !(absl::ascii_isalpha(s[0]) || s[0] == '_') || s.back() == ' ') return false;
  for (char c : s) {
    if (!(absl::ascii_isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/' || c == ' ' ||
          c == '\'' || c == '(' || c == ')')) {
      return false;
    }
  }
  static const std::set<std::string>* const kReserved = new std::set<std::string>{
      "true", "false", "null", "yes", "no", "on", "off", "y", "n"};
  return kReserved->count(absl::AsciiStrToLower(s)) == 0;
}

}  // namespace

std::string SpecQuoted(absl::string_view s) {
  std::string out = "\"";
  size_t i = 0;
  while (i < s.size()) {
    const size_t start = i;
    const int32_t cp = NextCodePoint(s, &i);
    switch (cp) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\r':
        out += "\\r";
        continue;
      default:
        break;
    }
    if (cp < 0) {
      out += "\\uFFFD";
    } else if (cp < 0x20 || cp == 0x7F) {
      absl::StrAppendFormat(&out, "\\x%02X", cp);
    } else if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF) {
      absl::StrAppendFormat(&out, "\\u%04X", cp);
    } else {
      out.append(s.data() + start, i - start);
    }
  }
  out += "\"";
  return out;
}

std::string SpecScalar(absl::string_view s) {
  return SafePlain(s) ? std::string(s) : SpecQuoted(s);
}

std::string SpecFlow(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object: {
      std::vector<std::string> items;
      for (auto it = v.begin(); it != v.end(); ++it) {
        items.push_back(absl::StrCat(SpecScalar(it.key()), ": ", SpecFlow(it.value())));
      }
      return absl::StrCat("{", absl::StrJoin(items, ", "), "}");
    }
    case nlohmann::json::value_t::array: {
      std::vector<std::string> items;
      for (const nlohmann::json& item : v) items.push_back(SpecFlow(item));
      return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
    }
    case nlohmann::json::value_t::string:
      return SpecQuoted(v.get_ref<const std::string&>());
    default:  // numbers (round-trip precision), booleans, null
      return v.dump();
  }
}

}  // namespace trace
}  // namespace understudy
