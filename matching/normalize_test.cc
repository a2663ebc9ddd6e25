#include "matching/normalize.h"

#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace matching {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::shared_ptr<const MatchNormalizer> Make(std::vector<std::string> paths,
                                            std::vector<std::string> rules) {
  auto n = MatchNormalizer::Create(paths, rules);
  EXPECT_TRUE(n.ok()) << n.status();
  return n.ok() ? *n : std::make_shared<MatchNormalizer>();
}

TEST(NormalizeTest, IgnoredPathsAreRemovedWhereverTheyAre) {
  auto n = Make({"params.temperature", "messages[*].name", "extra.user"}, {});
  json j = json::parse(R"({"params":{"temperature":0.2,"seed":1},
      "messages":[{"role":"user","name":"a"},{"role":"user","name":"b"}],"extra":{"user":"u1"}})");
  n->Apply(&j);
  EXPECT_EQ(j, json::parse(R"({"params":{"seed":1},
      "messages":[{"role":"user"},{"role":"user"}],"extra":{}})"));
}

TEST(NormalizeTest, IndexedPathBlanksOneElementAndKeepsTheOthersInPlace) {
  auto n = Make({"messages[0]"}, {});
  json j = json::parse(R"({"messages":[{"a":1},{"b":2}]})");
  n->Apply(&j);
  EXPECT_EQ(j, json::parse(R"({"messages":[null,{"b":2}]})"));
}

TEST(NormalizeTest, BuiltinUuidMakesDifferentIdsEqual) {
  auto n = Make({}, {"uuid"});
  json a = json::parse(R"({"messages":[{"content":"task 123e4567-e89b-12d3-a456-426614174000 go"}]})");
  json b = json::parse(R"({"messages":[{"content":"task 9f1c2d3e-0000-4abc-8def-0123456789ab go"}]})");
  n->Apply(&a);
  n->Apply(&b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a["messages"][0]["content"], "task <uuid> go");
}

TEST(NormalizeTest, TimestampAndTmpPathBuiltins) {
  auto n = Make({}, {"timestamp", "tmp-path"});
  json j = json("at 2026-11-22T10:00:01.5Z in /tmp/run-42/x.txt now");
  n->Apply(&j);
  EXPECT_EQ(j, "at <timestamp> in <tmp-path> now");
}

TEST(NormalizeTest, CustomRuleWithGroups) {
  auto n = Make({}, {"session-([0-9]+)=>session-N"});
  json j = json("open session-77 and session-8");
  n->Apply(&j);
  EXPECT_EQ(j, "open session-N and session-N");
}

TEST(NormalizeTest, BadOptionsNameTheEntry) {
  EXPECT_THAT(MatchNormalizer::Create({"messages[x]"}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--ignore-path \"messages[x]\": expected [*] or [N]")));
  EXPECT_THAT(MatchNormalizer::Create({"a..b"}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty key")));
  EXPECT_THAT(MatchNormalizer::Create({}, {"uuids"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a built-in")));
  EXPECT_THAT(MatchNormalizer::Create({}, {"(unclosed=>x"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("missing )")));
  EXPECT_THAT(MatchNormalizer::Create({}, {"a=>\\2"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--normalize")));
}

TEST(NormalizeTest, PathologicalPatternRunsInLinearTime) {
  // (a+)+$ takes exponential time in a backtracking engine; RE2 does not
  // backtrack. 100k characters would never finish otherwise.
  auto n = Make({}, {"(a+)+$=>x"});
  json j = json(std::string(100000, 'a') + "!");
  n->Apply(&j);
  EXPECT_EQ(j.get<std::string>().size(), 100001u);
}

}  // namespace
}  // namespace matching
}  // namespace understudy
