#include "cli/mcp_stdio.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "service/http_server.h"
#include "upstream/http_upstream.h"

namespace understudy {
namespace cli {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using Json = nlohmann::json;

std::vector<std::string> Texts(const std::vector<LineSplitter::Line>& lines) {
  std::vector<std::string> out;
  for (const auto& line : lines) out.push_back(line.too_long ? "<too long>" : line.text);
  return out;
}

TEST(LineSplitterTest, SplitsLinesAcrossPiecesAndDropsCarriageReturns) {
  LineSplitter splitter;
  std::vector<LineSplitter::Line> lines;
  splitter.Feed("a\nbc", &lines);
  splitter.Feed("d\r", &lines);
  splitter.Feed("\n\n", &lines);
  splitter.Feed("e", &lines);
  EXPECT_THAT(Texts(lines), ElementsAre("a", "bcd", ""));
  lines.clear();
  splitter.Finish(&lines);
  EXPECT_THAT(Texts(lines), ElementsAre("e"));
}

TEST(LineSplitterTest, OverlongLineIsReportedOnceAndReadingGoesOn) {
  LineSplitter splitter(8);
  std::vector<LineSplitter::Line> lines;
  splitter.Feed("0123456789", &lines);
  splitter.Feed("abcdef", &lines);
  EXPECT_THAT(lines, IsEmpty());
  splitter.Feed("xyz\nok\n12345678\r\n123456789\n", &lines);
  EXPECT_THAT(Texts(lines), ElementsAre("<too long>", "ok", "12345678", "<too long>"));
}

TEST(LineSplitterTest, OverlongLastLineWithoutNewlineIsReportedAtTheEnd) {
  LineSplitter splitter(4);
  std::vector<LineSplitter::Line> lines;
  splitter.Feed("abcdefgh", &lines);
  splitter.Finish(&lines);
  EXPECT_THAT(Texts(lines), ElementsAre("<too long>"));
}

TEST(ToOneLineTest, KeepsSingleLinesAndCompactsOthers) {
  EXPECT_THAT(ToOneLine(R"({"b": 1,  "a": 2})"), IsOk());
  EXPECT_EQ(*ToOneLine(R"({"b": 1,  "a": 2})"), R"({"b": 1,  "a": 2})");
  EXPECT_EQ(*ToOneLine("{\n  \"b\": 1,\r\n  \"a\": \"x\\ny\"\n}"), R"({"b":1,"a":"x\ny"})");
  EXPECT_THAT(ToOneLine("not\njson"), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace cli
}  // namespace understudy
