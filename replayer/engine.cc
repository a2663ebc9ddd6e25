#include "replayer/engine.h"
#include "replayer/run_state.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/log.h"
#include "base/scheduler.h"
#include "base/status_macros.h"
#include "recorder/canonical.h"
#include "recorder/stream.h"
#include "recorder/validate.h"
#include "replayer/miss_report.h"
#include "replayer/playbook.h"

namespace understudy {
namespace replayer {

using Attributes = TraceAttributes;

namespace {

constexpr absl::string_view kRunIdChars =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-";

absl::Status ValidateRunId(absl::string_view id) {
  if (id.empty() || id.size() > 128) {
    return absl::InvalidArgumentError(
        absl::StrCat("run_id: must be 1 to 128 characters, got ", id.size()));
  }
  size_t bad = id.find_first_not_of(kRunIdChars);
  if (bad != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run_id: character ", bad + 1, " is not allowed (use letters, digits and ._:-)"));
  }
  return absl::OkStatus();
}

const char* ModeName(v1::RunMode mode) {
  switch (mode) {
    case v1::RUN_MODE_RECORD:
      return "record";
    case v1::RUN_MODE_REPLAY:
      return "replay";
    case v1::RUN_MODE_PASSTHROUGH:
      return "passthrough";
    case v1::RUN_MODE_ONCE:
      return "once";
    case v1::RUN_MODE_NEW:
      return "new";
    default:
      return "unspecified";
  }
}

// The script of runs without a scenario: no rules, nothing to extract.
const std::shared_ptr<const Script>& EmptyScript() {
  static const auto* empty = new std::shared_ptr<const Script>(*Script::FromScenario(Scenario()));
  return *empty;
}

void CollectFromSession(const Action& action, std::vector<const FromSessionAction*>* out) {
  if (const auto* a = std::get_if<FromSessionAction>(&action.value)) {
    out->push_back(a);
  } else if (const auto* a = std::get_if<FailThenSucceedAction>(&action.value)) {
    CollectFromSession(*a->then, out);
  } else if (const auto* a = std::get_if<SequenceAction>(&action.value)) {
    for (const Action& step : a->steps) CollectFromSession(step, out);
  }
}

// Every from_session action of a scenario, in file order.
std::vector<const FromSessionAction*> FromSessionActions(const Scenario& scenario) {
  std::vector<const FromSessionAction*> out;
  for (const Rule& rule : scenario.rules) CollectFromSession(rule.action, &out);
  if (scenario.default_action.has_value()) CollectFromSession(*scenario.default_action, &out);
  return out;
}

}  // namespace


absl::StatusOr<std::pair<std::string, int64_t>> ParseSessionRef(absl::string_view ref) {
  size_t at = ref.rfind('@');
  if (at == absl::string_view::npos) return std::make_pair(std::string(ref), int64_t{0});
  int64_t version = 0;
  if (!absl::SimpleAtoi(ref.substr(at + 1), &version) || version <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "session: \"", absl::CHexEscape(ref.substr(0, 300)),
        "\" has a bad version after '@' (expected NAME or NAME@N with N >= 1)"));
  }
  return std::make_pair(std::string(ref.substr(0, at)), version);
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(EngineOptions options) {
  if (options.store == nullptr) return absl::InvalidArgumentError("engine: store is required");
  if (options.clock == nullptr) options.clock = Clock::Real();
  if (options.upstream != nullptr) options.has_upstream = true;
  return std::unique_ptr<Engine>(new Engine(std::move(options)));
}

Engine::Engine(EngineOptions options) : options_(std::move(options)) {
  std::random_device rd;
  id_state_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

Engine::~Engine() = default;

std::string Engine::NewRunId() {
  if (options_.new_run_id) return options_.new_run_id();
  absl::MutexLock lock(&id_mu_);
  // splitmix64: a well-mixed sequence from one random seed.
  uint64_t z = (id_state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return absl::StrFormat("run-%016x", z);
}

absl::StatusOr<int64_t> Engine::LatestRecordedVersion(const std::string& name) {
  US_ASSIGN_OR_RETURN(std::vector<v1::Session> versions, options_.store->ListSessions(name));
  int64_t latest = 0;
  int64_t latest_recorded = 0;
  for (const v1::Session& s : versions) {
    if (s.name() != name) continue;  // a longer name with this prefix
    latest = std::max(latest, s.version());
    if (s.exchange_count() > 0) latest_recorded = std::max(latest_recorded, s.version());
  }
  if (latest == 0) {
    return absl::NotFoundError(absl::StrCat("session \"", name, "\" not found"));
  }
  return latest_recorded != 0 ? latest_recorded : latest;
}

absl::StatusOr<std::shared_ptr<const SessionIndex>> Engine::LoadSession(
    const std::string& name, int64_t version,
    const std::shared_ptr<const MatchNormalizer>& normalizer) {
  US_ASSIGN_OR_RETURN(v1::Session session, options_.store->GetSession(name, version));
  // Indexes differ by normalizer: a scenario's own matching options make
  // their own.
  const std::string key = absl::StrCat(session.name(), "@", session.version(), "#",
                                       reinterpret_cast<uintptr_t>(normalizer.get()));
  const bool cacheable = session.state() == v1::SESSION_STATE_CLOSED;
  if (cacheable) {
    absl::MutexLock lock(&cache_mu_);
    auto it = session_cache_.find(key);
    if (it != session_cache_.end()) {
      if (auto index = it->second.lock()) return index;
    }
  }
  US_ASSIGN_OR_RETURN(std::vector<v1::Exchange> exchanges,
                      options_.store->LoadExchanges(session.name(), session.version()));
  std::shared_ptr<const SessionIndex> index =
      SessionIndex::Build(std::move(session), std::move(exchanges), normalizer);
  if (cacheable) {
    absl::MutexLock lock(&cache_mu_);
    session_cache_[key] = index;
  }
  return index;
}

absl::StatusOr<v1::Run> Engine::StartRun(const v1::StartRunRequest& request) {
  const v1::RunMode requested = request.mode();
  if (requested == v1::RUN_MODE_UNSPECIFIED || !v1::RunMode_IsValid(requested)) {
    return absl::InvalidArgumentError(
        "mode: required, one of record, replay, passthrough, once, new");
  }
  std::string id = request.run_id();
  if (id.empty()) {
    id = NewRunId();
  } else {
    US_RETURN_IF_ERROR(ValidateRunId(id));
  }
  if (requested != v1::RUN_MODE_REPLAY && !options_.has_upstream) {
    return absl::FailedPreconditionError(absl::StrCat(
        ModeName(requested),
        " mode needs an upstream model or tool server: start the server with --upstream "
        "grpc://HOST:PORT, "
        "--upstream openai=URL, --upstream anthropic=URL or --mcp-upstream NAME=URL"));
  }
  // The run's scenario: its own, else the server's, else an empty one (so
  // every run counts iterations and tool calls the same way).
  std::shared_ptr<const Script> script = options_.scenario;
  if (!request.scenario().empty() || !request.scenario_text().empty()) {
    if (!request.scenario().empty() && !request.scenario_text().empty()) {
      return absl::InvalidArgumentError("scenario, scenario_text: give at most one");
    }
    if (request.scenario_text().size() > kMaxScenarioBytes) {
      return absl::InvalidArgumentError(absl::StrCat("scenario_text: ", request.scenario_text().size(),
                                                     " bytes; the limit is ", kMaxScenarioBytes));
    }
    absl::StatusOr<std::shared_ptr<const Script>> loaded =
        Script::Load(request.scenario(), request.scenario_text(),
                     ScenarioFiles::Under(options_.scenario_dir));
    if (!loaded.ok()) {
      return absl::Status(loaded.status().code(),
                          absl::StrCat("scenario: ", loaded.status().message()));
    }
    script = *std::move(loaded);
  }
  const bool scripted = script != nullptr;
  if (script == nullptr) script = EmptyScript();
  if (requested != v1::RUN_MODE_PASSTHROUGH && request.session().empty() &&
      !(requested == v1::RUN_MODE_REPLAY && scripted)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "session: required for ", ModeName(requested), " mode",
        requested == v1::RUN_MODE_REPLAY ? " (or a scenario, whose rules answer)" : ""));
  }
  const MatchingOptions& matching = script->scenario().matching;
  const std::shared_ptr<const MatchNormalizer> normalizer =
      matching.ignore_paths.empty() && matching.normalizers.empty() ? options_.normalizer
                                                                    : matching.normalizer;
  {
    absl::ReaderMutexLock lock(&runs_mu_);
    if (runs_.contains(id)) {
      return absl::AlreadyExistsError(absl::StrCat("run \"", id, "\" is already active"));
    }
    if (static_cast<int>(runs_.size()) >= options_.max_active_runs) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "too many active runs (", runs_.size(), "); end finished runs with EndRun"));
    }
  }
  if (options_.store->GetRun(id).ok()) {
    return absl::AlreadyExistsError(absl::StrCat("run \"", id, "\" already exists in the store"));
  }

  // once: record when the session has no recording yet, else replay.
  v1::RunMode mode = requested;
  if (mode == v1::RUN_MODE_ONCE) {
    US_ASSIGN_OR_RETURN(auto ref, ParseSessionRef(request.session()));
    absl::StatusOr<v1::Session> existing = options_.store->GetSession(ref.first, ref.second);
    if (!existing.ok() && !absl::IsNotFound(existing.status())) return existing.status();
    const bool recorded = existing.ok() && existing->exchange_count() > 0;
    if (!recorded && ref.second != 0) {
      return absl::NotFoundError(absl::StrCat("session \"", request.session(),
                                              "\" has no recording to replay"));
    }
    mode = recorded ? v1::RUN_MODE_REPLAY : v1::RUN_MODE_RECORD;
  }

  v1::Run run;
  run.set_id(id);
  run.set_mode(mode);
  run.set_strict(mode == v1::RUN_MODE_NEW || requested == v1::RUN_MODE_ONCE
                     ? true
                     : (request.has_strict() ? request.strict() : matching.strict.value_or(true)));
  if (scripted) run.set_scenario(script->label());
  run.set_repeat(mode == v1::RUN_MODE_REPLAY && request.repeat());
  run.set_state(v1::RUN_STATE_ACTIVE);
  run.set_started_at_micros(options_.clock->NowMicros());
  std::shared_ptr<const SessionIndex> index;
  if (!request.session().empty()) {
    US_ASSIGN_OR_RETURN(auto ref, ParseSessionRef(request.session()));
    if (mode == v1::RUN_MODE_RECORD) {
      if (ref.second != 0) {
        return absl::InvalidArgumentError(
            "session: record mode makes a new version; name the session without @N");
      }
      US_ASSIGN_OR_RETURN(v1::Session session, options_.store->CreateSessionVersion(ref.first));
      run.set_session(session.name());
      run.set_session_version(session.version());
    } else if (mode == v1::RUN_MODE_REPLAY || mode == v1::RUN_MODE_NEW) {
      if (ref.second == 0) {
        US_ASSIGN_OR_RETURN(ref.second, LatestRecordedVersion(ref.first));
      }
      US_ASSIGN_OR_RETURN(index, LoadSession(ref.first, ref.second, normalizer));
      run.set_session(index->session().name());
      run.set_session_version(index->session().version());
    } else {
      run.set_session(ref.first);
    }
  }
  // Sessions that from_session actions serve: loaded now, so answering
  // never reads the disk.
  absl::flat_hash_map<std::string, RunState::SourceSession> sources;
  for (const FromSessionAction* action : FromSessionActions(script->scenario())) {
    if (sources.contains(action->session)) continue;
    absl::StatusOr<std::pair<std::string, int64_t>> ref = ParseSessionRef(action->session);
    absl::StatusOr<std::shared_ptr<const SessionIndex>> source =
        ref.ok() ? LoadSession(ref->first, ref->second, normalizer) : ref.status();
    if (!source.ok()) {
      return absl::Status(source.status().code(),
                          absl::StrCat("scenario from_session \"", action->session,
                                       "\": ", source.status().message()));
    }
    RunState::SourceSession& slot = sources[action->session];
    slot.served.assign((*source)->size(), 0);
    slot.index = *std::move(source);
  }
  US_RETURN_IF_ERROR(options_.store->SaveRun(run));

  auto state = std::make_shared<RunState>(run, std::move(index), std::move(script),
                                          std::move(sources), options_.store, options_.clock,
                                          options_.max_miss_reports_per_run);
  v1::TraceEvent started;
  started.set_kind("run_started");
  auto& attrs = *started.mutable_attributes();
  attrs["understudy.run.mode"] = ModeName(mode);
  if (requested != mode) attrs["understudy.run.requested_mode"] = ModeName(requested);
  attrs["understudy.run.strict"] = run.strict() ? "true" : "false";
  if (run.repeat()) attrs["understudy.run.repeat"] = "true";
  if (!run.scenario().empty()) attrs["understudy.scenario.name"] = run.scenario();
  if (!run.session().empty()) {
    attrs["understudy.session.name"] = run.session();
    attrs["understudy.session.version"] = absl::StrCat(run.session_version());
  }
  state->Emit(std::move(started));
  {
    absl::MutexLock lock(&runs_mu_);
    if (!runs_.emplace(id, state).second) {
      return absl::AlreadyExistsError(absl::StrCat("run \"", id, "\" is already active"));
    }
  }
  return run;
}

absl::StatusOr<v1::RunSummary> Engine::EndRun(absl::string_view run_id) {
  std::shared_ptr<RunState> state;
  {
    absl::ReaderMutexLock lock(&runs_mu_);
    auto it = runs_.find(run_id);
    if (it != runs_.end()) state = it->second;
  }
  if (state == nullptr) {
    absl::StatusOr<v1::RunSummary> stored = options_.store->GetRunSummary(run_id);
    if (stored.ok() || !absl::IsNotFound(stored.status())) return stored;
    return absl::NotFoundError(absl::StrCat("unknown run \"", absl::CHexEscape(run_id), "\""));
  }
  v1::RunSummary summary = state->BeginEnd(options_.end_run_drain_timeout);
  if (state->mode() == v1::RUN_MODE_RECORD) {
    if (summary.run().recorded() == 0) {
      // Nothing was recorded: an empty version would only shadow the last
      // real one for every replay of the session's latest version.
      US_RETURN_IF_ERROR(
          options_.store->DeleteSession(state->session(), state->session_version()).status());
      Log(LogLevel::kInfo, "empty_recording_dropped",
          {{"run", state->id()},
           {"session", absl::StrCat(state->session(), "@", state->session_version())}});
    } else {
      US_RETURN_IF_ERROR(
          options_.store->CloseSession(state->session(), state->session_version()));
    }
  }
  if (int64_t v = state->new_mode_version(); v != 0) {
    US_RETURN_IF_ERROR(options_.store->CloseSession(state->session(), v));
  }
  summary = state->Finish(std::move(summary));
  US_RETURN_IF_ERROR(options_.store->Flush());
  US_RETURN_IF_ERROR(options_.store->SaveRunSummary(summary));
  {
    absl::MutexLock lock(&runs_mu_);
    runs_.erase(state->id());
  }
  return summary;
}

absl::StatusOr<v1::Run> Engine::GetRun(absl::string_view run_id) {
  {
    absl::ReaderMutexLock lock(&runs_mu_);
    auto it = runs_.find(run_id);
    if (it != runs_.end()) return it->second->Snapshot();
  }
  absl::StatusOr<v1::Run> run = options_.store->GetRun(run_id);
  if (absl::IsNotFound(run.status())) {
    return absl::NotFoundError(absl::StrCat("unknown run \"", absl::CHexEscape(run_id), "\""));
  }
  return run;
}

absl::Status Engine::EndAllRuns() {
  std::vector<std::string> ids;
  {
    absl::ReaderMutexLock lock(&runs_mu_);
    for (const auto& [id, state] : runs_) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  absl::Status first;
  for (const std::string& id : ids) {
    absl::Status s = EndRun(id).status();
    if (first.ok() && !s.ok() && !absl::IsNotFound(s)) first = s;
  }
  return first;
}

absl::StatusOr<std::vector<std::string>> Engine::RunModels(const CallInfo& call) {
  US_ASSIGN_OR_RETURN(std::shared_ptr<RunState> run, FindActiveRun(call));
  std::vector<std::string> models;
  if (run->index_ == nullptr) return models;
  for (size_t i = 0; i < run->index_->size(); ++i) {
    const std::string& model = run->index_->exchange(i).request().model();
    if (!model.empty() && std::find(models.begin(), models.end(), model) == models.end()) {
      models.push_back(model);
    }
  }
  return models;
}

absl::Status Engine::RememberResponse(const CallInfo& call, std::string id, ChainLink link) {
  US_ASSIGN_OR_RETURN(std::shared_ptr<RunState> run, FindActiveRun(call));
  return run->responses().Remember(std::move(id), std::move(link));
}

absl::StatusOr<std::vector<v1::Message>> Engine::ResolveResponse(const CallInfo& call,
                                                                 absl::string_view id) {
  US_ASSIGN_OR_RETURN(std::shared_ptr<RunState> run, FindActiveRun(call));
  return run->responses().Resolve(id);
}

absl::StatusOr<std::string> Engine::ResponseBody(const CallInfo& call, absl::string_view id) {
  US_ASSIGN_OR_RETURN(std::shared_ptr<RunState> run, FindActiveRun(call));
  return run->responses().Body(id);
}

absl::StatusOr<std::pair<v1::RunMode, std::string>> Engine::ActiveRunMode(const CallInfo& call) {
  US_ASSIGN_OR_RETURN(std::shared_ptr<RunState> run, FindActiveRun(call));
  return std::make_pair(run->mode(), run->id());
}

void Engine::SetDefaultRun(std::string run_id) {
  absl::MutexLock lock(&runs_mu_);
  default_run_ = std::move(run_id);
}

absl::StatusOr<std::shared_ptr<RunState>> Engine::FindActiveRun(const CallInfo& call) {
  std::string id;
  {
    absl::ReaderMutexLock lock(&runs_mu_);
    const std::string& wanted = call.run.empty() ? default_run_ : call.run;
    auto it = runs_.find(wanted);
    if (it != runs_.end()) return it->second;
    id = wanted;
  }
  if (id.empty()) {
    return absl::InvalidArgumentError(
        "no run: set call metadata \"understudy-run\" (or the request's run field), or start "
        "the server with a default run (--mode, --session)");
  }
  // Off the hot path: tell an ended run from an unknown one.
  if (options_.store->GetRun(id).ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("run \"", absl::CHexEscape(id), "\" has ended; start a new run"));
  }
  return absl::NotFoundError(absl::StrCat("unknown run \"", absl::CHexEscape(id), "\""));
}

ForwardTicket::~ForwardTicket() {
  // Dropped unfinished: the caller went away before the upstream answered.
  if (!finished_ && run_ != nullptr) run_->EndForward(0, agent_, false, nullptr);
}

absl::StatusOr<std::unique_ptr<ForwardTicket>> Engine::NewTicket(
    const std::shared_ptr<RunState>& run, const CallInfo& call,
    const v1::CompletionRequest& request, bool streamed) {
  std::unique_ptr<ForwardTicket> ticket(new ForwardTicket());
  ticket->agent_ = call.agent;
  ticket->request_ = recorder::WithoutRouting(request);
  ticket->start_ = options_.clock->Now();
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

namespace {

const char* StepName(Step::Kind kind) {
  switch (kind) {
    case Step::Kind::kRespond:
      return "respond";
    case Step::Kind::kError:
      return "error";
    case Step::Kind::kDelay:
      return "delay";
    case Step::Kind::kHang:
      return "hang";
    case Step::Kind::kDisconnect:
      return "disconnect";
    case Step::Kind::kFromSession:
      return "from_session";
  }
  return "";
}

}  // namespace

// Performs one scripted step from `origin` ("rule" or "default"). True when
// the step answers; false when it only adds an effect (delay, disconnect)
// and the next source is to answer.
absl::StatusOr<bool> Engine::Perform(const std::shared_ptr<RunState>& run, const CallInfo& call,
                                     const v1::CompletionRequest& request, bool streamed,
                                     const Step& step, const char* origin, int overall_iteration,
                                     TraceAttributes* attrs, Decision* decision) {
  // Effects (delay, disconnect) let the next source answer: they are named
  // apart from the action that answers.
  const bool effect = step.kind == Step::Kind::kDelay || step.kind == Step::Kind::kDisconnect;
  attrs->emplace_back(effect ? "understudy.effect" : "understudy.action", StepName(step.kind));
  if (!step.path.empty()) {
    attrs->emplace_back(effect ? "understudy.effect.path" : "understudy.action.path", step.path);
  }
  switch (step.kind) {
    case Step::Kind::kDelay:
      decision->delay += absl::Milliseconds(step.delay->ms);
      attrs->emplace_back("understudy.delay_ms", absl::StrCat(step.delay->ms));
      return false;
    case Step::Kind::kDisconnect:
      decision->disconnect_after = step.disconnect->after_chunks;
      attrs->emplace_back("understudy.disconnect.after_chunks",
                          absl::StrCat(step.disconnect->after_chunks));
      attrs->emplace_back("error.type", "UNAVAILABLE");
      return false;
    case Step::Kind::kRespond: {
      auto exchange = std::make_shared<v1::Exchange>();
      *exchange->mutable_response() =
          RespondWith(*step.respond, request, absl::StrCat("understudy-", overall_iteration));
      if (streamed) {
        for (v1::CompletionChunk& chunk : ChunksFor(exchange->response())) {
          *exchange->add_chunks() = std::move(chunk);
        }
      }
      US_RETURN_IF_ERROR(run->Answered(ExchangeEvent(call.agent, request, &exchange->response(),
                                                     absl::OkStatus(), origin, 0, streamed,
                                                     *attrs)));
      run->ObserveAnswer(call.agent, exchange->response());
      decision->recorded = exchange.get();
      decision->keepalive = std::move(exchange);
      decision->source = origin;
      return true;
    }
    case Step::Kind::kError: {
      absl::Status status = ErrorStatusFor(*step.error);
      US_RETURN_IF_ERROR(run->Answered(
          ExchangeEvent(call.agent, request, nullptr, status, origin, 0, streamed, *attrs)));
      decision->error = std::move(status);
      decision->http_status = HttpStatusFor(*step.error);
      decision->retry_after_seconds = step.error->retry_after_seconds.value_or(-1);
      decision->source = origin;
      return true;
    }
    case Step::Kind::kHang: {
      attrs->emplace_back("error.type", "DEADLINE_EXCEEDED");
      US_RETURN_IF_ERROR(run->Answered(ExchangeEvent(call.agent, request, nullptr,
                                                     absl::OkStatus(), origin, 0, streamed,
                                                     *attrs)));
      decision->hang = run->NewHang(call.deadline);
      decision->source = origin;
      return true;
    }
    case Step::Kind::kFromSession: {
      std::shared_ptr<const void> keepalive;
      absl::StatusOr<const v1::Exchange*> served = run->FromSession(*step.from_session, &keepalive);
      if (!served.ok()) {
        // Counted and traced as a miss, with the reason.
        return run->BareMiss(call, request, std::string(served.status().message()));
      }
      const v1::Exchange* ex = *served;
      attrs->emplace_back("understudy.from_session", step.from_session->session);
      absl::Status status = ex->has_error() ? StatusFromRecorded(ex->error()) : absl::OkStatus();
      US_RETURN_IF_ERROR(run->Answered(ExchangeEvent(call.agent, request, &ex->response(), status,
                                                     origin, ex->seq(), streamed, *attrs)));
      run->ObserveAnswer(call.agent, ex->response());
      decision->recorded = ex;
      decision->keepalive = std::move(keepalive);
      decision->source = origin;
      return true;
    }
  }
  return false;
}

namespace {

// A short fingerprint of the request as matching sees it (canonical form,
// normalized like the run's recording when it replays one), for debug logs:
// the same key at record and at replay time means the same match key, and
// no prompt text reaches the log.
std::string MatchKeyForLog(const SessionIndex* index, const v1::CompletionRequest& request) {
  const std::string text = index != nullptr
                               ? SessionIndex::TextOf(index->CanonicalOf(request))
                               : recorder::CanonicalText(recorder::WithoutRouting(request));
  uint64_t hash = 1469598103934665603ull;  // FNV-1a, 64 bits
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return absl::StrFormat("%016x", hash);
}

// The first line of a miss report (the closest recording and how many
// fields differ); the differing values stay out of the log.
std::string FirstLine(absl::string_view text) {
  return std::string(text.substr(0, text.find('\n')));
}

}  // namespace

absl::StatusOr<Decision> Engine::Decide(const CallInfo& given,
                                        const v1::CompletionRequest& request, bool streamed) {
  US_RETURN_IF_ERROR(recorder::ValidateRequest(request));
  US_ASSIGN_OR_RETURN(std::shared_ptr<RunState> run, FindActiveRun(given));
  const Script& script = run->script();
  // Unmodified traffic names no agent: the scenario's `agents` may.
  std::optional<CallInfo> named;
  if (given.agent.empty() && !script.scenario().agents.empty()) {
    named = given;
    named->agent = script.AgentFor(request);
  }
  const CallInfo& call = named.has_value() ? *named : given;
  if (IsMcpRequest(request)) return DecideMcp(run, call, request);

  Decision decision;
  decision.speed = options_.speed;
  // At debug level: why each rule did not answer, the match key, where the
  // answer came from (docs/guide.md, "When a rule does not fire").
  const bool debug = LogEnabled(LogLevel::kDebug);
  std::vector<RuleSkip> skipped;
  const Selection selection =
      script.rules().Select(run->context(), request, call.agent, debug ? &skipped : nullptr);
  run->TraceRequest(call.agent, request, selection);
  if (debug) {
    Log(LogLevel::kDebug, "request",
        {{"run", run->id()},
         {"agent", call.agent},
         {"iteration", absl::StrCat(selection.overall_iteration)},
         {"agent_iteration", absl::StrCat(selection.agent_iteration)},
         {"previous_agent", selection.previous_agent.value_or("")},
         {"phase", selection.phase},
         {"key", MatchKeyForLog(run->index_.get(), request)}});
    for (const RuleSkip& skip : skipped) {
      Log(LogLevel::kDebug, "rule_not_matched",
          {{"run", run->id()}, {"rule", skip.rule}, {"reason", skip.reason}});
    }
    if (selection.rule != nullptr) {
      Log(LogLevel::kDebug, "rule_matched",
          {{"run", run->id()},
           {"rule", selection.rule->name},
           {"use", absl::StrCat(selection.rule_use)}});
    }
  }
  Attributes attrs;
  attrs.emplace_back("understudy.iteration", absl::StrCat(selection.overall_iteration));
  attrs.emplace_back("understudy.agent.iteration", absl::StrCat(selection.agent_iteration));
  if (selection.previous_agent.has_value()) {
    attrs.emplace_back("understudy.previous_agent", *selection.previous_agent);
  }
  if (!selection.phase.empty()) attrs.emplace_back("understudy.phase", selection.phase);

  // 1. Rules.
  if (selection.rule != nullptr) {
    attrs.emplace_back("understudy.rule.name", selection.rule->name);
    attrs.emplace_back("understudy.rule.use", absl::StrCat(selection.rule_use));
    const Step step = ResolveStep(selection.rule->action, selection.rule_use);
    US_ASSIGN_OR_RETURN(bool answered,
                        Perform(run, call, request, streamed, step, "rule",
                                selection.overall_iteration, &attrs, &decision));
    if (answered) return decision;
  }

  // 2. The playbook.
  absl::Status playbook_failure;
  const std::optional<Action>& fallback = script.scenario().default_action;
  PlaybookRun* playbook = run->playbook();
  // A finished playbook leaves later requests to the default, if any.
  if (playbook != nullptr && fallback.has_value() && playbook->remaining() == 0) {
    playbook = nullptr;
  }
  if (playbook != nullptr) {
    absl::StatusOr<v1::CompletionResponse> next = playbook->Next(request, run->context());
    if (next.ok()) {
      auto exchange = std::make_shared<v1::Exchange>();
      *exchange->mutable_response() = *std::move(next);
      if (streamed) {
        for (v1::CompletionChunk& chunk : ChunksFor(exchange->response())) {
          *exchange->add_chunks() = std::move(chunk);
        }
      }
      US_RETURN_IF_ERROR(run->Answered(ExchangeEvent(call.agent, request, &exchange->response(),
                                                     absl::OkStatus(), "playbook", 0, streamed,
                                                     attrs)));
      run->ObserveAnswer(call.agent, exchange->response());
      decision.recorded = exchange.get();
      decision.keepalive = std::move(exchange);
      decision.source = "playbook";
      return decision;
    }
    playbook_failure = next.status();
  }

  // 3. The recording, or the upstream.
  const v1::RunMode mode = run->mode();
  if ((mode == v1::RUN_MODE_REPLAY || mode == v1::RUN_MODE_NEW) && run->has_index()) {
    const bool forward_misses = mode == v1::RUN_MODE_NEW;
    absl::StatusOr<const v1::Exchange*> matched =
        run->Match(call, request, streamed, forward_misses,
                   /*quiet=*/!forward_misses && (fallback.has_value() || !playbook_failure.ok()),
                   attrs);
    if (debug) {
      if (!matched.ok()) {
        Log(LogLevel::kDebug, "miss",
            {{"run", run->id()}, {"report", FirstLine(matched.status().message())}});
      } else if (*matched != nullptr) {
        Log(LogLevel::kDebug, "answer",
            {{"run", run->id()},
             {"source", "recording"},
             {"exchange", absl::StrCat((*matched)->seq())}});
      } else {
        Log(LogLevel::kDebug, "no_recording", {{"run", run->id()}});
      }
    }
    US_RETURN_IF_ERROR(matched.status());
    const v1::Exchange* ex = *matched;
    if (ex != nullptr) {
      run->ObserveAnswer(call.agent, ex->response());
      decision.keepalive = run->index_;
      decision.recorded = ex;
      if (streamed && ex->chunks_size() == 0 && !ex->has_error()) {
        decision.answer_chunk = &run->index_->AnswerAsChunk(static_cast<size_t>(ex->seq() - 1));
      }
      decision.source = "recording";
      return decision;
    }
  }
  if (mode != v1::RUN_MODE_REPLAY && decision.disconnect_after >= 0) {
    // Nothing is forwarded: the connection drops before the upstream is asked.
    US_RETURN_IF_ERROR(run->Answered(
        ExchangeEvent(call.agent, request, nullptr, DisconnectStatus(), "rule", 0, streamed, attrs)));
    decision.source = "rule";
    return decision;
  }
  if (mode != v1::RUN_MODE_REPLAY) {
    if (debug) Log(LogLevel::kDebug, "answer", {{"run", run->id()}, {"source", "upstream"}});
    US_ASSIGN_OR_RETURN(decision.forward, NewTicket(run, call, request, streamed));
    decision.forward->extra_ = std::move(attrs);
    decision.source = "upstream";
    return decision;
  }

  // 4. The scenario's default.
  if (fallback.has_value()) {
    if (debug) Log(LogLevel::kDebug, "answer", {{"run", run->id()}, {"source", "default"}});
    const Step step = ResolveStep(*fallback, run->NextDefaultUse());
    US_ASSIGN_OR_RETURN(bool answered,
                        Perform(run, call, request, streamed, step, "default",
                                selection.overall_iteration, &attrs, &decision));
    if (answered) return decision;
  }

  // 5. A miss; a scripted disconnect still drops the connection, and a
  // scripted delay comes first.
  if (decision.disconnect_after >= 0) {
    US_RETURN_IF_ERROR(run->Answered(
        ExchangeEvent(call.agent, request, nullptr, DisconnectStatus(), "rule", 0, streamed, attrs)));
    decision.source = "rule";
    return decision;
  }
  absl::Status miss =
      !playbook_failure.ok()
          ? run->BareMiss(call, request, std::string(playbook_failure.message()))
          : run->BareMiss(
                call, request,
                absl::StrCat("no rule, playbook action", run->has_index() ? ", recording" : "",
                             " or default answers this request",
                             call.agent.empty() ? "" : absl::StrCat(" (agent \"", call.agent, "\")"),
                             run->has_index() ? "" : "; the run replays no session"));
  if (debug) {
    Log(LogLevel::kDebug, "miss", {{"run", run->id()}, {"report", FirstLine(miss.message())}});
  }
  if (decision.delay <= absl::ZeroDuration() || absl::IsFailedPrecondition(miss)) return miss;
  decision.error = std::move(miss);
  return decision;
}

absl::StatusOr<std::pair<std::shared_ptr<const Script>, std::string>> Engine::RunScript(
    const CallInfo& call) {
  US_ASSIGN_OR_RETURN(std::shared_ptr<RunState> run, FindActiveRun(call));
  if (run->script_.get() == EmptyScript().get()) {
    return std::make_pair(std::shared_ptr<const Script>(), run->id());
  }
  return std::make_pair(run->script_, run->id());
}

absl::StatusOr<v1::TraceEvent> Engine::Emit(const CallInfo& call, v1::TraceEvent event) {
  US_ASSIGN_OR_RETURN(std::shared_ptr<RunState> run, FindActiveRun(call));
  return run->EmitAndReturn(std::move(event));
}

EventSubscription::~EventSubscription() {
  if (std::shared_ptr<RunState> run = run_.lock()) run->Unsubscribe(id_);
}

absl::StatusOr<std::unique_ptr<EventSubscription>> Engine::Subscribe(
    absl::string_view run_id, std::function<void(const v1::TraceEvent&)> on_event,
    std::function<void()> on_end) {
  CallInfo call;
  call.run = std::string(run_id);
  US_ASSIGN_OR_RETURN(std::shared_ptr<RunState> run, FindActiveRun(call));
  std::unique_ptr<EventSubscription> subscription(new EventSubscription());
  US_ASSIGN_OR_RETURN(subscription->id_,
                      run->Subscribe({std::move(on_event), std::move(on_end)},
                                     &subscription->first_seq_));
  subscription->run_ = run;
  return subscription;
}

void Engine::ReleaseHangs() {
  std::vector<std::shared_ptr<RunState>> runs;
  {
    absl::ReaderMutexLock lock(&runs_mu_);
    for (const auto& [id, state] : runs_) runs.push_back(state);
  }
  for (const auto& run : runs) {
    run->ReleaseHangs(absl::UnavailableError("the server is shutting down"));
  }
}

void Engine::FinishForward(std::unique_ptr<ForwardTicket> ticket, v1::Exchange exchange,
                           absl::Status status, std::function<void(absl::Status)> done) {
  ticket->finished_ = true;
  std::shared_ptr<RunState> run = std::move(ticket->run_);
  Clock* clock = options_.clock;
  exchange.set_agent(ticket->agent_);
  *exchange.mutable_request() = std::move(ticket->request_);
  exchange.set_streamed(ticket->streamed_);
  exchange.set_latency_micros(absl::ToInt64Microseconds(clock->Now() - ticket->start_));
  exchange.set_recorded_at_micros(absl::ToUnixMicros(ticket->start_));
  // An adapter may set the error itself (an MCP server's JSON-RPC error,
  // a recorded answer with status OK).
  if (!status.ok() && !exchange.has_error()) {
    exchange.mutable_error()->set_code(static_cast<int>(status.code()));
    exchange.mutable_error()->set_message(std::string(status.message()));
  }
  const absl::Status traced =
      status.ok() && exchange.has_error() ? StatusFromRecorded(exchange.error()) : status;
  const bool record = !ticket->record_session_.empty() && !NeverRecorded(status);
  if (IsMcpRequest(exchange.request())) {
    // A tool call's latency is part of its trace (the model's is the
    // exchange's own).
    ticket->extra_.emplace_back("understudy.latency_ms",
                                absl::StrFormat("%.3f", exchange.latency_micros() / 1000.0));
  }
  if (status.ok() && !IsMcpRequest(exchange.request())) {
    run->ObserveAnswer(exchange.agent(), exchange.response());
  }
  if (!record) {
    v1::TraceEvent event =
        ExchangeEvent(exchange.agent(), exchange.request(),
                      exchange.has_response() ? &exchange.response() : nullptr, traced, "upstream",
                      0, exchange.streamed(), ticket->extra_);
    run->EndForward(0, exchange.agent(), status.ok(), &event);
    done(status);
    return;
  }
  auto extra = std::make_shared<Attributes>(std::move(ticket->extra_));
  auto kept = std::make_shared<v1::Exchange>(std::move(exchange));
  std::vector<v1::Exchange> batch;
  batch.push_back(*kept);
  options_.store->AppendExchanges(
      ticket->record_session_, ticket->record_version_, std::move(batch),
      [run, kept, extra, status, traced, done = std::move(done)](absl::StatusOr<store::AppendResult> r) {
        if (!r.ok()) {
          run->EndForward(0, kept->agent(), false, nullptr);
          done(absl::Status(r.status().code(),
                            absl::StrCat("recording failed: ", r.status().message())));
          return;
        }
        v1::TraceEvent event =
            ExchangeEvent(kept->agent(), kept->request(),
                          kept->has_response() ? &kept->response() : nullptr, traced, "upstream",
                          r->first_seq, kept->streamed(), *extra);
        run->EndForward(r->first_seq, kept->agent(), status.ok(), &event);
        if (LogEnabled(LogLevel::kDebug)) {
          Log(LogLevel::kDebug, "recorded",
              {{"run", run->id()},
               {"exchange", absl::StrCat(r->first_seq)},
               {"agent", kept->agent()},
               {"key", MatchKeyForLog(nullptr, kept->request())}});
        }
        done(status);
      });
}

namespace {

recorder::UpstreamCall UpstreamCallFor(const CallInfo& call) {
  recorder::UpstreamCall out;
  out.agent = call.agent;
  out.headers = call.forward_headers;
  out.deadline = call.deadline;
  return out;
}

absl::Status NoGrpcUpstream() {
  return absl::FailedPreconditionError(
      "no gRPC upstream to forward to: start the server with --upstream grpc://HOST:PORT");
}

void RunAfter(absl::Duration delay, std::function<void()> f) {
  if (delay <= absl::ZeroDuration()) return f();
  Scheduler::Shared()->RunAt(absl::Now() + delay, std::move(f));
}

}  // namespace

void Engine::Complete(const CallInfo& call, const v1::CompletionRequest& request,
                      std::function<void(absl::StatusOr<ResponsePtr>)> done) {
  absl::StatusOr<Decision> decided = Decide(call, request, /*streamed=*/false);
  if (!decided.ok()) return done(decided.status());
  auto decision = std::make_shared<Decision>(*std::move(decided));
  RunAfter(decision->delay, [this, call, decision, done = std::move(done)]() mutable {
    if (decision->error.has_value()) return done(*decision->error);
    if (decision->hang != nullptr) {
      return decision->hang->Wait([done = std::move(done)](absl::Status s) { done(s); });
    }
    if (decision->disconnect_after >= 0) return done(DisconnectStatus());
    if (const v1::Exchange* ex = decision->recorded) {
      if (ex->has_error()) return done(StatusFromRecorded(ex->error()));
      // Alias into the immutable recording, which the keepalive holds.
      return done(ResponsePtr(decision->keepalive, &ex->response()));
    }
    if (options_.upstream == nullptr) return done(NoGrpcUpstream());
    // std::function needs a copyable callable: share the ticket's holder.
    auto ticket = std::make_shared<std::unique_ptr<ForwardTicket>>(std::move(decision->forward));
    const v1::CompletionRequest& forwarded = (*ticket)->request();
    options_.upstream->Complete(
        UpstreamCallFor(call), forwarded,
        [this, ticket, done = std::move(done)](absl::StatusOr<v1::CompletionResponse> r) mutable {
          v1::Exchange exchange;
          if (r.ok()) *exchange.mutable_response() = *r;
          auto response = r.ok() ? std::make_shared<const v1::CompletionResponse>(std::move(*r))
                                 : nullptr;
          // The engine outlives every forwarded call: EndRun waits for them.
          FinishForward(std::move(*ticket), std::move(exchange), r.status(),
                        [response, done = std::move(done)](absl::Status s) {
                          if (s.ok()) {
                            done(ResponsePtr(response));
                          } else {
                            done(s);
                          }
                        });
        });
  });
}

void Engine::StreamComplete(const CallInfo& call, const v1::CompletionRequest& request,
                            std::shared_ptr<ChunkSink> sink) {
  absl::StatusOr<Decision> decided = Decide(call, request, /*streamed=*/true);
  if (!decided.ok()) return sink->OnFinish(decided.status());
  auto decision = std::make_shared<Decision>(*std::move(decided));
  RunAfter(decision->delay, [this, call, decision, sink] {
    if (decision->error.has_value()) return sink->OnFinish(*decision->error);
    if (decision->hang != nullptr) {
      return decision->hang->Wait([sink](absl::Status s) { sink->OnFinish(s); });
    }
    const int64_t limit = decision->disconnect_after;
    if (const v1::Exchange* ex = decision->recorded) {
      const absl::Time start = options_.clock->Now();
      const double speed = decision->speed;
      int64_t sent = 0;
      if (ex->chunks_size() > 0) {
        for (const v1::CompletionChunk& chunk : ex->chunks()) {
          if (limit >= 0 && sent >= limit) break;
          absl::Time when =
              speed > 0 ? start + absl::Microseconds(static_cast<int64_t>(
                                      static_cast<double>(chunk.offset_micros()) / speed))
                        : absl::InfinitePast();
          sink->OnChunk(ChunkPtr(decision->keepalive, &chunk), when);
          ++sent;
        }
      } else if (!ex->has_error() && limit != 0) {
        sink->OnChunk(decision->answer_chunk != nullptr
                          ? ChunkPtr(decision->keepalive, decision->answer_chunk)
                          : std::make_shared<const v1::CompletionChunk>(
                                recorder::ChunkFromResponse(ex->response())),
                      absl::InfinitePast());
      }
      if (limit >= 0) return sink->OnFinish(DisconnectStatus());
      return sink->OnFinish(ex->has_error() ? StatusFromRecorded(ex->error()) : absl::OkStatus());
    }
    if (limit >= 0) return sink->OnFinish(DisconnectStatus());
    if (options_.upstream == nullptr) return sink->OnFinish(NoGrpcUpstream());
    auto ticket = std::make_shared<std::unique_ptr<ForwardTicket>>(std::move(decision->forward));
    // Chunks as they arrive, with their offsets: what the caller gets is what
    // is stored, so a replay gives the same bytes. The latest chunk is held
    // back until the next one comes, and the last one until the exchange is
    // committed: a caller that has the whole answer knows it is recorded
    // (kill -9 between the two would otherwise lose an answer the client
    // already had).
    auto exchange = std::make_shared<v1::Exchange>();
    auto held = std::make_shared<ChunkPtr>();
    // A caller that goes away, or stops reading while the upstream keeps
    // sending, cancels the upstream call; nothing is recorded then.
    recorder::UpstreamCall upstream_call = UpstreamCallFor(call);
    upstream_call.cancel = std::make_shared<recorder::UpstreamCancel>();
    auto cut = std::make_shared<absl::Status>();  // why the relay was cut
    const absl::Time start = (*ticket)->start();
    Clock* clock = options_.clock;
    const size_t max_backlog = options_.max_relay_backlog_bytes;
    std::shared_ptr<recorder::UpstreamCancel> cancel = upstream_call.cancel;
    options_.upstream->StreamComplete(
        upstream_call, (*ticket)->request(),
        [exchange, held, sink, start, clock, cancel, cut, max_backlog,
         run = (*ticket)->run_](const v1::CompletionChunk& chunk) {
          if (!cut->ok()) return;
          v1::CompletionChunk* kept = exchange->add_chunks();
          *kept = chunk;
          kept->set_offset_micros(absl::ToInt64Microseconds(clock->Now() - start));
          if (*held != nullptr) sink->OnChunk(std::move(*held), absl::InfinitePast());
          *held = std::make_shared<const v1::CompletionChunk>(*kept);
          if (sink->cancelled()) {
            *cut = absl::CancelledError("the client went away");
            cancel->Cancel();
          } else if (const size_t pending = sink->pending_bytes(); pending > max_backlog) {
            *cut = absl::ResourceExhaustedError(absl::StrCat(
                "the client is not reading: ", pending, " bytes of this answer wait for it (at most ",
                max_backlog, "); the upstream call was cancelled and nothing was recorded"));
            Log(LogLevel::kWarning, "relay_cut",
                {{"run", run->id()}, {"pending_bytes", absl::StrCat(pending)}});
            cancel->Cancel();
          }
        },
        [this, ticket, exchange, held, sink, cut](absl::Status status) {
          *exchange->mutable_response() = recorder::AssembleResponse(exchange->chunks());
          if (!cut->ok()) {
            // Cut here: not recorded (a cancelled call never is), and the
            // caller learns why.
            held->reset();
            FinishForward(std::move(*ticket), std::move(*exchange), absl::CancelledError("cut"),
                          [sink, cut](absl::Status) { sink->OnFinish(*cut); });
            return;
          }
          FinishForward(std::move(*ticket), std::move(*exchange), status,
                        [held, sink, status](absl::Status committed) {
                          // Only a committed (or deliberately unrecorded)
                          // answer is completed; a failed commit ends the
                          // stream with its error instead of the last chunk.
                          const bool recording_failed = committed != status;
                          if (*held != nullptr && !recording_failed) {
                            sink->OnChunk(std::move(*held), absl::InfinitePast());
                          }
                          sink->OnFinish(committed);
                        });
        });
  });
}

}  // namespace replayer
}  // namespace understudy
