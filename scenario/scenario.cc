#include "scenario/scenario.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "capture/json_path.h"
#include "validation/suggest.h"
#include "validation/yaml_checker.h"
#include "yaml-cpp/yaml.h"

#ifndef UNDERSTUDY_SCENARIO_DIR
#define UNDERSTUDY_SCENARIO_DIR "scenarios"
#endif

namespace understudy {
namespace scenario {
namespace {

using Keys = std::initializer_list<const char*>;

constexpr Keys kTopKeys = {"schema",   "name",    "description", "agents",     "extractors",
                           "matching", "rules",   "default",     "playbook",   "mock_tools",
                           "mock_ui"};
constexpr Keys kActionKeys = {"respond",    "error",    "delay",
                              "hang",       "disconnect", "fail_then_succeed",
                              "sequence",   "from_session"};
constexpr Keys kRuleOwnKeys = {"name", "priority", "times", "when"};
constexpr Keys kWhenKeys = {"system_prompt",   "user_message",   "message_contains",
                            "agent",           "previous_agent", "phase",
                            "model",           "iteration",      "previous_tool_calls",
                            "has_tool_result", "tool_available", "tool",
                            "tool_arguments"};
// The `when` conditions that read a model request (its messages, model or
// offered tools): none of them ever holds for an MCP tool call.
struct ModelOnlyCondition {
  const char* key;
  const char* reads;
};
constexpr ModelOnlyCondition kModelOnlyConditions[] = {
    {"system_prompt", "a model request's messages"},
    {"user_message", "a model request's messages"},
    {"message_contains", "a model request's messages"},
    {"has_tool_result", "a model request's messages"},
    {"model", "a model request's model"},
    {"tool_available", "the tools a model request offers"},
};
constexpr char kToolConditions[] = "agent, previous_agent, phase, iteration, previous_tool_calls";
constexpr char kToolRuleNoun[] = "tool rule (when.tool/tool_arguments)";

// What an action answers, which decides the fields it may use.
enum class Answers {
  kModelRule,  // a rule without when.tool/tool_arguments: model requests
  kDefault,    // `default`: model requests
  kToolRule,   // a rule with when.tool or when.tool_arguments: MCP tools/call
};

struct GrpcCodeName {
  const char* name;
  absl::StatusCode code;
};
constexpr GrpcCodeName kGrpcCodes[] = {
    {"CANCELLED", absl::StatusCode::kCancelled},
    {"UNKNOWN", absl::StatusCode::kUnknown},
    {"INVALID_ARGUMENT", absl::StatusCode::kInvalidArgument},
    {"DEADLINE_EXCEEDED", absl::StatusCode::kDeadlineExceeded},
    {"NOT_FOUND", absl::StatusCode::kNotFound},
    {"ALREADY_EXISTS", absl::StatusCode::kAlreadyExists},
    {"PERMISSION_DENIED", absl::StatusCode::kPermissionDenied},
    {"RESOURCE_EXHAUSTED", absl::StatusCode::kResourceExhausted},
    {"FAILED_PRECONDITION", absl::StatusCode::kFailedPrecondition},
    {"ABORTED", absl::StatusCode::kAborted},
    {"OUT_OF_RANGE", absl::StatusCode::kOutOfRange},
    {"UNIMPLEMENTED", absl::StatusCode::kUnimplemented},
    {"INTERNAL", absl::StatusCode::kInternal},
    {"UNAVAILABLE", absl::StatusCode::kUnavailable},
    {"DATA_LOSS", absl::StatusCode::kDataLoss},
    {"UNAUTHENTICATED", absl::StatusCode::kUnauthenticated},
};

using validation::DescribeNode;
using validation::Suggest;
using validation::YamlToJson;

std::string Join(const std::string& path, absl::string_view key) {
  return validation::JoinPath(path, key);
}
std::string At(const std::string& path, size_t index) { return validation::JoinPath(path, index); }
std::string Describe(const YAML::Node& n) { return DescribeNode(n); }
nlohmann::json ToJson(const YAML::Node& n) { return YamlToJson(n); }

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

class Checker : public validation::YamlChecker {
 public:
  explicit Checker(ValidationReport* report) : YamlChecker(report) {}

  using YamlChecker::Map;
  using YamlChecker::Regex;

  // Map with the schema's key lists.
  bool Map(const YAML::Node& n, const std::string& path, Keys allowed, Keys more = {}) {
    return YamlChecker::Map(n, path, validation::Names(allowed, more));
  }

  bool Number(const YAML::Node& n, const std::string& path, double* out) {
    return NonNegativeNumber(n, path, out);
  }

  bool Regex(const YAML::Node& n, const std::string& path, Pattern* out) {
    std::string text;
    std::shared_ptr<const RE2> re = YamlChecker::Regex(n, path, &text);
    if (re == nullptr) return false;
    out->text = std::move(text);
    out->re = std::move(re);
    return true;
  }

  void Document(const YAML::Node& root, Scenario* s) {
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

 private:
  void Agents(const YAML::Node& n, const std::string& path, Scenario* s) {
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

  void ExtractorsField(const YAML::Node& n, const std::string& path, Scenario* s) {
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

  void Matching(const YAML::Node& n, const std::string& path, Scenario* s) {
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

  void Rules(const YAML::Node& n, const std::string& path, Scenario* s) {
    if (!n.IsSequence()) {
      Error(n, path, absl::StrCat("expected a list of rules, got ", Describe(n)));
      return;
    }
    std::map<std::string, size_t> names;
    for (size_t i = 0; i < n.size(); ++i) {
      const YAML::Node& r = n[i];
      const std::string p = At(path, i);
      if (!Map(r, p, kRuleOwnKeys, kActionKeys)) continue;
      Rule rule;
      rule.index = i;
      bool ok = Require(r, p, "name") && NonEmptyString(r["name"], Join(p, "name"), &rule.name);
      if (ok) {
        auto [it, inserted] = names.emplace(rule.name, i);
        if (!inserted) {
          Warning(r["name"], Join(p, "name"),
                  absl::StrCat("duplicate rule name \"", rule.name, "\" (also rules[", it->second,
                               "])"));
        }
      }
      if (r["priority"].IsDefined()) {
        ok = Int(r["priority"], Join(p, "priority"), &rule.priority, INT32_MIN) && ok;
      }
      if (r["times"].IsDefined()) {
        int64_t times;
        if (Int(r["times"], Join(p, "times"), &times, 1)) {
          rule.times = times;
        } else {
          ok = false;
        }
      }
      // Decided by the keys, not their values: a tool rule whose pattern is
      // wrong is still a tool rule for the checks of its action.
      const YAML::Node when = r["when"];
      const Answers answers =
          when.IsDefined() && when.IsMap() &&
                  (when["tool"].IsDefined() || when["tool_arguments"].IsDefined())
              ? Answers::kToolRule
              : Answers::kModelRule;
      if (when.IsDefined()) ok = WhenField(when, Join(p, "when"), s, &rule.when) && ok;
      ok = ActionIn(r, p, 1, answers, &rule.action) && ok;
      if (ok) s->rules.push_back(std::move(rule));
    }
  }

  bool WhenField(const YAML::Node& n, const std::string& path, const Scenario* s, When* w) {
    if (n.IsNull()) return true;  // `when:` with nothing: always
    if (!Map(n, path, kWhenKeys)) return false;
    bool ok = true;
    auto regex = [&](const char* key, std::optional<Pattern>* out) {
      if (!n[key].IsDefined()) return;
      Pattern pattern;
      if (Regex(n[key], Join(path, key), &pattern)) {
        *out = std::move(pattern);
      } else {
        ok = false;
      }
    };
    auto string = [&](const char* key, std::optional<std::string>* out) {
      if (!n[key].IsDefined()) return;
      std::string value;
      if (NonEmptyString(n[key], Join(path, key), &value)) {
        *out = std::move(value);
      } else {
        ok = false;
      }
    };
    regex("tool", &w->tool);
    if (w->tool.has_value() && w->tool->text.empty()) {
      Error(n["tool"], Join(path, "tool"), "empty; expected a tool name or a pattern",
            "a pattern matches whole names: read_file, read_.*, read_file|write_file");
      w->tool.reset();
      ok = false;
    }
    if (n["tool_arguments"].IsDefined()) {
      nlohmann::json arguments;
      if (JsonObject(n["tool_arguments"], Join(path, "tool_arguments"),
                     "a mapping of argument: value (which the call's arguments must contain)",
                     &arguments)) {
        w->tool_arguments = std::move(arguments);
      } else {
        ok = false;
      }
    }
    if (n["tool"].IsDefined() || n["tool_arguments"].IsDefined()) {
      for (const ModelOnlyCondition& c : kModelOnlyConditions) {
        if (!n[c.key].IsDefined()) continue;
        Warning(
            KeyNode(n, c.key), Join(path, c.key),
            absl::StrCat(c.key, " reads ", c.reads, ", so this ", kToolRuleNoun, " never holds"),
            absl::StrCat("remove it; tool rules may also use ", kToolConditions));
      }
    }
    regex("system_prompt", &w->system_prompt);
    regex("user_message", &w->user_message);
    regex("message_contains", &w->message_contains);
    string("agent", &w->agent);
    string("previous_agent", &w->previous_agent);
    string("phase", &w->phase);
    string("model", &w->model);
    string("tool_available", &w->tool_available);
    const std::pair<const char*, const std::optional<std::string>*> named_agents[] = {
        {"agent", &w->agent}, {"previous_agent", &w->previous_agent}};
    for (const auto& [key, agent] : named_agents) {
      if (!*agent || s->agents.empty()) continue;
      std::vector<std::string> known;
      for (const AgentDef& a : s->agents) known.push_back(a.name);
      if (std::find(known.begin(), known.end(), **agent) == known.end()) {
        Warning(n[key], Join(path, key),
                absl::StrCat("agent \"", **agent,
                             "\" is not in agents (it can only come from the caller's agent "
                             "header)"),
                Suggest(**agent, known));
      }
    }
    if (n["iteration"].IsDefined()) {
      const YAML::Node& it = n["iteration"];
      const std::string p = Join(path, "iteration");
      IterationRange range;
      if (it.IsMap()) {
        if (Map(it, p, {"min", "max"})) {
          bool fine = true;
          if (!it["min"].IsDefined() && !it["max"].IsDefined()) {
            Error(it, p, "expected min, max or both");
            fine = false;
          }
          if (it["min"].IsDefined()) fine = Int(it["min"], Join(p, "min"), &range.min, 1) && fine;
          if (it["max"].IsDefined()) {
            int64_t max;
            if (Int(it["max"], Join(p, "max"), &max, 1)) {
              range.max = max;
            } else {
              fine = false;
            }
          }
          if (fine && range.max && *range.max < range.min) {
            Error(it, p, absl::StrCat("max (", *range.max, ") is less than min (", range.min, ")"));
            fine = false;
          }
          if (fine) {
            w->iteration = range;
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
      } else if (Int(it, p, &range.min, 1)) {
        range.max = range.min;
        w->iteration = range;
      } else {
        ok = false;
      }
    }
    if (n["previous_tool_calls"].IsDefined()) {
      ok = StringList(n["previous_tool_calls"], Join(path, "previous_tool_calls"),
                      &w->previous_tool_calls) &&
           ok;
    }
    if (n["has_tool_result"].IsDefined()) {
      bool value;
      if (Bool(n["has_tool_result"], Join(path, "has_tool_result"), &value)) {
        w->has_tool_result = value;
      } else {
        ok = false;
      }
    }
    return ok;
  }

  // `m` is a mapping (keys already checked by the caller) that must hold
  // exactly one action key.
  bool ActionIn(const YAML::Node& m, const std::string& path, int depth, Answers answers,
                Action* out) {
    std::vector<std::string> present;
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (!it->first.IsScalar()) continue;
      for (const char* k : kActionKeys) {
        if (it->first.Scalar() == k &&
            std::find(present.begin(), present.end(), k) == present.end()) {
          present.push_back(k);
        }
      }
    }
    if (present.empty()) {
      Error(m, path,
            absl::StrCat("no action; expected one of ",
                         absl::StrJoin(std::vector<std::string>(kActionKeys.begin(),
                                                                kActionKeys.end()),
                                       ", ")));
      return false;
    }
    if (present.size() > 1) {
      Error(m, path,
            absl::StrCat(present.size(), " actions (", absl::StrJoin(present, ", "),
                         "); expected exactly one"));
      return false;
    }
    if (depth > kMaxActionDepth) {
      Error(m, path, absl::StrCat("actions nested deeper than ", kMaxActionDepth, " levels"));
      return false;
    }
    const std::string& kind = present[0];
    bool ok = true;
    if (answers == Answers::kToolRule && (kind == "disconnect" || kind == "from_session")) {
      Error(KeyNode(m, kind), Join(path, kind),
            absl::StrCat(kind,
                         kind == "disconnect" ? " cuts a model's answer stream"
                                              : " answers with a recorded model exchange",
                         ", and this is a ", kToolRuleNoun, ", which answers MCP tool calls"),
            "use respond, error, delay or hang; or drop when.tool/tool_arguments to answer "
            "model requests");
      ok = false;  // the value is still checked below, for its own problems
    }
    return ActionValue(kind, m[kind], Join(path, kind), depth, answers, out) && ok;
  }

  // The problem for a tool-only field (`key`, which is `what`) in an action
  // that answers model requests.
  void ToolOnly(const YAML::Node& m, const std::string& p, const char* key, const char* what,
                Answers answers) {
    if (answers == Answers::kDefault) {
      Error(KeyNode(m, key), Join(p, key),
            absl::StrCat(key, " is ", what, ", and default answers model requests only"),
            "move it to a rule with when.tool: NAME");
    } else {
      Error(KeyNode(m, key), Join(p, key),
            absl::StrCat(key, " is ", what,
                         ", and this rule answers model requests (it has no when.tool or "
                         "when.tool_arguments)"),
            "add tool: NAME under when to answer that tool's MCP calls");
    }
  }

  // A field of a model answer (`key`) in a tool rule: no effect there.
  void ModelOnlyField(const YAML::Node& m, const std::string& p, const char* key,
                      absl::string_view instead) {
    Warning(
        KeyNode(m, key), Join(p, key),
        absl::StrCat(key, " has no effect on a tool call's answer, and this is a ", kToolRuleNoun),
        absl::StrCat("remove it", instead));
  }

  bool ActionValue(const std::string& kind, const YAML::Node& n, const std::string& p, int depth,
                   Answers answers, Action* out) {
    if (kind == "respond") {
      RespondAction a;
      if (!Respond(n, p, answers, &a)) return false;
      out->value = std::move(a);
    } else if (kind == "error") {
      ErrorAction a;
      if (!ErrorField(n, p, answers, &a)) return false;
      out->value = std::move(a);
    } else if (kind == "delay") {
      DelayAction a;
      if (!Map(n, p, {"ms"}) || !Require(n, p, "ms") || !Int(n["ms"], Join(p, "ms"), &a.ms, 0)) {
        return false;
      }
      out->value = a;
    } else if (kind == "hang") {
      if (!n.IsNull() && !Map(n, p, {})) return false;
      if (n.IsMap() && n.size() > 0) return false;
      out->value = HangAction{};
    } else if (kind == "disconnect") {
      DisconnectAction a;
      if (!n.IsNull()) {
        if (!Map(n, p, {"after_chunks"})) return false;
        if (n["after_chunks"].IsDefined() &&
            !Int(n["after_chunks"], Join(p, "after_chunks"), &a.after_chunks, 0)) {
          return false;
        }
      }
      out->value = a;
    } else if (kind == "fail_then_succeed") {
      FailThenSucceedAction a;
      if (!Map(n, p, {"failures", "error", "then"})) return false;
      bool ok = Require(n, p, "failures") &&
                Int(n["failures"], Join(p, "failures"), &a.failures, 1);
      ok = Require(n, p, "error") && ErrorField(n["error"], Join(p, "error"), answers, &a.error) &&
           ok;
      if (Require(n, p, "then")) {
        const YAML::Node& t = n["then"];
        auto then = std::make_shared<Action>();
        if (Map(t, Join(p, "then"), kActionKeys) &&
            ActionIn(t, Join(p, "then"), depth + 1, answers, then.get())) {
          a.then = std::move(then);
        } else {
          ok = false;
        }
      } else {
        ok = false;
      }
      if (!ok) return false;
      out->value = std::move(a);
    } else if (kind == "sequence") {
      SequenceAction a;
      if (!n.IsSequence() || n.size() == 0) {
        Error(n, p, absl::StrCat("expected a non-empty list of actions, got ", Describe(n)));
        return false;
      }
      bool ok = true;
      for (size_t i = 0; i < n.size(); ++i) {
        Action step;
        if (Map(n[i], At(p, i), kActionKeys) &&
            ActionIn(n[i], At(p, i), depth + 1, answers, &step)) {
          a.steps.push_back(std::move(step));
        } else {
          ok = false;
        }
      }
      if (!ok) return false;
      out->value = std::move(a);
    } else if (kind == "from_session") {
      FromSessionAction a;
      if (!Map(n, p, {"session", "seq"})) return false;
      bool ok = Require(n, p, "session") &&
                NonEmptyString(n["session"], Join(p, "session"), &a.session);
      if (n["seq"].IsDefined()) {
        int64_t seq;
        if (Int(n["seq"], Join(p, "seq"), &seq, 0)) {
          a.seq = seq;
        } else {
          ok = false;
        }
      }
      if (!ok) return false;
      out->value = std::move(a);
    }
    return true;
  }

  bool Respond(const YAML::Node& n, const std::string& p, Answers answers, RespondAction* a) {
    if (!Map(n, p, {"content", "tool_calls", "finish_reason", "usage", "structured"})) return false;
    bool ok = true;
    if (n["content"].IsDefined()) ok = String(n["content"], Join(p, "content"), &a->content);
    if (n["structured"].IsDefined()) {
      nlohmann::json structured;
      if (answers != Answers::kToolRule) {
        ToolOnly(n, p, "structured", "a tool result's structuredContent", answers);
        ok = false;
      } else if (JsonObject(n["structured"], Join(p, "structured"),
                            "a mapping (structuredContent is a JSON object)", &structured)) {
        a->structured = std::move(structured);
      } else {
        ok = false;
      }
    }
    if (answers == Answers::kToolRule) {
      if (n["tool_calls"].IsDefined()) {
        Error(KeyNode(n, "tool_calls"), Join(p, "tool_calls"),
              absl::StrCat("tool_calls are a model's answer, and this is a ", kToolRuleNoun,
                           ", which answers MCP tool calls with a result"),
              "give the result as content or structured; or drop when.tool/tool_arguments to "
              "answer model requests");
        ok = false;
      }
      if (n["finish_reason"].IsDefined()) ModelOnlyField(n, p, "finish_reason", "");
      if (n["usage"].IsDefined()) ModelOnlyField(n, p, "usage", "");
    }
    if (n["finish_reason"].IsDefined()) {
      ok = NonEmptyString(n["finish_reason"], Join(p, "finish_reason"), &a->finish_reason) && ok;
    }
    if (n["tool_calls"].IsDefined()) {
      const YAML::Node& calls = n["tool_calls"];
      const std::string cp = Join(p, "tool_calls");
      if (!calls.IsSequence()) {
        Error(calls, cp, absl::StrCat("expected a list of {name, arguments}, got ",
                                      Describe(calls)));
        ok = false;
      } else {
        for (size_t i = 0; i < calls.size(); ++i) {
          const YAML::Node& c = calls[i];
          const std::string ip = At(cp, i);
          ToolCallSpec call;
          if (!Map(c, ip, {"name", "arguments"})) {
            ok = false;
            continue;
          }
          bool fine = Require(c, ip, "name") && NonEmptyString(c["name"], Join(ip, "name"), &call.name);
          if (c["arguments"].IsDefined()) {
            const YAML::Node& args = c["arguments"];
            if (args.IsMap()) {
              call.arguments = ToJson(args);
            } else if (args.IsScalar()) {
              call.arguments = args.Scalar();
            } else {
              Error(args, Join(ip, "arguments"),
                    absl::StrCat("expected a mapping or a string, got ", Describe(args)));
              fine = false;
            }
          }
          if (fine) {
            a->tool_calls.push_back(std::move(call));
          } else {
            ok = false;
          }
        }
      }
    }
    if (n["usage"].IsDefined()) {
      const YAML::Node& u = n["usage"];
      const std::string up = Join(p, "usage");
      Usage usage;
      if (Map(u, up, {"input_tokens", "output_tokens"})) {
        bool fine = true;
        if (u["input_tokens"].IsDefined()) {
          fine = Int(u["input_tokens"], Join(up, "input_tokens"), &usage.input_tokens, 0);
        }
        if (u["output_tokens"].IsDefined()) {
          fine = Int(u["output_tokens"], Join(up, "output_tokens"), &usage.output_tokens, 0) &&
                 fine;
        }
        if (fine) {
          a->usage = usage;
        } else {
          ok = false;
        }
      } else {
        ok = false;
      }
    }
    return ok;
  }

  bool ErrorField(const YAML::Node& n, const std::string& p, Answers answers, ErrorAction* a) {
    if (!Map(n, p,
             {"grpc_code", "http_status", "jsonrpc_code", "message", "retry_after_seconds"})) {
      return false;
    }
    bool ok = true;
    if (n["jsonrpc_code"].IsDefined()) {
      int64_t code;
      if (answers != Answers::kToolRule) {
        ToolOnly(n, p, "jsonrpc_code", "the code of an MCP tool call's JSON-RPC error", answers);
        ok = false;
      } else if (!Int(n["jsonrpc_code"], Join(p, "jsonrpc_code"), &code, INT32_MIN)) {
        ok = false;
      } else if (code > INT32_MAX) {
        Error(n["jsonrpc_code"], Join(p, "jsonrpc_code"),
              absl::StrCat("must be a 32-bit integer, got ", code),
              "JSON-RPC reserves -32768..-32000; servers use other codes freely");
        ok = false;
      } else {
        a->jsonrpc_code = static_cast<int>(code);
      }
    } else if (answers != Answers::kToolRule && !n["grpc_code"].IsDefined() &&
               !n["http_status"].IsDefined()) {
      // A model request fails with a status. (A tool rule needs no code: its
      // error without one is a tool error result, isError.)
      Error(n, p, "expected grpc_code, http_status or both");
      ok = false;
    }
    if (answers == Answers::kToolRule) {
      const absl::string_view instead =
          "; give jsonrpc_code for a JSON-RPC error, or no code for a tool error result "
          "(isError)";
      for (const char* key : {"grpc_code", "http_status", "retry_after_seconds"}) {
        if (n[key].IsDefined()) ModelOnlyField(n, p, key, instead);
      }
    }
    if (n["grpc_code"].IsDefined()) {
      std::string name;
      if (String(n["grpc_code"], Join(p, "grpc_code"), &name)) {
        std::vector<std::string> names;
        for (const GrpcCodeName& c : kGrpcCodes) {
          names.push_back(c.name);
          if (name == c.name) a->grpc_code = c.code;
        }
        if (!a->grpc_code) {
          std::string suggestion = Suggest(name, names);
          if (suggestion.empty()) {
            suggestion = absl::StrCat("expected one of: ", absl::StrJoin(names, ", "));
          }
          Error(n["grpc_code"], Join(p, "grpc_code"),
                absl::StrCat("unknown gRPC code \"", name, "\""), std::move(suggestion));
          ok = false;
        }
      } else {
        ok = false;
      }
    }
    if (n["http_status"].IsDefined()) {
      int64_t status;
      if (Int(n["http_status"], Join(p, "http_status"), &status, INT32_MIN)) {
        if (status < 400 || status > 599) {
          Error(n["http_status"], Join(p, "http_status"),
                absl::StrCat("must be an HTTP error status between 400 and 599, got ", status));
          ok = false;
        } else {
          a->http_status = static_cast<int>(status);
        }
      } else {
        ok = false;
      }
    }
    if (n["message"].IsDefined()) ok = String(n["message"], Join(p, "message"), &a->message) && ok;
    if (n["retry_after_seconds"].IsDefined()) {
      double seconds;
      if (Number(n["retry_after_seconds"], Join(p, "retry_after_seconds"), &seconds)) {
        // A day is more than any provider asks for; more (or inf) would not
        // fit the header.
        if (!(seconds <= 86400)) {
          Error(n["retry_after_seconds"], Join(p, "retry_after_seconds"),
                absl::StrCat("must be at most 86400 (a day), got ",
                             n["retry_after_seconds"].Scalar()));
          ok = false;
        } else {
          a->retry_after_seconds = seconds;
        }
      } else {
        ok = false;
      }
    }
    return ok;
  }

  // A mapping read as a JSON object (`what` describes it in messages). Keys
  // must be strings and appear once, at every depth: JSON has no other keys,
  // and YamlToJson would silently keep one of two.
  bool JsonObject(const YAML::Node& n, const std::string& path, absl::string_view what,
                  nlohmann::json* out) {
    if (!n.IsMap()) {
      Error(n, path, absl::StrCat("expected ", what, ", got ", Describe(n)));
      return false;
    }
    if (!JsonKeys(n, path)) return false;
    *out = ToJson(n);
    return true;
  }

  bool JsonKeys(const YAML::Node& n, const std::string& path) {
    bool ok = true;
    if (n.IsMap()) {
      std::set<std::string> seen;
      for (auto it = n.begin(); it != n.end(); ++it) {
        if (!it->first.IsScalar()) {
          Error(it->first, path,
                "a mapping key is itself a mapping or a list; JSON keys are strings",
                "quote the key");
          ok = false;
          continue;
        }
        const std::string key = it->first.Scalar();
        if (!seen.insert(key).second) {
          Error(it->first, validation::KeyPath(path, key), "duplicate key");
          ok = false;
          continue;
        }
        ok = JsonKeys(it->second, validation::KeyPath(path, key)) && ok;
      }
    } else if (n.IsSequence()) {
      for (size_t i = 0; i < n.size(); ++i) ok = JsonKeys(n[i], At(path, i)) && ok;
    }
    return ok;
  }

  void Playbook(const YAML::Node& n, const std::string& path, Scenario* s) {
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

  bool Step(const YAML::Node& n, const std::string& p, PlaybookStep* step) {
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

  bool Captures(const YAML::Node& n, const std::string& path, PlaybookTurn* turn) {
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

  void MockTools(const YAML::Node& n, const std::string& path, Scenario* s) {
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

  void MockUiField(const YAML::Node& n, const std::string& path, Scenario* s) {
    if (!Map(n, path, {"confirm", "select", "input", "editor"})) return;
    if (n["confirm"].IsDefined()) Bool(n["confirm"], Join(path, "confirm"), &s->mock_ui.confirm);
    if (n["select"].IsDefined()) Int(n["select"], Join(path, "select"), &s->mock_ui.select, 0);
    if (n["input"].IsDefined()) String(n["input"], Join(path, "input"), &s->mock_ui.input);
    if (n["editor"].IsDefined()) String(n["editor"], Join(path, "editor"), &s->mock_ui.editor);
  }
};

ValidationReport Parse(absl::string_view text, absl::string_view source, Scenario* out) {
  ValidationReport report;
  report.source = std::string(source);
  out->source = std::string(source);
  Checker check(&report);
  const YAML::Node none;
  validation::YamlLimits limits;
  limits.what = "scenario";
  limits.max_bytes = kMaxScenarioBytes;
  limits.max_depth = kMaxNestingDepth;
  limits.max_nodes = kMaxNodes;
  limits.empty_message =
      absl::StrCat("empty document; expected a mapping starting with schema: ", kScenarioSchema);
  std::optional<YAML::Node> root = validation::LoadYamlDocument(text, limits, &report);
  if (!root.has_value()) return report;
  try {
    check.Document(*root, out);
  } catch (const YAML::Exception& e) {
    // Not expected: every access above checks types first. Reported rather
    // than thrown so that a validator bug never takes a server down.
    check.Error(none, "", absl::StrCat("internal error reading the document: ", e.msg));
  }
  report.SortByPosition();
  if (report.ok()) {
    auto normalizer = matching::MatchNormalizer::Create(out->matching.ignore_paths,
                                              out->matching.normalizers);
    if (normalizer.ok()) {
      out->matching.normalizer = *std::move(normalizer);
    } else {
      check.Error(none, "matching", std::string(normalizer.status().message()));
    }
  }
  return report;
}

}  // namespace

const char* Action::kind_name() const {
  static constexpr const char* kNames[] = {"respond",    "error",
                                           "delay",      "hang",
                                           "disconnect", "fail_then_succeed",
                                           "sequence",   "from_session"};
  return kNames[value.index()];
}

ValidationReport ValidateScenario(absl::string_view text, absl::string_view source) {
  Scenario ignored;
  return Parse(text, source, &ignored);
}

absl::StatusOr<Scenario> LoadScenario(absl::string_view text, absl::string_view source) {
  Scenario scenario;
  ValidationReport report = Parse(text, source, &scenario);
  if (!report.ok()) return absl::InvalidArgumentError(FormatReport(report));
  return scenario;
}

absl::StatusOr<std::string> ReadScenarioFile(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) {
    return absl::NotFoundError(absl::StrCat("no such scenario file: ", path));
  }
  if (std::filesystem::is_directory(status)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is a directory, not a scenario file"));
  }
  if (!std::filesystem::is_regular_file(status)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not a regular file (a device, FIFO or socket)"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  std::string text(kMaxScenarioBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

std::vector<std::string> ScenarioSearchPath() {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  const char* env = std::getenv("UNDERSTUDY_SCENARIOS");
  if (env != nullptr && *env != '\0') dirs.push_back(env);
  // An installed program (PREFIX/bin/understudy) has its packs in
  // PREFIX/share/understudy/scenarios, wherever PREFIX is: /usr for the
  // .deb, any folder it was unpacked into. A program in its build tree has
  // none there and reads the source tree's, compiled in.
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path installed = exe.parent_path().parent_path() / "share" / "understudy" / "scenarios";
  if (!ec && fs::is_directory(installed, ec)) {
    dirs.push_back(installed.string());
  } else {
    dirs.push_back(UNDERSTUDY_SCENARIO_DIR);
  }
  return dirs;
}

namespace {

bool LooksLikePath(const std::string& name_or_path) {
  return absl::StrContains(name_or_path, '/') || absl::EndsWith(name_or_path, ".yaml") ||
         absl::EndsWith(name_or_path, ".yml") || absl::EndsWith(name_or_path, ".json");
}

// `path` resolved as `files` allows. Messages name the path as given and
// never what the file holds.
absl::StatusOr<std::string> AllowedPath(const std::string& path, const ScenarioFiles& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (files.any_path) {
    if (fs::is_regular_file(path, ec)) return path;
    if (fs::exists(path, ec)) {
      return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file"));
    }
    return absl::NotFoundError(absl::StrCat("no such scenario file: ", path));
  }
  const std::string how =
      "send the document as scenario_text, or name a pack (see `understudy validate`)";
  if (files.dir.empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "\"", path, "\" is a file path, and this server reads no scenario files for its callers "
        "(start it with --scenario-dir DIR to allow a directory); ", how));
  }
  const fs::path dir = fs::canonical(files.dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("--scenario-dir ", files.dir, ": ", ec.message()));
  const fs::path candidate = fs::path(path).is_absolute() ? fs::path(path) : dir / path;
  const fs::path real = fs::canonical(candidate, ec);
  if (!ec) {
    const fs::path inside = real.lexically_relative(dir);
    if (inside.empty() || *inside.begin() == "..") ec = std::make_error_code(std::errc::permission_denied);
  }
  if (ec == std::errc::permission_denied) {
    return absl::PermissionDeniedError(absl::StrCat(
        "\"", path, "\" is outside the directory this server reads scenarios from (--scenario-dir); ",
        how));
  }
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("no scenario file \"", path, "\" in the server's --scenario-dir"));
  }
  if (!fs::is_regular_file(real, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", path, "\" is not a regular file"));
  }
  return real.string();
}

}  // namespace

absl::StatusOr<std::string> ResolveScenario(const std::string& name_or_path,
                                            const ScenarioFiles& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (LooksLikePath(name_or_path)) return AllowedPath(name_or_path, files);
  std::set<std::string> available;
  for (const std::string& dir : ScenarioSearchPath()) {
    for (const char* ext : {".yaml", ".yml", ".json"}) {
      fs::path candidate = fs::path(dir) / (name_or_path + ext);
      if (!name_or_path.empty() && fs::is_regular_file(candidate, ec)) return candidate.string();
    }
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      if (p.extension() == ".yaml" || p.extension() == ".yml" || p.extension() == ".json") {
        available.insert(p.stem().string());
      }
    }
  }
  if (!name_or_path.empty() && files.any_path && fs::is_regular_file(name_or_path, ec)) {
    return name_or_path;
  }
  if (!name_or_path.empty() && !files.any_path && !files.dir.empty()) {
    absl::StatusOr<std::string> in_dir = AllowedPath(name_or_path, files);
    if (in_dir.ok()) return in_dir;
  }
  std::string message = absl::StrCat(
      "no scenario pack or file named \"", name_or_path, "\" (packs: ",
      available.empty() ? "none found" : absl::StrJoin(available, ", "));
  // Where the server looked is the operator's business, not a caller's.
  if (files.any_path) absl::StrAppend(&message, "; searched ", absl::StrJoin(ScenarioSearchPath(), ", "));
  absl::StrAppend(&message, ")");
  return absl::NotFoundError(message);
}

}  // namespace scenario
}  // namespace understudy
