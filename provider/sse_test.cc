#include "provider/sse.h"

#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace provider {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A stream with every feature the parser handles: named and unnamed events,
// multi-line data, CRLF and lone-CR line ends, keep-alive comments, `id:`,
// a field without a space, and a last event with no blank line after it.
constexpr absl::string_view kStream =
    ": keep-alive\n\n"
    "event: message_start\n"
    "data: {\"a\":1}\n\n"
    "data: line one\r\n"
    "data: line two\r\n"
    "id: 7\r\n"
    "\r\n"
    ": comment inside\n"
    "data:no-space\r"
    "\r"
    "event: ping\n"
    "data: {}\n"
    "\n"
    "data: [DONE]";

struct Simple {
  std::string event;
  std::string data;
  bool operator==(const Simple& o) const { return event == o.event && data == o.data; }
};
void PrintTo(const Simple& s, std::ostream* os) { *os << "{" << s.event << ", " << s.data << "}"; }

std::vector<Simple> Simplify(const std::vector<SseEvent>& events) {
  std::vector<Simple> out;
  for (const SseEvent& e : events) out.push_back({e.event, e.data});
  return out;
}

std::string Raws(const std::vector<SseEvent>& events) {
  std::string out;
  for (const SseEvent& e : events) out += e.raw;
  return out;
}

// Feeds `pieces` then finishes, failing the test on error.
std::vector<SseEvent> FeedAll(const std::vector<absl::string_view>& pieces) {
  SseParser parser;
  std::vector<SseEvent> all;
  for (absl::string_view p : pieces) {
    absl::StatusOr<std::vector<SseEvent>> events = parser.Feed(p);
    EXPECT_THAT(events, IsOk());
    if (events.ok()) all.insert(all.end(), events->begin(), events->end());
  }
  absl::StatusOr<std::vector<SseEvent>> rest = parser.Finish();
  EXPECT_THAT(rest, IsOk());
  if (rest.ok()) all.insert(all.end(), rest->begin(), rest->end());
  return all;
}

const std::vector<Simple> kExpected = {
    {"message_start", "{\"a\":1}"},
    {"", "line one\nline two"},
    {"", "no-space"},
    {"ping", "{}"},
    {"", "[DONE]"},
};

TEST(SseParserTest, ParsesNamesMultiLineDataAndEveryLineEnding) {
  std::vector<SseEvent> events = FeedAll({kStream});
  EXPECT_EQ(Simplify(events), kExpected);
}

TEST(SseParserTest, RawBytesOfAllEventsAreTheStream) {
  std::vector<SseEvent> events = FeedAll({kStream});
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(Raws(events), kStream);
  // The keep-alive before the first event travels with it.
  EXPECT_EQ(events[0].raw, ": keep-alive\n\nevent: message_start\ndata: {\"a\":1}\n\n");
  EXPECT_EQ(events[1].raw, "data: line one\r\ndata: line two\r\nid: 7\r\n\r\n");
  EXPECT_EQ(events[2].raw, ": comment inside\ndata:no-space\r\r");
  EXPECT_EQ(events[4].raw, "data: [DONE]");
}

TEST(SseParserTest, EverySplitPointGivesTheSameEventsAndBytes) {
  for (size_t i = 0; i <= kStream.size(); ++i) {
    std::vector<SseEvent> events = FeedAll({kStream.substr(0, i), kStream.substr(i)});
    EXPECT_EQ(Simplify(events), kExpected) << "split at " << i;
    EXPECT_EQ(Raws(events), kStream) << "split at " << i;
  }
}

TEST(SseParserTest, EveryPairOfSplitPointsGivesTheSameEvents) {
  for (size_t i = 0; i <= kStream.size(); ++i) {
    for (size_t j = i; j <= kStream.size(); ++j) {
      std::vector<SseEvent> events =
          FeedAll({kStream.substr(0, i), kStream.substr(i, j - i), kStream.substr(j)});
      ASSERT_EQ(Simplify(events), kExpected) << "split at " << i << ", " << j;
      ASSERT_EQ(Raws(events), kStream) << "split at " << i << ", " << j;
    }
  }
}

TEST(SseParserTest, OneByteAtATimeGivesTheSameEvents) {
  std::vector<absl::string_view> bytes;
  for (size_t i = 0; i < kStream.size(); ++i) bytes.push_back(kStream.substr(i, 1));
  EXPECT_EQ(Simplify(FeedAll(bytes)), kExpected);
}

TEST(SseParserTest, CarriageReturnAtTheEndOfAPieceWaitsForAPossibleNewline) {
  SseParser parser;
  absl::StatusOr<std::vector<SseEvent>> events = parser.Feed("data: x\r\n\r");
  ASSERT_THAT(events, IsOk());
  EXPECT_THAT(*events, IsEmpty());
  events = parser.Feed("\n");
  ASSERT_THAT(events, IsOk());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].raw, "data: x\r\n\r\n");
}

TEST(SseParserTest, MissingFinalBlankLineIsDispatchedAtFinish) {
  SseParser parser;
  absl::StatusOr<std::vector<SseEvent>> events = parser.Feed("event: e\ndata: last\n");
  ASSERT_THAT(events, IsOk());
  EXPECT_THAT(*events, IsEmpty());
  events = parser.Finish();
  ASSERT_THAT(events, IsOk());
  EXPECT_EQ(Simplify(*events), std::vector<Simple>({{"e", "last"}}));
  EXPECT_EQ((*events)[0].raw, "event: e\ndata: last\n");
}

TEST(SseParserTest, CommentOnlyStreamHasNoEvents) {
  EXPECT_THAT(FeedAll({": ping\n\n: ping\n\n"}), IsEmpty());
}

TEST(SseParserTest, BlockWithoutDataResetsTheEventName) {
  EXPECT_EQ(Simplify(FeedAll({"event: lost\n\ndata: x\n\n"})), std::vector<Simple>({{"", "x"}}));
}

TEST(SseParserTest, EmptyDataFieldMakesAnEventWithEmptyData) {
  EXPECT_EQ(Simplify(FeedAll({"data\n\ndata:\n\n"})), std::vector<Simple>({{"", ""}, {"", ""}}));
}

TEST(SseParserTest, LeadingByteOrderMarkIsIgnored) {
  EXPECT_EQ(Simplify(FeedAll({"\xEF\xBB\xBF", "event: a\ndata: b\n\n"})),
            std::vector<Simple>({{"a", "b"}}));
}

TEST(SseParserTest, CompleteEventOverTheLimitIsAnError) {
  SseParser parser(/*max_event_bytes=*/16);
  EXPECT_THAT(parser.Feed("data: 0123456789abcdef\n\n"),
              StatusIs(absl::StatusCode::kResourceExhausted, "sse: event larger than 16 bytes"));
  // The parser stays failed.
  EXPECT_THAT(parser.Feed("data: x\n\n"), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(parser.Finish(), StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST(SseParserTest, OpenEventGrowingOverTheLimitIsAnError) {
  SseParser parser(/*max_event_bytes=*/64);
  absl::Status status;
  for (int i = 0; i < 100 && status.ok(); ++i) status = parser.Feed("data: xxxxxxxx\n").status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST(SseParserTest, EndlessLineWithoutTerminatorIsAnError) {
  SseParser parser(/*max_event_bytes=*/1024);
  absl::Status status;
  for (int i = 0; i < 1000 && status.ok(); ++i) status = parser.Feed("data: xxxxxxxx").status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST(SseParserTest, EventsUnderTheLimitKeepFlowing) {
  SseParser parser(/*max_event_bytes=*/32);
  size_t count = 0;
  for (int i = 0; i < 1000; ++i) {
    absl::StatusOr<std::vector<SseEvent>> events = parser.Feed("data: 0123456789\n\n");
    ASSERT_THAT(events, IsOk());
    count += events->size();
  }
  EXPECT_EQ(count, 1000u);
}

TEST(SseParserTest, FeedAfterFinishFails) {
  SseParser parser;
  ASSERT_THAT(parser.Finish(), IsOk());
  EXPECT_THAT(parser.Feed("data: x\n\n"), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(ParseSseTest, ParsesAWholeStream) {
  absl::StatusOr<std::vector<SseEvent>> events = ParseSse(kStream);
  ASSERT_THAT(events, IsOk());
  EXPECT_EQ(Simplify(*events), kExpected);
}

}  // namespace
}  // namespace provider
}  // namespace understudy
