#include "sim/session_state.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace sim {
namespace {

using ::testing::HasSubstr;

class SessionStateTest : public ::testing::Test {
 protected:
  SessionStateTest() {
    char pattern[] = "/tmp/session_state_test.XXXXXX";
    dir_ = ::mkdtemp(pattern);
  }
  ~SessionStateTest() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_;
};

TEST_F(SessionStateTest, SavedCountsAreLoadedBackForTheSameSessionOnly) {
  const std::string dir = dir_ + "/made/on/demand";
  ASSERT_THAT(SaveSessionCounts(dir, "3f2a-01", {{"behaviours[2]", 1}, {"behaviors[0]", 4}}),
              IsOk());
  absl::StatusOr<std::map<std::string, int>> counts = LoadSessionCounts(dir, "3f2a-01");
  ASSERT_THAT(counts, IsOk());
  EXPECT_EQ(*counts, (std::map<std::string, int>{{"behaviours[2]", 1}, {"behaviors[0]", 4}}));
  ASSERT_THAT(SaveSessionCounts(dir, "3f2a-01", {{"behaviours[2]", 2}}), IsOk());
  EXPECT_EQ(*LoadSessionCounts(dir, "3f2a-01"), (std::map<std::string, int>{{"behaviours[2]", 2}}));
  absl::StatusOr<std::map<std::string, int>> other = LoadSessionCounts(dir, "another");
  ASSERT_THAT(other, IsOk());
  EXPECT_TRUE(other->empty());
}

TEST_F(SessionStateTest, SessionIdsThatCannotNameAFileAreRefused) {
  for (const std::string& id : std::vector<std::string>{"", "../escape", "a/b", ".hidden",
                                                         std::string(129, 'x')}) {
    EXPECT_THAT(SaveSessionCounts(dir_, id, {{"b", 1}}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot name a file")))
        << id;
    EXPECT_THAT(LoadSessionCounts(dir_, id), StatusIs(absl::StatusCode::kInvalidArgument)) << id;
  }
}

TEST_F(SessionStateTest, AFileOfSomethingElseIsDataLoss) {
  std::ofstream(dir_ + "/s1.json") << "[1, 2]";
  EXPECT_THAT(LoadSessionCounts(dir_, "s1"), StatusIs(absl::StatusCode::kDataLoss));
  std::ofstream(dir_ + "/s2.json") << R"({"fail_then_succeed": {"b": "one"}})";
  EXPECT_THAT(LoadSessionCounts(dir_, "s2"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("b is not a count")));
}

TEST_F(SessionStateTest, DefaultDirectoryFollowsTheEnvironment) {
  const char* saved_state = std::getenv("UNDERSTUDY_SIM_STATE_DIR");
  const char* saved_xdg = std::getenv("XDG_STATE_HOME");
  const std::string keep_state = saved_state != nullptr ? saved_state : "";
  const std::string keep_xdg = saved_xdg != nullptr ? saved_xdg : "";
  ::setenv("UNDERSTUDY_SIM_STATE_DIR", "/somewhere/sim", 1);
  EXPECT_EQ(DefaultSessionStateDirectory(), "/somewhere/sim");
  ::unsetenv("UNDERSTUDY_SIM_STATE_DIR");
  ::setenv("XDG_STATE_HOME", "/state", 1);
  EXPECT_EQ(DefaultSessionStateDirectory(), "/state/understudy/sim");
  if (saved_state != nullptr) ::setenv("UNDERSTUDY_SIM_STATE_DIR", keep_state.c_str(), 1);
  if (saved_xdg != nullptr) {
    ::setenv("XDG_STATE_HOME", keep_xdg.c_str(), 1);
  } else {
    ::unsetenv("XDG_STATE_HOME");
  }
}

}  // namespace
}  // namespace sim
}  // namespace understudy
