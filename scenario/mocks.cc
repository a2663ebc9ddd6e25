#include "scenario/mocks.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "scenario/template.h"
#include "validation/json_bounds.h"

namespace understudy {
namespace scenario {
namespace {

using ::nlohmann::json;

// Longest stretch of a caller's tool name quoted in an error.
constexpr size_t kMaxQuotedBytes = 200;

std::string Quote(absl::string_view text) {
  const bool cut = text.size() > kMaxQuotedBytes;
  return absl::StrCat("\"", absl::CHexEscape(text.substr(0, kMaxQuotedBytes)), "\"",
                      cut ? "..." : "");
}

// JSON text that never throws: scenario strings are not UTF-8-checked.
std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The call's arguments as a JSON object ("" is {}).
absl::StatusOr<json> ParseArguments(const std::string& text) {
  if (text.size() > kMaxToolArgumentsBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "arguments: ", text.size(), " bytes, more than the limit of ", kMaxToolArgumentsBytes));
  }
  if (text.empty()) return json::object();
  // The parser itself is iterative, but dumping a value (templates do)
  // recurses: validation::ParseJson bounds the depth.
  absl::StatusOr<json> parsed = validation::ParseJson<json>(text, "arguments");
  if (!parsed.ok()) return parsed.status();
  json args = *std::move(parsed);
  if (!args.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("arguments: not a JSON object: got ", args.type_name()));
  }
  return args;
}

absl::StatusOr<std::string> RenderMockTemplate(const std::string& tool, const MockTool& mock,
                                               const json& args) {
  const TemplateLookup lookup = [&args](absl::string_view name) -> std::optional<std::string> {
    auto it = args.find(std::string(name));
    if (it == args.end()) return std::nullopt;
    return it->is_string() ? it->get<std::string>() : Dump(*it);
  };
  absl::StatusOr<std::string> text =
      RenderTemplate(mock.text, lookup, absl::StrCat("mock_tools.", tool));
  if (text.ok()) return text;
  std::vector<std::string> keys;
  for (auto it = args.begin(); it != args.end(); ++it) keys.push_back(Quote(it.key()));
  return absl::InvalidArgumentError(
      absl::StrCat(text.status().message(), " in the call's arguments (it has: ",
                   keys.empty() ? "none" : absl::StrJoin(keys, ", "), ")"));
}

}  // namespace

absl::StatusOr<v1::InvokeToolResponse> InvokeMockTool(const Scenario& scenario,
                                                      const v1::InvokeToolRequest& request) {
  if (request.tool().empty()) return absl::InvalidArgumentError("tool: required");
  absl::StatusOr<json> args = ParseArguments(request.arguments());
  if (!args.ok()) return args.status();

  auto found = scenario.mock_tools.find(request.tool());
  if (found == scenario.mock_tools.end()) {
    std::vector<absl::string_view> mocked;  // std::map: already sorted
    for (const auto& [name, mock] : scenario.mock_tools) mocked.push_back(name);
    return absl::NotFoundError(absl::StrCat(
        "tool ", Quote(request.tool()), " is not mocked by scenario ",
        Quote(scenario.name.empty() ? scenario.source : scenario.name), "; mocked tools: ",
        mocked.empty() ? "none" : absl::StrJoin(mocked, ", "), " (add it under mock_tools)"));
  }
  const MockTool& mock = found->second;

  v1::InvokeToolResponse response;
  switch (mock.kind) {
    case MockTool::Kind::kText:
      response.set_content(mock.text);
      break;
    case MockTool::Kind::kTemplate: {
      absl::StatusOr<std::string> text = RenderMockTemplate(found->first, mock, *args);
      if (!text.ok()) return text.status();
      response.set_content(*std::move(text));
      break;
    }
    case MockTool::Kind::kResult:
      response.set_result(Dump(mock.result));
      response.set_content(mock.result.is_string() ? mock.result.get<std::string>()
                                                   : response.result());
      break;
  }
  if (mock.kind != MockTool::Kind::kResult) response.set_result(Dump(json(response.content())));
  response.set_mocked(true);
  return response;
}

absl::StatusOr<v1::AskResponse> AnswerMockUi(const Scenario* scenario,
                                             const v1::AskRequest& request) {
  const MockUi defaults;
  const MockUi& ui = scenario != nullptr ? scenario->mock_ui : defaults;
  v1::AskResponse response;
  switch (request.kind()) {
    case v1::UI_KIND_CONFIRM:
      response.set_confirmed(ui.confirm);
      break;
    case v1::UI_KIND_SELECT: {
      if (request.items_size() == 0) {
        return absl::InvalidArgumentError("items: select needs at least one item");
      }
      if (ui.select < 0 || ui.select >= request.items_size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "mock_ui.select is ", ui.select, " but the request has only ", request.items_size(),
            request.items_size() == 1 ? " item" : " items", " (indexes start at 0)"));
      }
      const int index = static_cast<int>(ui.select);
      response.set_selected_index(index);
      response.set_selected(request.items(index));
      break;
    }
    case v1::UI_KIND_INPUT:
      response.set_text(ui.input);
      break;
    case v1::UI_KIND_EDITOR:
      response.set_text(ui.editor);
      break;
    default:
      return absl::InvalidArgumentError(request.kind() == v1::UI_KIND_UNSPECIFIED
                                            ? "kind: required (confirm, select, input or editor)"
                                            : absl::StrCat("kind: unknown value ", request.kind(),
                                                           " (confirm, select, input or editor)"));
  }
  response.set_kind(request.kind());
  response.set_mocked(true);
  return response;
}

}  // namespace scenario
}  // namespace understudy
