#include "store/writer.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/sqlite.h"
#include "store/test_util.h"

namespace understudy {
namespace store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Inserts `k` into t.
Writer::Op InsertOp(int64_t k) {
  return [k](sql::Database& db) -> absl::Status {
    auto s = db.GetCachedStatement("INSERT INTO t (k) VALUES (?)");
    if (!s.ok()) return s.status();
    if (absl::Status b = (*s)->BindInt64(1, k); !b.ok()) return b;
    return (*s)->Run();
  };
}

// An op that tells `started` it runs, then holds the writer (inside its
// transaction) until `release` is notified. Ops queued meanwhile form the
// next batch, which makes batching observable without timing.
Writer::Op BlockingOp(absl::Notification* started, absl::Notification* release) {
  return [started, release](sql::Database&) {
    started->Notify();
    release->WaitForNotification();
    return absl::OkStatus();
  };
}

class WriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto setup = sql::Database::Open(path(), sql::DatabaseOptions());
    ASSERT_THAT(setup, IsOk());
    ASSERT_THAT((*setup)->Execute("CREATE TABLE t (k INTEGER PRIMARY KEY)"), IsOk());
  }

  std::string path() const { return dir_.File("writer.db"); }

  std::unique_ptr<Writer> StartWriter(WriterOptions options = WriterOptions()) {
    auto db = sql::Database::Open(path(), sql::DatabaseOptions());
    EXPECT_THAT(db, IsOk());
    return std::make_unique<Writer>(std::move(db).value(), options);
  }

  // The keys in t, in order, read through a connection of the test's own.
  std::vector<int64_t> Keys() {
    auto db = sql::Database::Open(path(), sql::DatabaseOptions());
    EXPECT_THAT(db, IsOk());
    auto s = (*db)->Prepare("SELECT k FROM t ORDER BY k");
    EXPECT_THAT(s, IsOk());
    std::vector<int64_t> keys;
    while (true) {
      auto row = s->Step();
      EXPECT_THAT(row, IsOk());
      if (!row.ok() || !*row) break;
      keys.push_back(s->ColumnInt64(0));
    }
    return keys;
  }

  ScopedTempDir dir_;
};

TEST_F(WriterTest, RunAndWaitReturnsOnceCommitted) {
  auto writer = StartWriter();
  ASSERT_THAT(writer->RunAndWait(InsertOp(1)), IsOk());
  EXPECT_THAT(Keys(), ElementsAre(1));
}

TEST_F(WriterTest, EachBatchIsTimedAndQueuedOpsAreCountedUntilCommitted) {
  std::atomic<int> batches{0};
  WriterOptions options;
  options.on_batch = [&batches](absl::Duration took) {
    EXPECT_GE(took, absl::ZeroDuration());
    ++batches;
  };
  auto writer = StartWriter(options);
  absl::Notification started, release;
  writer->Enqueue(BlockingOp(&started, &release), nullptr);
  started.WaitForNotification();
  writer->Enqueue(InsertOp(1), nullptr);
  writer->Enqueue(InsertOp(2), nullptr);
  // The blocked op's batch, and the two behind it.
  EXPECT_EQ(writer->stats().queued_ops, 3);
  release.Notify();
  ASSERT_THAT(writer->Flush(), IsOk());
  EXPECT_EQ(writer->stats().queued_ops, 0);
  EXPECT_EQ(batches.load(), writer->stats().batches);
  EXPECT_GE(batches.load(), 2);
}

TEST_F(WriterTest, OpsQueuedWhileACommitRunsShareOneTransaction) {
  auto writer = StartWriter();
  absl::Notification started, release;
  writer->Enqueue(BlockingOp(&started, &release), nullptr);
  started.WaitForNotification();

  std::atomic<int> ok{0};
  for (int k = 1; k <= 100; ++k) {
    writer->Enqueue(InsertOp(k), [&ok](absl::Status s) {
      if (s.ok()) ++ok;
    });
  }
  release.Notify();
  ASSERT_THAT(writer->Flush(), IsOk());
  EXPECT_EQ(ok.load(), 100);
  EXPECT_EQ(Keys().size(), 100u);
  // One batch for the blocking op, one for the hundred queued behind it.
  EXPECT_EQ(writer->stats().batches, 2);
  EXPECT_EQ(writer->stats().ops, 101);
}

TEST_F(WriterTest, ManyConcurrentAppendersAreAllCommitted) {
  auto writer = StartWriter();
  constexpr int kThreads = 8;
  constexpr int kPerThread = 200;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        int64_t k = int64_t{t} * kPerThread + i + 1;
        if (i % 10 == 0) {
          // Some callers wait, the rest do not.
          if (writer->RunAndWait(InsertOp(k)).ok()) ++ok;
        } else {
          writer->Enqueue(InsertOp(k), [&ok](absl::Status s) {
            if (s.ok()) ++ok;
          });
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_THAT(writer->Flush(), IsOk());
  EXPECT_EQ(ok.load(), kThreads * kPerThread);
  EXPECT_EQ(Keys().size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_LE(writer->stats().batches, kThreads * kPerThread);
}

TEST_F(WriterTest, OneFailingOpDoesNotFailTheOthersInItsBatch) {
  auto writer = StartWriter();
  absl::Notification started, release;
  writer->Enqueue(BlockingOp(&started, &release), nullptr);
  started.WaitForNotification();

  absl::Status first, failing, last;
  writer->Enqueue(InsertOp(1), [&](absl::Status s) { first = s; });
  writer->Enqueue(
      [](sql::Database& db) -> absl::Status {
        absl::Status inserted = InsertOp(2)(db);
        if (!inserted.ok()) return inserted;
        return absl::FailedPreconditionError("op changed its mind");
      },
      [&](absl::Status s) { failing = s; });
  writer->Enqueue(InsertOp(1), [&](absl::Status s) { last = s; });  // Duplicate key.
  writer->Enqueue(InsertOp(3), nullptr);
  release.Notify();
  ASSERT_THAT(writer->Flush(), IsOk());

  EXPECT_THAT(first, IsOk());
  EXPECT_THAT(failing, StatusIs(absl::StatusCode::kFailedPrecondition, "op changed its mind"));
  EXPECT_THAT(last, StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("UNIQUE")));
  // The failing op's own insert (2) was rolled back; its neighbours stayed.
  EXPECT_THAT(Keys(), ElementsAre(1, 3));
  EXPECT_EQ(writer->stats().batches, 2);
}

TEST_F(WriterTest, FailedCommitFailsEveryOpOfTheBatch) {
  {
    auto db = sql::Database::Open(path(), sql::DatabaseOptions());
    ASSERT_THAT(db, IsOk());
    ASSERT_THAT((*db)->Execute("CREATE TABLE parent (id INTEGER PRIMARY KEY);"
                               "CREATE TABLE child (p INTEGER REFERENCES parent (id) "
                               "DEFERRABLE INITIALLY DEFERRED)"),
                IsOk());
  }
  auto writer = StartWriter();
  absl::Notification started, release;
  writer->Enqueue(BlockingOp(&started, &release), nullptr);
  started.WaitForNotification();

  absl::Status good, orphan;
  writer->Enqueue(InsertOp(1), [&](absl::Status s) { good = s; });
  // Succeeds as an op; the deferred foreign key fails the COMMIT.
  writer->Enqueue([](sql::Database& db) { return db.Execute("INSERT INTO child (p) VALUES (42)"); },
                  [&](absl::Status s) { orphan = s; });
  release.Notify();
  ASSERT_THAT(writer->Flush(), IsOk());

  EXPECT_THAT(good, StatusIs(absl::StatusCode::kFailedPrecondition,
                             HasSubstr("FOREIGN KEY constraint failed")));
  EXPECT_THAT(orphan, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_TRUE(Keys().empty());

  // The writer carries on with the next batch.
  EXPECT_THAT(writer->RunAndWait(InsertOp(5)), IsOk());
  EXPECT_THAT(Keys(), ElementsAre(5));
}

TEST_F(WriterTest, FlushWaitsForEverythingQueuedBefore) {
  auto writer = StartWriter();
  absl::Notification started, release;
  std::atomic<bool> blocked_op_done{false};
  writer->Enqueue(BlockingOp(&started, &release), [&](absl::Status) { blocked_op_done = true; });
  std::atomic<int> done{0};
  for (int k = 1; k <= 1000; ++k) {
    writer->Enqueue(InsertOp(k), [&done](absl::Status) { ++done; });
  }
  started.WaitForNotification();
  std::thread flusher([&] {
    ASSERT_THAT(writer->Flush(), IsOk());
    EXPECT_TRUE(blocked_op_done.load());
    EXPECT_EQ(done.load(), 1000);
  });
  release.Notify();
  flusher.join();
  EXPECT_EQ(Keys().size(), 1000u);
}

TEST_F(WriterTest, BackPressureBoundsThePendingWeightAndLosesNothing) {
  WriterOptions options;
  options.max_pending_weight = 4;
  auto writer = StartWriter(options);

  constexpr int kThreads = 4;
  constexpr int kPerThread = 250;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        int64_t k = int64_t{t} * kPerThread + i + 1;
        writer->Enqueue(
            InsertOp(k),
            [&ok](absl::Status s) {
              if (s.ok()) ++ok;
            },
            /*weight=*/1 + (k % 3));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_THAT(writer->Flush(), IsOk());
  EXPECT_EQ(ok.load(), kThreads * kPerThread);
  EXPECT_EQ(Keys().size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_LE(writer->stats().max_pending_weight_seen, 4u);
}

TEST_F(WriterTest, ProducerBlocksWhileTheQueueIsFull) {
  WriterOptions options;
  options.max_pending_weight = 2;
  auto writer = StartWriter(options);
  absl::Notification started, release;
  writer->Enqueue(BlockingOp(&started, &release), nullptr, /*weight=*/2);
  started.WaitForNotification();

  // The blocking op holds the whole budget until its batch commits, so this
  // producer waits until `release`.
  std::atomic<bool> released{false};
  std::thread producer([&] {
    writer->Enqueue(InsertOp(1), nullptr, /*weight=*/1);
    EXPECT_TRUE(released.load());
  });
  // Wait for the producer to be blocked, not for some amount of time.
  while (writer->stats().producer_waits == 0) std::this_thread::yield();
  released = true;
  release.Notify();
  producer.join();
  EXPECT_EQ(writer->stats().producer_waits, 1);
  ASSERT_THAT(writer->Flush(), IsOk());
  EXPECT_THAT(Keys(), ElementsAre(1));
}

TEST_F(WriterTest, OpHeavierThanTheBoundIsAcceptedWhenTheQueueIsEmpty) {
  WriterOptions options;
  options.max_pending_weight = 2;
  auto writer = StartWriter(options);
  absl::Status status;
  writer->Enqueue(
      InsertOp(1), [&](absl::Status s) { status = s; }, /*weight=*/10);
  ASSERT_THAT(writer->Flush(), IsOk());
  EXPECT_THAT(status, IsOk());
}

TEST_F(WriterTest, CallbackMayEnqueueEvenWhenTheQueueIsFull) {
  WriterOptions options;
  options.max_pending_weight = 1;
  auto writer = StartWriter(options);
  absl::Notification second_done;
  Writer* w = writer.get();
  writer->Enqueue(
      InsertOp(1),
      [w, &second_done](absl::Status) {
        // On the writer thread: must neither block nor deadlock.
        w->Enqueue(
            InsertOp(2), [&second_done](absl::Status) { second_done.Notify(); },
            /*weight=*/5);
        EXPECT_THAT(w->Flush(), StatusIs(absl::StatusCode::kFailedPrecondition));
        EXPECT_THAT(w->RunAndWait(InsertOp(3)), StatusIs(absl::StatusCode::kFailedPrecondition));
      },
      /*weight=*/1);
  second_done.WaitForNotification();
  EXPECT_THAT(Keys(), ElementsAre(1, 2));
}

TEST_F(WriterTest, DestructorCommitsEverythingQueued) {
  std::atomic<int> ok{0};
  {
    auto writer = StartWriter();
    for (int k = 1; k <= 500; ++k) {
      writer->Enqueue(InsertOp(k), [&ok](absl::Status s) {
        if (s.ok()) ++ok;
      });
    }
  }
  EXPECT_EQ(ok.load(), 500);
  EXPECT_EQ(Keys().size(), 500u);
}

}  // namespace
}  // namespace store
}  // namespace understudy
