// Files: writing one so that a reader never sees half of it; finding the
// running executable.
#ifndef UNDERSTUDY_BASE_FILES_H_
#define UNDERSTUDY_BASE_FILES_H_

#include <string>

#include "absl/status/status.h"

namespace understudy {

// Writes `content` to `path` through a temporary file beside it
// ("PATH.tmp.PID"), fsynced, then renamed over `path`, so readers see the
// old file or the whole new one. On any failure (a full disk, a missing
// folder) the temporary file is removed, `path` is left as it was, and the
// status is UNAVAILABLE: "cannot write PATH: No space left on device".
absl::Status WriteFileAtomically(const std::string& path, const std::string& content);

// The absolute path of the running executable (/proc/self/exe), for the
// processes it starts that must run it again; "understudy" (looked up on
// PATH) when it cannot be read.
std::string SelfExecutablePath();

}  // namespace understudy

#endif  // UNDERSTUDY_BASE_FILES_H_
