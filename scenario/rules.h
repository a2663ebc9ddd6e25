// Rule selection: which scenario rule answers a request, given the run's
// conversation so far.
//
//   absl::StatusOr<RuleSet> rules = RuleSet::Create(scenario);
//   RunContext context;                          // one per run
//   Selection s = rules->Select(context, request, agent);
//   if (s.rule != nullptr) { /* perform s.rule->action, use s.rule_use */ }
//   ... answer ...
//   Observe(context, response, scenario.extractors);  // tool calls, phase
//
//   // An MCP tools/call: only tool rules (when.tool / when.tool_arguments).
//   Selection t = rules->SelectTool(context, "read_file", arguments, agent);
//
//   // A call from `agent` to agent "writer" (A2A): only A2A rules (when.a2a).
//   Selection a = rules->SelectA2a(context, "writer", message_text, agent);
//
// Select is atomic per request: under the context's lock it counts the
// request (overall and for its agent), evaluates the rules in priority order
// against the request and the context, consumes one use of the chosen rule
// and records the agent as the previous one. Concurrent requests in one run
// therefore each see a distinct iteration number and never over-use a
// `times`-limited rule. SelectTool (an MCP tool call) and SelectA2a (a call
// to another agent) are the same step for a call, except that a call is not
// a model request: it is not counted and leaves the previous agent alone; it
// is judged as part of its agent's latest model turn (see SelectTool).
// Each kind of rule answers one kind of request only. Patterns are the
// Scenario's precompiled RE2 objects; nothing is compiled at request time.
//
// This file is a pure library: performing actions is the engine's job.
#ifndef UNDERSTUDY_SCENARIO_RULES_H_
#define UNDERSTUDY_SCENARIO_RULES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "re2/set.h"
#include "scenario/scenario.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace scenario {

class RunContext;
struct Observation;
Observation Observe(RunContext& context, const v1::CompletionResponse& response,
                    const Extractors& extractors);

// Per-run conversation state: what rules' `when` conditions read. A context
// serves one scenario's RuleSet (rule uses are keyed by the rule's position
// in the scenario file).
//
// Thread safety: every method may be called from any thread; the context has
// its own lock, and RuleSet::Select, RuleSet::SelectTool, RuleSet::SelectA2a
// and Observe take it for the whole update. Accessors return snapshots.
class RunContext {
 public:
  RunContext() = default;
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;

  // Requests counted so far in the run, all agents.
  int64_t overall_iteration() const;
  // Requests counted so far from `agent` ("" is the unnamed agent).
  int64_t agent_iteration(absl::string_view agent) const;
  // The agent of the most recent request counted; nullopt before any.
  std::optional<std::string> previous_agent() const;
  // The current workflow phase; "" until an extractor sets one.
  std::string phase() const;
  // Whether an end signal (extractors.end) has been observed.
  bool ended() const;
  // Names of the tools the model has called in this run, each once, in the
  // order of their first call. (Distinct names only: a long run calling the
  // same tools keeps a bounded context; previous_tool_calls needs no more.)
  std::vector<std::string> tool_calls() const;
  // Times the rule at `rule_index` (its position in Scenario::rules) was chosen.
  int64_t rule_uses(size_t rule_index) const;

  // Captured values (playbook `capture`), by name. Set replaces.
  void SetCapture(absl::string_view name, absl::string_view value);
  // nullopt when nothing was captured under `name`.
  std::optional<std::string> capture(absl::string_view name) const;
  absl::flat_hash_map<std::string, std::string> captures() const;

  // Sets the phase directly (e.g. from a routing decision made elsewhere).
  void SetPhase(absl::string_view phase);

 private:
  friend class RuleSet;
  friend Observation Observe(RunContext& context, const v1::CompletionResponse& response,
                             const Extractors& extractors);

  mutable absl::Mutex mu_;
  int64_t overall_iteration_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, int64_t> agent_iterations_ ABSL_GUARDED_BY(mu_);
  std::optional<std::string> previous_agent_ ABSL_GUARDED_BY(mu_);
  // Per agent, the previous agent its latest model request saw: what a tool
  // or A2A call of that agent's turn reads as `when.previous_agent`.
  absl::flat_hash_map<std::string, std::optional<std::string>> turn_previous_agents_
      ABSL_GUARDED_BY(mu_);
  std::string phase_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> tool_calls_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> captures_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<size_t, int64_t> rule_uses_ ABSL_GUARDED_BY(mu_);
};

// The outcome of RuleSet::Select (or SelectTool, SelectA2a) for one request.
struct Selection {
  // Position of the chosen rule in Scenario::rules; -1 when no rule holds.
  int rule_index = -1;
  // The chosen rule (owned by the RuleSet, valid while it lives); nullptr
  // when none.
  const Rule* rule = nullptr;
  // Which use of the chosen rule this is, 1-based (picks a `sequence` step or
  // a `fail_then_succeed` attempt); 0 when no rule was chosen.
  int64_t rule_use = 0;
  // This request's 1-based count among its agent's requests in the run.
  // SelectTool, SelectA2a: the agent's model requests so far (0 before its
  // first).
  int agent_iteration = 0;
  // This request's 1-based count among all requests in the run.
  // SelectTool, SelectA2a: the run's model requests so far.
  int overall_iteration = 0;
  // The agent of the request counted just before this one; nullopt for the
  // run's first request. SelectTool, SelectA2a: the one before the agent's
  // latest model request.
  std::optional<std::string> previous_agent;
  // The workflow phase when the request came ("" before any).
  std::string phase;
};

// A rule Select, SelectTool or SelectA2a passed over, and why (for debug
// logs).
struct RuleSkip {
  std::string rule;
  std::string reason;  // "when.agent is \"executor\", the caller is \"reviewer\""
};

// A scenario's rules in evaluation order: priority, higher first; ties in
// file order. Immutable once built, so one RuleSet may serve many runs and
// threads at once.
class RuleSet {
 public:
  // Copies and orders `scenario`'s rules (the scenario need not outlive the
  // result). INVALID_ARGUMENT when a pattern is not compiled (the scenario did
  // not come from LoadScenario), a rule's `index` is repeated or a rule is
  // both a tool and an A2A rule (LoadScenario refuses those too), so that
  // every rule is of exactly one kind.
  static absl::StatusOr<RuleSet> Create(const Scenario& scenario);

  // Counts `request` in `context` as `agent`'s next request, chooses the
  // first model rule (one without when.tool, when.tool_arguments or
  // when.a2a) in evaluation order whose conditions all hold and whose
  // `times` is not used up, consumes one use of it and records `agent` as
  // the previous agent — all under the context's lock, as one step. A
  // request no rule matches is still counted. `agent` is "" when the caller
  // has none.
  // With `skipped`, every rule passed over before the chosen one (or all of
  // them, tool and A2A rules included) is appended with the reason; reasons
  // never quote the request's text, only the rule's own values and the
  // run's state.
  Selection Select(RunContext& context, const v1::CompletionRequest& request,
                   absl::string_view agent, std::vector<RuleSkip>* skipped = nullptr) const;

  // For an MCP tools/call of `tool` with `arguments` (the call's
  // params.arguments; null is taken as {}) from `agent` ("" when the caller
  // has none): chooses the first tool rule (one with when.tool or
  // when.tool_arguments) in evaluation order whose conditions all hold and
  // whose `times` is not used up, and consumes one use of it — so `times`,
  // `sequence` steps and `fail_then_succeed` attempts count tool uses as
  // they count model uses — under the context's lock, as one step. No rule:
  // rule nullptr, rule_use 0, nothing consumed.
  //
  // A tool call is not a model request: it is not counted, and the previous
  // agent is left alone. It is judged as part of `agent`'s latest model
  // turn:
  //   when.tool            RE2 full match of `tool` (a plain name is exact)
  //   when.tool_arguments  contained in `arguments` (validation::JsonSubset)
  //   agent                `agent` equals it
  //   iteration            the agent's model requests so far (so never
  //                        before its first)
  //   previous_agent       the previous agent of the agent's latest model
  //                        request (none before its first)
  //   phase                the run's current phase
  //   previous_tool_calls  tools called in the run's answers so far
  //   system_prompt, user_message, message_contains, has_tool_result,
  //   tool_available, model: never hold (they read a model request).
  // `skipped` as for Select (model and A2A rules included); reasons may name
  // `tool` (a name, as Select's name the model) but never quote
  // `arguments`. Thread-safe like Select.
  Selection SelectTool(RunContext& context, absl::string_view tool, const nlohmann::json& arguments,
                       absl::string_view agent, std::vector<RuleSkip>* skipped = nullptr) const;

  // For an A2A call from `agent` ("" when the caller has none) to the agent
  // `callee` whose message's text is `text` (its text parts, as the caller
  // sent them): chooses the first A2A rule (one with when.a2a) in evaluation
  // order whose conditions all hold and whose `times` is not used up, and
  // consumes one use of it — `times`, `sequence` steps and
  // `fail_then_succeed` attempts count A2A calls — under the context's lock,
  // as one step. No rule: rule nullptr, rule_use 0, nothing consumed.
  //
  // Like a tool call, an A2A call is not a model request: it is not
  // counted, the previous agent is left alone, and it is judged as part of
  // `agent`'s latest model turn:
  //   when.a2a             RE2 full match of `callee` (a plain name is exact)
  //   user_message,        found in `text` (RE2 partial match, as for a
  //   message_contains     model request's messages)
  //   agent, iteration, previous_agent, phase, previous_tool_calls:
  //                        as for SelectTool
  //   system_prompt, model, has_tool_result, tool_available: never hold.
  // `skipped` as for Select (model and tool rules included); reasons may
  // name `callee` but never quote `text`. Thread-safe like Select.
  Selection SelectA2a(RunContext& context, absl::string_view callee, absl::string_view text,
                      absl::string_view agent, std::vector<RuleSkip>* skipped = nullptr) const;

  // The rules in evaluation order.
  const std::vector<Rule>& rules() const { return rules_; }

 private:
  // Whether `rule` has had its `times` uses in `context` (noted in
  // `skipped` when given). Called under the context's lock.
  static bool UsedUp(const Rule& rule, const RunContext& context,
                     std::vector<RuleSkip>* skipped) ABSL_EXCLUSIVE_LOCKS_REQUIRED(context.mu_);

  // One regex condition (system_prompt, user_message or message_contains)
  // of every rule that has it, compiled into one RE2::Set: a request's text
  // is scanned once for all the rules instead of once per rule (1,000 rules:
  // see bench/run). `set` is null when no rule has the condition or the set
  // cannot be built; rules then run their own RE2.
  struct PatternIndex {
    std::shared_ptr<const RE2::Set> set;
    std::vector<int> rule_of;  // set pattern index -> position in rules_
  };
  // For each rule position: 1 the condition's pattern is found, 0 it is
  // not, -1 not decided by a set (the rule's own RE2 decides).
  using Hits = std::vector<int8_t>;

  // What SelectTool or SelectA2a decided about each rule from the call
  // alone, before taking the lock, by position in rules_: whether the rule
  // is of the call's kind and its conditions on the call itself hold (the
  // call's name, arguments or text; none of those that never hold for the
  // call is set).
  struct CallVerdicts {
    std::vector<bool> holds;
    // Why not, per position, when `holds` is false; empty unless skip
    // reasons are wanted. Never quotes the call's data.
    std::vector<std::string> why;
  };
  // The rest of SelectTool and SelectA2a for a call from `agent`: under the
  // context's lock, chooses the first rule in evaluation order that
  // `verdicts` let through, whose `times` is not used up and whose
  // conditions on the run (agent, iteration, previous_agent, phase,
  // previous_tool_calls, as of `agent`'s latest model turn) hold, and
  // consumes one use of it. Counts nothing, leaves the previous agent
  // alone. `skipped` as for Select.
  Selection SelectCall(RunContext& context, CallVerdicts verdicts, absl::string_view agent,
                       std::vector<RuleSkip>* skipped) const;

  explicit RuleSet(std::vector<Rule> rules);
  static PatternIndex BuildIndex(const std::vector<Rule>& rules,
                                 const std::optional<Pattern> When::*field);
  // Fills `hits` from `index` for the texts (all -1 when the set fails).
  void Scan(const PatternIndex& index, const std::vector<absl::string_view>& texts,
            Hits* hits) const;

  std::vector<Rule> rules_;
  PatternIndex system_prompts_;
  PatternIndex user_messages_;
  PatternIndex message_contains_;
};

// What Observe learned from one answer.
struct Observation {
  std::vector<std::string> tool_calls;  // names, in the answer's order
  std::optional<std::string> phase;     // the phase the answer set, if any
  std::string previous_phase;           // the phase before this answer
  bool ended = false;                   // the answer carried the end signal
  // A routing decision in the answer's JSON content (extractors.routing):
  // the object had the agents field (a string or a list of strings).
  struct Routing {
    std::vector<std::string> agents;
    std::string phase;
    std::string reason;
  };
  std::optional<Routing> routing;
};

// Updates `context` after the model (or a rule) answered: appends the
// answer's tool call names to the run's tool calls; sets the phase from the
// `extractors.phase` tool call's argument (a string argument as is, any other
// JSON value as its JSON text) or, failing that, from the routing phase field
// of JSON object content; marks the run ended on an `extractors.end` tool
// call. Malformed arguments or content are ignored, never an error.
// Thread-safe: one step under the context's lock.
Observation Observe(RunContext& context, const v1::CompletionResponse& response,
                    const Extractors& extractors);

}  // namespace scenario
}  // namespace understudy

#endif  // UNDERSTUDY_SCENARIO_RULES_H_
