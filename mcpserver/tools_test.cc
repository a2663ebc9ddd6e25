#include "mcpserver/tool_impl.h"

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "validation/schemas.h"

namespace understudy {
namespace mcpserver {
namespace {

using ::testing::HasSubstr;

// The resolved path, or the error's text (so a failure shows it).
std::string Resolved(const ToolsOptions& options, absl::string_view key, const std::string& path,
                     bool write) {
  absl::StatusOr<std::string> r = ResolvePath(options, key, path, write);
  return r.ok() ? *r : r.status().ToString();
}

class ResolvePathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mcpserver_paths_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    options_.root = dir_ + "/root";
    ASSERT_EQ(::mkdir(options_.root.c_str(), 0700), 0);
    ASSERT_EQ(::mkdir((options_.root + "/sub").c_str(), 0700), 0);
    std::ofstream(options_.root + "/sub/a.py") << "x = 1\n";
    std::ofstream(dir_ + "/secret") << "s\n";
    ASSERT_EQ(::symlink((dir_ + "/secret").c_str(), (options_.root + "/link").c_str()), 0);
  }
  void TearDown() override { (void)!::system(("rm -rf " + dir_).c_str()); }

  std::string dir_;
  ToolsOptions options_;
};

TEST_F(ResolvePathTest, InsideTheRoot) {
  EXPECT_EQ(Resolved(options_, "path", "sub/a.py", false), options_.root + "/sub/a.py");
  EXPECT_EQ(Resolved(options_, "path", options_.root + "/sub/../sub/a.py", false), options_.root + "/sub/a.py");
  EXPECT_EQ(Resolved(options_, "out", "sub/new_test.py", true), options_.root + "/sub/new_test.py");
}

TEST_F(ResolvePathTest, OutsideTheRootIsRefused) {
  for (const std::string& p : {std::string("../secret"), dir_ + "/secret", std::string("link"),
                               std::string("/etc/passwd"), std::string("sub/../../secret")}) {
    absl::StatusOr<std::string> r = ResolvePath(options_, "path", p, false);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied) << p;
    EXPECT_THAT(r.status().message(), HasSubstr("outside the allowed folder")) << p;
  }
  EXPECT_EQ(ResolvePath(options_, "out", "../new.py", true).status().code(),
            absl::StatusCode::kPermissionDenied);
}

TEST_F(ResolvePathTest, NotFilesAndMissing) {
  EXPECT_EQ(ResolvePath(options_, "path", "sub", false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolvePath(options_, "path", "nope.py", false).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ResolvePath(options_, "out", "nodir/x.py", true).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ResolvePath(options_, "path", std::string("a\0b", 3), false).status().code(),
            absl::StatusCode::kInvalidArgument);
  ToolsOptions none;
  absl::StatusOr<std::string> no_root = ResolvePath(none, "path", "a.py", false);
  EXPECT_EQ(no_root.status().code(), absl::StatusCode::kFailedPrecondition);
  // Names the flag of either transport.
  EXPECT_THAT(no_root.status().message(), HasSubstr("serve --tools-root"));
}

TEST(ToolListTest, GetSchemaNamesEveryKindItServes) {
  Tools tools{ToolsOptions{}};
  const nlohmann::json* get_schema = nullptr;
  for (const nlohmann::json& tool : tools.List()) {
    if (tool["name"] == "get_schema") get_schema = &tool;
  }
  ASSERT_NE(get_schema, nullptr);
  const std::string description = (*get_schema)["description"].get<std::string>();
  const std::vector<std::string> kinds = validation::SchemaKinds();
  EXPECT_EQ((*get_schema)["inputSchema"]["properties"]["kind"]["enum"], nlohmann::json(kinds));
  for (const std::string& kind : kinds) {
    EXPECT_THAT(description, HasSubstr(kind + " (understudy ")) << description;
  }
  EXPECT_THAT(description, HasSubstr("sim (understudy sim config (understudy.sim/v1))"));
}

}  // namespace
}  // namespace mcpserver
}  // namespace understudy
