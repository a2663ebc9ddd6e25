#include "service/call_tracker.h"

#include <thread>

#include "gtest/gtest.h"

namespace understudy {
namespace service {
namespace {

TEST(CallTrackerTest, DrainRefusesNewCallsAndReturnsOnceInFlightOnesEnd) {
  CallTracker tracker;
  ASSERT_TRUE(tracker.Begin());
  std::thread ender([&] {
    // Ends the call only once Drain is refusing new ones.
    while (tracker.Begin()) tracker.End();
    tracker.End();
  });
  EXPECT_TRUE(tracker.Drain(absl::Now() + absl::Seconds(10)));
  ender.join();
  EXPECT_FALSE(tracker.Begin());
}

TEST(CallTrackerTest, DrainGivesUpAtTheDeadline) {
  CallTracker tracker;
  TrackedCall call(&tracker);
  ASSERT_TRUE(call.admitted());
  EXPECT_FALSE(tracker.Drain(absl::Now() + absl::Milliseconds(20)));
  TrackedCall late(&tracker);
  EXPECT_FALSE(late.admitted());
}

}  // namespace
}  // namespace service
}  // namespace understudy
