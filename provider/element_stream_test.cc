#include "provider/element_stream.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace provider {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The segments of `stream` fed `piece` bytes at a time.
std::vector<std::string> FeedInPieces(ElementSplitter& splitter, absl::string_view stream,
                                      size_t piece) {
  std::vector<std::string> out;
  for (size_t i = 0; i < stream.size(); i += piece) {
    for (std::string& s : splitter.Feed(stream.substr(i, piece))) out.push_back(std::move(s));
  }
  return out;
}

TEST(NewSplitterTest, OneForEachElementFraming) {
  EXPECT_EQ(NewSplitter(StreamFraming::kNone), nullptr);
  EXPECT_EQ(NewSplitter(StreamFraming::kSse), nullptr);
  EXPECT_NE(NewSplitter(StreamFraming::kJsonArray), nullptr);
  EXPECT_NE(NewSplitter(StreamFraming::kNdjson), nullptr);
  EXPECT_EQ(NewSplitter(StreamFraming::kJsonArray)->Element("[{\"a\":1}"), "{\"a\":1}");
}

TEST(NdjsonSplitterTest, CutsAfterEachLineHoweverTheBytesArrive) {
  constexpr absl::string_view kStream = "{\"a\":1}\n\n{\"b\":\"x\\ny\"}\r\n{\"done\":true}\n";
  for (size_t piece = 1; piece <= kStream.size(); ++piece) {
    NdjsonSplitter splitter;
    std::vector<std::string> segments = FeedInPieces(splitter, kStream, piece);
    EXPECT_THAT(segments, ElementsAre("{\"a\":1}\n", "\n", "{\"b\":\"x\\ny\"}\r\n",
                                      "{\"done\":true}\n"))
        << piece;
    EXPECT_TRUE(splitter.Finish().ok());
    EXPECT_EQ(splitter.Rest(), "");
    EXPECT_EQ(absl::StrJoin(segments, ""), kStream);
    EXPECT_EQ(splitter.Element(segments[1]), "");
    EXPECT_EQ(splitter.Element(segments[2]), "{\"b\":\"x\\ny\"}");
  }
}

TEST(NdjsonSplitterTest, ALastLineWithoutABreakStaysInRestAsAnElement) {
  NdjsonSplitter splitter;
  EXPECT_THAT(splitter.Feed("{\"a\":1}\n{\"done\":true}"), ElementsAre("{\"a\":1}\n"));
  EXPECT_TRUE(splitter.Finish().ok());
  EXPECT_EQ(splitter.Rest(), "{\"done\":true}");
  EXPECT_EQ(splitter.Element(splitter.Rest()), "{\"done\":true}");
  EXPECT_THAT(splitter.Feed("more\n"), IsEmpty());
}

TEST(NdjsonSplitterTest, ALineOverTheBoundFailsNamingWhereItStarted) {
  NdjsonSplitter splitter(8);
  EXPECT_THAT(splitter.Feed("{\"a\":1}\n0123"), ElementsAre("{\"a\":1}\n"));
  EXPECT_TRUE(splitter.status().ok());
  EXPECT_THAT(splitter.Feed("45678"), IsEmpty());
  EXPECT_EQ(splitter.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(splitter.status().message(), "ndjson stream: line at byte 8 longer than 8 bytes");
  EXPECT_THAT(splitter.Feed("\n"), IsEmpty());
  EXPECT_EQ(splitter.Finish().code(), absl::StatusCode::kResourceExhausted);
}

TEST(NdjsonSplitterTest, ALineOfExactlyTheBoundIsKept) {
  NdjsonSplitter splitter(8);
  EXPECT_THAT(splitter.Feed("01234567\n"), ElementsAre("01234567\n"));
  EXPECT_TRUE(splitter.status().ok());
}

}  // namespace
}  // namespace provider
}  // namespace understudy
