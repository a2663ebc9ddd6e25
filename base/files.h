// Files: reading one within a bound, writing one so that a reader never sees
// half of it; a private temporary folder; finding the running executable.
#ifndef UNDERSTUDY_BASE_FILES_H_
#define UNDERSTUDY_BASE_FILES_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace understudy {

// Writes `content` to `path` through a temporary file beside it
// ("PATH.tmp.PID"), fsynced, then renamed over `path`, so readers see the
// old file or the whole new one. On any failure (a full disk, a missing
// folder) the temporary file is removed, `path` is left as it was, and the
// status is UNAVAILABLE: "cannot write PATH: No space left on device".
absl::Status WriteFileAtomically(const std::string& path, const std::string& content);

// The whole regular file at `path`, refused when it holds more than
// `max_bytes` (it is never read past that). Errors name the path:
//   NOT_FOUND         "no such file: PATH"
//   INVALID_ARGUMENT  "PATH is a directory, not a file"; "PATH is not a
//                     regular file (a device, FIFO or socket)"; "PATH is
//                     larger than the N bytes allowed"
//   UNAVAILABLE       "cannot read PATH: REASON"
// A FIFO is refused without blocking on it.
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, size_t max_bytes);

// A private temporary folder for files a command needs only while it runs
// (a copy of some code, a compiled binary, a results file, a replay's
// database), removed with everything in it when the owner goes.
class ScratchDir {
 public:
  // A new folder (mode 0700) under $TMPDIR, else /tmp, named
  // PREFIX-XXXXXX. UNAVAILABLE with the reason when it cannot be made.
  static absl::StatusOr<std::unique_ptr<ScratchDir>> Create(
      absl::string_view prefix = "understudy");
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

// The absolute path of the running executable (/proc/self/exe), for the
// processes it starts that must run it again; "understudy" (looked up on
// PATH) when it cannot be read.
std::string SelfExecutablePath();

}  // namespace understudy

#endif  // UNDERSTUDY_BASE_FILES_H_
