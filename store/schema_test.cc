#include "store/schema.h"

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/sqlite.h"
#include "store/test_util.h"

namespace understudy {
namespace store {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class SchemaTest : public ::testing::Test {
 protected:
  std::unique_ptr<sql::Database> OpenDb() {
    auto db = sql::Database::Open(dir_.File("store.db"), sql::DatabaseOptions());
    EXPECT_THAT(db, IsOk());
    return db.ok() ? std::move(db).value() : nullptr;
  }

  // Whether `table` exists in `db`.
  bool HasTable(sql::Database& db, const std::string& table) {
    auto s = db.Prepare("SELECT count(*) FROM sqlite_master WHERE name = ?");
    EXPECT_THAT(s, IsOk());
    EXPECT_THAT(s->BindText(1, table), IsOk());
    EXPECT_THAT(s->Step(), IsOkAndHolds(true));
    return s->ColumnInt64(0) == 1;
  }

  ScopedTempDir dir_;
};

TEST_F(SchemaTest, FreshDatabaseGetsTheCurrentVersionAndTables) {
  auto db = OpenDb();
  ASSERT_NE(db, nullptr);
  EXPECT_THAT(SchemaVersion(*db), IsOkAndHolds(0));
  ASSERT_THAT(Migrate(*db), IsOk());
  EXPECT_THAT(SchemaVersion(*db), IsOkAndHolds(CurrentSchemaVersion()));
  EXPECT_EQ(CurrentSchemaVersion(), 4);
  for (const char* table : {"sessions", "exchanges", "runs", "exchanges_by_agent", "trace_runs",
                            "trace_names", "trace_events", "trace_refs",
                            "trace_events_by_kind"}) {
    EXPECT_TRUE(HasTable(*db, table)) << table;
  }
  for (const char* gone : {"events", "events_by_kind", "events_by_agent"}) {
    EXPECT_FALSE(HasTable(*db, gone)) << gone;
  }
}

TEST_F(SchemaTest, MigratingTwiceIsANoOp) {
  auto db = OpenDb();
  ASSERT_NE(db, nullptr);
  ASSERT_THAT(Migrate(*db), IsOk());
  ASSERT_THAT(db->Execute("INSERT INTO runs (id, body) VALUES ('r', x'')"), IsOk());
  ASSERT_THAT(Migrate(*db), IsOk());
  auto s = db->Prepare("SELECT count(*) FROM runs");
  ASSERT_THAT(s, IsOk());
  ASSERT_THAT(s->Step(), IsOkAndHolds(true));
  EXPECT_EQ(s->ColumnInt64(0), 1);
}

TEST_F(SchemaTest, NewerUserVersionFailsWithFailedPrecondition) {
  auto db = OpenDb();
  ASSERT_NE(db, nullptr);
  ASSERT_THAT(db->Execute("PRAGMA user_version=99"), IsOk());
  EXPECT_THAT(Migrate(*db), StatusIs(absl::StatusCode::kFailedPrecondition,
                                     AllOf(HasSubstr("schema version 99"), HasSubstr("newer"))));
  EXPECT_THAT(SchemaVersion(*db), IsOkAndHolds(99));
}

TEST_F(SchemaTest, UnversionedDatabaseWithForeignTablesIsRefused) {
  auto db = OpenDb();
  ASSERT_NE(db, nullptr);
  ASSERT_THAT(db->Execute("CREATE TABLE someone_elses (x)"), IsOk());
  EXPECT_THAT(Migrate(*db), StatusIs(absl::StatusCode::kFailedPrecondition,
                                     HasSubstr("belongs to something else")));
  EXPECT_FALSE(HasTable(*db, "sessions"));
}

TEST_F(SchemaTest, GarbageFileFailsWithInvalidArgument) {
  const std::string path = dir_.File("store.db");
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 512; ++i) out << static_cast<char>(i * 7 + 3);
  }
  EXPECT_THAT(sql::Database::Open(path, sql::DatabaseOptions()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("file is not a database")));
}

TEST_F(SchemaTest, MigrationsApplyInOrderFromTheFilesVersion) {
  auto db = OpenDb();
  ASSERT_NE(db, nullptr);
  const std::vector<Migration> v1 = {{1, "CREATE TABLE a (x)"}};
  ASSERT_THAT(Migrate(*db, v1), IsOk());
  ASSERT_THAT(db->Execute("INSERT INTO a VALUES (1)"), IsOk());

  // Version 2 renames a column: it must run on the version-1 file, once.
  const std::vector<Migration> v2 = {{1, "CREATE TABLE a (x)"},
                                     {2, "ALTER TABLE a RENAME COLUMN x TO y; CREATE TABLE b (z)"}};
  ASSERT_THAT(Migrate(*db, v2), IsOk());
  EXPECT_THAT(SchemaVersion(*db), IsOkAndHolds(2));
  EXPECT_TRUE(HasTable(*db, "b"));
  auto s = db->Prepare("SELECT y FROM a");
  ASSERT_THAT(s, IsOk());
  ASSERT_THAT(s->Step(), IsOkAndHolds(true));
  EXPECT_EQ(s->ColumnInt64(0), 1);
}

TEST_F(SchemaTest, FailingMigrationLeavesTheFileAtItsOldVersion) {
  auto db = OpenDb();
  ASSERT_NE(db, nullptr);
  const std::vector<Migration> migrations = {{1, "CREATE TABLE a (x)"},
                                             {2, "CREATE TABLE b (z); THIS IS NOT SQL"}};
  EXPECT_THAT(Migrate(*db, migrations), StatusIs(absl::StatusCode::kInternal,
                                                 AllOf(HasSubstr("migration to schema version 2"),
                                                       HasSubstr("syntax error"))));
  EXPECT_THAT(SchemaVersion(*db), IsOkAndHolds(0));
  EXPECT_FALSE(HasTable(*db, "a"));
  EXPECT_FALSE(HasTable(*db, "b"));
}

TEST_F(SchemaTest, MigrationsMustBeNumberedFromOneWithoutGaps) {
  auto db = OpenDb();
  ASSERT_NE(db, nullptr);
  const std::vector<Migration> gap = {{1, "CREATE TABLE a (x)"}, {3, "CREATE TABLE b (x)"}};
  EXPECT_THAT(Migrate(*db, gap), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(SchemaListTest, ShippedMigrationsAreNumberedFromOne) {
  const std::vector<Migration>& migrations = Migrations();
  ASSERT_FALSE(migrations.empty());
  for (size_t i = 0; i < migrations.size(); ++i) {
    EXPECT_EQ(migrations[i].version, static_cast<int64_t>(i) + 1);
  }
}

}  // namespace
}  // namespace store
}  // namespace understudy
