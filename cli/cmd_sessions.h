// `understudy sessions ls|show|rm`, `export`, `import` and `runs
// ls|rm|prune`: the commands that list, move and delete what the database
// holds (bodies in cli/sessions.h and cli/runs.h).
#ifndef UNDERSTUDY_CLI_CMD_SESSIONS_H_
#define UNDERSTUDY_CLI_CMD_SESSIONS_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/command_base.h"
#include "cli/runs.h"

namespace understudy {
namespace cli {

// The flags of these commands besides --db and --json (DbFlags).
struct StoreCommandFlags {
  // sessions ls --prefix.
  std::string prefix;
  // The session of sessions show|rm and export.
  std::string session;
  // export -o.
  std::string output;
  // import's file and --name.
  std::string input;
  std::string import_name;
  // runs ls --session.
  std::string runs_session;
  // runs rm's ids and --force.
  std::vector<std::string> run_ids;
  bool force_remove = false;
  // runs prune's.
  PruneFlags prune;
};

// The groups `sessions` and `runs`: each requires one of its commands.
void AddSessionsGroup(CLI::App* cmd);
void AddRunsGroup(CLI::App* cmd);

// Each command's flags, bound to `flags` and `db`; its Run function runs it
// once parsed and returns its exit code.
void AddSessionsListFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db);
int RunSessionsList(const StoreCommandFlags& flags, const DbFlags& db);
void AddSessionsShowFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db);
int RunSessionsShow(const StoreCommandFlags& flags, const DbFlags& db);
void AddSessionsRemoveFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db);
int RunSessionsRemove(const StoreCommandFlags& flags, const DbFlags& db);
void AddExportFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db);
int RunExport(const StoreCommandFlags& flags, const DbFlags& db);
void AddImportFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db);
int RunImport(const StoreCommandFlags& flags, const DbFlags& db);
void AddRunsListFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db);
int RunRunsList(const StoreCommandFlags& flags, const DbFlags& db);
void AddRunsRemoveFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db);
int RunRunsRemove(const StoreCommandFlags& flags, const DbFlags& db);
void AddRunsPruneFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db);
int RunRunsPrune(const StoreCommandFlags& flags, const DbFlags& db);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_CMD_SESSIONS_H_
