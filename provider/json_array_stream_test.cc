#include "provider/json_array_stream.h"

#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "provider/test_fixtures.h"

namespace understudy {
namespace provider {
namespace {

using ::testing::ElementsAre;
using fixtures::Split;
using ::understudy::IsOk;
using ::understudy::StatusIs;

// The status a splitter ends with on `text`, fed whole then finished.
absl::Status SplitStatus(absl::string_view text, size_t max_bytes = 1 << 20) {
  JsonArraySplitter splitter(max_bytes);
  splitter.Feed(text);
  if (!splitter.status().ok()) return splitter.status();
  return splitter.Finish();
}

TEST(JsonArraySplitterTest, SegmentsKeepEveryByte) {
  const std::string text = "  [{\n  \"a\": 1\n}\n,\r\n{\"b\": [2, {\"c\": 3}]}\n]\r\n";
  EXPECT_THAT(Split(text, text.size()),
              ElementsAre("  [{\n  \"a\": 1\n}", "\n,\r\n{\"b\": [2, {\"c\": 3}]}", "\n]\r\n"));
  for (size_t piece = 1; piece < 6; ++piece) {
    EXPECT_EQ(Split(text, piece), Split(text, text.size())) << piece;
  }
  EXPECT_THAT(Split("[]", 1), ElementsAre("[]"));
}

TEST(JsonArraySplitterTest, BracketsAndQuotesInStringsDoNotCount) {
  const std::string text = R"([{"a":"}]{[\"\\","n":[1,{"x":"]"}]}, {"b":"\"}\""}])";
  EXPECT_THAT(Split(text, 1),
              ElementsAre(R"([{"a":"}]{[\"\\","n":[1,{"x":"]"}]})", R"(, {"b":"\"}\""})", "]"));
}

TEST(JsonArraySplitterTest, MalformedStreamsNameTheByte) {
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"x", "json array stream: expected '[' at byte 0, got 'x'"},
      {"  [ x", "json array stream: expected '{' or ']' at byte 4, got 'x'"},
      {"[1]", "json array stream: expected '{' or ']' at byte 1, got '1'"},
      {"[{},]", "json array stream: expected '{' at byte 4, got ']'"},
      {"[{]", "json array stream: expected '}' at byte 2, got ']'"},
      {R"([{"a":[})", "json array stream: expected ']' at byte 7, got '}'"},
      {"[{} {}]", "json array stream: expected ',' or ']' at byte 4, got '{'"},
      {"[{}]x",
       "json array stream: expected only whitespace after the closing ']' at byte 4, "
       "got 'x'"},
      {"", "json array stream: ended at byte 0 before the array was opened"},
      {"[", "json array stream: ended at byte 1 before the closing ']'"},
      {"[{},", "json array stream: ended at byte 4 before the closing ']'"},
      {R"([{"a":"})", "json array stream: ended at byte 8 inside an element"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(SplitStatus(c.text), StatusIs(absl::StatusCode::kInvalidArgument, c.message))
        << c.text;
  }
  // Byte offsets count from the start of the stream, however it is fed.
  JsonArraySplitter splitter;
  for (char c : std::string("[{}\n,{}x")) splitter.Feed(std::string(1, c));
  EXPECT_THAT(splitter.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "json array stream: expected ',' or ']' at byte 7, got 'x'"));
  EXPECT_TRUE(splitter.Feed("]").empty());
  EXPECT_THAT(splitter.Finish(), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(JsonArraySplitterTest, ElementsAreBounded) {
  EXPECT_THAT(SplitStatus(R"([{"a":"0123456"}])", 16), IsOk());  // a 16-byte segment
  EXPECT_THAT(SplitStatus(R"([{"a":"01234567"}])", 16),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "json array stream: element larger than 16 bytes"));
  JsonArraySplitter splitter(16);
  for (int i = 0; i < 100 && splitter.status().ok(); ++i) splitter.Feed("[{\"a\":\"");
  EXPECT_THAT(splitter.status(), StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST(JsonArraySplitterTest, ElementJsonStripsTheSeparator) {
  EXPECT_EQ(ElementJson("[{\"a\":1}"), "{\"a\":1}");
  EXPECT_EQ(ElementJson("\n,\r\n{\n  \"a\": 1\n}"), "{\n  \"a\": 1\n}");
  EXPECT_EQ(ElementJson("\n]"), "");
  EXPECT_EQ(ElementJson("[]"), "");
}

}  // namespace
}  // namespace provider
}  // namespace understudy
