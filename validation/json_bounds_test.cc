#include "validation/json_bounds.h"

#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace validation {
namespace {

using ::testing::HasSubstr;

std::string Nested(int levels) {
  return std::string(levels, '[') + std::string(levels, ']');
}

std::string NestedObjects(int levels) {
  std::string out;
  for (int i = 0; i < levels; ++i) out += "{\"a\":";
  out += "1";
  out += std::string(levels, '}');
  return out;
}

TEST(JsonBoundsTest, AcceptsTheLimitAndRefusesOneMore) {
  EXPECT_THAT(ParseJson<nlohmann::json>(Nested(kMaxJsonDepth), "body"), IsOk());
  EXPECT_THAT(ParseJson<nlohmann::json>(Nested(kMaxJsonDepth + 1), "body"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "body: JSON nested deeper than 256 levels at byte 256"));
}

TEST(JsonBoundsTest, HundredThousandLevelsAreRefusedWithoutBuildingAnything) {
  const std::string deep = NestedObjects(100000);
  EXPECT_THAT(ParseJson<nlohmann::ordered_json>(deep, "arguments"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nested deeper than 256")));
  EXPECT_TRUE(ParseJsonOrDiscarded<nlohmann::json>(deep).is_discarded());
  EXPECT_FALSE(NestsWithin(deep));
}

TEST(JsonBoundsTest, BracketsInsideStringsDoNotCount) {
  const std::string text = "{\"a\":\"" + std::string(1000, '[') + "\\\"\"}";
  EXPECT_TRUE(NestsWithin(text));
  EXPECT_THAT(ParseJson<nlohmann::json>(text, "x"), IsOk());
}

TEST(JsonBoundsTest, InvalidUtf8IsNamedWithItsOffset) {
  EXPECT_THAT(ParseJson<nlohmann::json>("{\"a\":\"\xFF\"}", "body"),
              StatusIs(absl::StatusCode::kInvalidArgument, "body: invalid UTF-8 at byte 6"));
  EXPECT_TRUE(ParseJsonOrDiscarded<nlohmann::json>("\"\xFF\"").is_discarded());
}

TEST(JsonBoundsTest, SyntaxErrorsAndOverflowsSayWhere) {
  EXPECT_THAT(ParseJson<nlohmann::json>("{\"a\":}", "body"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("body: invalid JSON at byte 5")));
  EXPECT_THAT(ParseJson<nlohmann::json>("1e400", "body"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("body: invalid JSON: ")));
  EXPECT_TRUE(ParseJsonOrDiscarded<nlohmann::json>("not json").is_discarded());
}

TEST(JsonBoundsTest, ErrorsSayWhatFailedInTheirPayload) {
  EXPECT_EQ(JsonErrorOf(ParseJson<nlohmann::json>("{", "body").status()), JsonError::kSyntax);
  EXPECT_EQ(JsonErrorOf(ParseJson<nlohmann::json>("1e400", "body").status()), JsonError::kSyntax);
  EXPECT_EQ(JsonErrorOf(ParseJson<nlohmann::json>("\"\xff\"", "body").status()), JsonError::kUtf8);
  EXPECT_EQ(JsonErrorOf(ParseJson<nlohmann::json>(std::string(300, '['), "body").status()),
            JsonError::kDepth);
  EXPECT_EQ(JsonErrorOf(CheckJsonText("\xff", "text")), JsonError::kUtf8);
  EXPECT_EQ(JsonErrorOf(absl::InvalidArgumentError("body: invalid JSON at byte 0")), JsonError::kNone);
  EXPECT_EQ(JsonErrorOf(absl::OkStatus()), JsonError::kNone);
}

}  // namespace
}  // namespace validation
}  // namespace understudy
