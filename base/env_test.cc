#include "base/env.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace {

TEST(TimerQueueTest, RunsCallbacksInTimeOrderNotBeforeTheirTime) {
  TimerQueue scheduler;
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

TEST(TimerQueueTest, PastTimesRunAtOnceInTheOrderScheduled) {
  TimerQueue scheduler;
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

TEST(TimerQueueTest, DestructionDropsWhatIsNotDue) {
  bool ran = false;
  {
    TimerQueue scheduler;
    scheduler.RunAt(absl::Now() + absl::Hours(1), [&] { ran = true; });
  }
  EXPECT_FALSE(ran);
}

TEST(FakeEnvTest, TimeMovesOnlyWhenTold) {
  FakeEnv env;
  const absl::Time start = env.Now();
  EXPECT_EQ(env.Now(), start);
  env.Advance(absl::Seconds(3));
  EXPECT_EQ(env.Now(), start + absl::Seconds(3));
  env.SleepFor(absl::Seconds(2));
  EXPECT_EQ(env.Now(), start + absl::Seconds(5));
}

TEST(FakeEnvTest, CallbacksRunWhenTimePassesThemInTimeOrderAtTheirTime) {
  FakeEnv env;
  const absl::Time start = env.Now();
  std::vector<int> order;
  std::vector<absl::Time> at;
  for (int i : {3, 1, 2}) {
    env.ScheduleAfter(absl::Seconds(i), [&, i] {
      order.push_back(i);
      at.push_back(env.Now());
    });
  }
  env.Advance(absl::Milliseconds(1500));
  EXPECT_THAT(order, ::testing::ElementsAre(1));
  EXPECT_EQ(env.pending(), 2u);
  env.Advance(absl::Seconds(10));
  EXPECT_THAT(order, ::testing::ElementsAre(1, 2, 3));
  EXPECT_THAT(at, ::testing::ElementsAre(start + absl::Seconds(1), start + absl::Seconds(2),
                                         start + absl::Seconds(3)));
  EXPECT_EQ(env.Now(), start + absl::Milliseconds(11500));
}

TEST(FakeEnvTest, ACallbackMayScheduleAnotherWithinTheSameAdvance) {
  FakeEnv env;
  int ran = 0;
  env.ScheduleAfter(absl::Seconds(1), [&] {
    ++ran;
    env.ScheduleAfter(absl::Seconds(1), [&] { ++ran; });
    env.ScheduleAfter(absl::Seconds(5), [&] { ++ran; });
  });
  env.Advance(absl::Seconds(3));
  EXPECT_EQ(ran, 2);
  EXPECT_EQ(env.pending(), 1u);
}

TEST(EnvTest, DefaultRunsScheduledCallbacksOnRealTime) {
  absl::Mutex mu;
  bool ran = false;
  Env::Default()->ScheduleAfter(absl::Milliseconds(1), [&] {
    absl::MutexLock lock(&mu);
    ran = true;
  });
  absl::MutexLock lock(&mu);
  EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(&ran), absl::Seconds(10)));
}

}  // namespace
}  // namespace understudy
