// The engine's run table (the contract is engine.h): creating the engine,
// starting and ending runs with the sessions they load, and finding the
// active run a call names, with what it holds (models, mode, scenario,
// Responses chains).
#include "engine/engine.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "engine/run_state.h"
#include "trace/vocabulary.h"

namespace understudy {
namespace engine {

absl::string_view SourceName(AnswerSource source) {
  switch (source) {
    case AnswerSource::kRecording:
      return "recording";
    case AnswerSource::kClosestRecording:
      return "closest_recording";
    case AnswerSource::kPlaybook:
      return "playbook";
    case AnswerSource::kMock:
      return "mock_tools";
    case AnswerSource::kRule:
      return "rule";
    case AnswerSource::kDefault:
      return "default";
    case AnswerSource::kUpstream:
      return "upstream";
  }
  return "";
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


// The script of runs without a scenario: no rules, nothing to extract.
const std::shared_ptr<const scenario::Script>& EmptyScript() {
  static const auto* empty = new std::shared_ptr<const scenario::Script>(*scenario::Script::FromScenario(scenario::Scenario()));
  return *empty;
}

void CollectFromSession(const scenario::Action& action, std::vector<const scenario::FromSessionAction*>* out) {
  if (const auto* a = std::get_if<scenario::FromSessionAction>(&action.value)) {
    out->push_back(a);
  } else if (const auto* a = std::get_if<scenario::FailThenSucceedAction>(&action.value)) {
    CollectFromSession(*a->then, out);
  } else if (const auto* a = std::get_if<scenario::SequenceAction>(&action.value)) {
    for (const scenario::Action& step : a->steps) CollectFromSession(step, out);
  }
}

// Every from_session action of a scenario, in file order.
std::vector<const scenario::FromSessionAction*> FromSessionActions(const scenario::Scenario& scenario) {
  std::vector<const scenario::FromSessionAction*> out;
  for (const scenario::Rule& rule : scenario.rules) CollectFromSession(rule.action, &out);
  if (scenario.default_action.has_value()) CollectFromSession(*scenario.default_action, &out);
  return out;
}

// StartRun's check that the request names the session its mode needs: every
// mode but passthrough does, except a replay with a scenario (`scripted`),
// whose rules answer. INVALID_ARGUMENT when it names none.
absl::Status CheckSessionNamed(const v1::StartRunRequest& request, bool scripted) {
  const v1::RunMode requested = request.mode();
  if (requested != v1::RUN_MODE_PASSTHROUGH && request.session().empty() &&
      !(requested == v1::RUN_MODE_REPLAY && scripted)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "session: required for ", ModeName(requested), " mode",
        requested == v1::RUN_MODE_REPLAY ? " (or a scenario, whose rules answer)" : ""));
  }
  return absl::OkStatus();
}

// Fills `sources` with the sessions `scenario`'s from_session actions serve,
// each loaded once, in file order, by `load(name, version)` (a
// StatusOr<shared_ptr<const SessionIndex>>; Engine::LoadSession), its
// served marks cleared. Errors: the first that cannot be parsed or loaded,
// with its code, naming the action's session.
template <typename Load>
absl::Status LoadSourceSessions(
    const scenario::Scenario& scenario, const Load& load,
    absl::flat_hash_map<std::string, RunState::SourceSession>* sources) {
  for (const scenario::FromSessionAction* action : FromSessionActions(scenario)) {
    if (sources->contains(action->session)) continue;
    absl::StatusOr<std::pair<std::string, int64_t>> ref = ParseSessionRef(action->session);
    absl::StatusOr<std::shared_ptr<const matching::SessionIndex>> source =
        ref.ok() ? load(ref->first, ref->second) : ref.status();
    if (!source.ok()) {
      return absl::Status(source.status().code(),
                          absl::StrCat("scenario from_session \"", action->session,
                                       "\": ", source.status().message()));
    }
    RunState::SourceSession& slot = (*sources)[action->session];
    slot.served.assign((*source)->size(), 0);
    slot.index = *std::move(source);
  }
  return absl::OkStatus();
}

// The run_started event of `run`, started as `requested` (a once run names
// the mode it asked for besides the one it runs in).
v1::TraceEvent RunStartedEvent(const v1::Run& run, v1::RunMode requested) {
  v1::TraceEvent started;
  started.set_kind(trace::event::kRunStarted);
  auto& attrs = *started.mutable_attributes();
  attrs[trace::attr::kRunMode] = ModeName(run.mode());
  if (requested != run.mode()) attrs[trace::attr::kRunRequestedMode] = ModeName(requested);
  attrs[trace::attr::kRunStrict] = run.strict() ? "true" : "false";
  if (run.repeat()) attrs[trace::attr::kRunRepeat] = "true";
  if (!run.scenario().empty()) attrs[trace::attr::kScenarioName] = run.scenario();
  if (!run.session().empty()) {
    attrs[trace::attr::kSessionName] = run.session();
    attrs[trace::attr::kSessionVersion] = absl::StrCat(run.session_version());
  }
  return started;
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
  if (options.env == nullptr) options.env = Env::Default();
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

absl::Status Engine::WhereSessionsAre(absl::Status status) {
  if (!absl::IsNotFound(status) || options_.store_name.empty()) return status;
  std::string where = absl::StrCat(status.message(), " in database ", options_.store_name);
  absl::StatusOr<std::vector<v1::Session>> sessions = options_.store->ListSessions("");
  if (sessions.ok()) {
    // Every version of every session, ordered by name: the distinct names.
    std::vector<std::string> names;
    for (const v1::Session& s : *sessions) {
      if (names.empty() || names.back() != s.name()) names.push_back(s.name());
    }
    constexpr size_t kNamesShown = 5;
    if (names.empty()) {
      absl::StrAppend(&where, " (which holds no sessions)");
    } else if (names.size() <= kNamesShown) {
      absl::StrAppend(&where, " (whose sessions are ", absl::StrJoin(names, ", "), ")");
    } else {
      const size_t more = names.size() - kNamesShown;
      names.resize(kNamesShown);
      absl::StrAppend(&where, " (whose sessions are ", absl::StrJoin(names, ", "), " and ", more,
                      " more)");
    }
  }
  return absl::Status(status.code(), where);
}

absl::StatusOr<std::shared_ptr<const matching::SessionIndex>> Engine::LoadSession(
    const std::string& name, int64_t version,
    const std::shared_ptr<const matching::MatchNormalizer>& normalizer) {
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
  std::shared_ptr<const matching::SessionIndex> index =
      matching::SessionIndex::Build(std::move(session), std::move(exchanges), normalizer);
  if (cacheable) {
    absl::MutexLock lock(&cache_mu_);
    session_cache_[key] = index;
  }
  return index;
}

// The contract is in engine.h (the private section).
absl::StatusOr<std::shared_ptr<const scenario::Script>> Engine::LoadRunScript(
    const v1::StartRunRequest& request) {
  if (request.scenario().empty() && request.scenario_text().empty()) return options_.scenario;
  if (!request.scenario().empty() && !request.scenario_text().empty()) {
    return absl::InvalidArgumentError("scenario, scenario_text: give at most one");
  }
  if (request.scenario_text().size() > scenario::kMaxScenarioBytes) {
    return absl::InvalidArgumentError(absl::StrCat("scenario_text: ", request.scenario_text().size(),
                                                   " bytes; the limit is ", scenario::kMaxScenarioBytes));
  }
  absl::StatusOr<std::shared_ptr<const scenario::Script>> loaded =
      scenario::Script::Load(request.scenario(), request.scenario_text(),
                   scenario::ScenarioFiles::Under(options_.scenario_dir));
  if (!loaded.ok()) {
    return absl::Status(loaded.status().code(),
                        absl::StrCat("scenario: ", loaded.status().message()));
  }
  return *std::move(loaded);
}

// The contract is in engine.h (the private section).
absl::Status Engine::CheckRunIdFree(const std::string& id) {
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
  return absl::OkStatus();
}

// The contract is in engine.h (the private section).
absl::StatusOr<v1::RunMode> Engine::ResolveMode(const v1::StartRunRequest& request) {
  if (request.mode() != v1::RUN_MODE_ONCE) return request.mode();
  // once: record when the session has no recording yet, else replay.
  US_ASSIGN_OR_RETURN(auto ref, ParseSessionRef(request.session()));
  absl::StatusOr<v1::Session> existing = options_.store->GetSession(ref.first, ref.second);
  if (!existing.ok() && !absl::IsNotFound(existing.status())) return existing.status();
  const bool recorded = existing.ok() && existing->exchange_count() > 0;
  if (!recorded && ref.second != 0) {
    return absl::NotFoundError(absl::StrCat("session \"", request.session(),
                                            "\" has no recording to replay"));
  }
  return recorded ? v1::RUN_MODE_REPLAY : v1::RUN_MODE_RECORD;
}

// The contract is in engine.h (the private section).
absl::StatusOr<v1::Run> Engine::NewRunRecord(const v1::StartRunRequest& request,
                                             const std::string& id, v1::RunMode mode,
                                             const scenario::Script& script, bool scripted) {
  const v1::RunMode requested = request.mode();
  v1::Run run;
  run.set_id(id);
  run.set_mode(mode);
  run.set_strict(mode == v1::RUN_MODE_NEW || requested == v1::RUN_MODE_ONCE
                     ? true
                     : (request.has_strict() ? request.strict()
                                             : script.scenario().matching.strict.value_or(true)));
  if (scripted) run.set_scenario(script.label());
  run.set_repeat(mode == v1::RUN_MODE_REPLAY && request.repeat());
  if (!v1::TraceLevel_IsValid(request.trace_level())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "trace_level: ", request.trace_level(), " is not a trace level (full, summary, off)"));
  }
  run.set_trace_level(request.trace_level() != v1::TRACE_LEVEL_UNSPECIFIED
                          ? request.trace_level()
                          : options_.default_trace_level);
  run.set_state(v1::RUN_STATE_ACTIVE);
  run.set_started_at_micros(options_.env->NowMicros());
  return run;
}

// The contract is in engine.h (the private section).
absl::Status Engine::OpenSession(const std::string& session,
                                 const std::shared_ptr<const matching::MatchNormalizer>& normalizer,
                                 v1::Run* run,
                                 std::shared_ptr<const matching::SessionIndex>* index) {
  if (session.empty()) return absl::OkStatus();
  const v1::RunMode mode = run->mode();
  US_ASSIGN_OR_RETURN(auto ref, ParseSessionRef(session));
  if (mode == v1::RUN_MODE_RECORD) {
    if (ref.second != 0) {
      return absl::InvalidArgumentError(
          "session: record mode makes a new version; name the session without @N");
    }
    US_ASSIGN_OR_RETURN(v1::Session made, options_.store->CreateSessionVersion(ref.first));
    run->set_session(made.name());
    run->set_session_version(made.version());
  } else if (mode == v1::RUN_MODE_REPLAY || mode == v1::RUN_MODE_NEW) {
    if (ref.second == 0) {
      absl::StatusOr<int64_t> latest = LatestRecordedVersion(ref.first);
      if (!latest.ok()) return WhereSessionsAre(latest.status());
      ref.second = *latest;
    }
    absl::StatusOr<std::shared_ptr<const matching::SessionIndex>> loaded =
        LoadSession(ref.first, ref.second, normalizer);
    if (!loaded.ok()) return WhereSessionsAre(loaded.status());
    *index = *std::move(loaded);
    run->set_session((*index)->session().name());
    run->set_session_version((*index)->session().version());
  } else {
    run->set_session(ref.first);
  }
  return absl::OkStatus();
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
        "grpc://HOST:PORT, --upstream API=URL (the APIs: understudy serve --help) or "
        "--mcp-upstream NAME=URL"));
  }
  // The run's scenario: its own, else the server's, else an empty one (so
  // every run counts iterations and tool calls the same way).
  US_ASSIGN_OR_RETURN(std::shared_ptr<const scenario::Script> script, LoadRunScript(request));
  const bool scripted = script != nullptr;
  if (script == nullptr) script = EmptyScript();
  US_RETURN_IF_ERROR(CheckSessionNamed(request, scripted));
  const scenario::MatchingOptions& matching = script->scenario().matching;
  const std::shared_ptr<const matching::MatchNormalizer> normalizer =
      matching.ignore_paths.empty() && matching.normalizers.empty() ? options_.normalizer
                                                                    : matching.normalizer;
  US_RETURN_IF_ERROR(CheckRunIdFree(id));

  US_ASSIGN_OR_RETURN(const v1::RunMode mode, ResolveMode(request));
  US_ASSIGN_OR_RETURN(v1::Run run, NewRunRecord(request, id, mode, *script, scripted));
  std::shared_ptr<const matching::SessionIndex> index;
  US_RETURN_IF_ERROR(OpenSession(request.session(), normalizer, &run, &index));
  // Sessions that from_session actions serve: loaded now, so answering
  // never reads the disk.
  absl::flat_hash_map<std::string, RunState::SourceSession> sources;
  US_RETURN_IF_ERROR(LoadSourceSessions(
      script->scenario(),
      [&](const std::string& name, int64_t version) {
        return LoadSession(name, version, normalizer);
      },
      &sources));
  US_RETURN_IF_ERROR(options_.store->SaveRun(run));

  auto state = std::make_shared<RunState>(run, std::move(index), std::move(script),
                                          std::move(sources), options_.store, options_.env,
                                          options_.max_miss_reports_per_run);
  state->Emit(RunStartedEvent(run, requested));
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

absl::StatusOr<v1::Message> Engine::ResolveItem(const CallInfo& call, absl::string_view item_id,
                                                const ResponseChain::ItemReader& read) {
  US_ASSIGN_OR_RETURN(std::shared_ptr<RunState> run, FindActiveRun(call));
  return run->responses().FindItem(item_id, read);
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

absl::StatusOr<std::pair<std::shared_ptr<const scenario::Script>, std::string>> Engine::RunScript(
    const CallInfo& call) {
  US_ASSIGN_OR_RETURN(std::shared_ptr<RunState> run, FindActiveRun(call));
  if (run->script_.get() == EmptyScript().get()) {
    return std::make_pair(std::shared_ptr<const scenario::Script>(), run->id());
  }
  return std::make_pair(run->script_, run->id());
}

int64_t Engine::ActiveRunCount() {
  absl::ReaderMutexLock lock(&runs_mu_);
  return static_cast<int64_t>(runs_.size());
}

}  // namespace engine
}  // namespace understudy
