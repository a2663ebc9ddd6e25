// The trace tables of the store (schema v3, store/schema.cc): how events
// are written, found and read back.
//
//   trace_runs   (num, id)             a run's number, given on its first event
//   trace_names  (num, name)           kinds, agents and tool names by number;
//                                      0 is ""
//   trace_events (key, kind, agent, tool, ref_session, ref_seq, derive, body,
//                 iter, agent_iter, prev_agent)
//       key = run num << 32 | seq: a run's events are one range of the
//       table's own B-tree, in seq order, with no index of their own;
//       kind, agent, tool: name numbers (tool NULL in rows written before
//       v3, whose tool is unknown to the row); ref_*/derive: the exchange a
//       compact event refers to (store/trace_codec.h); body: the event
//       without run, seq, kind, agent, what it derives and its run
//       context; iter, agent_iter, prev_agent (a name number): the run
//       context (ContextAttributes; schema v4), NULL where not carried.
//   trace_events_by_kind (kind, key, agent, tool): a run's events of one
//       kind, in seq order, with the columns filters read, so that
//       header-only readers never touch the table.
//   trace_refs   (session_id, run)     which runs refer to which session
//                                      version, so that deleting the version
//                                      can first copy what they refer to.
//
// Thread safety: the writer-side methods run on the store's writer thread
// only; the reader-side methods on any reader connection, from any thread.
#ifndef UNDERSTUDY_STORE_TRACE_TABLE_H_
#define UNDERSTUDY_STORE_TRACE_TABLE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "store/sqlite.h"
#include "store/trace_codec.h"

namespace understudy {
namespace store {

// What a scan selects (Store's EventQuery, in the table's terms).
struct TraceScan {
  std::string run;
  std::vector<std::string> kinds;  // empty: all
  std::string agent;               // "": all
  std::string tool;                // "": all
  int64_t after_seq = 0;           // only seq > after_seq
  int64_t limit = -1;              // -1: all
  // Only rows without an agent get a body (and, when compact, expanded);
  // the others give seq, kind and agent alone.
  bool body_when_no_agent = false;
};

// One event as a scan lends it; the views live until the callback returns.
struct TraceRow {
  int64_t seq = 0;
  absl::string_view kind;
  absl::string_view agent;
  absl::string_view body;  // a serialized, complete v1::TraceEvent
  // Written before schema v3 (when entry points did not yet check UTF-8):
  // parse it with ParseStored, which repairs what needs it, before handing
  // its bytes on.
  bool legacy = false;
};

class TraceTable {
 public:
  // --- Writer side ---------------------------------------------------------

  // Inserts one event. INVALID_ARGUMENT for an empty run or a seq outside
  // [1, 2^32); ALREADY_EXISTS-like SQLite errors for a duplicate (run, seq).
  // Uses `scratch` for the body. The record's event loses its run, seq,
  // kind and agent (they go to columns).
  absl::Status Insert(sql::Database& db, TraceRecord& record, std::string* scratch);
  // Forgets numbers handed out in a transaction that did not commit.
  void ForgetUncommitted();
  // Deletes run `id`'s events and its references; false when it had no
  // number (no events).
  absl::StatusOr<bool> DeleteRun(sql::Database& db, absl::string_view id);
  // Before session version `session_id`'s exchanges are deleted: every event
  // referring to one of them gets a copy of what it derived from it.
  absl::Status Materialize(sql::Database& db, int64_t session_id);

  // --- Reader side ---------------------------------------------------------

  // Calls `fn` for each selected event, in seq order, until it returns
  // false. DATA_LOSS naming the event when a compact event's exchange is
  // gone or does not parse.
  absl::Status Scan(sql::Database& db, const TraceScan& scan,
                    const std::function<bool(const TraceRow&)>& fn);
  absl::StatusOr<int64_t> Count(sql::Database& db, absl::string_view run);

 private:
  // Writer caches: names and runs numbered so far (possibly uncommitted).
  absl::StatusOr<int64_t> WriterName(sql::Database& db, absl::string_view name);
  absl::StatusOr<int64_t> WriterRun(sql::Database& db, absl::string_view id);

  // Reader lookups: committed rows only, cached once found (numbers never
  // change once committed: names are never deleted, and a deleted run's
  // number is never reused: trace_runs is AUTOINCREMENT).
  absl::StatusOr<std::optional<int64_t>> ReaderName(sql::Database& db, absl::string_view name);
  absl::StatusOr<absl::string_view> NameOf(sql::Database& db, int64_t num);
  absl::StatusOr<std::optional<int64_t>> RunNum(sql::Database& db, absl::string_view id);

  absl::flat_hash_map<std::string, int64_t> writer_names_;
  absl::flat_hash_map<std::string, int64_t> writer_runs_;
  absl::flat_hash_set<std::pair<int64_t, int64_t>> writer_refs_;  // (session_id, run num)

  absl::Mutex mu_;
  absl::node_hash_map<int64_t, std::string> names_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int64_t> nums_ ABSL_GUARDED_BY(mu_);
};

}  // namespace store
}  // namespace understudy

#endif  // UNDERSTUDY_STORE_TRACE_TABLE_H_
