#include "cli/verify_install.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace cli {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A fresh folder for one test, removed after it.
class VerifyInstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/verify-install-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = fs::canonical(pattern).string();
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  // Writes `content` to dir_/relative, making its folders.
  std::string Write(const std::string& relative, const std::string& content = "") {
    const fs::path path = fs::path(dir_) / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << content;
    return path.string();
  }

  std::string dir_;
};

TEST_F(VerifyInstallTest, APackageJsonMakesAnNpmPackageAndAPyprojectAPythonOne) {
  Write("npm/package.json", "{}");
  Write("py/pyproject.toml", "[project]\n");
  Write("both/package.json", "{}");
  Write("both/pyproject.toml", "");
  EXPECT_EQ(*DetectPackageKind(dir_ + "/npm"), PackageKind::kNpm);
  EXPECT_EQ(*DetectPackageKind(dir_ + "/py"), PackageKind::kPython);
  EXPECT_EQ(*DetectPackageKind(dir_ + "/both"), PackageKind::kNpm);
}

TEST_F(VerifyInstallTest, AFolderWithoutAManifestIsAUsageErrorNamingIt) {
  Write("empty/README.md", "");
  const std::string file = Write("file.txt", "x");
  EXPECT_THAT(
      DetectPackageKind(dir_ + "/empty"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr(dir_ + "/empty"), HasSubstr("no package.json or pyproject.toml"))));
  EXPECT_THAT(DetectPackageKind(dir_ + "/missing"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(dir_ + "/missing"), HasSubstr("no such folder"))));
  EXPECT_THAT(DetectPackageKind(file),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not a folder")));
}

TEST_F(VerifyInstallTest, AStringBinIsNamedAfterThePackageWithoutItsScope) {
  absl::StatusOr<NpmManifest> m = ParseNpmManifest(
      R"({"name": "@acme/trip-agent", "version": "2.1.0", "bin": "cli.js"})", "package.json");
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->name, "@acme/trip-agent");
  EXPECT_EQ(m->version, "2.1.0");
  EXPECT_THAT(m->bins,
              ElementsAre(std::pair<const std::string, std::string>("trip-agent", "cli.js")));
  absl::StatusOr<NpmManifest> several =
      ParseNpmManifest(R"({"name": "a", "bin": {"a": "bin/a.js", "b": "bin/b.js"}})", "p.json");
  ASSERT_THAT(several, IsOk());
  EXPECT_EQ(several->bins.size(), 2u);
  EXPECT_EQ(several->bins.at("b"), "bin/b.js");
}

TEST_F(VerifyInstallTest, AManifestWithoutANameOrNotJsonIsRefusedNamingTheFile) {
  EXPECT_THAT(ParseNpmManifest(R"({"version": "1.0.0"})", "/x/package.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith("/x/package.json: "), HasSubstr("\"name\""))));
  EXPECT_THAT(ParseNpmManifest("{name: ", "/x/package.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not JSON")));
  EXPECT_THAT(ParseNpmManifest("[]", "/x/package.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a JSON object")));
}

TEST_F(VerifyInstallTest, TheEntryIsALinkedBinElseAFileOfTheInstalledPackage) {
  const std::string installed = dir_ + "/node_modules/agent";
  Write("node_modules/agent/bin/agent.js", "#!/usr/bin/env node\n");
  Write("node_modules/agent/lib/run.mjs", "");
  fs::create_directories(dir_ + "/node_modules/.bin");
  fs::create_symlink("../agent/bin/agent.js", dir_ + "/node_modules/.bin/agent");
  NpmManifest manifest{"agent", "1.0.0", {{"agent", "bin/agent.js"}}};

  EXPECT_THAT(*ResolveNpmEntry(dir_, installed, manifest, "agent"),
              ElementsAre(dir_ + "/node_modules/.bin/agent"));
  EXPECT_THAT(*ResolveNpmEntry(dir_, installed, manifest, "lib/run.mjs"),
              ElementsAre("node", installed + "/lib/run.mjs"));
}

TEST_F(VerifyInstallTest, AnEntryNotInstalledIsNamedWithWhatThePackageInstalled) {
  const std::string installed = dir_ + "/node_modules/agent";
  Write("node_modules/agent/bin/other.js");
  Write("node_modules/agent/index.js");
  Write("node_modules/agent/node_modules/dep/index.js");
  NpmManifest manifest{"agent", "1.0.0", {{"other", "bin/other.js"}}};
  EXPECT_THAT(
      ResolveNpmEntry(dir_, installed, manifest, "agent"),
      StatusIs(absl::StatusCode::kNotFound,
               AllOf(HasSubstr("bin `agent` not found in the installed package agent@1.0.0"),
                     HasSubstr("it installed: bins other → bin/other.js; files "
                               "bin/other.js, index.js"),
                     Not(HasSubstr("dep")))));
}

TEST_F(VerifyInstallTest, ADeclaredBinWhoseFileWasNotPackedSaysSo) {
  const std::string installed = dir_ + "/node_modules/agent";
  Write("node_modules/agent/package.json", "{}");
  NpmManifest manifest{"agent", "", {{"agent", "dist/cli.js"}}};
  EXPECT_THAT(ResolveNpmEntry(dir_, installed, manifest, "agent"),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("points to dist/cli.js, which is not in the package"),
                             HasSubstr("`files`"))));
}

TEST_F(VerifyInstallTest, ListedFilesAreSortedAndBounded) {
  for (const char* name : {"c.js", "a.js", "b/x.js", "node_modules/y/z.js"}) Write(name);
  EXPECT_THAT(ListFiles(dir_, 10), ElementsAre("a.js", "b/x.js", "c.js"));
  EXPECT_THAT(ListFiles(dir_, 2), ElementsAre("a.js", "b/x.js", "… and 1 more"));
}

TEST_F(VerifyInstallTest, LastLinesKeepsTheEndOfTheText) {
  EXPECT_EQ(LastLines("a\nb\nc\n", 2), "b\nc");
  EXPECT_EQ(LastLines("a\nb\n", 5), "a\nb");
  EXPECT_EQ(LastLines("", 3), "");
}

TEST_F(VerifyInstallTest, AFileLeftOutOfTheNpmPackageIsNamedWithTheFix) {
  const std::string package = dir_ + "/pkg";
  Write("pkg/agent.js", "export {};\n");
  const std::string installed = dir_ + "/sandbox/node_modules/agent";
  const std::string esm = absl::StrCat(
      "node:internal/modules/esm/resolve:283\n    throw new ERR_MODULE_NOT_FOUND(\n\n"
      "Error [ERR_MODULE_NOT_FOUND]: Cannot find module '",
      installed, "/agent.js' imported from ", installed,
      "/bin/agent.js\n  code: 'ERR_MODULE_NOT_FOUND'\n");
  EXPECT_THAT(MissingFileHint(esm, PackageKind::kNpm, installed, package),
              AllOf(StartsWith("agent.js is in " + package + " but not in the installed package"),
                    HasSubstr("add it to `files` in " + package + "/package.json")));
  // Not in the source folder either: a build output.
  const std::string cjs =
      absl::StrCat("Error: Cannot find module '", installed, "/dist/main.js'\nRequire stack:\n");
  EXPECT_THAT(
      MissingFileHint(cjs, PackageKind::kNpm, installed, package),
      AllOf(StartsWith("dist/main.js is not in the installed package"), HasSubstr("`prepack`")));
}

TEST_F(VerifyInstallTest, AnUndeclaredNpmDependencyIsNamed) {
  const std::string text =
      "Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@acme/tools' imported from /s/x.js\n";
  EXPECT_THAT(MissingFileHint(text, PackageKind::kNpm, "/s/node_modules/a", "/src/a"),
              AllOf(HasSubstr("the package `@acme/tools` is not installed with the agent"),
                    HasSubstr("`dependencies` of /src/a/package.json")));
}

TEST_F(VerifyInstallTest, AModuleLeftOutOfTheWheelIsToldFromAMissingDependency) {
  Write("pkg/src/agent/tools.py");
  const std::string package = dir_ + "/pkg";
  EXPECT_THAT(
      MissingFileHint("Traceback ...\nModuleNotFoundError: No module named 'agent.tools'\n",
                      PackageKind::kPython, "", package),
      AllOf(HasSubstr("module `agent.tools` is in " + package + "/src but not in the wheel"),
            HasSubstr("pyproject.toml")));
  EXPECT_THAT(MissingFileHint("ModuleNotFoundError: No module named 'httpx'\n",
                              PackageKind::kPython, "", package),
              AllOf(HasSubstr("module `httpx` is not installed"), HasSubstr("--no-index")));
}

TEST_F(VerifyInstallTest, AnyOtherFailureGetsTheGeneralAdvice) {
  EXPECT_THAT(MissingFileHint("TypeError: x is not a function\n", PackageKind::kNpm, "/i", "/p"),
              HasSubstr("`npm pack --dry-run` in /p"));
  EXPECT_THAT(MissingFileHint("KeyError: 'x'\n", PackageKind::kPython, "", "/p"),
              HasSubstr("missing from the wheel"));
}

TEST_F(VerifyInstallTest, TheAgentsEnvironmentNamesNoPathOfTheRepository) {
  const std::vector<std::string> env = {
      "HOME=/repo",  // kept: the user's home may hold the repository
      "PATH=/repo/node_modules/.bin:/usr/bin:/repo:/repo-old/bin:/bin",
      "NODE_PATH=/elsewhere/lib",
      "PYTHONPATH=/x",
      "INIT_CWD=/repo/packages/agent",
      "npm_package_json=/repo/package.json",
      "CONFIG_URL=file:///repo/config.json",
      "OTHER=/x/repo",
      "NEIGHBOUR=/repo-old",
      "PWD=/repo",
      "LANG=C.UTF-8",
  };
  EXPECT_THAT(SandboxEnvironment(env, {"/repo"}, "/s/node_modules/.bin", "/s"),
              ElementsAre("HOME=/repo", "OTHER=/x/repo", "NEIGHBOUR=/repo-old", "LANG=C.UTF-8",
                          "PATH=/s/node_modules/.bin:/usr/bin:/repo-old/bin:/bin", "PWD=/s"));
}

TEST_F(VerifyInstallTest, TheRepositoryOfAPackageIsTheNearestFolderWithAGitEntry) {
  fs::create_directories(dir_ + "/repo/.git");
  Write("repo/packages/agent/package.json", "{}");
  EXPECT_THAT(RepositoryRoots(dir_ + "/repo/packages/agent/"),
              ElementsAre(dir_ + "/repo/packages/agent", dir_ + "/repo"));
  Write("alone/package.json", "{}");
  std::vector<std::string> roots = RepositoryRoots(dir_ + "/alone");
  EXPECT_THAT(roots, Contains(dir_ + "/alone"));
  EXPECT_THAT(roots, Not(Contains("/")));
}

}  // namespace
}  // namespace cli
}  // namespace understudy
