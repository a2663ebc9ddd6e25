// Normalization before matching: what may differ between a recording and a
// replay without making a request a different request.
//
//   ignore paths   canonical-request paths removed before comparing, e.g.
//                  `params.temperature`, `messages[*].name`, `extra.user`;
//                  `[*]` matches every element of an array, `[N]` one.
//   normalizers    RE2 patterns replaced in every string of the canonical
//                  request, e.g. UUIDs → "<uuid>". Built-in names: uuid,
//                  timestamp (ISO 8601), tmp-path (/tmp/… and /var/folders/…);
//                  or `REGEX=>REPLACEMENT` (RE2 syntax, \1 for groups).
//
// Both apply to the recorded and the live request alike, so a normalized
// field matches whatever it holds and miss reports never list it.
//
// Besides these, tool call ids that the client made up are compared by
// position, not by value (SessionIndex does it, since it takes knowing
// which ids the recording holds), unless `exact_tool_call_ids` is set.
#ifndef UNDERSTUDY_MATCHING_NORMALIZE_H_
#define UNDERSTUDY_MATCHING_NORMALIZE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "capture/json_path.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"

namespace understudy {
namespace matching {

class MatchNormalizer {
 public:
  // The identity: nothing ignored, nothing rewritten.
  MatchNormalizer() = default;

  // Compiles the options once. INVALID_ARGUMENT naming the bad entry
  // ("--ignore-path \"messages[x]\": …", "--normalize \"(\": missing )")
  // for a malformed path, an unknown built-in name, or a pattern RE2 refuses.
  static absl::StatusOr<std::shared_ptr<const MatchNormalizer>> Create(
      const std::vector<std::string>& ignore_paths, const std::vector<std::string>& normalizers,
      bool exact_tool_call_ids = false);

  // The built-in normalizer names, for --help.
  static std::vector<std::string> BuiltinNames();

  bool empty() const { return paths_.empty() && rules_.empty(); }

  // Whether tool call ids the client made up must match as they are
  // (SessionIndex); by default they match by position.
  bool exact_tool_call_ids() const { return exact_tool_call_ids_; }

  // Applies the options to a canonical request in place. Thread-safe.
  void Apply(nlohmann::json* canonical) const;

 private:
  struct Rule {
    std::unique_ptr<RE2> pattern;
    std::string replacement;
  };

  std::vector<capture::JsonPath> paths_;
  std::vector<Rule> rules_;
  bool exact_tool_call_ids_ = false;
};

}  // namespace matching
}  // namespace understudy

#endif  // UNDERSTUDY_MATCHING_NORMALIZE_H_
