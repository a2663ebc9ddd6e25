#include "testgen/scratch_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"

namespace understudy {
namespace testgen {

absl::StatusOr<std::unique_ptr<ScratchDir>> ScratchDir::Create() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/understudy-testgen-XXXXXX");
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


}  // namespace testgen
}  // namespace understudy
