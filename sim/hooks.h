// Hooks with Claude Code's contract (docs/sim.md#hooks): a settings file
// ({"hooks": {"PreToolUse": [{"matcher": "Bash|Edit", "hooks": [{"type":
// "command", "command": "...", "timeout": 60}]}], ...}}) names commands for
// the events SessionStart, UserPromptSubmit, PreToolUse, PostToolUse and
// Stop. Each runs through /bin/sh -c in the session's cwd with the event's
// JSON payload on stdin, the caller's environment plus CLAUDE_PROJECT_DIR,
// bounded by its timeout (default 60 s; the process group is killed after).
//
// How an outcome is honoured (the agent's contract, kept):
//   exit 0            success; stdout JSON may still decide (below)
//   exit 2            blocking: PreToolUse stops the tool, UserPromptSubmit
//                     drops the prompt, Stop keeps the agent working, with
//                     stderr as the reason; PostToolUse/SessionStart: stderr shown
//   other exit / killed / timeout   non-blocking error: reported, work goes on
//   stdout JSON {"decision": "block", "reason": "..."}     as exit 2
//   stdout JSON {"hookSpecificOutput": {"permissionDecision": "deny", ...}}
//                     PreToolUse: as exit 2 ("allow"/"ask": not blocked)
//   stdout JSON {"continue": false, "stopReason": "..."}   the agent stops
//                     working and returns to its prompt
//
// Thread-compatible: a Hooks is immutable after loading; RunHooks may be
// called from one thread at a time per Hooks (it blocks while hooks run).
#ifndef UNDERSTUDY_SIM_HOOKS_H_
#define UNDERSTUDY_SIM_HOOKS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/subprocess.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"

namespace understudy {
namespace sim {

enum class HookEvent { kSessionStart, kUserPromptSubmit, kPreToolUse, kPostToolUse, kStop };

// "SessionStart", "UserPromptSubmit", ...
absl::string_view HookEventName(HookEvent event);

struct HookCommand {
  std::string command;
  absl::Duration timeout = absl::Seconds(60);
};

struct HookMatcher {
  // PreToolUse/PostToolUse: an RE2 fully matching the tool name; "" or "*"
  // matches every tool. Ignored for the other events.
  std::string matcher;
  std::vector<HookCommand> hooks;
};

class Hooks {
 public:
  // No hooks at all.
  Hooks() = default;

  // Reads settings files (JSON) and appends their hooks in the order given;
  // a path that does not exist is skipped when `optional`. INVALID_ARGUMENT
  // naming the file and the JSON path for anything malformed
  // ("settings.json: hooks.PreToolUse[0].hooks[1].timeout: expected a
  // positive number of seconds, got \"x\"").
  absl::Status AddFile(const std::string& path, bool optional);
  // The same from text (tests, and AddFile's parser).
  absl::Status AddText(absl::string_view json_text, absl::string_view source);

  // The commands that apply to `event` (and `tool_name` for tool events),
  // in settings order.
  std::vector<HookCommand> For(HookEvent event, absl::string_view tool_name) const;
  bool empty() const;

 private:
  struct Entry {
    HookEvent event;
    std::string matcher;
    std::shared_ptr<const RE2> pattern;  // null: every tool
    HookCommand command;
  };
  std::vector<Entry> entries_;
};

// What one hook command did.
struct HookResult {
  std::string command;
  int exit_code = -1;     // -1 when killed or not started
  bool timed_out = false;
  std::string stdout_text;  // at most 64 KiB kept
  std::string stderr_text;  // at most 64 KiB kept
  absl::Duration duration;
  // The decision read from the exit status and stdout (above).
  // Exit 2 or decision block (PreToolUse, UserPromptSubmit, Stop), or
  // permissionDecision deny (PreToolUse). PostToolUse/SessionStart cannot
  // block: there exit 2 is outcome "error" with stderr as the reason.
  bool blocked = false;
  bool stop = false;       // {"continue": false}
  // The caller's watch abandoned it (the session ended while it ran): its
  // process group was killed; nothing it printed is acted on.
  bool cancelled = false;
  std::string reason;      // stderr (exit 2) or the JSON reason / stopReason
  // "ok", "blocked", "stopped", "error" (other exit), "timeout", "cancelled",
  // "not started"
  std::string outcome;
};

// What the caller goes on watching while a hook runs (RunOptions::watch_fds
// and on_ready, base/subprocess.h): the simulator's terminal and signal
// pipe, so that a keystroke or the terminal closing is seen while it runs.
struct HookWatch {
  std::vector<int> fds;
  std::function<WatchResult(int fd)> on_ready;
};

// Runs `command` for `event` with `payload` (serialized compact, one line,
// then EOF) on stdin; `env` is the whole environment ("NAME=value"), to
// which CLAUDE_PROJECT_DIR=`cwd` is added when it lacks one; `cwd` its
// directory. Never fails: a command that cannot start is an outcome ("not
// started", reason saying why). At the timeout the process group gets
// SIGTERM, then SIGKILL 2 s later; when `watch.on_ready` abandons it,
// SIGKILL at once (outcome "cancelled"). Blocks the calling thread, which
// meanwhile serves `watch`.
HookResult RunHook(HookEvent event, const HookCommand& command, const nlohmann::json& payload,
                   const std::vector<std::string>& env, const std::string& cwd,
                   const HookWatch& watch = {});

// The payload Claude Code sends: session_id, transcript_path, cwd,
// hook_event_name, plus `fields` (permission_mode, tool_name, tool_input,
// tool_use_id, tool_response, prompt, source, stop_hook_active) merged in.
nlohmann::json HookPayload(HookEvent event, absl::string_view session_id,
                           absl::string_view transcript_path, absl::string_view cwd,
                           nlohmann::json fields);

// A tool's result as PostToolUse's `tool_response`, an object as Claude Code
// sends it: Bash's {"stdout", "stderr", "interrupted", "isImage"}; any other
// tool's {"output"}.
nlohmann::json ToolResponse(absl::string_view tool, absl::string_view result);

}  // namespace sim
}  // namespace understudy

#endif  // UNDERSTUDY_SIM_HOOKS_H_
