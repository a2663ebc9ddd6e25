// What the `understudy` commands' flag definitions share (cli/command_table.h
// lists the commands): option environment names, the duration and count
// validators, the --db flag of the commands that read the database, and the
// command given after `--`.
#ifndef UNDERSTUDY_CLI_CMD_COMMON_H_
#define UNDERSTUDY_CLI_CMD_COMMON_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/command_base.h"

namespace understudy {
namespace cli {

// The environment variable of a serve option: --max-message-bytes →
// UNDERSTUDY_MAX_MESSAGE_BYTES.
std::string EnvName(const std::string& option);

// A duration flag (base/duration.h): "30m", "12h", "7d".
CLI::Validator DurationCheck();

// A count flag: 0 or more (CLI::NonNegativeNumber's message prints the
// largest double).
CLI::Validator CountCheck();

// Adds `--db FILE` (UNDERSTUDY_DB) to `cmd`, and `--json` when `json`, bound
// to `db`.
void AddDbFlags(CLI::App* cmd, DbFlags* db, bool json);

// `CMD ... -- ARGS...`: the words after the first "--" that follows a command
// that takes one (record, replay, mcp-proxy, gen-test, verify-install),
// split off before parsing (see main.cc).
struct CommandAfterSeparator {
  // Whether "--" was given.
  bool given = false;
  // The words after it, verbatim.
  std::vector<std::string> words;
};

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_CMD_COMMON_H_
