// A private temporary folder for the files that checking and running a test
// need (a copy of the code, a compiled binary, a results file), removed with
// everything in it when the owner goes.
#ifndef UNDERSTUDY_TESTGEN_SCRATCH_DIR_H_
#define UNDERSTUDY_TESTGEN_SCRATCH_DIR_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace understudy {
namespace testgen {

class ScratchDir {
 public:
  // A new folder (mode 0700) under $TMPDIR, else /tmp. UNAVAILABLE with the
  // reason when it cannot be made.
  static absl::StatusOr<std::unique_ptr<ScratchDir>> Create();
  // Removes the folder and its contents; errors are ignored.
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name.
  std::string File(absl::string_view name) const;
  // Writes `content` to path()/name; UNAVAILABLE naming it on failure.
  absl::StatusOr<std::string> Write(absl::string_view name, absl::string_view content) const;

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  const std::string path_;
};


}  // namespace testgen
}  // namespace understudy

#endif  // UNDERSTUDY_TESTGEN_SCRATCH_DIR_H_
