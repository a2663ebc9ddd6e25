// Opening the store: argument checks, the snapshot copy
// (StoreOptions::snapshot_of), the writer connection with its migrations,
// the reader connections, and Store's lifetime.
#include "store/store.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "store/schema.h"
#include "store/sqlite.h"
#include "store/store_internal.h"

namespace understudy {
namespace store {

// --- Store -------------------------------------------------------------------

namespace {

// Whether `a` and `b` name the same existing file (links and relative paths
// included).
bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// StoreOptions::snapshot_of: `to` becomes a copy of the store at `from`.
absl::Status CopySnapshot(const std::string& from, const std::string& to,
                          absl::Duration busy_timeout) {
  if (SameFile(from, to)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the store's file \"", to, "\" is the database it is a snapshot of; give another file"));
  }
  struct stat st;
  if (::stat(from.c_str(), &st) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot open database \"", from, "\": ", std::strerror(errno)));
  }
  sql::DatabaseOptions source_options;
  source_options.create_if_missing = false;
  source_options.wal = false;  // the file keeps its journal mode
  source_options.query_only = true;
  source_options.busy_timeout = busy_timeout;
  // Opened read-write all the same (query_only forbids writes): a read-only
  // connection to a WAL file leaves its -wal and -shm files behind, the last
  // read-write one to close removes them.
  US_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> source,
                      sql::Database::Open(from, source_options));
  absl::Status ours = CheckOwnership(*source);
  if (!ours.ok()) return absl::Status(ours.code(), absl::StrCat(from, ": ", ours.message()));

  sql::DatabaseOptions copy_options;
  copy_options.wal = false;
  copy_options.busy_timeout = busy_timeout;
  US_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> copy, sql::Database::Open(to, copy_options));
  // Never overwrite a file that is not a store: a mistyped path must not
  // destroy someone's data.
  ours = CheckOwnership(*copy);
  if (!ours.ok()) {
    return absl::Status(ours.code(),
                        absl::StrCat(to, ": ", ours.message(), "; it is not replaced"));
  }
  return source->CopyTo(*copy);
}

}  // namespace

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Store::~Store() = default;

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const StoreOptions& options) {
  if (options.path.empty() || options.path == ":memory:") {
    return absl::InvalidArgumentError(
        "the store needs a file path (readers open their own connections)");
  }
  if (options.reader_connections < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("reader_connections is ", options.reader_connections, ", must be at least 1"));
  }
  if (options.clock == nullptr) return absl::InvalidArgumentError("clock is null");
  if (!options.snapshot_of.empty()) {
    US_RETURN_IF_ERROR(CopySnapshot(options.snapshot_of, options.path, options.busy_timeout));
  }

  sql::DatabaseOptions writer_options;
  writer_options.busy_timeout = options.busy_timeout;
  writer_options.create_if_missing = options.create_if_missing;
  // WAL is written into the file: only once the file is known to be ours.
  writer_options.wal = false;
  US_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> writer_db,
                      sql::Database::Open(options.path, writer_options));
  US_RETURN_IF_ERROR(CheckOwnership(*writer_db));
  US_ASSIGN_OR_RETURN(const int64_t schema_version, SchemaVersion(*writer_db));
  if (schema_version == 0) {
    // A new file: freed pages can go back to the filesystem
    // (Store::ReclaimSpace). Only possible before the first table.
    US_RETURN_IF_ERROR(writer_db->Execute("PRAGMA auto_vacuum=INCREMENTAL"));
  }
  absl::Status wal = writer_db->EnableWal();
  if (!wal.ok()) {
    return absl::Status(wal.code(), absl::StrCat("database \"", options.path, "\": ", wal.message()));
  }
  US_RETURN_IF_ERROR(Migrate(*writer_db));

  sql::DatabaseOptions reader_options;
  reader_options.create_if_missing = false;
  reader_options.busy_timeout = options.busy_timeout;
  reader_options.query_only = true;
  std::vector<std::unique_ptr<sql::Database>> readers;
  for (int i = 0; i < options.reader_connections; ++i) {
    US_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> reader,
                        sql::Database::Open(options.path, reader_options));
    readers.push_back(std::move(reader));
  }
  return std::unique_ptr<Store>(
      new Store(std::make_unique<Impl>(options, std::move(readers), std::move(writer_db))));
}

}  // namespace store
}  // namespace understudy
