// The tools that check documents: validate_scenario, validate_test_spec,
// get_schema. They read no server and no file: the document comes in the
// arguments.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "mcpserver/tool_impl.h"
#include "scenario/scenario.h"
#include "trace/spec.h"
#include "validation/schemas.h"

namespace understudy {
namespace mcpserver {
namespace {

using nlohmann::json;

json DocumentInput(const char* what) {
  return ObjectSchema(
      {{"document",
        {{"type", {"string", "object"}},
         {"description", absl::StrCat("the ", what,
                                      ": YAML or JSON text, or the parsed object (positions then "
                                      "refer to its compact JSON text)")}}},
       {"name", {{"type", "string"}, {"maxLength", 256},
                 {"description", "what to call the document in the report (\"document\")"}}}},
      {"document"});
}

absl::StatusOr<ToolResult> ValidateScenarioTool(const ToolsOptions&, const json& args) {
  US_ASSIGN_OR_RETURN(std::string text, DocumentArgument(args, "document"));
  validation::Report report =
      scenario::ValidateScenario(text, Arg<std::string>(args, "name", "document"));
  report.SortByPosition();
  return Structured(ReportResult(report));
}

absl::StatusOr<ToolResult> ValidateSpecTool(const ToolsOptions&, const json& args) {
  US_ASSIGN_OR_RETURN(std::string text, DocumentArgument(args, "document"));
  validation::Report report = trace::ValidateSpec(text, Arg<std::string>(args, "name", "document"));
  report.SortByPosition();
  return Structured(ReportResult(report));
}

absl::StatusOr<ToolResult> GetSchema(const ToolsOptions&, const json& args) {
  const std::string kind = args.at("kind").get<std::string>();
  US_ASSIGN_OR_RETURN(absl::string_view text, validation::SchemaText(kind));
  json schema = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return absl::InternalError("the shipped schema is not JSON");
  return Structured({{"kind", kind}, {"schema", std::move(schema)}});
}

// "scenario (understudy scenario (understudy.scenario/v1)), ...": each
// kind with its schema's title, so that the description names every kind
// this build ships.
std::string KindsDescribed(const std::vector<std::string>& kinds) {
  std::vector<std::string> described;
  for (const std::string& kind : kinds) {
    absl::StatusOr<absl::string_view> text = validation::SchemaText(kind);
    json schema = text.ok() ? json::parse(*text, nullptr, /*allow_exceptions=*/false) : json();
    const json title = schema.is_object() ? schema.value("title", json()) : json();
    described.push_back(title.is_string()
                            ? absl::StrCat(kind, " (", title.get<std::string>(), ")")
                            : kind);
  }
  return absl::StrJoin(described, ", ");
}

}  // namespace

std::vector<ToolDef> DocumentTools() {
  std::vector<ToolDef> tools;
  tools.push_back(
      {"validate_scenario",
       "Validate a scenario",
       "Checks a scenario document (rules, playbook, agents, extractors, mock tools; "
       "docs/scenarios.md) and reports every problem at once, each with its path, line, column "
       "and a suggestion, as `understudy validate` does. Fix them all, then validate again.",
       DocumentInput("scenario"), ReportSchema(), true, &ValidateScenarioTool});
  tools.push_back(
      {"validate_test_spec",
       "Validate an assertion spec",
       "Checks an assertion spec (docs/assertions.md) and reports every problem at once, each "
       "with its path, line, column and a suggestion (did you mean ...). A spec that validates "
       "is what assert_run and generated tests evaluate.",
       DocumentInput("spec"), ReportSchema(), true, &ValidateSpecTool});
  std::vector<std::string> kinds = validation::SchemaKinds();
  tools.push_back(
      {"get_schema",
       "Get a document schema",
       absl::StrCat("The JSON Schema (2020-12) of a document kind understudy reads: ",
                    KindsDescribed(kinds), ". `understudy schema KIND` prints the same."),
       ObjectSchema({{"kind", {{"type", "string"}, {"enum", kinds}}}}, {"kind"}),
       ObjectSchema({{"kind", {{"type", "string"}}},
                     {"schema", {{"type", "object"}, {"description", "the JSON Schema"}}}},
                    {"kind", "schema"}),
       true, &GetSchema});
  return tools;
}

}  // namespace mcpserver
}  // namespace understudy
