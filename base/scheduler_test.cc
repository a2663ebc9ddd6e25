#include "base/scheduler.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace {

TEST(SchedulerTest, RunsCallbacksInTimeOrderNotBeforeTheirTime) {
  Scheduler scheduler;
  absl::Mutex mu;
  std::vector<int> order;
  std::vector<absl::Time> ran;
  const absl::Time start = absl::Now();
  for (int i : {3, 1, 2}) {
    scheduler.RunAt(start + absl::Milliseconds(20 * i), [&, i] {
      absl::MutexLock lock(&mu);
      order.push_back(i);
      ran.push_back(absl::Now());
    });
  }
  absl::MutexLock lock(&mu);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return order.size() == 3; };
  ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(10)));
  EXPECT_THAT(order, ::testing::ElementsAre(1, 2, 3));
  for (int i = 0; i < 3; ++i) EXPECT_GE(ran[i], start + absl::Milliseconds(20 * (i + 1)));
}

TEST(SchedulerTest, PastTimesRunAtOnceInTheOrderScheduled) {
  Scheduler scheduler;
  absl::Mutex mu;
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) {
    scheduler.RunAt(absl::InfinitePast(), [&, i] {
      absl::MutexLock lock(&mu);
      order.push_back(i);
    });
  }
  absl::MutexLock lock(&mu);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return order.size() == 5; };
  ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(10)));
  EXPECT_THAT(order, ::testing::ElementsAre(0, 1, 2, 3, 4));
}

TEST(SchedulerTest, DestructionDropsWhatIsNotDue) {
  bool ran = false;
  {
    Scheduler scheduler;
    scheduler.RunAt(absl::Now() + absl::Hours(1), [&] { ran = true; });
  }
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace understudy
