// Internal to the scenario loader's files (scenario.cc, check_document.cc,
// check_rules.cc); callers use scenario.h. The Checker that reads a
// scenario document against its schema (understudy.scenario/v1), and the
// key lists and helpers those files share.
#ifndef UNDERSTUDY_SCENARIO_SCENARIO_CHECKER_H_
#define UNDERSTUDY_SCENARIO_SCENARIO_CHECKER_H_

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "scenario/scenario.h"
#include "validation/problems.h"
#include "validation/yaml_checker.h"
#include "yaml-cpp/yaml.h"

namespace understudy {
namespace scenario {
namespace internal {

using Keys = std::initializer_list<const char*>;

// The keys of an action, of which a mapping that holds one (`default`, a
// rule, `then`, a `sequence` step) holds exactly one.
constexpr Keys kActionKeys = {"respond",    "error",    "delay",
                              "hang",       "disconnect", "fail_then_succeed",
                              "sequence",   "from_session"};

// What an action answers, which decides the fields it may use.
enum class Answers {
  kModelRule,  // a rule without when.tool/tool_arguments/a2a: model requests
  kDefault,    // `default`: model requests
  kToolRule,   // a rule with when.tool or when.tool_arguments: MCP tools/call
  kA2aRule,    // a rule with when.a2a: calls from one agent to another (A2A)
};

inline std::string Join(const std::string& path, absl::string_view key) {
  return validation::JoinPath(path, key);
}
inline std::string At(const std::string& path, size_t index) {
  return validation::JoinPath(path, index);
}
inline std::string Describe(const YAML::Node& n) { return validation::DescribeNode(n); }
inline nlohmann::json ToJson(const YAML::Node& n) { return validation::YamlToJson(n); }

// Reads a scenario document into a Scenario, reporting every problem with
// its position and path. The document's own parts are checked in
// check_document.cc, the rules with their conditions and actions in
// check_rules.cc.
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

  // The whole document (`root`), each top-level field in turn.
  void Document(const YAML::Node& root, Scenario* s);

 private:
  // check_document.cc: the document's parts other than its rules and
  // actions.
  void Agents(const YAML::Node& n, const std::string& path, Scenario* s);
  void ExtractorsField(const YAML::Node& n, const std::string& path, Scenario* s);
  void Matching(const YAML::Node& n, const std::string& path, Scenario* s);
  void Playbook(const YAML::Node& n, const std::string& path, Scenario* s);
  bool Step(const YAML::Node& n, const std::string& p, PlaybookStep* step);
  bool Captures(const YAML::Node& n, const std::string& path, PlaybookTurn* turn);
  void MockTools(const YAML::Node& n, const std::string& path, Scenario* s);
  void MockUiField(const YAML::Node& n, const std::string& path, Scenario* s);

  // check_rules.cc: rules, their conditions (`when`) and their actions.
  void Rules(const YAML::Node& n, const std::string& path, Scenario* s);
  // `answers` is what the rule answers, from its `when` keys (Rules).
  bool WhenField(const YAML::Node& n, const std::string& path, const Scenario* s,
                 Answers answers, When* w);
  // The steps of WhenField, in the order it takes them. `n` is the `when`
  // mapping (keys already checked) and `path` its path.
  //
  // when.tool and when.tool_arguments, which make a rule a tool rule.
  bool WhenTool(const YAML::Node& n, const std::string& path, When* w);
  // when.a2a, which makes a rule an A2A rule: a non-empty name or pattern;
  // an error when the rule also has when.tool or when.tool_arguments.
  bool WhenA2a(const YAML::Node& n, const std::string& path, When* w);
  // In a tool or A2A rule (`answers`), a warning for each condition that
  // reads what such a call does not have, so never holds.
  void WhenNeverHolds(const YAML::Node& n, const std::string& path, Answers answers);
  // A warning for when.agent or when.previous_agent naming no agent of
  // `s->agents` (when it lists any).
  void WhenAgentsKnown(const YAML::Node& n, const std::string& path, const Scenario* s,
                       const When& w);
  // when.iteration (`n` itself, at `path`): N, or {min, max} with one or both.
  bool WhenIteration(const YAML::Node& n, const std::string& path, When* w);
  // The pattern (or non-empty string) under `key` of `n`, into `*out` when
  // valid; true when the key is absent.
  bool OptionalRegex(const YAML::Node& n, const std::string& path, const char* key,
                     std::optional<Pattern>* out);
  bool OptionalString(const YAML::Node& n, const std::string& path, const char* key,
                      std::optional<std::string>* out);

  // `m` is a mapping (keys already checked by the caller) that must hold
  // exactly one action key.
  bool ActionIn(const YAML::Node& m, const std::string& path, int depth, Answers answers,
                Action* out);
  // The problem for a tool-only field (`key`, which is `what`) in an action
  // that answers model requests.
  void ToolOnly(const YAML::Node& m, const std::string& p, const char* key, const char* what,
                Answers answers);
  // A field of a model answer (`key`) in a tool or A2A rule (`answers`):
  // a warning, no effect there; `instead` ends the suggestion.
  void ModelOnlyField(const YAML::Node& m, const std::string& p, const char* key,
                      Answers answers, absl::string_view instead);
  // The error for a field (`key`, which `what`: "is a ...") of `m` that a
  // tool or A2A rule's (`answers`) answer cannot carry; `otherwise` ends
  // the suggestion.
  void NotInCallAnswer(const YAML::Node& m, const std::string& p, const char* key,
                       absl::string_view what, Answers answers, absl::string_view otherwise);
  bool ActionValue(const std::string& kind, const YAML::Node& n, const std::string& p, int depth,
                   Answers answers, Action* out);
  bool Respond(const YAML::Node& n, const std::string& p, Answers answers, RespondAction* a);
  bool ErrorField(const YAML::Node& n, const std::string& p, Answers answers, ErrorAction* a);
  // A mapping read as a JSON object (`what` describes it in messages). Keys
  // must be strings and appear once, at every depth: JSON has no other keys,
  // and YamlToJson would silently keep one of two.
  bool JsonObject(const YAML::Node& n, const std::string& path, absl::string_view what,
                  nlohmann::json* out);
  bool JsonKeys(const YAML::Node& n, const std::string& path);
};

}  // namespace internal
}  // namespace scenario
}  // namespace understudy

#endif  // UNDERSTUDY_SCENARIO_SCENARIO_CHECKER_H_
