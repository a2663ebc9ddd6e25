#include "metrics/metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsTest, CountsByLabelsInTheTextFormat) {
  Metrics m;
  m.CountRequest("openai", "replay", "recording");
  m.CountRequest("openai", "replay", "recording");
  m.CountRequest("a2a", "record", "upstream");
  m.CountRequest("openai", "replay", "miss");
  m.CountUpstreamError("a2a");
  const std::string text = m.Exposition();
  EXPECT_THAT(text, HasSubstr("# TYPE understudy_requests_total counter"));
  EXPECT_THAT(text, HasSubstr(R"(understudy_requests_total{api="openai",mode="replay",source="recording"} 2)"));
  EXPECT_THAT(text, HasSubstr(R"(understudy_requests_total{api="openai",mode="replay",source="miss"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(understudy_requests_total{api="a2a",mode="record",source="upstream"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(understudy_upstream_errors_total{api="a2a"} 1)"));
}

TEST(MetricsTest, HistogramsCountEachObservationInItsBucket) {
  Metrics m;
  m.ObserveRequest("anthropic", absl::Microseconds(300));
  m.ObserveRequest("anthropic", absl::Seconds(2));
  m.ObserveStoreWrite(absl::Milliseconds(3));
  const std::string text = m.Exposition();
  EXPECT_THAT(text, HasSubstr("# TYPE understudy_request_duration_seconds histogram"));
  EXPECT_THAT(text, HasSubstr(R"(understudy_request_duration_seconds_bucket{api="anthropic",le="0.0005"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(understudy_request_duration_seconds_bucket{api="anthropic",le="2.5"} 2)"));
  EXPECT_THAT(text, HasSubstr(R"(understudy_request_duration_seconds_count{api="anthropic"} 2)"));
  EXPECT_THAT(text, HasSubstr(R"(understudy_store_write_duration_seconds_bucket{le="0.0025"} 0)"));
  EXPECT_THAT(text, HasSubstr(R"(understudy_store_write_duration_seconds_bucket{le="0.005"} 1)"));
}

TEST(MetricsTest, GaugesAreReadAtEachScrape) {
  Metrics m;
  EXPECT_THAT(m.Exposition(), HasSubstr("understudy_runs_active 0"));
  int64_t runs = 3;
  m.SetGaugeReader([&runs] { return GaugeReadings{runs, 7}; });
  std::string text = m.Exposition();
  EXPECT_THAT(text, HasSubstr("understudy_runs_active 3"));
  EXPECT_THAT(text, HasSubstr("understudy_trace_queue_depth 7"));
  runs = 1;
  text = m.Exposition();
  EXPECT_THAT(text, HasSubstr("understudy_runs_active 1"));
  EXPECT_THAT(text, Not(HasSubstr("understudy_runs_active 3")));
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  Metrics m;
  m.CountRequest("a\"b\\c\nd", "replay", "rule");
  EXPECT_THAT(m.Exposition(), HasSubstr(R"(api="a\"b\\c\nd")"));
}

}  // namespace
}  // namespace metrics
}  // namespace understudy
