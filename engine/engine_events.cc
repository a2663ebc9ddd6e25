// A run's trace events from outside the engine (the contract is engine.h):
// Emit appends one, Subscribe feeds them live through an EventSubscription.
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "base/status_macros.h"
#include "engine/engine.h"
#include "engine/run_state.h"

namespace understudy {
namespace engine {

absl::StatusOr<v1::TraceEvent> Engine::Emit(const CallInfo& call, v1::TraceEvent event) {
  US_ASSIGN_OR_RETURN(std::shared_ptr<RunState> run, FindActiveRun(call));
  return run->EmitAndReturn(std::move(event));
}

EventSubscription::~EventSubscription() {
  if (std::shared_ptr<RunState> run = run_.lock()) run->Unsubscribe(id_);
}

absl::StatusOr<std::unique_ptr<EventSubscription>> Engine::Subscribe(
    absl::string_view run_id, std::function<void(const v1::TraceEvent&)> on_event,
    std::function<void()> on_end) {
  CallInfo call;
  call.run = std::string(run_id);
  US_ASSIGN_OR_RETURN(std::shared_ptr<RunState> run, FindActiveRun(call));
  std::unique_ptr<EventSubscription> subscription(new EventSubscription());
  US_ASSIGN_OR_RETURN(subscription->id_,
                      run->Subscribe({std::move(on_event), std::move(on_end)},
                                     &subscription->first_seq_));
  subscription->run_ = run;
  return subscription;
}

}  // namespace engine
}  // namespace understudy
