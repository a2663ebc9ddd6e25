// How the engine answers a model request (the contract is engine.h):
// Decide asks the scenario's sources in order, one step each (RuleStep,
// PlaybookStep, RecordingStep or UpstreamStep, DefaultStep, MissStep), and
// Perform carries out one scripted step. MCP requests go on to DecideMcp
// (engine_mcp.cc).
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "capture/validate.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/run_state.h"
#include "provider/a2a.h"
#include "provider/canonical.h"
#include "scenario/playbook.h"
#include "trace/vocabulary.h"

namespace understudy {
namespace engine {
namespace internal {

// The contract is in engine_internal.h.
std::string MatchKeyForLog(const matching::SessionIndex* index, const v1::CompletionRequest& request) {
  const std::string text = index != nullptr
                               ? matching::SessionIndex::TextOf(index->CanonicalOf(request))
                               : provider::CanonicalText(provider::WithoutRouting(request));
  uint64_t hash = 1469598103934665603ull;  // FNV-1a, 64 bits
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return absl::StrFormat("%016x", hash);
}

}  // namespace internal

namespace {

const char* StepName(scenario::Step::Kind kind) {
  switch (kind) {
    case scenario::Step::Kind::kRespond:
      return "respond";
    case scenario::Step::Kind::kError:
      return "error";
    case scenario::Step::Kind::kDelay:
      return "delay";
    case scenario::Step::Kind::kHang:
      return "hang";
    case scenario::Step::Kind::kDisconnect:
      return "disconnect";
    case scenario::Step::Kind::kFromSession:
      return "from_session";
  }
  return "";
}

// The first line of a miss report (the closest recording and how many
// fields differ); the differing values stay out of the log.
std::string FirstLine(absl::string_view text) {
  return std::string(text.substr(0, text.find('\n')));
}

// Adds to `attrs` what every answer's trace event says of the request: its
// iterations, the previous agent and phase (from `selection`), and the
// adapter's attributes of `call`.
void AddRequestAttributes(const CallInfo& call, const scenario::Selection& selection,
                          TraceAttributes* attrs) {
  attrs->emplace_back(trace::attr::kIteration, absl::StrCat(selection.overall_iteration));
  attrs->emplace_back(trace::attr::kAgentIteration, absl::StrCat(selection.agent_iteration));
  if (selection.previous_agent.has_value()) {
    attrs->emplace_back(trace::attr::kPreviousAgent, *selection.previous_agent);
  }
  if (!selection.phase.empty()) attrs->emplace_back(trace::attr::kPhase, selection.phase);
  attrs->insert(attrs->end(), call.attributes.begin(), call.attributes.end());
}

// Answers with a scripted disconnect and nothing else: traces the request
// as answered by a rule with the disconnect's status, and makes `decision`
// drop the connection. FAILED_PRECONDITION once the run is ending. Takes
// the run's lock (through RunState::Answered); call it holding none.
absl::Status AnswerDisconnect(RunState& run, const CallInfo& call,
                              const v1::CompletionRequest& request, bool streamed,
                              const TraceAttributes& attrs, Decision* decision) {
  US_RETURN_IF_ERROR(run.Answered(ExchangeEvent(call.agent, request, nullptr, DisconnectStatus(),
                                                AnswerSource::kRule, 0, streamed, attrs)));
  decision->what = DropConnection{};
  decision->source = AnswerSource::kRule;
  return absl::OkStatus();
}

}  // namespace

// Performs one scripted step from `origin` (a rule or the default). True when
// the step answers; false when it only adds an effect (delay, disconnect)
// and the next source is to answer.
absl::StatusOr<bool> Engine::Perform(const std::shared_ptr<RunState>& run, const CallInfo& call,
                                     const v1::CompletionRequest& request, bool streamed,
                                     const scenario::Step& step, AnswerSource origin, int overall_iteration,
                                     TraceAttributes* attrs, Decision* decision) {
  // Effects (delay, disconnect) let the next source answer: they are named
  // apart from the action that answers.
  const bool effect = step.kind == scenario::Step::Kind::kDelay || step.kind == scenario::Step::Kind::kDisconnect;
  attrs->emplace_back(effect ? trace::attr::kEffect : trace::attr::kAction, StepName(step.kind));
  if (!step.path.empty()) {
    attrs->emplace_back(effect ? trace::attr::kEffectPath : trace::attr::kActionPath, step.path);
  }
  switch (step.kind) {
    case scenario::Step::Kind::kDelay:
      decision->delay += absl::Milliseconds(step.delay->ms);
      attrs->emplace_back(trace::attr::kDelayMs, absl::StrCat(step.delay->ms));
      return false;
    case scenario::Step::Kind::kDisconnect:
      decision->disconnect_after = step.disconnect->after_chunks;
      attrs->emplace_back(trace::attr::kDisconnectAfterChunks,
                          absl::StrCat(step.disconnect->after_chunks));
      attrs->emplace_back(trace::attr::kErrorType, "UNAVAILABLE");
      return false;
    case scenario::Step::Kind::kRespond: {
      auto exchange = std::make_shared<v1::Exchange>();
      *exchange->mutable_response() =
          scenario::RespondWith(*step.respond, request, absl::StrCat("understudy-", overall_iteration));
      if (streamed) {
        for (v1::CompletionChunk& chunk : scenario::ChunksFor(exchange->response())) {
          *exchange->add_chunks() = std::move(chunk);
        }
      }
      US_RETURN_IF_ERROR(run->Answered(ExchangeEvent(call.agent, request, &exchange->response(),
                                                     absl::OkStatus(), origin, 0, streamed,
                                                     *attrs)));
      run->ObserveAnswer(call.agent, exchange->response());
      const v1::Exchange* answer = exchange.get();
      decision->what = ReplyFromExchange{std::move(exchange), answer};
      decision->source = origin;
      return true;
    }
    case scenario::Step::Kind::kError: {
      absl::Status status = scenario::ErrorStatusFor(*step.error);
      US_RETURN_IF_ERROR(run->Answered(
          ExchangeEvent(call.agent, request, nullptr, status, origin, 0, streamed, *attrs)));
      decision->what = ScriptedError{std::move(status), scenario::HttpStatusFor(*step.error),
                                     step.error->retry_after_seconds.value_or(-1)};
      decision->source = origin;
      return true;
    }
    case scenario::Step::Kind::kHang: {
      attrs->emplace_back(trace::attr::kErrorType, "DEADLINE_EXCEEDED");
      US_RETURN_IF_ERROR(run->Answered(ExchangeEvent(call.agent, request, nullptr,
                                                     absl::OkStatus(), origin, 0, streamed,
                                                     *attrs)));
      decision->what = HangUntilReleased{run->NewHang(call.deadline)};
      decision->source = origin;
      return true;
    }
    case scenario::Step::Kind::kFromSession: {
      std::shared_ptr<const void> keepalive;
      absl::StatusOr<const v1::Exchange*> served = run->FromSession(*step.from_session, &keepalive);
      if (!served.ok()) {
        // Counted and traced as a miss, with the reason.
        return run->BareMiss(call, request, std::string(served.status().message()));
      }
      const v1::Exchange* ex = *served;
      attrs->emplace_back(trace::attr::kFromSession, step.from_session->session);
      absl::Status status = ex->has_error() ? StatusFromRecorded(ex->error()) : absl::OkStatus();
      US_RETURN_IF_ERROR(run->Answered(ExchangeEvent(call.agent, request, &ex->response(), status,
                                                     origin, ex->seq(), streamed, *attrs)));
      run->ObserveAnswer(call.agent, ex->response(), ex);
      decision->what = ReplyFromExchange{std::move(keepalive), ex};
      decision->source = origin;
      return true;
    }
  }
  return false;
}

// The contract is in engine.h (the private section).
void Engine::LogRequest(const RunState& run, const CallInfo& call,
                        const v1::CompletionRequest& request,
                        const scenario::Selection& selection,
                        const std::vector<scenario::RuleSkip>& skipped) {
  Log(LogLevel::kDebug, "request",
      {{"run", run.id()},
       {"agent", call.agent},
       {"iteration", absl::StrCat(selection.overall_iteration)},
       {"agent_iteration", absl::StrCat(selection.agent_iteration)},
       {"previous_agent", selection.previous_agent.value_or("")},
       {"phase", selection.phase},
       {"key", internal::MatchKeyForLog(run.index_.get(), request)}});
  for (const scenario::RuleSkip& skip : skipped) {
    Log(LogLevel::kDebug, "rule_not_matched",
        {{"run", run.id()}, {"rule", skip.rule}, {"reason", skip.reason}});
  }
  if (selection.rule != nullptr) {
    Log(LogLevel::kDebug, "rule_matched",
        {{"run", run.id()},
         {"rule", selection.rule->name},
         {"use", absl::StrCat(selection.rule_use)}});
  }
}

// The contract is in engine.h (the private section).
absl::StatusOr<bool> Engine::RuleStep(const std::shared_ptr<RunState>& run, const CallInfo& call,
                                      const v1::CompletionRequest& request, bool streamed,
                                      const scenario::Selection& selection, TraceAttributes* attrs,
                                      Decision* decision) {
  if (selection.rule == nullptr) return false;
  attrs->emplace_back(trace::attr::kRuleName, selection.rule->name);
  attrs->emplace_back(trace::attr::kRuleUse, absl::StrCat(selection.rule_use));
  const scenario::Step step = scenario::ResolveStep(selection.rule->action, selection.rule_use);
  return Perform(run, call, request, streamed, step, AnswerSource::kRule,
                 selection.overall_iteration, attrs, decision);
}

// The contract is in engine.h (the private section).
absl::StatusOr<bool> Engine::PlaybookStep(const std::shared_ptr<RunState>& run,
                                          const CallInfo& call,
                                          const v1::CompletionRequest& request, bool streamed,
                                          bool has_default, const TraceAttributes& attrs,
                                          Decision* decision, absl::Status* failure) {
  scenario::PlaybookRun* playbook = run->playbook();
  if (playbook == nullptr) return false;
  // A finished playbook leaves later requests to the default, if any.
  if (has_default && playbook->remaining() == 0) return false;
  absl::StatusOr<v1::CompletionResponse> next = playbook->Next(request, run->context());
  if (!next.ok()) {
    *failure = next.status();
    return false;
  }
  auto exchange = std::make_shared<v1::Exchange>();
  *exchange->mutable_response() = *std::move(next);
  if (streamed) {
    for (v1::CompletionChunk& chunk : scenario::ChunksFor(exchange->response())) {
      *exchange->add_chunks() = std::move(chunk);
    }
  }
  US_RETURN_IF_ERROR(run->Answered(ExchangeEvent(call.agent, request, &exchange->response(),
                                                 absl::OkStatus(), AnswerSource::kPlaybook, 0,
                                                 streamed, attrs)));
  run->ObserveAnswer(call.agent, exchange->response());
  const v1::Exchange* answer = exchange.get();
  decision->what = ReplyFromExchange{std::move(exchange), answer};
  decision->source = AnswerSource::kPlaybook;
  return true;
}

// The contract is in engine.h (the private section).
absl::StatusOr<bool> Engine::RecordingStep(const std::shared_ptr<RunState>& run,
                                           const CallInfo& call,
                                           const v1::CompletionRequest& request, bool streamed,
                                           bool another_answers, bool debug,
                                           const TraceAttributes& attrs, Decision* decision) {
  const v1::RunMode mode = run->mode();
  if ((mode != v1::RUN_MODE_REPLAY && mode != v1::RUN_MODE_NEW) || !run->has_index()) {
    return false;
  }
  const bool forward_misses = mode == v1::RUN_MODE_NEW;
  absl::StatusOr<const v1::Exchange*> matched =
      run->Match(call, request, streamed, forward_misses,
                 /*quiet=*/!forward_misses && another_answers, attrs);
  if (debug) {
    if (!matched.ok()) {
      Log(LogLevel::kDebug, "miss",
          {{"run", run->id()}, {"report", FirstLine(matched.status().message())}});
    } else if (*matched != nullptr) {
      Log(LogLevel::kDebug, "answer",
          {{"run", run->id()},
           {"source", std::string(SourceName(AnswerSource::kRecording))},
           {"exchange", absl::StrCat((*matched)->seq())}});
    } else {
      Log(LogLevel::kDebug, "no_recording", {{"run", run->id()}});
    }
  }
  US_RETURN_IF_ERROR(matched.status());
  const v1::Exchange* ex = *matched;
  if (ex == nullptr) return false;
  run->ObserveAnswer(call.agent, ex->response(), ex);
  ReplyFromExchange reply{run->index_, ex};
  if (streamed && ex->chunks_size() == 0 && !ex->has_error()) {
    reply.answer_chunk = &run->index_->AnswerAsChunk(static_cast<size_t>(ex->seq() - 1));
  }
  decision->what = std::move(reply);
  decision->source = AnswerSource::kRecording;
  return true;
}

// The contract is in engine.h (the private section).
absl::StatusOr<bool> Engine::UpstreamStep(const std::shared_ptr<RunState>& run,
                                          const CallInfo& call,
                                          const v1::CompletionRequest& request, bool streamed,
                                          bool debug, TraceAttributes* attrs, Decision* decision) {
  if (run->mode() == v1::RUN_MODE_REPLAY) return false;
  if (decision->disconnect_after >= 0) {
    // Nothing is forwarded: the connection drops before the upstream is asked.
    US_RETURN_IF_ERROR(AnswerDisconnect(*run, call, request, streamed, *attrs, decision));
    return true;
  }
  if (debug) {
    Log(LogLevel::kDebug, "answer",
        {{"run", run->id()}, {"source", std::string(SourceName(AnswerSource::kUpstream))}});
  }
  US_ASSIGN_OR_RETURN(std::unique_ptr<ForwardTicket> ticket,
                      NewTicket(run, call, request, streamed));
  ticket->extra_ = std::move(*attrs);
  decision->what = ForwardUpstream{std::move(ticket)};
  decision->source = AnswerSource::kUpstream;
  return true;
}

// The contract is in engine.h (the private section).
absl::StatusOr<bool> Engine::DefaultStep(const std::shared_ptr<RunState>& run,
                                         const CallInfo& call,
                                         const v1::CompletionRequest& request, bool streamed,
                                         int overall_iteration, bool debug,
                                         TraceAttributes* attrs, Decision* decision) {
  const std::optional<scenario::Action>& fallback = run->script().scenario().default_action;
  if (!fallback.has_value()) return false;
  if (debug) {
    Log(LogLevel::kDebug, "answer",
        {{"run", run->id()}, {"source", std::string(SourceName(AnswerSource::kDefault))}});
  }
  const scenario::Step step = scenario::ResolveStep(*fallback, run->NextDefaultUse());
  return Perform(run, call, request, streamed, step, AnswerSource::kDefault, overall_iteration,
                 attrs, decision);
}

// The contract is in engine.h (the private section).
absl::Status Engine::MissStep(RunState& run, const CallInfo& call,
                              const v1::CompletionRequest& request, bool streamed,
                              const absl::Status& playbook_failure, bool debug,
                              const TraceAttributes& attrs, Decision* decision) {
  // A scripted disconnect still drops the connection.
  if (decision->disconnect_after >= 0) {
    return AnswerDisconnect(run, call, request, streamed, attrs, decision);
  }
  absl::Status miss =
      !playbook_failure.ok()
          ? run.BareMiss(call, request, std::string(playbook_failure.message()))
          : run.BareMiss(
                call, request,
                absl::StrCat("no rule, playbook action", run.has_index() ? ", recording" : "",
                             " or default answers this request",
                             call.agent.empty() ? "" : absl::StrCat(" (agent \"", call.agent, "\")"),
                             run.has_index() ? "" : "; the run replays no session"));
  if (debug) {
    Log(LogLevel::kDebug, "miss", {{"run", run.id()}, {"report", FirstLine(miss.message())}});
  }
  // A scripted delay comes first.
  if (decision->delay <= absl::ZeroDuration() || absl::IsFailedPrecondition(miss)) return miss;
  decision->what = MissAfterDelay{std::move(miss)};
  return absl::OkStatus();
}

namespace {

// What answered, as understudy_requests_total's `source` says it.
absl::string_view OutcomeName(const absl::StatusOr<Decision>& decided) {
  if (!decided.ok()) {
    const bool miss = absl::IsNotFound(decided.status()) &&
                      decided.status().GetPayload(kMissPayloadUrl).has_value();
    return miss ? "miss" : "error";
  }
  if (decided->As<MissAfterDelay>() != nullptr) return "miss";
  return SourceName(decided->source);
}

}  // namespace

absl::StatusOr<Decision> Engine::Decide(const CallInfo& given,
                                        const v1::CompletionRequest& request, bool streamed) {
  absl::Status valid = capture::ValidateRequest(request);
  absl::StatusOr<std::shared_ptr<RunState>> run =
      valid.ok() ? FindActiveRun(given) : absl::StatusOr<std::shared_ptr<RunState>>(valid);
  if (!run.ok()) {
    if (options_.metrics != nullptr) options_.metrics->CountRequest(given.api, "none", "error");
    return run.status();
  }
  absl::StatusOr<Decision> decided = DecideInRun(*run, given, request, streamed);
  if (options_.metrics != nullptr) {
    options_.metrics->CountRequest(given.api, ModeName((*run)->mode()), OutcomeName(decided));
  }
  return decided;
}

absl::StatusOr<Decision> Engine::DecideInRun(const std::shared_ptr<RunState>& run,
                                             const CallInfo& given,
                                             const v1::CompletionRequest& request, bool streamed) {
  const scenario::Script& script = run->script();
  // Unmodified traffic names no agent: the scenario's `agents` may.
  std::optional<CallInfo> named;
  if (given.agent.empty() && !script.scenario().agents.empty()) {
    named = given;
    named->agent = script.AgentFor(request);
  }
  const CallInfo& call = named.has_value() ? *named : given;
  if (IsMcpRequest(request)) return DecideMcp(run, call, request);
  if (provider::a2a::IsA2aRequest(request)) return DecideA2a(run, call, request);

  Decision decision;
  decision.speed = options_.speed;
  // At debug level: why each rule did not answer, the match key, where the
  // answer came from (docs/guide.md, "When a rule does not fire").
  const bool debug = LogEnabled(LogLevel::kDebug);
  std::vector<scenario::RuleSkip> skipped;
  // The request is counted in the run's context here, once.
  const scenario::Selection selection =
      script.rules().Select(run->context(), request, call.agent, debug ? &skipped : nullptr);
  run->TraceRequest(call.agent, request, selection);
  if (debug) LogRequest(*run, call, request, selection, skipped);
  TraceAttributes attrs;
  AddRequestAttributes(call, selection, &attrs);

  // 1. Rules.
  US_ASSIGN_OR_RETURN(bool answered,
                      RuleStep(run, call, request, streamed, selection, &attrs, &decision));
  if (answered) return decision;

  // 2. The playbook.
  const bool has_default = script.scenario().default_action.has_value();
  absl::Status playbook_failure;
  US_ASSIGN_OR_RETURN(answered, PlaybookStep(run, call, request, streamed, has_default, attrs,
                                             &decision, &playbook_failure));
  if (answered) return decision;

  // 3. The recording, or the upstream.
  US_ASSIGN_OR_RETURN(answered,
                      RecordingStep(run, call, request, streamed,
                                    /*another_answers=*/has_default || !playbook_failure.ok(),
                                    debug, attrs, &decision));
  if (answered) return decision;
  US_ASSIGN_OR_RETURN(answered,
                      UpstreamStep(run, call, request, streamed, debug, &attrs, &decision));
  if (answered) return decision;

  // 4. The scenario's default.
  US_ASSIGN_OR_RETURN(answered, DefaultStep(run, call, request, streamed,
                                            selection.overall_iteration, debug, &attrs,
                                            &decision));
  if (answered) return decision;

  // 5. A miss: answered as its error, or after a scripted delay or
  // disconnect.
  US_RETURN_IF_ERROR(MissStep(*run, call, request, streamed, playbook_failure, debug, attrs,
                              &decision));
  return decision;
}

}  // namespace engine
}  // namespace understudy
