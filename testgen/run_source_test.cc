#include "testgen/run_source.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/store.h"
#include "testgen/run_source_test_util.h"

namespace understudy {
namespace testgen {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST_F(RunSourceTest, ARunIdGivesThatRunWithItsSummary) {
  absl::StatusOr<RunData> run = LoadRun(*store_, "run-b");
  ASSERT_THAT(run, IsOk());
  EXPECT_EQ(run->run, "run-b");
  EXPECT_EQ(run->session, "golden");
  EXPECT_EQ(run->session_version, 1);
  EXPECT_THAT(Agents(*run), ElementsAre("1 run_started run-b", "2 exchange run-b",
                                        "3 run_ended run-b"));
  ASSERT_TRUE(run->summary.has_value());
  ASSERT_EQ(run->summary->unconsumed_size(), 1);
  EXPECT_EQ(run->summary->unconsumed(0).seq(), 4);
}

TEST_F(RunSourceTest, AnActiveRunHasNoSummary) {
  absl::StatusOr<RunData> run = LoadRun(*store_, "solo");
  ASSERT_THAT(run, IsOk());
  EXPECT_EQ(run->session, "");
  EXPECT_EQ(run->events.size(), 3u);
  EXPECT_FALSE(run->summary.has_value());
}

TEST_F(RunSourceTest, ASessionGivesItsLatestRun) {
  absl::StatusOr<RunData> latest = LoadRun(*store_, "golden");
  ASSERT_THAT(latest, IsOk());
  EXPECT_EQ(latest->run, "run-a");
  EXPECT_EQ(latest->session_version, 2);
  EXPECT_FALSE(latest->summary.has_value()) << "ended, but no summary was stored";

  absl::StatusOr<RunData> first = LoadRun(*store_, "golden@1");
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(first->run, "run-b");
}

TEST_F(RunSourceTest, UnknownRefsAreNotFound) {
  EXPECT_THAT(LoadRun(*store_, "nope"),
              StatusIs(absl::StatusCode::kNotFound, "no run or session \"nope\""));
  EXPECT_THAT(LoadRun(*store_, "golden@7"),
              StatusIs(absl::StatusCode::kNotFound, "no run or session \"golden@7\""));
  EXPECT_THAT(LoadRun(*store_, "golden@x"),
              StatusIs(absl::StatusCode::kNotFound, "no run or session \"golden@x\""));
  EXPECT_THAT(LoadRun(*store_, "unused"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("session \"unused\" has no runs")));
  EXPECT_THAT(LoadRun(*store_, ""), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace testgen
}  // namespace understudy
