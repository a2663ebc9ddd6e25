// Data-driven checks of the sim config validator: every
// tests/sim/configs/broken/NAME.yaml (and meow/broken/NAME.yaml, the MEOW
// dialect's) must produce exactly the report in NAME.expected (FormatReport
// lines, sources named by file name), and every tests/sim/configs/good/NAME.yaml
// (and meow/good/NAME.yaml) must load with no problem at all.
//
// To regenerate the expected files after an intended message change, run
// the test with UNDERSTUDY_UPDATE_EXPECTED=1 and review the diff.
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sim/config.h"
#include "validation/corpus_test_util.h"

namespace understudy {
namespace sim {
namespace {

namespace fs = std::filesystem;

// A broken file produces exactly its NAME.expected report, and is refused.
void CheckBroken(const fs::path& dir, const std::string& name) {
  const fs::path yaml = dir / name;
  fs::path expected_path = yaml;
  expected_path.replace_extension(".expected");
  const std::string text = validation::ReadCorpusFile(yaml);
  validation::Report report = ValidateSimConfig(text, name);
  const std::string actual = validation::FormatReport(report) + "\n";
  validation::ExpectReportFile(actual, expected_path);
  if (::testing::Test::HasFatalFailure()) return;
  // A broken file is broken: at least one error, so ParseSimConfig refuses it.
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(ParseSimConfig(text, name).status().code(), absl::StatusCode::kInvalidArgument);
  // And `understudy validate` takes it for a sim config.
  EXPECT_TRUE(LooksLikeSimConfig(text) || report.problems[0].message.find("UTF-8") !=
                                              std::string::npos);
}

// A good file loads with no problem at all, in the dialect of its folder.
void CheckGood(const fs::path& dir, const std::string& name, Dialect dialect) {
  const std::string text = validation::ReadCorpusFile(dir / name);
  validation::Report report = ValidateSimConfig(text, name);
  EXPECT_TRUE(report.problems.empty()) << validation::FormatReport(report);
  EXPECT_TRUE(LooksLikeSimConfig(text));
  absl::StatusOr<SimConfig> config = ParseSimConfig(text, name);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->behaviours.empty());
  EXPECT_EQ(config->dialect, dialect);
}

class BrokenSimConfigTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BrokenSimConfigTest, ReportsExactlyTheExpectedProblems) {
  CheckBroken(UNDERSTUDY_BROKEN_SIM_CONFIGS_DIR, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Corpus, BrokenSimConfigTest,
                         ::testing::ValuesIn(validation::YamlFilesIn(UNDERSTUDY_BROKEN_SIM_CONFIGS_DIR)),
                         validation::CorpusTestName);

TEST(BrokenSimConfigCorpusTest, HoldsAtLeastTwentyFiles) {
  EXPECT_GE(validation::YamlFilesIn(UNDERSTUDY_BROKEN_SIM_CONFIGS_DIR).size(), 20u);
}

class GoodSimConfigTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoodSimConfigTest, IsValidWithoutWarnings) {
  CheckGood(UNDERSTUDY_GOOD_SIM_CONFIGS_DIR, GetParam(), Dialect::kUnderstudy);
}

INSTANTIATE_TEST_SUITE_P(Corpus, GoodSimConfigTest,
                         ::testing::ValuesIn(validation::YamlFilesIn(UNDERSTUDY_GOOD_SIM_CONFIGS_DIR)),
                         validation::CorpusTestName);

// The MEOW dialect's corpus (tests/sim/configs/meow).
class BrokenMeowConfigTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BrokenMeowConfigTest, ReportsExactlyTheExpectedProblems) {
  CheckBroken(UNDERSTUDY_BROKEN_MEOW_CONFIGS_DIR, GetParam());
  // Judged in the MEOW dialect: its keys, not understudy's, are suggested.
  EXPECT_TRUE(LooksLikeSimConfig(
      validation::ReadCorpusFile(fs::path(UNDERSTUDY_BROKEN_MEOW_CONFIGS_DIR) / GetParam())));
}

INSTANTIATE_TEST_SUITE_P(Corpus, BrokenMeowConfigTest,
                         ::testing::ValuesIn(validation::YamlFilesIn(UNDERSTUDY_BROKEN_MEOW_CONFIGS_DIR)),
                         validation::CorpusTestName);

TEST(BrokenMeowConfigCorpusTest, HoldsAtLeastTenFiles) {
  EXPECT_GE(validation::YamlFilesIn(UNDERSTUDY_BROKEN_MEOW_CONFIGS_DIR).size(), 10u);
}

class GoodMeowConfigTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoodMeowConfigTest, IsValidWithoutWarnings) {
  CheckGood(UNDERSTUDY_GOOD_MEOW_CONFIGS_DIR, GetParam(), Dialect::kMeow);
}

INSTANTIATE_TEST_SUITE_P(Corpus, GoodMeowConfigTest,
                         ::testing::ValuesIn(validation::YamlFilesIn(UNDERSTUDY_GOOD_MEOW_CONFIGS_DIR)),
                         validation::CorpusTestName);

}  // namespace
}  // namespace sim
}  // namespace understudy
