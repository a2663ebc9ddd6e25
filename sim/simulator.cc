// The session's loop, its terminal and its states; a prompt's work is in
// simulator_turn.cc.
#include "sim/simulator.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "base/fd_io.h"
#include "sim/session_state.h"
#include "trace/vocabulary.h"
#include "validation/utf8.h"

namespace understudy {
namespace sim {
namespace {

namespace sim_attr = trace::sim_attr;
namespace sim_event = trace::sim_event;

constexpr absl::Duration kCtrlCWindow = absl::Seconds(1);

// FNV-1a, 64 bits.
uint64_t Fnv1a(absl::string_view text, uint64_t hash) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

// Bytes at the end of `text` that start a UTF-8 sequence not yet complete.
size_t IncompleteTail(absl::string_view text) {
  for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    const unsigned char c = static_cast<unsigned char>(text[text.size() - back]);
    if ((c & 0xc0) == 0x80) continue;
    const size_t need = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

}  // namespace

absl::string_view StateName(SimState state) {
  switch (state) {
    case SimState::kStarting:
      return "STARTING";
    case SimState::kIdle:
      return "IDLE";
    case SimState::kWorking:
      return "WORKING";
    case SimState::kAsking:
      return "ASKING";
    case SimState::kDone:
      return "DONE";
    case SimState::kCrashed:
      return "CRASHED";
  }
  return "?";
}

std::string NewSessionId(bool deterministic, absl::string_view seed_text) {
  uint64_t high;
  uint64_t low;
  if (deterministic) {
    high = Fnv1a(seed_text, 14695981039346656037ull);
    low = Fnv1a(seed_text, high ^ 0x9e3779b97f4a7c15ull);
  } else {
    std::random_device random;
    high = (uint64_t{random()} << 32) ^ random();
    low = (uint64_t{random()} << 32) ^ random();
  }
  char id[40];
  std::snprintf(id, sizeof(id), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(high >> 32),
                static_cast<unsigned>((high >> 16) & 0xffff), static_cast<unsigned>(high & 0xffff),
                static_cast<unsigned>(low >> 48),
                static_cast<unsigned long long>(low & 0xffffffffffffull));
  return id;
}

Simulator::Simulator(SimOptions options)
    : options_(std::move(options)), config_(options_.config) {
  cwd_ = options_.cwd;
  if (cwd_.empty()) {
    char buffer[PATH_MAX];
    if (getcwd(buffer, sizeof(buffer)) != nullptr) cwd_ = buffer;
  }
  session_id_ = options_.session_id.empty()
                    ? NewSessionId(options_.deterministic,
                                   absl::StrCat(options_.agent, "\n", config_->content))
                    : options_.session_id;
  rng_.seed(options_.deterministic ? 42 : std::random_device()());
  std::vector<std::string> set;
  for (const auto& [name, value] : config_->env) set.push_back(absl::StrCat(name, "=", value));
  set.push_back("UNDERSTUDY_SIM_SESSION_ID=" + session_id_);
  set.push_back("UNDERSTUDY_SIM_AGENT=" + options_.agent);
  set.push_back("CLAUDE_PROJECT_DIR=" + cwd_);
  env_ = EnvironmentWith(set);
}

Simulator::~Simulator() = default;

int Simulator::Run() {
  Start();
  while (!done_) PollOnce();
  StopWork();
  if (options_.trace != nullptr) options_.trace->Flush(absl::Seconds(1));
  if (terminal_ != nullptr) terminal_->Restore();
  return exit_code_;
}

void Simulator::Start() {
  input_tty_ = isatty(options_.input_fd) != 0;
  InputOptions input;
  input.lf_submits = options_.lf_submits.value_or(!input_tty_);
  decoder_ = std::make_unique<InputDecoder>(input);
  if (options_.print_mode) {
    input_open_ = false;
  } else {
    terminal_ = std::make_unique<TerminalMode>(options_.input_fd, options_.output_fd);
  }
  if (options_.handle_signals) signals_.reset(new SignalPipe({SIGTERM, SIGHUP, SIGINT}));

  SetState(SimState::kStarting, "started");
  const std::string model = options_.model.empty() ? "default" : options_.model;
  Trace(sim_event::kStarted, {{sim_attr::kSessionId, session_id_},
                        {sim_attr::kResumed, options_.resumed ? "true" : "false"},
                        {sim_attr::kModel, model},
                        {sim_attr::kSkipPermissions,
                         options_.skip_permissions ? "true" : "false"}});
  LogEvent("session", {{"session_id", session_id_},
                       {"resumed", options_.resumed},
                       {"agent", options_.agent},
                       {"cwd", cwd_}});
  if (options_.resumed && !options_.state_dir.empty()) {
    // What the session counted before it was stopped (a crash, say).
    absl::StatusOr<std::map<std::string, int>> counts =
        LoadSessionCounts(options_.state_dir, session_id_);
    if (counts.ok()) {
      uses_ = *std::move(counts);
    } else {
      LogEvent("session_state", {{"error", std::string(counts.status().message())}},
               LogLevel::kWarn);
    }
  }
  if (!options_.print_mode) {
    for (const std::string& line : config_->startup_lines) {
      Line(absl::StrReplaceAll(line,
                               {{"{session_id}", session_id_}, {"{cwd}", cwd_}, {"{model}", model}}));
    }
    if (options_.resumed) Line(absl::StrCat("Resumed session ", session_id_));
    if (options_.skip_permissions) Line("  Bypassing permissions (--dangerously-skip-permissions)");
  }
  RunHooks(HookEvent::kSessionStart, "",
           {{"source", options_.resumed ? "resume" : "startup"}});
  if (done_) return;
  if (!options_.first_prompt.empty()) queue_.push_back(options_.first_prompt);
  Schedule(Delay(config_->startup_delay), [this] { EnterIdle("ready"); });
}

void Simulator::PollOnce() {
  TakeHeld();
  if (done_) return;
  absl::Time next = std::min(escape_deadline_, child_deadline_);
  if (!timers_.empty()) next = std::min(next, timers_.begin()->first.first);
  pollfd fds[5];
  int count = 0;
  auto add = [&](int fd) {
    if (fd < 0) return -1;
    fds[count] = {fd, POLLIN, 0};
    return count++;
  };
  const int input = input_open_ ? add(options_.input_fd) : -1;
  const int signal = signals_ != nullptr ? add(signals_->read_fd()) : -1;
  const int exited = child_ != nullptr ? add(child_->exit_fd()) : -1;
  const int output = child_ != nullptr && child_output_open_ ? add(child_->stdout_fd()) : -1;
  const int answered = model_call_ != nullptr ? add(model_call_->ready_fd()) : -1;
  if (child_ != nullptr && child_->exit_fd() < 0) {
    next = std::min(next, options_.env->Now() + absl::Milliseconds(5));  // no pidfd: look now and then
  }
  const absl::Duration wait = next == absl::InfiniteFuture()
                                  ? absl::InfiniteDuration()
                                  : std::max(absl::ZeroDuration(), next - options_.env->Now());
  const int ready = poll(fds, count, PollMs(wait));
  if (ready < 0 && errno != EINTR) {
    Done(absl::StrCat("poll failed: ", ErrnoText(errno)), 1);
    return;
  }
  if (ready > 0) {
    if (signal >= 0 && fds[signal].revents != 0) {
      for (int number : signals_->Drain()) OnSignal(number);
    }
    if (input >= 0 && fds[input].revents != 0 && !done_) ReadInput();
    if (output >= 0 && fds[output].revents != 0 && !done_) DrainChildOutput();
    if (exited >= 0 && fds[exited].revents != 0 && !done_) PollChild();
    // The call may have been cancelled (model_call_ reset) by input above.
    if (answered >= 0 && fds[answered].revents != 0 && !done_ && model_call_ != nullptr) {
      ModelAnswered();
    }
  }
  if (child_ != nullptr && child_->exit_fd() < 0 && !done_) PollChild();
  absl::Time now = options_.env->Now();
  if (!done_ && escape_deadline_ <= now) {
    escape_deadline_ = absl::InfiniteFuture();
    decoder_->Flush([this](InputEvent event) { HandleInput(event); });
  }
  if (!done_ && child_ != nullptr && child_deadline_ <= now) {
    child_->Signal(SIGKILL);
    child_->WaitFor(absl::Seconds(1));
    CompletionEnded("timeout", -1,
                    absl::StrCat("timed out after ", absl::FormatDuration(completion_.timeout)));
  }
  while (!done_ && !timers_.empty() && timers_.begin()->first.first <= now) {
    std::function<void()> fn = std::move(timers_.begin()->second);
    timers_.erase(timers_.begin());
    fn();
  }
}

void Simulator::ReadInput() {
  char buffer[65536];
  const ssize_t n = read(options_.input_fd, buffer, sizeof(buffer));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    InputClosed();
    return;
  }
  FeedInput(absl::string_view(buffer, static_cast<size_t>(n)), options_.env->Now());
}

void Simulator::FeedInput(absl::string_view bytes, absl::Time at) {
  last_input_at_ = at;
  // Each event is acted on before the bytes after it are decoded (a Ctrl-C
  // clears the line the following text is typed into).
  decoder_->Feed(bytes, [this](InputEvent event) { HandleInput(event); });
  escape_deadline_ = decoder_->escape_pending() ? at + InputDecoder::kEscapeTimeout
                                                : absl::InfiniteFuture();
}

HookWatch Simulator::WatchDuringHook() {
  HookWatch watch;
  const int input = input_open_ && !held_input_closed_ ? options_.input_fd : -1;
  const int signal = signals_ != nullptr ? signals_->read_fd() : -1;
  if (input >= 0) watch.fds.push_back(input);
  if (signal >= 0) watch.fds.push_back(signal);
  watch.on_ready = [this, input](int fd) { return fd == input ? HoldInput() : HoldSignals(); };
  return watch;
}

WatchResult Simulator::HoldInput() {
  char buffer[65536];
  const ssize_t n = read(options_.input_fd, buffer, sizeof(buffer));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return WatchResult::kKeepWatching;
  if (n <= 0) {
    held_input_closed_ = true;
    // A terminal gone ends the session: the hook is not waited for (a pane
    // killed leaves nobody to see what it decides).
    return input_tty_ ? WatchResult::kAbandon : WatchResult::kStopWatching;
  }
  held_input_.append(buffer, static_cast<size_t>(n));
  last_input_at_ = options_.env->Now();
  LogEvent("input_during_hook", {{"bytes", n}, {"held", held_input_.size()}}, LogLevel::kDebug);
  return WatchResult::kKeepWatching;
}

WatchResult Simulator::HoldSignals() {
  for (int number : signals_->Drain()) held_signals_.push_back(number);
  // Every signal the session handles ends it.
  return held_signals_.empty() ? WatchResult::kKeepWatching : WatchResult::kAbandon;
}

void Simulator::AfterHook() {
  const uint64_t epoch = work_epoch_;
  auto stopped = [&] { return done_ || work_epoch_ != epoch; };
  for (;;) {
    std::vector<int> signals;
    signals.swap(held_signals_);
    for (int number : signals) OnSignal(number);
    if (done_) return;
    // One byte at a time, so that what follows an interrupt is not acted on
    // before the work it stopped has unwound: the loop takes the rest.
    size_t used = 0;
    while (used < held_input_.size() && !stopped()) {
      decoder_->Feed(absl::string_view(held_input_).substr(used++, 1),
                     [this](InputEvent event) { HandleInput(event); });
    }
    held_input_.erase(0, used);
    if (stopped()) return;
    if (held_input_closed_) {
      held_input_closed_ = false;
      InputClosed();
      return;
    }
    // A lone ESC is the Escape key once kEscapeTimeout passes without more
    // bytes (the rest of an arrow key's sequence may still be on its way).
    if (!decoder_->escape_pending()) break;
    const absl::Duration left = last_input_at_ + InputDecoder::kEscapeTimeout - options_.env->Now();
    if (left <= absl::ZeroDuration()) {
      decoder_->Flush([this](InputEvent event) { HandleInput(event); });
      break;
    }
    pollfd fds[2] = {{input_open_ && !held_input_closed_ ? options_.input_fd : -1, POLLIN, 0},
                     {-1, POLLIN, 0}};
    if (signals_ != nullptr) fds[1].fd = signals_->read_fd();
    if (poll(fds, 2, PollMs(left)) > 0) {
      if (fds[0].revents != 0) HoldInput();
      if (fds[1].revents != 0) HoldSignals();
    }
  }
  escape_deadline_ = absl::InfiniteFuture();
}

void Simulator::TakeHeld() {
  std::vector<int> signals;
  signals.swap(held_signals_);
  for (int number : signals) OnSignal(number);
  if (!held_input_.empty() && !done_) {
    std::string bytes;
    bytes.swap(held_input_);
    FeedInput(bytes, last_input_at_);
  }
  if (held_input_closed_ && !done_) {
    held_input_closed_ = false;
    InputClosed();
  }
}

void Simulator::InputClosed() {
  input_open_ = false;
  if (input_tty_) {
    Done("terminal closed", 0);
    return;
  }
  // A pipe used up: what it held is still done, then the session ends.
  decoder_->Flush([this](InputEvent event) { HandleInput(event); });
  if (!done_ && !decoder_->line().empty()) OnSubmit(decoder_->line());
  decoder_->ClearLine();
  if ((state_ == SimState::kIdle && queue_.empty()) || state_ == SimState::kAsking) {
    Done("end of input", 0);
  }
}

void Simulator::HandleInput(const InputEvent& event) {
  if (done_) return;  // what follows the end (Ctrl-D, Ctrl-C twice) is not read
  switch (event.kind) {
    case InputEvent::Kind::kText:
      if (prompt_shown_) Echo(event.text, false);
      break;
    case InputEvent::Kind::kErase:
      if (!prompt_shown_ || event.text == "\n") break;
      if (!echo_held_.empty()) {
        echo_held_.clear();  // a character not shown yet
      } else {
        Raw("\b \b");
      }
      break;
    case InputEvent::Kind::kSubmit:
      OnSubmit(event.text);
      break;
    case InputEvent::Kind::kInterrupt:
      OnInterrupt(event.key);
      break;
    case InputEvent::Kind::kEndOfInput:
      if (state_ == SimState::kIdle || state_ == SimState::kStarting) {
        Line("Bye.");
        Done("end of input (Ctrl-D)", 0);
      }
      break;
    case InputEvent::Kind::kTooLong:
      LogEvent("prompt_refused", {{"bytes", event.bytes}});
      if (prompt_shown_) {
        Line(absl::StrCat("Error: prompt too long (", event.bytes, " bytes; at most ",
                          InputOptions().max_prompt_bytes, ")"));
        ShowPrompt();
      }
      break;
  }
}

void Simulator::OnSubmit(std::string prompt) {
  if (prompt_shown_) Echo("", true);
  const std::string trimmed(absl::StripAsciiWhitespace(prompt));
  if (state_ == SimState::kAsking && prompt_shown_) {
    if (trimmed.empty()) return;  // Enter alone: still waiting for the answer
    Raw("\n");
    prompt_shown_ = false;
    Answer(prompt);
    return;
  }
  if (state_ != SimState::kIdle || !prompt_shown_) {
    if (trimmed.empty()) return;
    LogEvent("prompt_queued", {{"bytes", prompt.size()}, {"queued", queue_.size() + 1}},
             LogLevel::kDebug);
    queue_.push_back(std::move(prompt));
    return;
  }
  if (trimmed.empty()) return;  // Enter on an empty line: nothing, as Claude Code does
  Raw("\n");
  prompt_shown_ = false;
  RunPromptOrCommand(prompt);
}

void Simulator::RunPromptOrCommand(const std::string& prompt) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(prompt);
  if (trimmed == "/exit" || trimmed == "/quit") {
    Line("Bye.");
    Done("exit command", 0);
    return;
  }
  StartPrompt(prompt);
}

void Simulator::OnInterrupt(InputEvent::Key key) {
  const absl::Time now = options_.env->Now();
  if (state_ == SimState::kWorking || state_ == SimState::kAsking) {
    StopWork();
    asking_ = nullptr;
    Line("  ⎿  Interrupted by user");
    LogEvent("interrupted", {{"key", key == InputEvent::Key::kEscape ? "escape" : "ctrl-c"}});
    if (!queue_.empty()) {
      // Claude Code hands queued prompts back to the input line.
      std::vector<std::string> lines(queue_.begin(), queue_.end());
      if (!decoder_->line().empty()) lines.push_back(decoder_->line());
      queue_.clear();
      decoder_->SetLine(absl::StrJoin(lines, "\n"));
    }
    SetState(SimState::kIdle, "interrupted");
    ShowPrompt();
    return;
  }
  if (key == InputEvent::Key::kEscape) return;
  if (!decoder_->line().empty()) {
    decoder_->ClearLine();
    if (prompt_shown_) ShowPrompt();
    return;
  }
  if (now < ctrl_c_until_) {
    Line("Bye.");
    Done("Ctrl-C twice", 0);
    return;
  }
  ctrl_c_until_ = now + kCtrlCWindow;
  if (prompt_shown_) {
    Line("Press Ctrl-C again to exit");
    ShowPrompt();
  }
}

void Simulator::OnSignal(int signal) {
  if (signal == SIGHUP) {
    Done("terminal closed (SIGHUP)", 0);
  } else if (signal == SIGTERM) {
    Done("SIGTERM", 128 + SIGTERM);
  } else if (signal == SIGINT) {
    Done("SIGINT", 128 + SIGINT);
  }
}

void Simulator::SetState(SimState to, absl::string_view reason) {
  const std::string from = started_ ? std::string(StateName(state_)) : "NONE";
  started_ = true;
  state_ = to;
  options_.log->State(StateName(to), from, reason);
  Trace(sim_event::kState, {{sim_attr::kState, std::string(StateName(to))},
                      {sim_attr::kStateFrom, from},
                      {sim_attr::kReason, std::string(reason)}});
}

void Simulator::EnterIdle(absl::string_view reason) {
  SetState(SimState::kIdle, reason);
  if (options_.print_mode) {
    // -p: the one prompt, then the end.
    if (queue_.empty()) {
      Done("printed", turn_failed_ ? 1 : 0);
      return;
    }
    std::string prompt = std::move(queue_.front());
    queue_.clear();
    StartPrompt(prompt);
    return;
  }
  if (!input_open_ && queue_.empty()) {
    Done("end of input", 0);
    return;
  }
  ShowPrompt();
  if (!queue_.empty()) {
    // The next queued prompt, shown as if typed now.
    std::string prompt = std::move(queue_.front());
    queue_.pop_front();
    Echo(prompt, true);
    Raw("\n");
    prompt_shown_ = false;
    RunPromptOrCommand(prompt);
  }
}

void Simulator::Done(absl::string_view reason, int exit_code) {
  if (done_) return;
  StopWork();
  SetState(SimState::kDone, reason);
  done_ = true;
  exit_code_ = exit_code;
}

void Simulator::Schedule(absl::Duration after, std::function<void()> fn) {
  timers_.emplace(std::make_pair(options_.env->Now() + after, timer_seq_++), std::move(fn));
}

absl::Duration Simulator::Delay(absl::Duration configured) {
  if (options_.delay_override.has_value()) return *options_.delay_override;
  double factor = config_->timing.scale;
  const double jitter = options_.deterministic ? 0.0 : config_->timing.jitter;
  if (jitter > 0) factor *= 1.0 + jitter * std::uniform_real_distribution<double>(-1.0, 1.0)(rng_);
  return std::max(absl::ZeroDuration(), configured * factor);
}

void Simulator::Raw(absl::string_view bytes) {
  if (bytes.empty() || !output_open_) return;
  if (!WriteFully(options_.output_fd, {bytes}, -1).ok()) {
    output_open_ = false;
    Done("terminal closed", 0);
    return;
  }
  bytes_written_ += bytes.size();
  at_line_start_ = bytes.back() == '\n';
}

void Simulator::Line(absl::string_view text) {
  if (!at_line_start_) Raw("\n");
  Raw(absl::StrCat(validation::SanitizeUtf8(text), "\n"));
}

void Simulator::ShowPrompt() {
  if (!at_line_start_) Raw("\n");
  if (bytes_written_ > 0) Raw("\n");
  Raw(config_->prompt);
  prompt_shown_ = true;
  echo_held_.clear();
  Echo(decoder_->line(), true);
}

void Simulator::Echo(absl::string_view text, bool flush) {
  echo_held_.append(text.data(), text.size());
  const size_t hold = flush ? 0 : IncompleteTail(echo_held_);
  const std::string shown = validation::SanitizeUtf8(
      absl::string_view(echo_held_).substr(0, echo_held_.size() - hold));
  echo_held_.erase(0, echo_held_.size() - hold);
  Raw(absl::StrReplaceAll(shown, {{"\n", "\n  "}}));
}

void Simulator::Trace(std::string kind, TraceAttributes attributes) {
  if (options_.trace != nullptr) options_.trace->Emit(std::move(kind), std::move(attributes));
}

void Simulator::LogEvent(absl::string_view event, EventLog::Fields fields, LogLevel level) {
  options_.log->Write(event, fields, level);
}

}  // namespace sim
}  // namespace understudy
