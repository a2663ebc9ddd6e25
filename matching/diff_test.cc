#include "matching/diff.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace matching {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::Field;

TEST(DiffTest, NamesTheChangedMessageContentByPath) {
  json a = json::parse(R"({"messages":[{"role":"system","content":"a"},{"role":"user","content":"fix it"}]})");
  json b = json::parse(R"({"messages":[{"role":"system","content":"a"},{"role":"user","content":"fix it now"}]})");
  std::vector<JsonDiff> d = DiffJson(a, b);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "messages[1].content");
  EXPECT_EQ(d[0].recorded, "\"fix it\"");
  EXPECT_EQ(d[0].got, "\"fix it now\"");
}

TEST(DiffTest, ExtraArrayElementIsReportedAsAbsentOnOneSide) {
  json a = json::parse(R"({"messages":[1]})");
  json b = json::parse(R"({"messages":[1,{"role":"user"}]})");
  std::vector<JsonDiff> d = DiffJson(a, b);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "messages[1]");
  EXPECT_EQ(d[0].recorded, "");
  EXPECT_EQ(d[0].got, R"({"role":"user"})");
}

TEST(DiffTest, MissingKeysOnEitherSideAreMergedInSortedOrder) {
  json a = json::parse(R"({"a":1,"c":3})");
  json b = json::parse(R"({"b":2,"c":3})");
  EXPECT_THAT(DiffJson(a, b), ElementsAre(Field(&JsonDiff::path, "a"), Field(&JsonDiff::path, "b")));
}

TEST(DiffTest, EqualValuesHaveNoDiffs) {
  json a = json::parse(R"({"x":[1,{"y":"z"}]})");
  EXPECT_TRUE(DiffJson(a, a).empty());
  EXPECT_EQ(CountJsonDiffs(a, a, 10), 0u);
}

TEST(DiffTest, CountStopsAtTheLimit) {
  json a = json::array();
  json b = json::array();
  for (int i = 0; i < 50; ++i) {
    a.push_back(i);
    b.push_back(i + 1);
  }
  EXPECT_EQ(CountJsonDiffs(a, b, 5), 5u);
  EXPECT_EQ(DiffJson(a, b, 3).size(), 3u);
}

TEST(DiffTest, DistanceWeighsWhatIsPresentOnOneSideOnly) {
  json call =
      json::parse(R"({"role":"assistant","tool_calls":[{"id":"a","name":"f","arguments":"{}"}]})");
  json result = json::parse(R"({"role":"tool","tool_call_id":"a","content":"ok"})");
  json user = json::parse(R"({"role":"user","content":"hi"})");
  json shorter = json::array({user});
  json longer = json::array({user, call, result});
  // Two absent messages are two differences to list, but seven fields apart.
  EXPECT_EQ(CountJsonDiffs(shorter, longer, 100), 2u);
  EXPECT_EQ(JsonDistance(shorter, longer, 100), 7u);
  EXPECT_EQ(JsonDistance(longer, shorter, 100), 7u);
  // Two ids that differ are two fields apart.
  json other_ids = longer;
  other_ids[1]["tool_calls"][0]["id"] = "b";
  other_ids[2]["tool_call_id"] = "b";
  EXPECT_EQ(JsonDistance(longer, other_ids, 100), 2u);
  // An empty container or a scalar weighs one; the limit bounds the count.
  EXPECT_EQ(JsonDistance(json::object(), json::parse(R"({"a":[],"b":{}})"), 100), 2u);
  EXPECT_EQ(JsonDistance(shorter, longer, 3), 3u);
  EXPECT_EQ(JsonDistance(longer, longer, 100), 0u);
}

TEST(DiffTest, AbbreviateCutsLongTextOnACharacterBoundary) {
  std::string s = Abbreviate(json(std::string(200, 'x')), 20);
  EXPECT_EQ(s, "\"" + std::string(19, 'x') + "…");
  std::string u = Abbreviate(json("ééééééééééé"), 6);
  EXPECT_EQ(u.substr(0, 5), "\"éé");
}

TEST(DiffTest, LongTextsAreShownFromJustBeforeTheirFirstDifference) {
  std::string prefix(300, 'a');
  json a = {{"content", prefix + "recorded tail"}};
  json b = {{"content", prefix + "changed tail"}};
  std::vector<JsonDiff> d = DiffJson(a, b);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].recorded, "\"…" + std::string(40, 'a') + "recorded tail\"");
  EXPECT_EQ(d[0].got, "\"…" + std::string(40, 'a') + "changed tail\"");
}

TEST(DiffTest, LongTextsDifferingEarlyAreCutAtTheEnd) {
  json a = json("x" + std::string(300, 'b'));
  json b = json("y" + std::string(300, 'b'));
  std::vector<JsonDiff> d = DiffJson(a, b);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].recorded, "\"x" + std::string(119, 'b') + "…\"");
}

}  // namespace
}  // namespace matching
}  // namespace understudy
