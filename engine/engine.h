// The engine: runs, and the answer to every model request.
//
// A run is one execution of a system under test. Its mode decides where
// answers come from:
//   record       forward to the upstream model, append each exchange to a new
//                version of the session, answer once it is committed;
//   replay       answer from the session's recording; never call upstream;
//   passthrough  forward to the upstream; keep only the trace;
//   once         record when the session has no recording yet, else replay;
//   new          replay, and forward and record what has no recording, into
//                a new version holding the old exchanges and the new ones.
//
// Scenarios (scenario/script.h) script answers: each request is counted in
// its run's context, then answered by the first source that holds, in this
// order: the scenario's rules (priority order), its playbook, the recording
// (replay and new modes) or the upstream (record, passthrough), the
// scenario's `default`, a miss. A `delay` or `disconnect` rule adds its
// effect and lets the next source answer. Extractors turn every answer into
// workflow facts (tool calls, phase, routing, end) that later rules read.
//
// Replay matching: the request's canonical form (provider/canonical.h, after
// the MatchNormalizer) and its agent must equal a recorded exchange's.
// Identical recorded requests answer in recorded order; each answers once
// per run. A request with no unused match is a miss: strict runs answer
// NOT_FOUND with a MissReport's text; non-strict runs answer from the
// closest unused recording, if any, and report the miss all the same. Every
// answer and miss is a trace event.
//
// Adapters (gRPC, HTTP) call Decide, then either render the recording it
// names or forward the request to their own upstream and hand the outcome to
// FinishForward, which records it and emits its event. Complete and
// StreamComplete do that for the gRPC upstream in the options.
//
// Thread safety: every method may be called from any thread. Each run has
// its own lock; nothing global is locked on the request path except a reader
// lock on the run table. The request path never waits on disk in replay.
//
// Where it is implemented: engine.cc (the run table: Create, StartRun,
// EndRun, GetRun, EndAllRuns, ReleaseHangs, and the lookups of an active
// run), engine_decide.cc (Decide), engine_forward.cc (ForwardTicket,
// FinishForward), engine_grpc.cc (Complete, StreamComplete),
// engine_events.cc (Emit, Subscribe), engine_mcp.cc (MCP requests),
// engine_a2a.cc (A2A requests), engine_calls.cc (what those two share);
// run_state.h is the per-run state they share.
#ifndef UNDERSTUDY_ENGINE_ENGINE_H_
#define UNDERSTUDY_ENGINE_ENGINE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/env.h"
#include "engine/response_chain.h"
#include "matching/normalize.h"
#include "matching/session_index.h"
#include "metrics/metrics.h"
#include "scenario/script.h"
#include "store/store.h"
#include "understudy/v1/understudy.pb.h"
#include "upstream/upstream.h"

namespace understudy {
namespace engine {

struct EngineOptions {
  // Required. Not owned; must outlive the engine.
  store::Store* store = nullptr;
  // Where requests and upstream errors are counted; null for nowhere. Not
  // owned; must outlive the engine.
  metrics::Metrics* metrics = nullptr;
  // Where Complete and StreamComplete forward; nullptr when none is
  // configured. Not owned; must outlive the engine.
  upstream::ModelUpstream* upstream = nullptr;
  // Whether any upstream (gRPC or HTTP) is configured, or may come with
  // the requests (ServerOptions::upstreams_from_mcp_proxies); record,
  // passthrough, once and new runs are refused without one.
  bool has_upstream = false;
  // Replay pace: 0 answers as fast as possible; s > 0 waits each recorded
  // chunk's offset divided by s (1 = the recorded pace).
  double speed = 0;
  // Not owned; must outlive the engine.
  Env* env = Env::Default();
  // What matching ignores or rewrites (null: nothing). See normalize.h.
  std::shared_ptr<const matching::MatchNormalizer> normalizer;
  // Makes ids for runs started without one. Default: "run-" + 16 random hex
  // digits. Must be thread-safe.
  std::function<std::string()> new_run_id;
  // Active runs at once; more are refused with RESOURCE_EXHAUSTED.
  int max_active_runs = 4096;
  // Miss reports kept per run for EndRun (the count stays exact).
  int max_miss_reports_per_run = 1000;
  // How long EndRun waits for the run's in-flight upstream calls.
  absl::Duration end_run_drain_timeout = absl::Seconds(30);
  // The scenario for runs that name none (serve --scenario), or null.
  std::shared_ptr<const scenario::Script> scenario;
  // The directory StartRun.scenario may name files under (serve
  // --scenario-dir); "" allows packs and scenario_text only.
  std::string scenario_dir;
  // A streamed answer relayed from the upstream whose caller has this much
  // waiting unread is cut: the upstream call is cancelled, nothing is
  // recorded, and the caller gets RESOURCE_EXHAUSTED.
  size_t max_relay_backlog_bytes = 8 << 20;
  // The trace level of runs that ask for none (serve --trace-level).
  v1::TraceLevel default_trace_level = v1::TRACE_LEVEL_FULL;
  // Names the store in StartRun's errors for a session it does not hold
  // (the database file, "golden.db"), so that a caller who pointed a test
  // at the wrong or an empty database sees which; "" leaves it out.
  std::string store_name;
};

// Payload type URL on the NOT_FOUND status of a replay miss (the value is
// the serialized MissReport), so adapters can tell a miss from an unknown
// run or session and give it a stable error code.
inline constexpr char kMissPayloadUrl[] = "type.googleapis.com/understudy.v1.MissReport";

// MCP requests (docs/mcp.md) are canonical requests too: `operation` is
// provider::mcp::kOperationPrefix + the JSON-RPC method ("mcp:tools/call"), `model` the
// MCP server's name, `extra` the request's params without `_meta`. Their
// answers: `message.content` is the JSON text of the JSON-RPC result; a
// JSON-RPC error is the exchange's `error`, its code the JSON-RPC code.
bool IsMcpRequest(const v1::CompletionRequest& request);
// A2A requests (docs/a2a.md; provider/a2a.h) likewise: `operation` is "a2a:"
// + the JSON-RPC method, `model` the called agent's name; answers as MCP's.
// Both are calls (provider::IsCallRequest): they never count an iteration
// and the extractors never observe their answers.

// How a run's summary names `exchange`: its seq, agent, model (an MCP
// server's name), operation and, for an MCP tools/call, the tool.
v1::ExchangeRef ExchangeRefTo(const v1::Exchange& exchange);

// Who is asking, besides what: from call metadata or request fields.
// Extra attributes for a trace event, in order.
using TraceAttributes = std::vector<std::pair<std::string, std::string>>;

struct CallInfo {
  // "" means the default run.
  std::string run;
  std::string agent;
  // Passed through to the upstream in record/passthrough; never stored.
  std::vector<std::pair<std::string, std::string>> forward_headers;
  absl::Time deadline = absl::InfiniteFuture();
  // The API the call came over, for the metrics (metrics/metrics.h): a
  // codec's name ("openai", …), "mcp", "a2a", "grpc"; "" when unknown.
  absl::string_view api;
  // What the adapter knows of the call that its model request's exchange
  // event should say (the HTTP API it came over), added to that event. Not
  // names the engine sets itself (gen_ai.*, understudy.*).
  TraceAttributes attributes;
};

// Answers alias into immutable recordings where they can: no copy per reply.
using ResponsePtr = std::shared_ptr<const v1::CompletionResponse>;
using ChunkPtr = std::shared_ptr<const v1::CompletionChunk>;

// Receives a streamed answer.
class ChunkSink {
 public:
  virtual ~ChunkSink() = default;
  // Each chunk, in order; never two calls at once. Must not block. The chunk
  // is to reach the caller no earlier than `not_before` (replay pacing, see
  // EngineOptions::speed); InfinitePast means at once.
  virtual void OnChunk(ChunkPtr chunk, absl::Time not_before) = 0;
  // Exactly once, after the last chunk. Must not block.
  virtual void OnFinish(absl::Status status) = 0;

  // Whether the caller has gone away (a relayed upstream call is then
  // cancelled). Thread-safe.
  virtual bool cancelled() const { return false; }
  // Serialized bytes of the chunks given and not yet sent to the caller: a
  // relay whose caller stops reading is cut past EngineOptions'
  // max_relay_backlog_bytes. Thread-safe.
  virtual size_t pending_bytes() const { return 0; }
};

class RunState;

// A request that Decide sent upstream. Give it back to FinishForward with
// the outcome; dropping it unfinished (the caller went away) releases the
// run without recording anything.
class ForwardTicket {
 public:
  ~ForwardTicket();
  ForwardTicket(const ForwardTicket&) = delete;
  ForwardTicket& operator=(const ForwardTicket&) = delete;

  const std::string& agent() const { return agent_; }
  // The request as forwarded and stored: without routing fields.
  const v1::CompletionRequest& request() const { return request_; }
  // When the request was decided on; chunk offsets count from here.
  absl::Time start() const { return start_; }

 private:
  friend class Engine;
  ForwardTicket() = default;

  std::shared_ptr<RunState> run_;
  std::string agent_;
  // CallInfo::api, for the metrics.
  absl::string_view api_;
  v1::CompletionRequest request_;
  absl::Time start_;
  bool streamed_ = false;
  // Where the exchange is recorded; empty session: not recorded.
  std::string record_session_;
  int64_t record_version_ = 0;
  bool finished_ = false;
  // For the trace event (iteration, rule effects).
  TraceAttributes extra_;
};

// A call held open by a `hang` action. The adapter gives it the way to
// answer (Wait) and tells it when the caller went away (Release); the
// engine releases it at the call's deadline and when its run ends.
class Hang {
 public:
  Hang() = default;
  Hang(const Hang&) = delete;
  Hang& operator=(const Hang&) = delete;

  // Runs `answer` exactly once, with the status of the first Release (at
  // once when that has already happened). At most one call.
  void Wait(std::function<void(absl::Status)> answer) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the hang with `status`; later calls do nothing. Thread-safe.
  void Release(absl::Status status) ABSL_LOCKS_EXCLUDED(mu_);
  bool released() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return released_;
  }

 private:
  absl::Mutex mu_;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::function<void(absl::Status)> answer_ ABSL_GUARDED_BY(mu_);
};

// A live feed of a run's trace events (Engine::Subscribe). Destroying it
// stops the feed; no callback runs after the destructor returns. It must not
// be destroyed from inside one of its own callbacks.
class EventSubscription {
 public:
  ~EventSubscription();
  EventSubscription(const EventSubscription&) = delete;
  EventSubscription& operator=(const EventSubscription&) = delete;

  // The seq of the first event the feed delivers: every earlier event is
  // already queued for the store.
  int64_t first_seq() const { return first_seq_; }

 private:
  friend class Engine;
  EventSubscription() = default;

  std::weak_ptr<RunState> run_;
  uint64_t id_ = 0;
  int64_t first_seq_ = 0;
};

// Where an answer comes from. The trace names it by SourceName (the
// attribute understudy.answer.source).
enum class AnswerSource {
  kRecording,         // the replayed session's exchange that matched
  kClosestRecording,  // its closest exchange, answering a miss
  kPlaybook,          // the scenario's playbook
  kMock,              // an MCP server's mock_tools entry
  kRule,              // a scenario rule (respond, error, hang, disconnect, ...)
  kDefault,           // the scenario's default action
  kUpstream,          // the real upstream, forwarded to
};

// "recording", "closest_recording", "playbook", "mock_tools", "rule",
// "default", "upstream": the strings the trace has always carried.
absl::string_view SourceName(AnswerSource source);

// A run mode's name as the trace and the metrics give it: "record",
// "replay", "passthrough", "once", "new" ("unspecified" for none).
const char* ModeName(v1::RunMode mode);

// The cases of a Decision (what answers the request).
//
// An answer built from an exchange: a recording, or a scripted, playbook
// or mock answer built as one. `exchange` is alive while `keepalive` is held.
struct ReplyFromExchange {
  std::shared_ptr<const void> keepalive;
  const v1::Exchange* exchange = nullptr;
  // For a streaming caller answered from a recording that was not streamed:
  // its answer as one chunk, shared (alive while `keepalive` is held).
  const v1::CompletionChunk* answer_chunk = nullptr;
};
// Forward the request upstream, then call Engine::FinishForward with this.
struct ForwardUpstream {
  std::unique_ptr<ForwardTicket> ticket;
};
// An `error` action: the status for gRPC and MCP callers, and for HTTP
// callers the HTTP status and the Retry-After delay (negative: none).
struct ScriptedError {
  absl::Status status;
  int http_status = 0;
  double retry_after_seconds = -1;
};
// A `hang` action: answer through hang->Wait.
struct HangUntilReleased {
  std::shared_ptr<Hang> hang;
};
// A `disconnect` with nothing to answer: the connection drops before
// anything is sent.
struct DropConnection {};
// A miss, answered (as the error it is) after a scripted delay.
struct MissAfterDelay {
  absl::Status status;
};

// How to answer a request. Adapters apply, in order: `delay` (wait first);
// then the case in `what`; `disconnect_after` >= 0 cuts the answer after
// that many stream chunks (0, or any unary answer: before anything is sent).
struct Decision {
  std::variant<DropConnection, ReplyFromExchange, ForwardUpstream, ScriptedError, HangUntilReleased,
               MissAfterDelay>
      what;
  // Scripted effects (scenario rules and default), shared by every case.
  absl::Duration delay = absl::ZeroDuration();
  int64_t disconnect_after = -1;
  // Replay pace (EngineOptions::speed).
  double speed = 0;
  // What answers.
  AnswerSource source = AnswerSource::kRule;

  // The case, or null when `what` holds another.
  template <typename Case>
  Case* As() {
    return std::get_if<Case>(&what);
  }
  template <typename Case>
  const Case* As() const {
    return std::get_if<Case>(&what);
  }
};

class Engine {
 public:
  // INVALID_ARGUMENT when options.store is null.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The time and timers the engine runs on (EngineOptions::env); adapters
  // that pace or delay its answers use the same one.
  Env* env() const { return options_.env; }

  // Starts a run. Errors: INVALID_ARGUMENT (no mode, bad run id or session
  // name, no session for record/replay), NOT_FOUND (replayed session or
  // version unknown), FAILED_PRECONDITION (record/passthrough without an
  // upstream), ALREADY_EXISTS (run id taken), RESOURCE_EXHAUSTED (too many
  // active runs). The run record is durable on return.
  absl::StatusOr<v1::Run> StartRun(const v1::StartRunRequest& request);

  // Ends a run: refuses its new requests, waits for its in-flight ones,
  // closes a recorded session version, commits the trace and returns the
  // summary. Ending an ended run returns its stored summary again.
  // NOT_FOUND for an unknown run.
  absl::StatusOr<v1::RunSummary> EndRun(absl::string_view run_id);

  // The run's current record. NOT_FOUND for an unknown run.
  absl::StatusOr<v1::Run> GetRun(absl::string_view run_id);

  // The distinct models of the recording `call`'s run replays, in order of
  // first use (empty for runs that replay nothing). Errors as FindActiveRun:
  // INVALID_ARGUMENT (no run), NOT_FOUND, FAILED_PRECONDITION.
  absl::StatusOr<std::vector<std::string>> RunModels(const CallInfo& call);

  // The mode of `call`'s run and its id (the default run's when the call
  // names none). Errors as FindActiveRun.
  absl::StatusOr<std::pair<v1::RunMode, std::string>> ActiveRunMode(const CallInfo& call);

  // Makes `run_id` the run that requests naming no run go to ("" for none:
  // they are then refused with INVALID_ARGUMENT).
  void SetDefaultRun(std::string run_id);

  // Ends every active run (for shutdown); returns the first error.
  absl::Status EndAllRuns();

  // Releases every hanging call of every run with UNAVAILABLE (for
  // shutdown, before draining calls).
  void ReleaseHangs();

  // The scenario of `call`'s run (its own, or the server's; null when it
  // has none), and the run's id. Errors as for Decide.
  absl::StatusOr<std::pair<std::shared_ptr<const scenario::Script>, std::string>> RunScript(
      const CallInfo& call);

  // Appends `event` to the trace of `call`'s run (run, seq and time are
  // set here) and returns it as stored. Errors as for Decide.
  absl::StatusOr<v1::TraceEvent> Emit(const CallInfo& call, v1::TraceEvent event);

  // Feeds the active run's events, from the next one on, to `on_event`, and
  // calls `on_end` once after its run_ended event. Both run under the run's
  // lock: they must not block or call the engine. NOT_FOUND for an unknown
  // run, FAILED_PRECONDITION for one that has ended (its trace is complete
  // in the store).
  absl::StatusOr<std::unique_ptr<EventSubscription>> Subscribe(
      absl::string_view run_id, std::function<void(const v1::TraceEvent&)> on_event,
      std::function<void()> on_end);

  // The OpenAI Responses chains of `call`'s run (engine/response_chain.h):
  // what a response answered, kept so that a request naming it as its
  // `previous_response_id` reads as the whole conversation, that an
  // `item_reference` to one of its items reads as that item, and that it
  // can be fetched again. Errors as FindActiveRun, then as ResponseChain.
  absl::Status RememberResponse(const CallInfo& call, std::string id, ChainLink link);
  absl::StatusOr<std::vector<v1::Message>> ResolveResponse(const CallInfo& call,
                                                           absl::string_view id);
  absl::StatusOr<v1::Message> ResolveItem(const CallInfo& call, absl::string_view item_id,
                                          const ResponseChain::ItemReader& read);
  absl::StatusOr<std::string> ResponseBody(const CallInfo& call, absl::string_view id);

  // Decides how to answer `request` from `call`: a recording (replay, and
  // recorded requests in new mode) or forwarding (record, passthrough, and
  // misses in new mode). Errors: INVALID_ARGUMENT (malformed request, no
  // run), NOT_FOUND (unknown run; a strict miss, with the report),
  // FAILED_PRECONDITION (ended run), and store errors creating a new mode's
  // version. The trace event of a recording is emitted here.
  // Each decision, and each request refused, is counted in
  // EngineOptions::metrics (understudy_requests_total).
  absl::StatusOr<Decision> Decide(const CallInfo& call, const v1::CompletionRequest& request,
                                  bool streamed);

  // Runs started and not yet ended.
  int64_t ActiveRunCount() ABSL_LOCKS_EXCLUDED(runs_mu_);

  // Completes a forwarded request. `exchange` holds what the upstream
  // answered: response, chunks (with offsets), native; the engine fills in
  // agent, request, streamed, latency, timestamps and, from `status`, error.
  // The exchange is recorded when the run records and `status` is not a
  // transport failure (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED) or a
  // refused credential (UNAUTHENTICATED, PERMISSION_DENIED): the upstream's
  // other errors (rate limits, bad requests) are recorded and replayed. `done`
  // runs exactly once, after the commit (on the store's writer thread) or at
  // once when nothing is recorded, with `status` or the recording's error.
  // It must not block.
  void FinishForward(std::unique_ptr<ForwardTicket> ticket, v1::Exchange exchange,
                     absl::Status status, std::function<void(absl::Status)> done);

  // Answers one unary completion. `done` runs exactly once: inline when the
  // answer is known at once (replay, errors), otherwise on an upstream or
  // store thread. It must not block.
  void Complete(const CallInfo& call, const v1::CompletionRequest& request,
                std::function<void(absl::StatusOr<ResponsePtr>)> done);

  // Answers one streamed completion into `sink` (which the engine keeps
  // alive until OnFinish has returned).
  void StreamComplete(const CallInfo& call, const v1::CompletionRequest& request,
                      std::shared_ptr<ChunkSink> sink);

 private:
  explicit Engine(EngineOptions options);

  absl::StatusOr<std::shared_ptr<RunState>> FindActiveRun(const CallInfo& call);
  absl::StatusOr<std::unique_ptr<ForwardTicket>> NewTicket(const std::shared_ptr<RunState>& run,
                                                           const CallInfo& call,
                                                           const v1::CompletionRequest& request,
                                                           bool streamed);
  // The version a replay of `name` (no @N) uses: the newest one holding any
  // exchange (a record run that crashed may have left an empty one), else
  // the newest. NOT_FOUND for an unknown session.
  absl::StatusOr<int64_t> LatestRecordedVersion(const std::string& name);
  absl::StatusOr<std::shared_ptr<const matching::SessionIndex>> LoadSession(
      const std::string& name, int64_t version,
      const std::shared_ptr<const matching::MatchNormalizer>& normalizer);
  // `status` (a NOT_FOUND for a session) with where it was looked for:
  // " in database NAME (which holds no sessions | whose sessions are a, b)".
  // Any other status is returned as it is.
  absl::Status WhereSessionsAre(absl::Status status);
  std::string NewRunId();

  // StartRun's steps (engine.cc), in the order StartRun takes them. None is
  // called holding a lock.

  // The scenario a StartRun `request` names (scenario, a pack or a file
  // under EngineOptions::scenario_dir, or scenario_text), loaded; else the
  // server's (EngineOptions::scenario), null when there is none.
  // INVALID_ARGUMENT for both named, a text over the limit, or a scenario
  // that does not load (its own code otherwise), prefixed "scenario: ".
  absl::StatusOr<std::shared_ptr<const scenario::Script>> LoadRunScript(
      const v1::StartRunRequest& request);
  // Whether `id` may name a new run: ALREADY_EXISTS for an active run's id
  // or an ended run's in the store, RESOURCE_EXHAUSTED at max_active_runs.
  // Takes runs_mu_ (as a reader) to look, then reads the store without it.
  absl::Status CheckRunIdFree(const std::string& id) ABSL_LOCKS_EXCLUDED(runs_mu_);
  // The mode a StartRun `request` runs in: its own, except that once is
  // replay when its session has a recording, else record. Errors: a bad
  // session name, the store's, NOT_FOUND for an empty NAME@N.
  absl::StatusOr<v1::RunMode> ResolveMode(const v1::StartRunRequest& request);
  // The record of a new run `id` in `mode` (ACTIVE, started now): strict,
  // scenario label (when `scripted`, from `script`), repeat and trace level
  // as `request` and `script` say. INVALID_ARGUMENT for a bad trace level.
  absl::StatusOr<v1::Run> NewRunRecord(const v1::StartRunRequest& request, const std::string& id,
                                       v1::RunMode mode, const scenario::Script& script,
                                       bool scripted);
  // The session `run` (its mode set) works on, named by `session` ("" for
  // none: nothing to do): record makes a new version of it; replay and new
  // load the version named, else the latest recorded one, into `index`
  // (matched with `normalizer`); passthrough only names it. Sets the run's
  // session and version. Errors: INVALID_ARGUMENT (bad name, NAME@N to
  // record), NOT_FOUND saying where sessions are (WhereSessionsAre), the
  // store's.
  absl::Status OpenSession(const std::string& session,
                           const std::shared_ptr<const matching::MatchNormalizer>& normalizer,
                           v1::Run* run, std::shared_ptr<const matching::SessionIndex>* index);
  // Decide for an MCP request (engine_mcp.cc): tool rules, the recording or
  // the upstream, mock_tools, a miss. Never counts an iteration.
  absl::StatusOr<Decision> DecideMcp(const std::shared_ptr<RunState>& run, const CallInfo& call,
                                     const v1::CompletionRequest& request);
  // Decide's work once the run is found (engine_decide.cc).
  absl::StatusOr<Decision> DecideInRun(const std::shared_ptr<RunState>& run, const CallInfo& given,
                                       const v1::CompletionRequest& request, bool streamed);
  // Decide for an A2A request (engine_a2a.cc): A2A rules, the recording or
  // the upstream, a scripted agent card, a miss. Traces a message's
  // agent_call before it is answered. Never counts an iteration.
  absl::StatusOr<Decision> DecideA2a(const std::shared_ptr<RunState>& run, const CallInfo& call,
                                     const v1::CompletionRequest& request);
  // The step MCP and A2A calls share (engine_calls.cc): in replay and new
  // mode, the run's recording (`quiet`: a replay miss is not traced, as a
  // later source may answer); in any mode but replay, a ticket to forward
  // with `attrs` (moved into it). Sets `decision` and returns true when one
  // of them answers; false leaves both untouched.
  // The other step they share (engine_calls.cc): `decision` (its delay and
  // speed kept) for a call a rule answers with `answer`, an exchange
  // (a JSON-RPC error one too) traced as the call's answer with `attrs`;
  // or, null, a call held until released (hang), traced as such.
  absl::StatusOr<Decision> CallAnsweredByRule(const std::shared_ptr<RunState>& run,
                                              const CallInfo& call,
                                              const v1::CompletionRequest& request,
                                              std::shared_ptr<v1::Exchange> answer,
                                              const TraceAttributes& attrs, Decision decision);
  absl::StatusOr<bool> RecordingOrUpstream(const std::shared_ptr<RunState>& run,
                                           const CallInfo& call,
                                           const v1::CompletionRequest& request, bool quiet,
                                           TraceAttributes* attrs, Decision* decision);
  absl::StatusOr<bool> Perform(const std::shared_ptr<RunState>& run, const CallInfo& call,
                               const v1::CompletionRequest& request, bool streamed,
                               const scenario::Step& step, AnswerSource origin, int overall_iteration,
                               TraceAttributes* attrs, Decision* decision);

  // Decide's steps (engine_decide.cc), one per source, in the order Decide
  // asks them. Each that can answer returns true when it has: `decision`
  // then says how, and the answer's trace event is emitted (a forwarded
  // request's comes with FinishForward). False: the next source is asked.
  // Errors end Decide with them. `attrs` holds what the answer's trace event
  // says of the request. None is called holding a lock: each takes the
  // run's (RunState::mu_) through RunState's methods, and no step takes
  // runs_mu_. None copies the request or an exchange.

  // At debug level: the request (iterations, phase, match key), why each
  // rule in `skipped` did not answer, and the rule that did.
  static void LogRequest(const RunState& run, const CallInfo& call,
                         const v1::CompletionRequest& request,
                         const scenario::Selection& selection,
                         const std::vector<scenario::RuleSkip>& skipped);
  // 1. The rule `selection` chose, if any: adds its name and use to `attrs`
  // and performs its step for this use (Perform).
  absl::StatusOr<bool> RuleStep(const std::shared_ptr<RunState>& run, const CallInfo& call,
                                const v1::CompletionRequest& request, bool streamed,
                                const scenario::Selection& selection, TraceAttributes* attrs,
                                Decision* decision);
  // 2. The playbook's next answer, when the scenario has a playbook (and,
  // with a `default` in the scenario, `has_default`, actions left). When it
  // has no answer for the request, sets `failure` to why and returns false.
  // Errors: FAILED_PRECONDITION once the run is ending.
  static absl::StatusOr<bool> PlaybookStep(const std::shared_ptr<RunState>& run,
                                           const CallInfo& call,
                                           const v1::CompletionRequest& request, bool streamed,
                                           bool has_default, const TraceAttributes& attrs,
                                           Decision* decision, absl::Status* failure);
  // 3. The recording, in replay and new runs that replay a session
  // (RunState::Match): false when the run replays none, or when nothing
  // recorded matches and the miss is left to another source (new mode
  // forwards it; with `another_answers`, a playbook failure or a default,
  // a replay's miss is quiet). Errors: a strict miss (NOT_FOUND, with the
  // report), FAILED_PRECONDITION once the run is ending. Logs at debug
  // level when `debug`.
  static absl::StatusOr<bool> RecordingStep(const std::shared_ptr<RunState>& run,
                                            const CallInfo& call,
                                            const v1::CompletionRequest& request, bool streamed,
                                            bool another_answers, bool debug,
                                            const TraceAttributes& attrs, Decision* decision);
  // 3. The upstream, in every mode but replay: a scripted disconnect drops
  // the connection before it is asked; otherwise a ForwardTicket carrying
  // `attrs` (moved out). False in replay. Errors as NewTicket's.
  absl::StatusOr<bool> UpstreamStep(const std::shared_ptr<RunState>& run, const CallInfo& call,
                                    const v1::CompletionRequest& request, bool streamed,
                                    bool debug, TraceAttributes* attrs, Decision* decision);
  // 4. The scenario's `default`, if any: performs its step for its next
  // use in the run (Perform).
  absl::StatusOr<bool> DefaultStep(const std::shared_ptr<RunState>& run, const CallInfo& call,
                                   const v1::CompletionRequest& request, bool streamed,
                                   int overall_iteration, bool debug, TraceAttributes* attrs,
                                   Decision* decision);
  // 5. A miss, when nothing answered: a scripted disconnect drops the
  // connection (OK, `decision` says so); otherwise the miss is counted and
  // traced (RunState::BareMiss, with why: `playbook_failure` when not OK)
  // and returned, or, after a scripted delay, OK with `decision` a
  // MissAfterDelay. Errors: the miss (NOT_FOUND, with the report),
  // FAILED_PRECONDITION once the run is ending.
  static absl::Status MissStep(RunState& run, const CallInfo& call,
                               const v1::CompletionRequest& request, bool streamed,
                               const absl::Status& playbook_failure, bool debug,
                               const TraceAttributes& attrs, Decision* decision);

  EngineOptions options_;

  absl::Mutex runs_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<RunState>> runs_ ABSL_GUARDED_BY(runs_mu_);
  std::string default_run_ ABSL_GUARDED_BY(runs_mu_);

  // Closed sessions being replayed, shared by their runs.
  absl::Mutex cache_mu_;
  absl::flat_hash_map<std::string, std::weak_ptr<const matching::SessionIndex>> session_cache_
      ABSL_GUARDED_BY(cache_mu_);

  absl::Mutex id_mu_;
  uint64_t id_state_ ABSL_GUARDED_BY(id_mu_);
};

// Splits "name@N" into name and version (0 when absent). INVALID_ARGUMENT
// for a bad version.
absl::StatusOr<std::pair<std::string, int64_t>> ParseSessionRef(absl::string_view ref);

}  // namespace engine
}  // namespace understudy

#endif  // UNDERSTUDY_ENGINE_ENGINE_H_
