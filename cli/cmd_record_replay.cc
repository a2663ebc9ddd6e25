#include "cli/cmd_record_replay.h"

#include <iostream>
#include <string>
#include <utility>

#include "cli/wrap.h"
#include "cli/wrap_env.h"

namespace understudy {
namespace cli {
namespace {

constexpr char kAllowEgressHelp[] =
    "Leave the command's proxy variables as they are (by default HTTPS_PROXY, HTTP_PROXY and "
    "ALL_PROXY point at understudy, which refuses to be a proxy, so an SDK that ignores its "
    "base URL cannot reach a real provider)";

// What record and replay share: the server's flags, --session, the command.
void AddWrapFlags(CLI::App* cmd, ServerCommandFlags* server, WrapCommandFlags* flags) {
  AddServerFlags(cmd, /*with_addresses=*/false, server);
  cmd->add_option("--session", flags->session, "Session to record into or replay (NAME[@N])")
      ->required();
  cmd->add_option("command", flags->command, "The command, after -- (taken verbatim)");
}

}  // namespace

void AddRecordFlags(CLI::App* cmd, ServerCommandFlags* server, WrapCommandFlags* flags) {
  AddWrapFlags(cmd, server, flags);
  cmd->add_option("--mode", flags->record_mode, "record, once, new or all")
      ->check(CLI::IsMember({"record", "once", "new", "all"}));
  cmd->footer(
      WrapperVariablesHelp() + "\n" + std::string(kModesHelp) +
      "Example:\n  understudy record --session golden --upstream openai=https://api.openai.com "
      "-- node agent.js");
}

void AddReplayFlags(CLI::App* cmd, ServerCommandFlags* server, WrapCommandFlags* flags) {
  AddWrapFlags(cmd, server, flags);
  cmd->add_option("--mode", flags->replay_mode, "none (strict), replay, or new")
      ->check(CLI::IsMember({"none", "replay", "new"}));
  cmd->add_flag("--allow-egress", flags->allow_egress, kAllowEgressHelp);
  cmd->footer(
      WrapperVariablesHelp() + " No upstream is contacted in the default mode (none).\n"
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
}

int RunRecordOrReplay(bool record, ServerCommandFlags* server, WrapCommandFlags* flags,
                      const CommandAfterSeparator& after) {
  if (after.given) {
    if (!flags->command.empty()) {
      std::cerr << "understudy: the command goes after -- only (got \"" << flags->command.front()
                << "\" before it)" << std::endl;
      return 2;
    }
    flags->command = after.words;
  }
  ServeFlags& serve = server->serve;
  serve.mode = record ? flags->record_mode : flags->replay_mode;
  serve.server.default_session = flags->session;
  serve.refuse_egress = !record && !flags->allow_egress;
  return Wrap(serve, flags->command);
}

void AddVerifyInstallFlags(CLI::App* cmd, ServerCommandFlags* server, WrapCommandFlags* flags) {
  VerifyInstallFlags& verify = flags->verify;
  AddServerFlags(cmd, /*with_addresses=*/false, server);
  cmd->add_option("--session", flags->verify_session, "Golden session to replay (NAME[@N])")
      ->required();
  cmd->add_option("--spec", verify.spec_files, "Assertion spec file (repeatable)")->required();
  cmd->add_option("--package", verify.package_dir,
                  "Folder of the agent's package (package.json or pyproject.toml)");
  cmd->add_flag("--keep", verify.keep, "Keep the sandbox and print its path");
  cmd->add_option("--python", verify.python,
                  "Interpreter that builds the wheel and the venv (Python packages)");
  cmd->add_option("--mode", flags->verify_mode, "none (strict), replay, or new")
      ->check(CLI::IsMember({"none", "replay", "new"}));
  cmd->add_flag("--allow-egress", flags->allow_egress, kAllowEgressHelp);
  cmd->footer(
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
}

int RunVerifyInstallCommand(ServerCommandFlags* server, WrapCommandFlags* flags,
                            const CommandAfterSeparator& after) {
  if (!after.given || after.words.empty()) {
    std::cerr << "understudy: give the agent's entry point after --, e.g. understudy "
                 "verify-install --session golden --spec golden.spec.yaml -- my-agent (see "
                 "`understudy verify-install --help`)"
              << std::endl;
    return 2;
  }
  VerifyInstallFlags& verify = flags->verify;
  verify.command = after.words;
  verify.serve = server->serve;
  verify.serve.mode = flags->verify_mode;
  verify.serve.refuse_egress = !flags->allow_egress;
  verify.serve.server.default_session = flags->verify_session;
  return VerifyInstall(verify);
}

}  // namespace cli
}  // namespace understudy
