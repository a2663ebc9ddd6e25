#include "base/duration.h"

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace {

using ::testing::HasSubstr;

TEST(ParseDurationTest, ReadsAbslUnitsAndDays) {
  EXPECT_EQ(*ParseDuration("2s"), absl::Seconds(2));
  EXPECT_EQ(*ParseDuration(" 1.5ms "), absl::Microseconds(1500));
  EXPECT_EQ(*ParseDuration("30m"), absl::Minutes(30));
  EXPECT_EQ(*ParseDuration("12h"), absl::Hours(12));
  EXPECT_EQ(*ParseDuration("1h30m"), absl::Minutes(90));
  EXPECT_EQ(*ParseDuration("7d"), absl::Hours(7 * 24));
  EXPECT_EQ(*ParseDuration("1.5d"), absl::Hours(36));
  EXPECT_EQ(*ParseDuration("1d12h"), absl::Hours(36));
  EXPECT_EQ(*ParseDuration("0d"), absl::ZeroDuration());
}

// Retention flags: "7" could mean seconds or days, so it is refused.
TEST(ParseDurationTest, APlainNumberIsRefusedUnlessMillisecondsAreAsked) {
  EXPECT_THAT(ParseDuration("7"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected a duration: a number with a unit (30m, 12h, 7d), "
                                 "got \"7\"")));
  EXPECT_EQ(*ParseDuration("150", PlainNumber::kMilliseconds), absl::Milliseconds(150));
  EXPECT_EQ(*ParseDuration("0", PlainNumber::kMilliseconds), absl::ZeroDuration());
  EXPECT_EQ(*ParseDuration("2s", PlainNumber::kMilliseconds), absl::Seconds(2));
}

// An infinite or negative duration would hang a sim or keep nothing: both
// are refused, each with its reason.
TEST(ParseDurationTest, RefusesInfiniteNegativeAndMalformedDurations) {
  for (PlainNumber plain : {PlainNumber::kRefused, PlainNumber::kMilliseconds}) {
    for (const char* bad : {"inf", "1e300", "-5", "-1s", "-1d", "fast", "", "nan", "inf ms", "d",
                            "7days", "1d-2h", "1e300d", "2 seconds"}) {
      EXPECT_THAT(ParseDuration(bad, plain), StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
    }
  }
  EXPECT_THAT(ParseDuration("inf"), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("must be finite, got inf")));
  EXPECT_THAT(ParseDuration("-1s"), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("must not be negative, got -1s")));
  EXPECT_THAT(ParseDuration("-1d"), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("must not be negative, got -1d")));
  EXPECT_THAT(ParseDuration("soon", PlainNumber::kMilliseconds),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected a duration: milliseconds (150) or a number with a unit "
                                 "(150ms, 2s, 1m), got \"soon\"")));
  EXPECT_THAT(ParseDuration("1e300", PlainNumber::kMilliseconds),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must be a finite number of milliseconds")));
}

}  // namespace
}  // namespace understudy
