#include "provider/request_fields.h"

#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace provider {
namespace {

TEST(CheckRoleTest, NamesTheRolesAndTheOneGivenEscapedAndCut) {
  EXPECT_THAT(CheckRole("tool", "messages[1]", {"system", "user", "assistant", "tool"}), IsOk());
  EXPECT_THAT(CheckRole("system", "messages[0]", {"user", "assistant"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       R"(messages[0].role: expected "user" or "assistant", got "system")"));
  EXPECT_THAT(CheckRole("a\"\n" + std::string(100, 'x'), "m", {"user"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       testing::MatchesRegex(R"re(m\.role: expected "user", got "a\\"\\nx{37}.*")re")));
}

TEST(ArgumentsObjectTest, AnObjectAsItIsEverythingElseKept) {
  EXPECT_EQ(DumpJson(ArgumentsObject("")), "{}");
  EXPECT_EQ(DumpJson(ArgumentsObject(R"({"city":"Oslo","n":[1]})")), R"({"city":"Oslo","n":[1]})");
  EXPECT_EQ(DumpJson(ArgumentsObject("[1,2]")), R"({"arguments":"[1,2]"})");
  EXPECT_EQ(DumpJson(ArgumentsObject("{not json")), R"({"arguments":"{not json"})");
}

}  // namespace
}  // namespace provider
}  // namespace understudy
