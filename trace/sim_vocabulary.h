// The trace vocabulary of `understudy sim` (docs/sim.md#trace): the kinds of
// the events a simulated agent appends to its run and their attribute keys,
// in one place for the simulator that writes them, the assertions that count
// them and `understudy show` that draws them. Header only, no dependencies:
// the lean `understudy-sim` includes it too.
//
//   Emit(sim_event::kState, {{sim_attr::kState, "IDLE"}, ...});
#ifndef UNDERSTUDY_TRACE_SIM_VOCABULARY_H_
#define UNDERSTUDY_TRACE_SIM_VOCABULARY_H_

namespace understudy {
namespace trace {

// Event kinds.
namespace sim_event {
inline constexpr char kStarted[] = "sim.started";
inline constexpr char kState[] = "sim.state";
inline constexpr char kPrompt[] = "sim.prompt";
inline constexpr char kToolCall[] = "sim.tool_call";
inline constexpr char kToolResult[] = "sim.tool_result";
inline constexpr char kQuestion[] = "sim.question";
inline constexpr char kAnswer[] = "sim.answer";
inline constexpr char kCompletion[] = "sim.completion";
inline constexpr char kError[] = "sim.error";
inline constexpr char kHook[] = "sim.hook";
// The prefix every kind above starts with.
inline constexpr char kPrefix[] = "sim.";
}  // namespace sim_event

// Attribute keys (besides OpenTelemetry's gen_ai.tool.* on tool events).
namespace sim_attr {
// sim.started
inline constexpr char kSessionId[] = "understudy.sim.session_id";
inline constexpr char kResumed[] = "understudy.sim.resumed";
inline constexpr char kSkipPermissions[] = "understudy.sim.skip_permissions";
// sim.started: the model's name; sim.prompt: "true" when model-backed.
inline constexpr char kModel[] = "understudy.sim.model";
// sim.state
inline constexpr char kState[] = "understudy.sim.state";
inline constexpr char kStateFrom[] = "understudy.sim.state.from";
// sim.state, sim.tool_result (why a hook blocked it)
inline constexpr char kReason[] = "understudy.sim.reason";
// sim.prompt
inline constexpr char kPrompt[] = "understudy.sim.prompt";
inline constexpr char kPromptBytes[] = "understudy.sim.prompt.bytes";
inline constexpr char kBehaviour[] = "understudy.sim.behaviour";
// sim.tool_result
inline constexpr char kBlocked[] = "understudy.sim.blocked";
// sim.question, sim.answer
inline constexpr char kQuestion[] = "understudy.sim.question";
inline constexpr char kOptions[] = "understudy.sim.options";
inline constexpr char kAnswer[] = "understudy.sim.answer";
inline constexpr char kOption[] = "understudy.sim.option";
// sim.completion
inline constexpr char kCommand[] = "understudy.sim.command";
inline constexpr char kExitCode[] = "understudy.sim.exit_code";
inline constexpr char kOutcome[] = "understudy.sim.outcome";
inline constexpr char kAttempt[] = "understudy.sim.attempt";
inline constexpr char kOutputs[] = "understudy.sim.outputs";
// sim.error
inline constexpr char kMessage[] = "understudy.sim.message";
// sim.hook
inline constexpr char kHookEvent[] = "understudy.sim.hook.event";
inline constexpr char kHookCommand[] = "understudy.sim.hook.command";
inline constexpr char kHookExitCode[] = "understudy.sim.hook.exit_code";
inline constexpr char kHookOutcome[] = "understudy.sim.hook.outcome";
inline constexpr char kHookDurationMs[] = "understudy.sim.hook.duration_ms";
}  // namespace sim_attr

}  // namespace trace
}  // namespace understudy

#endif  // UNDERSTUDY_TRACE_SIM_VOCABULARY_H_
