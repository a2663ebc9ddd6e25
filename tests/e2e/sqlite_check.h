// Reads a database file directly with the SQLite C API, as an outside
// auditor would, without understudy's store code.
#ifndef UNDERSTUDY_TESTS_E2E_SQLITE_CHECK_H_
#define UNDERSTUDY_TESTS_E2E_SQLITE_CHECK_H_

#include <sqlite3.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace understudy {
namespace e2e {

// The result of `PRAGMA integrity_check` on `path` ("ok" when intact),
// every row joined by newlines. Opens read-write so that a WAL left by a
// killed process is recovered as any later opener would. UNAVAILABLE when
// the file cannot be opened or queried.
inline absl::StatusOr<std::string> IntegrityCheck(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  if (rc != SQLITE_OK) {
    std::string why = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::UnavailableError(absl::StrCat("open ", path, ": ", why));
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* stmt = nullptr;
  rc = sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr);
  std::string result;
  while (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    if (!result.empty()) result += "\n";
    result += reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    rc = SQLITE_OK;
  }
  std::string error = rc == SQLITE_DONE ? "" : sqlite3_errmsg(db);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  if (!error.empty()) return absl::UnavailableError(absl::StrCat("integrity_check: ", error));
  return result;
}

}  // namespace e2e
}  // namespace understudy

#endif  // UNDERSTUDY_TESTS_E2E_SQLITE_CHECK_H_
