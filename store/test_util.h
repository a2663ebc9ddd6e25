// Test helpers for the store's tests: a fresh directory for each test's
// database files, and a StatusOr value matcher (which base/status_matchers.h
// does not have yet).
#ifndef UNDERSTUDY_STORE_TEST_UTIL_H_
#define UNDERSTUDY_STORE_TEST_UTIL_H_

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace store {

// A new, empty directory under ::testing::TempDir(), removed with everything
// in it on destruction. Real files, so SQLite's WAL and locks work as in
// production.
class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string pattern = absl::StrCat(::testing::TempDir(), "/understudy_store_XXXXXX");
    char* made = mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr) << "mkdtemp " << pattern;
    path_ = pattern;
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  ~ScopedTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  const std::string& path() const { return path_; }
  // The path of `name` inside this directory.
  std::string File(absl::string_view name) const { return absl::StrCat(path_, "/", name); }

 private:
  std::string path_;
};

// Matches an OK absl::StatusOr<T> whose value matches `matcher`.
MATCHER_P(IsOkAndHolds, matcher, "") {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status().ToString();
    return false;
  }
  return ::testing::ExplainMatchResult(matcher, *arg, result_listener);
}

}  // namespace store
}  // namespace understudy

#endif  // UNDERSTUDY_STORE_TEST_UTIL_H_
