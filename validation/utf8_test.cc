#include "validation/utf8.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace validation {
namespace {

TEST(Utf8Test, AcceptsEveryWellFormedLength) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é € 😀
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));                           // U+10FFFF
}

TEST(Utf8Test, FindsTheFirstIllFormedByte) {
  EXPECT_EQ(FindInvalidUtf8("ab\xFF" "cd"), 2u);
  EXPECT_EQ(FindInvalidUtf8("\xC3"), 0u);                // truncated
  EXPECT_EQ(FindInvalidUtf8("x\xC0\xAF"), 1u);           // overlong '/'
  EXPECT_EQ(FindInvalidUtf8("\xED\xA0\x80"), 0u);        // surrogate U+D800
  EXPECT_EQ(FindInvalidUtf8("\xF4\x90\x80\x80"), 0u);    // above U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("ok \xE2\x82"), 3u);         // cut mid-sequence
}

TEST(Utf8Test, SanitizeReplacesEachBadByteAndKeepsTheRest) {
  EXPECT_EQ(SanitizeUtf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(SanitizeUtf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(SanitizeUtf8("\xC3\xC3\xA9"), "\xEF\xBF\xBD\xC3\xA9");
  EXPECT_TRUE(IsValidUtf8(SanitizeUtf8("\xED\xA0\x80\xF8\x80")));
}

TEST(Utf8Test, PositionCountsLinesAndBytes) {
  const TextPosition p = PositionOf("ab\ncd\nef", 7);
  EXPECT_EQ(p.line, 3);
  EXPECT_EQ(p.column, 2);
  EXPECT_EQ(PositionOf("abc", 100).column, 4);
}

}  // namespace
}  // namespace validation
}  // namespace understudy
