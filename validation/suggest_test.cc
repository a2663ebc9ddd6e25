#include "validation/suggest.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace understudy {
namespace validation {
namespace {

TEST(SuggestTest, TranspositionsAndCaseAreCheap) {
  EXPECT_EQ(EditDistance("agnet", "agent"), 1u);
  EXPECT_EQ(EditDistance("AGENT", "agent"), 0u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
}

TEST(SuggestTest, ClosestWithinAThirdOfTheWord) {
  const std::vector<std::string> names = {"agent", "phase", "iteration"};
  EXPECT_EQ(Suggest("agnet", names), "did you mean \"agent\"?");
  EXPECT_EQ(Suggest("iteratoin", names), "did you mean \"iteration\"?");
  EXPECT_EQ(Suggest("zzzzz", names), "");
}

TEST(SuggestTest, PrefixWhenNothingIsClose) {
  EXPECT_EQ(Suggest("output", {"input_tokens", "output_tokens"}),
            "did you mean \"output_tokens\"?");
  EXPECT_EQ(Suggest("ou", {"output_tokens"}), "");
}

TEST(SuggestTest, LongWordsGetNothing) {
  EXPECT_EQ(Suggest(std::string(65, 'a'), {std::string(65, 'a')}), "");
}

}  // namespace
}  // namespace validation
}  // namespace understudy
