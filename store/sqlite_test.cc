#include "store/sqlite.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <limits>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/test_util.h"

namespace understudy {
namespace store {
namespace sql {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class SqliteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = Database::Open(dir_.File("test.db"), DatabaseOptions());
    ASSERT_THAT(db, IsOk());
    db_ = std::move(db).value();
    ASSERT_THAT(db_->Execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)"), IsOk());
  }

  // The number of rows in t, read through `db`.
  int64_t Count(Database& db) {
    auto s = db.Prepare("SELECT count(*) FROM t");
    EXPECT_THAT(s, IsOk());
    auto row = s->Step();
    EXPECT_THAT(row, IsOk());
    return s->ColumnInt64(0);
  }

  absl::Status Insert(Database& db, int64_t k) {
    auto s = db.Prepare("INSERT INTO t (k, v) VALUES (?, 'x')");
    if (!s.ok()) return s.status();
    if (absl::Status b = s->BindInt64(1, k); !b.ok()) return b;
    return s->Run();
  }

  ScopedTempDir dir_;
  std::unique_ptr<Database> db_;
};

TEST_F(SqliteTest, TransactionRollsBackUnlessCommitted) {
  {
    Transaction txn(db_.get());
    ASSERT_THAT(txn.Begin(), IsOk());
    ASSERT_THAT(Insert(*db_, 1), IsOk());
    EXPECT_EQ(Count(*db_), 1);
  }  // No Commit.
  EXPECT_FALSE(db_->InTransaction());
  EXPECT_EQ(Count(*db_), 0);
}

TEST_F(SqliteTest, CommittedTransactionIsVisibleToAnotherConnection) {
  Transaction txn(db_.get());
  ASSERT_THAT(txn.Begin(Transaction::Mode::kImmediate), IsOk());
  ASSERT_THAT(Insert(*db_, 1), IsOk());
  ASSERT_THAT(txn.Commit(), IsOk());
  EXPECT_FALSE(txn.is_open());

  auto other = Database::Open(dir_.File("test.db"), DatabaseOptions());
  ASSERT_THAT(other, IsOk());
  EXPECT_EQ(Count(**other), 1);
}

TEST_F(SqliteTest, FailedCommitRollsBackAndReportsTheConstraint) {
  ASSERT_THAT(db_->Execute("CREATE TABLE parent (id INTEGER PRIMARY KEY);"
                           "CREATE TABLE child (p INTEGER REFERENCES parent (id) "
                           "DEFERRABLE INITIALLY DEFERRED)"),
              IsOk());
  Transaction txn(db_.get());
  ASSERT_THAT(txn.Begin(), IsOk());
  ASSERT_THAT(db_->Execute("INSERT INTO child (p) VALUES (7)"), IsOk());
  EXPECT_THAT(txn.Commit(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                     HasSubstr("FOREIGN KEY constraint failed")));
  EXPECT_FALSE(db_->InTransaction());
  auto s = db_->Prepare("SELECT count(*) FROM child");
  ASSERT_THAT(s, IsOk());
  ASSERT_THAT(s->Step(), IsOk());
  EXPECT_EQ(s->ColumnInt64(0), 0);
}

TEST_F(SqliteTest, SavepointRollbackUndoesOnlyItsOwnChanges) {
  Transaction txn(db_.get());
  ASSERT_THAT(txn.Begin(), IsOk());
  ASSERT_THAT(Insert(*db_, 1), IsOk());
  {
    Savepoint savepoint(db_.get(), "inner");
    ASSERT_THAT(savepoint.Begin(), IsOk());
    ASSERT_THAT(Insert(*db_, 2), IsOk());
  }  // Rolled back.
  {
    Savepoint savepoint(db_.get(), "inner");
    ASSERT_THAT(savepoint.Begin(), IsOk());
    ASSERT_THAT(Insert(*db_, 3), IsOk());
    ASSERT_THAT(savepoint.Release(), IsOk());
  }
  ASSERT_THAT(txn.Commit(), IsOk());

  auto s = db_->Prepare("SELECT group_concat(k) FROM (SELECT k FROM t ORDER BY k)");
  ASSERT_THAT(s, IsOk());
  ASSERT_THAT(s->Step(), IsOk());
  EXPECT_EQ(s->ColumnText(0), "1,3");
}

TEST_F(SqliteTest, BindAndColumnRoundTripEveryType) {
  ASSERT_THAT(db_->Execute("CREATE TABLE v (i INTEGER, d REAL, t TEXT, b BLOB, n)"), IsOk());
  const std::string text("caf\xC3\xA9 with \0 inside", 20);
  const std::string blob("\x00\x01\xFF\x00", 4);
  {
    auto s = db_->Prepare("INSERT INTO v VALUES (?, ?, ?, ?, ?)");
    ASSERT_THAT(s, IsOk());
    ASSERT_THAT(s->BindInt64(1, std::numeric_limits<int64_t>::min()), IsOk());
    ASSERT_THAT(s->BindDouble(2, 0.1), IsOk());
    ASSERT_THAT(s->BindText(3, text), IsOk());
    ASSERT_THAT(s->BindBlob(4, blob), IsOk());
    ASSERT_THAT(s->BindNull(5), IsOk());
    ASSERT_THAT(s->Run(), IsOk());
    // Reset clears the bindings: the second row is all NULL.
    ASSERT_THAT(s->Reset(), IsOk());
    ASSERT_THAT(s->Run(), IsOk());
  }
  auto s = db_->Prepare("SELECT i, d, t, b, n FROM v ORDER BY rowid");
  ASSERT_THAT(s, IsOk());
  ASSERT_THAT(s->Step(), IsOkAndHolds(true));
  EXPECT_EQ(s->ColumnCount(), 5);
  EXPECT_EQ(s->ColumnInt64(0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(s->ColumnDouble(1), 0.1);
  EXPECT_EQ(s->ColumnText(2), text);
  EXPECT_EQ(s->ColumnBlob(3), blob);
  EXPECT_EQ(s->ColumnBlobView(3), absl::string_view(blob));
  EXPECT_TRUE(s->ColumnIsNull(4));
  EXPECT_FALSE(s->ColumnIsNull(0));
  ASSERT_THAT(s->Step(), IsOkAndHolds(true));
  EXPECT_TRUE(s->ColumnIsNull(0));
  EXPECT_TRUE(s->ColumnIsNull(2));
  ASSERT_THAT(s->Step(), IsOkAndHolds(false));
}

TEST_F(SqliteTest, EmptyTextAndBlobBindAsEmptyNotNull) {
  auto s = db_->Prepare("SELECT ? IS NULL, ? IS NULL, length(?)");
  ASSERT_THAT(s, IsOk());
  ASSERT_THAT(s->BindText(1, ""), IsOk());
  ASSERT_THAT(s->BindBlob(2, ""), IsOk());
  ASSERT_THAT(s->BindText(3, ""), IsOk());
  ASSERT_THAT(s->Step(), IsOkAndHolds(true));
  EXPECT_EQ(s->ColumnInt64(0), 0);
  EXPECT_EQ(s->ColumnInt64(1), 0);
  EXPECT_EQ(s->ColumnInt64(2), 0);
}

TEST_F(SqliteTest, SyntaxErrorNamesTheSqlAndSqlitesMessage) {
  auto s = db_->Prepare("SELEC k FROM t");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInternal,
                          AllOf(HasSubstr("syntax error"), HasSubstr("SELEC k FROM t"))));
  EXPECT_THAT(db_->Execute("SELECT nope FROM t"),
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("no such column: nope"), HasSubstr("SELECT nope FROM t"))));
}

TEST_F(SqliteTest, StepErrorNamesTheSql) {
  ASSERT_THAT(Insert(*db_, 1), IsOk());
  EXPECT_THAT(Insert(*db_, 1), StatusIs(absl::StatusCode::kAlreadyExists,
                                        AllOf(HasSubstr("UNIQUE constraint failed: t.k"),
                                              HasSubstr("INSERT INTO t (k, v) VALUES (?, 'x')"))));
}

TEST_F(SqliteTest, BindOutOfRangeIsInvalidArgument) {
  auto s = db_->Prepare("SELECT ?");
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(s->BindInt64(2, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("SELECT ?")));
}

TEST_F(SqliteTest, PrepareRejectsTrailingStatements) {
  EXPECT_THAT(db_->Prepare("SELECT 1; SELECT 2"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("one statement")));
  EXPECT_THAT(db_->Prepare("SELECT 1;  "), IsOk());
}

TEST_F(SqliteTest, RunFailsOnAStatementThatReturnsRows) {
  auto s = db_->Prepare("SELECT 1");
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(s->Run(), StatusIs(absl::StatusCode::kInternal));
}

TEST_F(SqliteTest, CachedStatementIsReusedAndResetBetweenUses) {
  ASSERT_THAT(Insert(*db_, 1), IsOk());
  ASSERT_THAT(Insert(*db_, 2), IsOk());
  auto first = db_->GetCachedStatement("SELECT k FROM t ORDER BY k");
  ASSERT_THAT(first, IsOk());
  ASSERT_THAT((*first)->Step(), IsOkAndHolds(true));
  EXPECT_EQ((*first)->ColumnInt64(0), 1);
  // Abandoned after one row; the next Get starts over.
  auto second = db_->GetCachedStatement("SELECT k FROM t ORDER BY k");
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(*first, *second);
  ASSERT_THAT((*second)->Step(), IsOkAndHolds(true));
  EXPECT_EQ((*second)->ColumnInt64(0), 1);
}

TEST_F(SqliteTest, WalReaderKeepsItsSnapshotWhileTheWriterCommits) {
  ASSERT_THAT(Insert(*db_, 1), IsOk());
  auto reader = Database::Open(dir_.File("test.db"), DatabaseOptions());
  ASSERT_THAT(reader, IsOk());
  Transaction read(reader->get());
  ASSERT_THAT(read.Begin(), IsOk());
  EXPECT_EQ(Count(**reader), 1);  // The snapshot starts here.

  // The writer is not blocked by the open read transaction...
  Transaction write(db_.get());
  ASSERT_THAT(write.Begin(Transaction::Mode::kImmediate), IsOk());
  ASSERT_THAT(Insert(*db_, 2), IsOk());
  ASSERT_THAT(write.Commit(), IsOk());
  // ...and the reader still sees its snapshot until it ends.
  EXPECT_EQ(Count(**reader), 1);
  ASSERT_THAT(read.Rollback(), IsOk());
  EXPECT_EQ(Count(**reader), 2);
}

TEST_F(SqliteTest, QueryOnlyConnectionRefusesWrites) {
  DatabaseOptions options;
  options.query_only = true;
  auto reader = Database::Open(dir_.File("test.db"), options);
  ASSERT_THAT(reader, IsOk());
  EXPECT_EQ(Count(**reader), 0);
  EXPECT_THAT(Insert(**reader, 1), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(SqliteTest, ForeignKeysAreEnforced) {
  ASSERT_THAT(db_->Execute("CREATE TABLE parent (id INTEGER PRIMARY KEY);"
                           "CREATE TABLE child (p INTEGER REFERENCES parent (id))"),
              IsOk());
  EXPECT_THAT(
      db_->Execute("INSERT INTO child (p) VALUES (7)"),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("FOREIGN KEY constraint failed")));
}

TEST(SqliteOpenTest, NonDatabaseFileIsInvalidArgument) {
  ScopedTempDir dir;
  const std::string path = dir.File("garbage.db");
  {
    std::ofstream out(path);
    for (int i = 0; i < 100; ++i) out << "this is not a database, just some text\n";
  }
  EXPECT_THAT(Database::Open(path, DatabaseOptions()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("file is not a database"), HasSubstr(path))));
}

TEST(SqliteOpenTest, MissingDirectoryIsUnavailable) {
  ScopedTempDir dir;
  const std::string path = dir.File("no/such/dir/x.db");
  EXPECT_THAT(Database::Open(path, DatabaseOptions()),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr(path)));
}

TEST(SqliteOpenTest, MissingFileWithoutCreateIsUnavailable) {
  ScopedTempDir dir;
  DatabaseOptions options;
  options.create_if_missing = false;
  EXPECT_THAT(Database::Open(dir.File("missing.db"), options),
              StatusIs(absl::StatusCode::kUnavailable));
}

TEST(SqliteOpenTest, InMemoryDatabaseCannotUseWal) {
  // Run in an empty directory: opening must leave no file named ":memory:".
  ScopedTempDir dir;
  char previous[4096];
  ASSERT_NE(::getcwd(previous, sizeof(previous)), nullptr);
  ASSERT_EQ(::chdir(dir.path().c_str()), 0);
  EXPECT_THAT(Database::Open(":memory:", DatabaseOptions()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("WAL")));
  struct stat st;
  EXPECT_NE(::stat(":memory:", &st), 0);
  ASSERT_EQ(::chdir(previous), 0);
}

TEST(SqliteStatusTest, MapsResultCodesToAbslCodes) {
  EXPECT_THAT(StatusFromSqlite(0, "x"), IsOk());
  EXPECT_THAT(StatusFromSqlite(101, "x"), IsOk());  // SQLITE_DONE
  EXPECT_THAT(StatusFromSqlite(5, "x"), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(StatusFromSqlite(26, "x"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(StatusFromSqlite(11, "x"), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(StatusFromSqlite(13, "x"), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(StatusFromSqlite(1, "x"), StatusIs(absl::StatusCode::kInternal, "x"));
}

}  // namespace
}  // namespace sql
}  // namespace store
}  // namespace understudy
