// The web UI's files as compiled-in data, for service/ui_assets.cc only. The
// definitions are generated at build time from ui/ by service/embed_ui.cmake
// (CMake: service/CMakeLists.txt; Bazel: the ui_assets_data genrule in
// service/BUILD).
#ifndef UNDERSTUDY_SERVICE_UI_ASSETS_DATA_H_
#define UNDERSTUDY_SERVICE_UI_ASSETS_DATA_H_

#include <cstddef>

namespace understudy {
namespace service {
namespace internal {

struct UiFile {
  const char* path;  // within ui/, e.g. "app.js"; null in the one entry of an empty ui/
  const unsigned char* bytes;
  size_t size;
};

// kUiFileCount entries, by path.
extern const UiFile kUiFiles[];
extern const size_t kUiFileCount;

}  // namespace internal
}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_UI_ASSETS_DATA_H_
