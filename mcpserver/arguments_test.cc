#include "mcpserver/arguments.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace mcpserver {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const json kSchema = json::parse(R"({
  "type": "object",
  "properties": {
    "run": {"type": "string", "minLength": 1, "maxLength": 8},
    "kinds": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    "limit": {"type": "integer", "minimum": 1, "maximum": 10},
    "match": {"type": "string", "enum": ["exact", "prefix", "subsequence"]},
    "spec": {"type": ["string", "object"]},
    "attributes": {"type": "object", "additionalProperties": {"type": "string"}}
  },
  "required": ["run"],
  "additionalProperties": false
})");

TEST(CheckArgumentsTest, AcceptsConformingArguments) {
  EXPECT_THAT(CheckArguments(kSchema, {{"run", "r1"}, {"kinds", {"miss"}}, {"limit", 3},
                                       {"match", "prefix"}, {"spec", {{"a", 1}}},
                                       {"attributes", {{"k", "v"}}}}),
              IsEmpty());
  EXPECT_THAT(CheckArguments(kSchema, {{"run", "r1"}, {"spec", "text"}}), IsEmpty());
}

TEST(CheckArgumentsTest, NamesEveryWrongArgumentByPath) {
  EXPECT_THAT(
      CheckArguments(kSchema, {{"run", 42}, {"kinds", {"a", 7}}, {"limit", 1.5},
                               {"attributes", {{"k", true}}}}),
      ElementsAre("arguments.attributes[\"k\"]: expected a string, got true",
                  "arguments.kinds[1]: expected a string, got 7",
                  "arguments.limit: expected an integer, got 1.5",
                  "arguments.run: expected a string, got 42"));
}

TEST(CheckArgumentsTest, MissingUnknownAndMisspelled) {
  EXPECT_THAT(CheckArguments(kSchema, {{"rnu", "r1"}}),
              ElementsAre("arguments: missing required argument \"run\"",
                          "arguments: unknown argument \"rnu\" (did you mean \"run\"?)"));
  EXPECT_THAT(CheckArguments(kSchema, json::array()),
              ElementsAre("arguments: expected an object, got an array"));
}

TEST(CheckArgumentsTest, BoundsWrittenInCodeAreSignedIntegersToo) {
  const json schema = {{"type", "object"},
                       {"properties", {{"run", {{"type", "string"}, {"minLength", 1},
                                                {"maxLength", 3}}},
                                       {"kinds", {{"type", "array"}, {"minItems", 1}}}}}};
  EXPECT_THAT(CheckArguments(schema, {{"run", ""}, {"kinds", json::array()}}),
              ElementsAre("arguments.kinds: needs at least 1 item",
                          "arguments.run: must not be empty"));
  EXPECT_THAT(CheckArguments(schema, {{"run", "abcd"}}),
              ElementsAre("arguments.run: 4 bytes, more than the 3 allowed"));
}

TEST(CheckArgumentsTest, BoundsAndEnums) {
  EXPECT_THAT(CheckArguments(kSchema, {{"run", ""}}), ElementsAre("arguments.run: must not be empty"));
  EXPECT_THAT(CheckArguments(kSchema, {{"run", "123456789"}}),
              ElementsAre("arguments.run: 9 bytes, more than the 8 allowed"));
  EXPECT_THAT(CheckArguments(kSchema, {{"run", "r"}, {"limit", 11}}),
              ElementsAre("arguments.limit: 11 is above the maximum 10"));
  EXPECT_THAT(CheckArguments(kSchema, {{"run", "r"}, {"kinds", {"a", "b", "c"}}}),
              ElementsAre("arguments.kinds: 3 items, more than the 2 allowed"));
  EXPECT_THAT(CheckArguments(kSchema, {{"run", "r"}, {"match", "exakt"}}),
              ElementsAre("arguments.match: the string \"exakt\" is not one of exact, prefix, "
                          "subsequence (did you mean \"exact\"?)"));
  EXPECT_THAT(CheckArguments(kSchema, {{"run", "r"}, {"spec", 3}}),
              ElementsAre("arguments.spec: expected a string or an object, got 3"));
}

}  // namespace
}  // namespace mcpserver
}  // namespace understudy
