// What the engine's answers to MCP and A2A calls share (engine_mcp.cc,
// engine_a2a.cc): the recording or the upstream, and a scripted JSON-RPC
// error as an exchange.
#include <utility>

#include "base/status_macros.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/run_state.h"

namespace understudy {
namespace engine {

namespace internal {

std::shared_ptr<v1::Exchange> JsonRpcErrorExchange(int code, absl::string_view message) {
  auto exchange = std::make_shared<v1::Exchange>();
  exchange->mutable_error()->set_code(code);
  exchange->mutable_error()->set_message(std::string(message));
  return exchange;
}

}  // namespace internal

absl::StatusOr<bool> Engine::RecordingOrUpstream(const std::shared_ptr<RunState>& run,
                                                 const CallInfo& call,
                                                 const v1::CompletionRequest& request, bool quiet,
                                                 TraceAttributes* attrs, Decision* decision) {
  const v1::RunMode mode = run->mode();
  if ((mode == v1::RUN_MODE_REPLAY || mode == v1::RUN_MODE_NEW) && run->has_index()) {
    const bool forward_misses = mode == v1::RUN_MODE_NEW;
    US_ASSIGN_OR_RETURN(const v1::Exchange* ex,
                        run->Match(call, request, /*streamed=*/false, forward_misses,
                                   /*quiet=*/!forward_misses && quiet, *attrs));
    if (ex != nullptr) {
      decision->what = ReplyFromExchange{run->index_, ex};
      decision->source = AnswerSource::kRecording;
      return true;
    }
  }
  if (mode != v1::RUN_MODE_REPLAY) {
    US_ASSIGN_OR_RETURN(std::unique_ptr<ForwardTicket> ticket,
                        NewTicket(run, call, request, /*streamed=*/false));
    ticket->extra_ = std::move(*attrs);
    decision->what = ForwardUpstream{std::move(ticket)};
    decision->source = AnswerSource::kUpstream;
    return true;
  }
  return false;
}

absl::StatusOr<Decision> Engine::CallAnsweredByRule(const std::shared_ptr<RunState>& run,
                                                   const CallInfo& call,
                                                   const v1::CompletionRequest& request,
                                                   std::shared_ptr<v1::Exchange> answer,
                                                   const TraceAttributes& attrs,
                                                   Decision decision) {
  decision.source = AnswerSource::kRule;
  if (answer == nullptr) {
    US_RETURN_IF_ERROR(run->Answered(ExchangeEvent(call.agent, request, nullptr, absl::OkStatus(),
                                                   AnswerSource::kRule, 0, false, attrs)));
    decision.what = HangUntilReleased{run->NewHang(call.deadline)};
    return decision;
  }
  const absl::Status status =
      answer->has_error() ? StatusFromRecorded(answer->error()) : absl::OkStatus();
  US_RETURN_IF_ERROR(run->Answered(ExchangeEvent(call.agent, request,
                                                 answer->has_error() ? nullptr : &answer->response(),
                                                 status, AnswerSource::kRule, 0, false, attrs)));
  const v1::Exchange* reply = answer.get();
  decision.what = ReplyFromExchange{std::move(answer), reply};
  return decision;
}

}  // namespace engine
}  // namespace understudy
