// The scripted model: one run's walk through a scenario's playbook.
//
//   PlaybookRun playbook(scenario);                // one per run
//   absl::StatusOr<v1::CompletionResponse> r = playbook.Next(request, context);
//   ... at the end of the run ...
//   for (const std::string& line : playbook.EndFailures()) summary.add_failures(line);
//
// Each model request takes the next action of the playbook, turn by turn in
// file order. The first request of a turn must carry a user message that
// matches the turn's `when`; the turn's later requests (which carry the
// tool results of its calls) need not. Before choosing, every `capture` of
// the playbook is read from the request's tool results into the run's
// captures, which `{{name}}` placeholders in call arguments and said text
// then use.
//
// This file is a pure library: it neither records nor performs anything.
#ifndef UNDERSTUDY_SCENARIO_PLAYBOOK_H_
#define UNDERSTUDY_SCENARIO_PLAYBOOK_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "scenario/rules.h"
#include "scenario/scenario.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace scenario {

// The cursor of one run through a playbook, and what went wrong on the way.
//
// Thread safety: every method may be called from any thread. Next holds the
// playbook's own lock from reading captures to moving the cursor, so
// concurrent requests of one run each take a distinct action and no action is
// taken twice.
class PlaybookRun {
 public:
  // Failed requests remembered for failures(); later ones are counted only.
  static constexpr size_t kMaxFailures = 100;

  // `scenario` must come from LoadScenario (compiled patterns); it is shared,
  // never modified.
  explicit PlaybookRun(std::shared_ptr<const Scenario> scenario);
  PlaybookRun(const PlaybookRun&) = delete;
  PlaybookRun& operator=(const PlaybookRun&) = delete;

  // Answers `request` with the playbook's next action and moves past it.
  //
  // First, captures: for every tool message in `request` (in order), whose
  // tool is its `name`, or else the name of the earlier assistant tool call
  // whose id is its `tool_call_id`, every capture of any turn that reads
  // that tool's results and whose regex is found in the content sets
  // context's capture (group 1, or the whole match when the regex has no
  // group). Later messages override earlier ones. Captures are set even when
  // the request then fails.
  //
  // Then the action: the current turn's next one, or, when the turn is done,
  // the first action of the next turn, whose `when` (if any) must be found
  // in the request's last user message. The answer is an assistant message
  // with one tool call {id "call_pb_T_A", the tool, the rendered args as JSON
  // text} and finish_reason "tool_calls" for `call`, or the rendered text
  // with finish_reason "stop" for `say`; its id is "pb-T-A" (T, A: 0-based
  // turn and action) and its model is the request's. The same inputs always
  // give the same bytes.
  //
  // FAILED_PRECONDITION, without moving the cursor, when the next turn's
  // `when` does not match, when no action is left, or when a `{{name}}` in
  // the action names a value not captured yet. Each failure is remembered
  // for failures().
  absl::StatusOr<v1::CompletionResponse> Next(const v1::CompletionRequest& request,
                                              RunContext& context);

  // Actions not taken yet, over all turns.
  int64_t remaining() const;
  // The message of each failed Next, in order; the first kMaxFailures only.
  std::vector<std::string> failures() const;
  // What the run's end reports as failures: failures(), a line counting the
  // failures past kMaxFailures if any, and, when actions remain, "playbook
  // not fully consumed: N actions remaining (next: playbook.turns[T].actions[A])".
  // Empty when the playbook was followed to its end.
  std::vector<std::string> EndFailures() const;
  // True when the scenario has no playbook turns (every Next fails).
  bool empty() const { return scenario_->playbook.empty(); }

 private:
  // Fails with `status` after remembering it.
  absl::Status Fail(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<const Scenario> scenario_;
  const int64_t total_actions_;

  mutable absl::Mutex mu_;
  // The next action is scenario_->playbook[turn_].actions[action_]; action_
  // 0 means the turn has not started (its `when` is still to be checked).
  size_t turn_ ABSL_GUARDED_BY(mu_) = 0;
  size_t action_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t taken_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> failures_ ABSL_GUARDED_BY(mu_);
  int64_t failures_dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace scenario
}  // namespace understudy

#endif  // UNDERSTUDY_SCENARIO_PLAYBOOK_H_
