// Data-driven checks of the sim config validator: every
// tests/sim/configs/broken/NAME.yaml must produce exactly the report in
// NAME.expected (FormatReport lines, sources named by file name), and every
// tests/sim/configs/good/NAME.yaml must load with no problem at all.
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

class BrokenSimConfigTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BrokenSimConfigTest, ReportsExactlyTheExpectedProblems) {
  const fs::path yaml = fs::path(UNDERSTUDY_BROKEN_SIM_CONFIGS_DIR) / GetParam();
  fs::path expected_path = yaml;
  expected_path.replace_extension(".expected");
  const std::string text = validation::ReadCorpusFile(yaml);
  validation::Report report = ValidateSimConfig(text, GetParam());
  const std::string actual = validation::FormatReport(report) + "\n";
  validation::ExpectReportFile(actual, expected_path);
  if (HasFatalFailure()) return;
  // A broken file is broken: at least one error, so ParseSimConfig refuses it.
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(ParseSimConfig(text, GetParam()).status().code(), absl::StatusCode::kInvalidArgument);
  // And `understudy validate` takes it for a sim config.
  EXPECT_TRUE(LooksLikeSimConfig(text) || report.problems[0].message.find("UTF-8") !=
                                              std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Corpus, BrokenSimConfigTest,
                         ::testing::ValuesIn(validation::YamlFilesIn(UNDERSTUDY_BROKEN_SIM_CONFIGS_DIR)),
                         validation::CorpusTestName);

TEST(BrokenSimConfigCorpusTest, HoldsAtLeastTwentyFiles) {
  EXPECT_GE(validation::YamlFilesIn(UNDERSTUDY_BROKEN_SIM_CONFIGS_DIR).size(), 20u);
}

class GoodSimConfigTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoodSimConfigTest, IsValidWithoutWarnings) {
  const fs::path path = fs::path(UNDERSTUDY_GOOD_SIM_CONFIGS_DIR) / GetParam();
  const std::string text = validation::ReadCorpusFile(path);
  validation::Report report = ValidateSimConfig(text, GetParam());
  EXPECT_TRUE(report.problems.empty()) << validation::FormatReport(report);
  EXPECT_TRUE(LooksLikeSimConfig(text));
  absl::StatusOr<SimConfig> config = ParseSimConfig(text, GetParam());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->behaviours.empty());
}

INSTANTIATE_TEST_SUITE_P(Corpus, GoodSimConfigTest,
                         ::testing::ValuesIn(validation::YamlFilesIn(UNDERSTUDY_GOOD_SIM_CONFIGS_DIR)),
                         validation::CorpusTestName);

}  // namespace
}  // namespace sim
}  // namespace understudy
