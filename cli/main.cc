// understudy: record, replay and inspect LLM agent sessions.
// Parses the global flags and dispatches through the table of commands
// (cli/command_table.h); nothing else lives here.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "base/log.h"
#include "cli/cmd_common.h"
#include "cli/command_table.h"
#include "sim/sim_main.h"

#ifndef UNDERSTUDY_VERSION
#define UNDERSTUDY_VERSION "0.0.0-dev"
#endif

namespace {

using understudy::cli::EnvName;

// Loads `--config FILE` (or UNDERSTUDY_CONFIG) before parsing. Each key
// becomes the value of its UNDERSTUDY_* variable unless that is already set,
// so that flags override the environment, which overrides the file.
// Returns false after printing the reason when the file is bad.
bool ApplyConfigFile(int argc, char** argv, const std::set<std::string>& keys) {
  std::string path;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--config" && i + 1 < argc) path = argv[i + 1];
    if (arg.rfind("--config=", 0) == 0) path = arg.substr(9);
  }
  if (path.empty() && std::getenv("UNDERSTUDY_CONFIG") != nullptr) {
    path = std::getenv("UNDERSTUDY_CONFIG");
  }
  if (path.empty()) return true;
  std::ifstream in(path);
  if (!in) {
    std::cerr << "understudy: cannot read config file " << path << "\n";
    return false;
  }
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_config(in);
  } catch (const CLI::Error& e) {
    std::cerr << "understudy: config file " << path << ": " << e.what() << "\n";
    return false;
  }
  for (const CLI::ConfigItem& item : items) {
    if (item.name == "++" || item.name == "--") continue;  // section markers
    std::string key = item.fullname();
    if (keys.count(key) == 0) {
      std::cerr << "understudy: config file " << path << ": unknown key \"" << key
                << "\" (known: serve's long options without dashes, e.g. db, listen, upstream)\n";
      return false;
    }
    std::string value;
    for (size_t i = 0; i < item.inputs.size(); ++i) value += (i ? "\n" : "") + item.inputs[i];
    ::setenv(EnvName(key).c_str(), value.c_str(), /*overwrite=*/0);
  }
  return true;
}

// `record|replay|mcp-proxy ... -- CMD ARGS...`: everything after the first
// "--" that follows the subcommand is the command, verbatim. The flag parser never
// sees it, so it cannot take `-c` for an option of ours, split "[x]" into a
// list, or swallow a second "--". Returns how many leading arguments are
// left for the flag parser.
int SplitWrappedCommand(int argc, char** argv, std::vector<std::string>* command,
                        bool* has_separator) {
  bool wrapper = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "record" || arg == "replay" || arg == "mcp-proxy" || arg == "gen-test" ||
        arg == "verify-install") {
      wrapper = true;
    }
    if (arg == "--") {
      if (!wrapper) return argc;
      *has_separator = true;
      command->assign(argv + i + 1, argv + argc);
      return i;
    }
  }
  return argc;
}

// A parse error as one line: "understudy: MESSAGE (see `understudy CMD --help`)".
int UsageError(CLI::App& app, const CLI::ParseError& e) {
  std::string message = e.what();
  std::replace(message.begin(), message.end(), '\n', ' ');
  while (!message.empty() && message.back() == ' ') message.pop_back();
  std::string command = "understudy";
  for (CLI::App* sub = &app; sub != nullptr;) {
    const std::vector<CLI::App*> chosen = sub->get_subcommands();
    if (chosen.empty()) break;
    sub = chosen.front();
    command += " " + sub->get_name();
  }
  std::cerr << "understudy: " << message << " (see `" << command << " --help`)" << std::endl;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's Abseil is built with mutex deadlock detection on: it keeps a
  // global lock-order graph and updates it on every contended lock, which
  // cost about 3% of a replay's CPU (bench/run, perf). The lock order is
  // checked by the unit tests (which keep detection on) and by Clang's
  // thread-safety annotations.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // `understudy sim` has flags of its own (its --config is a sim config, not
  // this program's): it gets its arguments before the parser and the config
  // file scan below see them.
  if (argc > 1 && std::string(argv[1]) == "sim") {
    return understudy::sim::SimMain(argc - 1, argv + 1);
  }
  CLI::App app{
      "understudy: record LLM agent sessions once, replay them deterministically, and "
      "assert on what happened."};
  app.set_version_flag("--version", std::string("understudy ") + UNDERSTUDY_VERSION);
  app.require_subcommand(1);
  // Global flags work after the subcommand too (`understudy serve
  // --log-level debug`): subcommands hand options they do not know to their
  // parent. Set before any subcommand is added, which inherits it.
  app.fallthrough();
  app.option_defaults()->always_capture_default();
  app.footer(
      "Examples:\n"
      "  understudy serve --upstream grpc://127.0.0.1:7001\n"
      "  understudy sessions ls\n"
      "  understudy runs prune --keep 10\n"
      "  understudy export golden -o golden.jsonl\n"
      "  understudy trace run-1a2b3c4d5e6f7a8b\n"
      "  understudy show run-1a2b3c4d5e6f7a8b\n"
      "  understudy assert --run run-1a2b3c4d5e6f7a8b checks.yaml\n"
      "  understudy gen-spec golden -o golden.spec.yaml\n"
      "  understudy mcp --db golden.db      (in a coding agent's MCP config)\n"
      "  understudy sim --config coder.yaml (a simulated terminal coding agent, in a tmux pane)\n"
      "Run `understudy COMMAND --help` for each command's flags.");

  std::string log_level = "info";
  std::string log_format = "text";
  app.add_option("--log-level", log_level, "debug|info|warning|error")
      ->envname("UNDERSTUDY_LOG_LEVEL")
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}));
  app.add_option("--log-format", log_format, "text|json")
      ->envname("UNDERSTUDY_LOG_FORMAT")
      ->check(CLI::IsMember({"text", "json"}));

  understudy::cli::CommandLine flags;
  flags.version = UNDERSTUDY_VERSION;
  const std::vector<std::pair<const understudy::cli::Command*, CLI::App*>> commands =
      understudy::cli::AddCommands(&app, &flags);

  const int parsed_argc = SplitWrappedCommand(argc, argv, &flags.after_separator.words,
                                              &flags.after_separator.given);
  if (!ApplyConfigFile(parsed_argc, argv, flags.server.config_keys)) return 2;
  try {
    app.parse(parsed_argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return UsageError(app, e);
  }

  understudy::LogLevel level;
  understudy::LogFormat format;
  understudy::ParseLogLevel(log_level, &level);
  understudy::ParseLogFormat(log_format, &format);
  understudy::SetLogging(level, format);

  for (const auto& [command, cmd] : commands) {
    if (*cmd && command->run != nullptr) return command->run(*cmd, &flags);
  }
  return 2;
}
