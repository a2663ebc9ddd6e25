// Data-driven checks of the sim config validator: every
// tests/sim/configs/broken/NAME.yaml must produce exactly the report in
// NAME.expected (FormatReport lines, sources named by file name), and every
// tests/sim/configs/good/NAME.yaml must load with no problem at all.
//
// To regenerate the expected files after an intended message change, run
// the test with UNDERSTUDY_UPDATE_EXPECTED=1 and review the diff.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sim/config.h"

namespace understudy {
namespace sim {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> YamlFilesIn(const char* dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".yaml") names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// "unknown-action.yaml" → "unknown_action", a valid test name.
std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = fs::path(info.param).stem().string();
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class BrokenSimConfigTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BrokenSimConfigTest, ReportsExactlyTheExpectedProblems) {
  const fs::path yaml = fs::path(UNDERSTUDY_BROKEN_SIM_CONFIGS_DIR) / GetParam();
  fs::path expected_path = yaml;
  expected_path.replace_extension(".expected");
  const std::string text = ReadAll(yaml);
  validation::Report report = ValidateSimConfig(text, GetParam());
  const std::string actual = validation::FormatReport(report) + "\n";
  const char* update = std::getenv("UNDERSTUDY_UPDATE_EXPECTED");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(expected_path, std::ios::binary) << actual;
  }
  ASSERT_TRUE(fs::exists(expected_path)) << expected_path << " is missing";
  EXPECT_EQ(actual, ReadAll(expected_path));
  // A broken file is broken: at least one error, so ParseSimConfig refuses it.
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(ParseSimConfig(text, GetParam()).status().code(), absl::StatusCode::kInvalidArgument);
  // And `understudy validate` takes it for a sim config.
  EXPECT_TRUE(LooksLikeSimConfig(text) || report.problems[0].message.find("UTF-8") !=
                                              std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Corpus, BrokenSimConfigTest,
                         ::testing::ValuesIn(YamlFilesIn(UNDERSTUDY_BROKEN_SIM_CONFIGS_DIR)),
                         TestName);

TEST(BrokenSimConfigCorpusTest, HoldsAtLeastTwentyFiles) {
  EXPECT_GE(YamlFilesIn(UNDERSTUDY_BROKEN_SIM_CONFIGS_DIR).size(), 20u);
}

class GoodSimConfigTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoodSimConfigTest, IsValidWithoutWarnings) {
  const fs::path path = fs::path(UNDERSTUDY_GOOD_SIM_CONFIGS_DIR) / GetParam();
  const std::string text = ReadAll(path);
  validation::Report report = ValidateSimConfig(text, GetParam());
  EXPECT_TRUE(report.problems.empty()) << validation::FormatReport(report);
  EXPECT_TRUE(LooksLikeSimConfig(text));
  absl::StatusOr<SimConfig> config = ParseSimConfig(text, GetParam());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->behaviours.empty());
}

INSTANTIATE_TEST_SUITE_P(Corpus, GoodSimConfigTest,
                         ::testing::ValuesIn(YamlFilesIn(UNDERSTUDY_GOOD_SIM_CONFIGS_DIR)),
                         TestName);

}  // namespace
}  // namespace sim
}  // namespace understudy
