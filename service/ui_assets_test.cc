#include "service/ui_assets.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace service {
namespace {

TEST(UiContentTypeTest, ByExtension) {
  EXPECT_EQ(UiContentType("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(UiContentType("app.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(UiContentType("lib/x.MJS"), "text/javascript; charset=utf-8");
  EXPECT_EQ(UiContentType("app.css"), "text/css; charset=utf-8");
  EXPECT_EQ(UiContentType("logo.svg"), "image/svg+xml");
  EXPECT_EQ(UiContentType("a.png"), "image/png");
  EXPECT_EQ(UiContentType("README"), "application/octet-stream");
  EXPECT_EQ(UiContentType("dir.js/file"), "application/octet-stream");
  EXPECT_EQ(UiContentType("x.exe"), "application/octet-stream");
}

TEST(UiAssetsTest, EveryFileOfUiIsEmbeddedWithTheSameBytes) {
  // The build embeds ui/ as it is now: each file once, byte for byte, and
  // nothing else (BUILD files and dotfiles stay out).
  size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(UNDERSTUDY_UI_DIR)) {
    if (!entry.is_regular_file()) continue;
    // Lexically: Bazel's runfiles are symbolic links, which relative() would
    // follow out of the directory.
    const std::string path = entry.path().lexically_relative(UNDERSTUDY_UI_DIR).generic_string();
    const std::string name = entry.path().filename().string();
    if (name == "BUILD" || name == "BUILD.bazel" || name[0] == '.') continue;
    ++files;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const UiAsset* asset = FindUiAsset(path);
    ASSERT_NE(asset, nullptr) << path << " is in ui/ but not embedded";
    EXPECT_EQ(asset->path, path);
    EXPECT_TRUE(asset->bytes == bytes) << path << ": the embedded bytes differ from the file's";
    EXPECT_EQ(asset->content_type, UiContentType(path));
  }
  EXPECT_EQ(UiAssets().size(), files);
  EXPECT_GT(files, 0u) << "ui/ is empty";
  EXPECT_NE(FindUiAsset("index.html"), nullptr);
}

TEST(UiAssetsTest, UnknownPathsAreNotFound) {
  EXPECT_EQ(FindUiAsset(""), nullptr);
  EXPECT_EQ(FindUiAsset("/index.html"), nullptr);
  EXPECT_EQ(FindUiAsset("../ui/index.html"), nullptr);
  EXPECT_EQ(FindUiAsset("nope.js"), nullptr);
}

TEST(UiAssetsTest, AssetsAreSortedByPath) {
  const std::vector<UiAsset>& assets = UiAssets();
  for (size_t i = 1; i < assets.size(); ++i) EXPECT_LT(assets[i - 1].path, assets[i].path);
}

}  // namespace
}  // namespace service
}  // namespace understudy
