// `understudy runs ls|rm|prune`: the runs a store holds, and removing them
// with their traces to keep the store small (docs/cli.md, "runs"). The
// database is opened directly, never created (a mistyped --db is an error);
// these commands work while a server is running on it.
#ifndef UNDERSTUDY_CLI_RUNS_H_
#define UNDERSTUDY_CLI_RUNS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "cli/command_base.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace cli {

// "full", "summary" or "off" (what --trace-level and the clients take);
// "unspecified" for TRACE_LEVEL_UNSPECIFIED.
std::string TraceLevelName(v1::TraceLevel level);
// The level a --trace-level value names; nullopt for any other text.
std::optional<v1::TraceLevel> ParseTraceLevel(absl::string_view name);

// `runs ls [--session NAME[@N]]`: one line per run in start order (then
// id): id, session@version, mode, state, trace level, start (UTC
// ISO-8601), duration ("-" while active), served, recorded, misses and
// stored trace events; with db.json one JSON object per line instead: the
// Run with every field, and "events". `session` "" lists every run; NAME
// every version of it; NAME@N that version. Returns 0 (no runs: a note on
// stderr); 1 for a malformed `session`; 3 when the database cannot be
// opened or read.
int RunsList(const DbFlags& db, const std::string& session);

// `runs rm ID...`: deletes each named run with its summary and trace
// events, then returns the freed space to the filesystem. Every run that can
// be deleted is; an unknown id, or an active run without `force` (its
// server may be writing it; one whose server died stays active in the store
// for ever), is named on stderr and not deleted. Prints "deleted N runs (M
// trace events); the file shrank by B bytes" on stderr. Returns 0 when every
// id was deleted; 1 when one was unknown or refused; 3 when the database
// cannot be opened or written.
int RunsRemove(const DbFlags& db, const std::vector<std::string>& ids, bool force);

struct PruneFlags {
  // Only runs that started longer ago than this (base/duration.h: "7d");
  // "" for any age.
  std::string older_than;
  // Keep the newest N runs of each session; -1 for no such bound.
  int64_t keep = -1;
  // ended, failed, active, any; empty: ended and failed.
  std::vector<std::string> states;
  // Print what would go; change nothing.
  bool dry_run = false;
  // A full VACUUM after the deletes instead of an incremental one: for a
  // store created before incremental vacuum existed (rewrites the file).
  bool vacuum = false;
  // Allow states that select active runs.
  bool force = false;
};

// `runs prune`: deletes the runs store::SelectRuns picks for the flags
// (each criterion given must hold: older than, beyond the newest N of its
// session, in one of the states), printing them first as `runs ls` does
// (with db.json, as JSON lines), then returns the freed space to the
// filesystem and prints "removed N runs (M trace events); the file shrank
// by B bytes" on stderr ("would remove ..." with dry_run, which changes
// nothing). Returns 0 (also when nothing matched); 2 for a usage error (no
// criterion, a bad duration or state, active runs without `force`); 3 when
// the database cannot be opened or written.
int RunsPrune(const DbFlags& db, const PruneFlags& flags);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_RUNS_H_
