// A scenario's rules as the Checker reads them (the contract is
// scenario_checker.h): each rule's own keys, its conditions (`when`) and its
// action, with what a respond or error action may hold for what it answers.
// The rest of the document is check_document.cc.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "scenario/scenario.h"
#include "scenario/scenario_checker.h"
#include "validation/problems.h"
#include "validation/suggest.h"
#include "yaml-cpp/yaml.h"

namespace understudy {
namespace scenario {
namespace internal {
namespace {

using validation::Suggest;

constexpr Keys kRuleOwnKeys = {"name", "priority", "times", "when"};
constexpr Keys kWhenKeys = {"system_prompt",   "user_message",   "message_contains",
                            "agent",           "previous_agent", "phase",
                            "model",           "iteration",      "previous_tool_calls",
                            "has_tool_result", "tool_available", "tool",
                            "tool_arguments",  "a2a"};
// The `when` conditions that read a model request (its messages, model or
// offered tools): none of them ever holds for an MCP tool call; for an A2A
// call, those that do not read its message text (`a2a_reads` false).
struct ModelOnlyCondition {
  const char* key;
  const char* reads;
  bool a2a_reads;  // searched in an A2A call's message text instead
};
constexpr ModelOnlyCondition kModelOnlyConditions[] = {
    {"system_prompt", "a model request's messages", false},
    {"user_message", "a model request's messages", true},
    {"message_contains", "a model request's messages", true},
    {"has_tool_result", "a model request's messages", false},
    {"model", "a model request's model", false},
    {"tool_available", "the tools a model request offers", false},
};

// How messages name a kind of rule that answers calls rather than model
// requests (Answers::kToolRule, kA2aRule), so that the checks shared by
// both are written once.
struct CallRule {
  const char* noun;        // "tool rule (when.tool/tool_arguments)"
  const char* a_noun;      // the same with its article
  const char* plural;      // "tool rules"
  const char* keys;        // the `when` keys that make the kind
  const char* answers;     // what it answers
  const char* call;        // one of those, with its article
  const char* answer;      // what it answers with
  const char* give;        // how to give that answer
  const char* conditions;  // the conditions it may also use
  const char* no_code;     // what an error without jsonrpc_code answers
};
constexpr CallRule kToolRuleWords = {
    "tool rule (when.tool/tool_arguments)",
    "a tool rule (when.tool/tool_arguments)",
    "tool rules",
    "when.tool/tool_arguments",
    "MCP tool calls",
    "a tool call",
    "a result",
    "give the result as content or structured",
    "agent, previous_agent, phase, iteration, previous_tool_calls",
    "a tool error result (isError)",
};
constexpr CallRule kA2aRuleWords = {
    "A2A rule (when.a2a)",
    "an A2A rule (when.a2a)",
    "A2A rules",
    "when.a2a",
    "calls to other agents",
    "an A2A call",
    "a message",
    "give the answer as content",
    "user_message or message_contains (searched in the call's message), agent, "
    "previous_agent, phase, iteration, previous_tool_calls",
    "a task in state failed",
};

// The words for `answers`; null when it answers model requests.
const CallRule* CallRuleOf(Answers answers) {
  switch (answers) {
    case Answers::kToolRule:
      return &kToolRuleWords;
    case Answers::kA2aRule:
      return &kA2aRuleWords;
    case Answers::kModelRule:
    case Answers::kDefault:
      break;
  }
  return nullptr;
}

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

}  // namespace

void Checker::Rules(const YAML::Node& n, const std::string& path, Scenario* s) {
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
    // wrong is still a tool rule for the checks of its action. (A rule with
    // both when.a2a and when.tool is an error; its action is checked as an
    // A2A rule's.)
    const YAML::Node when = r["when"];
    const bool conditions = when.IsDefined() && when.IsMap();
    const Answers answers =
        conditions && when["a2a"].IsDefined() ? Answers::kA2aRule
        : conditions && (when["tool"].IsDefined() || when["tool_arguments"].IsDefined())
            ? Answers::kToolRule
            : Answers::kModelRule;
    if (when.IsDefined()) ok = WhenField(when, Join(p, "when"), s, answers, &rule.when) && ok;
    ok = ActionIn(r, p, 1, answers, &rule.action) && ok;
    if (ok) s->rules.push_back(std::move(rule));
  }
}

bool Checker::WhenField(const YAML::Node& n, const std::string& path, const Scenario* s,
                        Answers answers, When* w) {
  if (n.IsNull()) return true;  // `when:` with nothing: always
  if (!Map(n, path, kWhenKeys)) return false;
  bool ok = WhenTool(n, path, w);
  ok = WhenA2a(n, path, w) && ok;
  WhenNeverHolds(n, path, answers);
  ok = OptionalRegex(n, path, "system_prompt", &w->system_prompt) && ok;
  ok = OptionalRegex(n, path, "user_message", &w->user_message) && ok;
  ok = OptionalRegex(n, path, "message_contains", &w->message_contains) && ok;
  ok = OptionalString(n, path, "agent", &w->agent) && ok;
  ok = OptionalString(n, path, "previous_agent", &w->previous_agent) && ok;
  ok = OptionalString(n, path, "phase", &w->phase) && ok;
  ok = OptionalString(n, path, "model", &w->model) && ok;
  ok = OptionalString(n, path, "tool_available", &w->tool_available) && ok;
  WhenAgentsKnown(n, path, s, *w);
  if (n["iteration"].IsDefined()) {
    ok = WhenIteration(n["iteration"], Join(path, "iteration"), w) && ok;
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

bool Checker::WhenTool(const YAML::Node& n, const std::string& path, When* w) {
  bool ok = OptionalRegex(n, path, "tool", &w->tool);
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
  return ok;
}

bool Checker::WhenA2a(const YAML::Node& n, const std::string& path, When* w) {
  bool ok = OptionalRegex(n, path, "a2a", &w->a2a);
  if (w->a2a.has_value() && w->a2a->text.empty()) {
    Error(n["a2a"], Join(path, "a2a"), "empty; expected an agent name or a pattern",
          "a pattern matches whole names: writer, writer|editor");
    w->a2a.reset();
    ok = false;
  }
  if (n["a2a"].IsDefined() && (n["tool"].IsDefined() || n["tool_arguments"].IsDefined())) {
    Error(KeyNode(n, "a2a"), Join(path, "a2a"),
          absl::StrCat("a rule is ", kA2aRuleWords.a_noun, ", which answers ",
                       kA2aRuleWords.answers, ", or ", kToolRuleWords.a_noun, ", which answers ",
                       kToolRuleWords.answers, "; this one has both"),
          "pick one: keep when.a2a or when.tool/tool_arguments, and split the other into a "
          "rule of its own");
    ok = false;
  }
  return ok;
}

void Checker::WhenNeverHolds(const YAML::Node& n, const std::string& path, Answers answers) {
  const CallRule* rule = CallRuleOf(answers);
  if (rule == nullptr) return;
  for (const ModelOnlyCondition& c : kModelOnlyConditions) {
    if (!n[c.key].IsDefined() || (answers == Answers::kA2aRule && c.a2a_reads)) continue;
    Warning(KeyNode(n, c.key), Join(path, c.key),
            absl::StrCat(c.key, " reads ", c.reads, ", so this ", rule->noun, " never holds"),
            absl::StrCat("remove it; ", rule->plural, " may also use ", rule->conditions));
  }
}

void Checker::WhenAgentsKnown(const YAML::Node& n, const std::string& path, const Scenario* s,
                              const When& w) {
  const std::pair<const char*, const std::optional<std::string>*> named_agents[] = {
      {"agent", &w.agent}, {"previous_agent", &w.previous_agent}};
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
}

bool Checker::WhenIteration(const YAML::Node& n, const std::string& path, When* w) {
  IterationRange range;
  if (!n.IsMap()) {
    if (!Int(n, path, &range.min, 1)) return false;
    range.max = range.min;
    w->iteration = range;
    return true;
  }
  if (!Map(n, path, {"min", "max"})) return false;
  bool fine = true;
  if (!n["min"].IsDefined() && !n["max"].IsDefined()) {
    Error(n, path, "expected min, max or both");
    fine = false;
  }
  if (n["min"].IsDefined()) fine = Int(n["min"], Join(path, "min"), &range.min, 1) && fine;
  if (n["max"].IsDefined()) {
    int64_t max;
    if (Int(n["max"], Join(path, "max"), &max, 1)) {
      range.max = max;
    } else {
      fine = false;
    }
  }
  if (fine && range.max && *range.max < range.min) {
    Error(n, path, absl::StrCat("max (", *range.max, ") is less than min (", range.min, ")"));
    fine = false;
  }
  if (fine) w->iteration = range;
  return fine;
}

bool Checker::OptionalRegex(const YAML::Node& n, const std::string& path, const char* key,
                            std::optional<Pattern>* out) {
  if (!n[key].IsDefined()) return true;
  Pattern pattern;
  if (!Regex(n[key], Join(path, key), &pattern)) return false;
  *out = std::move(pattern);
  return true;
}

bool Checker::OptionalString(const YAML::Node& n, const std::string& path, const char* key,
                             std::optional<std::string>* out) {
  if (!n[key].IsDefined()) return true;
  std::string value;
  if (!NonEmptyString(n[key], Join(path, key), &value)) return false;
  *out = std::move(value);
  return true;
}

bool Checker::ActionIn(const YAML::Node& m, const std::string& path, int depth,
                       Answers answers, Action* out) {
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
  const CallRule* rule = CallRuleOf(answers);
  if (rule != nullptr && (kind == "disconnect" || kind == "from_session")) {
    Error(KeyNode(m, kind), Join(path, kind),
          absl::StrCat(kind,
                       kind == "disconnect" ? " cuts a model's answer stream"
                                            : " answers with a recorded model exchange",
                       ", and this is ", rule->a_noun, ", which answers ", rule->answers),
          absl::StrCat("use respond, error, delay or hang; or drop ", rule->keys,
                       " to answer model requests"));
    ok = false;  // the value is still checked below, for its own problems
  }
  return ActionValue(kind, m[kind], Join(path, kind), depth, answers, out) && ok;
}

void Checker::ToolOnly(const YAML::Node& m, const std::string& p, const char* key,
                       const char* what, Answers answers) {
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

void Checker::ModelOnlyField(const YAML::Node& m, const std::string& p, const char* key,
                             Answers answers, absl::string_view instead) {
  const CallRule& rule = *CallRuleOf(answers);
  Warning(KeyNode(m, key), Join(p, key),
          absl::StrCat(key, " has no effect on ", rule.call, "'s answer, and this is ",
                       rule.a_noun),
          absl::StrCat("remove it", instead));
}

void Checker::NotInCallAnswer(const YAML::Node& m, const std::string& p, const char* key,
                              absl::string_view what, Answers answers,
                              absl::string_view otherwise) {
  const CallRule& rule = *CallRuleOf(answers);
  Error(KeyNode(m, key), Join(p, key),
        absl::StrCat(key, " ", what, ", and this is ", rule.a_noun, ", which answers ",
                     rule.answers, " with ", rule.answer),
        absl::StrCat(rule.give, "; ", otherwise));
}

bool Checker::ActionValue(const std::string& kind, const YAML::Node& n, const std::string& p,
                          int depth, Answers answers, Action* out) {
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

bool Checker::Respond(const YAML::Node& n, const std::string& p, Answers answers,
                      RespondAction* a) {
  if (!Map(n, p, {"content", "tool_calls", "finish_reason", "usage", "structured"})) return false;
  bool ok = true;
  if (n["content"].IsDefined()) ok = String(n["content"], Join(p, "content"), &a->content);
  if (n["structured"].IsDefined()) {
    nlohmann::json structured;
    if (answers == Answers::kA2aRule) {
      NotInCallAnswer(n, p, "structured", "is a tool result's structuredContent", answers,
                      "structured is for tool rules (when.tool)");
      ok = false;
    } else if (answers != Answers::kToolRule) {
      ToolOnly(n, p, "structured", "a tool result's structuredContent", answers);
      ok = false;
    } else if (JsonObject(n["structured"], Join(p, "structured"),
                          "a mapping (structuredContent is a JSON object)", &structured)) {
      a->structured = std::move(structured);
    } else {
      ok = false;
    }
  }
  if (const CallRule* rule = CallRuleOf(answers); rule != nullptr) {
    const std::string to_models = absl::StrCat("or drop ", rule->keys, " to answer model requests");
    if (n["tool_calls"].IsDefined()) {
      NotInCallAnswer(n, p, "tool_calls", "are a model's answer", answers, to_models);
      ok = false;
    }
    if (answers == Answers::kA2aRule) {
      // An A2A answer is a message's text: a model answer's other fields
      // have nowhere to go, and saying so beats dropping them.
      for (const auto& [key, what] :
           {std::make_pair("finish_reason", "is a model answer's finish reason"),
            std::make_pair("usage", "is a model answer's token usage")}) {
        if (!n[key].IsDefined()) continue;
        NotInCallAnswer(n, p, key, what, answers, to_models);
        ok = false;
      }
    } else {
      if (n["finish_reason"].IsDefined()) ModelOnlyField(n, p, "finish_reason", answers, "");
      if (n["usage"].IsDefined()) ModelOnlyField(n, p, "usage", answers, "");
    }
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

bool Checker::ErrorField(const YAML::Node& n, const std::string& p, Answers answers,
                         ErrorAction* a) {
  if (!Map(n, p,
           {"grpc_code", "http_status", "jsonrpc_code", "message", "retry_after_seconds"})) {
    return false;
  }
  bool ok = true;
  const CallRule* rule = CallRuleOf(answers);
  if (n["jsonrpc_code"].IsDefined()) {
    int64_t code;
    if (rule == nullptr) {
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
  } else if (rule == nullptr && !n["grpc_code"].IsDefined() && !n["http_status"].IsDefined()) {
    // A model request fails with a status. (A tool or A2A rule needs no
    // code: its error without one is a tool error result, isError, or a
    // task in state failed.)
    Error(n, p, "expected grpc_code, http_status or both");
    ok = false;
  }
  if (rule != nullptr) {
    const std::string instead = absl::StrCat(
        "; give jsonrpc_code for a JSON-RPC error, or no code for ", rule->no_code);
    for (const char* key : {"grpc_code", "http_status", "retry_after_seconds"}) {
      if (n[key].IsDefined()) ModelOnlyField(n, p, key, answers, instead);
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

bool Checker::JsonObject(const YAML::Node& n, const std::string& path, absl::string_view what,
                         nlohmann::json* out) {
  if (!n.IsMap()) {
    Error(n, path, absl::StrCat("expected ", what, ", got ", Describe(n)));
    return false;
  }
  if (!JsonKeys(n, path)) return false;
  *out = ToJson(n);
  return true;
}

bool Checker::JsonKeys(const YAML::Node& n, const std::string& path) {
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

}  // namespace internal
}  // namespace scenario
}  // namespace understudy
