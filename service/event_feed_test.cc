#include "service/event_feed.h"

#include <atomic>
#include <memory>
#include <string>

#include "base/status_matchers.h"
#include "engine/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/run_fixture_test_util.h"
#include "store/store.h"

namespace understudy {
namespace service {
namespace {

using ::testing::ElementsAre;
using ::testing::Property;

class EventFeedTest : public RunFixture {
 protected:
  EventFeed::Options Bounded(size_t max_bytes) {
    EventFeed::Options options;
    options.max_bytes = max_bytes;
    options.total_bytes = &total_;
    options.max_total_bytes = 1 << 20;
    return options;
  }

  // Emits a custom event of `kind` whose attribute holds `bytes` bytes.
  void Emit(const std::string& kind, size_t bytes = 10) {
    v1::TraceEvent event;
    event.set_kind(kind);
    (*event.mutable_attributes())["v"] = std::string(bytes, 'v');
    engine::CallInfo call;
    call.run = run_;
    ASSERT_THAT(engine_->Emit(call, std::move(event)).status(), IsOk());
  }

  std::atomic<size_t> total_{0};
};

TEST_F(EventFeedTest, DeliversTheRunsEventsInOrderFromFirstSeqThenTheEnd) {
  absl::StatusOr<std::unique_ptr<EventFeed>> feed =
      EventFeed::Subscribe(engine_.get(), run_, Bounded(1 << 20));
  ASSERT_THAT(feed.status(), IsOk());
  const int64_t first = (*feed)->first_seq();
  EXPECT_GT(first, 1);  // run_started is before it, in the store
  Emit("custom.a");
  Emit("custom.b");
  EventFeed::Batch batch = (*feed)->Take();
  EXPECT_THAT(batch.events(), ElementsAre(Property(&v1::TraceEvent::seq, first),
                                          Property(&v1::TraceEvent::seq, first + 1)));
  EXPECT_EQ(batch.events()[1].kind(), "custom.b");
  EXPECT_FALSE(batch.ended());
  EXPECT_FALSE((*feed)->ready());
  ASSERT_THAT(engine_->EndRun(run_).status(), IsOk());
  EventFeed::Batch last = (*feed)->Wait(absl::Seconds(10));
  EXPECT_TRUE(last.ended());
  ASSERT_FALSE(last.events().empty());
  EXPECT_EQ(last.events().back().kind(), "run_ended");
}

TEST_F(EventFeedTest, UnknownAndEndedRunsAreRefused) {
  EXPECT_THAT(EventFeed::Subscribe(engine_.get(), "nope", Bounded(1 << 20)).status(),
              StatusIs(absl::StatusCode::kNotFound));
  ASSERT_THAT(engine_->EndRun(run_).status(), IsOk());
  EXPECT_THAT(EventFeed::Subscribe(engine_.get(), run_, Bounded(1 << 20)).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EventFeed::Options no_total;
  EXPECT_THAT(EventFeed::Subscribe(engine_.get(), run_, no_total).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(EventFeedTest, OnlyMatchingEventsAreQueuedAndOnReadyIsCalledForEach) {
  absl::StatusOr<trace::EventFilter> filter = [] {
    v1::EventFilter f;
    f.add_kinds("custom.keep");
    return trace::EventFilter::Create(f, "filter");
  }();
  ASSERT_THAT(filter.status(), IsOk());
  std::atomic<int> ready{0};
  EventFeed::Options options = Bounded(1 << 20);
  options.filter = &*filter;
  options.on_ready = [&ready] { ready.fetch_add(1); };
  absl::StatusOr<std::unique_ptr<EventFeed>> feed =
      EventFeed::Subscribe(engine_.get(), run_, options);
  ASSERT_THAT(feed.status(), IsOk());
  Emit("custom.keep");
  Emit("custom.drop");
  Emit("custom.keep");
  EXPECT_EQ(ready.load(), 2);
  EventFeed::Batch batch = (*feed)->Take();
  EXPECT_THAT(batch.events(), ElementsAre(Property(&v1::TraceEvent::kind, "custom.keep"),
                                          Property(&v1::TraceEvent::kind, "custom.keep")));
}

TEST_F(EventFeedTest, AReaderThatFallsBehindOverflowsAndHoldsNothing) {
  absl::StatusOr<std::unique_ptr<EventFeed>> feed =
      EventFeed::Subscribe(engine_.get(), run_, Bounded(3000));
  ASSERT_THAT(feed.status(), IsOk());
  Emit("custom.big", 1000);
  Emit("custom.big", 1000);
  EXPECT_GT(total_.load(), 2000u);
  Emit("custom.big", 1000);  // past the bound
  EXPECT_EQ(total_.load(), 0u);
  Emit("custom.big", 10);  // nothing more is queued
  EventFeed::Batch batch = (*feed)->Take();
  EXPECT_TRUE(batch.overflowed());
  EXPECT_TRUE(batch.events().empty());
  EXPECT_EQ(total_.load(), 0u);
}

TEST_F(EventFeedTest, TakenEventsCountAgainstTheTotalUntilTheBatchIsGone) {
  absl::StatusOr<std::unique_ptr<EventFeed>> feed =
      EventFeed::Subscribe(engine_.get(), run_, Bounded(1 << 20));
  ASSERT_THAT(feed.status(), IsOk());
  Emit("custom.a", 500);
  const size_t queued = total_.load();
  EXPECT_GT(queued, 500u);
  {
    EventFeed::Batch batch = (*feed)->Take();
    EXPECT_EQ(total_.load(), queued);
    EventFeed::Batch moved = std::move(batch);
    EXPECT_EQ(total_.load(), queued);
  }
  EXPECT_EQ(total_.load(), 0u);
  Emit("custom.b", 500);
  EXPECT_GT(total_.load(), 0u);
  feed->reset();  // what is still queued is given back
  EXPECT_EQ(total_.load(), 0u);
}

}  // namespace
}  // namespace service
}  // namespace understudy
