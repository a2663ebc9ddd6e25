// `understudy record|replay|verify-install ... -- CMD`: the commands that
// start a server of their own (cli/cmd_serve.h's flags) and run a command
// against it.
#ifndef UNDERSTUDY_CLI_CMD_RECORD_REPLAY_H_
#define UNDERSTUDY_CLI_CMD_RECORD_REPLAY_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/cmd_common.h"
#include "cli/cmd_serve.h"
#include "cli/verify_install.h"

namespace understudy {
namespace cli {

// The flags of record, replay and verify-install besides the server's.
struct WrapCommandFlags {
  // record|replay --session and the command (positional, or after --).
  std::string session;
  std::vector<std::string> command;
  std::string record_mode = "record";
  std::string replay_mode = "none";
  // replay|verify-install --allow-egress.
  bool allow_egress = false;
  // verify-install's own.
  VerifyInstallFlags verify;
  std::string verify_mode = "none";
  std::string verify_session;
};

// `record`: the server's flags, --session, the command, --mode.
void AddRecordFlags(CLI::App* cmd, ServerCommandFlags* server, WrapCommandFlags* flags);
// `replay`: record's flags with replay's modes, and --allow-egress.
void AddReplayFlags(CLI::App* cmd, ServerCommandFlags* server, WrapCommandFlags* flags);
// Runs `record` (`record` true) or `replay` once parsed; 2 when a command is
// given both before and after --.
int RunRecordOrReplay(bool record, ServerCommandFlags* server, WrapCommandFlags* flags,
                      const CommandAfterSeparator& after);

// `verify-install`: the server's flags without its addresses, and its own.
void AddVerifyInstallFlags(CLI::App* cmd, ServerCommandFlags* server, WrapCommandFlags* flags);
// Runs `verify-install` once parsed; 2 when no entry point follows --.
int RunVerifyInstallCommand(ServerCommandFlags* server, WrapCommandFlags* flags,
                            const CommandAfterSeparator& after);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_CMD_RECORD_REPLAY_H_
