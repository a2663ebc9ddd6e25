#include "replayer/normalize.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace understudy {
namespace replayer {
namespace {

using nlohmann::json;
using Step = MatchNormalizer::Step;

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

absl::StatusOr<std::vector<Step>> ParsePath(absl::string_view text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("--ignore-path \"", text, "\": ", why));
  };
  std::vector<Step> steps;
  size_t i = 0;
  if (text.empty()) return bad("empty path");
  while (i < text.size()) {
    if (text[i] == '[') {
      size_t close = text.find(']', i);
      if (close == absl::string_view::npos) return bad(absl::StrCat("no ] after [ at ", i + 1));
      absl::string_view inside = text.substr(i + 1, close - i - 1);
      Step step;
      if (inside == "*") {
        step.kind = Step::kEvery;
      } else if (size_t n; absl::SimpleAtoi(inside, &n)) {
        step.kind = Step::kIndex;
        step.index = n;
      } else {
        return bad(absl::StrCat("expected [*] or [N], got [", inside, "]"));
      }
      steps.push_back(std::move(step));
      i = close + 1;
      if (i < text.size() && text[i] == '.') ++i;
      continue;
    }
    size_t end = text.find_first_of(".[", i);
    if (end == absl::string_view::npos) end = text.size();
    if (end == i) return bad(absl::StrCat("empty key at ", i + 1));
    Step step;
    step.kind = Step::kKey;
    step.key = std::string(text.substr(i, end - i));
    steps.push_back(std::move(step));
    i = end;
    if (i < text.size() && text[i] == '.') {
      ++i;
      if (i == text.size()) return bad("ends with '.'");
    }
  }
  return steps;
}

void Remove(json* node, const std::vector<Step>& path, size_t at) {
  const Step& step = path[at];
  const bool last = at + 1 == path.size();
  switch (step.kind) {
    case Step::kKey: {
      if (!node->is_object()) return;
      auto it = node->find(step.key);
      if (it == node->end()) return;
      if (last) {
        node->erase(it);
      } else {
        Remove(&*it, path, at + 1);
      }
      return;
    }
    case Step::kIndex: {
      if (!node->is_array() || step.index >= node->size()) return;
      if (last) {
        // Removing shifts later elements; blank it instead so indexes hold.
        (*node)[step.index] = nullptr;
      } else {
        Remove(&(*node)[step.index], path, at + 1);
      }
      return;
    }
    case Step::kEvery: {
      if (!node->is_array()) return;
      for (json& element : *node) {
        if (last) {
          element = nullptr;
        } else {
          Remove(&element, path, at + 1);
        }
      }
      return;
    }
  }
}

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
    const std::vector<std::string>& ignore_paths, const std::vector<std::string>& normalizers) {
  auto out = std::make_shared<MatchNormalizer>();
  for (const std::string& p : ignore_paths) {
    absl::StatusOr<std::vector<Step>> steps = ParsePath(p);
    if (!steps.ok()) return steps.status();
    out->paths_.push_back(std::move(*steps));
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
  for (const std::vector<Step>& path : paths_) Remove(canonical, path, 0);
  if (rules_.empty()) return;
  ForEachString(canonical, [this](std::string* s) {
    for (const Rule& rule : rules_) RE2::GlobalReplace(s, *rule.pattern, rule.replacement);
  });
}

}  // namespace replayer
}  // namespace understudy
