#include "base/files.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

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

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat("no such file: ", path));
    }
    return absl::UnavailableError(absl::StrCat("cannot read ", path, ": ", std::strerror(error)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const bool directory = S_ISDIR(st.st_mode);
    ::close(fd);
    return absl::InvalidArgumentError(
        directory ? absl::StrCat(path, " is a directory, not a file")
                  : absl::StrCat(path, " is not a regular file (a device, FIFO or socket)"));
  }
  std::string text;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return absl::UnavailableError(absl::StrCat("cannot read ", path, ": ", std::strerror(error)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) {
      ::close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat(path, " is larger than the ", max_bytes, " bytes allowed"));
    }
  }
  ::close(fd);
  return text;
}

std::string SelfExecutablePath() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "understudy";
}

absl::StatusOr<std::unique_ptr<ScratchDir>> ScratchDir::Create(absl::string_view prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/", prefix, "-XXXXXX");
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot make a temporary folder ", pattern, ": ", std::strerror(errno)));
  }
  return std::unique_ptr<ScratchDir>(new ScratchDir(buffer.data()));
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string ScratchDir::File(absl::string_view name) const { return absl::StrCat(path_, "/", name); }

absl::StatusOr<std::string> ScratchDir::Write(absl::string_view name,
                                              absl::string_view content) const {
  const std::string path = File(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return path;
}

}  // namespace understudy
