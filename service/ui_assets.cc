#include "service/ui_assets.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "service/ui_assets_data.h"

namespace understudy {
namespace service {

absl::string_view UiContentType(absl::string_view path) {
  static constexpr std::pair<absl::string_view, absl::string_view> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".json", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
      {".woff2", "font/woff2"},
  };
  const size_t dot = path.rfind('.');
  if (dot == absl::string_view::npos || path.find('/', dot) != absl::string_view::npos) {
    return "application/octet-stream";
  }
  const std::string extension = absl::AsciiStrToLower(path.substr(dot));
  for (const auto& [ext, type] : kTypes) {
    if (extension == ext) return type;
  }
  return "application/octet-stream";
}

const std::vector<UiAsset>& UiAssets() {
  static const std::vector<UiAsset>* const assets = [] {
    auto* all = new std::vector<UiAsset>();
    for (size_t i = 0; i < internal::kUiFileCount; ++i) {
      const internal::UiFile& f = internal::kUiFiles[i];
      all->push_back(UiAsset{f.path, UiContentType(f.path),
                             absl::string_view(reinterpret_cast<const char*>(f.bytes), f.size)});
    }
    // Sorted here too: lookups must not depend on how the table was sorted.
    std::sort(all->begin(), all->end(),
              [](const UiAsset& a, const UiAsset& b) { return a.path < b.path; });
    return all;
  }();
  return *assets;
}

const UiAsset* FindUiAsset(absl::string_view path) {
  const std::vector<UiAsset>& assets = UiAssets();
  auto it = std::lower_bound(assets.begin(), assets.end(), path,
                             [](const UiAsset& a, absl::string_view p) { return a.path < p; });
  if (it == assets.end() || it->path != path) return nullptr;
  return &*it;
}

}  // namespace service
}  // namespace understudy
