#include "store/sqlite.h"

#include <fcntl.h>
#include <unistd.h>

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/status_macros.h"

namespace understudy {
namespace store {
namespace sql {
namespace {

absl::StatusCode CodeFor(int code) {
  switch (code) {
    case SQLITE_CONSTRAINT_UNIQUE:
    case SQLITE_CONSTRAINT_PRIMARYKEY:
      return absl::StatusCode::kAlreadyExists;
    default:
      break;
  }
  switch (code & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
      return absl::StatusCode::kOk;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_PROTOCOL:
      return absl::StatusCode::kUnavailable;
    case SQLITE_CONSTRAINT:
    case SQLITE_READONLY:
      return absl::StatusCode::kFailedPrecondition;
    case SQLITE_NOTADB:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
    case SQLITE_MISMATCH:
      return absl::StatusCode::kInvalidArgument;
    case SQLITE_CORRUPT:
      return absl::StatusCode::kDataLoss;
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return absl::StatusCode::kResourceExhausted;
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::StatusCode::kPermissionDenied;
    case SQLITE_INTERRUPT:
      return absl::StatusCode::kCancelled;
    case SQLITE_ABORT:
    case SQLITE_SCHEMA:
      return absl::StatusCode::kAborted;
    default:
      return absl::StatusCode::kInternal;
  }
}

// "<message> (sqlite error N) in SQL: <sql>", SQL shortened so that a huge
// generated statement does not flood a log line.
std::string Describe(int code, absl::string_view message, absl::string_view sql) {
  std::string out = absl::StrCat(message, " (sqlite error ", code, ")");
  if (!sql.empty()) {
    constexpr size_t kMaxSql = 500;
    absl::StrAppend(&out, " in SQL: ", sql.substr(0, kMaxSql), sql.size() > kMaxSql ? "..." : "");
  }
  return out;
}

}  // namespace

absl::Status StatusFromSqlite(int code, absl::string_view message) {
  absl::StatusCode status_code = CodeFor(code);
  if (status_code == absl::StatusCode::kOk) return absl::OkStatus();
  return absl::Status(status_code, message);
}

// --- Statement ---------------------------------------------------------------

Statement::Statement(sqlite3_stmt* stmt, std::string sql) : stmt_(stmt), sql_(std::move(sql)) {}

Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)), sql_(std::move(other.sql_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    sql_ = std::move(other.sql_);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

absl::Status Statement::Error(int code) const {
  const char* message =
      stmt_ != nullptr ? sqlite3_errmsg(sqlite3_db_handle(stmt_)) : "statement is not prepared";
  return StatusFromSqlite(code, Describe(code, message, sql_));
}

absl::Status Statement::BindInt64(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  return rc == SQLITE_OK ? absl::OkStatus() : Error(rc);
}

absl::Status Statement::BindDouble(int index, double value) {
  int rc = sqlite3_bind_double(stmt_, index, value);
  return rc == SQLITE_OK ? absl::OkStatus() : Error(rc);
}

absl::Status Statement::BindText(int index, absl::string_view value) {
  // A non-null pointer even for an empty value: a null one would bind NULL.
  int rc = sqlite3_bind_text64(stmt_, index, value.empty() ? "" : value.data(), value.size(),
                               SQLITE_TRANSIENT, SQLITE_UTF8);
  return rc == SQLITE_OK ? absl::OkStatus() : Error(rc);
}

absl::Status Statement::BindBlob(int index, absl::string_view value) {
  int rc = sqlite3_bind_blob64(stmt_, index, value.empty() ? "" : value.data(), value.size(),
                               SQLITE_TRANSIENT);
  return rc == SQLITE_OK ? absl::OkStatus() : Error(rc);
}

absl::Status Statement::BindNull(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  return rc == SQLITE_OK ? absl::OkStatus() : Error(rc);
}

absl::StatusOr<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return Error(rc);
}

absl::Status Statement::Run() {
  US_ASSIGN_OR_RETURN(bool row, Step());
  if (row) {
    sqlite3_reset(stmt_);
    return absl::InternalError(
        absl::StrCat("statement returned a row where none was expected: ", sql_));
  }
  return absl::OkStatus();
}

absl::Status Statement::Reset() {
  // sqlite3_reset repeats the error of the last step, which the caller has
  // already seen; the statement is reset either way.
  sqlite3_reset(stmt_);
  int rc = sqlite3_clear_bindings(stmt_);
  return rc == SQLITE_OK ? absl::OkStatus() : Error(rc);
}

int Statement::ColumnCount() const { return sqlite3_column_count(stmt_); }

bool Statement::ColumnIsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::ColumnInt64(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::ColumnDouble(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return std::string();
  int size = sqlite3_column_bytes(stmt_, column);
  return std::string(reinterpret_cast<const char*>(text), size);
}

std::string Statement::ColumnBlob(int column) const { return std::string(ColumnBlobView(column)); }

absl::string_view Statement::ColumnBlobView(int column) const {
  // sqlite3_column_blob first, then _bytes: the documented safe order.
  const void* blob = sqlite3_column_blob(stmt_, column);
  if (blob == nullptr) return absl::string_view();
  int size = sqlite3_column_bytes(stmt_, column);
  return absl::string_view(static_cast<const char*>(blob), size);
}

// --- Database ----------------------------------------------------------------

Database::Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

Database::~Database() {
  cache_.clear();  // Finalize cached statements before closing.
  // close_v2 rather than close: should a Statement outlive us (a bug), the
  // connection becomes a zombie instead of leaking or crashing.
  sqlite3_close_v2(db_);
}

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path,
                                                         const DatabaseOptions& options) {
  if (sqlite3_threadsafe() == 0) {
    return absl::FailedPreconditionError("the SQLite library was built without thread support");
  }
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  if (options.create_if_missing) {
    flags |= SQLITE_OPEN_CREATE;
    // SQLite would create it 0644 (the umask permitting); created first here
    // with 0600 instead. O_EXCL: an existing file keeps its mode. Names
    // SQLite gives a meaning of its own (":memory:", "" for a temporary
    // database) are not files to create.
    if (!path.empty() && path != ":memory:") {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd >= 0) ::close(fd);
    }
  }
  sqlite3* handle = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &handle, flags, nullptr);
  // sqlite3_open_v2 returns a handle even on failure (for its message),
  // which must be closed either way: let the Database own it now.
  std::unique_ptr<Database> db(new Database(handle, path));
  if (handle == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot open database \"", path, "\": out of memory"));
  }
  if (rc != SQLITE_OK) {
    absl::Status status = StatusFromSqlite(rc, "");
    return absl::Status(status.code(), absl::StrCat("cannot open database \"", path,
                                                    "\": ", sqlite3_errmsg(handle)));
  }
  sqlite3_extended_result_codes(handle, 1);
  absl::Status configured = db->Configure(options);
  if (!configured.ok()) {
    return absl::Status(configured.code(),
                        absl::StrCat("database \"", path, "\": ", configured.message()));
  }
  return db;
}

absl::Status Database::Configure(const DatabaseOptions& options) {
  int64_t timeout_ms = absl::ToInt64Milliseconds(options.busy_timeout);
  if (timeout_ms < 0) timeout_ms = 0;
  if (timeout_ms > INT32_MAX) timeout_ms = INT32_MAX;
  int rc = sqlite3_busy_timeout(db_, static_cast<int>(timeout_ms));
  if (rc != SQLITE_OK) return Error(rc, "sqlite3_busy_timeout");

  // Read the header now, so that a file that is not a database is reported
  // by Open (INVALID_ARGUMENT, "file is not a database"), not by some later
  // query.
  {
    US_ASSIGN_OR_RETURN(Statement probe, Prepare("SELECT count(*) FROM sqlite_master"));
    US_RETURN_IF_ERROR(probe.Step().status());
  }
  if (options.wal) US_RETURN_IF_ERROR(EnableWal());
  US_RETURN_IF_ERROR(Execute(options.synchronous == DatabaseOptions::Synchronous::kFull
                                 ? "PRAGMA synchronous=FULL"
                                 : "PRAGMA synchronous=NORMAL"));
  US_RETURN_IF_ERROR(
      Execute(options.foreign_keys ? "PRAGMA foreign_keys=ON" : "PRAGMA foreign_keys=OFF"));
  if (options.query_only) US_RETURN_IF_ERROR(Execute("PRAGMA query_only=ON"));
  return absl::OkStatus();
}

absl::Status Database::EnableWal() {
  US_ASSIGN_OR_RETURN(Statement wal, Prepare("PRAGMA journal_mode=WAL"));
  US_ASSIGN_OR_RETURN(bool row, wal.Step());
  std::string mode = row ? absl::AsciiStrToLower(wal.ColumnText(0)) : "";
  if (mode != "wal") {
    return absl::FailedPreconditionError(absl::StrCat("cannot use WAL journal mode (got \"", mode,
                                                      "\"); the store needs a real file"));
  }
  return absl::OkStatus();
}

absl::Status Database::CopyTo(Database& destination) {
  sqlite3_backup* backup = sqlite3_backup_init(destination.db_, "main", db_, "main");
  // On failure the error is the destination connection's.
  if (backup == nullptr) {
    return destination.Error(sqlite3_errcode(destination.db_), "backup to " + destination.path_);
  }
  // Every page in one step: one read transaction on this file, so the copy
  // is one snapshot (a source written meanwhile would restart a stepwise
  // copy). A lock held elsewhere is waited for as busy_timeout says.
  int rc = sqlite3_backup_step(backup, -1);
  const int finished = sqlite3_backup_finish(backup);
  if (rc == SQLITE_DONE) rc = finished;
  if (rc == SQLITE_OK || rc == SQLITE_DONE) return absl::OkStatus();
  return StatusFromSqlite(rc, absl::StrCat("cannot copy database \"", path_, "\" to \"",
                                           destination.path_, "\": ", sqlite3_errstr(rc)));
}

absl::Status Database::Error(int code, absl::string_view sql) const {
  return StatusFromSqlite(code, Describe(code, sqlite3_errmsg(db_), sql));
}

absl::Status Database::Execute(absl::string_view sql) {
  // sqlite3_exec needs a NUL-terminated string.
  std::string text(sql);
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? absl::OkStatus() : Error(rc, sql);
}

absl::StatusOr<Statement> Database::Prepare(absl::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, &tail);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return Error(rc, sql);
  }
  Statement statement(stmt, std::string(sql));
  if (stmt == nullptr) {
    return absl::InternalError(absl::StrCat("no SQL statement in: \"", sql, "\""));
  }
  if (tail != nullptr &&
      !absl::StripAsciiWhitespace(absl::string_view(tail, sql.data() + sql.size() - tail))
           .empty()) {
    return absl::InternalError(
        absl::StrCat("Prepare takes one statement; trailing text in SQL: ", sql));
  }
  return statement;
}

absl::StatusOr<Statement*> Database::GetCachedStatement(absl::string_view sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) {
    US_RETURN_IF_ERROR(it->second->Reset());
    return it->second.get();
  }
  US_ASSIGN_OR_RETURN(Statement statement, Prepare(sql));
  auto owned = std::make_unique<Statement>(std::move(statement));
  Statement* raw = owned.get();
  cache_.emplace(std::string(sql), std::move(owned));
  return raw;
}

void Database::ResetCachedStatements() {
  for (auto& [sql, statement] : cache_) sqlite3_reset(statement->stmt_);
}

int64_t Database::Changes() const { return sqlite3_changes64(db_); }

int64_t Database::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }

bool Database::InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }

// --- Transaction -------------------------------------------------------------

Transaction::Transaction(Database* db) : db_(db) {}

Transaction::~Transaction() {
  if (open_) Rollback().IgnoreError();
}

absl::Status Transaction::Begin(Mode mode) {
  if (open_) return absl::FailedPreconditionError("transaction already begun");
  US_RETURN_IF_ERROR(db_->Execute(mode == Mode::kImmediate ? "BEGIN IMMEDIATE" : "BEGIN"));
  open_ = true;
  return absl::OkStatus();
}

absl::Status Transaction::Commit() {
  if (!open_) return absl::FailedPreconditionError("no transaction to commit");
  open_ = false;
  absl::Status status = db_->Execute("COMMIT");
  // A failed COMMIT (deferred foreign key, SQLITE_FULL, ...) may leave the
  // transaction open: end it so the connection is usable again.
  if (!status.ok() && db_->InTransaction()) db_->Execute("ROLLBACK").IgnoreError();
  return status;
}

absl::Status Transaction::Rollback() {
  if (!open_) return absl::FailedPreconditionError("no transaction to roll back");
  open_ = false;
  // SQLite may already have rolled back on its own (after SQLITE_FULL, IOERR,
  // ...); then there is nothing left to do.
  if (!db_->InTransaction()) return absl::OkStatus();
  return db_->Execute("ROLLBACK");
}

// --- Savepoint ---------------------------------------------------------------

Savepoint::Savepoint(Database* db, std::string name) : db_(db), name_(std::move(name)) {}

Savepoint::~Savepoint() {
  if (open_) Rollback().IgnoreError();
}

absl::Status Savepoint::Begin() {
  if (open_) return absl::FailedPreconditionError("savepoint already begun");
  US_RETURN_IF_ERROR(db_->Execute(absl::StrCat("SAVEPOINT ", name_)));
  open_ = true;
  return absl::OkStatus();
}

absl::Status Savepoint::Release() {
  if (!open_) return absl::FailedPreconditionError("no savepoint to release");
  open_ = false;
  return db_->Execute(absl::StrCat("RELEASE ", name_));
}

absl::Status Savepoint::Rollback() {
  if (!open_) return absl::FailedPreconditionError("no savepoint to roll back");
  open_ = false;
  // If SQLite rolled back the whole transaction on its own, the savepoint is
  // gone with it.
  if (!db_->InTransaction()) return absl::OkStatus();
  return db_->Execute(absl::StrCat("ROLLBACK TO ", name_, "; RELEASE ", name_));
}

}  // namespace sql
}  // namespace store
}  // namespace understudy
