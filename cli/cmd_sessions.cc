#include "cli/cmd_sessions.h"

#include "cli/cmd_common.h"
#include "cli/sessions.h"

namespace understudy {
namespace cli {

void AddSessionsGroup(CLI::App* cmd) { cmd->require_subcommand(1); }
void AddRunsGroup(CLI::App* cmd) { cmd->require_subcommand(1); }

void AddSessionsListFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db) {
  cmd->add_option("--prefix", flags->prefix, "Only names starting with this");
  AddDbFlags(cmd, db, /*json=*/true);
}

int RunSessionsList(const StoreCommandFlags& flags, const DbFlags& db) {
  return SessionsList(db, flags.prefix);
}

void AddSessionsShowFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db) {
  cmd->add_option("session", flags->session, "NAME or NAME@VERSION (default: latest)")
      ->required();
  AddDbFlags(cmd, db, /*json=*/true);
}

int RunSessionsShow(const StoreCommandFlags& flags, const DbFlags& db) {
  return SessionsShow(db, flags.session);
}

void AddSessionsRemoveFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db) {
  cmd->add_option("session", flags->session, "NAME or NAME@VERSION")->required();
  AddDbFlags(cmd, db, /*json=*/false);
}

int RunSessionsRemove(const StoreCommandFlags& flags, const DbFlags& db) {
  return SessionsRemove(db, flags.session);
}

void AddExportFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db) {
  cmd->add_option("session", flags->session, "NAME or NAME@VERSION (default: latest)")
      ->required();
  cmd->add_option("-o,--output", flags->output, "File to write (default: stdout)");
  cmd->footer("Example: understudy export golden -o tests/golden.jsonl");
  AddDbFlags(cmd, db, /*json=*/false);
}

int RunExport(const StoreCommandFlags& flags, const DbFlags& db) {
  return Export(db, flags.session, flags.output);
}

void AddImportFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db) {
  cmd->add_option("file", flags->input, "JSONL file, or - for stdin")->required();
  cmd->add_option("--name", flags->import_name, "Store under this name instead of the file's");
  cmd->footer("Example: understudy import tests/golden.jsonl");
  AddDbFlags(cmd, db, /*json=*/false);
}

int RunImport(const StoreCommandFlags& flags, const DbFlags& db) {
  return Import(db, flags.input, flags.import_name);
}

void AddRunsListFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db) {
  cmd->add_option("--session", flags->runs_session,
                  "Only runs of this session (NAME: every version; NAME@N)");
  AddDbFlags(cmd, db, /*json=*/true);
}

int RunRunsList(const StoreCommandFlags& flags, const DbFlags& db) {
  return RunsList(db, flags.runs_session);
}

void AddRunsRemoveFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db) {
  cmd->add_option("run", flags->run_ids, "Run id (several allowed)")->required();
  cmd->add_flag("--force", flags->force_remove,
                "Delete active runs too (a run whose server died stays active)");
  cmd->footer(
      "Unknown ids and active runs (without --force) are named and left; the others are deleted.\n"
      "Exit: 0 all deleted, 1 one was unknown or refused, 3 unreadable database.");
  AddDbFlags(cmd, db, /*json=*/false);
}

int RunRunsRemove(const StoreCommandFlags& flags, const DbFlags& db) {
  return RunsRemove(db, flags.run_ids, flags.force_remove);
}

void AddRunsPruneFlags(CLI::App* cmd, StoreCommandFlags* flags, DbFlags* db) {
  PruneFlags& prune = flags->prune;
  cmd->add_option("--older-than", prune.older_than,
                  "Only runs that started longer ago than this (30m, 12h, 7d)")
      ->check(DurationCheck());
  cmd->add_option("--keep", prune.keep, "Keep the newest N runs of each session, delete the rest")
      ->check(CountCheck())
      ->default_str("no limit");
  cmd->add_option("--state", prune.states,
                  "Only runs in this state: ended, failed, active or any (repeatable; default: "
                  "ended and failed)")
      ->check(CLI::IsMember({"ended", "failed", "active", "any"}));
  cmd->add_flag("--dry-run", prune.dry_run, "Print what would go; change nothing");
  cmd->add_flag("--vacuum", prune.vacuum,
                "Rewrite the file (full VACUUM): once, for a store made before "
                "incremental vacuum, whose space otherwise never goes back");
  cmd->add_flag("--force", prune.force, "Allow --state active or any");
  cmd->footer(
      "A run goes when every criterion given holds. Give at least one.\n"
      "Exit: 0 done (also when nothing matched), 2 usage, 3 unreadable database.\n"
      "Examples:\n"
      "  understudy runs prune --keep 10                  # the last 10 runs of each session\n"
      "  understudy runs prune --older-than 7d --keep 1   # week-old runs, but each session's last\n"
      "  understudy runs prune --state failed --dry-run");
  AddDbFlags(cmd, db, /*json=*/true);
}

int RunRunsPrune(const StoreCommandFlags& flags, const DbFlags& db) {
  return RunsPrune(db, flags.prune);
}

}  // namespace cli
}  // namespace understudy
