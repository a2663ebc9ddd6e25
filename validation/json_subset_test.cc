#include "validation/json_subset.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace validation {
namespace {

using nlohmann::json;

std::string Difference(const std::string& expected, const std::string& actual) {
  std::string difference;
  EXPECT_FALSE(JsonSubset(json::parse(expected), json::parse(actual), &difference));
  return difference;
}

TEST(JsonSubsetTest, ObjectsAreSubsetsRecursively) {
  EXPECT_TRUE(JsonSubset(json::parse(R"({"phase":"execute"})"),
                         json::parse(R"({"phase":"execute","files":["a"]})"), nullptr));
  EXPECT_TRUE(JsonSubset(json::parse(R"({"meta":{"owner":"ann"}})"),
                         json::parse(R"({"meta":{"owner":"ann","team":"x"},"n":1})"), nullptr));
  EXPECT_TRUE(JsonSubset(json::object(), json::parse(R"({"a":1})"), nullptr));
}

TEST(JsonSubsetTest, ArraysAndScalarsMustBeEqual) {
  EXPECT_TRUE(JsonSubset(json::parse(R"({"files":["a","b"]})"),
                         json::parse(R"({"files":["a","b"]})"), nullptr));
  EXPECT_EQ(Difference(R"({"files":["a"]})", R"({"files":["a","b"]})"),
            R"(at files: expected ["a"], got ["a","b"])");
  EXPECT_TRUE(JsonSubset(json(1), json(1.0), nullptr));
  EXPECT_EQ(Difference("1", R"("1")"), R"(expected 1, got "1")");
}

TEST(JsonSubsetTest, ReportsTheFirstDifferenceWithItsPath) {
  EXPECT_EQ(Difference(R"({"phase":"verification"})", R"({"phase":"execute"})"),
            R"(at phase: expected "verification", got "execute")");
  EXPECT_EQ(Difference(R"({"meta":{"owner":"ann"}})", R"({"meta":{}})"),
            R"(at meta.owner: missing (expected "ann"))");
  EXPECT_EQ(Difference(R"({"a.b":{"c":1}})", R"({"a.b":{"c":2}})"),
            R"(at ["a.b"].c: expected 1, got 2)");
  EXPECT_EQ(Difference(R"({"phase":"x"})", R"("x")"), R"(expected {"phase":"x"}, got "x")");
}

TEST(JsonSubsetTest, LongValuesAreShortenedOnACharacterBoundary) {
  // 159 ASCII bytes, then "é" (2 bytes) straddling the 160-byte cut.
  const std::string value = std::string(158, 'a') + "\u00e9" + std::string(40, 'b');
  const std::string difference =
      Difference(absl::StrCat(R"({"k":")", value, R"("})"), R"({"k":"x"})");
  EXPECT_EQ(difference, absl::StrCat(R"(at k: expected ")", std::string(158, 'a'),
                                     R"(... (202 bytes), got "x")"));
}

}  // namespace
}  // namespace validation
}  // namespace understudy
