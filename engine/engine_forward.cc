// Forwarded requests (the contract is engine.h): the ForwardTicket Decide
// hands out when the upstream is to answer (NewTicket), and FinishForward,
// which records the upstream's answer and traces it.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/run_state.h"
#include "provider/canonical.h"
#include "trace/vocabulary.h"

namespace understudy {
namespace engine {

ForwardTicket::~ForwardTicket() {
  // Dropped unfinished: the caller went away before the upstream answered.
  if (!finished_ && run_ != nullptr) run_->EndForward(nullptr, false, nullptr);
}

absl::StatusOr<std::unique_ptr<ForwardTicket>> Engine::NewTicket(
    const std::shared_ptr<RunState>& run, const CallInfo& call,
    const v1::CompletionRequest& request, bool streamed) {
  std::unique_ptr<ForwardTicket> ticket(new ForwardTicket());
  ticket->agent_ = call.agent;
  ticket->api_ = call.api;
  ticket->request_ = provider::WithoutRouting(request);
  ticket->start_ = options_.env->Now();
  ticket->streamed_ = streamed;
  if (run->mode() == v1::RUN_MODE_RECORD) {
    ticket->record_session_ = run->session();
    ticket->record_version_ = run->session_version();
  } else if (run->mode() == v1::RUN_MODE_NEW) {
    US_ASSIGN_OR_RETURN(int64_t version, run->NewModeVersion());
    ticket->record_session_ = run->session();
    ticket->record_version_ = version;
  }
  US_RETURN_IF_ERROR(run->BeginForward());
  ticket->run_ = run;
  return ticket;
}

void Engine::FinishForward(std::unique_ptr<ForwardTicket> ticket, v1::Exchange exchange,
                           absl::Status status, std::function<void(absl::Status)> done) {
  ticket->finished_ = true;
  std::shared_ptr<RunState> run = std::move(ticket->run_);
  Env* env = options_.env;
  exchange.set_agent(ticket->agent_);
  *exchange.mutable_request() = std::move(ticket->request_);
  exchange.set_streamed(ticket->streamed_);
  exchange.set_latency_micros(absl::ToInt64Microseconds(env->Now() - ticket->start_));
  exchange.set_recorded_at_micros(absl::ToUnixMicros(ticket->start_));
  // An adapter may set the error itself (an MCP server's JSON-RPC error,
  // a recorded answer with status OK).
  if (!status.ok() && !exchange.has_error()) {
    exchange.mutable_error()->set_code(static_cast<int>(status.code()));
    exchange.mutable_error()->set_message(std::string(status.message()));
  }
  const absl::Status traced =
      status.ok() && exchange.has_error() ? StatusFromRecorded(exchange.error()) : status;
  // An upstream that failed, or answered an error; not a client gone away.
  if (options_.metrics != nullptr && !absl::IsCancelled(status) && !traced.ok()) {
    options_.metrics->CountUpstreamError(ticket->api_);
  }
  const bool record = !ticket->record_session_.empty() && !NeverRecorded(status);
  if (provider::IsCallRequest(exchange.request())) {
    // A tool or agent call's latency is part of its trace (the model's is
    // the exchange's own).
    ticket->extra_.emplace_back(trace::attr::kLatencyMs,
                                absl::StrFormat("%.3f", exchange.latency_micros() / 1000.0));
  }
  if (status.ok() && !provider::IsCallRequest(exchange.request())) {
    run->ObserveAnswer(exchange.agent(), exchange.response());
  }
  if (!record) {
    v1::TraceEvent event =
        ExchangeEvent(exchange.agent(), exchange.request(),
                      exchange.has_response() ? &exchange.response() : nullptr, traced,
                      AnswerSource::kUpstream, 0, exchange.streamed(), ticket->extra_);
    run->EndForward(nullptr, status.ok(), &event);
    done(status);
    return;
  }
  auto extra = std::make_shared<TraceAttributes>(std::move(ticket->extra_));
  auto kept = std::make_shared<v1::Exchange>(std::move(exchange));
  std::vector<v1::Exchange> batch;
  batch.push_back(*kept);
  options_.store->AppendExchanges(
      ticket->record_session_, ticket->record_version_, std::move(batch),
      [run, kept, extra, status, traced, done = std::move(done)](absl::StatusOr<store::AppendResult> r) {
        if (!r.ok()) {
          run->EndForward(nullptr, false, nullptr);
          done(absl::Status(r.status().code(),
                            absl::StrCat("recording failed: ", r.status().message())));
          return;
        }
        kept->set_seq(r->first_seq);
        run->EndRecorded(*kept, r->version, status.ok(), traced, *extra);
        if (LogEnabled(LogLevel::kDebug)) {
          Log(LogLevel::kDebug, "recorded",
              {{"run", run->id()},
               {"exchange", absl::StrCat(r->first_seq)},
               {"agent", kept->agent()},
               {"key", internal::MatchKeyForLog(nullptr, kept->request())}});
        }
        done(status);
      });
}

}  // namespace engine
}  // namespace understudy
