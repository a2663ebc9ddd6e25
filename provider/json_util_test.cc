#include "provider/json_util.h"

#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace provider {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

TEST(ParseJsonTest, KeepsTheKeyOrderOfTheText) {
  absl::StatusOr<Json> v = ParseJson(R"({"b":1,"a":{"d":2,"c":3}})", "body");
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(DumpJson(*v), R"({"b":1,"a":{"d":2,"c":3}})");
}

TEST(ParseJsonTest, SyntaxErrorNamesTheByteOffset) {
  EXPECT_THAT(ParseJson(R"({"a":1,x)", "body"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "body: invalid JSON at byte 7: syntax error while parsing object key - "
                       "invalid literal; last read: '1,x'; expected string literal"));
}

TEST(ParseJsonTest, EmptyTextIsInvalid) {
  EXPECT_THAT(ParseJson("", "body"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("body: invalid JSON at byte 0: syntax error while parsing value - "
                                 "unexpected end of input")));
}

TEST(ParseJsonTest, TrailingBytesAreInvalid) {
  EXPECT_THAT(ParseJson("[1] x", "data"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                   HasSubstr("data: invalid JSON at byte 4: ")));
}

TEST(ParseJsonTest, InvalidUtf8IsRejectedWithItsOffset) {
  EXPECT_THAT(ParseJson("{\"a\":\"ab\xff\"}", "body"),
              StatusIs(absl::StatusCode::kInvalidArgument, "body: invalid UTF-8 at byte 8"));
}

TEST(ParseJsonTest, OverlongSurrogateAndOutOfRangeUtf8AreRejected) {
  for (const char* bad : {"\"\xC0\xAF\"", "\"\xE0\x80\xAF\"", "\"\xED\xA0\x80\"",
                          "\"\xF4\x90\x80\x80\"", "\"\xE2\x82\"", "\"\x80\""}) {
    EXPECT_THAT(ParseJson(bad, "body"),
                StatusIs(absl::StatusCode::kInvalidArgument, "body: invalid UTF-8 at byte 1"))
        << bad;
  }
}

TEST(ParseJsonTest, ValidMultibyteUtf8IsAccepted) {
  absl::StatusOr<Json> v = ParseJson("\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"", "body");
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(v->get<std::string>(), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
}

TEST(ParseJsonTest, LoneSurrogateEscapeIsInvalid) {
  EXPECT_THAT(ParseJson(R"("\ud800")", "body"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("surrogate")));
}

TEST(ParseJsonTest, HundredThousandDeepArrayIsRejectedWithoutCrashing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THAT(ParseJson(deep, "body"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "body: JSON nested deeper than 256 levels at byte 256"));
  const std::string objects = [] {
    std::string s;
    for (int i = 0; i < 100000; ++i) s += "{\"a\":";
    return s;
  }();
  EXPECT_THAT(ParseJson(objects, "body"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nested deeper")));
}

TEST(ParseJsonTest, NestingAtTheLimitIsAccepted) {
  const std::string deep = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  absl::StatusOr<Json> v = ParseJson(deep, "body");
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(DumpJson(*v), deep);
}

TEST(ParseJsonTest, BracketsInsideStringsDoNotCountAsNesting) {
  const std::string text = "[\"" + std::string(100000, '[') + "\\\"{\"]";
  EXPECT_THAT(ParseJson(text, "body"), IsOk());
}

TEST(ParseJsonTest, NumberOverflowIsAClearError) {
  EXPECT_THAT(ParseJson(R"({"max_tokens":1e400})", "body"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "body: invalid JSON: number overflow parsing '1e400'"));
}

TEST(ParseJsonTest, LongErrorDetailIsShortened) {
  const std::string text = "[\"" + std::string(100000, 'x') + "\" \"y\"]";
  absl::StatusOr<Json> v = ParseJson(text, "body");
  ASSERT_THAT(v, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_LT(v.status().message().size(), 400u);
}

TEST(JsonToInt64Test, AcceptsTheWholeInt64Range) {
  EXPECT_EQ(*JsonToInt64(Json::parse("9223372036854775807"), "n"), INT64_MAX);
  EXPECT_EQ(*JsonToInt64(Json::parse("-9223372036854775808"), "n"), INT64_MIN);
  EXPECT_EQ(*JsonToInt64(Json::parse("0"), "n"), 0);
}

TEST(JsonToInt64Test, RejectsFractionsHugeNumbersAndOtherTypes) {
  EXPECT_THAT(JsonToInt64(Json::parse("9223372036854775808"), "max_tokens"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "max_tokens: expected an integer, got number 9223372036854775808"));
  EXPECT_THAT(
      JsonToInt64(Json::parse("1.5"), "seed"),
      StatusIs(absl::StatusCode::kInvalidArgument, "seed: expected an integer, got number 1.5"));
  EXPECT_THAT(JsonToInt64(Json::parse(std::string(300, '9')), "seed"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("seed: expected an integer, got number ")));
  EXPECT_THAT(
      JsonToInt64(Json::parse("\"12\""), "seed"),
      StatusIs(absl::StatusCode::kInvalidArgument, "seed: expected an integer, got string"));
}

TEST(JsonPathTest, JoinsKeysAndIndexes) {
  EXPECT_EQ(JoinPath("", "model"), "model");
  EXPECT_EQ(JoinPath(JoinPath("messages", 2), "content"), "messages[2].content");
}

TEST(FindMemberTest, NullIsTheSameAsAbsent) {
  Json v = Json::parse(R"({"a":null,"b":1})");
  EXPECT_EQ(FindMember(v, "a"), nullptr);
  EXPECT_EQ(FindMember(v, "c"), nullptr);
  ASSERT_NE(FindMember(v, "b"), nullptr);
  EXPECT_EQ(*FindMember(v, "b"), 1);
  EXPECT_EQ(FindMember(Json::array(), "a"), nullptr);
}

TEST(DumpJsonTest, InvalidUtf8IsReplacedNotThrown) {
  Json v = std::string("a\xff");
  EXPECT_EQ(DumpJson(v), "\"a\xEF\xBF\xBD\"");
  EXPECT_THAT(DumpJson(v), SizeIs(6));
}

}  // namespace
}  // namespace provider
}  // namespace understudy
