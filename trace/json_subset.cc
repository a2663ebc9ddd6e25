#include "trace/json_subset.h"

#include "absl/strings/str_cat.h"
#include "re2/re2.h"
#include "trace/render.h"

namespace understudy {
namespace trace {
namespace {

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
        std::string at = Child(path, it.key());
        if (difference != nullptr) {
          *difference = absl::StrCat("at ", at, ": missing (expected ", ShortJson(it.value()), ")");
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

}  // namespace trace
}  // namespace understudy
