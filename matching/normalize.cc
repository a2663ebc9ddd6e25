#include "matching/normalize.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace understudy {
namespace matching {
namespace {

using nlohmann::json;

struct Builtin {
  const char* name;
  const char* pattern;
  const char* replacement;
};

// Linear-time RE2 patterns; replacements are fixed markers.
constexpr Builtin kBuiltins[] = {
    {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
     "<uuid>"},
    {"timestamp",
     "[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?",
     "<timestamp>"},
    {"tmp-path", "(/tmp|/var/tmp|/private/var/folders|/var/folders)/[^\\s\"']*", "<tmp-path>"},
};

template <typename F>
void ForEachString(json* node, const F& f) {
  if (node->is_string()) {
    f(&node->get_ref<std::string&>());
  } else if (node->is_array() || node->is_object()) {
    for (json& child : *node) ForEachString(&child, f);
  }
}

}  // namespace

std::vector<std::string> MatchNormalizer::BuiltinNames() {
  std::vector<std::string> names;
  for (const Builtin& b : kBuiltins) names.push_back(b.name);
  return names;
}

absl::StatusOr<std::shared_ptr<const MatchNormalizer>> MatchNormalizer::Create(
    const std::vector<std::string>& ignore_paths, const std::vector<std::string>& normalizers,
    bool exact_tool_call_ids) {
  auto out = std::make_shared<MatchNormalizer>();
  out->exact_tool_call_ids_ = exact_tool_call_ids;
  for (const std::string& p : ignore_paths) {
    absl::StatusOr<capture::JsonPath> path = capture::JsonPath::Parse(p);
    if (!path.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--ignore-path \"", p, "\": ", path.status().message()));
    }
    out->paths_.push_back(std::move(*path));
  }
  for (const std::string& n : normalizers) {
    std::string pattern;
    std::string replacement;
    size_t arrow = n.find("=>");
    if (arrow == std::string::npos) {
      const Builtin* found = nullptr;
      for (const Builtin& b : kBuiltins) {
        if (n == b.name) found = &b;
      }
      if (found == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--normalize \"", n, "\": not a built-in (uuid, timestamp, tmp-path) and not "
            "REGEX=>REPLACEMENT"));
      }
      pattern = found->pattern;
      replacement = found->replacement;
    } else {
      pattern = n.substr(0, arrow);
      replacement = n.substr(arrow + 2);
    }
    RE2::Options options;
    options.set_log_errors(false);
    auto re = std::make_unique<RE2>(pattern, options);
    if (!re->ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--normalize \"", n, "\": ", re->error()));
    }
    std::string why;
    if (!re->CheckRewriteString(replacement, &why)) {
      return absl::InvalidArgumentError(absl::StrCat("--normalize \"", n, "\": ", why));
    }
    out->rules_.push_back(Rule{std::move(re), std::move(replacement)});
  }
  return std::shared_ptr<const MatchNormalizer>(std::move(out));
}

void MatchNormalizer::Apply(json* canonical) const {
  for (const capture::JsonPath& path : paths_) path.Remove(canonical);
  if (rules_.empty()) return;
  ForEachString(canonical, [this](std::string* s) {
    for (const Rule& rule : rules_) RE2::GlobalReplace(s, *rule.pattern, rule.replacement);
  });
}

}  // namespace matching
}  // namespace understudy
