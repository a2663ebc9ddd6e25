#include "cli/cmd_common.h"

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "base/duration.h"

namespace understudy {
namespace cli {

std::string EnvName(const std::string& option) {
  return "UNDERSTUDY_" + absl::AsciiStrToUpper(absl::StrReplaceAll(option, {{"-", "_"}}));
}

CLI::Validator DurationCheck() {
  return CLI::Validator(
      [](std::string& text) {
        absl::StatusOr<absl::Duration> d = ParseDuration(text);
        return d.ok() ? std::string() : std::string(d.status().message());
      },
      "DURATION");
}

CLI::Validator CountCheck() {
  return CLI::Validator(
      [](std::string& text) {
        int64_t n = 0;
        return absl::SimpleAtoi(text, &n) && n < 0 ? "must be 0 or more, got " + text
                                                   : std::string();
      },
      "N");
}

void AddDbFlags(CLI::App* cmd, DbFlags* db, bool json) {
  cmd->add_option("--db", db->db, "SQLite file")->envname("UNDERSTUDY_DB");
  if (json) cmd->add_flag("--json", db->json, "One JSON object per line");
}

}  // namespace cli
}  // namespace understudy
