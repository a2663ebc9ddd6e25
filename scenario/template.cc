#include "scenario/template.h"

#include <cstddef>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace understudy {
namespace scenario {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }
bool IsNameStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-'; }

// When a placeholder starts at text[pos] (which holds "{{"), sets *name and
// returns the position just past its "}}"; otherwise returns npos.
size_t ParsePlaceholder(absl::string_view text, size_t pos, absl::string_view* name) {
  size_t i = pos + 2;
  while (i < text.size() && IsSpace(text[i])) ++i;
  const size_t start = i;
  if (i >= text.size() || !IsNameStart(text[i])) return absl::string_view::npos;
  while (i < text.size() && IsNameChar(text[i])) ++i;
  *name = text.substr(start, i - start);
  while (i < text.size() && IsSpace(text[i])) ++i;
  if (text.substr(i, 2) != "}}") return absl::string_view::npos;
  return i + 2;
}

}  // namespace

absl::StatusOr<std::string> RenderTemplate(absl::string_view text, const TemplateLookup& lookup,
                                           absl::string_view where) {
  std::string out;
  out.reserve(text.size());
  size_t done = 0;  // text[0, done) is in `out`
  for (size_t pos = text.find("{{"); pos != absl::string_view::npos; pos = text.find("{{", pos)) {
    absl::string_view name;
    const size_t end = ParsePlaceholder(text, pos, &name);
    if (end == absl::string_view::npos) {
      // Literal. Step one brace only, so "{{{x}}" still finds "{{x}}".
      ++pos;
      continue;
    }
    std::optional<std::string> value = lookup(name);
    if (!value.has_value()) {
      return absl::FailedPreconditionError(absl::StrCat(where, ": {{", name, "}} is not set"));
    }
    absl::StrAppend(&out, text.substr(done, pos - done), *value);
    done = pos = end;
  }
  absl::StrAppend(&out, text.substr(done));
  return out;
}

absl::StatusOr<nlohmann::json> RenderTemplateJson(const nlohmann::json& value,
                                                  const TemplateLookup& lookup,
                                                  absl::string_view where) {
  if (value.is_string()) {
    US_ASSIGN_OR_RETURN(std::string text,
                        RenderTemplate(value.get_ref<const std::string&>(), lookup, where));
    return nlohmann::json(std::move(text));
  }
  if (value.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto it = value.begin(); it != value.end(); ++it) {
      US_ASSIGN_OR_RETURN(out[it.key()], RenderTemplateJson(it.value(), lookup, where));
    }
    return out;
  }
  if (value.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const nlohmann::json& child : value) {
      US_ASSIGN_OR_RETURN(nlohmann::json rendered, RenderTemplateJson(child, lookup, where));
      out.push_back(std::move(rendered));
    }
    return out;
  }
  return value;
}

}  // namespace scenario
}  // namespace understudy
