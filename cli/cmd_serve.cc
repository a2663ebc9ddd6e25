#include "cli/cmd_serve.h"

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/cmd_common.h"
#include "provider/codec.h"
#include "service/server.h"

namespace understudy {
namespace cli {
namespace {

// Adds one server option to `cmd`: its UNDERSTUDY_* variable, its config
// file key in `keys`. A flag given twice takes its last value (`serve
// --listen A ... --listen B` listens on B), as shells' aliases and wrappers
// expect; a repeatable one (a vector) keeps every value.
template <typename Target>
CLI::Option* AddServerOption(CLI::App* cmd, std::set<std::string>* keys, const std::string& name,
                             Target& target, const std::string& help) {
  keys->insert(name);
  CLI::Option* o = cmd->add_option("--" + name, target, help)->envname(EnvName(name));
  if constexpr (!std::is_same_v<Target, std::vector<std::string>>) {
    o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
  return o;
}

// A repeatable server option: in UNDERSTUDY_* variables and config arrays,
// one value per line.
CLI::Option* AddServerList(CLI::App* cmd, std::set<std::string>* keys, const std::string& name,
                           std::vector<std::string>& target, const std::string& help) {
  return AddServerOption(cmd, keys, name, target, help)->delimiter('\n');
}

// The upstreams a record or passthrough forwards to: model APIs, MCP tool
// servers and A2A agents.
void AddUpstreamFlags(CLI::App* cmd, ServerCommandFlags* flags) {
  service::ServerOptions& server = flags->serve.server;
  std::set<std::string>* keys = &flags->config_keys;
  AddServerList(cmd, keys, "upstream", server.upstreams,
                absl::StrCat("Upstream model for record/passthrough: ", service::UpstreamForms(),
                             " (repeat for several)"));
  AddServerList(cmd, keys, "mcp-upstream", server.mcp_upstreams,
                "MCP tool server for record/passthrough: NAME=URL of its Streamable HTTP "
                "endpoint, served at /mcp/NAME (repeatable; docs/mcp.md)");
  AddServerList(cmd, keys, "a2a-upstream", server.a2a_upstreams,
                "A2A agent for record/passthrough: NAME=URL of its JSON-RPC endpoint (its card "
                "at the URL's /.well-known/agent-card.json), served at /a2a/NAME (repeatable; "
                "docs/a2a.md)");
}

// The listeners' options: `serve` only (record and replay pick free
// loopback ports).
void AddListenerFlags(CLI::App* cmd, ServerCommandFlags* flags) {
  ServeFlags& serve = flags->serve;
  std::set<std::string>* keys = &flags->config_keys;
  auto option = [&](const std::string& name, auto& target, const std::string& help) {
    return AddServerOption(cmd, keys, name, target, help);
  };
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
  AddServerList(cmd, keys, "allow-host", serve.server.allow_hosts,
                "Another name the HTTP listener answers to (Host header); * for any (repeatable)");
  option("ui", serve.server.ui,
         "Serve the web UI at /ui and its JSON API at /api/v1 on the HTTP listener "
         "(docs/ui.md); false: both are 404");
  option("metrics", serve.server.metrics,
         "Count requests, errors and latencies for Prometheus at /metrics (docs/metrics.md); "
         "false: nothing is counted and /metrics is 404");
}

// Matching, redaction and the default run's scenario and pace.
void AddMatchingFlags(CLI::App* cmd, ServerCommandFlags* flags) {
  service::ServerOptions& server = flags->serve.server;
  std::set<std::string>* keys = &flags->config_keys;
  auto option = [&](const std::string& name, auto& target, const std::string& help) {
    return AddServerOption(cmd, keys, name, target, help);
  };
  auto list = [&](const std::string& name, std::vector<std::string>& target,
                  const std::string& help) { return AddServerList(cmd, keys, name, target, help); };
  list("ignore-path", server.ignore_paths,
       "Canonical request path matching ignores, e.g. params.temperature, messages[*].name, "
       "extra.user (repeatable)");
  list("normalize", server.normalizers,
       "Rewrite before matching: uuid, timestamp, tmp-path, or REGEX=>REPLACEMENT (repeatable)");
  option("exact-tool-call-ids", server.exact_tool_call_ids,
         "Match tool call ids the client made up (none of the recording's answers holds them) "
         "as they are, not by position");
  list("redact-header", server.redact_headers,
       "Header never logged, besides authorization, x-api-key, api-key, proxy-authorization");
  list("redact-json-path", server.redact_json_paths,
       "Request body field stored as \"[REDACTED]\", e.g. metadata.api_key (repeatable)");
  option("scenario", server.scenario,
         "Scenario for runs that name none: a pack (error-handling, rate-limit, "
         "network-resilience, slow-stream) or a YAML/JSON file; see `understudy validate`");
  option("scenario-dir", server.scenario_dir,
         "Directory whose scenario files callers may name in StartRun (else only packs and "
         "scenario_text)");
  option("speed", server.speed,
         "Replay pace: 0 as fast as possible, 1 the recorded pace, 2 twice as fast")
      ->check(CLI::Range(0.0, 1000.0));
  option("strict", server.default_strict,
         "Default run: a request without a recording is an error (else: closest recording)");
  option("repeat", server.default_repeat,
         "Default run: once a request's recordings are all used, answer it again from the last");
}

// Message limits, timeouts, the trace level and retention.
void AddLimitFlags(CLI::App* cmd, ServerCommandFlags* flags) {
  ServeFlags& serve = flags->serve;
  std::set<std::string>* keys = &flags->config_keys;
  auto option = [&](const std::string& name, auto& target, const std::string& help) {
    return AddServerOption(cmd, keys, name, target, help);
  };
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
      ->check(CountCheck())
      ->default_str("no limit");
  option("keep-trace-for", serve.keep_trace_for,
         "Delete ended runs that started longer ago than this (30m, 12h, 7d)")
      ->check(DurationCheck())
      ->default_str("for ever");
  option("prune-interval", serve.prune_interval,
         "Time between passes of --keep-runs and --keep-trace-for (after one at start-up)")
      ->check(DurationCheck());
}

// The request fields no API's matching looks at, for serve's footer: one
// line per registered API.
std::string IgnoredFieldsHelp() {
  std::string help = "Never part of matching (they never change the answer):\n";
  for (const provider::Codec* codec : provider::CodecRegistry::Builtin().All()) {
    absl::StrAppend(&help, "  ", codec->name(), ": ",
                    absl::StrJoin(codec->IgnoredRequestFields(), ", "), "\n");
  }
  return help;
}

}  // namespace

const char kModesHelp[] =
    "Modes: record, replay, passthrough, once (record an empty session, else replay), "
    "new (replay; record misses into a new version), none (strict replay), all (re-record).\n";

void AddServerFlags(CLI::App* cmd, bool with_addresses, ServerCommandFlags* flags) {
  ServeFlags& serve = flags->serve;
  std::set<std::string>* keys = &flags->config_keys;
  AddServerOption(cmd, keys, "db", serve.server.db_path, "SQLite file (created if missing)");
  AddServerOption(
      cmd, keys, "trace-db", serve.trace_db,
      "Serve a copy of --db made in this file at start (replacing an earlier copy): runs, "
      "traces and recordings go there, --db is only read. `replay` makes a temporary one "
      "unless --mode new");
  if (with_addresses) AddListenerFlags(cmd, flags);
  AddUpstreamFlags(cmd, flags);
  AddMatchingFlags(cmd, flags);
  AddLimitFlags(cmd, flags);
  cmd->add_option("--config", flags->config_path, "TOML file with these options")
      ->envname("UNDERSTUDY_CONFIG");
}

void AddServeFlags(CLI::App* cmd, ServerCommandFlags* flags) {
  AddServerFlags(cmd, /*with_addresses=*/true, flags);
  flags->config_keys.insert("mode");
  flags->config_keys.insert("session");
  ServeFlags& serve = flags->serve;
  cmd->add_option("--mode", serve.mode, "Start a default run for calls that name none")
      ->envname("UNDERSTUDY_MODE")
      ->check(CLI::IsMember({"", "record", "replay", "passthrough", "once", "new", "none", "all"}));
  cmd->add_option("--tools-root", serve.tools_root,
                  "Folder the MCP tools at /mcp may read and write files in (docs/agents.md)")
      ->envname("UNDERSTUDY_TOOLS_ROOT");
  cmd->add_option("--session", serve.server.default_session,
                  "Session of the default run (NAME or NAME@N)")
      ->envname("UNDERSTUDY_SESSION");
  cmd->footer(
      "Prints `understudy serving grpc=HOST:PORT http=HOST:PORT db=PATH` as its first stdout line.\n"
      "Precedence: flags, then UNDERSTUDY_* variables, then --config FILE (TOML: db = \"x.db\").\n" +
      std::string(kModesHelp) + IgnoredFieldsHelp() +
      "Examples:\n"
      "  understudy serve                                   # gRPC 127.0.0.1:7140, HTTP 127.0.0.1:7141\n"
      "  understudy serve --listen 127.0.0.1:0 --http 127.0.0.1:0 --ready-file ready.json\n"
      "  understudy serve --upstream openai=https://api.openai.com --mode record --session golden\n"
      "  understudy serve --trace-level summary --keep-runs 20 --keep-trace-for 7d  # a load test's server");
}

int RunServe(const CLI::App& cmd, ServerCommandFlags* flags, const std::string& version) {
  ServeFlags& serve = flags->serve;
  // `serve --listen HOST:0` (what tests run, several at once) with no
  // --http of its own: the HTTP listener takes a free port too, instead of
  // every such server fighting over the default 7141.
  const std::string& listen = serve.server.listen;
  if (cmd.get_option("--http")->count() == 0 && absl::EndsWith(listen, ":0")) {
    serve.server.http_listen = listen;
  }
  serve.version = version;
  return Serve(serve);
}

}  // namespace cli
}  // namespace understudy
