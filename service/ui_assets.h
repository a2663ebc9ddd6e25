// The web UI's static files (ui/: index.html, app.js, app.css, ...),
// embedded in the binary at build time, so the page works offline and
// needs no files beside the binary. Served by service/ui_api.h under /ui/.
#ifndef UNDERSTUDY_SERVICE_UI_ASSETS_H_
#define UNDERSTUDY_SERVICE_UI_ASSETS_H_

#include <vector>

#include "absl/strings/string_view.h"

namespace understudy {
namespace service {

struct UiAsset {
  // Within ui/, e.g. "index.html", "app.js".
  absl::string_view path;
  // From the file's extension, e.g. "text/javascript; charset=utf-8".
  absl::string_view content_type;
  // The file's bytes, as they were in ui/ at build time.
  absl::string_view bytes;
};

// The asset at `path` (within ui/, no leading '/'), or null when there is
// none. The asset is static: it lives as long as the program.
const UiAsset* FindUiAsset(absl::string_view path);

// Every asset, by path.
const std::vector<UiAsset>& UiAssets();

// The Content-Type a file named `path` is served with: by its extension
// (html, js, mjs, css, svg, png, ico, json, txt, woff2), else
// application/octet-stream.
absl::string_view UiContentType(absl::string_view path);

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_UI_ASSETS_H_
