// `{{name}}` templates: the placeholders of playbook steps (filled from the
// run's captures) and of `mock_tools` templates (filled from a tool call's
// arguments).
//
//   auto lookup = [&](absl::string_view name) -> std::optional<std::string> {...};
//   absl::StatusOr<std::string> text =
//       RenderTemplate("Plan {{ plan_id }} is ready.", lookup, "playbook.turns[0].actions[1]");
//
// A placeholder is `{{`, optional spaces, a name ([A-Za-z_][A-Za-z0-9_.-]*),
// optional spaces, `}}`. Anything else — an unterminated `{{`, `{{ 1x }}`,
// `{{}}` — is literal text, so documents that merely contain braces render
// unchanged. There is no escaping and no nesting: a value is inserted as is
// and never rendered again.
//
// Pure functions; thread-safe as long as `lookup` is.
#ifndef UNDERSTUDY_SCENARIO_TEMPLATE_H_
#define UNDERSTUDY_SCENARIO_TEMPLATE_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace scenario {

// Gives a placeholder's value, or nullopt when `name` has none.
using TemplateLookup = std::function<std::optional<std::string>(absl::string_view name)>;

// `text` with every placeholder replaced by lookup(name), in one left-to-right
// pass. FAILED_PRECONDITION "<where>: {{name}} is not set" for the first
// placeholder whose lookup gives nullopt (callers whose inputs are at fault
// rather than the run's state re-code it). `where` names the template in the
// scenario, e.g. "playbook.turns[1].actions[0]".
absl::StatusOr<std::string> RenderTemplate(absl::string_view text, const TemplateLookup& lookup,
                                           absl::string_view where);

// `value` with RenderTemplate applied to every string in it: a string
// itself, and recursively the values of objects and the elements of arrays.
// Object keys, numbers, booleans and null are kept. Errors as RenderTemplate.
absl::StatusOr<nlohmann::json> RenderTemplateJson(const nlohmann::json& value,
                                                  const TemplateLookup& lookup,
                                                  absl::string_view where);

}  // namespace scenario
}  // namespace understudy

#endif  // UNDERSTUDY_SCENARIO_TEMPLATE_H_
