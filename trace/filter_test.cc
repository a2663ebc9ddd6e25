#include "trace/filter.h"

#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trace/test_trace.h"

namespace understudy {
namespace trace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<int64_t> Seqs(const EventFilter& filter, const std::vector<v1::TraceEvent>& events) {
  std::vector<int64_t> out;
  for (const v1::TraceEvent& e : events) {
    if (filter.Matches(e)) out.push_back(e.seq());
  }
  return out;
}

EventFilter Make(const v1::EventFilter& f) {
  absl::StatusOr<EventFilter> filter = EventFilter::Create(f, "filter");
  EXPECT_THAT(filter, IsOk());
  return *filter;
}

TEST(EventFilterTest, EmptyFilterMatchesEverything) {
  const std::vector<v1::TraceEvent> events = testing::ReviewLoop();
  EventFilter filter = Make(v1::EventFilter());
  EXPECT_EQ(Seqs(filter, events).size(), events.size());
  EXPECT_EQ(filter.Describe(), "any event");
}

TEST(EventFilterTest, KindsAreAnyOf) {
  v1::EventFilter f;
  f.add_kinds("phase_transition");
  f.add_kinds("workflow_end");
  EventFilter filter = Make(f);
  EXPECT_THAT(Seqs(filter, testing::ReviewLoop()), ElementsAre(4, 10, 16, 18));
  EXPECT_EQ(filter.Describe(), "kind=phase_transition|workflow_end");
}

TEST(EventFilterTest, KindAgentAndTool) {
  v1::EventFilter f;
  f.add_kinds("tool_call");
  f.set_agent("executor");
  f.set_tool("continue");
  EventFilter filter = Make(f);
  EXPECT_THAT(Seqs(filter, testing::ReviewLoop()), ElementsAre(9, 15));
  EXPECT_EQ(filter.Describe(), "kind=tool_call agent=executor tool=continue");
}

TEST(EventFilterTest, AgentFallsBackToTheAgentNameAttribute) {
  std::vector<v1::TraceEvent> events = testing::ReviewLoop();
  events[4].clear_agent();  // #5 keeps gen_ai.agent.name = executor
  (*events[5].mutable_attributes()).erase("gen_ai.agent.name");  // #6 keeps agent()
  v1::EventFilter f;
  f.set_agent("executor");
  f.set_max_seq(7);
  EXPECT_THAT(Seqs(Make(f), events), ElementsAre(5, 6, 7));
}

TEST(EventFilterTest, PhaseReadsTheUnderstudyPhaseAttribute) {
  v1::EventFilter f;
  f.set_phase("execute");
  EXPECT_THAT(Seqs(Make(f), testing::ReviewLoop()), ElementsAre(11, 14));
}

TEST(EventFilterTest, AttributesMustBeEqual) {
  v1::EventFilter f;
  (*f.mutable_attributes())["gen_ai.tool.call.arguments"] = R"({"phase":"verification"})";
  EXPECT_THAT(Seqs(Make(f), testing::ReviewLoop()), ElementsAre(15));
  (*f.mutable_attributes())["gen_ai.tool.name"] = "read_file";
  EXPECT_THAT(Seqs(Make(f), testing::ReviewLoop()), ElementsAre());
}

TEST(EventFilterTest, PatternsArePartialMatchesAndMissingAttributesNeverMatch) {
  v1::EventFilter f;
  (*f.mutable_attribute_patterns())["gen_ai.tool.call.arguments"] = "verif";
  EventFilter filter = Make(f);
  EXPECT_THAT(Seqs(filter, testing::ReviewLoop()), ElementsAre(15));
  EXPECT_EQ(filter.Describe(), "gen_ai.tool.call.arguments~/verif/");

  // `.*` matches every value, but only where the attribute exists.
  v1::EventFilter any;
  (*any.mutable_attribute_patterns())["understudy.phase.to"] = ".*";
  EXPECT_THAT(Seqs(Make(any), testing::ReviewLoop()), ElementsAre(4, 10, 16));
}

TEST(EventFilterTest, SeqBoundsAreInclusiveAndZeroIsOpen) {
  v1::EventFilter f;
  f.add_kinds("exchange");
  f.set_min_seq(5);
  f.set_max_seq(11);
  EventFilter filter = Make(f);
  EXPECT_THAT(Seqs(filter, testing::ReviewLoop()), ElementsAre(5, 8, 11));
  EXPECT_EQ(filter.Describe(), "kind=exchange seq=5..11");
  f.set_max_seq(0);
  EXPECT_THAT(Seqs(Make(f), testing::ReviewLoop()), ElementsAre(5, 8, 11, 14, 17));
  EXPECT_EQ(Make(f).Describe(), "kind=exchange seq>=5");
}

TEST(EventFilterTest, DescribeQuotesValuesWithSpaces) {
  v1::EventFilter f;
  f.set_agent("code reviewer");
  (*f.mutable_attributes())["understudy.routing.reason"] = "changes requested";
  EXPECT_EQ(Make(f).Describe(),
            R"(agent="code reviewer" understudy.routing.reason="changes requested")");
}

TEST(EventFilterTest, InvalidPatternNamesTheAttribute) {
  v1::EventFilter f;
  (*f.mutable_attribute_patterns())["gen_ai.tool.name"] = "(unclosed";
  EXPECT_THAT(EventFilter::Create(f, "filter"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(R"(filter.attribute_patterns["gen_ai.tool.name"]: invalid RE2 )"
                                 "pattern: missing ): (unclosed")));
}

TEST(EventFilterTest, RefusesEmptyKindsAndImpossibleSeqRanges) {
  v1::EventFilter f;
  f.add_kinds("");
  EXPECT_THAT(
      EventFilter::Create(f, "count.filter"),
      StatusIs(absl::StatusCode::kInvalidArgument, "count.filter.kinds[0]: must not be empty"));
  v1::EventFilter range;
  range.set_min_seq(9);
  range.set_max_seq(3);
  EXPECT_THAT(EventFilter::Create(range, ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "min_seq: 9 is greater than max_seq 3; nothing could match"));
  v1::EventFilter negative;
  negative.set_max_seq(-1);
  EXPECT_THAT(
      EventFilter::Create(negative, "filter"),
      StatusIs(absl::StatusCode::kInvalidArgument, "filter.max_seq: must not be negative, got -1"));
}

}  // namespace
}  // namespace trace
}  // namespace understudy
