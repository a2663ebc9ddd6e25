// The store's single writer thread, with group commit.
//
// SQLite allows one writer at a time, and a commit costs an fsync. So every
// write is an operation queued for one thread, which takes everything queued
// while its previous commit ran and commits it as one transaction:
//
//   BEGIN IMMEDIATE
//     SAVEPOINT op; <op 1>; RELEASE op        -- or ROLLBACK TO op on error
//     SAVEPOINT op; <op 2>; RELEASE op
//     ...
//   COMMIT
//   then each op's completion callback, with its status.
//
// Each op runs inside its own savepoint, so one failing op (say, an append to
// a closed session) is rolled back alone and the others in its batch still
// commit. If the COMMIT itself fails, every op that had succeeded gets the
// commit's status instead: a callback reporting OK always means committed.
//
// Ops may carry a `weight` (the store uses the number of trace events). The
// total weight queued or being committed is bounded: Enqueue blocks while the
// bound would be exceeded (back-pressure), and nothing is ever dropped.
#ifndef UNDERSTUDY_STORE_WRITER_H_
#define UNDERSTUDY_STORE_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/env.h"
#include "store/sqlite.h"

namespace understudy {
namespace store {

struct WriterOptions {
  // Bound on the total weight of ops queued or being committed. Enqueue of
  // a weighted op blocks while the total would exceed it. An op heavier
  // than the bound alone is still accepted once the queue is empty.
  size_t max_pending_weight = 1 << 20;
  // Called on the writer thread after each batch with how long its
  // transaction took (committed or not), timed by `clock`. Null: none. Must
  // not block.
  std::function<void(absl::Duration)> on_batch;
  // Not owned; must outlive the writer.
  Env* clock = Env::Default();
};

class Writer {
 public:
  using Options = WriterOptions;

  // Runs against the write connection inside a transaction and a savepoint.
  // Returning an error rolls back exactly this op's changes. Must not begin,
  // commit or roll back transactions itself (savepoints of its own are fine).
  using Op = std::function<absl::Status(sql::Database& db)>;
  // Called on the writer thread after the op's batch committed (OK), or with
  // the op's error, or with the commit's error. Must not block; may Enqueue.
  using Done = std::function<void(absl::Status)>;

  struct Stats {
    // Transactions committed (or attempted): one per batch.
    int64_t batches = 0;
    // Ops completed (their callbacks have run).
    int64_t ops = 0;
    // Highest total pending weight ever observed (<= max_pending_weight
    // unless a single op was heavier).
    size_t max_pending_weight_seen = 0;
    // Enqueue calls that had to wait for room (back-pressure applied).
    int64_t producer_waits = 0;
    // Ops queued or being committed now.
    int64_t queued_ops = 0;
  };

  // Takes ownership of `db`, the only connection that writes, and starts the
  // thread. `db` is used only by that thread from now on.
  explicit Writer(std::unique_ptr<sql::Database> db, Options options = Options());
  // Runs everything queued (including what callbacks queue meanwhile), then
  // stops the thread. Enqueueing from other threads must have stopped.
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Queues `op`; `done` (may be null) runs exactly once, on the writer
  // thread. Ops run in the order queued. With weight > 0, blocks while the
  // pending weight is over the bound, except on the writer thread itself
  // (a callback), where blocking would wait for itself. Thread-safe.
  void Enqueue(Op op, Done done, size_t weight = 0);

  // Queues `op` and waits for its outcome: OK once committed. Must not be
  // called from the writer thread (FAILED_PRECONDITION: it would deadlock).
  absl::Status RunAndWait(Op op);

  // Returns once every op queued before the call has completed (committed
  // or failed) and its callback has run. FAILED_PRECONDITION on the writer
  // thread. Thread-safe.
  absl::Status Flush();

  Stats stats() const;

 private:
  struct Item {
    Op op;
    Done done;
    size_t weight = 0;
  };

  void Loop();
  // Runs one batch in one transaction; the status of each item, in order.
  std::vector<absl::Status> RunBatch(std::deque<Item>& batch);
  bool OnWriterThread() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  // Used only by the writer thread (and by the destructor, after joining).
  std::unique_ptr<sql::Database> db_;

  mutable absl::Mutex mu_;
  std::deque<Item> queue_ ABSL_GUARDED_BY(mu_);
  // Weight of the ops in queue_ plus the batch being committed.
  size_t pending_weight_ ABSL_GUARDED_BY(mu_) = 0;
  // Ops ever queued / ever completed (callback run); Flush compares them.
  int64_t enqueued_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread::id writer_thread_id_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  // Ops of the batch being committed.
  int64_t in_batch_ ABSL_GUARDED_BY(mu_) = 0;

  std::thread thread_;  // Last: starts once everything above is built.
};

}  // namespace store
}  // namespace understudy

#endif  // UNDERSTUDY_STORE_WRITER_H_
