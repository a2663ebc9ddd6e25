// The trace vocabulary: the kinds of the events understudy writes to a run's
// trace and their attribute keys (docs/assertions.md, "The trace", and
// docs/sim.md#trace for the simulator's), in one place for everything that
// writes, reads, counts or draws them. Header only, no dependencies, below
// every layer that names an event (the lean `understudy-sim` includes it
// too).
//
//   event.set_kind(trace::event::kToolCall);
//   attrs.emplace_back(trace::attr::kGenAiToolName, name);
#ifndef UNDERSTUDY_TRACE_VOCABULARY_H_
#define UNDERSTUDY_TRACE_VOCABULARY_H_

namespace understudy {
namespace trace {

// Event kinds of the engine (a custom kind from Traces.Emit is none of
// these).
namespace event {
// StartRun
inline constexpr char kRunStarted[] = "run_started";
// a request from another named agent than the one before
inline constexpr char kAgentExecution[] = "agent_execution";
// a tool result seen for the first time in the run, or a mocked tool
inline constexpr char kToolResult[] = "tool_result";
// a request was answered
inline constexpr char kExchange[] = "exchange";
// nothing answered a request (or, not strict, the closest recording did)
inline constexpr char kMiss[] = "miss";
// each tool call in an answer
inline constexpr char kToolCall[] = "tool_call";
// an answer routed work (extractors.routing)
inline constexpr char kRoutingDecision[] = "routing_decision";
// an answer moved the workflow phase (extractors.phase)
inline constexpr char kPhaseTransition[] = "phase_transition";
// the end tool was called (extractors.end)
inline constexpr char kWorkflowEnd[] = "workflow_end";
// Ui.Ask answered (mock_ui)
inline constexpr char kUiCall[] = "ui_call";
// an agent called another over A2A (before it is answered), and its answer
inline constexpr char kAgentCall[] = "agent_call";
inline constexpr char kAgentResult[] = "agent_result";
// an A2A request that sends no message: an agent card, a task's state or
// its cancel
inline constexpr char kA2aExchange[] = "a2a_exchange";
// EndRun
inline constexpr char kRunEnded[] = "run_ended";
// Every kind above: a custom event (Traces.Emit) may not pose as one.
inline constexpr const char* kEngineKinds[] = {
    kRunStarted, kAgentExecution, kToolResult,     kExchange,         kMiss,   kToolCall,
    kRoutingDecision, kPhaseTransition, kWorkflowEnd, kUiCall, kAgentCall, kAgentResult,
    kA2aExchange,     kRunEnded};
}  // namespace event

// Attribute keys. OpenTelemetry's GenAI conventions where one exists
// (gen_ai.*, error.type), then understudy's own (understudy.*).
namespace attr {
inline constexpr char kGenAiOperationName[] = "gen_ai.operation.name";
inline constexpr char kGenAiAgentName[] = "gen_ai.agent.name";
inline constexpr char kGenAiRequestModel[] = "gen_ai.request.model";
inline constexpr char kGenAiResponseId[] = "gen_ai.response.id";
inline constexpr char kGenAiResponseModel[] = "gen_ai.response.model";
inline constexpr char kGenAiResponseFinishReasons[] = "gen_ai.response.finish_reasons";
inline constexpr char kGenAiUsageInputTokens[] = "gen_ai.usage.input_tokens";
inline constexpr char kGenAiUsageOutputTokens[] = "gen_ai.usage.output_tokens";
inline constexpr char kGenAiToolName[] = "gen_ai.tool.name";
inline constexpr char kGenAiToolCallId[] = "gen_ai.tool.call.id";
inline constexpr char kGenAiToolCallArguments[] = "gen_ai.tool.call.arguments";
inline constexpr char kGenAiToolCallResult[] = "gen_ai.tool.call.result";
inline constexpr char kErrorType[] = "error.type";
inline constexpr char kOpenAiApiType[] = "openai.api.type";

inline constexpr char kRunMode[] = "understudy.run.mode";
inline constexpr char kRunRequestedMode[] = "understudy.run.requested_mode";
inline constexpr char kRunStrict[] = "understudy.run.strict";
inline constexpr char kRunRepeat[] = "understudy.run.repeat";
inline constexpr char kRunServed[] = "understudy.run.served";
inline constexpr char kRunMisses[] = "understudy.run.misses";
inline constexpr char kRunUnconsumed[] = "understudy.run.unconsumed";
inline constexpr char kRunRecorded[] = "understudy.run.recorded";
inline constexpr char kRunFailures[] = "understudy.run.failures";
inline constexpr char kSessionName[] = "understudy.session.name";
inline constexpr char kSessionVersion[] = "understudy.session.version";
inline constexpr char kScenarioName[] = "understudy.scenario.name";
inline constexpr char kFromSession[] = "understudy.from_session";
inline constexpr char kIteration[] = "understudy.iteration";
inline constexpr char kAgentIteration[] = "understudy.agent.iteration";
inline constexpr char kPreviousAgent[] = "understudy.previous_agent";
inline constexpr char kPhase[] = "understudy.phase";
inline constexpr char kPhaseFrom[] = "understudy.phase.from";
inline constexpr char kPhaseTo[] = "understudy.phase.to";
inline constexpr char kAnswerSource[] = "understudy.answer.source";
inline constexpr char kAnswerRepeat[] = "understudy.answer.repeat";
inline constexpr char kExchangeSeq[] = "understudy.exchange.seq";
inline constexpr char kStreamed[] = "understudy.streamed";
inline constexpr char kRuleName[] = "understudy.rule.name";
inline constexpr char kRuleUse[] = "understudy.rule.use";
inline constexpr char kAction[] = "understudy.action";
inline constexpr char kActionPath[] = "understudy.action.path";
inline constexpr char kEffect[] = "understudy.effect";
inline constexpr char kEffectPath[] = "understudy.effect.path";
inline constexpr char kDelayMs[] = "understudy.delay_ms";
inline constexpr char kDisconnectAfterChunks[] = "understudy.disconnect.after_chunks";
inline constexpr char kLatencyMs[] = "understudy.latency_ms";
inline constexpr char kRecordedLatencyMs[] = "understudy.recorded_latency_ms";
inline constexpr char kError[] = "understudy.error";
inline constexpr char kMissReport[] = "understudy.miss.report";
inline constexpr char kMissClosestSeq[] = "understudy.miss.closest_seq";
inline constexpr char kMissServedSeq[] = "understudy.miss.served_seq";
inline constexpr char kRoutingAgents[] = "understudy.routing.agents";
inline constexpr char kRoutingPhase[] = "understudy.routing.phase";
inline constexpr char kRoutingReason[] = "understudy.routing.reason";
inline constexpr char kMocked[] = "understudy.mocked";
inline constexpr char kMcpServer[] = "understudy.mcp.server";
inline constexpr char kMcpMethod[] = "understudy.mcp.method";
inline constexpr char kToolIsError[] = "understudy.tool.is_error";
// A2A: the called agent (the caller is gen_ai.agent.name), the JSON-RPC
// method, the message's text, the answer's text and its task's state.
inline constexpr char kA2aAgent[] = "understudy.a2a.agent";
inline constexpr char kA2aMethod[] = "understudy.a2a.method";
inline constexpr char kA2aMessage[] = "understudy.a2a.message";
inline constexpr char kA2aResult[] = "understudy.a2a.result";
inline constexpr char kA2aTaskState[] = "understudy.a2a.task_state";
inline constexpr char kUiKind[] = "understudy.ui.kind";
inline constexpr char kUiPrompt[] = "understudy.ui.prompt";
inline constexpr char kUiAnswer[] = "understudy.ui.answer";
}  // namespace attr

// The simulator's (`understudy sim`, docs/sim.md#trace).
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

#endif  // UNDERSTUDY_TRACE_VOCABULARY_H_
