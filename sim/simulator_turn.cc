// A prompt's work: the behaviour it selects, tool events, the completion
// command and its retries, questions, hooks. The loop that drives it is in
// simulator.cc.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/fd_io.h"
#include "base/subprocess.h"
#include "sim/session_state.h"
#include "sim/simulator.h"
#include "trace/vocabulary.h"
#include "validation/utf8.h"

namespace understudy {
namespace sim {
namespace {

namespace sim_attr = trace::sim_attr;
namespace sim_event = trace::sim_event;

constexpr size_t kMaxOutputLine = 64 * 1024;
constexpr int kMaxStopRefires = 3;

// What "⏺ Tool(...)" shows of a tool's input: its command, file or the
// like, else its first text field, else the JSON; one line, about 80 bytes.
std::string ToolSummary(const std::string& input_json) {
  const nlohmann::json input = nlohmann::json::parse(input_json, nullptr, false);
  std::string summary;
  if (input.is_object()) {
    for (const char* key : {"command", "file_path", "path", "pattern", "url", "query"}) {
      auto it = input.find(key);
      if (it != input.end() && it->is_string()) {
        summary = it->get<std::string>();
        break;
      }
    }
    if (summary.empty()) {
      for (const auto& [key, value] : input.items()) {
        if (value.is_string()) {
          summary = value.get<std::string>();
          break;
        }
      }
    }
    if (summary.empty() && !input.empty()) summary = input.dump();
  } else if (!input.is_discarded()) {
    summary = input.dump();
  }
  const size_t newline = summary.find('\n');
  if (newline != std::string::npos) summary = summary.substr(0, newline) + " …";
  return validation::Shorten(summary, 80);
}

std::string BehaviourName(const Behaviour& behaviour) {
  return behaviour.name.empty() ? behaviour.path : behaviour.name;
}

}  // namespace

void Simulator::StartPrompt(const std::string& prompt) {
  prompt_ = prompt;
  answer_.clear();
  turn_failed_ = false;
  const Behaviour& behaviour = config_->Select(prompt);
  SetState(SimState::kWorking, "prompt");
  const std::string text = validation::SanitizeUtf8(prompt);
  Trace(sim_event::kPrompt, {{sim_attr::kPrompt, text},
                       {sim_attr::kPromptBytes, absl::StrCat(prompt.size())},
                       {sim_attr::kBehaviour, BehaviourName(behaviour)},
                       {sim_attr::kModel,
                        behaviour.action == ActionKind::kModel ? "true" : "false"}});
  LogEvent("prompt", {{"bytes", prompt.size()},
                      {"behaviour", BehaviourName(behaviour)},
                      {"action", std::string(ActionName(behaviour.action))}});
  const HookOutcome hooks = RunHooks(HookEvent::kUserPromptSubmit, "", {{"prompt", text}});
  if (hooks.cancelled) return;
  if (hooks.blocked) {
    Line(absl::StrCat("Prompt blocked by hook: ", hooks.reason));
    EnterIdle("prompt blocked by hook");
    return;
  }
  if (hooks.stop) {
    StoppedByHook(hooks.reason);
    return;
  }
  Act(behaviour);
}

void Simulator::Act(const Behaviour& behaviour) {
  if (behaviour.action == ActionKind::kModel) {
    Model(behaviour);  // the model's answer first, then the work (StartWork)
    return;
  }
  failing_ = behaviour.action == ActionKind::kFailThenSucceed && CountFailure(behaviour);
  StartWork(behaviour);
}

bool Simulator::CountFailure(const Behaviour& behaviour) {
  const int taken = ++uses_[behaviour.path];
  if (!options_.state_dir.empty()) {
    // Saved before the turn goes on, so that a crash (this turn's own, a
    // kill) and a restart with --resume count it.
    absl::Status saved = SaveSessionCounts(options_.state_dir, session_id_, uses_);
    if (!saved.ok()) {
      LogEvent("session_state", {{"error", std::string(saved.message())}}, LogLevel::kWarn);
    }
  }
  return taken <= behaviour.failures;
}

void Simulator::StartWork(const Behaviour& behaviour) {
  tools_.assign(behaviour.events.size(), ToolRun{});
  // Start and end of every event are scheduled now, in order, so that equal
  // times (UNDERSTUDY_SIM_DELAY) keep the configured order.
  absl::Duration end = Delay(behaviour.delay);
  for (size_t i = 0; i < behaviour.events.size(); ++i) {
    const ToolEvent& event = behaviour.events[i];
    const absl::Duration at = Delay(event.at);
    const absl::Duration finish = at + Delay(event.duration);
    Schedule(at, [this, &event, i] { ToolStart(event, i); });
    Schedule(finish, [this, &event, i] { ToolEnd(event, i); });
    end = std::max(end, finish);
  }
  Schedule(end, [this, &behaviour] { FinishWork(behaviour); });
}

void Simulator::ToolStart(const ToolEvent& event, size_t index) {
  tools_[index].id = absl::StrCat("toolu_sim_", ++tool_counter_);
  tools_[index].blocked = !ToolBegin(tools_[index].id, event.tool, event.input_json);
}

void Simulator::ToolEnd(const ToolEvent& event, size_t index) {
  if (tools_[index].blocked) return;
  ToolFinish(tools_[index].id, event.tool, event.input_json, event.result);
}

bool Simulator::ToolBegin(const std::string& id, const std::string& tool,
                          const std::string& input_json) {
  Trace(sim_event::kToolCall, {{trace::attr::kGenAiToolName, tool},
                          {trace::attr::kGenAiToolCallId, id},
                          {trace::attr::kGenAiToolCallArguments, input_json}});
  nlohmann::json input = nlohmann::json::parse(input_json, nullptr, false);
  if (input.is_discarded()) input = input_json;
  const HookOutcome hooks = RunHooks(
      HookEvent::kPreToolUse, tool,
      {{"tool_name", tool}, {"tool_input", input}, {"tool_use_id", id}});
  if (hooks.cancelled) return false;
  Line(absl::StrCat("⏺ ", tool, "(", ToolSummary(input_json), ")"));
  if (hooks.blocked) {
    Line(absl::StrCat("  ⎿  Blocked by hook: ", hooks.reason));
    Trace(sim_event::kToolResult, {{trace::attr::kGenAiToolName, tool},
                              {trace::attr::kGenAiToolCallId, id},
                              {trace::attr::kGenAiToolCallResult, ""},
                              {sim_attr::kBlocked, "true"},
                              {sim_attr::kReason, hooks.reason}});
    return false;
  }
  if (hooks.stop) {
    StoppedByHook(hooks.reason);
    return false;
  }
  return true;
}

void Simulator::ToolFinish(const std::string& id, const std::string& tool,
                           const std::string& input_json, const std::string& result) {
  bool first = true;
  for (absl::string_view line : absl::StrSplit(result.empty() ? "(no output)" : result, '\n')) {
    Line(absl::StrCat(first ? "  ⎿  " : "     ", line));
    first = false;
  }
  Trace(sim_event::kToolResult, {{trace::attr::kGenAiToolName, tool},
                            {trace::attr::kGenAiToolCallId, id},
                            {trace::attr::kGenAiToolCallResult, result},
                            {sim_attr::kBlocked, "false"}});
  nlohmann::json input = nlohmann::json::parse(input_json, nullptr, false);
  if (input.is_discarded()) input = input_json;
  const HookOutcome hooks = RunHooks(HookEvent::kPostToolUse, tool,
                                     {{"tool_name", tool},
                                      {"tool_input", input},
                                      {"tool_use_id", id},
                                      {"tool_response", ToolResponse(tool, validation::SanitizeUtf8(result))}});
  if (!hooks.cancelled && hooks.stop) StoppedByHook(hooks.reason);
}

void Simulator::StoppedByHook(const std::string& reason) {
  StopWork();
  if (!reason.empty()) Line(absl::StrCat("Stopped by hook: ", reason));
  EnterIdle("stopped by hook");
}

void Simulator::FinishWork(const Behaviour& behaviour) {
  // The work is done: what each action does at its end.
  switch (behaviour.action) {
    case ActionKind::kAsk:
      Ask(behaviour);
      return;
    case ActionKind::kFail:
      for (const std::string& line : behaviour.output) Line(line);
      Fail(behaviour.message);
      return;
    case ActionKind::kHang:
      for (const std::string& line : behaviour.output) Line(line);
      LogEvent("hang", {{"behaviour", BehaviourName(behaviour)}});
      return;  // WORKING until interrupted
    case ActionKind::kCrash:
      for (const std::string& line : behaviour.output) Line(line);
      Crash(behaviour);
      return;
    case ActionKind::kFailThenSucceed:
      if (failing_ && behaviour.crash_on_failure) {
        Crash(behaviour);
        return;
      }
      if (failing_) {
        Fail(behaviour.message);
        return;
      }
      break;
    case ActionKind::kComplete:
    case ActionKind::kModel:
      break;
  }
  for (const std::string& line : behaviour.output) Line(line);
  completion_ = behaviour.completion.value_or(config_->completion);
  if (completion_.command.empty()) {
    EndTurn("completed", false);
    return;
  }
  completion_argv_ = completion_.command;
  completion_outputs_ = behaviour.outputs;
  if (!behaviour.answer_output.empty()) completion_outputs_[behaviour.answer_output] = answer_;
  std::vector<std::string> words;
  for (const auto& [key, value] : completion_outputs_) {  // a std::map: sorted by key
    words.push_back(completion_.output_flag);
    words.push_back(absl::StrCat(key, "=", value));
  }
  if (completion_.is_line) {
    // {"/bin/sh", "-c", LINE}: the outputs become words of the line, so
    // that its command gets them (appended to the argv they would be the
    // shell's $0, $1, ...).
    for (const std::string& word : words) absl::StrAppend(&completion_argv_[2], " ", ShellWord(word));
  } else {
    completion_argv_.insert(completion_argv_.end(), words.begin(), words.end());
  }
  completing_ = &behaviour;
  attempt_ = 0;
  StartCompletion();
}

void Simulator::StartCompletion() {
  ++attempt_;
  SpawnOptions spawn;
  spawn.env = env_;
  spawn.cwd = cwd_;
  spawn.merge_stderr = true;  // both streams to the log, never to the pane
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Spawn(completion_argv_, spawn);
  if (!child.ok()) {
    CompletionEnded(child.status().code() == absl::StatusCode::kNotFound ? "not_found" : "failed",
                    -1, std::string(child.status().message()));
    return;
  }
  child_ = std::move(*child);
  child_->CloseStdin();
  child_output_open_ = true;
  child_output_.clear();
  child_deadline_ = options_.env->Now() + completion_.timeout;
  LogEvent("completion_started",
           {{"attempt", attempt_}, {"pid", child_->pid()}, {"command", ShellQuoted(completion_argv_)}});
}

void Simulator::DrainChildOutput() {
  if (child_ == nullptr) return;
  char buffer[16384];
  for (;;) {
    const ssize_t n = read(child_->stdout_fd(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) child_output_open_ = false;
    if (n <= 0) break;
    child_output_.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = child_output_.find('\n')) != std::string::npos) {
      LogEvent("completion_output",
               {{"line", validation::SanitizeUtf8(child_output_.substr(0, newline))}},
               LogLevel::kDebug);
      child_output_.erase(0, newline + 1);
    }
    if (child_output_.size() > kMaxOutputLine) {
      LogEvent("completion_output", {{"line", validation::SanitizeUtf8(child_output_)}},
               LogLevel::kDebug);
      child_output_.clear();
    }
  }
}

void Simulator::PollChild() {
  if (child_ == nullptr) return;
  const std::optional<int> status = child_->WaitFor(absl::ZeroDuration());
  if (!status.has_value()) return;
  DrainChildOutput();
  if (!child_output_.empty()) {
    LogEvent("completion_output", {{"line", validation::SanitizeUtf8(child_output_)}},
             LogLevel::kDebug);
    child_output_.clear();
  }
  const bool ok = WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
  const int code = WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
  CompletionEnded(ok ? "ok" : "failed", code, ChildProcess::DescribeExit(*status));
}

void Simulator::CompletionEnded(const std::string& outcome, int exit_code,
                                const std::string& description) {
  child_.reset();
  child_output_open_ = false;
  child_deadline_ = absl::InfiniteFuture();
  nlohmann::json outputs = nlohmann::json::object();
  for (const auto& [key, value] : completion_outputs_) outputs[key] = value;
  Trace(sim_event::kCompletion,
        {{sim_attr::kCommand,
          nlohmann::json(completion_argv_).dump(-1, ' ', false,
                                                nlohmann::json::error_handler_t::replace)},
         {sim_attr::kExitCode, absl::StrCat(exit_code)},
         {sim_attr::kOutcome, outcome},
         {sim_attr::kAttempt, absl::StrCat(attempt_)},
         {sim_attr::kOutputs,
          outputs.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)}});
  LogEvent("completion", {{"attempt", attempt_},
                          {"outcome", outcome},
                          {"exit", exit_code},
                          {"detail", description},
                          {"command", ShellQuoted(completion_argv_)}});
  if (outcome == "ok") {
    EndTurn("completed", false);
    return;
  }
  if (completion_.on_failure == OnFailure::kRetry && attempt_ <= completion_.retries) {
    Schedule(Delay(completion_.retry_delay), [this] { StartCompletion(); });
    return;
  }
  if (completion_.on_failure == OnFailure::kStay) {
    LogEvent("completion_stay", {{"detail", "on_failure: stay; WORKING until interrupted"}});
    return;
  }
  Line(absl::StrCat("Error: completion command failed: ", description));
  EndTurn("completion failed", true);
}

void Simulator::Fail(const std::string& message) {
  Line(message);
  Trace(sim_event::kError, {{sim_attr::kMessage, validation::SanitizeUtf8(message)}});
  EndTurn("failed", true);
}

void Simulator::Ask(const Behaviour& behaviour) {
  if (!behaviour.question.empty()) Line(behaviour.question);
  nlohmann::json options = nlohmann::json::array();
  for (size_t i = 0; i < behaviour.options.size(); ++i) {
    const std::string& answer = behaviour.options[i].answer;
    if (answer.empty()) continue;  // the single implicit option of a behaviour-level `then`
    Line(absl::StrCat("  ", i + 1, ". ", answer));
    options.push_back(answer);
  }
  Trace(sim_event::kQuestion, {{sim_attr::kQuestion, behaviour.question},
                         {sim_attr::kOptions, options.dump()}});
  if (options_.print_mode) {  // nobody to answer: the question is the result
    EndTurn("asked", false);
    return;
  }
  asking_ = &behaviour;
  AwaitAnswer();
}

void Simulator::AwaitAnswer() {
  SetState(SimState::kAsking, "question");
  const HookOutcome hooks = RunHooks(HookEvent::kStop, "", {{"stop_hook_active", false}});
  if (hooks.cancelled) return;
  ShowPrompt();
}

void Simulator::Answer(const std::string& answer) {
  const Behaviour& behaviour = *asking_;
  const std::string trimmed(absl::StripAsciiWhitespace(answer));
  // An answer is a prompt submitted like any other: the agent works on it
  // (UserPromptSubmit hooks, which may drop it), so an orchestrator that
  // tracks work by those hooks sees the agent busy until the next Stop.
  SetState(SimState::kWorking, "answered");
  const HookOutcome hooks = RunHooks(HookEvent::kUserPromptSubmit, "",
                                     {{"prompt", validation::SanitizeUtf8(answer)}});
  if (hooks.cancelled) return;
  if (hooks.blocked) {
    Line(absl::StrCat("Prompt blocked by hook: ", hooks.reason));
    SetState(SimState::kAsking, "prompt blocked by hook");  // still waiting for the answer
    ShowPrompt();
    return;
  }
  if (hooks.stop) {
    asking_ = nullptr;
    StoppedByHook(hooks.reason);
    return;
  }
  const size_t count = behaviour.options.size();
  int chosen = -1;
  if (count == 0 || (count == 1 && behaviour.options[0].answer.empty())) {
    chosen = 0;  // any answer goes on
  } else {
    int number = 0;
    if (absl::SimpleAtoi(trimmed, &number) && number >= 1 && static_cast<size_t>(number) <= count) {
      chosen = number - 1;
    }
    for (size_t i = 0; chosen < 0 && i < count; ++i) {
      if (absl::EqualsIgnoreCase(trimmed, behaviour.options[i].answer)) chosen = static_cast<int>(i);
    }
  }
  // An ask that takes any answer goes on with its `then` when the answer is
  // none of its options (option 0).
  const Behaviour* next = chosen >= 0 ? behaviour.options[static_cast<size_t>(chosen)].then.get()
                          : behaviour.any_answer ? behaviour.then.get()
                                                 : nullptr;
  if (next == nullptr && count > 0) {
    Line(absl::StrCat("Please answer with 1-", count, " or an option's text."));
    AwaitAnswer();
    return;
  }
  asking_ = nullptr;
  answer_ = trimmed;
  Trace(sim_event::kAnswer, {{sim_attr::kAnswer, validation::SanitizeUtf8(trimmed)},
                       {sim_attr::kOption, absl::StrCat(chosen + 1)}});
  LogEvent("answer", {{"option", chosen + 1}});
  if (next == nullptr) {
    EndTurn("answered", false);
    return;
  }
  Act(*next);
}

void Simulator::Model(const Behaviour& behaviour) {
  if (options_.model_backend == nullptr) {
    Fail("Error: a model behaviour needs understudy's address (--addr or UNDERSTUDY_ADDR)");
    return;
  }
  ModelRequest request;
  request.agent = behaviour.model_agent.empty() ? options_.agent : behaviour.model_agent;
  request.model = behaviour.model;
  request.system_prompt = behaviour.system_prompt;
  request.prompt = prompt_;
  absl::StatusOr<std::unique_ptr<ModelCall>> call = options_.model_backend->Start(request);
  if (!call.ok()) {
    Fail(absl::StrCat("Error: ", call.status().message()));
    return;
  }
  // The answer comes through the loop (PollOnce), so that Escape, signals and
  // a closed terminal are seen while the server holds the request.
  model_call_ = std::move(*call);
  model_behaviour_ = &behaviour;
}

void Simulator::ModelAnswered() {
  std::optional<absl::StatusOr<ModelAnswer>> result = model_call_->TakeResult();
  if (!result.has_value()) return;  // not in yet
  const Behaviour& behaviour = *model_behaviour_;
  model_call_.reset();  // its thread has ended: no wait
  model_behaviour_ = nullptr;
  absl::StatusOr<ModelAnswer>& answer = *result;
  if (!answer.ok()) {
    Fail(absl::StrCat("Error: ", answer.status().message()));
    return;
  }
  if (!answer->text.empty()) {
    for (absl::string_view line : absl::StrSplit(answer->text, '\n')) Line(line);
  }
  for (const ModelToolCall& call : answer->tool_calls) {
    const std::string id =
        call.id.empty() ? absl::StrCat("toolu_sim_", ++tool_counter_) : call.id;
    const std::string arguments = call.arguments.empty() ? "{}" : call.arguments;
    if (ToolBegin(id, call.name, arguments)) {
      ToolFinish(id, call.name, arguments, "ok");
    }
    if (done_ || state_ != SimState::kWorking) return;
  }
  StartWork(behaviour);
}

void Simulator::Crash(const Behaviour& behaviour) {
  const int signal = behaviour.signal;
  StopWork();
  SetState(SimState::kCrashed, "crash behaviour");
  const std::string message =
      signal != 0 ? absl::StrCat("understudy sim: crashing as configured (signal ", signal, ", ",
                                 strsignal(signal), ")\n")
                  : absl::StrCat("understudy sim: crashing as configured (exit code ",
                                 behaviour.exit_code, ")\n");
  (void)WriteFully(STDERR_FILENO, {message}, -1);
  if (options_.trace != nullptr) options_.trace->Flush(absl::Seconds(1));
  if (terminal_ != nullptr) terminal_->Restore();
  if (options_.on_crash) {
    options_.on_crash(behaviour.exit_code, signal);
    done_ = true;
    exit_code_ = signal != 0 ? 128 + signal : behaviour.exit_code;
    return;
  }
  if (signal != 0) {
    ::signal(signal, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signal);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    kill(getpid(), signal);
  }
  _exit(signal != 0 ? 128 + signal : behaviour.exit_code);
}

void Simulator::EndTurn(absl::string_view reason, bool failed) {
  turn_failed_ = failed;
  const HookOutcome hooks = RunStopHooks();
  if (hooks.cancelled || state_ != SimState::kWorking) return;
  const absl::Duration wait = Delay(config_->prompt_delay);
  if (wait > absl::ZeroDuration()) {
    // Still WORKING until the indicator shows: what is typed meanwhile queues.
    Schedule(wait, [this, why = std::string(reason)] { EnterIdle(why); });
    return;
  }
  EnterIdle(reason);
}

void Simulator::StopWork() {
  ++work_epoch_;
  timers_.clear();
  if (child_ != nullptr) {
    child_->Signal(SIGKILL);
    child_.reset();  // reaps it
  }
  child_output_open_ = false;
  child_output_.clear();
  child_deadline_ = absl::InfiniteFuture();
  completing_ = nullptr;
  model_call_.reset();  // cancels it; waits at most ModelCall::kCancelWait
  model_behaviour_ = nullptr;
}

Simulator::HookOutcome Simulator::RunHooks(HookEvent event, absl::string_view tool,
                                           nlohmann::json fields) {
  HookOutcome outcome;
  const bool tool_event = event == HookEvent::kPreToolUse || event == HookEvent::kPostToolUse;
  if ((event == HookEvent::kStop && !config_->stop_hooks) || (tool_event && !config_->tool_hooks)) {
    return outcome;
  }
  fields["permission_mode"] = options_.skip_permissions ? "bypassPermissions" : "default";
  const uint64_t epoch = work_epoch_;
  for (const HookCommand& command : options_.hooks.For(event, tool)) {
    const nlohmann::json payload = HookPayload(event, session_id_, "", cwd_, fields);
    const HookResult result = RunHook(event, command, payload, env_, cwd_, WatchDuringHook());
    const int64_t duration_ms = absl::ToInt64Milliseconds(result.duration);
    EventLog::Fields line = {{"hook", std::string(HookEventName(event))},
                             {"exit", result.exit_code},
                             {"outcome", result.outcome},
                             {"duration_ms", duration_ms},
                             {"command", result.command}};
    if (!result.reason.empty()) line.emplace_back("reason", validation::SanitizeUtf8(result.reason));
    LogEvent("hook", std::move(line));
    Trace(sim_event::kHook, {{sim_attr::kHookEvent, std::string(HookEventName(event))},
                       {sim_attr::kHookCommand, result.command},
                       {sim_attr::kHookExitCode, absl::StrCat(result.exit_code)},
                       {sim_attr::kHookOutcome, result.outcome},
                       {sim_attr::kHookDurationMs, absl::StrCat(duration_ms)}});
    if (result.blocked && !outcome.blocked) {
      outcome.blocked = true;
      outcome.reason = result.reason;
    }
    if (result.stop) {
      outcome.stop = true;
      if (outcome.reason.empty()) outcome.reason = result.reason;
    }
    // What was typed meanwhile takes effect now: an interrupt stops the
    // work before whatever this hook came before.
    AfterHook();
    if (done_ || work_epoch_ != epoch) {
      outcome.cancelled = true;
      break;
    }
  }
  return outcome;
}

Simulator::HookOutcome Simulator::RunStopHooks() {
  HookOutcome outcome;
  for (int round = 0; round <= kMaxStopRefires; ++round) {
    outcome = RunHooks(HookEvent::kStop, "", {{"stop_hook_active", round > 0}});
    if (outcome.cancelled || outcome.stop || !outcome.blocked) break;
    Line(absl::StrCat("Stop hook: ", outcome.reason));
  }
  return outcome;
}

}  // namespace sim
}  // namespace understudy
