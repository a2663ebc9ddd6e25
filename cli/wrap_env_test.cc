#include "cli/wrap_env.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace cli {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

std::map<std::string, std::string> AsMap(
    const std::vector<std::pair<std::string, std::string>>& v) {
  return {v.begin(), v.end()};
}

TEST(WrapperVariablesTest, PointEverySdkAtTheRun) {
  auto vars = AsMap(WrapperVariables("http://127.0.0.1:5000", "127.0.0.1:5001", "run-1",
                                     /*refuse_egress=*/false));
  EXPECT_EQ(vars["OPENAI_BASE_URL"], "http://127.0.0.1:5000/run/run-1/v1");
  EXPECT_EQ(vars["ANTHROPIC_BASE_URL"], "http://127.0.0.1:5000/run/run-1");
  EXPECT_EQ(vars["GOOGLE_GEMINI_BASE_URL"], "http://127.0.0.1:5000/run/run-1");
  EXPECT_EQ(vars["UNDERSTUDY_ADDR"], "127.0.0.1:5001");
  EXPECT_EQ(vars["UNDERSTUDY_HTTP"], "http://127.0.0.1:5000");
  EXPECT_EQ(vars["UNDERSTUDY_RUN"], "run-1");
  EXPECT_EQ(vars.count("HTTPS_PROXY"), 0u) << "a recording leaves the proxy variables alone";
  EXPECT_EQ(vars.count("NODE_USE_ENV_PROXY"), 0u);
}

TEST(WrapperVariablesTest, AReplayPointsEveryProxyVariableAtTheRefusingListener) {
  auto vars = AsMap(WrapperVariables("http://127.0.0.1:5000", "127.0.0.1:5001", "run-1",
                                     /*refuse_egress=*/true));
  for (const char* name :
       {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"}) {
    EXPECT_EQ(vars[name], "http://127.0.0.1:5000") << name;
  }
  EXPECT_EQ(vars["NO_PROXY"], "127.0.0.1,localhost,::1");
  EXPECT_EQ(vars["no_proxy"], "127.0.0.1,localhost,::1");
  EXPECT_EQ(vars["NODE_USE_ENV_PROXY"], "1");
}

TEST(WithVariablesTest, ReplacesTheCallersValuesAndKeepsTheRest) {
  std::vector<std::string> env =
      WithVariables({"PATH=/bin", "https_proxy=http://corp:3128", "NO_PROXY=*", "HOME=/h",
                     "OPENAI_BASE_URL=https://api.openai.com/v1", "NO_PROXY_EXTRA=1"},
                    {{"https_proxy", "http://127.0.0.1:1"},
                     {"NO_PROXY", "127.0.0.1"},
                     {"OPENAI_BASE_URL", "http://127.0.0.1:1/run/r/v1"}});
  EXPECT_THAT(
      env, ElementsAre("PATH=/bin", "HOME=/h", "NO_PROXY_EXTRA=1", "https_proxy=http://127.0.0.1:1",
                       "NO_PROXY=127.0.0.1", "OPENAI_BASE_URL=http://127.0.0.1:1/run/r/v1"));
}

TEST(WithVariablesTest, AnEntryWithoutValueIsANameToo) {
  EXPECT_THAT(WithVariables({"HTTPS_PROXY"}, {{"HTTPS_PROXY", "x"}}), ElementsAre("HTTPS_PROXY=x"));
  EXPECT_THAT(WithVariables({}, {}), IsEmpty());
}

}  // namespace
}  // namespace cli
}  // namespace understudy
