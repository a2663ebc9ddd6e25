#include "store/retention.h"

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
#include "store/store.h"
#include "store/test_util.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

const absl::Time kNow = absl::FromUnixSeconds(1700000000);

v1::Run MakeRun(const std::string& id, const std::string& session, absl::Duration age,
                v1::RunState state = v1::RUN_STATE_ENDED) {
  v1::Run run;
  run.set_id(id);
  run.set_session(session);
  run.set_session_version(1);
  run.set_mode(v1::RUN_MODE_REPLAY);
  run.set_state(state);
  run.set_trace_level(v1::TRACE_LEVEL_FULL);
  run.set_started_at_micros(absl::ToUnixMicros(kNow - age));
  if (state != v1::RUN_STATE_ACTIVE) run.set_ended_at_micros(run.started_at_micros() + 1000);
  return run;
}

// Two sessions' runs in start order (what Store::ListRuns returns).
std::vector<v1::Run> SomeRuns() {
  return {
      MakeRun("a1", "a", absl::Hours(72)),
      MakeRun("b1", "b", absl::Hours(48)),
      MakeRun("a2", "a", absl::Hours(30), v1::RUN_STATE_FAILED),
      MakeRun("a3", "a", absl::Hours(2)),
      MakeRun("a4", "a", absl::Hours(1), v1::RUN_STATE_ACTIVE),
      MakeRun("b2", "b", absl::Minutes(5)),
  };
}

TEST(SelectRunsTest, NoCriterionSelectsEveryEndedRunButNeverAnActiveOne) {
  EXPECT_THAT(SelectRuns(SomeRuns(), RetentionRule(), kNow),
              ElementsAre("a1", "b1", "a2", "a3", "b2"));
}

TEST(SelectRunsTest, OlderThanComparesTheStartWithNow) {
  RetentionRule rule;
  rule.older_than = absl::Hours(24);
  EXPECT_THAT(SelectRuns(SomeRuns(), rule, kNow), ElementsAre("a1", "b1", "a2"));
  // Exactly as old as the bound: kept.
  rule.older_than = absl::Hours(48);
  EXPECT_THAT(SelectRuns(SomeRuns(), rule, kNow), ElementsAre("a1"));
}

TEST(SelectRunsTest, KeepPerSessionKeepsTheNewestOfEachSession) {
  RetentionRule rule;
  rule.keep_per_session = 1;
  // a3 is a's newest ended run (a4 is active: not counted), b2 is b's.
  EXPECT_THAT(SelectRuns(SomeRuns(), rule, kNow), ElementsAre("a1", "b1", "a2"));
  rule.keep_per_session = 0;
  EXPECT_THAT(SelectRuns(SomeRuns(), rule, kNow), ElementsAre("a1", "b1", "a2", "a3", "b2"));
  rule.keep_per_session = 10;
  EXPECT_THAT(SelectRuns(SomeRuns(), rule, kNow), IsEmpty());
}

// Runs that started in the same microsecond (a load test) still have one
// order: the greater id is the newer.
TEST(SelectRunsTest, TiesInStartTimeAreBrokenByIdSoTheResultIsStable) {
  std::vector<v1::Run> runs = {MakeRun("r-1", "s", absl::Hours(1)),
                               MakeRun("r-3", "s", absl::Hours(1)),
                               MakeRun("r-2", "s", absl::Hours(1))};
  RetentionRule rule;
  rule.keep_per_session = 1;
  EXPECT_THAT(SelectRuns(runs, rule, kNow), ElementsAre("r-1", "r-2"));
}

TEST(SelectRunsTest, RunsWithoutASessionAreOneGroup) {
  std::vector<v1::Run> runs = {MakeRun("x1", "", absl::Hours(3)), MakeRun("x2", "", absl::Hours(2)),
                               MakeRun("s1", "s", absl::Hours(1))};
  RetentionRule rule;
  rule.keep_per_session = 1;
  EXPECT_THAT(SelectRuns(runs, rule, kNow), ElementsAre("x1"));
}

// `--keep 1 --older-than 1d`: old runs go, but never a session's newest.
TEST(SelectRunsTest, CriteriaCombineSoThatARunGoesOnlyWhenEveryOneSelectsIt) {
  std::vector<v1::Run> runs = {MakeRun("old1", "s", absl::Hours(72)),
                               MakeRun("old2", "s", absl::Hours(48)),
                               MakeRun("lone", "t", absl::Hours(48)),
                               MakeRun("new", "s", absl::Hours(1))};
  RetentionRule rule;
  rule.keep_per_session = 2;
  rule.older_than = absl::Hours(24);
  EXPECT_THAT(SelectRuns(runs, rule, kNow), ElementsAre("old1"));
}

TEST(SelectRunsTest, StatesPickWhichRunsAreConsideredActiveOnlyWhenNamed) {
  RetentionRule rule;
  rule.states = {v1::RUN_STATE_FAILED};
  EXPECT_THAT(SelectRuns(SomeRuns(), rule, kNow), ElementsAre("a2"));
  rule.states = {v1::RUN_STATE_ACTIVE};
  EXPECT_THAT(SelectRuns(SomeRuns(), rule, kNow), ElementsAre("a4"));
  rule.states = {v1::RUN_STATE_ACTIVE, v1::RUN_STATE_ENDED, v1::RUN_STATE_FAILED};
  rule.keep_per_session = 1;
  // Now the active a4 is a's newest run, and a3 goes.
  EXPECT_THAT(SelectRuns(SomeRuns(), rule, kNow), ElementsAre("a1", "b1", "a2", "a3"));
}

// The server's bounds are each a limit: breaking either one is enough.
TEST(SelectExpiredRunsTest, EitherBoundExpiresARunActiveRunsNever) {
  RetentionOptions options;
  EXPECT_THAT(SelectExpiredRuns(SomeRuns(), options, kNow), IsEmpty());
  options.keep_runs = 2;
  EXPECT_THAT(SelectExpiredRuns(SomeRuns(), options, kNow), ElementsAre("a1"));
  options.keep_trace_for = absl::Hours(36);
  EXPECT_THAT(SelectExpiredRuns(SomeRuns(), options, kNow), ElementsAre("a1", "b1"));
  options.keep_runs.reset();
  options.keep_trace_for = absl::Minutes(1);
  EXPECT_THAT(SelectExpiredRuns(SomeRuns(), options, kNow),
              ElementsAre("a1", "b1", "a2", "a3", "b2"));
}

// The store side: a real database, the runs' events, the space.
class PruneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options;
    options.path = dir_.File("prune.db");
    options.clock = &clock_;
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  // A run of `session` that started `age` before the clock's now, with
  // `events` custom trace events of ~2 KB each.
  void AddRun(const std::string& id, const std::string& session, absl::Duration age,
              int events, v1::RunState state = v1::RUN_STATE_ENDED) {
    v1::Run run = MakeRun(id, session, absl::ZeroDuration(), state);
    run.set_started_at_micros(absl::ToUnixMicros(clock_.Now() - age));
    ASSERT_THAT(store_->SaveRun(run), IsOk());
    store_->AppendEvents(NoteEvents(id, events, 2000));
    ASSERT_THAT(store_->Flush(), IsOk());
  }

  std::vector<std::string> StoredIds() { return RunIds(store_->ListRuns()); }

  ScopedTempDir dir_;
  FakeEnv clock_;
  std::unique_ptr<Store> store_;
};

TEST_F(PruneTest, DeletesExpiredRunsWithTheirEventsAndGivesTheSpaceBack) {
  AddRun("old", "s", absl::Hours(48), 400);
  AddRun("mid", "s", absl::Hours(2), 10);
  AddRun("new", "s", absl::Hours(1), 10);
  AddRun("live", "s", absl::Hours(72), 10, v1::RUN_STATE_ACTIVE);
  RetentionOptions options;
  options.keep_runs = 1;
  options.keep_trace_for = absl::Hours(24);
  absl::StatusOr<PruneResult> pass = PruneExpiredRuns(*store_, options, clock_.Now(), 16);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_THAT(pass->deleted, ElementsAre("old", "mid"));
  // 400 events of 2 KB: several steps of 16 pages each.
  EXPECT_GT(pass->bytes_reclaimed, 400 * 1024);
  EXPECT_THAT(StoredIds(), ElementsAre("live", "new"));
  EXPECT_THAT(store_->CountEvents("old"), IsOkAndHolds(0));
  EXPECT_THAT(store_->CountEvents("live"), IsOkAndHolds(10));

  // Nothing left to do: nothing deleted, nothing reclaimed.
  pass = PruneExpiredRuns(*store_, options, clock_.Now(), 16);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_THAT(pass->deleted, IsEmpty());
  EXPECT_EQ(pass->bytes_reclaimed, 0);
}

TEST_F(PruneTest, WithoutBoundsNothingIsTouched) {
  AddRun("old", "s", absl::Hours(48), 1);
  absl::StatusOr<PruneResult> pass = PruneExpiredRuns(*store_, RetentionOptions(), clock_.Now(), 16);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_THAT(pass->deleted, IsEmpty());
  EXPECT_THAT(StoredIds(), ElementsAre("old"));
}

// The first pass runs at once; later ones every interval, seeing runs that
// ended since, with ages measured on the pruner's clock.
TEST_F(PruneTest, PrunerPassesAtStartThenEveryInterval) {
  AddRun("r1", "s", absl::Hours(3), 1);
  AddRun("r2", "s", absl::Hours(2), 1);
  PrunerOptions options;
  options.retention.keep_runs = 1;
  options.interval = absl::Milliseconds(10);
  options.clock = &clock_;
  std::unique_ptr<Pruner> pruner = Pruner::Start(store_.get(), options);
  ASSERT_TRUE(pruner->AwaitPasses(1, absl::Seconds(30)));
  EXPECT_THAT(StoredIds(), ElementsAre("r2"));

  AddRun("r3", "s", absl::Hours(1), 1);
  // A pass in progress may have listed the runs before r3 was saved; the
  // one after it began later.
  ASSERT_TRUE(pruner->AwaitPasses(pruner->passes() + 2, absl::Seconds(30)));
  EXPECT_THAT(StoredIds(), ElementsAre("r3"));
  pruner->Stop();
  pruner->Stop();  // idempotent
}

TEST_F(PruneTest, AStoppedPrunerStartsNoPass) {
  AddRun("r1", "s", absl::Hours(3), 1);
  PrunerOptions options;
  options.retention.keep_runs = 0;
  options.interval = absl::Hours(1);
  std::unique_ptr<Pruner> pruner = Pruner::Start(store_.get(), options);
  ASSERT_TRUE(pruner->AwaitPasses(1, absl::Seconds(30)));
  EXPECT_THAT(StoredIds(), IsEmpty());
  AddRun("r2", "s", absl::Hours(2), 1);
  // Stop returns without waiting out the hour, and no pass follows.
  const absl::Time before = absl::Now();
  pruner->Stop();
  EXPECT_LT(absl::Now() - before, absl::Seconds(30));
  EXPECT_FALSE(pruner->AwaitPasses(2, absl::ZeroDuration()));
  EXPECT_THAT(StoredIds(), ElementsAre("r2"));
}

}  // namespace
}  // namespace store
}  // namespace understudy
