#include "store/store.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <thread>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "store/proto_utf8.h"
#include "store/schema.h"
#include "store/session_file.h"
#include "store/sqlite.h"
#include "store/trace_table.h"
#include "store/writer.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {
namespace {

constexpr size_t kMaxNameBytes = 256;
constexpr int kDefaultQueryLimit = 1000;
constexpr int kMaxQueryLimit = 10000;

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

// --- Reader connections ------------------------------------------------------

// A fixed set of read-only connections, lent out one caller at a time.
class ReaderPool {
 public:
  // A borrowed connection, returned to the pool on destruction.
  class Lease {
   public:
    Lease(ReaderPool* pool, sql::Database* db) : pool_(pool), db_(db) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { pool_->Release(db_); }
    sql::Database& db() { return *db_; }

   private:
    ReaderPool* pool_;
    sql::Database* db_;
  };

  explicit ReaderPool(std::vector<std::unique_ptr<sql::Database>> connections)
      : connections_(std::move(connections)) {
    for (auto& db : connections_) free_.push_back(db.get());
  }

  // Waits for a free connection. Thread-safe.
  Lease Acquire() {
    absl::MutexLock lock(&mu_);
    auto available = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !free_.empty(); };
    mu_.Await(absl::Condition(&available));
    sql::Database* db = free_.back();
    free_.pop_back();
    return Lease(this, db);
  }

 private:
  void Release(sql::Database* db) {
    // A statement abandoned after returning a row would pin its snapshot
    // (and hold back WAL checkpoints) while the connection sits idle.
    db->ResetCachedStatements();
    absl::MutexLock lock(&mu_);
    free_.push_back(db);
  }

  const std::vector<std::unique_ptr<sql::Database>> connections_;
  absl::Mutex mu_;
  std::vector<sql::Database*> free_ ABSL_GUARDED_BY(mu_);
};

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

// --- Store::Impl -------------------------------------------------------------

class Store::Impl {
 public:
  Impl(const StoreOptions& options, std::vector<std::unique_ptr<sql::Database>> readers,
       std::unique_ptr<sql::Database> writer_db)
      : clock_(options.clock),
        path_(options.path),
        max_pending_events_(std::max<size_t>(options.max_pending_events, 1)),
        readers_(std::move(readers)) {
    writer_ = std::make_unique<Writer>(std::move(writer_db));
    batcher_ = std::thread([this] { BatchLoop(); });
  }

  // Commits what is still queued (the writer drains it as it is destroyed).
  ~Impl() {
    {
      absl::MutexLock lock(&events_mu_);
      stopping_ = true;
    }
    batcher_.join();
    EnqueueEventDrain();
  }

  Env& clock() { return *clock_; }
  const std::string& path() const { return path_; }
  TraceTable& trace() { return trace_; }
  ReaderPool& readers() { return readers_; }
  Writer& writer() { return *writer_; }

  // Keeps the first trace write error until Flush reports it.
  void RecordEventError(absl::Status status) {
    absl::MutexLock lock(&event_error_mu_);
    if (event_error_.ok()) event_error_ = std::move(status);
  }
  absl::Status TakeEventError() {
    absl::MutexLock lock(&event_error_mu_);
    return std::exchange(event_error_, absl::OkStatus());
  }

  // Trace events are batched: producers append to one in-memory queue; the
  // batcher thread hands it to the writer kBatchDelay after the first event
  // arrived (or at once when kBatchEvents are queued), as one op that inserts
  // everything queued in one savepoint and one commit. Committing every few
  // events instead rewrote the same B-tree pages into the WAL at each commit:
  // it took 38% of a replay server's CPU (bench/run, perf). Flush hands the
  // queue over at once. Blocks while the queue holds max_pending_events_
  // (unless it is empty): memory stays bounded and nothing is dropped.
  static constexpr absl::Duration kBatchDelay = absl::Milliseconds(10);
  static constexpr size_t kBatchEvents = 4096;

  void QueueEvents(std::vector<TraceRecord>& events) ABSL_LOCKS_EXCLUDED(events_mu_) {
    absl::MutexLock lock(&events_mu_);
    const size_t n = events.size();
    auto room = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(events_mu_) {
      return pending_events_.empty() || pending_events_.size() + n <= max_pending_events_;
    };
    if (!room()) events_mu_.Await(absl::Condition(&room));
    if (pending_events_.empty()) {
      pending_events_.swap(events);
    } else {
      for (TraceRecord& e : events) pending_events_.push_back(std::move(e));
    }
  }

  // Queues the writer op that inserts the queued events, unless the queue
  // is empty or such an op is already queued.
  void EnqueueEventDrain() ABSL_LOCKS_EXCLUDED(events_mu_);

 private:
  // The writer op's half: everything queued so far, in order.
  std::vector<TraceRecord> TakeEvents() ABSL_LOCKS_EXCLUDED(events_mu_) {
    absl::MutexLock lock(&events_mu_);
    drain_queued_ = false;
    return std::exchange(pending_events_, {});
  }

  void BatchLoop() ABSL_LOCKS_EXCLUDED(events_mu_) {
    const size_t full = std::min(kBatchEvents, max_pending_events_);
    while (true) {
      {
        absl::MutexLock lock(&events_mu_);
        auto some = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(events_mu_) {
          return stopping_ || !pending_events_.empty();
        };
        events_mu_.Await(absl::Condition(&some));
        if (stopping_) return;
        auto enough = [this, full]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(events_mu_) {
          return stopping_ || pending_events_.size() >= full;
        };
        events_mu_.AwaitWithTimeout(absl::Condition(&enough), kBatchDelay);
      }
      EnqueueEventDrain();
      // Let the writer take this batch before timing the next one.
      absl::MutexLock lock(&events_mu_);
      auto taken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(events_mu_) {
        return stopping_ || !drain_queued_;
      };
      events_mu_.Await(absl::Condition(&taken));
    }
  }

 public:

 private:
  Env* const clock_;  // Not owned.
  const std::string path_;
  const size_t max_pending_events_;
  absl::Mutex events_mu_;
  std::vector<TraceRecord> pending_events_ ABSL_GUARDED_BY(events_mu_);
  bool drain_queued_ ABSL_GUARDED_BY(events_mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(events_mu_) = false;
  absl::Mutex event_error_mu_;
  absl::Status event_error_ ABSL_GUARDED_BY(event_error_mu_);
  ReaderPool readers_;
  TraceTable trace_;
  // Destroyed before the members above, so its draining callbacks still
  // find them alive.
  std::unique_ptr<Writer> writer_;
  std::thread batcher_;
};

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

// --- Trace -------------------------------------------------------------------

void Store::AppendEvents(std::vector<v1::TraceEvent> events) {
  if (events.empty()) return;
  std::vector<TraceRecord> records;
  records.reserve(events.size());
  for (v1::TraceEvent& event : events) records.push_back(InlineRecord(std::move(event)));
  impl_->QueueEvents(records);
}

void Store::AppendRecords(std::vector<TraceRecord> records) {
  if (records.empty()) return;
  impl_->QueueEvents(records);
}

void Store::Impl::EnqueueEventDrain() {
  {
    absl::MutexLock lock(&events_mu_);
    if (pending_events_.empty() || drain_queued_) return;
    drain_queued_ = true;
  }
  auto op = [this](sql::Database& db) -> absl::Status {
    std::vector<TraceRecord> records = TakeEvents();
    std::string body;
    for (TraceRecord& record : records) {
      const std::string run = record.event.run();
      const int64_t seq = record.event.seq();
      absl::Status status = trace_.Insert(db, record, &body);
      if (!status.ok()) {
        // A failed statement undoes only itself; unless SQLite gave up on
        // the whole transaction, the other events still go in, and the
        // error waits for Flush.
        if (!db.InTransaction()) {
          trace_.ForgetUncommitted();
          return status;
        }
        RecordEventError(absl::Status(
            status.code(),
            absl::StrCat("trace event (run \"", run, "\", seq ", seq, "): ", status.message())));
      }
    }
    return absl::OkStatus();
  };
  writer().Enqueue(std::move(op), [this](absl::Status status) {
    if (!status.ok()) {
      trace_.ForgetUncommitted();
      RecordEventError(
          absl::Status(status.code(), absl::StrCat("trace events lost: ", status.message())));
    }
  });
}

absl::Status Store::Flush() {
  impl_->EnqueueEventDrain();
  US_RETURN_IF_ERROR(impl_->writer().Flush());
  return impl_->TakeEventError();
}

namespace {

TraceScan ScanOf(const EventQuery& query, int64_t limit, bool body_when_no_agent) {
  TraceScan scan;
  scan.run = query.run;
  scan.kinds = query.kinds;
  scan.agent = query.agent;
  scan.tool = query.tool;
  scan.after_seq = query.after_seq;
  scan.limit = limit;
  scan.body_when_no_agent = body_when_no_agent;
  return scan;
}

}  // namespace

absl::Status Store::ScanEvents(const EventQuery& query, Bodies bodies,
                               const std::function<bool(const StoredEvent&)>& fn) {
  return ScanEvents(std::vector<EventScan>{{query, bodies}}, fn);
}

absl::Status Store::ScanEvents(const std::vector<EventScan>& scans,
                               const std::function<bool(const StoredEvent&)>& fn,
                               const std::function<void()>& scan_done) {
  for (const EventScan& scan : scans) {
    if (scan.query.run.empty()) return absl::InvalidArgumentError("query.run is empty");
  }
  ReaderPool::Lease lease = impl_->readers().Acquire();
  sql::Transaction snapshot(&lease.db());
  if (scans.size() > 1) US_RETURN_IF_ERROR(snapshot.Begin());
  for (const EventScan& scan : scans) {
    bool stopped = false;
    US_RETURN_IF_ERROR(impl_->trace().Scan(
        lease.db(), ScanOf(scan.query, -1, scan.bodies == Bodies::kWhenNoAgent),
        [&](const TraceRow& row) {
          StoredEvent event;
          event.seq = row.seq;
          event.kind = row.kind;
          event.agent = row.agent;
          event.body = row.body;
          event.legacy = row.legacy;
          stopped = !fn(event);
          return !stopped;
        }));
    if (stopped) return absl::OkStatus();
    if (scan_done) scan_done();
  }
  return absl::OkStatus();
}

absl::StatusOr<EventPage> Store::QueryEvents(const EventQuery& query) {
  if (query.run.empty()) return absl::InvalidArgumentError("query.run is empty");
  int limit = query.limit <= 0 ? kDefaultQueryLimit : query.limit;
  if (limit > kMaxQueryLimit) limit = kMaxQueryLimit;

  ReaderPool::Lease lease = impl_->readers().Acquire();
  EventPage page;
  // Room for the whole page: growing a vector of messages moves each one.
  page.events.reserve(static_cast<size_t>(limit) + 1);
  absl::Status parse_error;
  // One more than asked: whether it exists says whether there is a next page.
  US_RETURN_IF_ERROR(impl_->trace().Scan(
      lease.db(), ScanOf(query, static_cast<int64_t>(limit) + 1, false),
      [&](const TraceRow& row) {
        if (static_cast<int>(page.events.size()) == limit) {
          page.next_after_seq = page.events.back().seq();
          return false;
        }
        v1::TraceEvent& event = page.events.emplace_back();
        if (!ParseStored(row.body, &event).ok()) {
          parse_error = absl::DataLossError(absl::StrCat(
              "run \"", query.run, "\": stored event seq ", row.seq, " does not parse"));
          return false;
        }
        return true;
      }));
  US_RETURN_IF_ERROR(parse_error);
  return page;
}

}  // namespace store
}  // namespace understudy
