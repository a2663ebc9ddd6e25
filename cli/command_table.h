// The `understudy` commands as a table: each entry names a command, adds its
// flags to a CLI11 subcommand and runs it once parsed. main.cc parses the
// global flags and dispatches through it; the commands' flags and bodies
// live in one file per group (cli/cmd_*.h).
#ifndef UNDERSTUDY_CLI_COMMAND_TABLE_H_
#define UNDERSTUDY_CLI_COMMAND_TABLE_H_

#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/cmd_common.h"
#include "cli/cmd_gen.h"
#include "cli/cmd_mcp.h"
#include "cli/cmd_record_replay.h"
#include "cli/cmd_serve.h"
#include "cli/cmd_sessions.h"
#include "cli/cmd_trace.h"
#include "cli/command_base.h"

namespace understudy {
namespace cli {

// Every command's flag values. One process runs one command, so commands of
// a group share their storage as they share flag definitions.
struct CommandLine {
  // understudy's version, for serverInfo and the MCP tools.
  std::string version;
  // The words after "--" (main.cc splits them off before parsing).
  CommandAfterSeparator after_separator;
  // serve, record, replay, verify-install.
  ServerCommandFlags server;
  WrapCommandFlags wrap;
  // The commands that read the database.
  DbFlags db;
  StoreCommandFlags store;
  TraceCommandFlags trace;
  GenCommandFlags gen;
  // mcp-proxy and mcp.
  McpProxyCommandFlags mcp_proxy;
  McpServeFlags mcp_serve;
};

// One command of the table.
struct Command {
  // The command it belongs to ("sessions", "runs"); "" for a top-level one.
  const char* group;
  const char* name;
  // The one-line description in --help.
  const char* help;
  // Adds the command's flags and footer to `cmd`, bound to `flags`.
  void (*add_flags)(CLI::App* cmd, CommandLine* flags);
  // Runs the command once parsed and returns its exit code; null for a
  // group (its commands run) and for `sim` (dispatched before parsing).
  int (*run)(const CLI::App& cmd, CommandLine* flags);
};

// Every command, in the order --help lists them; a group before its commands.
const std::vector<Command>& Commands();

// Adds every command of Commands() to `app` with its flags bound to `flags`;
// returns each entry with its subcommand, for dispatch after parsing.
std::vector<std::pair<const Command*, CLI::App*>> AddCommands(CLI::App* app, CommandLine* flags);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_COMMAND_TABLE_H_
