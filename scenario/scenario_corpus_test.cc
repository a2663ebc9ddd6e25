// Data-driven checks: every tests/scenarios/broken/NAME.yaml must produce
// exactly the report in NAME.expected (FormatReport lines, sources named by
// file name), and every shipped pack in scenarios/ must be valid.
//
// To regenerate the expected files after an intended message change, run
// the test with UNDERSTUDY_UPDATE_EXPECTED=1 and review the diff.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scenario/scenario.h"
#include "validation/corpus_test_util.h"

namespace understudy {
namespace scenario {
namespace {

namespace fs = std::filesystem;

class BrokenScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BrokenScenarioTest, ReportsExactlyTheExpectedProblems) {
  const fs::path yaml = fs::path(UNDERSTUDY_BROKEN_SCENARIOS_DIR) / GetParam();
  fs::path expected_path = yaml;
  expected_path.replace_extension(".expected");
  ValidationReport report = ValidateScenario(validation::ReadCorpusFile(yaml), GetParam());
  const std::string actual = FormatReport(report) + "\n";
  validation::ExpectReportFile(actual, expected_path);
  if (HasFatalFailure()) return;
  // A broken file is broken: at least one error, so LoadScenario refuses it.
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(LoadScenario(validation::ReadCorpusFile(yaml), GetParam()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Corpus, BrokenScenarioTest,
                         ::testing::ValuesIn(validation::YamlFilesIn(UNDERSTUDY_BROKEN_SCENARIOS_DIR)),
                         validation::CorpusTestName);

TEST(BrokenScenarioCorpusTest, HoldsAtLeastThirtyFiles) {
  EXPECT_GE(validation::YamlFilesIn(UNDERSTUDY_BROKEN_SCENARIOS_DIR).size(), 30u);
}

class ScenarioPackTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ScenarioPackTest, IsValidWithoutWarnings) {
  const fs::path path = fs::path(UNDERSTUDY_SCENARIO_PACKS_DIR) / GetParam();
  ValidationReport report = ValidateScenario(validation::ReadCorpusFile(path), GetParam());
  EXPECT_TRUE(report.problems.empty()) << FormatReport(report);
  absl::StatusOr<Scenario> scenario = LoadScenario(validation::ReadCorpusFile(path), GetParam());
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_FALSE(scenario->name.empty());
  EXPECT_FALSE(scenario->description.empty());
}

INSTANTIATE_TEST_SUITE_P(Packs, ScenarioPackTest,
                         ::testing::ValuesIn(validation::YamlFilesIn(UNDERSTUDY_SCENARIO_PACKS_DIR)),
                         validation::CorpusTestName);

TEST(ScenarioPackCorpusTest, ShipsTheFourNamedPacks) {
  ::unsetenv("UNDERSTUDY_SCENARIOS");
  std::vector<std::string> packs = validation::YamlFilesIn(UNDERSTUDY_SCENARIO_PACKS_DIR);
  for (const char* name :
       {"error-handling.yaml", "rate-limit.yaml", "network-resilience.yaml", "slow-stream.yaml"}) {
    EXPECT_NE(std::find(packs.begin(), packs.end(), name), packs.end()) << name;
  }
}

}  // namespace
}  // namespace scenario
}  // namespace understudy
