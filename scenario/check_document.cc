// The scenario document's own parts, as the Checker reads them (the
// contract is scenario_checker.h): the top level, agents, extractors,
// matching options, the playbook and the tool and UI mocks. Rules and
// actions are check_rules.cc.
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "capture/json_path.h"
#include "matching/normalize.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "scenario/scenario.h"
#include "scenario/scenario_checker.h"
#include "validation/suggest.h"
#include "yaml-cpp/yaml.h"

namespace understudy {
namespace scenario {
namespace internal {
namespace {

using validation::Suggest;

constexpr Keys kTopKeys = {"schema",   "name",    "description", "agents",     "extractors",
                           "matching", "rules",   "default",     "playbook",   "mock_tools",
                           "mock_ui"};

// The first mapping key under `n` that is not a scalar: what an unquoted
// `{{name}}` template becomes (YAML reads it as a nested flow mapping).
std::optional<YAML::Node> NonScalarKey(const YAML::Node& n) {
  if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar()) return it->first;
      if (std::optional<YAML::Node> inner = NonScalarKey(it->second)) return inner;
    }
  } else if (n.IsSequence()) {
    for (const YAML::Node& item : n) {
      if (std::optional<YAML::Node> inner = NonScalarKey(item)) return inner;
    }
  }
  return std::nullopt;
}

// The `{{name}}` template names in every string of `value`.
void TemplateNames(const nlohmann::json& value, std::vector<std::string>* out) {
  static const RE2* const kName = new RE2(R"(\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\})");
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    re2::StringPiece input(text.data(), text.size());
    std::string name;
    while (RE2::FindAndConsume(&input, *kName, &name)) out->push_back(name);
  } else if (value.is_structured()) {
    for (const nlohmann::json& item : value) TemplateNames(item, out);
  }
}

}  // namespace

void Checker::Document(const YAML::Node& root, Scenario* s) {
  if (!root.IsMap()) {
    Error(root, "",
          absl::StrCat("expected a mapping at the top level, got ", Describe(root)));
    return;
  }
  Map(root, "", kTopKeys);
  std::string schema;
  if (!root["schema"].IsDefined()) {
    Error(root, "", "missing required field \"schema\"",
          absl::StrCat("add schema: ", kScenarioSchema));
  } else if (String(root["schema"], "schema", &schema) && schema != kScenarioSchema) {
    Error(root["schema"], "schema",
          absl::StrCat("unknown schema \"", schema, "\"; this build reads ", kScenarioSchema));
  }
  if (root["name"].IsDefined()) String(root["name"], "name", &s->name);
  if (root["description"].IsDefined()) {
    String(root["description"], "description", &s->description);
  }
  if (root["agents"].IsDefined()) Agents(root["agents"], "agents", s);
  if (root["extractors"].IsDefined()) ExtractorsField(root["extractors"], "extractors", s);
  if (root["matching"].IsDefined()) Matching(root["matching"], "matching", s);
  if (root["rules"].IsDefined()) Rules(root["rules"], "rules", s);
  if (root["default"].IsDefined()) {
    const YAML::Node& d = root["default"];
    Action action;
    if (Map(d, "default", kActionKeys) && ActionIn(d, "default", 1, Answers::kDefault, &action)) {
      s->default_action = std::move(action);
    }
  }
  if (root["playbook"].IsDefined()) Playbook(root["playbook"], "playbook", s);
  if (root["mock_tools"].IsDefined()) MockTools(root["mock_tools"], "mock_tools", s);
  if (root["mock_ui"].IsDefined()) MockUiField(root["mock_ui"], "mock_ui", s);
}

void Checker::Agents(const YAML::Node& n, const std::string& path, Scenario* s) {
  if (!n.IsSequence()) {
    Error(n, path, absl::StrCat("expected a list of {name, system_prompt}, got ", Describe(n)));
    return;
  }
  std::set<std::string> names;
  for (size_t i = 0; i < n.size(); ++i) {
    const YAML::Node& a = n[i];
    const std::string p = At(path, i);
    if (!Map(a, p, {"name", "system_prompt"})) continue;
    AgentDef agent;
    bool ok = Require(a, p, "name") && NonEmptyString(a["name"], Join(p, "name"), &agent.name);
    ok = Require(a, p, "system_prompt") &&
         Regex(a["system_prompt"], Join(p, "system_prompt"), &agent.system_prompt) && ok;
    // Names count even when the pattern is bad, so duplicates are named once.
    if (!agent.name.empty() && !names.insert(agent.name).second) {
      Warning(a["name"], Join(p, "name"),
              absl::StrCat("agent \"", agent.name, "\" is defined twice; the first match wins"));
    }
    if (!ok) continue;
    s->agents.push_back(std::move(agent));
  }
}

void Checker::ExtractorsField(const YAML::Node& n, const std::string& path, Scenario* s) {
  if (!Map(n, path, {"phase", "routing", "end"})) return;
  if (n["phase"].IsDefined()) {
    const YAML::Node& m = n["phase"];
    const std::string p = Join(path, "phase");
    Extractors::Phase phase;
    if (Map(m, p, {"tool", "argument"})) {
      bool ok = Require(m, p, "tool") && NonEmptyString(m["tool"], Join(p, "tool"), &phase.tool);
      ok = Require(m, p, "argument") &&
           NonEmptyString(m["argument"], Join(p, "argument"), &phase.argument) && ok;
      if (ok) s->extractors.phase = phase;
    }
  }
  if (n["routing"].IsDefined()) {
    const YAML::Node& m = n["routing"];
    const std::string p = Join(path, "routing");
    Extractors::Routing routing{"agents", "phase", "reason"};
    if (Map(m, p, {"agents_field", "phase_field", "reason_field"})) {
      bool ok = true;
      if (m["agents_field"].IsDefined()) {
        ok = NonEmptyString(m["agents_field"], Join(p, "agents_field"), &routing.agents_field);
      }
      if (m["phase_field"].IsDefined()) {
        ok = NonEmptyString(m["phase_field"], Join(p, "phase_field"), &routing.phase_field) && ok;
      }
      if (m["reason_field"].IsDefined()) {
        ok = NonEmptyString(m["reason_field"], Join(p, "reason_field"), &routing.reason_field) &&
             ok;
      }
      if (ok) s->extractors.routing = routing;
    }
  }
  if (n["end"].IsDefined()) {
    const YAML::Node& m = n["end"];
    const std::string p = Join(path, "end");
    Extractors::End end;
    if (Map(m, p, {"tool"}) && Require(m, p, "tool") &&
        NonEmptyString(m["tool"], Join(p, "tool"), &end.tool)) {
      s->extractors.end = end;
    }
  }
}

void Checker::Matching(const YAML::Node& n, const std::string& path, Scenario* s) {
  MatchingOptions& m = s->matching;
  if (!Map(n, path, {"ignore_paths", "normalizers", "strict"})) return;
  if (n["ignore_paths"].IsDefined()) {
    const std::string p = Join(path, "ignore_paths");
    std::vector<std::string> paths;
    StringList(n["ignore_paths"], p, &paths);
    for (size_t i = 0; i < paths.size(); ++i) {
      absl::StatusOr<capture::JsonPath> parsed = capture::JsonPath::Parse(paths[i]);
      if (parsed.ok()) {
        m.ignore_paths.push_back(paths[i]);
      } else {
        Error(n["ignore_paths"][i], At(p, i),
              absl::StrCat("invalid path: ", parsed.status().message()));
      }
    }
  }
  if (n["normalizers"].IsDefined()) {
    const std::string p = Join(path, "normalizers");
    std::vector<std::string> normalizers;
    StringList(n["normalizers"], p, &normalizers);
    for (size_t i = 0; i < normalizers.size(); ++i) {
      auto one = matching::MatchNormalizer::Create({}, {normalizers[i]});
      if (one.ok()) {
        m.normalizers.push_back(normalizers[i]);
      } else {
        // The message names the command-line flag; keep only the reason.
        std::string message(one.status().message());
        const std::string prefix = absl::StrCat("--normalize \"", normalizers[i], "\": ");
        if (absl::StartsWith(message, prefix)) message = message.substr(prefix.size());
        Error(n["normalizers"][i], At(p, i), absl::StrCat("invalid normalizer: ", message));
      }
    }
  }
  if (n["strict"].IsDefined()) {
    bool strict;
    if (Bool(n["strict"], Join(path, "strict"), &strict)) m.strict = strict;
  }
}

void Checker::Playbook(const YAML::Node& n, const std::string& path, Scenario* s) {
  if (!Map(n, path, {"turns"}) || !Require(n, path, "turns")) return;
  const YAML::Node& turns = n["turns"];
  const std::string tp = Join(path, "turns");
  if (!turns.IsSequence()) {
    Error(turns, tp, absl::StrCat("expected a list of turns, got ", Describe(turns)));
    return;
  }
  for (size_t i = 0; i < turns.size(); ++i) {
    const YAML::Node& t = turns[i];
    const std::string p = At(tp, i);
    if (!Map(t, p, {"when", "actions", "capture"})) continue;
    PlaybookTurn turn;
    bool ok = true;
    if (t["when"].IsDefined()) {
      Pattern when;
      if (Regex(t["when"], Join(p, "when"), &when)) {
        turn.when = std::move(when);
      } else {
        ok = false;
      }
    }
    if (Require(t, p, "actions")) {
      const YAML::Node& actions = t["actions"];
      const std::string ap = Join(p, "actions");
      if (!actions.IsSequence() || actions.size() == 0) {
        Error(actions, ap,
              absl::StrCat("expected a non-empty list of call or say, got ", Describe(actions)));
        ok = false;
      } else {
        for (size_t j = 0; j < actions.size(); ++j) {
          PlaybookStep step;
          if (Step(actions[j], At(ap, j), &step)) {
            turn.actions.push_back(std::move(step));
          } else {
            ok = false;
          }
        }
      }
    } else {
      ok = false;
    }
    if (t["capture"].IsDefined()) ok = Captures(t["capture"], Join(p, "capture"), &turn) && ok;
    if (ok) s->playbook.push_back(std::move(turn));
  }
  // A template naming no capture can only fail at request time.
  std::vector<std::string> captured;
  for (const PlaybookTurn& turn : s->playbook) {
    for (const Capture& c : turn.captures) captured.push_back(c.name);
  }
  for (size_t i = 0; i < s->playbook.size(); ++i) {
    for (size_t j = 0; j < s->playbook[i].actions.size(); ++j) {
      const PlaybookStep& step = s->playbook[i].actions[j];
      std::vector<std::string> names;
      TemplateNames(step.kind == PlaybookStep::Kind::kCall ? step.args
                                                           : nlohmann::json(step.text),
                    &names);
      for (const std::string& name : names) {
        if (std::find(captured.begin(), captured.end(), name) != captured.end()) continue;
        const YAML::Node& at = turns[i]["actions"][j];
        std::string hint = Suggest(name, captured);
        Warning(at, At(Join(At(tp, i), "actions"), j),
                absl::StrCat("{{", name, "}} is not captured by any turn; the request will fail "
                             "when this action is taken"),
                hint.empty() ? "declare it under a turn's capture" : hint);
      }
    }
  }
}

bool Checker::Step(const YAML::Node& n, const std::string& p, PlaybookStep* step) {
  if (!Map(n, p, {"call", "say"})) return false;
  const bool call = n["call"].IsDefined(), say = n["say"].IsDefined();
  if (call == say) {
    Error(n, p, call ? "both call and say; expected exactly one" : "expected call or say");
    return false;
  }
  if (call) {
    const YAML::Node& c = n["call"];
    const std::string cp = Join(p, "call");
    step->kind = PlaybookStep::Kind::kCall;
    if (!Map(c, cp, {"tool", "args"})) return false;
    bool ok = Require(c, cp, "tool") && NonEmptyString(c["tool"], Join(cp, "tool"), &step->tool);
    if (c["args"].IsDefined()) {
      if (std::optional<YAML::Node> key = NonScalarKey(c["args"])) {
        Error(*key, Join(cp, "args"),
              "a mapping key is itself a mapping: an unquoted {{name}} template is read as one",
              "quote the template, e.g. id: \"{{plan_id}}\"");
        ok = false;
      } else if (c["args"].IsMap()) {
        step->args = ToJson(c["args"]);
      } else {
        Error(c["args"], Join(cp, "args"),
              absl::StrCat("expected a mapping, got ", Describe(c["args"])));
        ok = false;
      }
    }
    return ok;
  }
  const YAML::Node& sy = n["say"];
  const std::string sp = Join(p, "say");
  step->kind = PlaybookStep::Kind::kSay;
  return Map(sy, sp, {"text"}) && Require(sy, sp, "text") &&
         String(sy["text"], Join(sp, "text"), &step->text);
}

bool Checker::Captures(const YAML::Node& n, const std::string& path, PlaybookTurn* turn) {
  if (!n.IsMap()) {
    Error(n, path, absl::StrCat("expected a mapping of NAME: {from_tool_result, regex}, got ",
                                Describe(n)));
    return false;
  }
  bool ok = true;
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar()) {
      Error(it->first, path, "capture names must be strings");
      ok = false;
      continue;
    }
    Capture capture;
    capture.name = it->first.Scalar();
    const std::string p = Join(path, capture.name);
    const YAML::Node c = it->second;  // a copy: `it->` is a temporary proxy
    if (!Map(c, p, {"from_tool_result", "regex"})) {
      ok = false;
      continue;
    }
    bool fine = Require(c, p, "from_tool_result") &&
                NonEmptyString(c["from_tool_result"], Join(p, "from_tool_result"),
                               &capture.from_tool_result);
    // Group 1 is captured, or the whole match when there is no group
    // (`'PLAN-[0-9a-f]+'` captures the id itself).
    if (!(Require(c, p, "regex") && Regex(c["regex"], Join(p, "regex"), &capture.regex))) {
      fine = false;
    }
    if (fine) {
      turn->captures.push_back(std::move(capture));
    } else {
      ok = false;
    }
  }
  return ok;
}

void Checker::MockTools(const YAML::Node& n, const std::string& path, Scenario* s) {
  if (!n.IsMap()) {
    Error(n, path, absl::StrCat("expected a mapping of TOOL: answer, got ", Describe(n)));
    return;
  }
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar()) {
      Error(it->first, path, "tool names must be strings");
      continue;
    }
    const std::string tool = it->first.Scalar();
    const std::string p = Join(path, tool);
    const YAML::Node v = it->second;  // a copy: `it->` is a temporary proxy
    MockTool mock;
    if (v.IsScalar()) {
      mock.text = v.Scalar();
    } else if (v.IsMap()) {
      if (!Map(v, p, {"template", "result"})) continue;
      const bool has_template = v["template"].IsDefined(), has_result = v["result"].IsDefined();
      if (has_template == has_result) {
        Error(v, p, has_template ? "both template and result; expected exactly one"
                                 : "expected template or result");
        continue;
      }
      if (has_template) {
        mock.kind = MockTool::Kind::kTemplate;
        if (!String(v["template"], Join(p, "template"), &mock.text)) continue;
      } else {
        mock.kind = MockTool::Kind::kResult;
        mock.result = ToJson(v["result"]);
      }
    } else {
      Error(v, p,
            absl::StrCat("expected a string, {template} or {result}, got ", Describe(v)));
      continue;
    }
    s->mock_tools[tool] = std::move(mock);
  }
}

void Checker::MockUiField(const YAML::Node& n, const std::string& path, Scenario* s) {
  if (!Map(n, path, {"confirm", "select", "input", "editor"})) return;
  if (n["confirm"].IsDefined()) Bool(n["confirm"], Join(path, "confirm"), &s->mock_ui.confirm);
  if (n["select"].IsDefined()) Int(n["select"], Join(path, "select"), &s->mock_ui.select, 0);
  if (n["input"].IsDefined()) String(n["input"], Join(path, "input"), &s->mock_ui.input);
  if (n["editor"].IsDefined()) String(n["editor"], Join(path, "editor"), &s->mock_ui.editor);
}

}  // namespace internal
}  // namespace scenario
}  // namespace understudy
