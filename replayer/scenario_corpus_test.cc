// Data-driven checks: every tests/scenarios/broken/NAME.yaml must produce
// exactly the report in NAME.expected (FormatReport lines, sources named by
// file name), and every shipped pack in scenarios/ must be valid.
//
// To regenerate the expected files after an intended message change, run
// the test with UNDERSTUDY_UPDATE_EXPECTED=1 and review the diff.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "replayer/scenario.h"

namespace understudy {
namespace replayer {
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

// "missing-schema.yaml" → "missing_schema", a valid test name.
std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = fs::path(info.param).stem().string();
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class BrokenScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BrokenScenarioTest, ReportsExactlyTheExpectedProblems) {
  const fs::path yaml = fs::path(UNDERSTUDY_BROKEN_SCENARIOS_DIR) / GetParam();
  fs::path expected_path = yaml;
  expected_path.replace_extension(".expected");
  ValidationReport report = ValidateScenario(ReadAll(yaml), GetParam());
  const std::string actual = FormatReport(report) + "\n";
  const char* update = std::getenv("UNDERSTUDY_UPDATE_EXPECTED");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(expected_path, std::ios::binary) << actual;
  }
  ASSERT_TRUE(fs::exists(expected_path)) << expected_path << " is missing";
  EXPECT_EQ(actual, ReadAll(expected_path));
  // A broken file is broken: at least one error, so LoadScenario refuses it.
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(LoadScenario(ReadAll(yaml), GetParam()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Corpus, BrokenScenarioTest,
                         ::testing::ValuesIn(YamlFilesIn(UNDERSTUDY_BROKEN_SCENARIOS_DIR)),
                         TestName);

TEST(BrokenScenarioCorpusTest, HoldsAtLeastThirtyFiles) {
  EXPECT_GE(YamlFilesIn(UNDERSTUDY_BROKEN_SCENARIOS_DIR).size(), 30u);
}

class ScenarioPackTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ScenarioPackTest, IsValidWithoutWarnings) {
  const fs::path path = fs::path(UNDERSTUDY_SCENARIO_PACKS_DIR) / GetParam();
  ValidationReport report = ValidateScenario(ReadAll(path), GetParam());
  EXPECT_TRUE(report.problems.empty()) << FormatReport(report);
  absl::StatusOr<Scenario> scenario = LoadScenario(ReadAll(path), GetParam());
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_FALSE(scenario->name.empty());
  EXPECT_FALSE(scenario->description.empty());
}

INSTANTIATE_TEST_SUITE_P(Packs, ScenarioPackTest,
                         ::testing::ValuesIn(YamlFilesIn(UNDERSTUDY_SCENARIO_PACKS_DIR)),
                         TestName);

TEST(ScenarioPackCorpusTest, ShipsTheFourNamedPacks) {
  ::unsetenv("UNDERSTUDY_SCENARIOS");
  std::vector<std::string> packs = YamlFilesIn(UNDERSTUDY_SCENARIO_PACKS_DIR);
  for (const char* name :
       {"error-handling.yaml", "rate-limit.yaml", "network-resilience.yaml", "slow-stream.yaml"}) {
    EXPECT_NE(std::find(packs.begin(), packs.end(), name), packs.end()) << name;
  }
}

}  // namespace
}  // namespace replayer
}  // namespace understudy
