// The simulated terminal agent (docs/sim.md): one session of `understudy
// sim`, from the start-up lines to DONE, in one thread.
//
//   SimOptions options;
//   options.config = std::make_shared<SimConfig>(DefaultSimConfig());
//   options.log = &log;                     // state changes, hook calls
//   int exit_code = Simulator(std::move(options)).Run();
//
// Run polls the terminal (decoded by sim/input.h), the signals that end the
// session, the completion command's exit and output, a model behaviour's call
// (sim/model_backend.h: it runs on a thread of its own and wakes the loop
// when answered), and its timers (the behaviour's delay, event offsets, retry
// delays, the lone-ESC timeout, the Ctrl-C double-press window), so that
// Escape interrupts whatever is under way. Interrupting, or ending the
// session (Done, signals, the terminal closed), cancels the model call and
// waits at most ModelCall::kCancelWait for it; a cancelled call's late answer
// is dropped unseen. Hooks (sim/hooks.h) run synchronously at their moments:
// SessionStart at start, UserPromptSubmit before the work (and before an
// answer to a question is taken), PreToolUse and PostToolUse around each tool
// event, Stop when a turn ends or a question waits. While one runs the loop
// still reads the terminal and the signals: what is typed is held and acted
// on when the hook ends (an interrupt then stops the work before anything
// the hook came before, a tool say, happens), and a closed terminal or an
// ending signal kills the hook's process group and ends the session at once.
//
// What the pane shows (the output contract orchestrators match):
//   start-up lines, a blank line, the prompt indicator (config `prompt`,
//   "> ") with no newline; the typed prompt echoed (a newline as "\n  ");
//   on submit "\n", then "⏺ Tool(summary)" / "  ⎿  result" per tool event
//   ("  ⎿  Blocked by hook: REASON"), the output lines, a failure's message
//   ("Error: ..."), "Error: completion command failed: exited with status 1";
//   then a blank line and the indicator again, always the last thing written.
//   An interrupt prints "  ⎿  Interrupted by user"; a question prints its
//   text and "  1. option" lines, then the indicator; `/exit` and Ctrl-D on an
//   empty line print "Bye.".
//
// Not thread-safe; Run once per Simulator. Everything here happens on Run's
// thread; the only other thread is a model call's, which shares nothing with
// the Simulator but its ModelCall (result, cancellation, wake-up descriptor).
#ifndef UNDERSTUDY_SIM_SIMULATOR_H_
#define UNDERSTUDY_SIM_SIMULATOR_H_

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/env.h"
#include "base/subprocess.h"
#include "nlohmann/json.hpp"
#include "sim/config.h"
#include "sim/event_log.h"
#include "sim/hooks.h"
#include "sim/input.h"
#include "sim/model_backend.h"
#include "sim/terminal.h"
#include "sim/trace_sink.h"

namespace understudy {
namespace sim {

enum class SimState { kStarting, kIdle, kWorking, kAsking, kDone, kCrashed };

// "STARTING", "IDLE", ...
absl::string_view StateName(SimState state);

// A session id shaped like Claude Code's (8-4-4-4-12 hex): random, or, when
// `deterministic`, derived from `seed_text` (the agent name and the config's
// content, not its path) so that two runs print the same bytes.
std::string NewSessionId(bool deterministic, absl::string_view seed_text);

struct SimOptions {
  std::shared_ptr<const SimConfig> config;  // required
  Hooks hooks;
  std::string agent = "sim";       // the trace's agent, UNDERSTUDY_SIM_AGENT
  std::string model;               // --model: start-up lines' {model}, trace
  std::string session_id;          // "" → NewSessionId
  bool resumed = false;            // --resume / --continue: SessionStart source "resume"
  bool skip_permissions = false;   // --dangerously-skip-permissions
  std::string first_prompt;        // submitted at start when not empty
  // -p: run `first_prompt` and end: no start-up lines, no indicator, no
  // terminal input; exit 0 when it completed, 1 when it failed.
  bool print_mode = false;
  int input_fd = 0;
  int output_fd = 1;
  // LF submits too; default: when `input_fd` is not a terminal.
  std::optional<bool> lf_submits;
  // UNDERSTUDY_SIM_DELAY: replaces every delay, event offset and duration,
  // retry delay and the start-up delay.
  std::optional<absl::Duration> delay_override;
  // UNDERSTUDY_SIM_DETERMINISTIC: no jitter; derived session id.
  bool deterministic = false;
  // Where the session's fail_then_succeed counts are kept across a restart
  // with --resume (sim/session_state.h); "" keeps them in memory only.
  std::string state_dir;
  std::string cwd;              // "" → the current directory
  bool handle_signals = true;   // SIGTERM, SIGHUP, SIGINT end the session
  EventLog* log = nullptr;               // required; borrowed for Run
  TraceSink* trace = nullptr;            // borrowed; null: no trace
  // Borrowed; null: `model` behaviours fail. Start is called on Run's thread.
  ModelBackend* model_backend = nullptr;
  // The crash behaviour's exit; default: restore, then _exit / raise. Tests
  // record it instead, and Run returns its code.
  std::function<void(int exit_code, int signal)> on_crash;
  // The time the session's timers and input timeouts run on. Not owned. The
  // run loop still waits on its descriptors in real time (poll), so a fake
  // Env only moves what the simulator reads as now.
  Env* env = Env::Default();
};

class Simulator {
 public:
  explicit Simulator(SimOptions options);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Runs the session to its end: 0 when it ended normally (/exit, Ctrl-D,
  // Ctrl-C twice, the terminal closed, the input of a pipe used up); 143
  // SIGTERM; 130 SIGINT; with -p, 1 when the prompt failed. The crash
  // behaviour does not return (unless `on_crash` does).
  int Run();

  const std::string& session_id() const { return session_id_; }
  SimState state() const { return state_; }

 private:
  struct ToolRun {
    std::string id;
    bool blocked = false;
  };
  struct HookOutcome {
    bool blocked = false;
    bool stop = false;
    // The work the hooks ran for was stopped while they ran (an interrupt
    // typed meanwhile, the session ended): the caller goes no further.
    bool cancelled = false;
    std::string reason;
  };

  // simulator.cc: the loop, the terminal, states.
  void Start();
  void PollOnce();
  void ReadInput();
  // Decodes `bytes` that arrived at `at`, acting on each event.
  void FeedInput(absl::string_view bytes, absl::Time at);
  void InputClosed();
  // While a hook runs (its HookWatch): input and signals are held, not
  // acted on; a closed terminal or an ending signal abandons the hook.
  HookWatch WatchDuringHook();
  WatchResult HoldInput();
  WatchResult HoldSignals();
  // After a hook: the held signals, then the held input up to the first
  // event that stops the work (the rest waits for the loop), then a held
  // lone ESC once kEscapeTimeout has passed since it came.
  void AfterHook();
  // At the top of the loop: everything still held.
  void TakeHeld();
  // Acts on one input event; nothing once the session is done.
  void HandleInput(const InputEvent& event);
  void OnSubmit(std::string prompt);
  void OnInterrupt(InputEvent::Key key);
  void OnSignal(int signal);
  void SetState(SimState to, absl::string_view reason);
  void EnterIdle(absl::string_view reason);
  void Done(absl::string_view reason, int exit_code);
  void Schedule(absl::Duration after, std::function<void()> fn);
  absl::Duration Delay(absl::Duration configured);
  // Output: raw bytes; a whole line (starting one first when needed); the
  // indicator with the typed line echoed.
  void Raw(absl::string_view bytes);
  void Line(absl::string_view text);
  void ShowPrompt();
  void Echo(absl::string_view text, bool flush);
  void Trace(std::string kind, TraceAttributes attributes);
  void LogEvent(absl::string_view event, EventLog::Fields fields,
                LogLevel level = LogLevel::kInfo);

  // A submitted or queued prompt: `/exit` and `/quit` end the session,
  // anything else is work.
  void RunPromptOrCommand(const std::string& prompt);

  // simulator_turn.cc: a prompt's work.
  void StartPrompt(const std::string& prompt);
  void Act(const Behaviour& behaviour);
  void StartWork(const Behaviour& behaviour);
  void ToolStart(const ToolEvent& event, size_t index);
  void ToolEnd(const ToolEvent& event, size_t index);
  // A tool's start (trace, PreToolUse hooks, its line): false when a hook
  // blocked it or stopped the turn (then the state is no longer WORKING).
  bool ToolBegin(const std::string& id, const std::string& tool, const std::string& input_json);
  // Its result (line, trace, PostToolUse hooks).
  void ToolFinish(const std::string& id, const std::string& tool, const std::string& input_json,
                  const std::string& result);
  // A hook said {"continue": false}: the turn ends, no Stop hooks.
  void StoppedByHook(const std::string& reason);
  void FinishWork(const Behaviour& behaviour);
  void StartCompletion();
  void PollChild();
  void DrainChildOutput();
  void CompletionEnded(const std::string& outcome, int exit_code, const std::string& description);
  void Fail(const std::string& message);
  void Ask(const Behaviour& behaviour);
  // ASKING: the question is up; Stop hooks, then the indicator.
  void AwaitAnswer();
  void Answer(const std::string& answer);
  // A fail_then_succeed takes a prompt: true when this turn fails.
  bool CountFailure(const Behaviour& behaviour);
  // Starts the model call; ModelAnswered goes on once the loop sees its answer.
  void Model(const Behaviour& behaviour);
  void ModelAnswered();
  void Crash(const Behaviour& behaviour);
  // Stop hooks, then IDLE.
  void EndTurn(absl::string_view reason, bool failed);
  void StopWork();  // timers, the completion command, the model call
  HookOutcome RunHooks(HookEvent event, absl::string_view tool, nlohmann::json fields);
  HookOutcome RunStopHooks();

  SimOptions options_;
  std::shared_ptr<const SimConfig> config_;
  std::string session_id_;
  std::string cwd_;
  std::vector<std::string> env_;  // the completion's and hooks' environment
  std::mt19937_64 rng_;

  SimState state_ = SimState::kStarting;
  bool started_ = false;  // STARTING has been logged
  bool done_ = false;
  int exit_code_ = 0;
  std::unique_ptr<InputDecoder> decoder_;
  std::unique_ptr<TerminalMode> terminal_;
  std::unique_ptr<SignalPipe> signals_;
  bool input_tty_ = false;
  bool input_open_ = true;
  bool output_open_ = true;
  bool prompt_shown_ = false;  // the indicator is up: typed text is echoed
  bool at_line_start_ = true;
  uint64_t bytes_written_ = 0;
  std::string echo_held_;  // an incomplete UTF-8 sequence of the echo
  absl::Time escape_deadline_ = absl::InfiniteFuture();
  absl::Time last_input_at_ = absl::InfinitePast();  // when input last arrived
  // Held while a hook ran (AfterHook, TakeHeld).
  std::string held_input_;
  bool held_input_closed_ = false;
  std::vector<int> held_signals_;
  // Bumped by StopWork: a hook's caller compares it to see that the work it
  // ran for was stopped while it ran.
  uint64_t work_epoch_ = 0;
  absl::Time ctrl_c_until_ = absl::InfinitePast();
  std::deque<std::string> queue_;  // prompts submitted while busy

  std::map<std::pair<absl::Time, uint64_t>, std::function<void()>> timers_;
  uint64_t timer_seq_ = 0;

  // The turn under way.
  std::string prompt_;
  bool turn_failed_ = false;
  const Behaviour* asking_ = nullptr;
  std::string answer_;    // the answer that led to the work under way
  bool failing_ = false;  // a fail_then_succeed's turn that fails
  std::vector<ToolRun> tools_;
  int tool_counter_ = 0;
  // fail_then_succeed: prompts taken, by behaviour path; kept in
  // options_.state_dir across --resume.
  std::map<std::string, int> uses_;
  std::map<std::string, std::string> completion_outputs_;
  const Behaviour* completing_ = nullptr;
  Completion completion_;
  std::vector<std::string> completion_argv_;
  int attempt_ = 0;
  std::unique_ptr<ChildProcess> child_;
  bool child_output_open_ = false;
  std::string child_output_;  // a partial line of the command's output
  absl::Time child_deadline_ = absl::InfiniteFuture();
  std::unique_ptr<ModelCall> model_call_;  // the model behaviour's call in flight
  const Behaviour* model_behaviour_ = nullptr;  // its behaviour, owned by config_
};

}  // namespace sim
}  // namespace understudy

#endif  // UNDERSTUDY_SIM_SIMULATOR_H_
