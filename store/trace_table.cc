#include "store/trace_table.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "store/proto_utf8.h"

namespace understudy {
namespace store {
namespace {

constexpr int64_t kSeqLimit = int64_t{1} << 32;

int64_t KeyOf(int64_t run_num, int64_t seq) { return run_num << 32 | seq; }

// Derive bits that need the exchange, with the tool call's index.
constexpr uint32_t kNeedsExchange = kDeriveRequest | kDeriveResponse | kDeriveRequestAttributes |
                                    kDeriveAnswerAttributes | kDeriveToolCall |
                                    ~((1u << kToolIndexShift) - 1);

// Exchanges read while expanding one scan's compact rows, each parsed once.
class ExchangeCache {
 public:
  explicit ExchangeCache(sql::Database& db) : db_(db) {}

  absl::StatusOr<const ExchangeParts*> Get(int64_t session_id, int64_t seq) {
    auto key = std::make_pair(session_id, seq);
    auto it = parts_.find(key);
    if (it != parts_.end()) return it->second.get();
    // Bounded: a scan over many distinct exchanges reads some again.
    if (parts_.size() >= 4096) parts_.clear();
    US_ASSIGN_OR_RETURN(sql::Statement * s,
                        db_.GetCachedStatement("SELECT body FROM exchanges "
                                               "WHERE session_id = ?1 AND seq = ?2"));
    US_RETURN_IF_ERROR(s->BindInt64(1, session_id));
    US_RETURN_IF_ERROR(s->BindInt64(2, seq));
    US_ASSIGN_OR_RETURN(bool found, s->Step());
    if (!found) {
      return absl::DataLossError(absl::StrCat("the recorded exchange seq ", seq,
                                              " of session row ", session_id, " is gone"));
    }
    v1::Exchange exchange;
    const absl::Status parsed = ParseStored(s->ColumnBlobView(0), &exchange);
    US_RETURN_IF_ERROR(s->Reset());
    if (!parsed.ok()) {
      return absl::DataLossError(absl::StrCat("the recorded exchange seq ", seq,
                                              " of session row ", session_id, " does not parse"));
    }
    auto made = std::make_unique<ExchangeParts>();
    MakeExchangeParts(std::move(exchange), made.get());
    const ExchangeParts* result = made.get();
    parts_.emplace(key, std::move(made));
    return result;
  }

 private:
  sql::Database& db_;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, std::unique_ptr<ExchangeParts>> parts_;
};

// One prepared scan: the rows of one kind (or of every kind) in key order.
struct Cursor {
  sql::Statement statement;
  bool has_row = false;
  int64_t key = 0;
};

}  // namespace

// --- Writer side ---------------------------------------------------------------

namespace {

// The number of `text` in a (num, text) table, inserted when absent (the
// writer's find-or-insert, for names and runs alike), remembered in `cache`.
absl::StatusOr<int64_t> FindOrInsert(sql::Database& db, absl::string_view find_sql,
                                     absl::string_view insert_sql, absl::string_view text,
                                     absl::flat_hash_map<std::string, int64_t>& cache) {
  auto it = cache.find(text);
  if (it != cache.end()) return it->second;
  US_ASSIGN_OR_RETURN(sql::Statement * find, db.GetCachedStatement(find_sql));
  US_RETURN_IF_ERROR(find->BindText(1, text));
  US_ASSIGN_OR_RETURN(bool found, find->Step());
  int64_t num = 0;
  if (found) {
    num = find->ColumnInt64(0);
    US_RETURN_IF_ERROR(find->Reset());
  } else {
    US_RETURN_IF_ERROR(find->Reset());
    US_ASSIGN_OR_RETURN(sql::Statement * insert, db.GetCachedStatement(insert_sql));
    US_RETURN_IF_ERROR(insert->BindText(1, text));
    US_RETURN_IF_ERROR(insert->Run());
    num = db.LastInsertRowId();
  }
  cache.emplace(std::string(text), num);
  return num;
}

}  // namespace

absl::StatusOr<int64_t> TraceTable::WriterName(sql::Database& db, absl::string_view name) {
  if (name.empty()) return 0;
  return FindOrInsert(db, "SELECT num FROM trace_names WHERE name = ?1",
                      "INSERT INTO trace_names (name) VALUES (?1)", name, writer_names_);
}

absl::StatusOr<int64_t> TraceTable::WriterRun(sql::Database& db, absl::string_view id) {
  // trace_runs is AUTOINCREMENT: a deleted run's number is never handed out
  // again.
  return FindOrInsert(db, "SELECT num FROM trace_runs WHERE id = ?1",
                      "INSERT INTO trace_runs (id) VALUES (?1)", id, writer_runs_);
}

void TraceTable::ForgetUncommitted() {
  writer_names_.clear();
  writer_runs_.clear();
  writer_refs_.clear();
}

absl::Status TraceTable::Insert(sql::Database& db, TraceRecord& record, std::string* scratch) {
  v1::TraceEvent& event = record.event;
  if (event.run().empty() || event.seq() <= 0 || event.seq() >= kSeqLimit) {
    return absl::InvalidArgumentError("events need a run and a seq in [1, 2^32)");
  }
  US_ASSIGN_OR_RETURN(const int64_t run, WriterRun(db, event.run()));
  US_ASSIGN_OR_RETURN(const int64_t kind, WriterName(db, event.kind()));
  US_ASSIGN_OR_RETURN(const int64_t agent, WriterName(db, event.agent()));
  US_ASSIGN_OR_RETURN(const int64_t tool, WriterName(db, record.tool));
  const ExchangeRef& ref = record.ref;
  if (ref.session_id != 0 && !writer_refs_.contains(std::make_pair(ref.session_id, run))) {
    US_ASSIGN_OR_RETURN(sql::Statement * refs,
                        db.GetCachedStatement("INSERT OR IGNORE INTO trace_refs (session_id, run) "
                                              "VALUES (?1, ?2)"));
    US_RETURN_IF_ERROR(refs->BindInt64(1, ref.session_id));
    US_RETURN_IF_ERROR(refs->BindInt64(2, run));
    US_RETURN_IF_ERROR(refs->Run());
    writer_refs_.emplace(ref.session_id, run);
  }
  ContextAttributes context = TakeContextAttributes(event.mutable_attributes());
  std::optional<int64_t> previous_agent;
  if (context.previous_agent.has_value()) {
    US_ASSIGN_OR_RETURN(previous_agent, WriterName(db, *context.previous_agent));
  }
  const int64_t key = KeyOf(run, event.seq());
  event.clear_run();
  event.clear_seq();
  event.clear_kind();
  event.clear_agent();
  scratch->clear();
  event.SerializeToString(scratch);
  US_ASSIGN_OR_RETURN(
      sql::Statement * s,
      db.GetCachedStatement("INSERT INTO trace_events "
                            "(key, kind, agent, tool, ref_session, ref_seq, derive, body, "
                            "iter, agent_iter, prev_agent) "
                            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"));
  US_RETURN_IF_ERROR(s->BindInt64(1, key));
  US_RETURN_IF_ERROR(s->BindInt64(2, kind));
  US_RETURN_IF_ERROR(s->BindInt64(3, agent));
  US_RETURN_IF_ERROR(s->BindInt64(4, tool));
  if (ref.session_id != 0) {
    US_RETURN_IF_ERROR(s->BindInt64(5, ref.session_id));
    US_RETURN_IF_ERROR(s->BindInt64(6, ref.seq));
  }
  if (ref.derive != 0) US_RETURN_IF_ERROR(s->BindInt64(7, ref.derive));
  US_RETURN_IF_ERROR(s->BindBlob(8, *scratch));
  if (context.iteration.has_value()) US_RETURN_IF_ERROR(s->BindInt64(9, *context.iteration));
  if (context.agent_iteration.has_value()) {
    US_RETURN_IF_ERROR(s->BindInt64(10, *context.agent_iteration));
  }
  if (previous_agent.has_value()) US_RETURN_IF_ERROR(s->BindInt64(11, *previous_agent));
  return s->Run();
}

absl::StatusOr<bool> TraceTable::DeleteRun(sql::Database& db, absl::string_view id) {
  US_ASSIGN_OR_RETURN(sql::Statement * find,
                      db.GetCachedStatement("SELECT num FROM trace_runs WHERE id = ?1"));
  US_RETURN_IF_ERROR(find->BindText(1, id));
  US_ASSIGN_OR_RETURN(bool found, find->Step());
  if (!found) return false;
  const int64_t run = find->ColumnInt64(0);
  US_RETURN_IF_ERROR(find->Reset());
  US_ASSIGN_OR_RETURN(
      sql::Statement * events,
      db.GetCachedStatement("DELETE FROM trace_events WHERE key >= ?1 AND key < ?2"));
  US_RETURN_IF_ERROR(events->BindInt64(1, KeyOf(run, 0)));
  US_RETURN_IF_ERROR(events->BindInt64(2, KeyOf(run + 1, 0)));
  US_RETURN_IF_ERROR(events->Run());
  US_ASSIGN_OR_RETURN(sql::Statement * refs,
                      db.GetCachedStatement("DELETE FROM trace_refs WHERE run = ?1"));
  US_RETURN_IF_ERROR(refs->BindInt64(1, run));
  US_RETURN_IF_ERROR(refs->Run());
  US_ASSIGN_OR_RETURN(sql::Statement * runs,
                      db.GetCachedStatement("DELETE FROM trace_runs WHERE num = ?1"));
  US_RETURN_IF_ERROR(runs->BindInt64(1, run));
  US_RETURN_IF_ERROR(runs->Run());
  writer_runs_.erase(id);
  for (auto it = writer_refs_.begin(); it != writer_refs_.end();) {
    auto here = it++;
    if (here->second == run) writer_refs_.erase(here);
  }
  return true;
}

absl::Status TraceTable::Materialize(sql::Database& db, int64_t session_id) {
  std::vector<int64_t> runs;
  {
    US_ASSIGN_OR_RETURN(sql::Statement s,
                        db.Prepare("SELECT run FROM trace_refs WHERE session_id = ?1"));
    US_RETURN_IF_ERROR(s.BindInt64(1, session_id));
    for (;;) {
      US_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      runs.push_back(s.ColumnInt64(0));
    }
  }
  ExchangeCache exchanges(db);
  std::string body;
  for (int64_t run : runs) {
    struct Rewrite {
      int64_t key;
      uint32_t derive;
      std::string body;
    };
    std::vector<Rewrite> rewrites;
    {
      US_ASSIGN_OR_RETURN(sql::Statement s,
                          db.Prepare("SELECT key, ref_seq, derive, body FROM trace_events "
                                     "WHERE key >= ?1 AND key < ?2 AND ref_session = ?3"));
      US_RETURN_IF_ERROR(s.BindInt64(1, KeyOf(run, 0)));
      US_RETURN_IF_ERROR(s.BindInt64(2, KeyOf(run + 1, 0)));
      US_RETURN_IF_ERROR(s.BindInt64(3, session_id));
      for (;;) {
        US_ASSIGN_OR_RETURN(bool row, s.Step());
        if (!row) break;
        const int64_t ref_seq = s.ColumnInt64(1);
        const uint32_t derive = static_cast<uint32_t>(s.ColumnInt64(2));
        US_ASSIGN_OR_RETURN(const ExchangeParts* parts, exchanges.Get(session_id, ref_seq));
        // Only what needs the exchange is copied in; the rest stays derived.
        if (!ExpandedBytes(s.ColumnBlobView(3), "", 0, "", "", derive & kNeedsExchange, ref_seq,
                           parts, &body)) {
          return absl::DataLossError(absl::StrCat("trace event key ", s.ColumnInt64(0),
                                                  " names a tool call its exchange lacks"));
        }
        rewrites.push_back({s.ColumnInt64(0), derive & ~kNeedsExchange, body});
      }
    }
    US_ASSIGN_OR_RETURN(sql::Statement update,
                        db.Prepare("UPDATE trace_events SET ref_session = NULL, ref_seq = NULL, "
                                   "derive = ?2, body = ?3 WHERE key = ?1"));
    for (const Rewrite& r : rewrites) {
      US_RETURN_IF_ERROR(update.Reset());
      US_RETURN_IF_ERROR(update.BindInt64(1, r.key));
      if (r.derive != 0) {
        US_RETURN_IF_ERROR(update.BindInt64(2, r.derive));
      } else {
        US_RETURN_IF_ERROR(update.BindNull(2));
      }
      US_RETURN_IF_ERROR(update.BindBlob(3, r.body));
      US_RETURN_IF_ERROR(update.Run());
    }
  }
  US_ASSIGN_OR_RETURN(sql::Statement done,
                      db.Prepare("DELETE FROM trace_refs WHERE session_id = ?1"));
  US_RETURN_IF_ERROR(done.BindInt64(1, session_id));
  US_RETURN_IF_ERROR(done.Run());
  for (auto it = writer_refs_.begin(); it != writer_refs_.end();) {
    auto here = it++;
    if (here->first == session_id) writer_refs_.erase(here);
  }
  return absl::OkStatus();
}

// --- Reader side ---------------------------------------------------------------

absl::StatusOr<std::optional<int64_t>> TraceTable::ReaderName(sql::Database& db,
                                                              absl::string_view name) {
  if (name.empty()) return 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = nums_.find(name);
    if (it != nums_.end()) return it->second;
  }
  US_ASSIGN_OR_RETURN(sql::Statement * find,
                      db.GetCachedStatement("SELECT num FROM trace_names WHERE name = ?1"));
  US_RETURN_IF_ERROR(find->BindText(1, name));
  US_ASSIGN_OR_RETURN(bool found, find->Step());
  if (!found) return std::nullopt;  // Not cached: it may come later.
  const int64_t num = find->ColumnInt64(0);
  US_RETURN_IF_ERROR(find->Reset());
  absl::MutexLock lock(&mu_);
  nums_.emplace(std::string(name), num);
  names_.emplace(num, std::string(name));
  return num;
}

absl::StatusOr<absl::string_view> TraceTable::NameOf(sql::Database& db, int64_t num) {
  if (num == 0) return absl::string_view();
  {
    absl::MutexLock lock(&mu_);
    auto it = names_.find(num);
    // node_hash_map: the string stays where it is; entries are never erased.
    if (it != names_.end()) return absl::string_view(it->second);
  }
  US_ASSIGN_OR_RETURN(sql::Statement * find,
                      db.GetCachedStatement("SELECT name FROM trace_names WHERE num = ?1"));
  US_RETURN_IF_ERROR(find->BindInt64(1, num));
  US_ASSIGN_OR_RETURN(bool found, find->Step());
  if (!found) return absl::DataLossError(absl::StrCat("trace name number ", num, " is unknown"));
  std::string name(find->ColumnBlobView(0));
  US_RETURN_IF_ERROR(find->Reset());
  absl::MutexLock lock(&mu_);
  nums_.emplace(name, num);
  auto [it, inserted] = names_.emplace(num, std::move(name));
  return absl::string_view(it->second);
}

absl::StatusOr<std::optional<int64_t>> TraceTable::RunNum(sql::Database& db,
                                                          absl::string_view id) {
  US_ASSIGN_OR_RETURN(sql::Statement * find,
                      db.GetCachedStatement("SELECT num FROM trace_runs WHERE id = ?1"));
  US_RETURN_IF_ERROR(find->BindText(1, id));
  US_ASSIGN_OR_RETURN(bool found, find->Step());
  if (!found) return std::nullopt;
  const int64_t num = find->ColumnInt64(0);
  US_RETURN_IF_ERROR(find->Reset());
  return num;
}

absl::StatusOr<int64_t> TraceTable::Count(sql::Database& db, absl::string_view run) {
  US_ASSIGN_OR_RETURN(std::optional<int64_t> num, RunNum(db, run));
  if (!num.has_value()) return 0;
  US_ASSIGN_OR_RETURN(
      sql::Statement * s,
      db.GetCachedStatement("SELECT count(*) FROM trace_events WHERE key >= ?1 AND key < ?2"));
  US_RETURN_IF_ERROR(s->BindInt64(1, KeyOf(*num, 0)));
  US_RETURN_IF_ERROR(s->BindInt64(2, KeyOf(*num + 1, 0)));
  US_ASSIGN_OR_RETURN(bool row, s->Step());
  const int64_t count = row ? s->ColumnInt64(0) : 0;
  US_RETURN_IF_ERROR(s->Reset());
  return count;
}

absl::Status TraceTable::Scan(sql::Database& db, const TraceScan& scan,
                              const std::function<bool(const TraceRow&)>& fn) {
  US_ASSIGN_OR_RETURN(std::optional<int64_t> run, RunNum(db, scan.run));
  if (!run.has_value() || scan.after_seq >= kSeqLimit - 1) return absl::OkStatus();
  std::optional<int64_t> agent;
  if (!scan.agent.empty()) {
    US_ASSIGN_OR_RETURN(agent, ReaderName(db, scan.agent));
    if (!agent.has_value()) return absl::OkStatus();
  }
  std::optional<int64_t> tool;
  if (!scan.tool.empty()) {
    US_ASSIGN_OR_RETURN(tool, ReaderName(db, scan.tool));
    // Rows from before v3 have no tool column: they may still match.
    if (!tool.has_value()) tool = -1;
  }
  std::vector<int64_t> kinds;
  for (const std::string& kind : scan.kinds) {
    US_ASSIGN_OR_RETURN(std::optional<int64_t> num, ReaderName(db, kind));
    if (num.has_value()) kinds.push_back(*num);
  }
  if (!scan.kinds.empty() && kinds.empty()) return absl::OkStatus();

  // The columns a row needs beyond its key, kind and agent; with
  // body_when_no_agent only rows without an agent read them, so SQLite
  // seeks the table only for those when the index covers the rest.
  const char* const rest = scan.body_when_no_agent
                               ? "CASE WHEN agent = 0 THEN ref_session END, "
                                 "CASE WHEN agent = 0 THEN ref_seq END, "
                                 "CASE WHEN agent = 0 THEN derive END, "
                                 "CASE WHEN agent = 0 THEN body END, "
                                 "CASE WHEN agent = 0 THEN iter END, "
                                 "CASE WHEN agent = 0 THEN agent_iter END, "
                                 "CASE WHEN agent = 0 THEN prev_agent END"
                               : "ref_session, ref_seq, derive, body, iter, agent_iter, prev_agent";
  std::string where = "key > ?1 AND key < ?2";
  if (agent.has_value()) absl::StrAppend(&where, " AND agent = ?3");
  if (tool.has_value()) absl::StrAppend(&where, " AND (tool = ?4 OR tool IS NULL)");
  auto prepare = [&](std::optional<int64_t> kind) -> absl::StatusOr<sql::Statement> {
    std::string sql = absl::StrCat("SELECT key, kind, agent, ", rest, ", tool IS NULL FROM trace_events",
                                   kind.has_value() ? " INDEXED BY trace_events_by_kind" : "",
                                   " WHERE ", where, kind.has_value() ? " AND kind = ?5" : "",
                                   " ORDER BY key");
    US_ASSIGN_OR_RETURN(sql::Statement s, db.Prepare(sql));
    US_RETURN_IF_ERROR(s.BindInt64(1, KeyOf(*run, scan.after_seq)));
    US_RETURN_IF_ERROR(s.BindInt64(2, KeyOf(*run + 1, 0)));
    if (agent.has_value()) US_RETURN_IF_ERROR(s.BindInt64(3, *agent));
    if (tool.has_value()) US_RETURN_IF_ERROR(s.BindInt64(4, *tool));
    if (kind.has_value()) US_RETURN_IF_ERROR(s.BindInt64(5, *kind));
    return s;
  };
  // One cursor per kind (each an index range in seq order), merged by key;
  // or one over the run's range of the table.
  std::vector<Cursor> cursors;
  if (kinds.empty()) {
    US_ASSIGN_OR_RETURN(sql::Statement s, prepare(std::nullopt));
    cursors.push_back(Cursor{std::move(s)});
  } else {
    for (int64_t kind : kinds) {
      US_ASSIGN_OR_RETURN(sql::Statement s, prepare(kind));
      cursors.push_back(Cursor{std::move(s)});
    }
  }
  for (Cursor& c : cursors) {
    US_ASSIGN_OR_RETURN(c.has_row, c.statement.Step());
    if (c.has_row) c.key = c.statement.ColumnInt64(0);
  }
  ExchangeCache exchanges(db);
  std::string body;
  int64_t returned = 0;
  while (scan.limit < 0 || returned < scan.limit) {
    Cursor* next = nullptr;
    for (Cursor& c : cursors) {
      if (c.has_row && (next == nullptr || c.key < next->key)) next = &c;
    }
    if (next == nullptr) break;
    sql::Statement& s = next->statement;
    TraceRow row;
    row.seq = next->key & (kSeqLimit - 1);
    US_ASSIGN_OR_RETURN(row.kind, NameOf(db, s.ColumnInt64(1)));
    US_ASSIGN_OR_RETURN(row.agent, NameOf(db, s.ColumnInt64(2)));
    row.legacy = s.ColumnInt64(10) != 0;
    if (!s.ColumnIsNull(6)) {
      const int64_t ref_session = s.ColumnIsNull(3) ? 0 : s.ColumnInt64(3);
      const int64_t ref_seq = s.ColumnIsNull(4) ? 0 : s.ColumnInt64(4);
      const uint32_t derive = s.ColumnIsNull(5) ? 0 : static_cast<uint32_t>(s.ColumnInt64(5));
      const ExchangeParts* parts = nullptr;
      if (ref_session != 0 && (derive & kNeedsExchange) != 0) {
        absl::StatusOr<const ExchangeParts*> got = exchanges.Get(ref_session, ref_seq);
        if (!got.ok()) {
          return absl::DataLossError(absl::StrCat("run \"", scan.run, "\": event seq ", row.seq,
                                                  ": ", got.status().message()));
        }
        parts = *got;
      }
      if (!ExpandedBytes(s.ColumnBlobView(6), scan.run, row.seq, row.kind, row.agent, derive,
                         ref_seq, parts, &body)) {
        return absl::DataLossError(absl::StrCat("run \"", scan.run, "\": event seq ", row.seq,
                                                " refers to what its exchange does not hold"));
      }
      auto column = [&s](int i) {
        return s.ColumnIsNull(i) ? std::nullopt : std::optional<int64_t>(s.ColumnInt64(i));
      };
      std::optional<absl::string_view> previous_agent;
      if (std::optional<int64_t> num = column(9); num.has_value()) {
        US_ASSIGN_OR_RETURN(previous_agent, NameOf(db, *num));
      }
      AppendContextAttributes(column(7), column(8), previous_agent, &body);
      row.body = body;
    }
    ++returned;
    if (!fn(row)) return absl::OkStatus();
    US_ASSIGN_OR_RETURN(next->has_row, s.Step());
    if (next->has_row) next->key = s.ColumnInt64(0);
  }
  return absl::OkStatus();
}

}  // namespace store
}  // namespace understudy
