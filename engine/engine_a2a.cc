// The engine's answers to A2A requests (docs/a2a.md): A2A rules, the
// recording or the called agent, a scripted agent card, a miss; and their
// trace events (a message is an agent_call / agent_result pair).
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/run_state.h"
#include "provider/a2a.h"
#include "provider/canonical.h"
#include "re2/re2.h"
#include "trace/vocabulary.h"

namespace understudy {
namespace engine {

namespace a2a = provider::a2a;

namespace {

constexpr size_t kMaxTracedValueBytes = 64 << 10;

bool IsMessage(const a2a::Call& call) {
  return call.method == a2a::Method::kSend || call.method == a2a::Method::kStream;
}

absl::string_view MethodOf(const v1::CompletionRequest& request) {
  return absl::string_view(request.operation()).substr(sizeof(a2a::kOperationPrefix) - 1);
}

// The attributes both events of a call carry: who called whom, how.
void CallAttributes(const std::string& agent, const v1::CompletionRequest& request,
                    google::protobuf::Map<std::string, std::string>* attrs) {
  if (!agent.empty()) (*attrs)[trace::attr::kGenAiAgentName] = agent;
  (*attrs)[trace::attr::kGenAiOperationName] = "invoke_agent";
  (*attrs)[trace::attr::kA2aAgent] = request.model();
  (*attrs)[trace::attr::kA2aMethod] = std::string(MethodOf(request));
}

// Whether a rule of `script` may answer calls to `agent` (then a card is
// made up for it when nothing recorded one).
bool RulesAnswer(const scenario::Script& script, const std::string& agent) {
  for (const scenario::Rule& rule : script.rules().rules()) {
    if (rule.when.a2a.has_value() && RE2::FullMatch(agent, *rule.when.a2a->re)) return true;
  }
  return false;
}

}  // namespace

v1::TraceEvent A2aCallEvent(const std::string& agent, const v1::CompletionRequest& request,
                            absl::string_view text) {
  v1::TraceEvent event;
  event.set_kind(trace::event::kAgentCall);
  event.set_agent(agent);
  auto& attrs = *event.mutable_attributes();
  CallAttributes(agent, request, &attrs);
  attrs[trace::attr::kA2aMessage] = std::string(text.substr(0, kMaxTracedValueBytes));
  return event;
}

v1::TraceEvent A2aExchangeEvent(const std::string& agent, const v1::CompletionRequest& request,
                                const v1::CompletionResponse* response, const absl::Status& status,
                                AnswerSource source, int64_t exchange_seq,
                                const TraceAttributes& extra) {
  v1::TraceEvent event;
  event.set_agent(agent);
  auto& attrs = *event.mutable_attributes();
  CallAttributes(agent, request, &attrs);
  attrs[trace::attr::kAnswerSource] = std::string(SourceName(source));
  if (exchange_seq > 0) attrs[trace::attr::kExchangeSeq] = absl::StrCat(exchange_seq);
  if (!status.ok()) {
    attrs[trace::attr::kErrorType] = absl::StatusCodeToString(status.code());
    attrs[trace::attr::kError] = std::string(status.message().substr(0, kMaxTracedValueBytes));
  }
  if (IsMessage(a2a::ClassifyMethod(MethodOf(request)))) {
    event.set_kind(trace::event::kAgentResult);
    if (response != nullptr && status.ok()) {
      // The canonical answer holds the result's text and its task's state
      // (a2a::CanonicalAnswer).
      attrs[trace::attr::kA2aResult] = response->message().content().substr(0, kMaxTracedValueBytes);
      if (!response->finish_reason().empty()) {
        attrs[trace::attr::kA2aTaskState] = response->finish_reason();
      }
    }
  } else {
    // A card, a task's state, a cancel: no agent's turn.
    event.set_kind(trace::event::kA2aExchange);
    if (response != nullptr && status.ok()) *event.mutable_response() = *response;
    *event.mutable_request() = provider::WithoutRouting(request);
  }
  for (const auto& [name, value] : extra) attrs[name] = value;
  return event;
}

absl::StatusOr<Decision> Engine::DecideA2a(const std::shared_ptr<RunState>& run,
                                           const CallInfo& call,
                                           const v1::CompletionRequest& request) {
  const scenario::Script& script = run->script();
  const a2a::Call a2a_call = a2a::CallOf(request);
  const bool card = request.operation() == a2a::kCardOperation;
  Decision decision;
  decision.speed = options_.speed;
  TraceAttributes attrs;
  if (IsMessage(a2a_call)) run->Emit(A2aCallEvent(call.agent, request, a2a_call.text));

  // 1. A2A rules.
  if (IsMessage(a2a_call)) {
    const scenario::Selection selection =
        script.rules().SelectA2a(run->context(), request.model(), a2a_call.text, call.agent);
    if (selection.rule != nullptr) {
      attrs.emplace_back(trace::attr::kRuleName, selection.rule->name);
      attrs.emplace_back(trace::attr::kRuleUse, absl::StrCat(selection.rule_use));
      const scenario::Step step = scenario::ResolveStep(selection.rule->action, selection.rule_use);
      if (!step.path.empty()) attrs.emplace_back(trace::attr::kActionPath, step.path);
      const std::string seed = absl::StrCat(request.model(), "\x1f", call.agent, "\x1f",
                                            selection.rule->name, "\x1f", selection.rule_use);
      std::shared_ptr<v1::Exchange> answer;
      switch (step.kind) {
        case scenario::Step::Kind::kDelay:
          decision.delay += absl::Milliseconds(step.delay->ms);
          attrs.emplace_back(trace::attr::kEffect, "delay");
          attrs.emplace_back(trace::attr::kDelayMs, absl::StrCat(step.delay->ms));
          break;
        case scenario::Step::Kind::kRespond:
          attrs.emplace_back(trace::attr::kAction, "respond");
          answer = std::make_shared<v1::Exchange>(
              a2a::ScriptedExchange(a2a_call, step.respond->content, /*failed=*/false, seed));
          break;
        case scenario::Step::Kind::kError:
          attrs.emplace_back(trace::attr::kAction, "error");
          answer = step.error->jsonrpc_code.has_value()
                       ? internal::JsonRpcErrorExchange(*step.error->jsonrpc_code,
                                                        step.error->message)
                       : std::make_shared<v1::Exchange>(a2a::ScriptedExchange(
                             a2a_call, step.error->message, /*failed=*/true, seed));
          break;
        case scenario::Step::Kind::kHang:
          attrs.emplace_back(trace::attr::kAction, "hang");
          attrs.emplace_back(trace::attr::kErrorType, "DEADLINE_EXCEEDED");
          return CallAnsweredByRule(run, call, request, nullptr, attrs, std::move(decision));
        default:
          // Model-only actions (disconnect, from_session): the validator
          // refuses them in A2A rules.
          break;
      }
      if (answer != nullptr) {
        return CallAnsweredByRule(run, call, request, std::move(answer), attrs,
                                  std::move(decision));
      }
    }
  }

  // 2. The recording, or the called agent.
  const bool scripted_card = card && RulesAnswer(script, request.model());
  US_ASSIGN_OR_RETURN(const bool answered,
                      RecordingOrUpstream(run, call, request, /*quiet=*/scripted_card, &attrs,
                                          &decision));
  if (answered) return decision;

  // 3. The card of an agent only rules answer.
  if (scripted_card) {
    return CallAnsweredByRule(
        run, call, request, std::make_shared<v1::Exchange>(a2a::ScriptedCardExchange(request.model())),
        attrs, std::move(decision));
  }

  // 4. A miss.
  absl::Status miss = run->BareMiss(
      call, request,
      absl::StrCat("no A2A rule", run->has_index() ? " or recording" : "", " answers ",
                   card ? "the agent card" : absl::StrCat("A2A ", MethodOf(request)),
                   " of agent \"", request.model(), "\"",
                   run->has_index() ? "" : "; the run replays no session"));
  if (decision.delay <= absl::ZeroDuration() || absl::IsFailedPrecondition(miss)) return miss;
  decision.what = MissAfterDelay{std::move(miss)};
  return decision;
}

}  // namespace engine
}  // namespace understudy
