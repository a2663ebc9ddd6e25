#include "base/files.h"

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace understudy {

absl::Status WriteFileAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  auto failed = [&](absl::string_view what) {
    const int error = errno;
    std::remove(tmp.c_str());
    return absl::UnavailableError(
        absl::StrCat("cannot ", what, " ", path, error != 0 ? ": " : "",
                     error != 0 ? std::strerror(error) : ""));
  };
  errno = 0;
  FILE* out = std::fopen(tmp.c_str(), "wb");
  if (out == nullptr) return failed("write");
  const bool written = std::fwrite(content.data(), 1, content.size(), out) == content.size();
  const bool flushed = std::fflush(out) == 0 && ::fsync(::fileno(out)) == 0;
  const bool closed = std::fclose(out) == 0;
  if (!written || !flushed || !closed) return failed("write");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return failed("replace");
  return absl::OkStatus();
}

std::string SelfExecutablePath() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "understudy";
}

}  // namespace understudy
