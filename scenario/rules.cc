#include "scenario/rules.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "validation/json_bounds.h"
#include "validation/json_subset.h"

namespace understudy {
namespace scenario {
namespace {

absl::Status CheckPattern(const std::optional<Pattern>& pattern, const Rule& rule,
                          absl::string_view field) {
  if (pattern.has_value() && pattern->re == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("rule \"", rule.name, "\": when.", field,
                                                   " is not compiled (load the scenario with "
                                                   "LoadScenario)"));
  }
  return absl::OkStatus();
}

bool Found(const Pattern& pattern, absl::string_view text) {
  // re2 2022-06-01 takes its own StringPiece; convert explicitly.
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *pattern.re);
}

// Whether `pattern` matches the whole of `name` (when.tool, when.a2a).
bool Whole(const Pattern& pattern, absl::string_view name) {
  return RE2::FullMatch(re2::StringPiece(name.data(), name.size()), *pattern.re);
}

// Everything a rule's conditions read, captured for one request under the
// context's lock.
struct Facts {
  // The model request; null for an MCP tool call or an A2A call (whose
  // conditions on the call itself SelectTool or SelectA2a decide before the
  // lock; see RuleSet::CallVerdicts).
  const v1::CompletionRequest* request;
  absl::string_view agent;
  int64_t agent_iteration;
  const std::optional<std::string>& previous_agent;
  const std::string& phase;
  const std::vector<std::string>& tool_calls;
  // What the RuleSet's pattern sets found (see RuleSet::Hits), per rule
  // position; empty when no set decided.
  const std::vector<int8_t>& system_hits;
  const std::vector<int8_t>& user_hits;
  const std::vector<int8_t>& contains_hits;
};

// 1 found, 0 not found, -1 undecided (check the rule's own RE2).
int Hit(const std::vector<int8_t>& hits, size_t position) {
  return hits.empty() ? -1 : hits[position];
}

// False, with the reason in `*why` when one is wanted (debug logging); the
// reason is built only then, and never quotes the request's text.
template <typename Reason>
bool No(std::string* why, Reason reason) {
  if (why != nullptr) *why = reason();
  return false;
}

std::string Quoted(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

// The kind of a rule (scenario.h, When), which decides what it answers.
// RuleSet::Create refuses a rule that is both a tool and an A2A rule.
enum class Kind { kModel, kTool, kA2a };

Kind KindOf(const When& when) {
  if (when.is_a2a_rule()) return Kind::kA2a;
  return when.is_tool_rule() ? Kind::kTool : Kind::kModel;
}

// Why a rule of `kind` passes over any other kind of request.
const char* OnlyAnswers(Kind kind) {
  switch (kind) {
    case Kind::kTool:
      return "a tool rule (when.tool or when.tool_arguments): it answers MCP tool calls only";
    case Kind::kA2a:
      return "an A2A rule (when.a2a): it answers calls to other agents only";
    case Kind::kModel:
      break;
  }
  return "a model rule (no when.tool, when.tool_arguments or when.a2a): it answers model "
         "requests only";
}

// Whether the conditions of `when` that any call is checked against (the
// caller's agent, the one before it, the phase, the iteration, earlier tool
// calls) hold; when not, `*why` (if given) says which did not.
bool RunHolds(const When& when, const Facts& f, std::string* why) {
  if (when.agent.has_value() && *when.agent != f.agent) {
    return No(why, [&] {
      return absl::StrCat("when.agent is ", Quoted(*when.agent), ", the caller is ",
                          f.agent.empty() ? "unnamed" : Quoted(f.agent));
    });
  }
  if (when.previous_agent.has_value() &&
      (!f.previous_agent.has_value() || *when.previous_agent != *f.previous_agent)) {
    return No(why, [&] {
      return absl::StrCat("when.previous_agent is ", Quoted(*when.previous_agent),
                          ", the previous agent was ",
                          f.previous_agent.has_value() ? Quoted(*f.previous_agent)
                                                       : "none (first request)");
    });
  }
  if (when.phase.has_value() && *when.phase != f.phase) {
    return No(why, [&] {
      return absl::StrCat("when.phase is ", Quoted(*when.phase), ", the phase is ",
                          f.phase.empty() ? "unset" : Quoted(f.phase));
    });
  }
  if (when.iteration.has_value()) {
    if (f.agent_iteration < when.iteration->min ||
        (when.iteration->max.has_value() && f.agent_iteration > *when.iteration->max)) {
      return No(why, [&] {
        return absl::StrCat("when.iteration is ", when.iteration->min,
                            when.iteration->max.has_value()
                                ? (*when.iteration->max == when.iteration->min
                                       ? ""
                                       : absl::StrCat("..", *when.iteration->max))
                                : "..",
                            f.request != nullptr ? ", this is the agent's request "
                                                 : ", the agent's model requests so far: ",
                            f.agent_iteration);
      });
    }
  }
  for (const std::string& tool : when.previous_tool_calls) {
    if (std::find(f.tool_calls.begin(), f.tool_calls.end(), tool) == f.tool_calls.end()) {
      return No(why, [&] {
        return absl::StrCat("when.previous_tool_calls: ", Quoted(tool),
                            " has not been called in this run");
      });
    }
  }
  return true;
}

// Whether the conditions of `when` on the model request's model, tool
// results and offered tools hold; when not, `*why` (if given) says which did
// not.
bool RequestHolds(const When& when, const v1::CompletionRequest& request, std::string* why) {
  if (when.model.has_value() && *when.model != request.model()) {
    return No(why, [&] {
      return absl::StrCat("when.model is ", Quoted(*when.model), ", the request's is ",
                          Quoted(request.model()));
    });
  }
  if (when.has_tool_result.has_value()) {
    bool has = std::any_of(request.messages().begin(), request.messages().end(),
                           [](const v1::Message& m) { return m.role() == "tool"; });
    if (has != *when.has_tool_result) {
      return No(why, [&] {
        return absl::StrCat("when.has_tool_result is ", *when.has_tool_result ? "true" : "false",
                            ", the request ", has ? "has" : "has no", " tool result");
      });
    }
  }
  if (when.tool_available.has_value()) {
    bool offered = std::any_of(request.tools().begin(), request.tools().end(),
                               [&](const v1::ToolDefinition& t) {
                                 return t.name() == *when.tool_available;
                               });
    if (!offered) {
      return No(why, [&] {
        return absl::StrCat("when.tool_available: the request offers no tool ",
                            Quoted(*when.tool_available));
      });
    }
  }
  return true;
}

// Whether the patterns of `when` (system_prompt, user_message,
// message_contains) are found in the model request: first as the RuleSet's
// pattern sets decided for the rule at `position`, then with the rule's own
// RE2 where they did not. When not, `*why` (if given) says which was not.
bool PatternsHold(const When& when, const Facts& f, const v1::CompletionRequest& request,
                  size_t position, std::string* why) {
  auto pattern_missed = [&](const char* field, const Pattern& pattern, const char* where) {
    return No(why, [&] {
      return absl::StrCat("when.", field, " /", pattern.text, "/ is not found in ", where);
    });
  };
  if (when.system_prompt.has_value() && Hit(f.system_hits, position) == 0) {
    return pattern_missed("system_prompt", *when.system_prompt, "the system prompt");
  }
  if (when.user_message.has_value() && Hit(f.user_hits, position) == 0) {
    return pattern_missed("user_message", *when.user_message, "the last user message");
  }
  if (when.message_contains.has_value() && Hit(f.contains_hits, position) == 0) {
    return pattern_missed("message_contains", *when.message_contains, "any message");
  }
  if (when.system_prompt.has_value() && Hit(f.system_hits, position) < 0) {
    const v1::Message* system = nullptr;
    for (const v1::Message& m : request.messages()) {
      if (m.role() == "system") {
        system = &m;
        break;
      }
    }
    if (system == nullptr || !Found(*when.system_prompt, system->content())) {
      return pattern_missed("system_prompt", *when.system_prompt, "the system prompt");
    }
  }
  if (when.user_message.has_value() && Hit(f.user_hits, position) < 0) {
    const v1::Message* user = nullptr;
    for (int i = request.messages_size() - 1; i >= 0; --i) {
      if (request.messages(i).role() == "user") {
        user = &request.messages(i);
        break;
      }
    }
    if (user == nullptr || !Found(*when.user_message, user->content())) {
      return pattern_missed("user_message", *when.user_message, "the last user message");
    }
  }
  if (when.message_contains.has_value() && Hit(f.contains_hits, position) < 0) {
    bool any = std::any_of(request.messages().begin(), request.messages().end(),
                           [&](const v1::Message& m) {
                             return Found(*when.message_contains, m.content());
                           });
    if (!any) return pattern_missed("message_contains", *when.message_contains, "any message");
  }
  return true;
}

// Whether every condition of `when` holds for the model request
// `*f.request` (not null); when not, `*why` (if given) says which did not.
bool Holds(const When& when, const Facts& f, size_t position, std::string* why = nullptr) {
  if (!RunHolds(when, f, why)) return false;
  // Regexes last: the cheap checks usually decide.
  return RequestHolds(when, *f.request, why) && PatternsHold(when, f, *f.request, position, why);
}

// Whether `when` sets none of the conditions that read what a call (`call`:
// "a tool call", "an A2A call") lacks: a model request's system prompt,
// model, tool results and offered tools, and its messages unless the call
// has message text of its own (`has_text`: an A2A call does). When one is
// set, `*why` (if given) names it.
bool NoneNeverHolds(const When& when, bool has_text, const char* call, std::string* why) {
  const std::pair<bool, const char*> conditions[] = {
      {when.system_prompt.has_value(), "system_prompt"},
      {!has_text && when.user_message.has_value(), "user_message"},
      {!has_text && when.message_contains.has_value(), "message_contains"},
      {when.has_tool_result.has_value(), "has_tool_result"},
      {when.tool_available.has_value(), "tool_available"},
      {when.model.has_value(), "model"}};
  for (const auto& [set, field] : conditions) {
    if (!set) continue;
    // (A structured binding cannot be captured in C++17.)
    const char* const name = field;
    return No(why, [name, call] {
      return absl::StrCat("when.", name, " reads a model request; this is ", call);
    });
  }
  return true;
}

// Runs `judge(when, why)` (bool; a reason into `*why` when it is not null)
// on every rule of `rules`, for SelectTool and SelectA2a: the verdicts a
// call decides before the lock, with reasons when `want_why`.
template <typename Judge>
void JudgeCall(const std::vector<Rule>& rules, bool want_why, Judge judge,
               std::vector<bool>* holds, std::vector<std::string>* why) {
  holds->assign(rules.size(), false);
  if (want_why) why->assign(rules.size(), "");
  for (size_t position = 0; position < rules.size(); ++position) {
    (*holds)[position] = judge(rules[position].when, want_why ? &(*why)[position] : nullptr);
  }
}

}  // namespace

int64_t RunContext::overall_iteration() const {
  absl::MutexLock lock(&mu_);
  return overall_iteration_;
}

int64_t RunContext::agent_iteration(absl::string_view agent) const {
  absl::MutexLock lock(&mu_);
  auto it = agent_iterations_.find(agent);
  return it == agent_iterations_.end() ? 0 : it->second;
}

std::optional<std::string> RunContext::previous_agent() const {
  absl::MutexLock lock(&mu_);
  return previous_agent_;
}

std::string RunContext::phase() const {
  absl::MutexLock lock(&mu_);
  return phase_;
}

bool RunContext::ended() const {
  absl::MutexLock lock(&mu_);
  return ended_;
}

std::vector<std::string> RunContext::tool_calls() const {
  absl::MutexLock lock(&mu_);
  return tool_calls_;
}

int64_t RunContext::rule_uses(size_t rule_index) const {
  absl::MutexLock lock(&mu_);
  auto it = rule_uses_.find(rule_index);
  return it == rule_uses_.end() ? 0 : it->second;
}

void RunContext::SetCapture(absl::string_view name, absl::string_view value) {
  absl::MutexLock lock(&mu_);
  captures_[name] = std::string(value);
}

std::optional<std::string> RunContext::capture(absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = captures_.find(name);
  if (it == captures_.end()) return std::nullopt;
  return it->second;
}

absl::flat_hash_map<std::string, std::string> RunContext::captures() const {
  absl::MutexLock lock(&mu_);
  return captures_;
}

void RunContext::SetPhase(absl::string_view phase) {
  absl::MutexLock lock(&mu_);
  phase_ = std::string(phase);
}

absl::StatusOr<RuleSet> RuleSet::Create(const Scenario& scenario) {
  absl::flat_hash_set<size_t> seen;
  for (const Rule& rule : scenario.rules) {
    if (!seen.insert(rule.index).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("rule \"", rule.name, "\": index ", rule.index, " is repeated"));
    }
    if (rule.when.is_tool_rule() && rule.when.is_a2a_rule()) {
      return absl::InvalidArgumentError(
          absl::StrCat("rule \"", rule.name,
                       "\": when.a2a with when.tool or when.tool_arguments (a rule answers "
                       "one kind of call)"));
    }
    for (auto [pattern, field] :
         {std::make_pair(&rule.when.tool, "tool"), std::make_pair(&rule.when.a2a, "a2a"),
          std::make_pair(&rule.when.system_prompt, "system_prompt"),
          std::make_pair(&rule.when.user_message, "user_message"),
          std::make_pair(&rule.when.message_contains, "message_contains")}) {
      absl::Status s = CheckPattern(*pattern, rule, field);
      if (!s.ok()) return s;
    }
  }
  std::vector<Rule> rules = scenario.rules;
  // Stable, with the file index as the explicit tie-break, so the order does
  // not depend on how the vector happened to be arranged.
  std::stable_sort(rules.begin(), rules.end(), [](const Rule& a, const Rule& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    return a.index < b.index;
  });
  return RuleSet(std::move(rules));
}

RuleSet::RuleSet(std::vector<Rule> rules)
    : rules_(std::move(rules)),
      system_prompts_(BuildIndex(rules_, &When::system_prompt)),
      user_messages_(BuildIndex(rules_, &When::user_message)),
      message_contains_(BuildIndex(rules_, &When::message_contains)) {}

RuleSet::PatternIndex RuleSet::BuildIndex(const std::vector<Rule>& rules,
                                          const std::optional<Pattern> When::*field) {
  PatternIndex index;
  RE2::Options options;
  options.set_log_errors(false);
  // Room for the DFA of many patterns; past it, Match reports an error and
  // the rules' own RE2s decide.
  options.set_max_mem(32 << 20);
  auto set = std::make_shared<RE2::Set>(options, RE2::UNANCHORED);
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::optional<Pattern>& pattern = rules[i].when.*field;
    // Only model rules read a model request's text (Select skips the rest).
    if (!pattern.has_value() || KindOf(rules[i].when) != Kind::kModel) continue;
    std::string error;
    if (set->Add(pattern->text, &error) < 0) return PatternIndex();
    index.rule_of.push_back(static_cast<int>(i));
  }
  // A set pays off from a few patterns on; below that, each rule's RE2.
  if (index.rule_of.size() < 4 || !set->Compile()) return PatternIndex();
  index.set = std::move(set);
  return index;
}

void RuleSet::Scan(const PatternIndex& index, const std::vector<absl::string_view>& texts,
                   Hits* hits) const {
  if (index.set == nullptr) return;
  hits->assign(rules_.size(), -1);
  for (int position : index.rule_of) (*hits)[position] = 0;
  std::vector<int> found;
  for (absl::string_view text : texts) {
    RE2::Set::ErrorInfo error;
    if (!index.set->Match(re2::StringPiece(text.data(), text.size()), &found, &error) &&
        error.kind != RE2::Set::kNoError) {
      hits->clear();  // undecided: the rules' own RE2s decide
      return;
    }
    for (int i : found) (*hits)[index.rule_of[i]] = 1;
  }
}

bool RuleSet::UsedUp(const Rule& rule, const RunContext& context,
                     std::vector<RuleSkip>* skipped) {
  if (!rule.times.has_value()) return false;
  auto used = context.rule_uses_.find(rule.index);
  if (used == context.rule_uses_.end() || used->second < *rule.times) return false;
  if (skipped != nullptr) {
    skipped->push_back({rule.name, absl::StrCat("used up (times: ", *rule.times, ")")});
  }
  return true;
}

Selection RuleSet::Select(RunContext& context, const v1::CompletionRequest& request,
                          absl::string_view agent, std::vector<RuleSkip>* skipped) const {
  // The regex conditions read the request only: scanned before the lock.
  Hits system_hits, user_hits, contains_hits;
  if (system_prompts_.set != nullptr) {
    std::vector<absl::string_view> texts;
    for (const v1::Message& m : request.messages()) {
      if (m.role() == "system") {
        texts.push_back(m.content());
        break;
      }
    }
    Scan(system_prompts_, texts, &system_hits);
  }
  if (user_messages_.set != nullptr) {
    std::vector<absl::string_view> texts;
    for (int i = request.messages_size() - 1; i >= 0; --i) {
      if (request.messages(i).role() == "user") {
        texts.push_back(request.messages(i).content());
        break;
      }
    }
    Scan(user_messages_, texts, &user_hits);
  }
  if (message_contains_.set != nullptr) {
    std::vector<absl::string_view> texts;
    for (const v1::Message& m : request.messages()) texts.push_back(m.content());
    Scan(message_contains_, texts, &contains_hits);
  }

  Selection selection;
  absl::MutexLock lock(&context.mu_);
  selection.overall_iteration = static_cast<int>(++context.overall_iteration_);
  int64_t agent_iteration = ++context.agent_iterations_[agent];
  selection.agent_iteration = static_cast<int>(agent_iteration);
  selection.previous_agent = context.previous_agent_;
  selection.phase = context.phase_;

  const Facts facts{&request,       agent,       agent_iteration, context.previous_agent_,
                    context.phase_, context.tool_calls_, system_hits, user_hits, contains_hits};
  for (size_t position = 0; position < rules_.size(); ++position) {
    const Rule& rule = rules_[position];
    if (const Kind kind = KindOf(rule.when); kind != Kind::kModel) {
      if (skipped != nullptr) skipped->push_back({rule.name, OnlyAnswers(kind)});
      continue;
    }
    if (UsedUp(rule, context, skipped)) continue;
    std::string why;
    if (!Holds(rule.when, facts, position, skipped != nullptr ? &why : nullptr)) {
      if (skipped != nullptr) skipped->push_back({rule.name, std::move(why)});
      continue;
    }
    int64_t& uses = context.rule_uses_[rule.index];
    selection.rule_use = ++uses;
    selection.rule_index = static_cast<int>(rule.index);
    selection.rule = &rule;
    break;
  }
  context.turn_previous_agents_[agent] = context.previous_agent_;
  context.previous_agent_ = std::string(agent);
  return selection;
}

Selection RuleSet::SelectTool(RunContext& context, absl::string_view tool,
                              const nlohmann::json& arguments, absl::string_view agent,
                              std::vector<RuleSkip>* skipped) const {
  // when.tool and when.tool_arguments read the call only: decided before the
  // lock.
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& args = arguments.is_null() ? empty : arguments;
  CallVerdicts verdicts;
  JudgeCall(
      rules_, skipped != nullptr,
      [&](const When& when, std::string* why) {
        if (const Kind kind = KindOf(when); kind != Kind::kTool) {
          return No(why, [kind] { return std::string(OnlyAnswers(kind)); });
        }
        if (when.tool.has_value() && !Whole(*when.tool, tool)) {
          return No(why, [&] {
            return absl::StrCat("when.tool /", when.tool->text,
                                "/ does not match the whole tool name ", Quoted(tool));
          });
        }
        if (when.tool_arguments.has_value() &&
            !validation::JsonSubset(*when.tool_arguments, args, nullptr)) {
          return No(why, [&] {
            // The rule's own value only: the call's arguments are request data.
            return absl::StrCat("when.tool_arguments ", when.tool_arguments->dump(),
                                " are not contained in the call's arguments");
          });
        }
        return NoneNeverHolds(when, /*has_text=*/false, "a tool call", why);
      },
      &verdicts.holds, &verdicts.why);
  return SelectCall(context, std::move(verdicts), agent, skipped);
}

Selection RuleSet::SelectA2a(RunContext& context, absl::string_view callee,
                             absl::string_view text, absl::string_view agent,
                             std::vector<RuleSkip>* skipped) const {
  // when.a2a and the patterns searched in the message read the call only:
  // decided before the lock.
  CallVerdicts verdicts;
  JudgeCall(
      rules_, skipped != nullptr,
      [&](const When& when, std::string* why) {
        if (const Kind kind = KindOf(when); kind != Kind::kA2a) {
          return No(why, [kind] { return std::string(OnlyAnswers(kind)); });
        }
        if (!Whole(*when.a2a, callee)) {
          return No(why, [&] {
            return absl::StrCat("when.a2a /", when.a2a->text,
                                "/ does not match the whole agent name ", Quoted(callee));
          });
        }
        if (!NoneNeverHolds(when, /*has_text=*/true, "an A2A call", why)) return false;
        // The rule's pattern only: the message is request data.
        for (const auto& condition :
             {std::make_pair(&when.user_message, "user_message"),
              std::make_pair(&when.message_contains, "message_contains")}) {
          const std::optional<Pattern>& pattern = *condition.first;
          if (pattern.has_value() && !Found(*pattern, text)) {
            return No(why, [&] {
              return absl::StrCat("when.", condition.second, " /", pattern->text,
                                  "/ is not found in the message to ", Quoted(callee));
            });
          }
        }
        return true;
      },
      &verdicts.holds, &verdicts.why);
  return SelectCall(context, std::move(verdicts), agent, skipped);
}

Selection RuleSet::SelectCall(RunContext& context, CallVerdicts verdicts,
                              absl::string_view agent, std::vector<RuleSkip>* skipped) const {
  Selection selection;
  const Hits none;
  absl::MutexLock lock(&context.mu_);
  selection.overall_iteration = static_cast<int>(context.overall_iteration_);
  auto iteration = context.agent_iterations_.find(agent);
  const int64_t agent_iteration =
      iteration == context.agent_iterations_.end() ? 0 : iteration->second;
  selection.agent_iteration = static_cast<int>(agent_iteration);
  auto turn = context.turn_previous_agents_.find(agent);
  const std::optional<std::string> no_agent;
  const std::optional<std::string>& previous_agent =
      turn == context.turn_previous_agents_.end() ? no_agent : turn->second;
  selection.previous_agent = previous_agent;
  selection.phase = context.phase_;

  const Facts facts{nullptr,        agent, agent_iteration, previous_agent,
                    context.phase_, context.tool_calls_, none, none, none};
  for (size_t position = 0; position < rules_.size(); ++position) {
    const Rule& rule = rules_[position];
    if (!verdicts.holds[position]) {
      if (skipped != nullptr) skipped->push_back({rule.name, std::move(verdicts.why[position])});
      continue;
    }
    if (UsedUp(rule, context, skipped)) continue;
    std::string why;
    if (!RunHolds(rule.when, facts, skipped != nullptr ? &why : nullptr)) {
      if (skipped != nullptr) skipped->push_back({rule.name, std::move(why)});
      continue;
    }
    selection.rule_use = ++context.rule_uses_[rule.index];
    selection.rule_index = static_cast<int>(rule.index);
    selection.rule = &rule;
    break;
  }
  return selection;
}

Observation Observe(RunContext& context, const v1::CompletionResponse& response,
                    const Extractors& extractors) {
  Observation observation;
  std::optional<std::string> phase;
  for (const v1::ToolCall& call : response.message().tool_calls()) {
    observation.tool_calls.push_back(call.name());
    if (extractors.end.has_value() && call.name() == extractors.end->tool) {
      observation.ended = true;
    }
    if (extractors.phase.has_value() && call.name() == extractors.phase->tool) {
      nlohmann::json args = validation::ParseJsonOrDiscarded<nlohmann::json>(call.arguments());
      if (args.is_object()) {
        auto it = args.find(extractors.phase->argument);
        if (it != args.end() && !it->is_null()) {
          phase = it->is_string() ? it->get<std::string>() : it->dump();
        }
      }
    }
  }
  const std::string& text = response.message().content();
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (extractors.routing.has_value() && first != std::string::npos && text[first] == '{') {
    nlohmann::json content =
        validation::ParseJsonOrDiscarded<nlohmann::json>(response.message().content());
    if (content.is_object()) {
      const Extractors::Routing& fields = *extractors.routing;
      auto text_of = [&](const std::string& field) -> std::string {
        auto it = content.find(field);
        if (it == content.end() || it->is_null()) return "";
        return it->is_string() ? it->get<std::string>() : it->dump();
      };
      auto agents = content.find(fields.agents_field);
      if (agents != content.end() && (agents->is_string() || agents->is_array())) {
        Observation::Routing routing;
        if (agents->is_string()) {
          routing.agents.push_back(agents->get<std::string>());
        } else {
          for (const nlohmann::json& a : *agents) {
            routing.agents.push_back(a.is_string() ? a.get<std::string>() : a.dump());
          }
        }
        routing.phase = text_of(fields.phase_field);
        routing.reason = text_of(fields.reason_field);
        observation.routing = std::move(routing);
      }
      if (!phase.has_value()) {
        auto it = content.find(fields.phase_field);
        if (it != content.end() && it->is_string()) phase = it->get<std::string>();
      }
    }
  }
  observation.phase = phase;

  absl::MutexLock lock(&context.mu_);
  observation.previous_phase = context.phase_;
  for (const std::string& name : observation.tool_calls) {
    if (std::find(context.tool_calls_.begin(), context.tool_calls_.end(), name) ==
        context.tool_calls_.end()) {
      context.tool_calls_.push_back(name);
    }
  }
  if (phase.has_value()) context.phase_ = *phase;
  if (observation.ended) context.ended_ = true;
  return observation;
}

}  // namespace scenario
}  // namespace understudy
