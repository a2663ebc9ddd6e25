#include "store/schema.h"

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "store/sqlite.h"

namespace understudy {
namespace store {
namespace {

constexpr char kSchemaV1[] = R"sql(
CREATE TABLE sessions (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  state INTEGER NOT NULL,
  created_at_micros INTEGER NOT NULL,
  exchange_count INTEGER NOT NULL DEFAULT 0,
  UNIQUE (name, version)
);
CREATE TABLE exchanges (
  session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  agent TEXT NOT NULL,
  body BLOB NOT NULL,
  PRIMARY KEY (session_id, seq)
);
CREATE INDEX exchanges_by_agent ON exchanges (session_id, agent, seq);
CREATE TABLE runs (
  id TEXT PRIMARY KEY NOT NULL,
  body BLOB NOT NULL,
  summary BLOB
);
CREATE TABLE events (
  run TEXT NOT NULL,
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  agent TEXT NOT NULL,
  body BLOB NOT NULL,
  UNIQUE (run, seq)
);
CREATE INDEX events_by_kind ON events (run, kind, seq);
CREATE INDEX events_by_agent ON events (run, agent, seq);
)sql";

// The kind index carries the agent too, so that a reader of a run's kinds
// and agents (Traces.Assert's agent_sequence and counts) reads only the
// index, not the events' bodies: 100k events of a run went from a 100 MB
// table walk to a few MB of index (bench/run).
constexpr char kSchemaV2[] = R"sql(
DROP INDEX events_by_kind;
CREATE INDEX events_by_kind ON events (run, kind, seq, agent);
)sql";

// Trace rows about eight times smaller (store/trace_table.h): runs, kinds,
// agents and tool names by number; a run's events one key range of the
// table (no (run, seq) index); one index, by kind, covering what filters
// read; compact events that refer to their recorded exchange. Events of
// earlier versions move over as they are (their bodies hold everything; no
// tool column).
constexpr char kSchemaV3[] = R"sql(
CREATE TABLE trace_runs (num INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE);
CREATE TABLE trace_names (num INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
INSERT INTO trace_names (num, name) VALUES (0, '');
CREATE TABLE trace_events (
  key INTEGER PRIMARY KEY,
  kind INTEGER NOT NULL,
  agent INTEGER NOT NULL,
  tool INTEGER,
  ref_session INTEGER,
  ref_seq INTEGER,
  derive INTEGER,
  body BLOB NOT NULL
);
CREATE TABLE trace_refs (
  session_id INTEGER NOT NULL,
  run INTEGER NOT NULL,
  PRIMARY KEY (session_id, run)
) WITHOUT ROWID;
INSERT INTO trace_runs (id) SELECT run FROM events GROUP BY run ORDER BY min(rowid);
INSERT OR IGNORE INTO trace_names (name) SELECT kind FROM events GROUP BY kind;
INSERT OR IGNORE INTO trace_names (name) SELECT agent FROM events GROUP BY agent;
INSERT INTO trace_events (key, kind, agent, tool, body)
  SELECT (r.num << 32) | e.seq, k.num, a.num, NULL, e.body
  FROM events e
  JOIN trace_runs r ON r.id = e.run
  JOIN trace_names k ON k.name = e.kind
  JOIN trace_names a ON a.name = e.agent
  ORDER BY 1;
DROP TABLE events;
CREATE INDEX trace_events_by_kind ON trace_events (kind, key, agent, tool);
)sql";

// The run context of an event (understudy.iteration, .agent.iteration and
// .previous_agent: trace_codec.h ContextAttributes) in integer columns, not
// as text in the body: a replayed call's exchange row 116 -> ~20 B of body.
// Rows written before keep theirs in the body (NULL columns).
constexpr char kSchemaV4[] = R"sql(
ALTER TABLE trace_events ADD COLUMN iter INTEGER;
ALTER TABLE trace_events ADD COLUMN agent_iter INTEGER;
ALTER TABLE trace_events ADD COLUMN prev_agent INTEGER;
)sql";

}  // namespace

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration>* const migrations =
      new std::vector<Migration>{{1, kSchemaV1}, {2, kSchemaV2}, {3, kSchemaV3}, {4, kSchemaV4}};
  return *migrations;
}

int64_t CurrentSchemaVersion() { return Migrations().back().version; }

absl::StatusOr<int64_t> SchemaVersion(sql::Database& db) {
  US_ASSIGN_OR_RETURN(sql::Statement statement, db.Prepare("PRAGMA user_version"));
  US_ASSIGN_OR_RETURN(bool row, statement.Step());
  if (!row) return absl::InternalError("PRAGMA user_version returned no row");
  return statement.ColumnInt64(0);
}

absl::Status Migrate(sql::Database& db) { return Migrate(db, Migrations()); }

namespace {

absl::Status CheckVersion(sql::Database& db, int64_t version, int64_t target) {
  if (version > target) {
    return absl::FailedPreconditionError(absl::StrCat(
        "database \"", db.path(), "\" has schema version ", version,
        ", newer than the newest this binary knows (", target, "); use a newer understudy"));
  }
  if (version < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("database \"", db.path(), "\" has an invalid schema version ", version));
  }
  if (version == 0) {
    US_ASSIGN_OR_RETURN(sql::Statement count, db.Prepare("SELECT count(*) FROM sqlite_master"));
    US_ASSIGN_OR_RETURN(bool row, count.Step());
    if (row && count.ColumnInt64(0) > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("database \"", db.path(),
                       "\" has tables but no understudy schema version: it belongs "
                       "to something else"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckOwnership(sql::Database& db) {
  US_ASSIGN_OR_RETURN(int64_t version, SchemaVersion(db));
  return CheckVersion(db, version, CurrentSchemaVersion());
}

absl::Status Migrate(sql::Database& db, const std::vector<Migration>& migrations) {
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int64_t>(i) + 1) {
      return absl::InvalidArgumentError(absl::StrCat("migration ", i, " has version ",
                                                     migrations[i].version, ", expected ", i + 1));
    }
  }
  const int64_t target = static_cast<int64_t>(migrations.size());

  sql::Transaction txn(&db);
  US_RETURN_IF_ERROR(txn.Begin(sql::Transaction::Mode::kImmediate));
  US_ASSIGN_OR_RETURN(int64_t version, SchemaVersion(db));
  US_RETURN_IF_ERROR(CheckVersion(db, version, target));
  if (version == target) return absl::OkStatus();  // Nothing to do.
  for (int64_t v = version + 1; v <= target; ++v) {
    absl::Status applied = db.Execute(migrations[v - 1].sql);
    if (!applied.ok()) {
      return absl::Status(applied.code(),
                          absl::StrCat("migration to schema version ", v, ": ", applied.message()));
    }
  }
  // PRAGMA takes no bound parameters; `target` is an integer we computed.
  US_RETURN_IF_ERROR(db.Execute(absl::StrCat("PRAGMA user_version=", target)));
  return txn.Commit();
}

}  // namespace store
}  // namespace understudy
