// Answers for the Tools and Ui boundaries from a scenario's `mock_tools` and
// `mock_ui`, so an agent under test needs neither real tools nor a person.
//
//   absl::StatusOr<v1::InvokeToolResponse> r = InvokeMockTool(scenario, request);
//   absl::StatusOr<v1::AskResponse> a = AnswerMockUi(&scenario, ask);
//
// Pure functions of their arguments: no run state, no I/O, thread-safe.
// Recording the call in the run's trace is the service's job.
#ifndef UNDERSTUDY_SCENARIO_MOCKS_H_
#define UNDERSTUDY_SCENARIO_MOCKS_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "scenario/scenario.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace scenario {

// Larger InvokeToolRequest.arguments are refused before parsing.
inline constexpr size_t kMaxToolArgumentsBytes = 1 << 20;

// The scenario's answer to a call of `request.tool()`, with mocked = true:
//  - a string mock: content is the string, result its JSON string;
//  - a template: content is the template with `{{arg}}` replaced by the
//    call's top-level argument `arg` (a string as is, any other JSON value as
//    its JSON text), result its JSON string;
//  - a result: result is its JSON text, content the string itself when the
//    result is a JSON string, else the JSON text.
// INVALID_ARGUMENT for an empty tool; for arguments over
// kMaxToolArgumentsBytes, nested deeper than validation::kMaxJsonDepth, not
// JSON or not a JSON object ("" counts as {}); or for a template naming an argument the
// call lacks (the caller's arguments are at fault, not the run's state).
// NOT_FOUND for a tool the scenario does not mock, listing those it does.
absl::StatusOr<v1::InvokeToolResponse> InvokeMockTool(const Scenario& scenario,
                                                      const v1::InvokeToolRequest& request);

// The scenario's answer to a UI prompt, with the request's kind and
// mocked = true: confirm → mock_ui.confirm; select → the item at index
// mock_ui.select; input, editor → mock_ui.input, mock_ui.editor. `scenario`
// may be null (a run without one): MockUi's defaults answer (confirm true,
// the first item, empty text). INVALID_ARGUMENT for no kind, a select
// without items, or a mocked index past the items.
absl::StatusOr<v1::AskResponse> AnswerMockUi(const Scenario* scenario,
                                             const v1::AskRequest& request);

}  // namespace scenario
}  // namespace understudy

#endif  // UNDERSTUDY_SCENARIO_MOCKS_H_
