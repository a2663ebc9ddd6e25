// The store's run administration: listing runs, counting their events,
// deleting them, and giving the space back (what `understudy runs` and the
// server's retention are built on).
#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/env.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/runs_test_util.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store/test_util.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class RunsTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  void Open() {
    store_.reset();
    StoreOptions options;
    options.path = path_;
    options.clock = &clock_;
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  v1::Run SaveRun(const std::string& id, int64_t started_at_micros,
                  v1::RunState state = v1::RUN_STATE_ENDED) {
    v1::Run run;
    run.set_id(id);
    run.set_session("golden");
    run.set_session_version(1);
    run.set_mode(v1::RUN_MODE_REPLAY);
    run.set_state(state);
    run.set_trace_level(v1::TRACE_LEVEL_FULL);
    run.set_started_at_micros(started_at_micros);
    EXPECT_THAT(store_->SaveRun(run), IsOk());
    return run;
  }

  // `n` custom events of ~`bytes` each, queued (not flushed).
  void QueueEvents(const std::string& run, int n, size_t bytes = 100) {
    store_->AppendEvents(NoteEvents(run, n, bytes));
  }

  std::vector<std::string> Ids() { return RunIds(store_->ListRuns()); }

  int64_t FileBytes() {
    struct stat st {};
    return ::stat(path_.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
  }

  ScopedTempDir dir_;
  const std::string path_ = dir_.File("runs.db");
  FakeEnv clock_;
  std::unique_ptr<Store> store_;
};

TEST_F(RunsTest, ListRunsOrdersByStartThenIdWhateverTheSaveOrder) {
  SaveRun("c", 300);
  SaveRun("b", 100);
  SaveRun("a", 300);
  SaveRun("d", 200, v1::RUN_STATE_ACTIVE);
  EXPECT_THAT(Ids(), ElementsAre("b", "d", "a", "c"));
  absl::StatusOr<std::vector<v1::Run>> runs = store_->ListRuns();
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ((*runs)[1].state(), v1::RUN_STATE_ACTIVE);
  EXPECT_EQ((*runs)[0].trace_level(), v1::TRACE_LEVEL_FULL);
}

TEST_F(RunsTest, ListRunsOfAnEmptyStoreIsEmpty) { EXPECT_THAT(Ids(), IsEmpty()); }

TEST_F(RunsTest, CountEventsCountsCommittedEventsOfThatRunOnly) {
  SaveRun("a", 1);
  SaveRun("b", 2);
  QueueEvents("a", 7);
  QueueEvents("b", 3);
  ASSERT_THAT(store_->Flush(), IsOk());
  EXPECT_THAT(store_->CountEvents("a"), IsOkAndHolds(7));
  EXPECT_THAT(store_->CountEvents("b"), IsOkAndHolds(3));
  EXPECT_THAT(store_->CountEvents("nope"), IsOkAndHolds(0));
}

TEST_F(RunsTest, DeleteRunsRemovesRunsSummariesAndEventsAndCountsTheKnownOnes) {
  SaveRun("a", 1);
  SaveRun("b", 2);
  SaveRun("c", 3);
  v1::RunSummary summary;
  summary.mutable_run()->set_id("a");
  summary.mutable_run()->set_state(v1::RUN_STATE_ENDED);
  ASSERT_THAT(store_->SaveRunSummary(summary), IsOk());
  QueueEvents("a", 5);
  QueueEvents("c", 2);
  ASSERT_THAT(store_->Flush(), IsOk());

  EXPECT_THAT(store_->DeleteRuns({"a", "nope", "b"}), IsOkAndHolds(2));
  EXPECT_THAT(Ids(), ElementsAre("c"));
  EXPECT_THAT(store_->GetRun("a"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(store_->GetRunSummary("a"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(store_->CountEvents("a"), IsOkAndHolds(0));
  EXPECT_THAT(store_->CountEvents("c"), IsOkAndHolds(2));
  // Gone for good: deleting again finds nothing.
  EXPECT_THAT(store_->DeleteRuns({"a", "b"}), IsOkAndHolds(0));
  EXPECT_THAT(store_->DeleteRuns({}), IsOkAndHolds(0));
}

// An event still queued for the writer when its run is deleted must not be
// committed afterwards as an orphan.
TEST_F(RunsTest, DeleteRunsAlsoDeletesEventsStillQueued) {
  SaveRun("a", 1);
  QueueEvents("a", 50);
  EXPECT_THAT(store_->DeleteRuns({"a"}), IsOkAndHolds(1));
  ASSERT_THAT(store_->Flush(), IsOk());
  EXPECT_THAT(store_->CountEvents("a"), IsOkAndHolds(0));
}

TEST_F(RunsTest, DeleteRunsSurvivesReopening) {
  SaveRun("a", 1);
  SaveRun("b", 2);
  ASSERT_THAT(store_->DeleteRuns({"a"}), IsOkAndHolds(1));
  Open();
  EXPECT_THAT(Ids(), ElementsAre("b"));
}

TEST_F(RunsTest, ReclaimSpaceShrinksTheFileAfterDeletes) {
  SaveRun("big", 1);
  SaveRun("small", 2);
  QueueEvents("big", 1000, 1000);
  QueueEvents("small", 1);
  ASSERT_THAT(store_->Flush(), IsOk());
  Open();  // checkpoints the WAL into the file
  const int64_t full = FileBytes();
  ASSERT_GT(full, 1000 * 1000);

  ASSERT_THAT(store_->DeleteRuns({"big"}), IsOkAndHolds(1));
  // A bounded step returns at most that many pages.
  absl::StatusOr<int64_t> step = store_->ReclaimSpace(10);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_GT(*step, 0);
  EXPECT_LE(*step, 10 * 65536);
  absl::StatusOr<int64_t> rest = store_->ReclaimSpace(0);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_GT(*step + *rest, 900 * 1000);
  EXPECT_THAT(store_->ReclaimSpace(0), IsOkAndHolds(0));
  Open();
  EXPECT_LT(FileBytes(), full - 900 * 1000);
  EXPECT_THAT(store_->CountEvents("small"), IsOkAndHolds(1));
}

// A store made before incremental vacuum existed gives nothing back
// incrementally; one full VACUUM does, and sets it up for the next time.
TEST_F(RunsTest, AFullVacuumConvertsAStoreWithoutIncrementalVacuum) {
  SaveRun("a", 1);
  SaveRun("b", 2);
  QueueEvents("a", 500, 1000);
  ASSERT_THAT(store_->Flush(), IsOk());
  store_.reset();
  {
    sql::DatabaseOptions options;
    options.create_if_missing = false;
    absl::StatusOr<std::unique_ptr<sql::Database>> db = sql::Database::Open(path_, options);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_THAT((*db)->Execute("PRAGMA auto_vacuum=NONE"), IsOk());
    ASSERT_THAT((*db)->Execute("VACUUM"), IsOk());
  }
  Open();
  ASSERT_THAT(store_->DeleteRuns({"a"}), IsOkAndHolds(1));
  EXPECT_THAT(store_->ReclaimSpace(0), IsOkAndHolds(0));
  absl::StatusOr<int64_t> full = store_->ReclaimSpace(0, /*full=*/true);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_GT(*full, 400 * 1000);
  EXPECT_THAT(Ids(), ElementsAre("b"));

  // From now on incremental vacuum works.
  SaveRun("c", 3);
  QueueEvents("c", 500, 1000);
  ASSERT_THAT(store_->Flush(), IsOk());
  ASSERT_THAT(store_->DeleteRuns({"c"}), IsOkAndHolds(1));
  absl::StatusOr<int64_t> incremental = store_->ReclaimSpace(0);
  ASSERT_TRUE(incremental.ok()) << incremental.status();
  EXPECT_GT(*incremental, 400 * 1000);
}

}  // namespace
}  // namespace store
}  // namespace understudy
