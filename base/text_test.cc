#include "base/text.h"

#include "gtest/gtest.h"

namespace understudy {
namespace {

TEST(ShortenTest, KeepsTextThatFits) {
  EXPECT_EQ(Shorten("", 0), "");
  EXPECT_EQ(Shorten("abc", 3), "abc");
}

TEST(ShortenTest, CutsAndSaysSo) { EXPECT_EQ(Shorten("abcdef", 4), "abcd..."); }

TEST(ShortenTest, NeverSplitsAUtf8Sequence) {
  // "é" is two bytes (C3 A9) at offsets 2-3: a cut at 3 would split it.
  EXPECT_EQ(Shorten("ab\xC3\xA9z", 3), "ab...");
  // A four-byte sequence at the start, cut inside it: nothing of it stays.
  EXPECT_EQ(Shorten("\xF0\x9F\x98\x80x", 2), "...");
  EXPECT_EQ(Shorten("ab\xC3\xA9z", 4), "ab\xC3\xA9...");
}

}  // namespace
}  // namespace understudy
