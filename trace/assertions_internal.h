// internal to trace/assertions*.cc; callers use trace/assertions.h. The
// built-in checks (assertions_checks.cc), which assertions.cc dispatches to.
#ifndef UNDERSTUDY_TRACE_ASSERTIONS_INTERNAL_H_
#define UNDERSTUDY_TRACE_ASSERTIONS_INTERNAL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trace/assertions.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace trace {
namespace assertions_internal {

using Events = std::vector<EventRef>;

// `where` and `field` joined with a dot: the path of a field in messages.
std::string Field(absl::string_view where, absl::string_view field);

// Each check over `events` (in seq order); `where` ("assertions[2].count")
// prefixes the paths of fields named in errors.
v1::AssertionResult AgentSequence(const v1::AgentSequenceAssertion& a, const Events& events);
v1::AssertionResult PhaseTransitions(const v1::PhaseTransitionsAssertion& a, const Events& events);
absl::StatusOr<v1::AssertionResult> ToolCalls(const v1::ToolCallsAssertion& a, const Events& events,
                                              absl::string_view where);
absl::StatusOr<v1::AssertionResult> FeedbackPropagated(const v1::FeedbackPropagatedAssertion& a,
                                                       const Events& events,
                                                       absl::string_view where);
absl::StatusOr<v1::AssertionResult> CountCheck(const v1::CountAssertion& a, const Events& events,
                                               absl::string_view where);
v1::AssertionResult NoMisses(const Events& events);
// Reads the run's summary, not its events.
absl::StatusOr<v1::AssertionResult> AllConsumed(const TraceView& view, absl::string_view where);

}  // namespace assertions_internal
}  // namespace trace
}  // namespace understudy

#endif  // UNDERSTUDY_TRACE_ASSERTIONS_INTERNAL_H_
