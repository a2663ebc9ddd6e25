#include "cli/ancestor_env.h"

#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace understudy {
namespace cli {
namespace {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text;
}

}  // namespace

std::optional<pid_t> ParentOf(pid_t pid) {
  std::optional<std::string> stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat.has_value()) return std::nullopt;
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so
  // the fields count from the last ')'.
  const size_t close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(*stat).substr(close + 1), ' ', absl::SkipEmpty());
  int parent = 0;
  if (fields.size() < 2 || !absl::SimpleAtoi(fields[1], &parent) || parent <= 0) {
    return std::nullopt;
  }
  return static_cast<pid_t>(parent);
}

std::optional<std::string> AncestorEnv(absl::string_view name, pid_t pid, int max_depth) {
  const std::string prefix = absl::StrCat(name, "=");
  for (int depth = 0; depth < max_depth; ++depth) {
    std::optional<pid_t> parent = ParentOf(pid);
    if (!parent.has_value() || *parent <= 1) return std::nullopt;
    pid = *parent;
    std::optional<std::string> environ = ReadFile(absl::StrCat("/proc/", pid, "/environ"));
    if (!environ.has_value()) continue;
    for (absl::string_view entry : absl::StrSplit(*environ, '\0')) {
      if (absl::StartsWith(entry, prefix)) return std::string(entry.substr(prefix.size()));
    }
  }
  return std::nullopt;
}

}  // namespace cli
}  // namespace understudy
