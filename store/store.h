// The store: sessions, runs and traces in one SQLite file.
//
// Usage:
//   StoreOptions options;
//   options.path = "understudy.db";
//   US_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Open(options));
//   US_ASSIGN_OR_RETURN(v1::Session s, store->CreateSessionVersion("golden"));
//   store->AppendExchanges("golden", s.version(), {exchange}, [](auto r) {...});
//
// Writes go through one writer thread that commits in groups (one transaction
// for every operation queued while the previous commit ran). Reads use their
// own connections (WAL mode) and never block the writer. Every method is
// thread-safe. Durability: a write is committed when its callback runs or its
// synchronous method returns OK; kill -9 after that loses nothing.
#ifndef UNDERSTUDY_STORE_STORE_H_
#define UNDERSTUDY_STORE_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/env.h"
#include "store/trace_codec.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {

namespace v1 = ::understudy::v1;

struct StoreOptions {
  // The SQLite file. Must be a real file, not ":memory:" (readers open their
  // own connections).
  std::string path = "understudy.db";
  // Create the file (mode 0600) when it does not exist; its directory must.
  // Commands that only read (or delete) set this false, so that a mistyped
  // --db is an error rather than a new empty database.
  bool create_if_missing = true;
  // How long a connection waits for another process's lock (busy_timeout).
  absl::Duration busy_timeout = absl::Seconds(5);
  // Read connections kept open; concurrent reads beyond this wait for one.
  // At least 1.
  int reader_connections = 4;
  // Trace events held in memory waiting for the writer; AppendEvents blocks
  // (back-pressure, never loss) while the queue is this full. Two writer
  // batches: enough to keep the writer busy, and a bound on memory when it
  // falls behind (a replay event holds its request and answer: at 1M
  // events, a loaded machine's server grew past 600 MB).
  size_t max_pending_events = 8192;
  // Not owned; must outlive the Store.
  Env* clock = Env::Default();
  // Called on the writer thread after each batch of writes (trace events,
  // exchanges, runs) with how long it took. Null: none. Must not block.
  std::function<void(absl::Duration)> on_write_batch;
  // When not empty: the store at `path` starts as a copy of the store at
  // `snapshot_of` (its sessions, runs and traces as they are at Open, one
  // consistent snapshot even while another process writes it), and every
  // write goes to `path` only. `snapshot_of` is only read: not migrated,
  // not switched to WAL, its bytes unchanged and, once Open returns, no
  // -wal or -shm file left beside it that was not there before. This is
  // how a replay keeps its runs and traces out of a committed recording.
  // A file at `path` is replaced, but only when it is an understudy store
  // (or empty). Errors: INVALID_ARGUMENT when both name the same file;
  // UNAVAILABLE when `snapshot_of` does not exist or cannot be read;
  // FAILED_PRECONDITION when either is not an understudy store this binary
  // can read (naming it).
  std::string snapshot_of;
};

// Filters for QueryEvents. Events come back in seq order.
struct EventQuery {
  std::string run;                 // required
  std::vector<std::string> kinds;  // empty: all
  std::string agent;               // empty: all
  std::string tool;                // gen_ai.tool.name; empty: all
  int64_t after_seq = 0;           // only seq > after_seq
  int limit = 1000;                // <= 0: 1000; at most 10000
};

// One row of the events table, as ScanEvents lends it.
struct StoredEvent {
  int64_t seq = 0;
  absl::string_view kind;
  absl::string_view agent;  // the event's own agent field ("" when unset)
  absl::string_view body;   // a serialized v1::TraceEvent
  // Stored before schema v3: its strings may need ParseStored's repair.
  bool legacy = false;
};

struct EventPage {
  std::vector<v1::TraceEvent> events;
  // Seq to pass as after_seq for the next page; 0 when there is no more.
  int64_t next_after_seq = 0;
};

// Result of a committed AppendExchanges: seqs first..last were assigned.
struct AppendResult {
  int64_t version = 0;
  int64_t first_seq = 0;
  int64_t last_seq = 0;
};

class Store {
 public:
  // Opens (creating if needed) and migrates the database, and starts the
  // writer thread. Fails with FAILED_PRECONDITION if the file's schema is
  // newer than this binary knows, INVALID_ARGUMENT if it is not a SQLite
  // database, UNAVAILABLE if it cannot be opened.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const StoreOptions& options);

  // Commits everything queued, then stops the writer.
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // --- Sessions -----------------------------------------------------------
  // Session `version` 0 means the latest version, whatever its state.
  // Unknown name or version: NOT_FOUND naming it ("golden@3").
  // Session.agents lists the distinct non-empty agents of its exchanges, in
  // order of first appearance.

  absl::StatusOr<v1::Session> GetSession(absl::string_view name, int64_t version);
  // The store's row id of a session version (version 0: the latest), for
  // TraceRecord references. NOT_FOUND like GetSession.
  absl::StatusOr<int64_t> SessionRowId(absl::string_view name, int64_t version);
  // Every version of every session whose name starts with `prefix`, ordered
  // by name then version.
  absl::StatusOr<std::vector<v1::Session>> ListSessions(absl::string_view prefix);
  // The exchanges of one version in seq order.
  absl::StatusOr<std::vector<v1::Exchange>> LoadExchanges(absl::string_view name,
                                                          int64_t version);
  // Creates version (latest + 1) of `name`, OPEN and empty, created now
  // (options.clock); durable on return. INVALID_ARGUMENT for an empty name,
  // one over 256 bytes, one that is not UTF-8, or one with control
  // characters or '@'. (Deleting the latest version frees its number.)
  absl::StatusOr<v1::Session> CreateSessionVersion(absl::string_view name);
  // The latest OPEN version of `name`, or a new one when there is none
  // (atomically: concurrent callers get the same version). Same name rules.
  absl::StatusOr<v1::Session> OpenSessionForAppend(absl::string_view name);
  // OpenSessionForAppend and AppendExchangesAndWait as one transaction (one
  // commit): appends `exchanges` to the latest OPEN version of `name`, or to
  // a new one. Same name rules; the version is in AppendResult.
  absl::StatusOr<AppendResult> AppendToOpenSessionAndWait(absl::string_view name,
                                                          std::vector<v1::Exchange> exchanges);
  // Appends `exchanges` to OPEN version `version` of `name`, all in one
  // transaction, assigning consecutive seqs after the last one (their `seq`
  // fields are overwritten). `done` runs exactly once, on the writer thread,
  // after the commit or with the error (FAILED_PRECONDITION if the version is
  // closed, NOT_FOUND if it does not exist); it must not block. `version` 0
  // is the latest version (reported in AppendResult.version). An empty
  // `exchanges` commits nothing and reports first_seq = last_seq = 0.
  void AppendExchanges(std::string name, int64_t version,
                       std::vector<v1::Exchange> exchanges,
                       std::function<void(absl::StatusOr<AppendResult>)> done);
  // Synchronous form of AppendExchanges. Must not be called from a writer
  // callback (FAILED_PRECONDITION: it would wait for itself).
  absl::StatusOr<AppendResult> AppendExchangesAndWait(
      std::string name, int64_t version, std::vector<v1::Exchange> exchanges);
  // Marks a version (0: the latest) CLOSED (idempotent). NOT_FOUND if it
  // does not exist.
  absl::Status CloseSession(absl::string_view name, int64_t version);
  // Deletes one version (or all when version is 0) with their exchanges;
  // returns how many versions were deleted. NOT_FOUND if none matched.
  absl::StatusOr<int64_t> DeleteSession(absl::string_view name, int64_t version);

  // The session as JSONL: a header line then one line per exchange, each a
  // SessionFileLine in protobuf's JSON mapping. Same session, same bytes.
  // See store/session_file.h for the format.
  absl::StatusOr<std::string> ExportSession(absl::string_view name, int64_t version);
  // Imports a JSONL session as a new CLOSED version of its name (or of
  // `name_override` when not empty). All or nothing: on any error nothing is
  // stored and the status is INVALID_ARGUMENT naming the line and what is
  // wrong ("line 3: exchange.request.messages[0]: ..."). Exporting the result
  // gives back the input bytes when the input came from ExportSession (the
  // header's created_at_micros is kept). An invalid name is INVALID_ARGUMENT
  // ("line 1: header name: ..." or "name override: ...").
  absl::StatusOr<v1::Session> ImportSession(absl::string_view jsonl,
                                            absl::string_view name_override);

  // --- Runs ---------------------------------------------------------------

  // Inserts or replaces the run record (keeping any summary); durable on
  // return. INVALID_ARGUMENT if run.id is empty.
  absl::Status SaveRun(const v1::Run& run);
  // NOT_FOUND for an unknown id.
  absl::StatusOr<v1::Run> GetRun(absl::string_view id);
  // Runs of session `name` (any version when `version` is 0), in order of
  // start. Reads every run record: for queries, not the request path.
  absl::StatusOr<std::vector<v1::Run>> ListRunsOfSession(absl::string_view name, int64_t version);
  // Stores the run's final summary (and its run record, summary.run);
  // durable on return. INVALID_ARGUMENT if summary.run.id is empty.
  absl::Status SaveRunSummary(const v1::RunSummary& summary);
  // NOT_FOUND when the run is unknown or has not ended.
  absl::StatusOr<v1::RunSummary> GetRunSummary(absl::string_view id);
  // Every stored run record, in order of start (then id). For `runs ls`
  // and retention, not the request path.
  absl::StatusOr<std::vector<v1::Run>> ListRuns();
  // How many trace events run `id` has stored (0 for an unknown run).
  absl::StatusOr<int64_t> CountEvents(absl::string_view id);
  // Deletes runs with their summaries and trace events, in one transaction;
  // returns how many of `ids` existed (unknown ids are skipped). Events
  // queued for a deleted run before the call are deleted too (it flushes
  // first). Durable on return. The space goes back to SQLite's free list;
  // ReclaimSpace returns it to the filesystem.
  absl::StatusOr<int64_t> DeleteRuns(const std::vector<std::string>& ids);
  // Returns free pages to the filesystem (incremental vacuum), at most
  // `max_pages` of them (0: all); returns the bytes the file shrank by.
  // A store created before incremental vacuum existed needs one full VACUUM
  // first (`full` true: rewrites the file, and sets it up for incremental
  // vacuum from then on; takes the writer for as long as that takes).
  absl::StatusOr<int64_t> ReclaimSpace(int64_t max_pages, bool full = false);

  // --- Trace --------------------------------------------------------------

  // Queues events for the writer and returns without touching disk (unless
  // the queue is full, see max_pending_events). Events are committed in the
  // order queued. Each event's (run, seq) must be unique, with a non-empty
  // run and seq >= 1; an event breaking that is not stored, the others are,
  // and the error is reported by the next Flush.
  void AppendEvents(std::vector<v1::TraceEvent> events);
  // AppendEvents for records that may refer to a recorded exchange instead
  // of holding it (store/trace_codec.h): readers get the same events. A
  // record's ref.session_id is a SessionRowId. The exchange must exist when
  // the record is written, and stays readable through the event after its
  // session version is deleted (DeleteSession copies it in first).
  void AppendRecords(std::vector<TraceRecord> records);
  // Returns once everything queued before the call is committed (and every
  // AppendExchanges callback queued before it has run). Returns the first
  // error writing trace events since the previous Flush (e.g. ALREADY_EXISTS
  // for a duplicate (run, seq), naming it), OK otherwise. FAILED_PRECONDITION
  // when called from a writer callback.
  absl::Status Flush();
  // Writes waiting to be committed: trace events queued for the writer and
  // the writer's own ops (queued or being committed). Thread-safe; cheap.
  int64_t PendingWrites();
  // Committed events of one run matching the query. Does not flush. An
  // unknown run gives an empty page; an empty query.run is INVALID_ARGUMENT.
  absl::StatusOr<EventPage> QueryEvents(const EventQuery& query);
  // Every committed event `query` selects (its limit is ignored), in seq
  // order, as its indexed columns and the stored bytes of its
  // v1::TraceEvent — for callers that parse only what they need, their own
  // way (Traces.Assert reads whole runs into an arena). Stops when `fn`
  // returns false. The views in the row are valid only during the call.
  // One read transaction: the events are a consistent snapshot.
  // With `bodies` kWhenNoAgent, row.body is empty for events whose agent
  // field is set, and a scan of one kind reads only the (run, kind, seq,
  // agent) index, not the events themselves.
  enum class Bodies { kAll, kWhenNoAgent };
  absl::Status ScanEvents(const EventQuery& query, Bodies bodies,
                          const std::function<bool(const StoredEvent&)>& fn);
  // Several scans, in order, in one read transaction: one snapshot for all
  // (say, one per kind, each by its own index range). `fn` returning false
  // ends them all; `scan_done`, when given, is called after each scan that
  // ran to its end.
  struct EventScan {
    EventQuery query;
    Bodies bodies = Bodies::kAll;
  };
  absl::Status ScanEvents(const std::vector<EventScan>& scans,
                          const std::function<bool(const StoredEvent&)>& fn,
                          const std::function<void()>& scan_done = nullptr);

 private:
  class Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace store
}  // namespace understudy

#endif  // UNDERSTUDY_STORE_STORE_H_
