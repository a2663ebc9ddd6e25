// A small RAII layer over the SQLite C API, after Chromium's sql/.
//
//   US_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> db,
//                       sql::Database::Open(path, sql::DatabaseOptions()));
//   sql::Transaction txn(db.get());
//   US_RETURN_IF_ERROR(txn.Begin(sql::Transaction::Mode::kImmediate));
//   US_ASSIGN_OR_RETURN(sql::Statement insert,
//                       db->Prepare("INSERT INTO t(a, b) VALUES (?, ?)"));
//   US_RETURN_IF_ERROR(insert.BindInt64(1, 42));
//   US_RETURN_IF_ERROR(insert.BindText(2, "hello"));
//   US_RETURN_IF_ERROR(insert.Run());
//   return txn.Commit();  // without it, ~Transaction rolls back
//
// Every failure is an absl::Status whose code follows SQLite's result code
// (see StatusFromSqlite) and whose message carries SQLite's own message and
// the SQL that failed, so a log line alone says what went wrong and where.
//
// Threading: a Database and its Statements may be used by one thread at a
// time (connections are opened in SQLite's multi-thread mode: no per-call
// mutex). Different Databases on the same file may be used concurrently;
// SQLite's file locks (and WAL) arbitrate between them.
#ifndef UNDERSTUDY_STORE_SQLITE_H_
#define UNDERSTUDY_STORE_SQLITE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

struct sqlite3;
struct sqlite3_stmt;

namespace understudy {
namespace store {
namespace sql {

// Maps a SQLite result code (primary or extended) to an absl::Status with
// `message`. OK for SQLITE_OK, SQLITE_ROW and SQLITE_DONE. The mapping, per
// absl's guidance on choosing codes:
//   BUSY, LOCKED, CANTOPEN, IOERR, PROTOCOL   -> UNAVAILABLE (retry later)
//   CONSTRAINT_UNIQUE, CONSTRAINT_PRIMARYKEY  -> ALREADY_EXISTS
//   other CONSTRAINT, READONLY                -> FAILED_PRECONDITION
//   NOTADB                                    -> INVALID_ARGUMENT
//   TOOBIG, RANGE, MISMATCH                   -> INVALID_ARGUMENT
//   CORRUPT                                   -> DATA_LOSS
//   FULL, NOMEM                               -> RESOURCE_EXHAUSTED
//   PERM, AUTH                                -> PERMISSION_DENIED
//   INTERRUPT                                 -> CANCELLED
//   ABORT, SCHEMA                             -> ABORTED
//   ERROR, MISUSE, anything else              -> INTERNAL (a bug in our SQL)
absl::Status StatusFromSqlite(int code, absl::string_view message);

// How a connection is opened and configured. Each field is applied with a
// PRAGMA (or open flag) when the connection opens.
struct DatabaseOptions {
  // Create the file when it does not exist, readable and writable by its
  // owner only (0600: recordings hold prompts, answers and traces; SQLite
  // gives the -wal and -shm files the same mode). When false, a missing file
  // is UNAVAILABLE.
  bool create_if_missing = true;

  // PRAGMA journal_mode=WAL. Readers work on a snapshot and never block the
  // writer, and the writer never blocks readers; a commit appends to the
  // -wal file instead of rewriting pages in place. The mode is persistent
  // in the file, so every connection of the store sees it.
  bool wal = true;

  // PRAGMA synchronous. In WAL mode:
  //   kNormal: COMMIT writes the WAL frames with write(2) but does not fsync
  //     them (fsync happens at checkpoints). A committed transaction survives
  //     the process being killed (kill -9: the data is in the OS page cache),
  //     but the last commits may roll back if the machine loses power.
  //   kFull: COMMIT also fsyncs the WAL. A committed transaction survives
  //     power loss too.
  // The default is kFull: "acknowledged means durable" should not depend on
  // the kind of crash. Its cost is one fsync per commit, which the store's
  // group commit amortizes over every write queued meanwhile.
  enum class Synchronous { kNormal, kFull };
  Synchronous synchronous = Synchronous::kFull;

  // PRAGMA busy_timeout: how long a statement waits for a lock held by
  // another connection (usually another process's writer, or a checkpoint)
  // before failing with UNAVAILABLE. Without it, contention fails at once.
  absl::Duration busy_timeout = absl::Seconds(5);

  // PRAGMA foreign_keys=ON. SQLite enforces REFERENCES clauses (and runs
  // ON DELETE CASCADE) only when this is on, and it is per connection.
  bool foreign_keys = true;

  // PRAGMA query_only=ON: any write through this connection fails
  // (FAILED_PRECONDITION). Set on the store's reader connections so a bug
  // cannot write behind the writer thread's back.
  bool query_only = false;
};

// A prepared statement. Move-only; finalized on destruction. Binding indexes
// are 1-based (as in SQLite); column indexes are 0-based. A Statement must
// not outlive the Database that prepared it.
//
// A statement that has returned a row and was neither stepped to the end nor
// Reset keeps its read transaction open (in WAL mode this pins a snapshot and
// holds back checkpoints): Reset it, or destroy it, when done.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Bind a value to parameter `index` (1-based). Text and blobs are copied
  // (SQLITE_TRANSIENT), so the argument need not outlive the call. Fails with
  // INVALID_ARGUMENT (SQLITE_RANGE) for an index out of range.
  absl::Status BindInt64(int index, int64_t value);
  absl::Status BindDouble(int index, double value);
  absl::Status BindText(int index, absl::string_view value);
  absl::Status BindBlob(int index, absl::string_view value);
  absl::Status BindNull(int index);

  // Runs the statement to its next row. true: a row is available through the
  // Column* accessors; false: the statement is done (Step again restarts it
  // only after Reset). On error the status names the SQL.
  absl::StatusOr<bool> Step();
  // Steps a statement that returns no rows (INSERT, UPDATE, ...) to the end.
  // INTERNAL if it returns a row.
  absl::Status Run();
  // Rewinds the statement and clears its bindings, ready to run again.
  absl::Status Reset();

  // Accessors for the current row; valid only after Step() returned true,
  // with 0 <= column < ColumnCount(). The returned strings are copies.
  int ColumnCount() const;
  bool ColumnIsNull(int column) const;
  int64_t ColumnInt64(int column) const;
  double ColumnDouble(int column) const;
  std::string ColumnText(int column) const;
  std::string ColumnBlob(int column) const;
  // The blob (or a TEXT column's bytes) without a copy; valid until the next
  // Step or Reset, or another Column* call on the same column.
  absl::string_view ColumnBlobView(int column) const;

  // The SQL text this statement was prepared from.
  const std::string& sql() const { return sql_; }

 private:
  friend class Database;
  Statement(sqlite3_stmt* stmt, std::string sql);
  // The status for result `code` of this statement, naming its SQL.
  absl::Status Error(int code) const;

  sqlite3_stmt* stmt_ = nullptr;  // Owned.
  std::string sql_;
};

// One SQLite connection. Not copyable or movable (statements point back at
// it); closed on destruction, which must come after every Statement it
// prepared has been destroyed (cached statements excepted: it owns those).
class Database {
 public:
  // Opens `path` and applies `options`. Fails with UNAVAILABLE when the file
  // cannot be opened (missing directory, no permission to create, missing
  // file with create_if_missing=false), INVALID_ARGUMENT ("file is not a
  // database") when it is not a SQLite file. The pragmas read the file's
  // header, so a non-SQLite file is detected here rather than later.
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& path,
                                                        const DatabaseOptions& options);

  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Runs one or more ';'-separated statements that return no rows of
  // interest (DDL, PRAGMA writes, BEGIN/COMMIT).
  absl::Status Execute(absl::string_view sql);

  // Compiles one statement. INTERNAL (naming the SQL) for a syntax error or
  // an unknown table or column.
  absl::StatusOr<Statement> Prepare(absl::string_view sql);

  // A statement compiled once per connection and reused: reset and with its
  // bindings cleared on every call. The pointer is owned by this Database
  // and stays valid until it is destroyed. Getting the same SQL again resets
  // the statement, so do not interleave two uses of the same SQL.
  absl::StatusOr<Statement*> GetCachedStatement(absl::string_view sql);
  // Resets every cached statement, ending any read transaction a partly
  // stepped one holds.
  void ResetCachedStatements();

  // PRAGMA journal_mode=WAL (DatabaseOptions::wal), for a connection opened
  // without it once the file is known to be the caller's: the mode is
  // written into the file. FAILED_PRECONDITION when SQLite refuses it.
  absl::Status EnableWal();

  // Replaces the whole content of `destination` with this database's, page
  // for page (SQLite's online backup, in one step): a consistent snapshot,
  // even while other connections write this file, which is only read. The
  // destination keeps its own journal mode. `destination` is a different
  // connection, to a different file; neither may be in a transaction.
  // UNAVAILABLE when either file is locked past its busy timeout, or the
  // SQLite status of what else failed.
  absl::Status CopyTo(Database& destination);

  // Rows changed by the most recent INSERT, UPDATE or DELETE.
  int64_t Changes() const;
  int64_t LastInsertRowId() const;
  // True between BEGIN and COMMIT/ROLLBACK.
  bool InTransaction() const;

  const std::string& path() const { return path_; }
  // The raw handle, for what this wrapper does not cover. Owned by this.
  sqlite3* handle() { return db_; }

  // An absl::Status for SQLite result `code` from this connection: SQLite's
  // message for the connection's last error, plus `sql` when not empty.
  absl::Status Error(int code, absl::string_view sql) const;

 private:
  Database(sqlite3* db, std::string path);
  absl::Status Configure(const DatabaseOptions& options);

  sqlite3* db_;  // Owned.
  std::string path_;
  absl::flat_hash_map<std::string, std::unique_ptr<Statement>> cache_;
};

// A scoped transaction that rolls back unless committed.
//
//   sql::Transaction txn(db);
//   US_RETURN_IF_ERROR(txn.Begin());
//   ... writes ...
//   US_RETURN_IF_ERROR(txn.Commit());
//
// Not nestable (SQLite has no nested BEGIN; use Savepoint inside).
class Transaction {
 public:
  enum class Mode {
    // BEGIN: takes locks lazily; a read transaction until the first write.
    kDeferred,
    // BEGIN IMMEDIATE: takes the write lock now, so the transaction cannot
    // fail later with BUSY on its first write (the writer's choice).
    kImmediate,
  };

  // `db` is not owned and must outlive this object.
  explicit Transaction(Database* db);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  // Rolls back if begun and neither committed nor rolled back.
  ~Transaction();

  absl::Status Begin(Mode mode = Mode::kDeferred);
  // Commits. If COMMIT fails (e.g. a deferred constraint, a full disk), the
  // transaction is rolled back and the status is COMMIT's.
  absl::Status Commit();
  absl::Status Rollback();
  bool is_open() const { return open_; }

 private:
  Database* db_;
  bool open_ = false;
};

// A scoped SAVEPOINT: a nestable transaction (inside a Transaction or on its
// own). Rolls back to the savepoint and releases it unless Release()d.
class Savepoint {
 public:
  // `db` is not owned and must outlive this object. `name` must be a plain
  // SQL identifier.
  Savepoint(Database* db, std::string name);
  Savepoint(const Savepoint&) = delete;
  Savepoint& operator=(const Savepoint&) = delete;
  ~Savepoint();

  absl::Status Begin();
  // Keeps the changes made since Begin (they commit with the enclosing
  // transaction, or now if there is none).
  absl::Status Release();
  // Undoes the changes made since Begin and ends the savepoint.
  absl::Status Rollback();
  bool is_open() const { return open_; }

 private:
  Database* db_;
  std::string name_;
  bool open_ = false;
};

}  // namespace sql
}  // namespace store
}  // namespace understudy

#endif  // UNDERSTUDY_STORE_SQLITE_H_
