// Sessions and their exchanges: name rules, the queries readers and the
// writer share, and Store's session methods (get, list, load, create, open
// for append, append, close, delete, export, import).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "store/proto_utf8.h"
#include "store/session_file.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store/store_internal.h"
#include "store/writer.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {

using internal::ReaderPool;

namespace {

constexpr size_t kMaxNameBytes = 256;

// --- Names -----------------------------------------------------------------

// Decodes the UTF-8 code point at `s[*i]`, advancing *i; -1 if malformed
// (truncated, overlong, surrogate, or beyond U+10FFFF).
int32_t DecodeUtf8(absl::string_view s, size_t* i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b0 = byte(*i);
  if (b0 < 0x80) {
    ++*i;
    return b0;
  }
  int len;
  int32_t cp;
  int32_t min;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return -1;
  }
  if (*i + len > s.size()) return -1;
  for (int k = 1; k < len; ++k) {
    unsigned char b = byte(*i + k);
    if ((b & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  *i += len;
  return cp;
}

// The rules of store.h: not empty, at most 256 bytes, valid UTF-8 (a proto
// string must be), no control characters (C0, DEL, C1) and no '@' (it
// separates name and version in "name@N").
absl::Status ValidateSessionName(absl::string_view name) {
  auto invalid = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("invalid session name \"",
                                                   absl::CHexEscape(name.substr(0, 64)),
                                                   name.size() > 64 ? "..." : "", "\": ", why));
  };
  if (name.empty()) return absl::InvalidArgumentError("invalid session name: empty");
  if (name.size() > kMaxNameBytes) {
    return invalid(absl::StrCat("longer than ", kMaxNameBytes, " bytes"));
  }
  for (size_t i = 0; i < name.size();) {
    int32_t cp = DecodeUtf8(name, &i);
    if (cp < 0) return invalid("not valid UTF-8");
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
      return invalid("contains a control character");
    }
    if (cp == '@') return invalid("contains '@' (it separates name and version)");
  }
  return absl::OkStatus();
}

std::string SessionLabel(absl::string_view name, int64_t version) {
  if (version == 0) return absl::StrCat("\"", name, "\"");
  return absl::StrCat("\"", name, "@", version, "\"");
}

// --- Queries shared by readers and the writer ----------------------------------

struct SessionRow {
  int64_t id = 0;
  v1::Session session;
};

constexpr char kSessionColumns[] = "id, name, version, state, created_at_micros, exchange_count";

SessionRow ReadSessionRow(const sql::Statement& s) {
  SessionRow row;
  row.id = s.ColumnInt64(0);
  row.session.set_name(s.ColumnText(1));
  row.session.set_version(s.ColumnInt64(2));
  int state = static_cast<int>(s.ColumnInt64(3));
  row.session.set_state(v1::SessionState_IsValid(state) ? static_cast<v1::SessionState>(state)
                                                        : v1::SESSION_STATE_UNSPECIFIED);
  row.session.set_created_at_micros(s.ColumnInt64(4));
  row.session.set_exchange_count(s.ColumnInt64(5));
  return row;
}

// The row of `name` version `version` (0: the latest). NOT_FOUND naming it.
absl::StatusOr<SessionRow> FindSession(sql::Database& db, absl::string_view name, int64_t version) {
  if (version < 0) {
    return absl::InvalidArgumentError(absl::StrCat("session version ", version, " is negative"));
  }
  sql::Statement* s;
  if (version == 0) {
    US_ASSIGN_OR_RETURN(s, db.GetCachedStatement(absl::StrCat("SELECT ", kSessionColumns,
                                                              " FROM sessions WHERE name = ?1 "
                                                              "ORDER BY version DESC LIMIT 1")));
  } else {
    US_ASSIGN_OR_RETURN(
        s, db.GetCachedStatement(absl::StrCat("SELECT ", kSessionColumns,
                                              " FROM sessions WHERE name = ?1 AND version = ?2")));
    US_RETURN_IF_ERROR(s->BindInt64(2, version));
  }
  US_RETURN_IF_ERROR(s->BindText(1, name));
  US_ASSIGN_OR_RETURN(bool found, s->Step());
  if (!found) {
    return absl::NotFoundError(absl::StrCat("session ", SessionLabel(name, version), " not found"));
  }
  SessionRow row = ReadSessionRow(*s);
  US_RETURN_IF_ERROR(s->Reset());
  return row;
}

// Fills session.agents: distinct non-empty agents by first seq. Answered
// from the (session_id, agent, seq) index without touching exchange bodies.
absl::Status FillAgents(sql::Database& db, int64_t session_id, v1::Session* session) {
  US_ASSIGN_OR_RETURN(sql::Statement * s,
                      db.GetCachedStatement("SELECT agent FROM exchanges WHERE session_id = ?1 AND "
                                            "agent != '' GROUP BY agent ORDER BY MIN(seq)"));
  US_RETURN_IF_ERROR(s->BindInt64(1, session_id));
  session->clear_agents();
  for (;;) {
    US_ASSIGN_OR_RETURN(bool row, s->Step());
    if (!row) break;
    session->add_agents(s->ColumnText(0));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> LatestVersion(sql::Database& db, absl::string_view name) {
  US_ASSIGN_OR_RETURN(
      sql::Statement * s,
      db.GetCachedStatement("SELECT COALESCE(MAX(version), 0) FROM sessions WHERE name = ?1"));
  US_RETURN_IF_ERROR(s->BindText(1, name));
  US_ASSIGN_OR_RETURN(bool row, s->Step());
  int64_t latest = row ? s->ColumnInt64(0) : 0;
  US_RETURN_IF_ERROR(s->Reset());
  return latest;
}

// Inserts a new version of `name` after the latest one; returns its row.
absl::StatusOr<SessionRow> InsertSessionVersion(sql::Database& db, absl::string_view name,
                                                v1::SessionState state, int64_t created_at_micros,
                                                int64_t exchange_count) {
  US_ASSIGN_OR_RETURN(int64_t latest, LatestVersion(db, name));
  US_ASSIGN_OR_RETURN(
      sql::Statement * s,
      db.GetCachedStatement("INSERT INTO sessions (name, version, state, created_at_micros, "
                            "exchange_count) VALUES (?1, ?2, ?3, ?4, ?5)"));
  US_RETURN_IF_ERROR(s->BindText(1, name));
  US_RETURN_IF_ERROR(s->BindInt64(2, latest + 1));
  US_RETURN_IF_ERROR(s->BindInt64(3, state));
  US_RETURN_IF_ERROR(s->BindInt64(4, created_at_micros));
  US_RETURN_IF_ERROR(s->BindInt64(5, exchange_count));
  US_RETURN_IF_ERROR(s->Run());
  SessionRow row;
  row.id = db.LastInsertRowId();
  row.session.set_name(std::string(name));
  row.session.set_version(latest + 1);
  row.session.set_state(state);
  row.session.set_created_at_micros(created_at_micros);
  row.session.set_exchange_count(exchange_count);
  return row;
}

absl::Status InsertExchange(sql::Database& db, int64_t session_id, const v1::Exchange& exchange) {
  US_ASSIGN_OR_RETURN(sql::Statement * s,
                      db.GetCachedStatement("INSERT INTO exchanges (session_id, seq, agent, body) "
                                            "VALUES (?1, ?2, ?3, ?4)"));
  US_RETURN_IF_ERROR(s->BindInt64(1, session_id));
  US_RETURN_IF_ERROR(s->BindInt64(2, exchange.seq()));
  US_RETURN_IF_ERROR(s->BindText(3, exchange.agent()));
  US_RETURN_IF_ERROR(s->BindBlob(4, exchange.SerializeAsString()));
  return s->Run();
}

// Appends `exchanges` to the OPEN version `row` after its last seq; fills
// *result.
absl::Status AppendRows(sql::Database& db, const SessionRow& row,
                        std::vector<v1::Exchange>& exchanges, AppendResult* result) {
  result->version = row.session.version();
  if (exchanges.empty()) return absl::OkStatus();  // first_seq = last_seq = 0.
  const int64_t count = row.session.exchange_count();
  for (size_t i = 0; i < exchanges.size(); ++i) {
    exchanges[i].set_seq(count + static_cast<int64_t>(i) + 1);
    US_RETURN_IF_ERROR(InsertExchange(db, row.id, exchanges[i]));
  }
  const int64_t last = count + static_cast<int64_t>(exchanges.size());
  US_ASSIGN_OR_RETURN(
      sql::Statement * s,
      db.GetCachedStatement("UPDATE sessions SET exchange_count = ?1 WHERE id = ?2"));
  US_RETURN_IF_ERROR(s->BindInt64(1, last));
  US_RETURN_IF_ERROR(s->BindInt64(2, row.id));
  US_RETURN_IF_ERROR(s->Run());
  result->first_seq = count + 1;
  result->last_seq = last;
  return absl::OkStatus();
}

// The latest OPEN version of `name` (without its agents), or a new one.
absl::StatusOr<SessionRow> FindOrCreateOpen(sql::Database& db, absl::string_view name,
                                            int64_t now);

// The op behind AppendExchanges: fills *result on success.
Writer::Op MakeAppendOp(std::string name, int64_t version, std::vector<v1::Exchange> exchanges,
                        std::shared_ptr<AppendResult> result) {
  return [name = std::move(name), version, exchanges = std::move(exchanges),
          result = std::move(result)](sql::Database& db) mutable -> absl::Status {
    US_ASSIGN_OR_RETURN(SessionRow row, FindSession(db, name, version));
    if (row.session.state() != v1::SESSION_STATE_OPEN) {
      return absl::FailedPreconditionError(absl::StrCat("session ",
                                                        SessionLabel(name, row.session.version()),
                                                        " is closed; record into a new version"));
    }
    return AppendRows(db, row, exchanges, result.get());
  };
}

absl::StatusOr<std::vector<v1::Exchange>> ReadExchanges(sql::Database& db, const SessionRow& row) {
  US_ASSIGN_OR_RETURN(sql::Statement * s,
                      db.GetCachedStatement("SELECT seq, body FROM exchanges WHERE session_id = ?1 "
                                            "ORDER BY seq"));
  US_RETURN_IF_ERROR(s->BindInt64(1, row.id));
  std::vector<v1::Exchange> exchanges;
  exchanges.reserve(static_cast<size_t>(row.session.exchange_count()));
  for (;;) {
    US_ASSIGN_OR_RETURN(bool more, s->Step());
    if (!more) break;
    v1::Exchange& exchange = exchanges.emplace_back();
    absl::string_view body = s->ColumnBlobView(1);
    if (!ParseStored(body, &exchange).ok()) {
      return absl::DataLossError(
          absl::StrCat("session ", SessionLabel(row.session.name(), row.session.version()),
                       ": stored exchange seq ", s->ColumnInt64(0), " does not parse"));
    }
  }
  return exchanges;
}

std::vector<std::string> DistinctAgents(const std::vector<v1::Exchange>& exchanges) {
  std::vector<std::string> agents;
  absl::flat_hash_set<std::string> seen;
  for (const v1::Exchange& exchange : exchanges) {
    if (!exchange.agent().empty() && seen.insert(exchange.agent()).second) {
      agents.push_back(exchange.agent());
    }
  }
  return agents;
}

}  // namespace

// --- Sessions ------------------------------------------------------------------

absl::StatusOr<v1::Session> Store::GetSession(absl::string_view name, int64_t version) {
  ReaderPool::Lease lease = impl_->readers().Acquire();
  sql::Database& db = lease.db();
  // One snapshot for the row and its agents. Read-only: the destructor's
  // rollback is as good as a commit.
  sql::Transaction txn(&db);
  US_RETURN_IF_ERROR(txn.Begin());
  US_ASSIGN_OR_RETURN(SessionRow row, FindSession(db, name, version));
  US_RETURN_IF_ERROR(FillAgents(db, row.id, &row.session));
  return std::move(row.session);
}

absl::StatusOr<int64_t> Store::SessionRowId(absl::string_view name, int64_t version) {
  ReaderPool::Lease lease = impl_->readers().Acquire();
  US_ASSIGN_OR_RETURN(SessionRow row, FindSession(lease.db(), name, version));
  return row.id;
}

absl::StatusOr<std::vector<v1::Session>> Store::ListSessions(absl::string_view prefix) {
  ReaderPool::Lease lease = impl_->readers().Acquire();
  sql::Database& db = lease.db();
  sql::Transaction txn(&db);
  US_RETURN_IF_ERROR(txn.Begin());
  // A range rather than LIKE, whose '%' and '_' would be wildcards. Names are
  // UTF-8, which never contains the byte 0xFF, so every name starting with
  // `prefix` sorts (bytewise) between prefix and prefix + "\xFF".
  US_ASSIGN_OR_RETURN(sql::Statement * s, db.GetCachedStatement(absl::StrCat(
                                              "SELECT ", kSessionColumns,
                                              " FROM sessions WHERE name >= ?1 AND name < ?2 "
                                              "ORDER BY name, version")));
  US_RETURN_IF_ERROR(s->BindText(1, prefix));
  US_RETURN_IF_ERROR(s->BindText(2, absl::StrCat(prefix, "\xFF")));
  std::vector<SessionRow> rows;
  for (;;) {
    US_ASSIGN_OR_RETURN(bool more, s->Step());
    if (!more) break;
    rows.push_back(ReadSessionRow(*s));
  }
  std::vector<v1::Session> sessions;
  sessions.reserve(rows.size());
  for (SessionRow& row : rows) {
    US_RETURN_IF_ERROR(FillAgents(db, row.id, &row.session));
    sessions.push_back(std::move(row.session));
  }
  return sessions;
}

absl::StatusOr<std::vector<v1::Exchange>> Store::LoadExchanges(absl::string_view name,
                                                               int64_t version) {
  ReaderPool::Lease lease = impl_->readers().Acquire();
  sql::Database& db = lease.db();
  sql::Transaction txn(&db);
  US_RETURN_IF_ERROR(txn.Begin());
  US_ASSIGN_OR_RETURN(SessionRow row, FindSession(db, name, version));
  return ReadExchanges(db, row);
}

absl::StatusOr<v1::Session> Store::CreateSessionVersion(absl::string_view name) {
  US_RETURN_IF_ERROR(ValidateSessionName(name));
  v1::Session session;
  const int64_t now = impl_->clock().NowMicros();
  US_RETURN_IF_ERROR(impl_->writer().RunAndWait([&](sql::Database& db) -> absl::Status {
    US_ASSIGN_OR_RETURN(SessionRow row,
                        InsertSessionVersion(db, name, v1::SESSION_STATE_OPEN, now, 0));
    session = std::move(row.session);
    return absl::OkStatus();
  }));
  return session;
}

absl::StatusOr<v1::Session> Store::OpenSessionForAppend(absl::string_view name) {
  US_RETURN_IF_ERROR(ValidateSessionName(name));
  v1::Session session;
  const int64_t now = impl_->clock().NowMicros();
  // One op, so two callers racing both get the same version.
  US_RETURN_IF_ERROR(impl_->writer().RunAndWait([&](sql::Database& db) -> absl::Status {
    US_ASSIGN_OR_RETURN(SessionRow row, FindOrCreateOpen(db, name, now));
    if (row.session.exchange_count() > 0) {
      US_RETURN_IF_ERROR(FillAgents(db, row.id, &row.session));
    }
    session = std::move(row.session);
    return absl::OkStatus();
  }));
  return session;
}

absl::StatusOr<AppendResult> Store::AppendToOpenSessionAndWait(
    absl::string_view name, std::vector<v1::Exchange> exchanges) {
  US_RETURN_IF_ERROR(ValidateSessionName(name));
  const int64_t now = impl_->clock().NowMicros();
  AppendResult result;
  US_RETURN_IF_ERROR(impl_->writer().RunAndWait([&](sql::Database& db) -> absl::Status {
    US_ASSIGN_OR_RETURN(SessionRow row, FindOrCreateOpen(db, name, now));
    return AppendRows(db, row, exchanges, &result);
  }));
  return result;
}

namespace {

absl::StatusOr<SessionRow> FindOrCreateOpen(sql::Database& db, absl::string_view name,
                                            int64_t now) {
  US_ASSIGN_OR_RETURN(sql::Statement * s, db.GetCachedStatement(absl::StrCat(
                                              "SELECT ", kSessionColumns,
                                              " FROM sessions WHERE name = ?1 AND state = ?2 "
                                              "ORDER BY version DESC LIMIT 1")));
  US_RETURN_IF_ERROR(s->BindText(1, name));
  US_RETURN_IF_ERROR(s->BindInt64(2, v1::SESSION_STATE_OPEN));
  US_ASSIGN_OR_RETURN(bool found, s->Step());
  if (found) {
    SessionRow row = ReadSessionRow(*s);
    US_RETURN_IF_ERROR(s->Reset());
    return row;
  }
  US_RETURN_IF_ERROR(s->Reset());
  return InsertSessionVersion(db, name, v1::SESSION_STATE_OPEN, now, 0);
}

}  // namespace

void Store::AppendExchanges(std::string name, int64_t version, std::vector<v1::Exchange> exchanges,
                            std::function<void(absl::StatusOr<AppendResult>)> done) {
  auto result = std::make_shared<AppendResult>();
  impl_->writer().Enqueue(MakeAppendOp(std::move(name), version, std::move(exchanges), result),
                          [result, done = std::move(done)](absl::Status status) {
                            if (!done) return;
                            if (status.ok()) {
                              done(*result);
                            } else {
                              done(std::move(status));
                            }
                          });
}

absl::StatusOr<AppendResult> Store::AppendExchangesAndWait(std::string name, int64_t version,
                                                           std::vector<v1::Exchange> exchanges) {
  auto result = std::make_shared<AppendResult>();
  US_RETURN_IF_ERROR(impl_->writer().RunAndWait(
      MakeAppendOp(std::move(name), version, std::move(exchanges), result)));
  return *result;
}

absl::Status Store::CloseSession(absl::string_view name, int64_t version) {
  return impl_->writer().RunAndWait([&](sql::Database& db) -> absl::Status {
    US_ASSIGN_OR_RETURN(SessionRow row, FindSession(db, name, version));
    if (row.session.state() == v1::SESSION_STATE_CLOSED) return absl::OkStatus();
    US_ASSIGN_OR_RETURN(sql::Statement * s,
                        db.GetCachedStatement("UPDATE sessions SET state = ?1 WHERE id = ?2"));
    US_RETURN_IF_ERROR(s->BindInt64(1, v1::SESSION_STATE_CLOSED));
    US_RETURN_IF_ERROR(s->BindInt64(2, row.id));
    return s->Run();
  });
}

absl::StatusOr<int64_t> Store::DeleteSession(absl::string_view name, int64_t version) {
  if (version < 0) {
    return absl::InvalidArgumentError(absl::StrCat("session version ", version, " is negative"));
  }
  // Events queued before the call may refer to the version: in first.
  impl_->EnqueueEventDrain();
  US_RETURN_IF_ERROR(impl_->writer().Flush());
  int64_t deleted = 0;
  US_RETURN_IF_ERROR(impl_->writer().RunAndWait([&](sql::Database& db) -> absl::Status {
    // Trace events that refer to the exchanges get their copies first.
    {
      US_ASSIGN_OR_RETURN(
          sql::Statement ids,
          db.Prepare(version == 0 ? "SELECT id FROM sessions WHERE name = ?1"
                                  : "SELECT id FROM sessions WHERE name = ?1 AND version = ?2"));
      US_RETURN_IF_ERROR(ids.BindText(1, name));
      if (version != 0) US_RETURN_IF_ERROR(ids.BindInt64(2, version));
      std::vector<int64_t> rows;
      for (;;) {
        US_ASSIGN_OR_RETURN(bool row, ids.Step());
        if (!row) break;
        rows.push_back(ids.ColumnInt64(0));
      }
      for (int64_t id : rows) US_RETURN_IF_ERROR(impl_->trace().Materialize(db, id));
    }
    sql::Statement* s;
    if (version == 0) {
      US_ASSIGN_OR_RETURN(s, db.GetCachedStatement("DELETE FROM sessions WHERE name = ?1"));
    } else {
      US_ASSIGN_OR_RETURN(
          s, db.GetCachedStatement("DELETE FROM sessions WHERE name = ?1 AND version = ?2"));
      US_RETURN_IF_ERROR(s->BindInt64(2, version));
    }
    US_RETURN_IF_ERROR(s->BindText(1, name));
    US_RETURN_IF_ERROR(s->Run());  // Exchanges go with ON DELETE CASCADE.
    deleted = db.Changes();
    if (deleted == 0) {
      return absl::NotFoundError(
          absl::StrCat("session ", SessionLabel(name, version), " not found"));
    }
    return absl::OkStatus();
  }));
  return deleted;
}

absl::StatusOr<std::string> Store::ExportSession(absl::string_view name, int64_t version) {
  SessionFile file;
  {
    ReaderPool::Lease lease = impl_->readers().Acquire();
    sql::Database& db = lease.db();
    sql::Transaction txn(&db);
    US_RETURN_IF_ERROR(txn.Begin());
    US_ASSIGN_OR_RETURN(SessionRow row, FindSession(db, name, version));
    US_ASSIGN_OR_RETURN(file.exchanges, ReadExchanges(db, row));
    file.header.set_name(row.session.name());
    file.header.set_created_at_micros(row.session.created_at_micros());
  }
  return WriteSessionFile(file);
}

absl::StatusOr<v1::Session> Store::ImportSession(absl::string_view jsonl,
                                                 absl::string_view name_override) {
  US_ASSIGN_OR_RETURN(SessionFile file, ParseSessionFile(jsonl));
  std::string name = name_override.empty() ? file.header.name() : std::string(name_override);
  if (absl::Status valid = ValidateSessionName(name); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name_override.empty() ? "line 1: header name: " : "name override: ", valid.message()));
  }
  v1::Session session;
  // One op: all or nothing.
  US_RETURN_IF_ERROR(impl_->writer().RunAndWait([&](sql::Database& db) -> absl::Status {
    US_ASSIGN_OR_RETURN(
        SessionRow row,
        InsertSessionVersion(db, name, v1::SESSION_STATE_CLOSED, file.header.created_at_micros(),
                             static_cast<int64_t>(file.exchanges.size())));
    for (const v1::Exchange& exchange : file.exchanges) {
      US_RETURN_IF_ERROR(InsertExchange(db, row.id, exchange));
    }
    session = std::move(row.session);
    return absl::OkStatus();
  }));
  for (std::string& agent : DistinctAgents(file.exchanges)) {
    session.add_agents(std::move(agent));
  }
  return session;
}

}  // namespace store
}  // namespace understudy
