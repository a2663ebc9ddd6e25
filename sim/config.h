// The simulated terminal agent's script (docs/sim.md): what `understudy sim`
// prints at start-up, how it times its work, and which behaviour answers a
// prompt — first match wins, regex or substring on the prompt, else
// `default`. Read from YAML or JSON (`--config`, UNDERSTUDY_SIM_CONFIG) and
// validated the way scenarios are: every problem at once, each with its path,
// line and a suggestion.
//
// Two dialects describe the same SimConfig: understudy's own
// (`schema: understudy.sim/v1`, `behaviours`), and the MEOW orchestrator's
// (`timing`, `hooks`, `behaviors` each with `match` and an `action` object,
// `default`, `logging`; docs/sim.md#the-meow-dialect). ParseSimConfig tells
// them apart by their keys (IsMeowDocument in sim/config_checker.h).
//
//   absl::StatusOr<SimConfig> config = ParseSimConfig(text, "coder.yaml");
//   const Behaviour& b = config->Select(prompt);
//
// A SimConfig is immutable once parsed and may be shared between threads.
#ifndef UNDERSTUDY_SIM_CONFIG_H_
#define UNDERSTUDY_SIM_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "re2/re2.h"
#include "validation/problems.h"

namespace understudy {
namespace sim {

// "understudy.sim/v1": the optional `schema:` of a sim config.
inline constexpr absl::string_view kSimSchema = "understudy.sim/v1";
// Larger configs are refused before parsing.
inline constexpr size_t kMaxSimConfigBytes = 1 << 20;
// Mappings and sequences nested deeper than this are refused (inline `then`
// behaviours nest too).
inline constexpr int kMaxSimConfigDepth = 64;
// Nodes visited, aliases expanded, before a config is refused.
inline constexpr size_t kMaxSimConfigNodes = 200000;

// What a behaviour does with the prompt it matched.
enum class ActionKind {
  kComplete,         // work for `delay` (events meanwhile), print `output`, run the completion
  kAsk,              // print question + options, fire Stop, wait for the answer, go on with `then`
  kFail,             // print `message` as an error; no completion
  kFailThenSucceed,  // the first `failures` prompts it takes fail, later ones complete
  kHang,             // WORKING until interrupted (Escape / Ctrl-C) or killed
  kCrash,            // exit with `exit_code`, or die by `signal`
  kModel,            // ask understudy's Model service, act on the answer, then complete
};

// "complete", "ask", ... as written in the config.
absl::string_view ActionName(ActionKind kind);

// Which dialect a config was written in.
enum class Dialect { kUnderstudy, kMeow };

// "understudy" or "meow".
absl::string_view DialectName(Dialect dialect);

// A timed tool event during the work: tool-starting at `at` (PreToolUse
// hooks first; a blocking hook stops the tool), tool-completed at
// `at + duration` (PostToolUse hooks).
struct ToolEvent {
  absl::Duration at = absl::ZeroDuration();
  absl::Duration duration = absl::ZeroDuration();
  std::string tool;        // "Bash", "Edit", ...
  std::string input_json;  // the tool input, a JSON object as compact text ("{}" default)
  std::string result;      // what the tool "returned" (text)
};

// What to do when the completion command fails (exits non-zero, is killed,
// times out or cannot be started).
enum class OnFailure { kGiveUp, kRetry, kStay };

// The command run when a behaviour completes.
struct Completion {
  // argv; empty means no completion command (the work just ends).
  // A string in the config is run as {"/bin/sh", "-c", string}.
  std::vector<std::string> command;
  // `command` is {"/bin/sh", "-c", LINE}, written as a command line: the
  // outputs are appended to LINE as shell-quoted words (appended to argv
  // they would be the shell's $0, $1, ..., never seen by LINE's command).
  bool is_line = false;
  // Added once per output, sorted by key: `--output key=value`.
  std::string output_flag = "--output";
  OnFailure on_failure = OnFailure::kGiveUp;
  int retries = 2;  // kRetry: attempts after the first
  absl::Duration retry_delay = absl::Milliseconds(100);
  absl::Duration timeout = absl::Seconds(30);
};

struct Behaviour;

// An `ask` option: what the answer may be (its number "1", "2", ..., or its
// text, case-insensitively) and what follows.
struct AskOption {
  std::string answer;
  // The behaviour that continues the work: a named behaviour of the config,
  // or one written inline. Never null after parsing.
  std::shared_ptr<const Behaviour> then;
};

struct Behaviour {
  std::string name;   // "" when unnamed; unique when set
  int index = -1;     // position in `behaviours`, -1 for `default` or inline ones
  std::string path;   // "behaviours[2]", "default", "behaviours[0].options[1].then"
  // Conditions, all of which must hold; none: matches every prompt.
  std::string contains;           // substring of the prompt
  std::shared_ptr<const RE2> matches;  // RE2, found anywhere in the prompt; null when not given
  ActionKind action = ActionKind::kComplete;
  absl::Duration delay = absl::ZeroDuration();
  std::vector<std::string> output;           // lines printed before completing
  std::map<std::string, std::string> outputs;  // completion --output key=value
  std::vector<ToolEvent> events;
  std::optional<Completion> completion;  // overrides SimConfig::completion
  // kAsk
  std::string question;
  // kAsk: an answer that is none of the options is taken too, and goes on
  // with `then` (the MEOW dialect's asks: options are only shown).
  bool any_answer = false;
  // The answer to the question that led here is passed to the completion
  // as this output ("" none; the MEOW dialect's `answer`).
  std::string answer_output;
  // Each option's `then` is its own, else the behaviour's `then`, else a
  // plain `complete`. An ask written without options has exactly one, with
  // answer "" (printed as no option; any answer selects it) and the
  // behaviour's `then`.
  std::vector<AskOption> options;
  // kAsk: the behaviour-level `then` as written (also the implicit option's
  // and the fallback of options without their own); null when not given.
  std::shared_ptr<const Behaviour> then;
  // kFail (and each failure of kFailThenSucceed)
  std::string message = "Error: the task failed";
  // kFailThenSucceed; its failing turns crash (with exit_code or signal)
  // instead of printing `message` when crash_on_failure.
  int failures = 1;
  bool crash_on_failure = false;
  // kCrash: exit_code, or signal when non-zero (SIGKILL, SIGSEGV, ...)
  int exit_code = 1;
  int signal = 0;
  // kModel: the agent and model named in the request (agent "" = the sim's)
  std::string model_agent;
  std::string model = "understudy-sim";
  std::string system_prompt;
};

struct Timing {
  // Every delay, event offset and startup_delay is multiplied by this.
  double scale = 1.0;
  // Each delay varies by up to ± this fraction, from a seeded generator;
  // 0 under UNDERSTUDY_SIM_DETERMINISTIC=1.
  double jitter = 0.0;
};

// How the agent logs (sim/event_log.h); the flags and environment
// (--log-format, --log-file, --log-level) override these.
struct LogSettings {
  std::string level;   // "debug", "info", "warn", "error"; "" everything
  std::string format;  // "text", "json"; "" text
  std::string file;    // a path; "" stderr
};

struct SimConfig {
  Dialect dialect = Dialect::kUnderstudy;
  std::string source;   // file name, for messages
  std::string content;  // the text parsed: what a deterministic session id derives from
  std::string name;    // the agent's name in the trace when --agent is not given
  std::vector<std::string> startup_lines;  // printed at start; "{session_id}", "{cwd}", "{model}" expanded
  absl::Duration startup_delay = absl::ZeroDuration();
  // After a turn ends (its Stop hooks have run), before the indicator shows
  // again.
  absl::Duration prompt_delay = absl::ZeroDuration();
  std::string prompt = "> ";  // the prompt indicator
  Timing timing;
  // Whether Stop hooks, and PreToolUse/PostToolUse hooks, are fired at all
  // (the settings files still say which).
  bool stop_hooks = true;
  bool tool_hooks = true;
  LogSettings log;
  Completion completion;  // default for every completing behaviour
  std::string settings;   // a Claude Code settings file with hooks ("" none)
  std::map<std::string, std::string> env;  // added to the completion's and hooks' environment
  std::vector<std::shared_ptr<const Behaviour>> behaviours;
  std::shared_ptr<const Behaviour> default_behaviour;  // never null: `complete` when absent

  // The first behaviour whose conditions hold for `prompt`, else the default.
  const Behaviour& Select(absl::string_view prompt) const;
};

// The built-in config: the default behaviour completes at once with no
// command. What `understudy sim` runs without --config.
SimConfig DefaultSimConfig();

// Parses and validates; INVALID_ARGUMENT with every error formatted as
// `source:line:col: error: path: message (suggestion)`, one per line
// (warnings are left out: they do not stop a config from loading).
absl::StatusOr<SimConfig> ParseSimConfig(absl::string_view text, absl::string_view source);

// Every problem (errors and warnings) without stopping at the first; what
// `understudy validate` prints for a sim config.
validation::Report ValidateSimConfig(absl::string_view text, absl::string_view source);

// True when `text` is meant as a sim config rather than a scenario or a spec:
// a top-level `schema: understudy.sim/v1`, or a top-level `behaviours` key,
// or (the MEOW dialect) a top-level `behaviors`, `hooks` or `logging` key.
// Cheap; never fails (false for anything unparseable).
bool LooksLikeSimConfig(absl::string_view text);

}  // namespace sim
}  // namespace understudy

#endif  // UNDERSTUDY_SIM_CONFIG_H_
