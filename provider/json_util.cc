#include "provider/json_util.h"

#include <limits>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace understudy {
namespace provider {
namespace {

// Longest parser reason quoted in an error message.
constexpr size_t kMaxReasonBytes = 300;

// Length of the UTF-8 sequence starting at text[i], or 0 if the bytes there
// are not a well-formed sequence (RFC 3629, table 3-7 of Unicode).
size_t Utf8SequenceLength(absl::string_view text, size_t i) {
  const auto byte = [&](size_t k) -> unsigned {
    return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0x100;
  };
  const auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return byte(k) >= lo && byte(k) <= hi;
  };
  const unsigned b0 = byte(0);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 == 0xE0) return cont(1, 0xA0, 0xBF) && cont(2) ? 3 : 0;
  if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    return cont(1) && cont(2) ? 3 : 0;
  }
  if (b0 == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;  // no surrogates
  if (b0 == 0xF0) return cont(1, 0x90, 0xBF) && cont(2) && cont(3) ? 4 : 0;
  if (b0 >= 0xF1 && b0 <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b0 == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

// One pass over the text: UTF-8 validity everywhere, and the nesting depth of
// arrays and objects outside strings.
absl::Status CheckText(absl::string_view text, absl::string_view where) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      const size_t n = Utf8SequenceLength(text, i);
      if (n == 0)
        return absl::InvalidArgumentError(absl::StrCat(where, ": invalid UTF-8 at byte ", i));
      escaped = false;
      i += n;
      continue;
    }
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": JSON nested deeper than ",
                                                       kMaxJsonDepth, " levels at byte ", i));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
    ++i;
  }
  return absl::OkStatus();
}

// `text` cut to at most `max` bytes without splitting a UTF-8 sequence.
std::string Shorten(absl::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return absl::StrCat(text.substr(0, end), "...");
}

// The part of an nlohmann exception message after its "[Json.exception...]
// parse error at line L, column C: " prefix.
absl::string_view Reason(absl::string_view what) {
  size_t start = what.find("] ");
  if (start != absl::string_view::npos) what.remove_prefix(start + 2);
  size_t colon = what.find(": ");
  if (absl::StartsWith(what, "parse error") && colon != absl::string_view::npos) {
    what.remove_prefix(colon + 2);
  }
  return what;
}

}  // namespace

absl::StatusOr<Json> ParseJson(absl::string_view text, absl::string_view where) {
  absl::Status checked = CheckText(text, where);
  if (!checked.ok()) return checked;
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    const size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    return absl::InvalidArgumentError(absl::StrCat(where, ": invalid JSON at byte ", offset, ": ",
                                                   Shorten(Reason(e.what()), kMaxReasonBytes)));
  } catch (const Json::exception& e) {  // out_of_range 406: number overflow
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": invalid JSON: ", Shorten(Reason(e.what()), kMaxReasonBytes)));
  }
}

std::string JsonTypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "number";
    case Json::value_t::string:
      return "string";
    case Json::value_t::array:
      return "array";
    case Json::value_t::object:
      return "object";
    default:
      return value.type_name();
  }
}

std::string DumpJson(const nlohmann::json& value) {
  return value.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/false,
                    nlohmann::json::error_handler_t::replace);
}

std::string DumpJson(const nlohmann::ordered_json& value) {
  return value.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/false,
                    nlohmann::ordered_json::error_handler_t::replace);
}

std::string JoinPath(absl::string_view parent, absl::string_view key) {
  if (parent.empty()) return std::string(key);
  return absl::StrCat(parent, ".", key);
}

std::string JoinPath(absl::string_view parent, size_t index) {
  return absl::StrCat(parent, "[", index, "]");
}

absl::Status ExpectedError(absl::string_view path, absl::string_view expected, const Json& got) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": expected ", expected, ", got ", JsonTypeName(got)));
}

absl::Status MissingError(absl::string_view path, absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": missing; expected ", expected));
}

absl::StatusOr<int64_t> JsonToInt64(const Json& value, absl::string_view path) {
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    return value.get<int64_t>();
  }
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(value.get<uint64_t>());
  }
  if (value.is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected an integer, got number ", Shorten(DumpJson(value), 40)));
  }
  return ExpectedError(path, "an integer", value);
}

const Json* FindMember(const Json& object, absl::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(std::string(key));
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::Status ReadOptionalString(const Json& object, absl::string_view key, absl::string_view parent,
                                std::string* out) {
  const Json* value = FindMember(object, key);
  if (value == nullptr) return absl::OkStatus();
  if (!value->is_string()) return ExpectedError(JoinPath(parent, key), "a string", *value);
  *out = value->get<std::string>();
  return absl::OkStatus();
}

absl::Status ReadRequiredString(const Json& object, absl::string_view key, absl::string_view parent,
                                std::string* out) {
  if (FindMember(object, key) == nullptr) return MissingError(JoinPath(parent, key), "a string");
  return ReadOptionalString(object, key, parent, out);
}

bool HasOnlyKeys(const Json& object, std::initializer_list<absl::string_view> keys) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (it->is_null()) continue;
    bool known = false;
    for (absl::string_view k : keys) known = known || it.key() == k;
    if (!known) return false;
  }
  return true;
}

}  // namespace provider
}  // namespace understudy
