#include "engine/run_state.h"


#include <algorithm>
#include <random>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "capture/validate.h"
#include "matching/miss_report.h"
#include "provider/a2a.h"
#include "provider/canonical.h"
#include "provider/chunks.h"
#include "scenario/playbook.h"
#include "trace/vocabulary.h"

namespace understudy {
namespace engine {

using Attributes = TraceAttributes;

// Errors that say the upstream was not reached or did not finish: passed to
// the caller, never recorded (a replay must not reproduce an outage).
bool IsTransportError(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) || absl::IsCancelled(s);
}

// Outcomes that are never recorded: outages (a replay must not reproduce
// them) and refused credentials (a wrong key during recording says nothing
// about the agent; a golden session must not keep it).
bool NeverRecorded(const absl::Status& s) {
  return IsTransportError(s) || absl::IsUnauthenticated(s) || absl::IsPermissionDenied(s);
}

absl::Status DisconnectStatus() {
  return absl::UnavailableError("connection dropped by the scenario (disconnect action)");
}

namespace {

// The miss event of `request` from `call`, its report `text`, with the
// request as sent (routing fields dropped).
v1::TraceEvent MissEvent(const CallInfo& call, const v1::CompletionRequest& request,
                         const std::string& text) {
  v1::TraceEvent event;
  event.set_kind(trace::event::kMiss);
  event.set_agent(call.agent);
  auto& attrs = *event.mutable_attributes();
  if (!call.agent.empty()) attrs[trace::attr::kGenAiAgentName] = call.agent;
  if (!request.model().empty()) attrs[trace::attr::kGenAiRequestModel] = request.model();
  attrs[trace::attr::kMissReport] = text;
  *event.mutable_request() = provider::WithoutRouting(request);
  return event;
}

}  // namespace

absl::Status StatusFromRecorded(const v1::ErrorStatus& error) {
  // An MCP server's JSON-RPC error keeps its own (negative) code in the
  // recording; as a status it is UNKNOWN, with the code in the message.
  if (error.code() < 0 || error.code() > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::UnknownError(absl::StrCat("JSON-RPC error ", error.code(), ": ", error.message()));
  }
  return absl::Status(static_cast<absl::StatusCode>(error.code()), error.message());
}

// The trace event for one answered request.
v1::TraceEvent ExchangeEvent(const std::string& agent, const v1::CompletionRequest& request,
                             const v1::CompletionResponse* response, const absl::Status& status,
                             AnswerSource source, int64_t exchange_seq, bool streamed,
                             const TraceAttributes& extra) {
  if (IsMcpRequest(request)) {
    return McpExchangeEvent(agent, request, response, status, source, exchange_seq, extra);
  }
  if (provider::a2a::IsA2aRequest(request)) {
    return A2aExchangeEvent(agent, request, response, status, source, exchange_seq, extra);
  }
  v1::TraceEvent event;
  event.set_kind(trace::event::kExchange);
  event.set_agent(agent);
  auto& attrs = *event.mutable_attributes();
  store::AddRequestAttributes(request, &attrs);
  if (!agent.empty()) attrs[trace::attr::kGenAiAgentName] = agent;
  attrs[trace::attr::kAnswerSource] = std::string(SourceName(source));
  attrs[trace::attr::kStreamed] = streamed ? "true" : "false";
  store::AddAnswerAttributes(response,
                             status.ok() ? "" : absl::StatusCodeToString(status.code()),
                             exchange_seq, &attrs);
  if (response != nullptr) *event.mutable_response() = *response;
  for (const auto& [name, value] : extra) attrs[name] = value;
  v1::CompletionRequest* copy = event.mutable_request();
  *copy = request;  // one copy; the routing fields are dropped from it
  copy->clear_run();
  copy->clear_agent();
  return event;
}

namespace {

// Whether an attribute of that name could be one a compact exchange event
// derives (an `extra` attribute must never override a derived one).
bool MayBeDerived(absl::string_view name) {
  return absl::StartsWith(name, "gen_ai.") || name == trace::attr::kErrorType ||
         name == trace::attr::kAnswerSource || name == trace::attr::kStreamed ||
         name == trace::attr::kExchangeSeq;
}

}  // namespace

store::TraceRecord RunState::ReplayedRecord(const std::string& agent,
                                            const v1::CompletionRequest& request, bool exact,
                                            const v1::Exchange& exchange,
                                            AnswerSource source, bool streamed,
                                            const TraceAttributes& extra) const {
  bool compact = !provider::IsCallRequest(request);
  for (const auto& [name, value] : extra) compact &= !MayBeDerived(name);
  if (!compact) {
    const absl::Status status =
        exchange.has_error() ? StatusFromRecorded(exchange.error()) : absl::OkStatus();
    return store::InlineRecord(ExchangeEvent(agent, request, &exchange.response(), status, source,
                                             exchange.seq(), streamed, extra));
  }
  store::TraceRecord record;
  record.ref.session_id = session_row_id_;
  record.ref.seq = exchange.seq();
  uint32_t derive = store::kDeriveResponse | store::kDeriveAnswerAttributes |
                    (streamed ? store::kDeriveStreamed : store::kDeriveNotStreamed);
  v1::TraceEvent& event = record.event;
  event.set_kind(trace::event::kExchange);
  event.set_agent(agent);
  auto& attrs = *event.mutable_attributes();
  if (!agent.empty()) derive |= store::kDeriveAgentName;
  if (source == AnswerSource::kRecording) {
    derive |= store::kDeriveSourceRecording;
  } else {
    attrs[trace::attr::kAnswerSource] = std::string(SourceName(source));
  }
  if (exact) {
    derive |= store::kDeriveRequest | store::kDeriveRequestAttributes;
  } else {
    store::AddRequestAttributes(request, &attrs);
    v1::CompletionRequest* copy = event.mutable_request();
    *copy = request;
    copy->clear_run();
    copy->clear_agent();
  }
  for (const auto& [name, value] : extra) {
    if (name == trace::attr::kAnswerRepeat && value == "true") {
      derive |= store::kDeriveRepeat;
      continue;
    }
    attrs[name] = value;
  }
  record.ref.derive = derive;
  return record;
}

absl::StatusOr<const v1::Exchange*> RunState::Match(const CallInfo& call,
                                                    const v1::CompletionRequest& request,
                                                    bool streamed, bool forward_misses, bool quiet,
                                                    const Attributes& extra) {
  // A request recorded byte for byte needs no canonical form; others (and
  // misses, whose report compares canonical forms) build it.
  std::optional<nlohmann::json> got;
  const void* exact_bytes = nullptr;
  const std::vector<uint32_t>* candidates = index_->FindExact(request, &exact_bytes);
  if (candidates == nullptr) {
    got = index_->CanonicalOf(request);
    candidates = index_->Find(matching::SessionIndex::TextOf(*got));
  }
  absl::MutexLock lock(&mu_);
  if (ending_) return EndingError();
  if (candidates != nullptr) {
    // The first unused identical recording; with repeat_, the last used one
    // when all are used.
    const v1::Exchange* repeat = nullptr;
    for (uint32_t i : *candidates) {
      const v1::Exchange& ex = index_->exchange(i);
      if (ex.agent() != call.agent) continue;
      if (consumed_[i]) {
        if (repeat_) repeat = &ex;
        continue;
      }
      consumed_[i] = 1;
      run_.set_served(run_.served() + 1);
      absl::Status status = ex.has_error() ? StatusFromRecorded(ex.error()) : absl::OkStatus();
      if (provider::IsCallRequest(request)) {
        // A replayed tool or agent call is traced with the latency it was
        // recorded with.
        Attributes with_latency = extra;
        with_latency.emplace_back(trace::attr::kRecordedLatencyMs,
                                  absl::StrFormat("%.3f", ex.latency_micros() / 1000.0));
        EmitLocked(ExchangeEvent(call.agent, request, &ex.response(), status,
                                 AnswerSource::kRecording, ex.seq(), streamed, with_latency));
        return &ex;
      }
      EmitReplayedLocked(call.agent, request, exact_bytes != nullptr &&
                                                  index_->ExactBytes(i) == exact_bytes,
                         ex, status, AnswerSource::kRecording, streamed, extra);
      return &ex;
    }
    if (repeat != nullptr) {
      run_.set_served(run_.served() + 1);
      absl::Status status =
          repeat->has_error() ? StatusFromRecorded(repeat->error()) : absl::OkStatus();
      Attributes with_repeat = extra;
      with_repeat.emplace_back(trace::attr::kAnswerRepeat, "true");
      EmitReplayedLocked(call.agent, request,
                         exact_bytes != nullptr &&
                             index_->ExactBytes(static_cast<size_t>(repeat->seq()) - 1) ==
                                 exact_bytes,
                         *repeat, status, AnswerSource::kRecording, streamed, with_repeat);
      return repeat;
    }
  }
  if (quiet) return nullptr;

  // A miss: report it, and in non-strict mode answer from the closest
  // unused recording.
  if (!got.has_value()) got = index_->CanonicalOf(request);
  v1::MissReport report = matching::BuildMissReport(*index_, consumed_, call.agent, *got);
  const v1::Exchange* fallback = nullptr;
  if (!strict_ && !forward_misses) {
    size_t i = matching::FindClosest(*index_, consumed_, call.agent, *got, /*unconsumed_only=*/true);
    if (i < index_->size()) {
      consumed_[i] = 1;
      fallback = &index_->exchange(i);
      report.set_served_seq(fallback->seq());
    }
  }
  run_.set_misses(run_.misses() + 1);
  v1::TraceEvent event = MissEvent(call, request, report.text());
  auto& attrs = *event.mutable_attributes();
  if (report.closest_seq() > 0) {
    attrs[trace::attr::kMissClosestSeq] = absl::StrCat(report.closest_seq());
  }
  if (fallback != nullptr) attrs[trace::attr::kMissServedSeq] = absl::StrCat(fallback->seq());
  report.set_event_seq(next_event_seq_);
  EmitLocked(std::move(event));
  if (static_cast<int>(misses_.size()) < max_miss_reports_) misses_.push_back(report);

  if (forward_misses) return nullptr;
  if (fallback == nullptr) {
    absl::Status miss = absl::NotFoundError(report.text());
    miss.SetPayload(kMissPayloadUrl, absl::Cord(report.SerializeAsString()));
    return miss;
  }
  run_.set_served(run_.served() + 1);
  absl::Status status =
      fallback->has_error() ? StatusFromRecorded(fallback->error()) : absl::OkStatus();
  EmitReplayedLocked(call.agent, request, /*exact=*/false, *fallback, status,
                     AnswerSource::kClosestRecording, streamed, extra);
  return fallback;
}

void Hang::Wait(std::function<void(absl::Status)> answer) {
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    if (!released_) {
      answer_ = std::move(answer);
      return;
    }
    status = status_;
  }
  answer(std::move(status));
}

void Hang::Release(absl::Status status) {
  std::function<void(absl::Status)> answer;
  {
    absl::MutexLock lock(&mu_);
    if (released_) return;
    released_ = true;
    status_ = status;
    answer = std::move(answer_);
  }
  if (answer) answer(std::move(status));
}

void RunState::EmitReplayedLocked(const std::string& agent, const v1::CompletionRequest& request,
                                  bool exact, const v1::Exchange& exchange,
                                  const absl::Status& status, AnswerSource source,
                                  bool streamed, const Attributes& extra) {
  if (Referable(&exchange)) {
    EmitLocked(ReplayedRecord(agent, request, exact, exchange, source, streamed, extra), &exchange);
    return;
  }
  EmitLocked(ExchangeEvent(agent, request, &exchange.response(), status, source, exchange.seq(),
                           streamed, extra));
}

void RunState::EndRecorded(const v1::Exchange& exchange, int64_t version, bool served,
                           const absl::Status& traced, const TraceAttributes& extra) {
  // The recorded request is the agent's (routing fields aside), so both the
  // request and the answer can be referred to, unless something of the
  // event would not be derived the same way.
  const int64_t row_id = record_version_ == version ? record_row_id_.load() : 0;
  const std::string traced_type = traced.ok() ? "" : absl::StatusCodeToString(traced.code());
  bool compact = row_id != 0 && !provider::IsCallRequest(exchange.request()) &&
                 exchange.has_response() &&
                 (exchange.has_error() ? store::ErrorTypeOf(exchange.error()) : "") ==
                     traced_type;
  for (const auto& [name, value] : extra) compact &= !MayBeDerived(name);
  if (!compact) {
    v1::TraceEvent event =
        ExchangeEvent(exchange.agent(), exchange.request(),
                      exchange.has_response() ? &exchange.response() : nullptr, traced,
                      AnswerSource::kUpstream, exchange.seq(), exchange.streamed(), extra);
    EndForward(&exchange, served, &event);
    return;
  }
  store::TraceRecord record;
  record.event.set_kind(trace::event::kExchange);
  record.event.set_agent(exchange.agent());
  (*record.event.mutable_attributes())[trace::attr::kAnswerSource] =
      std::string(SourceName(AnswerSource::kUpstream));
  for (const auto& [name, value] : extra) (*record.event.mutable_attributes())[name] = value;
  record.ref.session_id = row_id;
  record.ref.seq = exchange.seq();
  record.ref.derive = store::kDeriveRequest | store::kDeriveResponse |
                      store::kDeriveRequestAttributes | store::kDeriveAnswerAttributes |
                      (exchange.streamed() ? store::kDeriveStreamed : store::kDeriveNotStreamed) |
                      (exchange.agent().empty() ? 0u : store::kDeriveAgentName);
  absl::MutexLock lock(&mu_);
  run_.set_recorded(run_.recorded() + 1);
  recorded_.push_back(ExchangeRefTo(exchange));
  if (served) run_.set_served(run_.served() + 1);
  EmitLocked(std::move(record), &exchange);
  --in_flight_;
}

void RunState::ObserveAnswer(const std::string& agent, const v1::CompletionResponse& response,
                             const v1::Exchange* recorded) {
  const scenario::Extractors& extractors = script_->scenario().extractors;
  if (response.message().tool_calls().empty() && !extractors.routing.has_value()) return;
  scenario::Observation seen = scenario::Observe(context_, response, extractors);
  auto base = [&](const char* kind) {
    v1::TraceEvent event;
    event.set_kind(kind);
    event.set_agent(agent);
    if (!agent.empty()) (*event.mutable_attributes())[trace::attr::kGenAiAgentName] = agent;
    return event;
  };
  // Tool calls of a recorded answer refer to it (store/trace_codec.h).
  const bool refer = Referable(recorded) && &recorded->response() == &response;
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < response.message().tool_calls_size(); ++i) {
    const v1::ToolCall& call = response.message().tool_calls(i);
    if (refer) {
      store::TraceRecord record;
      record.event.set_kind(trace::event::kToolCall);
      record.event.set_agent(agent);
      record.ref.session_id = session_row_id_;
      record.ref.seq = recorded->seq();
      record.ref.derive = store::kDeriveToolCall |
                          static_cast<uint32_t>(i) << store::kToolIndexShift |
                          (agent.empty() ? 0u : store::kDeriveAgentName);
      record.tool = call.name();
      EmitLocked(std::move(record), recorded);
      NoteModelToolCallLocked(agent, call);
      continue;
    }
    v1::TraceEvent event = base(trace::event::kToolCall);
    auto& attrs = *event.mutable_attributes();
    attrs[trace::attr::kGenAiToolName] = call.name();
    if (!call.id().empty()) attrs[trace::attr::kGenAiToolCallId] = call.id();
    attrs[trace::attr::kGenAiToolCallArguments] = call.arguments();
    EmitLocked(std::move(event));
    NoteModelToolCallLocked(agent, call);
  }
  if (seen.routing.has_value()) {
    v1::TraceEvent event = base(trace::event::kRoutingDecision);
    auto& attrs = *event.mutable_attributes();
    attrs[trace::attr::kRoutingAgents] = absl::StrJoin(seen.routing->agents, ",");
    if (!seen.routing->phase.empty()) attrs[trace::attr::kRoutingPhase] = seen.routing->phase;
    if (!seen.routing->reason.empty()) attrs[trace::attr::kRoutingReason] = seen.routing->reason;
    EmitLocked(std::move(event));
  }
  if (seen.phase.has_value() && *seen.phase != seen.previous_phase) {
    v1::TraceEvent event = base(trace::event::kPhaseTransition);
    auto& attrs = *event.mutable_attributes();
    attrs[trace::attr::kPhaseFrom] = seen.previous_phase;
    attrs[trace::attr::kPhaseTo] = *seen.phase;
    EmitLocked(std::move(event));
  }
  if (seen.ended) EmitLocked(base(trace::event::kWorkflowEnd));
}

void RunState::TraceRequest(const std::string& agent, const v1::CompletionRequest& request,
                            const scenario::Selection& selection) {
  // An execution is a run of requests by one named agent.
  const bool new_execution =
      !agent.empty() &&
      (!selection.previous_agent.has_value() || *selection.previous_agent != agent);
  bool has_results = false;
  for (const v1::Message& m : request.messages()) has_results |= m.role() == "tool";
  if (!new_execution && !has_results) return;
  absl::MutexLock lock(&mu_);
  if (new_execution) {
    v1::TraceEvent event;
    event.set_kind(trace::event::kAgentExecution);
    event.set_agent(agent);
    auto& attrs = *event.mutable_attributes();
    if (!agent.empty()) attrs[trace::attr::kGenAiAgentName] = agent;
    attrs[trace::attr::kAgentIteration] = absl::StrCat(selection.agent_iteration);
    if (selection.previous_agent.has_value()) {
      attrs[trace::attr::kPreviousAgent] = *selection.previous_agent;
    }
    if (!selection.phase.empty()) attrs[trace::attr::kPhase] = selection.phase;
    EmitLocked(std::move(event));
  }
  if (!has_results) return;
  // Tool names by call id, from the assistant messages before the results.
  absl::flat_hash_map<absl::string_view, absl::string_view> names;
  for (const v1::Message& m : request.messages()) {
    if (m.role() == "assistant") {
      for (const v1::ToolCall& call : m.tool_calls()) names[call.id()] = call.name();
      continue;
    }
    if (m.role() != "tool") continue;
    // Agents resend the conversation: each result is traced once per run.
    const absl::string_view result = absl::string_view(m.content()).substr(0, 64 << 10);
    auto name = names.find(m.tool_call_id());
    const absl::string_view tool = !m.name().empty() ? absl::string_view(m.name())
                                   : name != names.end() ? name->second
                                                         : absl::string_view();
    // A call run over MCP had its result traced then.
    if (!m.tool_call_id().empty() && mcp_traced_ids_.contains(m.tool_call_id())) continue;
    if (!seen_tool_results_.insert(ToolResultKey(m.tool_call_id(), result)).second) continue;
    if (!tool.empty()) {
      auto unkeyed = unkeyed_tool_results_.find(ToolResultKey(tool, result));
      if (unkeyed != unkeyed_tool_results_.end()) {
        if (--unkeyed->second == 0) unkeyed_tool_results_.erase(unkeyed);
        continue;
      }
    }
    v1::TraceEvent event;
    event.set_kind(trace::event::kToolResult);
    event.set_agent(agent);
    auto& attrs = *event.mutable_attributes();
    if (!agent.empty()) attrs[trace::attr::kGenAiAgentName] = agent;
    if (!tool.empty()) attrs[trace::attr::kGenAiToolName] = std::string(tool);
    if (!m.tool_call_id().empty()) attrs[trace::attr::kGenAiToolCallId] = m.tool_call_id();
    attrs[trace::attr::kGenAiToolCallResult] = std::string(result);
    EmitLocked(std::move(event));
  }
}

std::shared_ptr<Hang> RunState::NewHang(absl::Time deadline) {
  auto hang = std::make_shared<Hang>();
  {
    absl::MutexLock lock(&mu_);
    hangs_.erase(std::remove_if(hangs_.begin(), hangs_.end(),
                                [](const std::shared_ptr<Hang>& h) { return h->released(); }),
                 hangs_.end());
    hangs_.push_back(hang);
  }
  if (deadline != absl::InfiniteFuture()) {
    std::weak_ptr<Hang> weak = hang;
    env_->ScheduleAt(deadline, [weak] {
      if (std::shared_ptr<Hang> h = weak.lock()) {
        h->Release(absl::DeadlineExceededError(
            "the deadline passed while the scenario held the call (hang)"));
      }
    });
  }
  return hang;
}

void RunState::ReleaseHangs(const absl::Status& status) {
  std::vector<std::shared_ptr<Hang>> held;
  {
    absl::MutexLock lock(&mu_);
    held.swap(hangs_);
  }
  for (const std::shared_ptr<Hang>& h : held) h->Release(status);
}

absl::StatusOr<const v1::Exchange*> RunState::FromSession(const scenario::FromSessionAction& action,
                                                          std::shared_ptr<const void>* keepalive) {
  absl::MutexLock lock(&mu_);
  auto it = sources_.find(action.session);
  if (it == sources_.end()) {
    return absl::InternalError(absl::StrCat("from_session: \"", action.session, "\" not loaded"));
  }
  SourceSession& source = it->second;
  const matching::SessionIndex& index = *source.index;
  *keepalive = source.index;
  if (action.seq.has_value()) {
    for (size_t i = 0; i < index.size(); ++i) {
      if (index.exchange(i).seq() == *action.seq) {
        source.served[i] = 1;
        return &index.exchange(i);
      }
    }
    return absl::NotFoundError(absl::StrCat("from_session: session \"", action.session,
                                            "\" has no exchange with seq ", *action.seq));
  }
  for (size_t i = 0; i < index.size(); ++i) {
    if (source.served[i]) continue;
    source.served[i] = 1;
    return &index.exchange(i);
  }
  return absl::FailedPreconditionError(
      absl::StrCat("from_session: every exchange of session \"", action.session,
                   "\" has been served in this run (", index.size(), ")"));
}

absl::Status RunState::BareMiss(const CallInfo& call, const v1::CompletionRequest& request,
                                const std::string& why) {
  v1::MissReport report;
  report.set_agent(call.agent);
  report.set_text(why);
  absl::MutexLock lock(&mu_);
  if (ending_) return EndingError();
  run_.set_misses(run_.misses() + 1);
  v1::TraceEvent event = MissEvent(call, request, why);
  report.set_event_seq(next_event_seq_);
  EmitLocked(std::move(event));
  if (static_cast<int>(misses_.size()) < max_miss_reports_) misses_.push_back(report);
  absl::Status miss = absl::NotFoundError(why);
  miss.SetPayload(kMissPayloadUrl, absl::Cord(report.SerializeAsString()));
  return miss;
}

v1::RunSummary RunState::BeginEnd(absl::Duration timeout) {
  ReleaseHangs(absl::CancelledError("the run ended while a hang action held the call"));
  absl::MutexLock lock(&mu_);
  ending_ = true;
  auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; };
  mu_.AwaitWithTimeout(absl::Condition(&drained), timeout);
  v1::RunSummary summary;
  *summary.mutable_run() = run_;
  for (const v1::MissReport& m : misses_) *summary.add_misses() = m;
  for (const v1::ExchangeRef& ref : recorded_) *summary.add_recorded() = ref;
  if (index_ != nullptr) {
    for (size_t i = 0; i < consumed_.size(); ++i) {
      if (consumed_[i]) continue;
      *summary.add_unconsumed() = ExchangeRefTo(index_->exchange(i));
    }
  }
  if (playbook_ != nullptr) {
    for (std::string& failure : playbook_->EndFailures()) summary.add_failures(std::move(failure));
  }
  return summary;
}

v1::RunSummary RunState::Finish(v1::RunSummary summary) {
  absl::MutexLock lock(&mu_);
  run_.set_state(summary.failures_size() > 0 ? v1::RUN_STATE_FAILED : v1::RUN_STATE_ENDED);
  run_.set_ended_at_micros(env_->NowMicros());
  v1::TraceEvent event;
  event.set_kind(trace::event::kRunEnded);
  auto& attrs = *event.mutable_attributes();
  attrs[trace::attr::kRunServed] = absl::StrCat(run_.served());
  attrs[trace::attr::kRunRecorded] = absl::StrCat(run_.recorded());
  attrs[trace::attr::kRunMisses] = absl::StrCat(run_.misses());
  attrs[trace::attr::kRunUnconsumed] = absl::StrCat(summary.unconsumed_size());
  if (summary.failures_size() > 0) {
    attrs[trace::attr::kRunFailures] = absl::StrJoin(summary.failures(), "\n");
  }
  EmitLocked(std::move(event));
  ended_ = true;
  for (const auto& [id, subscriber] : subscribers_) {
    if (subscriber.on_end) subscriber.on_end();
  }
  subscribers_.clear();
  *summary.mutable_run() = run_;
  return summary;
}

absl::StatusOr<int64_t> RunState::NewModeVersion() {
  absl::MutexLock lock(&new_mu_);
  if (new_version_ != 0) return new_version_;
  US_ASSIGN_OR_RETURN(v1::Session made, store_->CreateSessionVersion(session_));
  std::vector<v1::Exchange> copy;
  copy.reserve(index_->size());
  for (size_t i = 0; i < index_->size(); ++i) copy.push_back(index_->exchange(i));
  if (!copy.empty()) {
    US_RETURN_IF_ERROR(
        store_->AppendExchangesAndWait(session_, made.version(), std::move(copy)).status());
  }
  new_version_ = made.version();
  record_row_id_ = store_->SessionRowId(session_, new_version_).value_or(0);
  record_version_ = new_version_;
  return new_version_;
}
}  // namespace engine
}  // namespace understudy
