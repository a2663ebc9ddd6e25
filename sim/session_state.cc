#include "sim/session_state.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace sim {
namespace {

constexpr size_t kMaxStateBytes = 1 << 20;
constexpr char kCounts[] = "fail_then_succeed";

std::string Getenv(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

absl::StatusOr<std::string> StatePath(const std::string& dir, const std::string& session_id) {
  bool ok = !session_id.empty() && session_id.size() <= 128 && session_id[0] != '.';
  for (char c : session_id) {
    ok = ok && (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
                c == '.');
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("session id \"", session_id.substr(0, 40),
                     "\" cannot name a file: its fail_then_succeed counts are not kept"));
  }
  return absl::StrCat(dir, "/", session_id, ".json");
}

}  // namespace

std::string DefaultSessionStateDirectory() {
  if (std::string dir = Getenv("UNDERSTUDY_SIM_STATE_DIR"); !dir.empty()) return dir;
  if (std::string state = Getenv("XDG_STATE_HOME"); !state.empty()) {
    return absl::StrCat(state, "/understudy/sim");
  }
  if (std::string home = Getenv("HOME"); !home.empty()) {
    return absl::StrCat(home, "/.local/state/understudy/sim");
  }
  return absl::StrCat("/tmp/understudy-sim-", ::getuid());
}

absl::StatusOr<std::map<std::string, int>> LoadSessionCounts(const std::string& dir,
                                                             const std::string& session_id) {
  absl::StatusOr<std::string> path = StatePath(dir, session_id);
  if (!path.ok()) return path.status();
  absl::StatusOr<std::string> text = ReadRegularFile(*path, kMaxStateBytes);
  if (!text.ok()) {
    if (text.status().code() == absl::StatusCode::kNotFound) return std::map<std::string, int>();
    return absl::UnavailableError(text.status().message());
  }
  const nlohmann::json state = nlohmann::json::parse(*text, nullptr, false);
  auto counts = state.is_object() ? state.find(kCounts) : state.end();
  if (counts == state.end() || !counts->is_object()) {
    return absl::DataLossError(absl::StrCat(*path, ": not a saved sim session"));
  }
  std::map<std::string, int> out;
  for (auto it = counts->begin(); it != counts->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0) {
      return absl::DataLossError(absl::StrCat(*path, ": ", it.key(), " is not a count"));
    }
    out[it.key()] = static_cast<int>(std::min<int64_t>(it.value().get<int64_t>(), 1 << 30));
  }
  return out;
}

absl::Status SaveSessionCounts(const std::string& dir, const std::string& session_id,
                               const std::map<std::string, int>& counts) {
  absl::StatusOr<std::string> path = StatePath(dir, session_id);
  if (!path.ok()) return path.status();
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::UnavailableError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  }
  nlohmann::json state = {{kCounts, nlohmann::json::object()}};
  for (const auto& [behaviour, count] : counts) state[kCounts][behaviour] = count;
  return WriteFileAtomically(*path, state.dump() + "\n");
}

}  // namespace sim
}  // namespace understudy
