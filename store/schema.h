// The store's SQLite schema and its forward migrations.
//
// The schema version lives in the file's `PRAGMA user_version`. Version N of
// the schema is reached by applying migrations 1..N in order, each exactly
// once; a binary never opens a file whose version is newer than it knows
// (it could not know what the newer tables mean). To change the schema,
// append a migration to kMigrations in schema.cc; never edit one that has
// shipped.
//
// Schema (version 1):
//   sessions   id INTEGER PRIMARY KEY, name, version, state (v1::SessionState),
//              created_at_micros, exchange_count; UNIQUE (name, version).
//              exchange_count is maintained on append so that listing
//              sessions does not count exchanges.
//   exchanges  session_id -> sessions ON DELETE CASCADE, seq, agent,
//              body (serialized v1::Exchange); PRIMARY KEY (session_id, seq);
//              index (session_id, agent, seq) answers Session.agents (in
//              order of first appearance) from the index alone.
//   runs       id TEXT PRIMARY KEY, body (v1::Run), summary (v1::RunSummary,
//              NULL until the run ends).
//   events     (versions 1-2) run, seq, kind, agent, body (v1::TraceEvent).
//
// Version 3 replaces `events` with the trace tables of store/trace_table.h
// (trace_runs, trace_names, trace_events, trace_refs): integer keys, one
// index, and events that refer to their recorded exchange.
#ifndef UNDERSTUDY_STORE_SCHEMA_H_
#define UNDERSTUDY_STORE_SCHEMA_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/sqlite.h"

namespace understudy {
namespace store {

// One step of the schema: SQL that takes a database from version
// `version - 1` to `version`.
struct Migration {
  int64_t version;
  const char* sql;
};

// The migrations this binary knows, in order; versions 1, 2, ... without gaps.
const std::vector<Migration>& Migrations();

// The schema version this binary creates and understands.
int64_t CurrentSchemaVersion();

// The file's `PRAGMA user_version`.
absl::StatusOr<int64_t> SchemaVersion(sql::Database& db);

// OK when `db` is an understudy store this binary can use, or an empty file;
// FAILED_PRECONDITION when its schema version is newer than this binary's or
// negative, or when it has tables but no understudy schema version (it
// belongs to something else). Reads only: a file that is refused is left
// exactly as it was.
absl::Status CheckOwnership(sql::Database& db);

// Brings `db` to the newest version of `migrations` (default: Migrations()),
// applying the missing steps in one IMMEDIATE transaction, so that another
// process migrating the same file at the same time waits, then finds the work
// done. All or nothing: on failure the file is left at its old version.
//
// Fails with FAILED_PRECONDITION when the file's version is newer than the
// newest migration, or when a version-0 file already has tables (it belongs
// to something else, and adding ours would only confuse both);
// INVALID_ARGUMENT when `migrations` is not numbered 1..N; otherwise with the
// status of the failing SQL.
absl::Status Migrate(sql::Database& db);
absl::Status Migrate(sql::Database& db, const std::vector<Migration>& migrations);

}  // namespace store
}  // namespace understudy

#endif  // UNDERSTUDY_STORE_SCHEMA_H_
