// understudy: record, replay and inspect LLM agent sessions.
// Parses flags and hands over to cli/commands.h; nothing else lives here.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/strings/str_replace.h"
#include "base/duration.h"
#include "base/log.h"
#include "cli/commands.h"
#include "cli/ancestor_env.h"
#include "cli/gen_spec.h"
#include "cli/gen_test.h"
#include "cli/mcp_proxy.h"
#include "cli/mcp_serve.h"
#include "cli/runs.h"
#include "cli/schema_command.h"
#include "cli/verify_install.h"
#include "provider/anthropic.h"
#include "provider/embeddings.h"
#include "provider/gemini.h"
#include "provider/openai.h"
#include "provider/responses.h"
#include "sim/sim_main.h"

#ifndef UNDERSTUDY_VERSION
#define UNDERSTUDY_VERSION "0.0.0-dev"
#endif

namespace {

using understudy::cli::DbFlags;
using understudy::cli::ServeFlags;

// Environment variable of a serve option: --max-message-bytes →
// UNDERSTUDY_MAX_MESSAGE_BYTES.
std::string EnvName(const std::string& option) {
  return "UNDERSTUDY_" + absl::AsciiStrToUpper(absl::StrReplaceAll(option, {{"-", "_"}}));
}

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

  // A duration flag (base/duration.h): "30m", "12h", "7d".
  const CLI::Validator duration_check(
      [](std::string& text) {
        absl::StatusOr<absl::Duration> d = understudy::ParseDuration(text);
        return d.ok() ? std::string() : std::string(d.status().message());
      },
      "DURATION");

  // A count flag: 0 or more (CLI::NonNegativeNumber's message prints the
  // largest double).
  const CLI::Validator count_check(
      [](std::string& text) {
        int64_t n = 0;
        return absl::SimpleAtoi(text, &n) && n < 0 ? "must be 0 or more, got " + text
                                                   : std::string();
      },
      "N");

  // serve, and the serve options shared by record and replay.
  ServeFlags serve;
  serve.server.http_listen = "127.0.0.1:7141";
  std::string config_path;
  std::set<std::string> serve_keys;
  std::vector<std::string> wrapped;
  auto add_serve_options = [&](CLI::App* cmd, bool with_addresses) {
    // A flag given twice takes its last value (`serve --listen A ... --listen
    // B` listens on B), as shells' aliases and wrappers expect.
    auto option = [&](const std::string& name, auto& target, const std::string& help) {
      serve_keys.insert(name);
      CLI::Option* o = cmd->add_option("--" + name, target, help)->envname(EnvName(name));
      using Target = std::decay_t<decltype(target)>;
      if constexpr (!std::is_same_v<Target, std::vector<std::string>>) {
        o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
      }
      return o;
    };
    // Repeatable options: in UNDERSTUDY_* variables and config arrays, one
    // value per line.
    auto list = [&](const std::string& name, std::vector<std::string>& target,
                    const std::string& help) {
      return option(name, target, help)->delimiter('\n');
    };
    option("db", serve.server.db_path, "SQLite file (created if missing)");
    option("trace-db", serve.trace_db,
           "Serve a copy of --db made in this file at start (replacing an earlier copy): runs, "
           "traces and recordings go there, --db is only read. `replay` makes a temporary one "
           "unless --mode new");
    if (with_addresses) {
      option("listen", serve.server.listen, "gRPC address; port 0 picks a free port");
      option("http", serve.server.http_listen,
             "OpenAI/Anthropic HTTP address (\"\" for none); port 0 picks a free port");
      option("ready-file", serve.ready_file,
             "Also write {\"grpc\":ADDR,\"http\":ADDR,...} to this file once serving");
      option("auth-token-file", serve.server.auth_token_file,
             "File (mode 600) holding the token every caller must present (docs/security.md)");
      option("auth-token", serve.server.auth_token,
             "The token itself (visible in the process list: prefer --auth-token-file)");
      option("allow-unauthenticated", serve.server.allow_unauthenticated,
             "Serve anyone who can reach a non-loopback address, without a token");
      option("tls-cert", serve.server.tls_cert, "PEM certificate chain: both listeners speak TLS");
      option("tls-key", serve.server.tls_key, "PEM private key of --tls-cert");
      list("allow-host", serve.server.allow_hosts,
           "Another name the HTTP listener answers to (Host header); * for any (repeatable)");
      option("ui", serve.server.ui,
             "Serve the web UI at /ui and its JSON API at /api/v1 on the HTTP listener "
             "(docs/ui.md); false: both are 404");
    }
    list("upstream", serve.server.upstreams,
         absl::StrCat("Upstream model for record/passthrough: ", understudy::service::UpstreamForms(),
                      " (repeat for several)"));
    list("mcp-upstream", serve.server.mcp_upstreams,
         "MCP tool server for record/passthrough: NAME=URL of its Streamable HTTP endpoint, "
         "served at /mcp/NAME (repeatable; docs/mcp.md)");
    list("ignore-path", serve.server.ignore_paths,
         "Canonical request path matching ignores, e.g. params.temperature, messages[*].name, "
         "extra.user (repeatable)");
    list("normalize", serve.server.normalizers,
         "Rewrite before matching: uuid, timestamp, tmp-path, or REGEX=>REPLACEMENT (repeatable)");
    option("exact-tool-call-ids", serve.server.exact_tool_call_ids,
           "Match tool call ids the client made up (none of the recording's answers holds them) "
           "as they are, not by position");
    list("redact-header", serve.server.redact_headers,
         "Header never logged, besides authorization, x-api-key, api-key, proxy-authorization");
    list("redact-json-path", serve.server.redact_json_paths,
         "Request body field stored as \"[REDACTED]\", e.g. metadata.api_key (repeatable)");
    option("scenario", serve.server.scenario,
           "Scenario for runs that name none: a pack (error-handling, rate-limit, "
           "network-resilience, slow-stream) or a YAML/JSON file; see `understudy validate`");
    option("scenario-dir", serve.server.scenario_dir,
           "Directory whose scenario files callers may name in StartRun (else only packs and "
           "scenario_text)");
    option("speed", serve.server.speed,
           "Replay pace: 0 as fast as possible, 1 the recorded pace, 2 twice as fast")
        ->check(CLI::Range(0.0, 1000.0));
    option("strict", serve.server.default_strict,
           "Default run: a request without a recording is an error (else: closest recording)");
    option("repeat", serve.server.default_repeat,
           "Default run: once a request's recordings are all used, answer it again from the last");
    option("max-message-bytes", serve.server.max_message_bytes, "Largest gRPC message accepted")
        ->check(CLI::Range(1024, 1 << 30));
    option("max-body-bytes", serve.server.max_body_bytes, "Largest HTTP request body accepted")
        ->check(CLI::Range(size_t{1024}, size_t{1} << 30));
    option("drain-timeout", serve.drain_timeout_seconds,
           "Seconds in-flight calls may take to finish on SIGINT/SIGTERM")
        ->check(CLI::Range(0.0, 3600.0));
    option("request-timeout", serve.request_timeout_seconds,
           "Seconds an HTTP request may take to arrive whole, from its first byte (408 after)")
        ->check(CLI::Range(0.1, 3600.0));
    option("trace-level", serve.trace_level,
           "What the trace of runs that ask for no level keeps: full, summary (start, misses, "
           "end) or off")
        ->check(CLI::IsMember({"full", "summary", "off"}))
        ->default_str("full");
    option("keep-runs", serve.keep_runs,
           "Keep at most N ended runs per session, the newest; older ones go with their traces")
        ->check(count_check)
        ->default_str("no limit");
    option("keep-trace-for", serve.keep_trace_for,
           "Delete ended runs that started longer ago than this (30m, 12h, 7d)")
        ->check(duration_check)
        ->default_str("for ever");
    option("prune-interval", serve.prune_interval,
           "Time between passes of --keep-runs and --keep-trace-for (after one at start-up)")
        ->check(duration_check);
    cmd->add_option("--config", config_path, "TOML file with these options")
        ->envname("UNDERSTUDY_CONFIG");
  };
  const std::string ignored_fields = absl::StrCat(
      "Never part of matching (they never change the answer):\n  openai: ",
      absl::StrJoin(understudy::provider::openai::kIgnoredRequestFields, ", "),
      "\n  openai responses: ",
      absl::StrJoin(understudy::provider::responses::kIgnoredRequestFields, ", "),
      "\n  openai embeddings: ",
      absl::StrJoin(understudy::provider::embeddings::kIgnoredRequestFields, ", "),
      "\n  anthropic: ", absl::StrJoin(understudy::provider::anthropic::kIgnoredRequestFields, ", "),
      "\n  gemini: ", absl::StrJoin(understudy::provider::gemini::kIgnoredRequestFields, ", "),
      "\n");
  const std::string modes =
      "Modes: record, replay, passthrough, once (record an empty session, else replay), "
      "new (replay; record misses into a new version), none (strict replay), all (re-record).\n";

  CLI::App* serve_cmd = app.add_subcommand("serve", "Run the understudy server.");
  add_serve_options(serve_cmd, /*with_addresses=*/true);
  serve_keys.insert("mode");
  serve_keys.insert("session");
  serve_cmd->add_option("--mode", serve.mode, "Start a default run for calls that name none")
      ->envname("UNDERSTUDY_MODE")
      ->check(CLI::IsMember({"", "record", "replay", "passthrough", "once", "new", "none", "all"}));
  serve_cmd->add_option("--tools-root", serve.tools_root,
                        "Folder the MCP tools at /mcp may read and write files in (docs/agents.md)")
      ->envname("UNDERSTUDY_TOOLS_ROOT");
  serve_cmd->add_option("--session", serve.server.default_session,
                        "Session of the default run (NAME or NAME@N)")
      ->envname("UNDERSTUDY_SESSION");
  serve_cmd->footer(
      "Prints `understudy serving grpc=HOST:PORT http=HOST:PORT db=PATH` as its first stdout line.\n"
      "Precedence: flags, then UNDERSTUDY_* variables, then --config FILE (TOML: db = \"x.db\").\n" +
      modes + ignored_fields +
      "Examples:\n"
      "  understudy serve                                   # gRPC 127.0.0.1:7140, HTTP 127.0.0.1:7141\n"
      "  understudy serve --listen 127.0.0.1:0 --http 127.0.0.1:0 --ready-file ready.json\n"
      "  understudy serve --upstream openai=https://api.openai.com --mode record --session golden\n"
      "  understudy serve --trace-level summary --keep-runs 20 --keep-trace-for 7d  # a load test's server");

  // record / replay: wrap a command.
  std::string wrap_session;
  CLI::App* record_cmd = app.add_subcommand(
      "record", "Run a command against understudy in record mode; exit with its exit code.");
  CLI::App* replay_cmd = app.add_subcommand(
      "replay", "Run a command against a recorded session; exit with its exit code.");
  for (CLI::App* cmd : {record_cmd, replay_cmd}) {
    add_serve_options(cmd, /*with_addresses=*/false);
    cmd->add_option("--session", wrap_session, "Session to record into or replay (NAME[@N])")
        ->required();
    cmd->add_option("command", wrapped, "The command, after -- (taken verbatim)");
  }
  std::string record_mode = "record";
  std::string replay_mode = "none";
  record_cmd->add_option("--mode", record_mode, "record, once, new or all")
      ->check(CLI::IsMember({"record", "once", "new", "all"}));
  replay_cmd->add_option("--mode", replay_mode, "none (strict), replay, or new")
      ->check(CLI::IsMember({"none", "replay", "new"}));
  bool allow_egress = false;
  const std::string allow_egress_help =
      "Leave the command's proxy variables as they are (by default HTTPS_PROXY, HTTP_PROXY and "
      "ALL_PROXY point at understudy, which refuses to be a proxy, so an SDK that ignores its "
      "base URL cannot reach a real provider)";
  replay_cmd->add_flag("--allow-egress", allow_egress, allow_egress_help);
  record_cmd->footer(
      "Sets OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL, UNDERSTUDY_ADDR, UNDERSTUDY_HTTP and "
      "UNDERSTUDY_RUN for the command.\n" + modes +
      "Example:\n  understudy record --session golden --upstream openai=https://api.openai.com "
      "-- node agent.js");
  replay_cmd->footer(
      "Sets OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL, UNDERSTUDY_ADDR, "
      "UNDERSTUDY_HTTP and "
      "UNDERSTUDY_RUN for the command. No upstream is contacted in the default mode (none).\n"
      "Also sets HTTPS_PROXY, HTTP_PROXY, ALL_PROXY (and lower case) to understudy, which refuses "
      "every\nconnection naming its host on stderr, NO_PROXY to 127.0.0.1,localhost,::1 and "
      "NODE_USE_ENV_PROXY=1\n(--allow-egress: none of these).\n"
      "--db is never written in modes none and replay: the command's runs and traces go to a\n"
      "copy of it, --trace-db FILE to keep them (`understudy trace RUN --db FILE`), else a\n"
      "temporary file removed at the end. --mode new records into --db.\n"
      "The run's summary is printed on stderr when the command used it.\n"
      "Examples:\n  understudy replay --session golden -- node agent.js\n"
      "  understudy replay --db tests/golden.db --session golden --trace-db /tmp/replay.db "
      "-- pytest");

  // Commands that read or change the database directly.
  DbFlags db;
  auto db_option = [&](CLI::App* cmd, bool json) {
    cmd->add_option("--db", db.db, "SQLite file")->envname("UNDERSTUDY_DB");
    if (json) cmd->add_flag("--json", db.json, "One JSON object per line");
  };

  CLI::App* sessions_cmd = app.add_subcommand("sessions", "List, show or remove recorded sessions.");
  sessions_cmd->require_subcommand(1);
  std::string prefix;
  CLI::App* ls_cmd = sessions_cmd->add_subcommand("ls", "List sessions and their versions.");
  ls_cmd->add_option("--prefix", prefix, "Only names starting with this");
  db_option(ls_cmd, true);
  std::string ref;
  CLI::App* show_cmd = sessions_cmd->add_subcommand("show", "Show a session's exchanges.");
  show_cmd->add_option("session", ref, "NAME or NAME@VERSION (default: latest)")->required();
  db_option(show_cmd, true);
  CLI::App* rm_cmd = sessions_cmd->add_subcommand("rm", "Delete a session (every version, or NAME@N).");
  rm_cmd->add_option("session", ref, "NAME or NAME@VERSION")->required();
  db_option(rm_cmd, false);

  std::string output;
  CLI::App* export_cmd = app.add_subcommand(
      "export", "Write a session as JSONL (deterministic; diff it in git).");
  export_cmd->add_option("session", ref, "NAME or NAME@VERSION (default: latest)")->required();
  export_cmd->add_option("-o,--output", output, "File to write (default: stdout)");
  export_cmd->footer("Example: understudy export golden -o tests/golden.jsonl");
  db_option(export_cmd, false);

  std::string input;
  std::string import_name;
  CLI::App* import_cmd = app.add_subcommand(
      "import", "Load a JSONL session as a new version; all or nothing.");
  import_cmd->add_option("file", input, "JSONL file, or - for stdin")->required();
  import_cmd->add_option("--name", import_name, "Store under this name instead of the file's");
  import_cmd->footer("Example: understudy import tests/golden.jsonl");
  db_option(import_cmd, false);

  // runs: list and remove runs with their traces.
  CLI::App* runs_cmd =
      app.add_subcommand("runs", "List runs, or remove them with their traces to keep the store small.");
  runs_cmd->require_subcommand(1);
  std::string runs_session;
  CLI::App* runs_ls_cmd = runs_cmd->add_subcommand(
      "ls", "List runs: session, mode, state, trace level, start, duration, counts, events.");
  runs_ls_cmd->add_option("--session", runs_session,
                          "Only runs of this session (NAME: every version; NAME@N)");
  db_option(runs_ls_cmd, true);
  std::vector<std::string> runs_ids;
  bool runs_force = false;
  CLI::App* runs_rm_cmd =
      runs_cmd->add_subcommand("rm", "Delete runs with their traces, and give the space back.");
  runs_rm_cmd->add_option("run", runs_ids, "Run id (several allowed)")->required();
  runs_rm_cmd->add_flag("--force", runs_force,
                        "Delete active runs too (a run whose server died stays active)");
  runs_rm_cmd->footer(
      "Unknown ids and active runs (without --force) are named and left; the others are deleted.\n"
      "Exit: 0 all deleted, 1 one was unknown or refused, 3 unreadable database.");
  db_option(runs_rm_cmd, false);
  understudy::cli::PruneFlags prune;
  CLI::App* runs_prune_cmd = runs_cmd->add_subcommand(
      "prune", "Delete runs by age, by count per session or by state, and give the space back.");
  runs_prune_cmd
      ->add_option("--older-than", prune.older_than,
                   "Only runs that started longer ago than this (30m, 12h, 7d)")
      ->check(duration_check);
  runs_prune_cmd
      ->add_option("--keep", prune.keep, "Keep the newest N runs of each session, delete the rest")
      ->check(count_check)
      ->default_str("no limit");
  runs_prune_cmd
      ->add_option("--state", prune.states,
                   "Only runs in this state: ended, failed, active or any (repeatable; default: "
                   "ended and failed)")
      ->check(CLI::IsMember({"ended", "failed", "active", "any"}));
  runs_prune_cmd->add_flag("--dry-run", prune.dry_run, "Print what would go; change nothing");
  runs_prune_cmd->add_flag("--vacuum", prune.vacuum,
                           "Rewrite the file (full VACUUM): once, for a store made before "
                           "incremental vacuum, whose space otherwise never goes back");
  runs_prune_cmd->add_flag("--force", prune.force, "Allow --state active or any");
  runs_prune_cmd->footer(
      "A run goes when every criterion given holds. Give at least one.\n"
      "Exit: 0 done (also when nothing matched), 2 usage, 3 unreadable database.\n"
      "Examples:\n"
      "  understudy runs prune --keep 10                  # the last 10 runs of each session\n"
      "  understudy runs prune --older-than 7d --keep 1   # week-old runs, but each session's last\n"
      "  understudy runs prune --state failed --dry-run");
  db_option(runs_prune_cmd, true);

  std::string run;
  std::vector<std::string> kinds;
  std::string agent;
  CLI::App* trace_cmd = app.add_subcommand("trace", "Print a run's trace events in order.");
  trace_cmd->add_option("run", run, "Run id")->required();
  trace_cmd->add_option("--kind", kinds, "Only these kinds (exchange, miss, run_started, ...)");
  trace_cmd->add_option("--agent", agent, "Only this agent's events");
  trace_cmd->footer("Example: understudy trace run-1a2b3c4d5e6f7a8b --kind exchange");
  db_option(trace_cmd, true);

  std::string timeline_ref;
  std::string color = "auto";
  CLI::App* timeline_cmd = app.add_subcommand(
      "show", "Print what happened in a run (or a session's exchanges) as a timeline.");
  timeline_cmd->add_option("ref", timeline_ref, "Run id, or session NAME or NAME@VERSION")
      ->required();
  timeline_cmd
      ->add_option("--color", color,
                   "auto (only on a terminal, and not when NO_COLOR is set), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  timeline_cmd->footer(
      "One line per event: answers, routing decisions, tool calls, phase changes, misses.\n"
      "A name that is not a run id is looked up as a session. --json prints the events as\n"
      "`trace --json` does (or the session's exchanges).\n"
      "Examples:\n"
      "  understudy show run-1a2b3c4d5e6f7a8b\n"
      "  understudy show golden@2 --color never");
  db_option(timeline_cmd, true);

  std::string assert_run;
  std::string assert_addr;
  std::vector<std::string> spec_files;
  CLI::App* assert_cmd = app.add_subcommand(
      "assert", "Check a run's trace against assertion specs; print a verdict per check.");
  assert_cmd->add_option("--run", assert_run, "Run id")->required();
  assert_cmd->add_option("spec", spec_files, "Assertion spec file (YAML or JSON)")->required();
  assert_cmd->add_option("--addr", assert_addr,
                         "Ask a running server (HOST:PORT) instead of reading the database");
  assert_cmd->footer(
      "A spec lists checks under `assertions:` (docs/assertions.md): agent_sequence,\n"
      "phase_transitions, tool_calls, feedback_propagated, count, no_misses, all_consumed,\n"
      "and select/expect items. Each failure says what was expected, what the run did and\n"
      "where they first differ.\n"
      "Exit: 0 every check passed, 1 a check failed, 2 usage or an invalid spec,\n"
      "3 unreadable spec or database, unknown run, or server unreachable.\n"
      "Examples:\n"
      "  understudy assert --run run-1a2b3c4d5e6f7a8b checks.yaml\n"
      "  understudy assert --run my-run --addr 127.0.0.1:7000 checks.yaml --json");
  db_option(assert_cmd, true);

  std::vector<std::string> scenario_files;
  bool validate_json = false;
  CLI::App* validate_cmd = app.add_subcommand(
      "validate",
      "Check scenario files and sim configs; print every problem with its line and a suggestion.");
  validate_cmd->add_option("file", scenario_files,
                           "Scenario file (YAML or JSON), pack name, or sim config")
      ->required();
  validate_cmd->add_flag("--json", validate_json, "Print the reports as one JSON document");
  validate_cmd->footer(
      "Exit: 0 no errors (warnings allowed), 1 some file has errors, 2 usage, 3 unreadable file.\n"
      "Packs are looked up in $UNDERSTUDY_SCENARIOS, then in the scenarios/ shipped with understudy.\n"
      "A file with `schema: understudy.sim/v1` or a top-level `behaviours` (or, in the MEOW\n"
      "dialect, `behaviors`, `hooks` or `logging`) is checked as a sim config (`understudy sim\n"
      "--config`, docs/sim.md) instead.\n"
      "Examples:\n"
      "  understudy validate tests/review-loop.yaml\n"
      "  understudy validate coder.sim.yaml\n"
      "  understudy validate rate-limit network-resilience --json");

  // mcp-proxy: the stdio transport of MCP.
  understudy::cli::McpProxyOptions mcp;
  std::string mcp_token;
  std::string mcp_token_file;
  CLI::App* mcp_cmd = app.add_subcommand(
      "mcp-proxy",
      "Stand in for a stdio MCP server: relay the agent's JSON-RPC to understudy, which records "
      "or replays it.");
  mcp_cmd->add_option("--name", mcp.name, "The MCP server's name (recordings are kept by it)")
      ->required();
  mcp_cmd->add_option("--http", mcp.http, "understudy's HTTP address (http://HOST:PORT)")
      ->envname("UNDERSTUDY_HTTP");
  mcp_cmd->add_option("--run", mcp.run, "Run to record into or replay from (default: the server's)")
      ->envname("UNDERSTUDY_RUN");
  mcp_cmd->add_option("--agent", mcp.agent, "Agent name sent with every message")
      ->envname("UNDERSTUDY_AGENT");
  mcp_cmd
      ->add_option("--auth-token-file", mcp_token_file,
                   "File (mode 600) holding the server's token (docs/security.md)")
      ->envname("UNDERSTUDY_AUTH_TOKEN_FILE");
  mcp_cmd
      ->add_option("--auth-token", mcp_token,
                   "The token itself (visible in the process list: prefer --auth-token-file)")
      ->envname("UNDERSTUDY_AUTH_TOKEN");
  mcp_cmd->footer(
      "Reads newline-delimited JSON-RPC on stdin, POSTs each message to\n"
      "{http}/run/{run}/mcp/{name} and writes the answers on stdout, one message per line.\n"
      "When the run records (or passes through) and understudy asks for the real server, the\n"
      "command after -- is started (stdin/stdout piped, stderr inherited); in replay it never is.\n"
      "Exit: 0 when stdin ends (or on SIGINT/SIGTERM), 2 usage, 3 stdin or stdout failed.\n"
      "Example, in an agent's MCP config (`understudy record|replay -- CMD` sets UNDERSTUDY_HTTP\n"
      "and UNDERSTUDY_RUN for the agent):\n"
      "  {\"command\":\"understudy\",\"args\":[\"mcp-proxy\",\"--name\",\"fs\",\"--\",\"npx\",\n"
      "   \"@modelcontextprotocol/server-filesystem\",\"/tmp\"]}\n"
      "Or by hand:\n"
      "  understudy mcp-proxy --http http://127.0.0.1:7141 --run my-run --name fs -- \\\n"
      "    npx @modelcontextprotocol/server-filesystem /tmp");

  // mcp: understudy's own tools for coding agents, over stdio.
  understudy::cli::McpServeFlags mcp_serve;
  CLI::App* mcp_serve_cmd = app.add_subcommand(
      "mcp",
      "Serve understudy's tools to coding agents over MCP (stdio): sessions, traces, validators, "
      "spec and test generation, test runs.");
  mcp_serve_cmd->add_option("--db", mcp_serve.db, "SQLite file to read (never created)")
      ->envname("UNDERSTUDY_DB");
  mcp_serve_cmd
      ->add_option("--addr", mcp_serve.addr,
                   "Read a running server (gRPC HOST:PORT) instead of the database")
      ->envname("UNDERSTUDY_ADDR");
  mcp_serve_cmd
      ->add_option("--server-http", mcp_serve.http,
                   "With --addr: that server's HTTP address (HOST:PORT), for run_tests")
      ->envname("UNDERSTUDY_SERVER_HTTP");
  mcp_serve_cmd->add_option("--root", mcp_serve.root,
                            "Folder the tools may read and write files in (default: the current "
                            "directory)");
  mcp_serve_cmd->footer(
      "One JSON-RPC message per line on stdin and stdout (MCP's stdio transport); logs on stderr.\n"
      "The same tools are served over Streamable HTTP at /mcp by `understudy serve`.\n"
      "Exit: 0 when stdin ends, 2 usage (--root missing or not a folder), 3 the database's server\n"
      "cannot start.\n"
      "In an agent's MCP config (docs/agents.md):\n"
      "  {\"mcpServers\": {\"understudy\": {\"command\": \"understudy\",\n"
      "     \"args\": [\"mcp\", \"--db\", \"golden.db\"]}}}");

  std::string schema_kind;
  CLI::App* schema_cmd = app.add_subcommand(
      "schema",
      "Print the JSON Schema of a document kind: scenario, spec, session, sim or sim-meow.");
  schema_cmd->add_option("kind", schema_kind, "scenario | spec | session | sim | sim-meow")
      ->required();
  schema_cmd->footer(
      "JSON Schema 2020-12, for editors (docs/schemas.md).\n"
      "Example:\n"
      "  understudy schema scenario > .understudy/scenario.schema.json");

  std::string gen_spec_ref;
  std::string gen_spec_addr;
  std::string gen_spec_output = "-";
  std::string gen_spec_match = "exact";
  std::string gen_spec_arguments = "key";
  std::vector<std::string> gen_spec_keep;
  bool gen_spec_collapse = false;
  CLI::App* gen_spec_cmd = app.add_subcommand(
      "gen-spec", "Write an assertion spec that a run passes (a run id, or a session's latest run).");
  gen_spec_cmd->add_option("run", gen_spec_ref, "Run id, or session NAME or NAME@N")->required();
  gen_spec_cmd->add_option("-o,--output", gen_spec_output, "Spec file to write (\"-\": stdout)");
  gen_spec_cmd->add_option("--match", gen_spec_match, "How sequences compare")
      ->check(CLI::IsMember({"exact", "prefix", "subsequence"}));
  gen_spec_cmd->add_option("--arguments", gen_spec_arguments, "Tool-call arguments checked")
      ->check(CLI::IsMember({"key", "all", "none"}));
  gen_spec_cmd->add_option("--keep-argument", gen_spec_keep,
                           "Check exactly these argument names (repeatable)");
  gen_spec_cmd->add_flag("--collapse-repeats", gen_spec_collapse,
                         "An agent's consecutive turns count once in the agent sequence");
  gen_spec_cmd->add_option("--addr", gen_spec_addr,
                           "Ask a running server (HOST:PORT) instead of reading the database");
  gen_spec_cmd->footer(
      "The spec checks the agents in order, each agent's tool calls with their key arguments,\n"
      "phase transitions, feedback that reached another agent, and no misses (docs/agents.md).\n"
      "Exit: 0 written, 1 unknown run or session, 2 usage, 3 unreadable database or unwritable file.\n"
      "Example:\n"
      "  understudy gen-spec golden -o golden.spec.yaml");
  db_option(gen_spec_cmd, false);

  std::string gen_test_spec;
  std::string gen_test_framework;
  std::string gen_test_output = "-";
  understudy::testgen::TestOptions gen_test;
  CLI::App* gen_test_cmd = app.add_subcommand(
      "gen-test",
      "Write a pytest, node:test or GoogleTest file that replays a session, runs a command and "
      "asserts a spec.");
  gen_test_cmd->add_option("spec", gen_test_spec, "Assertion spec file")->required();
  gen_test_cmd->add_option("--framework", gen_test_framework, "pytest | node | gtest")
      ->required()
      ->check(CLI::IsMember({"pytest", "node", "node:test", "gtest", "googletest"}));
  gen_test_cmd->add_option("-o,--output", gen_test_output, "Test file to write (\"-\": stdout)");
  gen_test_cmd->add_option("--session", gen_test.session,
                           "Session to replay (default: the spec's `session:`)");
  gen_test_cmd->add_option("--db", gen_test.db, "The golden database the test replays from");
  gen_test_cmd->add_option("--name", gen_test.test_name, "Words naming the test");
  gen_test_cmd->footer(
      "The command under test goes after --, run without a shell, with OPENAI_BASE_URL,\n"
      "ANTHROPIC_BASE_URL, UNDERSTUDY_ADDR, UNDERSTUDY_HTTP and UNDERSTUDY_RUN pointing at the replay.\n"
      "Exit: 0 written, 1 invalid spec, 2 usage, 3 unreadable spec or unwritable file.\n"
      "Example:\n"
      "  understudy gen-test golden.spec.yaml --framework pytest -o test_golden.py -- node agent.js");

  // verify-install: pack the agent's package, install it in a sandbox, run
  // it there under a replay, check specs (cli/verify_install.h).
  understudy::cli::VerifyInstallFlags verify;
  std::string verify_mode = "none";
  std::string verify_session;
  CLI::App* verify_cmd = app.add_subcommand(
      "verify-install",
      "Pack an agent's npm or Python package, install it in a sandbox, run it there under a "
      "replay and check assertion specs.");
  add_serve_options(verify_cmd, /*with_addresses=*/false);
  verify_cmd->add_option("--session", verify_session,
                         "Golden session to replay (NAME[@N])")
      ->required();
  verify_cmd->add_option("--spec", verify.spec_files, "Assertion spec file (repeatable)")
      ->required();
  verify_cmd->add_option("--package", verify.package_dir,
                         "Folder of the agent's package (package.json or pyproject.toml)");
  verify_cmd->add_flag("--keep", verify.keep, "Keep the sandbox and print its path");
  verify_cmd->add_option("--python", verify.python,
                         "Interpreter that builds the wheel and the venv (Python packages)");
  verify_cmd->add_option("--mode", verify_mode, "none (strict), replay, or new")
      ->check(CLI::IsMember({"none", "replay", "new"}));
  verify_cmd->add_flag("--allow-egress", allow_egress, allow_egress_help);
  verify_cmd->footer(
      "npm: `npm pack`, then `npm install <tgz>` in an empty project; ENTRY is a bin of the\n"
      "package or a file in it. Python: `pip wheel --no-deps --no-build-isolation`, then a\n"
      "`venv --system-site-packages` that installs the wheel with --no-index (dependencies come\n"
      "from the system site); ENTRY is a console script. ENTRY runs in the sandbox as under\n"
      "`understudy replay`, with no path of the package's folder or repository in its\n"
      "environment; then the specs are checked as by `understudy assert`.\n"
      "Exit: 0 the agent exited 0 and every check passed; 1 packing, installing, ENTRY, the agent\n"
      "or a check failed, or the session is unknown; 2 usage or an invalid spec; 3 unreadable\n"
      "spec or database, npm or Python cannot run.\n"
      "Example:\n"
      "  understudy verify-install --session golden --spec golden.spec.yaml -- my-agent");

  // Listed in --help only: `sim` is dispatched before parsing (above).
  app.add_subcommand("sim",
                     "A simulated terminal coding agent for orchestrator tests, driven through "
                     "tmux (flags: understudy sim --help).");

  std::vector<std::string> separated;
  bool has_separator = false;
  const int parsed_argc = SplitWrappedCommand(argc, argv, &separated, &has_separator);
  if (!ApplyConfigFile(parsed_argc, argv, serve_keys)) return 2;
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
  if (*gen_test_cmd) {
    if (!has_separator || separated.empty()) {
      std::cerr << "understudy: give the command under test after --, e.g. understudy gen-test "
                   "spec.yaml --framework pytest -- node agent.js"
                << std::endl;
      return 2;
    }
    gen_test.command = std::move(separated);
    has_separator = false;
  }
  if (*verify_cmd) {
    if (!has_separator || separated.empty()) {
      std::cerr << "understudy: give the agent's entry point after --, e.g. understudy "
                   "verify-install --session golden --spec golden.spec.yaml -- my-agent (see "
                   "`understudy verify-install --help`)"
                << std::endl;
      return 2;
    }
    verify.command = std::move(separated);
    has_separator = false;
  }
  if (*mcp_cmd) {
    if (!has_separator || separated.empty()) {
      std::cerr << "understudy: give the MCP server's command after --, e.g. understudy mcp-proxy "
                   "--name fs -- npx @modelcontextprotocol/server-filesystem /tmp (see `understudy "
                   "mcp-proxy --help`)"
                << std::endl;
      return 2;
    }
    mcp.command = std::move(separated);
    has_separator = false;
  }
  if (has_separator) {
    if (!wrapped.empty()) {
      std::cerr << "understudy: the command goes after -- only (got \"" << wrapped.front()
                << "\" before it)" << std::endl;
      return 2;
    }
    wrapped = std::move(separated);
  }

  understudy::LogLevel level;
  understudy::LogFormat format;
  understudy::ParseLogLevel(log_level, &level);
  understudy::ParseLogFormat(log_format, &format);
  understudy::SetLogging(level, format);

  if (*serve_cmd) {
    // `serve --listen HOST:0` (what tests run, several at once) with no
    // --http of its own: the HTTP listener takes a free port too, instead of
    // every such server fighting over the default 7141.
    const std::string& listen = serve.server.listen;
    if (serve_cmd->get_option("--http")->count() == 0 && absl::EndsWith(listen, ":0")) {
      serve.server.http_listen = listen;
    }
    serve.version = UNDERSTUDY_VERSION;
    return understudy::cli::Serve(serve);
  }
  if (*record_cmd || *replay_cmd) {
    serve.mode = *record_cmd ? record_mode : replay_mode;
    serve.server.default_session = wrap_session;
    serve.refuse_egress = *replay_cmd && !allow_egress;
    return understudy::cli::Wrap(serve, wrapped);
  }
  if (*ls_cmd) return understudy::cli::SessionsList(db, prefix);
  if (*show_cmd) return understudy::cli::SessionsShow(db, ref);
  if (*rm_cmd) return understudy::cli::SessionsRemove(db, ref);
  if (*export_cmd) return understudy::cli::Export(db, ref, output);
  if (*import_cmd) return understudy::cli::Import(db, input, import_name);
  if (*runs_ls_cmd) return understudy::cli::RunsList(db, runs_session);
  if (*runs_rm_cmd) return understudy::cli::RunsRemove(db, runs_ids, runs_force);
  if (*runs_prune_cmd) return understudy::cli::RunsPrune(db, prune);
  if (*trace_cmd) return understudy::cli::Trace(db, run, kinds, agent);
  if (*timeline_cmd) {
    using understudy::cli::ColorMode;
    return understudy::cli::Show(db, timeline_ref,
                                 color == "always"  ? ColorMode::kAlways
                                 : color == "never" ? ColorMode::kNever
                                                    : ColorMode::kAuto);
  }
  if (*validate_cmd) return understudy::cli::Validate(scenario_files, validate_json);
  if (*mcp_cmd) {
    absl::StatusOr<std::string> token =
        understudy::cli::ResolveClientToken(mcp_token, mcp_token_file);
    if (!token.ok()) {
      std::cerr << "understudy: " << token.status().message() << std::endl;
      return 2;
    }
    mcp.auth_token = *token;
    if (mcp.http.empty()) {
      // MCP clients start stdio servers with a filtered environment; the
      // agent that started this proxy has the variables record|replay set.
      if (std::optional<std::string> http =
              understudy::cli::AncestorEnv("UNDERSTUDY_HTTP", getpid())) {
        mcp.http = *http;
        if (mcp.run.empty()) {
          mcp.run = understudy::cli::AncestorEnv("UNDERSTUDY_RUN", getpid()).value_or("");
        }
      }
    }
    return understudy::cli::RunMcpProxy(mcp);
  }
  if (*assert_cmd) return understudy::cli::Assert(db, assert_addr, assert_run, spec_files);
  if (*verify_cmd) {
    verify.serve = serve;
    verify.serve.mode = verify_mode;
    verify.serve.refuse_egress = !allow_egress;
    verify.serve.server.default_session = verify_session;
    return understudy::cli::VerifyInstall(verify);
  }
  if (*mcp_serve_cmd) return understudy::cli::McpServe(mcp_serve, UNDERSTUDY_VERSION);
  if (*schema_cmd) return understudy::cli::Schema(schema_kind);
  if (*gen_spec_cmd) {
    understudy::testgen::SpecOptions options;
    options.match = *understudy::testgen::ParseMatch(gen_spec_match);
    options.arguments = *understudy::testgen::ParseArguments(gen_spec_arguments);
    options.keep_arguments = gen_spec_keep;
    options.collapse_repeats = gen_spec_collapse;
    return understudy::cli::GenSpec(db, gen_spec_addr, gen_spec_ref, options, gen_spec_output);
  }
  if (*gen_test_cmd) {
    gen_test.framework = *understudy::testgen::ParseFramework(gen_test_framework);
    return understudy::cli::GenTest(gen_test_spec, gen_test, gen_test_output);
  }
  return 2;
}
