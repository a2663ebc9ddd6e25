#include "validation/json_subset.h"

#include <cstddef>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "re2/re2.h"

namespace understudy {
namespace validation {
namespace {

// Values longer than this many bytes are shortened in differences (the same
// bound as trace/render.h's kMaxShownBytes, so assertion explanations read
// as before the move).
constexpr size_t kMaxShownBytes = 160;

// Where to cut `s` to at most kMaxShownBytes without splitting a UTF-8
// character.
size_t Cut(absl::string_view s) {
  size_t cut = kMaxShownBytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

std::string Dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Compact JSON text of `value`, shortened with "... (N bytes)".
std::string ShortJson(const nlohmann::json& value) {
  std::string text = Dump(value);
  if (text.size() <= kMaxShownBytes) return text;
  return absl::StrCat(absl::string_view(text).substr(0, Cut(text)), "... (", text.size(),
                      " bytes)");
}

// `s` as a JSON string literal, shortened like ShortJson.
std::string Quote(absl::string_view s) {
  if (s.size() <= kMaxShownBytes) return Dump(nlohmann::json(std::string(s)));
  return absl::StrCat(Dump(nlohmann::json(std::string(s.substr(0, Cut(s))))), "... (", s.size(),
                      " bytes)");
}

// `a.b`, or `a["odd key"]` for keys that are not identifiers.
std::string Child(const std::string& path, const std::string& key) {
  static const RE2* const kIdentifier = new RE2("[A-Za-z_][A-Za-z0-9_-]*");
  if (RE2::FullMatch(re2::StringPiece(key.data(), key.size()), *kIdentifier)) {
    return path.empty() ? key : absl::StrCat(path, ".", key);
  }
  return absl::StrCat(path, "[", Quote(key), "]");
}

bool Subset(const nlohmann::json& expected, const nlohmann::json& actual, const std::string& path,
            std::string* difference) {
  auto differ = [&](std::string what) {
    if (difference != nullptr) {
      *difference = path.empty() ? std::move(what) : absl::StrCat("at ", path, ": ", what);
    }
    return false;
  };
  if (expected.is_object()) {
    if (!actual.is_object()) {
      return differ(absl::StrCat("expected ", ShortJson(expected), ", got ", ShortJson(actual)));
    }
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      auto found = actual.find(it.key());
      if (found == actual.end()) {
        if (difference != nullptr) {
          *difference = absl::StrCat("at ", Child(path, it.key()), ": missing (expected ",
                                     ShortJson(it.value()), ")");
        }
        return false;
      }
      if (!Subset(it.value(), *found, Child(path, it.key()), difference)) return false;
    }
    return true;
  }
  if (expected == actual) return true;
  return differ(absl::StrCat("expected ", ShortJson(expected), ", got ", ShortJson(actual)));
}

}  // namespace

bool JsonSubset(const nlohmann::json& expected, const nlohmann::json& actual,
                std::string* difference) {
  return Subset(expected, actual, "", difference);
}

}  // namespace validation
}  // namespace understudy
