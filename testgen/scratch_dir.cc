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

absl::StatusOr<std::string> ReadWholeFile(const std::string& path, size_t max_bytes) {
  std::error_code error;
  const bool exists = std::filesystem::is_regular_file(path, error);
  if (!exists) return absl::NotFoundError(absl::StrCat("no such file: ", path));
  const auto size = std::filesystem::file_size(path, error);
  if (!error && size > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is ", size, " bytes; at most ", max_bytes, " are read"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::UnavailableError(absl::StrCat("error reading ", path));
  return text.str();
}

}  // namespace testgen
}  // namespace understudy
