// `understudy serve`, and the server flags it shares with the commands that
// start a server of their own (record, replay, verify-install:
// cli/cmd_record_replay.h).
#ifndef UNDERSTUDY_CLI_CMD_SERVE_H_
#define UNDERSTUDY_CLI_CMD_SERVE_H_

#include <set>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/serve.h"

namespace understudy {
namespace cli {

// The server flags' values, and what `--config FILE` may set.
struct ServerCommandFlags {
  ServerCommandFlags() { serve.server.http_listen = "127.0.0.1:7141"; }
  ServeFlags serve;
  // --config: a TOML file of these options (read before parsing, main.cc).
  std::string config_path;
  // The long options (without dashes) a config file may set.
  std::set<std::string> config_keys;
};

// Adds the server's options to `cmd`, each with its UNDERSTUDY_* variable
// and its config file key: the listeners' (`with_addresses`: serve only),
// the upstreams (AddUpstreamFlags), matching, redaction, scenario, pace,
// limits, trace level and retention, and --config.
void AddServerFlags(CLI::App* cmd, bool with_addresses, ServerCommandFlags* flags);

// The text of --help's footers: the modes --mode takes.
extern const char kModesHelp[];

// `serve`: its own flags (--mode, --tools-root, --session) after the
// server's.
void AddServeFlags(CLI::App* cmd, ServerCommandFlags* flags);

// Runs `serve` once parsed; `version` is understudy's, for the MCP tools.
int RunServe(const CLI::App& cmd, ServerCommandFlags* flags, const std::string& version);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_CMD_SERVE_H_
