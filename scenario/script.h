// A scenario ready for request time: the loaded document, its rules in
// evaluation order, and the pure pieces of performing its actions.
//
//   absl::StatusOr<std::shared_ptr<const Script>> script = Script::Load("rate-limit", "");
//   std::string agent = (*script)->AgentFor(request);        // from `agents:`
//   Selection s = (*script)->rules().Select(context, request, agent);
//   Step step = ResolveStep(s.rule->action, s.rule_use);      // sequence, retries
//   v1::CompletionResponse r = RespondWith(*step.respond, request, "rule:name");
//
// Everything here is immutable once built and shared by every run that uses
// the scenario; per-run state lives in RunContext (rules.h) and PlaybookRun.
#ifndef UNDERSTUDY_SCENARIO_SCRIPT_H_
#define UNDERSTUDY_SCENARIO_SCRIPT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "scenario/rules.h"
#include "scenario/scenario.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace scenario {

class Script {
 public:
  // Loads a scenario by pack name or path (`ref`, see ResolveScenario; a
  // path only as `files` allows) or from its text (`text`, labelled
  // "inline"); exactly one must be non-empty. INVALID_ARGUMENT with the
  // validator's whole report for an invalid document or when both or
  // neither are given; NOT_FOUND for an unknown pack or missing file;
  // PERMISSION_DENIED for a path `files` does not allow.
  static absl::StatusOr<std::shared_ptr<const Script>> Load(
      const std::string& ref, absl::string_view text,
      const ScenarioFiles& files = ScenarioFiles::Any());
  // Builds from a loaded scenario. INVALID_ARGUMENT as RuleSet::Create.
  static absl::StatusOr<std::shared_ptr<const Script>> FromScenario(Scenario scenario);

  const Scenario& scenario() const { return *scenario_; }
  std::shared_ptr<const Scenario> shared_scenario() const { return scenario_; }
  const RuleSet& rules() const { return rules_; }
  // The scenario's name, or its source when it has none.
  const std::string& label() const { return label_; }

  // The agent named by the first `agents:` entry whose pattern is found in
  // the request's first system message; "" when none matches.
  std::string AgentFor(const v1::CompletionRequest& request) const;

 private:
  Script(std::shared_ptr<const Scenario> scenario, RuleSet rules);

  std::shared_ptr<const Scenario> scenario_;
  RuleSet rules_;
  std::string label_;
};

// One concrete thing to do for one use of an action: `sequence` and
// `fail_then_succeed` resolved to the step this use performs.
struct Step {
  enum class Kind { kRespond, kError, kDelay, kHang, kDisconnect, kFromSession };
  Kind kind = Kind::kRespond;
  // Exactly the pointer matching `kind` is set; they point into the
  // scenario, which must outlive the step.
  const RespondAction* respond = nullptr;
  const ErrorAction* error = nullptr;
  const DelayAction* delay = nullptr;
  const DisconnectAction* disconnect = nullptr;
  const FromSessionAction* from_session = nullptr;
  // Where the step is in the action, e.g. "sequence[1]" or
  // "fail_then_succeed.then"; "" for the action itself.
  std::string path;
};

// The step that use `use` (1-based) of `action` performs: a `sequence`
// cycles through its steps (use 1 → step 0, use n+1 → step 0 again); a
// `fail_then_succeed` fails on uses 1..failures, then performs `then` (its
// own uses counted from 1). Nested actions resolve the same way.
Step ResolveStep(const Action& action, int64_t use);

// The answer a `respond` action gives `request`: an assistant message with
// the content and tool calls (ids "call_<id_prefix>_<i>"), the finish reason
// ("tool_calls" when there are tool calls and none is given, else "stop"),
// the usage when given, the request's model, and id `id`. Deterministic.
v1::CompletionResponse RespondWith(const RespondAction& respond,
                                   const v1::CompletionRequest& request, absl::string_view id);

// The chunks a streaming caller gets for a scripted answer: the content
// split after each space (at most 64 pieces; the rest goes in the last),
// then one chunk per tool call, then a chunk with the finish reason and
// usage. Joined by provider::AssembleResponse they give `response` back.
std::vector<v1::CompletionChunk> ChunksFor(const v1::CompletionResponse& response);

// The status an `error` action answers gRPC callers with: its grpc_code, or
// the code for its http_status, with its message (a default naming the code
// when empty) and, with retry_after_seconds S, " (retry after Ss)". HTTP
// callers also get the delay as retry-after headers (Decision).
absl::Status ErrorStatusFor(const ErrorAction& error);

// The HTTP status an `error` action answers HTTP callers with: its
// http_status, or the status for its grpc_code.
int HttpStatusFor(const ErrorAction& error);

}  // namespace scenario
}  // namespace understudy

#endif  // UNDERSTUDY_SCENARIO_SCRIPT_H_
