#include "store/writer.h"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "store/sqlite.h"

namespace understudy {
namespace store {

Writer::Writer(std::unique_ptr<sql::Database> db, Options options)
    : options_(options), db_(std::move(db)), thread_([this] { Loop(); }) {}

Writer::~Writer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

bool Writer::OnWriterThread() const { return std::this_thread::get_id() == writer_thread_id_; }

void Writer::Enqueue(Op op, Done done, size_t weight) {
  absl::MutexLock lock(&mu_);
  if (weight > 0 && !OnWriterThread()) {
    const size_t max = options_.max_pending_weight;
    auto has_room = [this, weight, max]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return pending_weight_ == 0 || pending_weight_ + weight <= max;
    };
    if (!has_room()) {
      ++stats_.producer_waits;
      mu_.Await(absl::Condition(&has_room));
    }
  }
  pending_weight_ += weight;
  stats_.max_pending_weight_seen = std::max(stats_.max_pending_weight_seen, pending_weight_);
  ++enqueued_;
  queue_.push_back(Item{std::move(op), std::move(done), weight});
}

absl::Status Writer::RunAndWait(Op op) {
  {
    absl::MutexLock lock(&mu_);
    if (OnWriterThread()) {
      return absl::FailedPreconditionError(
          "RunAndWait called on the writer thread would wait for itself");
    }
  }
  absl::Notification finished;
  absl::Status result;
  Enqueue(std::move(op), [&](absl::Status status) {
    result = std::move(status);
    finished.Notify();
  });
  finished.WaitForNotification();
  return result;
}

absl::Status Writer::Flush() {
  absl::MutexLock lock(&mu_);
  if (OnWriterThread()) {
    return absl::FailedPreconditionError("Flush called on the writer thread would wait for itself");
  }
  const int64_t target = enqueued_;
  auto done = [this, target]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return completed_ >= target; };
  mu_.Await(absl::Condition(&done));
  return absl::OkStatus();
}

Writer::Stats Writer::stats() const {
  absl::MutexLock lock(&mu_);
  Stats stats = stats_;
  stats.queued_ops = static_cast<int64_t>(queue_.size()) + in_batch_;
  return stats;
}

void Writer::Loop() {
  {
    absl::MutexLock lock(&mu_);
    writer_thread_id_ = std::this_thread::get_id();
  }
  for (;;) {
    std::deque<Item> batch;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || stopping_; };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // Stopping, and everything is done.
      batch.swap(queue_);
      in_batch_ = static_cast<int64_t>(batch.size());
    }

    const absl::Time started = options_.clock->Now();
    std::vector<absl::Status> results = RunBatch(batch);
    if (options_.on_batch) options_.on_batch(options_.clock->Now() - started);

    size_t weight = 0;
    for (const Item& item : batch) weight += item.weight;
    {
      // Make room before the callbacks run, so producers resume as soon as
      // the batch is durable.
      absl::MutexLock lock(&mu_);
      pending_weight_ -= weight;
      in_batch_ = 0;
      ++stats_.batches;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i].done) batch[i].done(std::move(results[i]));
    }
    {
      absl::MutexLock lock(&mu_);
      completed_ += static_cast<int64_t>(batch.size());
      stats_.ops += static_cast<int64_t>(batch.size());
    }
  }
}

std::vector<absl::Status> Writer::RunBatch(std::deque<Item>& batch) {
  sql::Database& db = *db_;
  std::vector<absl::Status> results(batch.size());
  // Ops whose changes are in the open transaction, waiting for its commit.
  std::vector<size_t> uncommitted;
  std::optional<sql::Transaction> txn;

  for (size_t i = 0; i < batch.size(); ++i) {
    if (!txn.has_value()) {
      txn.emplace(&db);
      absl::Status begun = txn->Begin(sql::Transaction::Mode::kImmediate);
      if (!begun.ok()) {
        // Typically another process holding the lock past busy_timeout:
        // trying again for each op would only wait that long again.
        for (size_t j = i; j < batch.size(); ++j) results[j] = begun;
        txn.reset();
        return results;
      }
    }
    sql::Savepoint savepoint(&db, "op");
    absl::Status status = savepoint.Begin();
    if (status.ok()) {
      status = batch[i].op(db);
      if (status.ok()) {
        status = savepoint.Release();
      } else {
        savepoint.Rollback().IgnoreError();
      }
    }
    if (!db.InTransaction()) {
      // SQLite rolled the whole transaction back on its own (disk full, I/O
      // error, ...): the ops before this one in the batch are lost too. They
      // fail with this status; the rest of the batch starts a new transaction.
      if (status.ok()) {
        status = absl::AbortedError("the transaction was rolled back by SQLite");
      }
      for (size_t j : uncommitted) results[j] = status;
      uncommitted.clear();
      results[i] = status;
      txn.reset();  // Its rollback finds nothing to do.
      continue;
    }
    results[i] = status;
    if (status.ok()) uncommitted.push_back(i);
  }
  if (txn.has_value()) {
    absl::Status committed = txn->Commit();
    if (!committed.ok()) {
      for (size_t j : uncommitted) results[j] = committed;
    }
  }
  return results;
}

}  // namespace store
}  // namespace understudy
