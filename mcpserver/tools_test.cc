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
using ::testing::Not;

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

// A generated test refers to its spec and database relative to its own
// folder, so that it runs from another checkout (as `gen-test -o` writes it).
TEST_F(ResolvePathTest, GeneratedTestsNameTheirFilesRelativeToThemselves) {
  ASSERT_EQ(::mkdir((options_.root + "/specs").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((options_.root + "/tests").c_str(), 0700), 0);
  std::ofstream(options_.root + "/specs/golden.spec.yaml")
      << "schema: understudy.spec/v1\nsession: golden\nassertions:\n  - no_misses: true\n";
  std::ofstream(options_.root + "/golden.db") << "";
  options_.db = options_.root + "/golden.db";  // the server's, absolute
  Tools tools(options_);
  const nlohmann::json args = {{"framework", "pytest"},
                               {"spec_path", "specs/golden.spec.yaml"},
                               {"command", {"python3", "agent.py"}},
                               {"output_path", "tests/test_golden.py"}};
  absl::StatusOr<ToolResult> written = tools.Call("generate_tests_from_spec", args);
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_FALSE(written->is_error) << written->text;
  const std::string code = written->structured["code"].get<std::string>();
  EXPECT_THAT(code, HasSubstr("SPEC_PATH = HERE / \"../specs/golden.spec.yaml\""));
  EXPECT_THAT(code, HasSubstr("GOLDEN_DB = HERE / \"../golden.db\""));
  EXPECT_THAT(code, Not(HasSubstr(dir_))) << "no absolute path of this checkout";
  // Where the spec is, for the caller: the resolved path.
  EXPECT_EQ(written->structured["spec_path"], options_.root + "/specs/golden.spec.yaml");
  EXPECT_EQ(written->structured["path"], options_.root + "/tests/test_golden.py");

  // Without output_path the code is for a file in the allowed folder; a db
  // argument is taken the same way.
  nlohmann::json unwritten = args;
  unwritten.erase("output_path");
  unwritten["db"] = "golden.db";
  unwritten["framework"] = "node";
  absl::StatusOr<ToolResult> code_only = tools.Call("generate_tests_from_spec", unwritten);
  ASSERT_TRUE(code_only.ok()) << code_only.status();
  ASSERT_FALSE(code_only->is_error) << code_only->text;
  const std::string node = code_only->structured["code"].get<std::string>();
  EXPECT_THAT(node, HasSubstr("path.resolve(HERE, \"specs/golden.spec.yaml\")"));
  EXPECT_THAT(node, HasSubstr("path.resolve(HERE, \"golden.db\")"));
  EXPECT_THAT(node, Not(HasSubstr(dir_)));
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
