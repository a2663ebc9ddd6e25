// The state of one run, shared by the engine's files (engine*.cc,
// run_state.cc). Internal to the engine: adapters use
// engine.h.
#ifndef UNDERSTUDY_ENGINE_RUN_STATE_H_
#define UNDERSTUDY_ENGINE_RUN_STATE_H_

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "engine/engine.h"
#include "nlohmann/json.hpp"
#include "scenario/playbook.h"
#include "store/trace_codec.h"
#include "trace/vocabulary.h"

namespace understudy {
namespace engine {


// Everything one run holds. Immutable fields are set before the run is
// published; the rest is guarded by `mu`.
class RunState {
 public:
  // A session a `from_session` action serves from, loaded at StartRun.
  struct SourceSession {
    std::shared_ptr<const matching::SessionIndex> index;
    std::vector<uint8_t> served;  // guarded by RunState::mu_
  };

  RunState(v1::Run run, std::shared_ptr<const matching::SessionIndex> index,
           std::shared_ptr<const scenario::Script> script,
           absl::flat_hash_map<std::string, SourceSession> sources, store::Store* store,
           Env* env, int max_miss_reports)
      : id_(run.id()),
        script_(std::move(script)),
        mode_(run.mode()),
        strict_(run.strict()),
        repeat_(run.repeat()),
        trace_level_(run.trace_level()),
        session_(run.session()),
        session_version_(run.session_version()),
        index_(std::move(index)),
        store_(store),
        env_(env),
        max_miss_reports_(max_miss_reports),
        run_(std::move(run)),
        sources_(std::move(sources)) {
    if (index_ != nullptr) {
      consumed_.assign(index_->size(), 0);
      // Trace events refer to the replayed version's exchanges by this id;
      // without it (a store that lost the version) they carry copies.
      session_row_id_ =
          store_->SessionRowId(index_->session().name(), index_->session().version()).value_or(0);
    }
    if (mode_ == v1::RUN_MODE_RECORD && session_version_ > 0) {
      record_row_id_ = store_->SessionRowId(session_, session_version_).value_or(0);
      record_version_ = session_version_;
    }
    if (!script_->scenario().playbook.empty()) {
      playbook_ = std::make_unique<scenario::PlaybookRun>(script_->shared_scenario());
    }
  }

  const scenario::Script& script() const { return *script_; }
  scenario::RunContext& context() { return context_; }
  // The run's OpenAI Responses chains; thread-safe on its own.
  ResponseChain& responses() { return responses_; }
  scenario::PlaybookRun* playbook() { return playbook_.get(); }
  bool has_index() const { return index_ != nullptr; }

  // The use count of the scenario's default action in this run (1-based).
  int64_t NextDefaultUse() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return ++default_uses_;
  }

  // Emits an answer's trace event and counts it served.
  // FAILED_PRECONDITION once the run is ending.
  absl::Status Answered(v1::TraceEvent event) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (ending_) return EndingError();
    run_.set_served(run_.served() + 1);
    EmitLocked(std::move(event));
    return absl::OkStatus();
  }

  // Updates the run's context from an answer and traces what the
  // extractors found: tool_call, routing_decision, phase_transition,
  // workflow_end.
  // `recorded`: the exchange the answer is (replay), so that the tool_call
  // events refer to it; null for answers from elsewhere.
  void ObserveAnswer(const std::string& agent, const v1::CompletionResponse& response,
                     const v1::Exchange* recorded = nullptr) ABSL_LOCKS_EXCLUDED(mu_);

  // Traces what a request says before it is answered: agent_execution when
  // the speaking agent changes, and tool_result for each tool result the
  // request carries that no earlier request of the run carried.
  void TraceRequest(const std::string& agent, const v1::CompletionRequest& request,
                    const scenario::Selection& selection) ABSL_LOCKS_EXCLUDED(mu_);

  // A call held by a `hang` action, released at `deadline` (when finite) or
  // when the run ends.
  std::shared_ptr<Hang> NewHang(absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  void ReleaseHangs(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  // The exchange a from_session action serves: `seq` when set, else the
  // session's next exchange this run has not been served.
  absl::StatusOr<const v1::Exchange*> FromSession(const scenario::FromSessionAction& action,
                                                  std::shared_ptr<const void>* keepalive)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Counts and traces a request that nothing answers, NOT_FOUND with a
  // MissReport payload whose text is `why`.
  absl::Status BareMiss(const CallInfo& call, const v1::CompletionRequest& request,
                        const std::string& why) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& id() const { return id_; }
  v1::RunMode mode() const { return mode_; }
  const std::string& session() const { return session_; }
  int64_t session_version() const { return session_version_; }

  v1::Run Snapshot() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return run_;
  }

  // Appends `event` to the trace with the next seq. Queues it for the
  // store, in seq order, without waiting for disk.
  void Emit(v1::TraceEvent event) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    EmitLocked(std::move(event));
  }
  v1::TraceEvent EmitAndReturn(v1::TraceEvent event) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (event.kind() == trace::event::kToolResult) NoteToolResultLocked(event);
    event.set_run(id_);
    event.set_seq(next_event_seq_);
    event.set_time_micros(env_->NowMicros());
    v1::TraceEvent copy = event;
    EmitLocked(std::move(event));
    return copy;
  }

  // Replay: the exchange that answers `request` (consumed by this call), or
  // NOT_FOUND with the miss report. Emits the exchange or miss event. With
  // `forward_misses` (new mode) a miss is reported and returned as a null
  // exchange, for the caller to forward.
  // With `quiet` (a scenario default will answer instead), a miss returns
  // a null exchange and is neither reported nor counted. `extra` attributes
  // go on the exchange event.
  absl::StatusOr<const v1::Exchange*> Match(const CallInfo& call,
                                            const v1::CompletionRequest& request, bool streamed,
                                            bool forward_misses, bool quiet,
                                            const TraceAttributes& extra) ABSL_LOCKS_EXCLUDED(mu_);

  // Forwarding: counts a call in flight; FAILED_PRECONDITION once the run is
  // ending.
  absl::Status BeginForward() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (ending_) return EndingError();
    ++in_flight_;
    return absl::OkStatus();
  }

  // Forwarding: the call is over; `event` (if any) is its trace event;
  // `recorded` (null when nothing was) is what was recorded, its seq set.
  void EndForward(const v1::Exchange* recorded, bool served, v1::TraceEvent* event)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (recorded != nullptr) {
      run_.set_recorded(run_.recorded() + 1);
      recorded_.push_back(ExchangeRefTo(*recorded));
    }
    if (served) run_.set_served(run_.served() + 1);
    if (event != nullptr) EmitLocked(std::move(*event));
    --in_flight_;
  }
  // EndForward for an answer just recorded as `exchange` (seq assigned)
  // into `version` of the run's session: its event refers to the recording
  // when it can (RecordedRecord), else carries copies.
  void EndRecorded(const v1::Exchange& exchange, int64_t version, bool served,
                   const absl::Status& traced, const TraceAttributes& extra)
      ABSL_LOCKS_EXCLUDED(mu_);

  // New mode: the version that misses are recorded into, made on the first
  // miss as a copy of the replayed version. Returns its number.
  absl::StatusOr<int64_t> NewModeVersion() ABSL_LOCKS_EXCLUDED(new_mu_, mu_);
  int64_t new_mode_version() ABSL_LOCKS_EXCLUDED(new_mu_) {
    absl::MutexLock lock(&new_mu_);
    return new_version_;
  }

  // Refuses new requests, waits up to `timeout` for in-flight ones, and
  // builds the summary (the run record still says ACTIVE).
  v1::RunSummary BeginEnd(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);

  // Records the end: emits run_ended and returns the final summary.
  v1::RunSummary Finish(v1::RunSummary summary) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Status EndingError() const {
    return absl::FailedPreconditionError(absl::StrCat("run \"", id_, "\" is ending or has ended"));
  }

  struct Subscriber {
    std::function<void(const v1::TraceEvent&)> on_event;
    std::function<void()> on_end;
  };

  // Registers a live feed; `first_seq` is the next event's seq.
  // FAILED_PRECONDITION once the run is ending.
  absl::StatusOr<uint64_t> Subscribe(Subscriber subscriber, int64_t* first_seq)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (ended_) {
      return absl::FailedPreconditionError(absl::StrCat("run \"", id_, "\" has ended"));
    }
    const uint64_t id = ++next_subscriber_;
    subscribers_.emplace(id, std::move(subscriber));
    *first_seq = next_event_seq_;
    return id;
  }
  void Unsubscribe(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    subscribers_.erase(id);
  }

  // Whether the run's trace level keeps events of `kind`.
  bool KeepsLocked(absl::string_view kind) const {
    switch (trace_level_) {
      case v1::TRACE_LEVEL_OFF:
        return false;
      case v1::TRACE_LEVEL_SUMMARY:
        return kind == trace::event::kRunStarted || kind == trace::event::kMiss || kind == trace::event::kRunEnded;
      default:
        return true;
    }
  }

  void EmitLocked(v1::TraceEvent event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!KeepsLocked(event.kind())) return;
    // An MCP tool result still holding its request: its call goes first.
    if (event.kind() == trace::event::kToolResult && event.has_request()) TraceMcpCallLocked(&event);
    EmitLocked(store::InlineRecord(std::move(event)), nullptr);
  }
  // `record` may refer to `exchange` (an exchange of index_, whose row id is
  // record.ref.session_id): live subscribers get the event expanded, the
  // store the compact record.
  void EmitLocked(store::TraceRecord record, const v1::Exchange* exchange)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    v1::TraceEvent& event = record.event;
    if (!KeepsLocked(event.kind())) return;
    event.set_run(id_);
    event.set_seq(next_event_seq_++);
    if (event.time_micros() == 0) event.set_time_micros(env_->NowMicros());
    if (!subscribers_.empty()) {
      v1::TraceEvent full;
      if (record.ref.derive == 0) {
        for (const auto& [id, subscriber] : subscribers_) subscriber.on_event(event);
      } else if (store::Expand(record, exchange, &full)) {
        for (const auto& [id, subscriber] : subscribers_) subscriber.on_event(full);
      }
    }
    std::vector<store::TraceRecord> batch;
    batch.push_back(std::move(record));
    store_->AppendRecords(std::move(batch));
  }

  // The trace record of a replayed answer from `exchange` (of index_): it
  // refers to the exchange for the answer, and for the request when
  // `exact` (the agent sent the recorded request's very bytes), instead of
  // copying them. The same event as ExchangeEvent would build.
  store::TraceRecord ReplayedRecord(const std::string& agent,
                                    const v1::CompletionRequest& request, bool exact,
                                    const v1::Exchange& exchange, AnswerSource source,
                                    bool streamed, const TraceAttributes& extra) const;
  // Emits the exchange event of a replayed answer: ReplayedRecord when the
  // exchange is Referable, else ExchangeEvent.
  void EmitReplayedLocked(const std::string& agent, const v1::CompletionRequest& request,
                          bool exact, const v1::Exchange& exchange, const absl::Status& status,
                          AnswerSource source, bool streamed, const TraceAttributes& extra)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `exchange` is one of index_'s, which trace records may refer to.
  bool Referable(const v1::Exchange* exchange) const {
    return session_row_id_ != 0 && exchange != nullptr && exchange->seq() >= 1 &&
           static_cast<size_t>(exchange->seq()) <= index_->size() &&
           &index_->exchange(static_cast<size_t>(exchange->seq()) - 1) == exchange;
  }

  // For the tool_result of an MCP tools/call (McpExchangeEvent): traces the
  // call as a tool_call, unless a model answer already traced the same call
  // (same agent, tool and arguments) and it has not run yet; then the result
  // takes that call's id, and the conversation's copy of the result is not
  // traced again. Clears the event's request. (engine_mcp.cc)
  void TraceMcpCallLocked(v1::TraceEvent* result) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Notes a model answer's tool call as not yet run (engine_mcp.cc).
  void NoteModelToolCallLocked(const std::string& agent, const v1::ToolCall& call)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // A tool_result traced before any request carried it (a mocked tool's
  // answer, or a client's Emit): the request that later carries the same
  // result to the model is not traced again.
  void NoteToolResultLocked(const v1::TraceEvent& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto attr = [&](const char* key) -> absl::string_view {
      auto it = event.attributes().find(key);
      return it == event.attributes().end() ? absl::string_view() : it->second;
    };
    const absl::string_view id = attr(trace::attr::kGenAiToolCallId);
    const absl::string_view result = attr(trace::attr::kGenAiToolCallResult);
    if (!id.empty()) {
      seen_tool_results_.insert(ToolResultKey(id, result));
    } else if (!attr(trace::attr::kGenAiToolName).empty()) {
      ++unkeyed_tool_results_[ToolResultKey(attr(trace::attr::kGenAiToolName), result)];
    }
  }
  static std::string ToolResultKey(absl::string_view id_or_name, absl::string_view result) {
    return absl::StrCat(id_or_name, "\x1f", result.size(), "\x1f", absl::HashOf(result));
  }

  const std::string id_;
  const std::shared_ptr<const scenario::Script> script_;  // never null
  scenario::RunContext context_;
  ResponseChain responses_;
  std::unique_ptr<scenario::PlaybookRun> playbook_;  // null without a playbook
  const v1::RunMode mode_;
  const bool strict_;
  const bool repeat_;
  const v1::TraceLevel trace_level_;
  const std::string session_;
  const int64_t session_version_;
  const std::shared_ptr<const matching::SessionIndex> index_;  // replay only
  int64_t session_row_id_ = 0;  // index_'s version in the store; 0: unknown
  // The version answers are recorded into (record mode, or new mode's once
  // made), with its row id; 0: none yet or unknown.
  std::atomic<int64_t> record_version_{0};
  std::atomic<int64_t> record_row_id_{0};
  store::Store* const store_;
  Env* const env_;
  const int max_miss_reports_;

  // Taken before mu_ when both are needed; held across the disk I/O that
  // makes a new mode's version, which mu_ must never be.
  absl::Mutex new_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  int64_t new_version_ ABSL_GUARDED_BY(new_mu_) = 0;

  absl::Mutex mu_;
  v1::Run run_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::ExchangeRef> recorded_ ABSL_GUARDED_BY(mu_);
  std::vector<uint8_t> consumed_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::MissReport> misses_ ABSL_GUARDED_BY(mu_);
  int64_t next_event_seq_ ABSL_GUARDED_BY(mu_) = 1;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool ending_ ABSL_GUARDED_BY(mu_) = false;
  int64_t default_uses_ ABSL_GUARDED_BY(mu_) = 0;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_subscriber_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, Subscriber> subscribers_ ABSL_GUARDED_BY(mu_);

  friend class EventSubscription;
  // Held here until released: the adapter may keep no reference.
  std::vector<std::shared_ptr<Hang>> hangs_ ABSL_GUARDED_BY(mu_);
  // Tool results already traced, by call id and result (ToolResultKey).
  absl::flat_hash_set<std::string> seen_tool_results_ ABSL_GUARDED_BY(mu_);
  // Results traced with a tool name but no call id, by name and result:
  // each stands in for one later request's result.
  absl::flat_hash_map<std::string, int> unkeyed_tool_results_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, SourceSession> sources_ ABSL_GUARDED_BY(mu_);
  // Tool calls of model answers not yet run over MCP, oldest first
  // (bounded: see NoteModelToolCallLocked).
  struct PendingToolCall {
    std::string agent;
    std::string name;
    std::string id;
    nlohmann::json arguments;  // discarded (null) when not JSON
  };
  std::deque<PendingToolCall> pending_tool_calls_ ABSL_GUARDED_BY(mu_);
  // Ids of model tool calls whose result an MCP call traced.
  absl::flat_hash_set<std::string> mcp_traced_ids_ ABSL_GUARDED_BY(mu_);

  friend class Engine;
};


// Errors that say the upstream was not reached or did not finish: passed to
// the caller, never recorded (a replay must not reproduce an outage).
bool IsTransportError(const absl::Status& s);

// Outcomes that are never recorded: outages and refused credentials.
bool NeverRecorded(const absl::Status& s);

// The status a `disconnect` action ends a call with.
absl::Status DisconnectStatus();

// The status of a recorded error.
absl::Status StatusFromRecorded(const v1::ErrorStatus& error);

// The trace event of an answered MCP request (engine_mcp.cc): for a
// tools/call, its tool_result, carrying the request until EmitLocked has
// traced the call itself; for other methods, an `exchange` event.
v1::TraceEvent McpExchangeEvent(const std::string& agent, const v1::CompletionRequest& request,
                                const v1::CompletionResponse* response, const absl::Status& status,
                                AnswerSource source, int64_t exchange_seq,
                                const TraceAttributes& extra);

// The trace events of an A2A call (engine_a2a.cc): agent_call, before it is
// answered (a message's); and the answer's: agent_result for a message,
// a2a_exchange for any other method (a card, a task's state).
// `text` is the message's.
v1::TraceEvent A2aCallEvent(const std::string& agent, const v1::CompletionRequest& request,
                            absl::string_view text);
v1::TraceEvent A2aExchangeEvent(const std::string& agent, const v1::CompletionRequest& request,
                                const v1::CompletionResponse* response, const absl::Status& status,
                                AnswerSource source, int64_t exchange_seq,
                                const TraceAttributes& extra);

// The trace event for one answered request: `exchange`, or for an MCP or
// A2A request McpExchangeEvent's or A2aExchangeEvent's.
v1::TraceEvent ExchangeEvent(const std::string& agent, const v1::CompletionRequest& request,
                             const v1::CompletionResponse* response, const absl::Status& status,
                             AnswerSource source, int64_t exchange_seq, bool streamed,
                             const TraceAttributes& extra);

}  // namespace engine
}  // namespace understudy

#endif  // UNDERSTUDY_ENGINE_RUN_STATE_H_
