// Runs: their records and summaries, listing and deleting them (with their
// trace events), and giving freed pages back to the filesystem.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "store/proto_utf8.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store/store_internal.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {

using internal::ReaderPool;

// --- Runs --------------------------------------------------------------------

absl::Status Store::SaveRun(const v1::Run& run) {
  if (run.id().empty()) return absl::InvalidArgumentError("run.id is empty");
  std::string body = run.SerializeAsString();
  return impl_->writer().RunAndWait([&](sql::Database& db) -> absl::Status {
    US_ASSIGN_OR_RETURN(
        sql::Statement * s,
        db.GetCachedStatement("INSERT INTO runs (id, body) VALUES (?1, ?2) "
                              "ON CONFLICT (id) DO UPDATE SET body = excluded.body"));
    US_RETURN_IF_ERROR(s->BindText(1, run.id()));
    US_RETURN_IF_ERROR(s->BindBlob(2, body));
    return s->Run();
  });
}

absl::StatusOr<v1::Run> Store::GetRun(absl::string_view id) {
  ReaderPool::Lease lease = impl_->readers().Acquire();
  sql::Database& db = lease.db();
  US_ASSIGN_OR_RETURN(sql::Statement * s,
                      db.GetCachedStatement("SELECT body FROM runs WHERE id = ?1"));
  US_RETURN_IF_ERROR(s->BindText(1, id));
  US_ASSIGN_OR_RETURN(bool found, s->Step());
  if (!found) return absl::NotFoundError(absl::StrCat("run \"", id, "\" not found"));
  v1::Run run;
  absl::string_view body = s->ColumnBlobView(0);
  if (!ParseStored(body, &run).ok()) {
    return absl::DataLossError(absl::StrCat("run \"", id, "\": stored record does not parse"));
  }
  US_RETURN_IF_ERROR(s->Reset());
  return run;
}

absl::StatusOr<std::vector<v1::Run>> Store::ListRuns() {
  ReaderPool::Lease lease = impl_->readers().Acquire();
  sql::Database& db = lease.db();
  US_ASSIGN_OR_RETURN(sql::Statement * s, db.GetCachedStatement("SELECT id, body FROM runs"));
  std::vector<v1::Run> runs;
  while (true) {
    US_ASSIGN_OR_RETURN(bool row, s->Step());
    if (!row) break;
    v1::Run& run = runs.emplace_back();
    absl::string_view body = s->ColumnBlobView(1);
    if (!ParseStored(body, &run).ok()) {
      const std::string id(s->ColumnBlobView(0));
      US_RETURN_IF_ERROR(s->Reset());
      return absl::DataLossError(absl::StrCat("run \"", id, "\": stored record does not parse"));
    }
  }
  US_RETURN_IF_ERROR(s->Reset());
  std::sort(runs.begin(), runs.end(), [](const v1::Run& a, const v1::Run& b) {
    if (a.started_at_micros() != b.started_at_micros()) {
      return a.started_at_micros() < b.started_at_micros();
    }
    return a.id() < b.id();
  });
  return runs;
}

absl::StatusOr<std::vector<v1::Run>> Store::ListRunsOfSession(absl::string_view name,
                                                             int64_t version) {
  US_ASSIGN_OR_RETURN(std::vector<v1::Run> all, ListRuns());
  std::vector<v1::Run> runs;
  for (v1::Run& run : all) {
    if (run.session() != name || (version != 0 && run.session_version() != version)) continue;
    runs.push_back(std::move(run));
  }
  return runs;
}

absl::StatusOr<int64_t> Store::CountEvents(absl::string_view id) {
  ReaderPool::Lease lease = impl_->readers().Acquire();
  return impl_->trace().Count(lease.db(), id);
}

absl::StatusOr<int64_t> Store::DeleteRuns(const std::vector<std::string>& ids) {
  // Events still queued for these runs go in first, so that none outlives
  // its run.
  impl_->EnqueueEventDrain();
  US_RETURN_IF_ERROR(impl_->writer().Flush());
  int64_t deleted = 0;
  US_RETURN_IF_ERROR(impl_->writer().RunAndWait([&](sql::Database& db) -> absl::Status {
    US_ASSIGN_OR_RETURN(sql::Statement * runs,
                        db.GetCachedStatement("DELETE FROM runs WHERE id = ?1"));
    for (const std::string& id : ids) {
      US_RETURN_IF_ERROR(impl_->trace().DeleteRun(db, id).status());
      US_RETURN_IF_ERROR(runs->Reset());
      US_RETURN_IF_ERROR(runs->BindText(1, id));
      US_RETURN_IF_ERROR(runs->Run());
      deleted += db.Changes();
    }
    return absl::OkStatus();
  }));
  return deleted;
}

namespace {

absl::StatusOr<int64_t> PragmaInt(sql::Database& db, const char* pragma) {
  US_ASSIGN_OR_RETURN(sql::Statement s, db.Prepare(pragma));
  US_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return absl::InternalError(absl::StrCat(pragma, " returned no row"));
  return s.ColumnInt64(0);
}

}  // namespace

absl::StatusOr<int64_t> Store::ReclaimSpace(int64_t max_pages, bool full) {
  int64_t before = 0;
  int64_t after = 0;
  if (full) {
    // VACUUM runs outside any transaction, so not on the writer: on a
    // connection of its own, waiting for the writer's lock (busy_timeout).
    sql::DatabaseOptions options;
    options.create_if_missing = false;
    options.busy_timeout = absl::Minutes(10);
    US_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> db,
                        sql::Database::Open(impl_->path(), options));
    US_ASSIGN_OR_RETURN(const int64_t pages, PragmaInt(*db, "PRAGMA page_count"));
    US_ASSIGN_OR_RETURN(const int64_t page_size, PragmaInt(*db, "PRAGMA page_size"));
    before = pages * page_size;
    US_RETURN_IF_ERROR(db->Execute("PRAGMA auto_vacuum=INCREMENTAL"));
    US_RETURN_IF_ERROR(db->Execute("VACUUM"));
    US_ASSIGN_OR_RETURN(const int64_t pages_after, PragmaInt(*db, "PRAGMA page_count"));
    after = pages_after * page_size;
    return before - after;
  }
  US_RETURN_IF_ERROR(impl_->writer().RunAndWait([&](sql::Database& db) -> absl::Status {
    US_ASSIGN_OR_RETURN(const int64_t page_size, PragmaInt(db, "PRAGMA page_size"));
    US_ASSIGN_OR_RETURN(const int64_t pages, PragmaInt(db, "PRAGMA page_count"));
    before = pages * page_size;
    // incremental_vacuum returns no rows; it does its work as it is stepped.
    US_RETURN_IF_ERROR(db.Execute(max_pages > 0
                                      ? absl::StrCat("PRAGMA incremental_vacuum(", max_pages, ")")
                                      : std::string("PRAGMA incremental_vacuum")));
    US_ASSIGN_OR_RETURN(const int64_t pages_after, PragmaInt(db, "PRAGMA page_count"));
    after = pages_after * page_size;
    return absl::OkStatus();
  }));
  return before - after;
}

absl::Status Store::SaveRunSummary(const v1::RunSummary& summary) {
  if (summary.run().id().empty()) {
    return absl::InvalidArgumentError("summary.run.id is empty");
  }
  std::string body = summary.run().SerializeAsString();
  std::string summary_body = summary.SerializeAsString();
  return impl_->writer().RunAndWait([&](sql::Database& db) -> absl::Status {
    US_ASSIGN_OR_RETURN(
        sql::Statement * s,
        db.GetCachedStatement("INSERT INTO runs (id, body, summary) VALUES (?1, ?2, ?3) "
                              "ON CONFLICT (id) DO UPDATE SET body = excluded.body, "
                              "summary = excluded.summary"));
    US_RETURN_IF_ERROR(s->BindText(1, summary.run().id()));
    US_RETURN_IF_ERROR(s->BindBlob(2, body));
    US_RETURN_IF_ERROR(s->BindBlob(3, summary_body));
    return s->Run();
  });
}

absl::StatusOr<v1::RunSummary> Store::GetRunSummary(absl::string_view id) {
  ReaderPool::Lease lease = impl_->readers().Acquire();
  sql::Database& db = lease.db();
  US_ASSIGN_OR_RETURN(sql::Statement * s,
                      db.GetCachedStatement("SELECT summary FROM runs WHERE id = ?1"));
  US_RETURN_IF_ERROR(s->BindText(1, id));
  US_ASSIGN_OR_RETURN(bool found, s->Step());
  if (!found) return absl::NotFoundError(absl::StrCat("run \"", id, "\" not found"));
  if (s->ColumnIsNull(0)) {
    return absl::NotFoundError(absl::StrCat("run \"", id, "\" has not ended"));
  }
  v1::RunSummary summary;
  absl::string_view body = s->ColumnBlobView(0);
  if (!ParseStored(body, &summary).ok()) {
    return absl::DataLossError(absl::StrCat("run \"", id, "\": stored summary does not parse"));
  }
  US_RETURN_IF_ERROR(s->Reset());
  return summary;
}

}  // namespace store
}  // namespace understudy
