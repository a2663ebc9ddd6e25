#include "sim/sim_main.h"

#include <unistd.h>

#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/duration.h"
#include "base/files.h"
#include "sim/config.h"
#include "sim/event_log.h"
#include "sim/hooks.h"
#include "sim/model_backend.h"
#include "sim/session_state.h"
#include "sim/simulator.h"
#include "sim/trace_sink.h"

#ifndef UNDERSTUDY_VERSION
#define UNDERSTUDY_VERSION "0.0.0-dev"
#endif

namespace understudy {
namespace sim {
namespace {

constexpr size_t kMaxConfigBytes = 4 << 20;
constexpr size_t kMaxPromptBytes = size_t{1} << 20;

struct Flags {
  std::string config;
  std::string settings;
  bool skip_permissions = false;
  std::string resume;
  bool continue_session = false;
  std::string model;
  std::string agent;
  std::string addr;
  std::string run;
  std::string log_format = "text";
  std::string log_file;
  std::string log_level;
  bool print = false;
  std::string prompt;
};

std::string Getenv(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

// The first of the variables `names` that is set and not empty: its name
// and value; ("", "") when none is.
std::pair<std::string, std::string> FirstSet(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (std::string value = Getenv(name); !value.empty()) return {name, value};
  }
  return {"", ""};
}

// UNDERSTUDY_SIM_DELAY (or MEOW_SIM_DELAY, named by `variable`), read as the
// config reads durations.
absl::StatusOr<absl::Duration> ParseDelay(const std::string& variable, const std::string& text) {
  absl::StatusOr<absl::Duration> delay = ParseDuration(text, PlainNumber::kMilliseconds);
  if (!delay.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(variable, ": ", delay.status().message()));
  }
  return delay;
}

// The directory part of `path` ("" for a bare file name).
std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// Takes out the flags this program does not know, each noted on stderr, so
// that CLI11 sees only its own. An unknown flag without "=VALUE" takes the
// next argument as its value when that is not a flag and more arguments
// follow it (`--foo bar "task"` runs "task").
std::vector<std::string> DropUnknownFlags(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> kept = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      kept.insert(kept.end(), argv + i, argv + argc);
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      kept.push_back(arg);
      continue;
    }
    const std::string name = arg.substr(0, arg.find('='));
    const CLI::Option* option = app.get_option_no_throw(name);
    if (option != nullptr || name == "--help" || name == "-h" || name == "--version") {
      kept.push_back(arg);
      if (option != nullptr && option->get_items_expected_min() > 0 &&
          name.size() == arg.size() && i + 1 < argc) {
        kept.push_back(argv[++i]);
      }
      continue;
    }
    std::cerr << "understudy sim: ignoring unknown flag " << name << std::endl;
    if (name.size() == arg.size() && i + 2 < argc && argv[i + 1][0] != '-') ++i;
  }
  return kept;
}

absl::StatusOr<std::shared_ptr<const SimConfig>> LoadConfig(const std::string& path) {
  if (path.empty()) return std::make_shared<const SimConfig>(DefaultSimConfig());
  absl::StatusOr<std::string> text = ReadRegularFile(path, kMaxConfigBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<SimConfig> config = ParseSimConfig(*text, path);
  if (!config.ok()) return config.status();
  return std::make_shared<const SimConfig>(*std::move(config));
}

// --settings; else the config's `settings:` (relative to the config file);
// else .claude/settings.json and .claude/settings.local.json of `cwd`.
absl::Status LoadHooks(const Flags& flags, const SimConfig& config, const std::string& cwd,
                       Hooks* hooks) {
  if (!flags.settings.empty()) return hooks->AddFile(flags.settings, /*optional=*/false);
  if (!config.settings.empty()) {
    std::string path = config.settings;
    if (path[0] != '/') path = DirectoryOf(flags.config) + path;
    return hooks->AddFile(path, /*optional=*/false);
  }
  absl::Status status = hooks->AddFile(cwd + "/.claude/settings.json", /*optional=*/true);
  if (!status.ok()) return status;
  return hooks->AddFile(cwd + "/.claude/settings.local.json", /*optional=*/true);
}

int Fatal(absl::string_view message) {
  std::cerr << "understudy sim: " << message << std::endl;
  return 2;
}

// The log flags whose source OpenLog asks: given (flag or environment), else
// the config's.
struct LogOptions {
  CLI::Option* format;
  CLI::Option* file;
};

// Gives `app` its name, version, flags (their values go into `flags`) and
// help footer.
LogOptions DefineFlags(CLI::App& app, Flags& flags) {
  app.name("understudy sim");
  app.set_version_flag("--version", std::string("understudy sim ") + UNDERSTUDY_VERSION);
  app.allow_extras();
  app.option_defaults()->always_capture_default();
  app.add_option("--config", flags.config,
                 "Sim config (YAML or JSON, understudy's or MEOW's dialect): behaviours, timing, "
                 "completion")
      ->envname("UNDERSTUDY_SIM_CONFIG")
      ->default_str("MEOW_SIM_CONFIG, else built-in: every prompt completes at once, no command");
  app.add_option("--settings", flags.settings, "Claude Code settings file with hooks")
      ->default_str("config `settings:`, else .claude/settings.json + .claude/settings.local.json");
  app.add_flag("--dangerously-skip-permissions", flags.skip_permissions,
               "Accepted; noted in the start-up lines and the trace");
  app.add_option("-r,--resume", flags.resume, "Resume session ID (SessionStart source \"resume\")")
      ->default_str("a new session");
  app.add_flag("-c,--continue", flags.continue_session, "Continue the last session (source \"resume\")");
  app.add_option("--model", flags.model, "Model name shown at start-up ({model}) and traced")
      ->default_str("default");
  app.add_option("--agent", flags.agent, "Agent name in the trace and hooks' environment")
      ->envname("UNDERSTUDY_AGENT")
      ->default_str("config `name`, else sim");
  app.add_option("--addr", flags.addr, "understudy's gRPC address HOST:PORT (trace, model behaviour)")
      ->envname("UNDERSTUDY_ADDR")
      ->default_str("none: no trace");
  app.add_option("--run", flags.run, "The run trace events join (with --addr)")
      ->envname("UNDERSTUDY_RUN")
      ->default_str("none: no trace");
  CLI::Option* log_format =
      app.add_option("--log-format", flags.log_format, "State changes and hook calls as text or json")
          ->envname("UNDERSTUDY_SIM_LOG_FORMAT")
          ->check(CLI::IsMember({"text", "json"}))
          ->default_str("the config's logging.format, else text");
  CLI::Option* log_file = app.add_option("--log-file", flags.log_file, "Append the log to this file")
                              ->envname("UNDERSTUDY_SIM_LOG_FILE")
                              ->default_str("the config's logging.file, else stderr");
  app.add_option("--log-level", flags.log_level,
                 "Log lines of this level and above: debug, info, warn, error")
      ->envname("UNDERSTUDY_SIM_LOG_LEVEL")
      ->default_str("MEOW_SIM_LOG_LEVEL, else the config's logging.level, else debug (all)");
  app.add_flag("-p,--print", flags.print,
               "Run the prompt (argument, else stdin), print the result and exit (0 ok, 1 failed)");
  app.add_option("prompt", flags.prompt, "A first prompt, submitted at start")
      ->default_str("none");
  app.footer(
      "Environment: UNDERSTUDY_SIM_DELAY=DURATION replaces every delay (ms, or 150ms, 2s); "
      "UNDERSTUDY_SIM_DETERMINISTIC=1 no jitter,\n"
      "a session id derived from the agent and the config's content. MEOW_SIM_CONFIG, "
      "MEOW_SIM_DELAY, MEOW_SIM_LOG_LEVEL and\n"
      "MEOW_SIM_DETERMINISTIC are read when the UNDERSTUDY_SIM_ ones are not set. "
      "UNDERSTUDY_SIM_STATE_DIR: where sessions\n"
      "keep their fail_then_succeed counts for --resume (default ~/.local/state/understudy/sim). "
      "The completion command and\n"
      "hooks get UNDERSTUDY_SIM_SESSION_ID, UNDERSTUDY_SIM_AGENT and the config's `env`. Unknown "
      "flags are ignored with a note.\n"
      "Keys: Enter submits, \\ before Enter or a pasted newline continues the prompt, Escape "
      "interrupts, Ctrl-C twice or\n"
      "Ctrl-D or /exit ends. Exit: 0 ended, 1 -p failed, 2 bad flag/config/settings, 143 SIGTERM.\n"
      "Examples:\n"
      "  understudy sim --config coder.yaml --dangerously-skip-permissions\n"
      "  tmux new-session -d -s a 'understudy-sim --config coder.yaml --addr 127.0.0.1:7000 "
      "--run run-1'\n"
      "  tmux send-keys -t a -l 'deploy to prod' && tmux send-keys -t a Enter\n"
      "  understudy sim -p \"fix the tests\" --config coder.yaml\n"
      "  understudy validate coder.yaml");
  return {log_format, log_file};
}

// The log: flags and environment, else the config's `logging` (MEOW).
absl::StatusOr<std::unique_ptr<EventLog>> OpenLog(const Flags& flags, const SimConfig& config,
                                                  const LogOptions& options) {
  const LogSettings& logging = config.log;
  const std::string format = options.format->count() > 0 ? flags.log_format : logging.format;
  const std::string file = options.file->count() > 0 ? flags.log_file : logging.file;
  std::string level = flags.log_level;
  if (level.empty()) level = Getenv("MEOW_SIM_LOG_LEVEL");
  if (level.empty()) level = logging.level;
  absl::StatusOr<LogLevel> min_level = ParseLogLevel(level.empty() ? "debug" : level);
  if (!min_level.ok()) return min_level.status();
  absl::StatusOr<std::unique_ptr<EventLog>> log =
      EventLog::Open(file, format == "json" ? LogFormat::kJson : LogFormat::kText);
  if (!log.ok()) return log.status();
  (*log)->set_level(*min_level);
  return log;
}

// The prompt of `-p` without an argument: stdin, up to kMaxPromptBytes (and
// what the last read brought), trailing whitespace dropped.
std::string ReadPromptFromStdin() {
  std::string text;
  char buffer[65536];
  ssize_t n;
  while (text.size() <= kMaxPromptBytes && (n = read(STDIN_FILENO, buffer, sizeof(buffer))) > 0) {
    text.append(buffer, static_cast<size_t>(n));
  }
  return std::string(absl::StripTrailingAsciiWhitespace(text));
}

}  // namespace

int SimMain(int argc, char** argv) {
  Flags flags;
  CLI::App app{
      "understudy sim: a stand-in for a terminal coding agent (Claude Code-like) that "
      "orchestrators drive through tmux: prompt indicator, scripted behaviours, hooks, "
      "completion command, trace events."};
  const LogOptions log_options = DefineFlags(app, flags);

  std::vector<std::string> kept = DropUnknownFlags(app, argc, argv);
  std::vector<char*> args;
  for (std::string& arg : kept) args.push_back(arg.data());
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    // --help and --version print and succeed; a bad flag value is a usage
    // error: exit 2, as for every other command (docs/cli.md).
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  // The UNDERSTUDY_SIM_ variables first, then the MEOW dialect's.
  std::optional<absl::Duration> delay_override;
  if (const auto [name, delay] = FirstSet({"UNDERSTUDY_SIM_DELAY", "MEOW_SIM_DELAY"});
      !delay.empty()) {
    absl::StatusOr<absl::Duration> parsed = ParseDelay(name, delay);
    if (!parsed.ok()) return Fatal(parsed.status().message());
    delay_override = *parsed;
  }
  const std::string deterministic_text = absl::AsciiStrToLower(
      FirstSet({"UNDERSTUDY_SIM_DETERMINISTIC", "MEOW_SIM_DETERMINISTIC"}).second);
  const bool deterministic = deterministic_text == "1" || deterministic_text == "true";
  if (flags.config.empty()) flags.config = Getenv("MEOW_SIM_CONFIG");

  absl::StatusOr<std::shared_ptr<const SimConfig>> config = LoadConfig(flags.config);
  if (!config.ok()) return Fatal(config.status().message());
  char cwd_buffer[4096];
  const std::string cwd = getcwd(cwd_buffer, sizeof(cwd_buffer)) != nullptr ? cwd_buffer : ".";
  SimOptions options;
  absl::Status hooks = LoadHooks(flags, **config, cwd, &options.hooks);
  if (!hooks.ok()) return Fatal(hooks.message());
  absl::StatusOr<std::unique_ptr<EventLog>> log = OpenLog(flags, **config, log_options);
  if (!log.ok()) return Fatal(log.status().message());

  if (flags.print && flags.prompt.empty() && !isatty(STDIN_FILENO)) {
    // `cat task.md | understudy sim -p`
    flags.prompt = ReadPromptFromStdin();
  }
  if (flags.print && flags.prompt.empty()) {
    return Fatal("-p needs a prompt: an argument, or text on stdin");
  }

  options.config = *config;
  options.agent = !flags.agent.empty()        ? flags.agent
                  : !(*config)->name.empty() ? (*config)->name
                                             : "sim";
  options.model = flags.model;
  options.session_id = flags.resume;
  options.resumed = !flags.resume.empty() || flags.continue_session;
  options.skip_permissions = flags.skip_permissions;
  options.first_prompt = flags.prompt;
  options.print_mode = flags.print;
  options.delay_override = delay_override;
  options.deterministic = deterministic;
  options.state_dir = DefaultSessionStateDirectory();
  options.cwd = cwd;
  options.log = log->get();
  EventLog* log_ptr = log->get();
  TraceSinkOptions trace_options;
  trace_options.addr = flags.addr;
  trace_options.run = flags.run;
  trace_options.agent = options.agent;
  trace_options.on_error = [log_ptr](const std::string& message) {
    log_ptr->Write("trace_error", {{"message", message}}, LogLevel::kWarn);
  };
  TraceSink trace(std::move(trace_options));
  options.trace = &trace;
  GrpcModelOptions model_options;
  model_options.addr = flags.addr;
  model_options.run = flags.run;
  std::unique_ptr<ModelBackend> model = NewGrpcModelBackend(std::move(model_options));
  options.model_backend = model.get();
  return Simulator(std::move(options)).Run();
}

}  // namespace sim
}  // namespace understudy
