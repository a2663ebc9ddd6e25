// Data-driven validator tests over a folder of documents (the broken
// scenarios, the sim configs): the files, their text, a test name for each,
// and the comparison of a report with its NAME.expected file. Test-only.
//
//   INSTANTIATE_TEST_SUITE_P(Corpus, BrokenTest,
//       ::testing::ValuesIn(validation::YamlFilesIn(DIR)), validation::CorpusTestName);
//   validation::ExpectReportFile(FormatReport(report) + "\n", DIR "/x.expected");
//
// UNDERSTUDY_UPDATE_EXPECTED=1 rewrites the expected files from the actual
// reports (review the diff after an intended message change).
#ifndef UNDERSTUDY_VALIDATION_CORPUS_TEST_UTIL_H_
#define UNDERSTUDY_VALIDATION_CORPUS_TEST_UTIL_H_

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "gtest/gtest.h"

namespace understudy {
namespace validation {

// The *.yaml file names in `dir`, sorted.
inline std::vector<std::string> YamlFilesIn(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".yaml") names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The whole file ("" when it cannot be read).
inline std::string ReadCorpusFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// "missing-schema.yaml" → "missing_schema", a valid test name.
inline std::string CorpusTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = std::filesystem::path(info.param).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

// Expects `actual` to be the text of `expected_path`; with
// UNDERSTUDY_UPDATE_EXPECTED=1 writes it there first.
inline void ExpectReportFile(const std::string& actual,
                             const std::filesystem::path& expected_path) {
  const char* update = std::getenv("UNDERSTUDY_UPDATE_EXPECTED");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(expected_path, std::ios::binary) << actual;
  }
  ASSERT_TRUE(std::filesystem::exists(expected_path)) << expected_path << " is missing";
  EXPECT_EQ(actual, ReadCorpusFile(expected_path));
}

}  // namespace validation
}  // namespace understudy

#endif  // UNDERSTUDY_VALIDATION_CORPUS_TEST_UTIL_H_
