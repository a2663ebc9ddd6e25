// How the engine answers a model request (the contract is engine.h):
// Decide asks the scenario's sources in order (rules, playbook, the
// recording or the upstream, default, a miss), and Perform carries out one
// scripted step. MCP requests go on to DecideMcp (engine_mcp.cc).
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

absl::StatusOr<Decision> Engine::Decide(const CallInfo& given,
                                        const v1::CompletionRequest& request, bool streamed) {
  US_RETURN_IF_ERROR(capture::ValidateRequest(request));
  US_ASSIGN_OR_RETURN(std::shared_ptr<RunState> run, FindActiveRun(given));
  const scenario::Script& script = run->script();
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
  std::vector<scenario::RuleSkip> skipped;
  const scenario::Selection selection =
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
         {"key", internal::MatchKeyForLog(run->index_.get(), request)}});
    for (const scenario::RuleSkip& skip : skipped) {
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
  TraceAttributes attrs;
  attrs.emplace_back(trace::attr::kIteration, absl::StrCat(selection.overall_iteration));
  attrs.emplace_back(trace::attr::kAgentIteration, absl::StrCat(selection.agent_iteration));
  if (selection.previous_agent.has_value()) {
    attrs.emplace_back(trace::attr::kPreviousAgent, *selection.previous_agent);
  }
  if (!selection.phase.empty()) attrs.emplace_back(trace::attr::kPhase, selection.phase);
  attrs.insert(attrs.end(), call.attributes.begin(), call.attributes.end());

  // 1. Rules.
  if (selection.rule != nullptr) {
    attrs.emplace_back(trace::attr::kRuleName, selection.rule->name);
    attrs.emplace_back(trace::attr::kRuleUse, absl::StrCat(selection.rule_use));
    const scenario::Step step = scenario::ResolveStep(selection.rule->action, selection.rule_use);
    US_ASSIGN_OR_RETURN(bool answered,
                        Perform(run, call, request, streamed, step, AnswerSource::kRule,
                                selection.overall_iteration, &attrs, &decision));
    if (answered) return decision;
  }

  // 2. The playbook.
  absl::Status playbook_failure;
  const std::optional<scenario::Action>& fallback = script.scenario().default_action;
  scenario::PlaybookRun* playbook = run->playbook();
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
        for (v1::CompletionChunk& chunk : scenario::ChunksFor(exchange->response())) {
          *exchange->add_chunks() = std::move(chunk);
        }
      }
      US_RETURN_IF_ERROR(run->Answered(ExchangeEvent(call.agent, request, &exchange->response(),
                                                     absl::OkStatus(), AnswerSource::kPlaybook, 0,
                                                     streamed, attrs)));
      run->ObserveAnswer(call.agent, exchange->response());
      const v1::Exchange* answer = exchange.get();
      decision.what = ReplyFromExchange{std::move(exchange), answer};
      decision.source = AnswerSource::kPlaybook;
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
             {"source", std::string(SourceName(AnswerSource::kRecording))},
             {"exchange", absl::StrCat((*matched)->seq())}});
      } else {
        Log(LogLevel::kDebug, "no_recording", {{"run", run->id()}});
      }
    }
    US_RETURN_IF_ERROR(matched.status());
    const v1::Exchange* ex = *matched;
    if (ex != nullptr) {
      run->ObserveAnswer(call.agent, ex->response(), ex);
      ReplyFromExchange reply{run->index_, ex};
      if (streamed && ex->chunks_size() == 0 && !ex->has_error()) {
        reply.answer_chunk = &run->index_->AnswerAsChunk(static_cast<size_t>(ex->seq() - 1));
      }
      decision.what = std::move(reply);
      decision.source = AnswerSource::kRecording;
      return decision;
    }
  }
  if (mode != v1::RUN_MODE_REPLAY && decision.disconnect_after >= 0) {
    // Nothing is forwarded: the connection drops before the upstream is asked.
    US_RETURN_IF_ERROR(run->Answered(
        ExchangeEvent(call.agent, request, nullptr, DisconnectStatus(), AnswerSource::kRule, 0,
                      streamed, attrs)));
    decision.what = DropConnection{};
    decision.source = AnswerSource::kRule;
    return decision;
  }
  if (mode != v1::RUN_MODE_REPLAY) {
    if (debug) {
      Log(LogLevel::kDebug, "answer",
          {{"run", run->id()}, {"source", std::string(SourceName(AnswerSource::kUpstream))}});
    }
    US_ASSIGN_OR_RETURN(std::unique_ptr<ForwardTicket> ticket,
                        NewTicket(run, call, request, streamed));
    ticket->extra_ = std::move(attrs);
    decision.what = ForwardUpstream{std::move(ticket)};
    decision.source = AnswerSource::kUpstream;
    return decision;
  }

  // 4. The scenario's default.
  if (fallback.has_value()) {
    if (debug) {
      Log(LogLevel::kDebug, "answer",
          {{"run", run->id()}, {"source", std::string(SourceName(AnswerSource::kDefault))}});
    }
    const scenario::Step step = scenario::ResolveStep(*fallback, run->NextDefaultUse());
    US_ASSIGN_OR_RETURN(bool answered,
                        Perform(run, call, request, streamed, step, AnswerSource::kDefault,
                                selection.overall_iteration, &attrs, &decision));
    if (answered) return decision;
  }

  // 5. A miss; a scripted disconnect still drops the connection, and a
  // scripted delay comes first.
  if (decision.disconnect_after >= 0) {
    US_RETURN_IF_ERROR(run->Answered(
        ExchangeEvent(call.agent, request, nullptr, DisconnectStatus(), AnswerSource::kRule, 0,
                      streamed, attrs)));
    decision.what = DropConnection{};
    decision.source = AnswerSource::kRule;
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
  decision.what = MissAfterDelay{std::move(miss)};
  return decision;
}

}  // namespace engine
}  // namespace understudy
