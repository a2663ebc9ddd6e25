// internal to store/store*.cc; callers use store/store.h.
// What the store's files share: the pool of reader connections and
// Store::Impl (the writer, the readers, the trace table and the batching of
// trace events). Store's methods live in store.cc (opening),
// store_sessions.cc, store_runs.cc and store_trace.cc.
#ifndef UNDERSTUDY_STORE_STORE_INTERNAL_H_
#define UNDERSTUDY_STORE_STORE_INTERNAL_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/env.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store/trace_codec.h"
#include "store/trace_table.h"
#include "store/writer.h"

namespace understudy {
namespace store {
namespace internal {

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

}  // namespace internal

// --- Store::Impl -------------------------------------------------------------

class Store::Impl {
 public:
  Impl(const StoreOptions& options, std::vector<std::unique_ptr<sql::Database>> readers,
       std::unique_ptr<sql::Database> writer_db)
      : clock_(options.clock),
        path_(options.path),
        max_pending_events_(std::max<size_t>(options.max_pending_events, 1)),
        readers_(std::move(readers)) {
    WriterOptions writer_options;
    writer_options.on_batch = options.on_write_batch;
    writer_options.clock = options.clock;
    writer_ = std::make_unique<Writer>(std::move(writer_db), std::move(writer_options));
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
  internal::ReaderPool& readers() { return readers_; }
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

  // Trace events queued for the writer, not yet handed to it.
  int64_t QueuedEvents() ABSL_LOCKS_EXCLUDED(events_mu_) {
    absl::MutexLock lock(&events_mu_);
    return static_cast<int64_t>(pending_events_.size());
  }

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
  internal::ReaderPool readers_;
  TraceTable trace_;
  // Destroyed before the members above, so its draining callbacks still
  // find them alive.
  std::unique_ptr<Writer> writer_;
  std::thread batcher_;
};

}  // namespace store
}  // namespace understudy

#endif  // UNDERSTUDY_STORE_STORE_INTERNAL_H_
