#include "base/log.h"

#include <unistd.h>

#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/env.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<int> g_format{static_cast<int>(LogFormat::kText)};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

// Quotes a text value when it would otherwise be ambiguous on a text line.
std::string TextValue(const std::string& v) {
  if (!v.empty() && v.find_first_of(" \"=\n\t") == std::string::npos) return v;
  return nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void SetLogging(LogLevel level, LogFormat format) {
  g_level.store(static_cast<int>(level));
  g_format.store(static_cast<int>(format));
}

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

bool ParseLogLevel(absl::string_view text, LogLevel* level) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError}) {
    if (text == LevelName(l)) {
      *level = l;
      return true;
    }
  }
  return false;
}

bool ParseLogFormat(absl::string_view text, LogFormat* format) {
  if (text == "text") {
    *format = LogFormat::kText;
  } else if (text == "json") {
    *format = LogFormat::kJson;
  } else {
    return false;
  }
  return true;
}

void Log(LogLevel level, absl::string_view event, std::initializer_list<LogField> fields) {
  if (static_cast<int>(level) < g_level.load()) return;
  std::string time = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", Env::Default()->Now(), absl::UTCTimeZone());
  std::string line;
  if (static_cast<LogFormat>(g_format.load()) == LogFormat::kJson) {
    nlohmann::ordered_json j;
    j["time"] = time;
    j["level"] = LevelName(level);
    j["event"] = std::string(event);
    for (const auto& [k, v] : fields) j[std::string(k)] = v;
    line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line = absl::StrCat(time, " ", LevelName(level), " ", event);
    for (const auto& [k, v] : fields) absl::StrAppend(&line, " ", k, "=", TextValue(v));
  }
  line += '\n';
  ssize_t unused = ::write(STDERR_FILENO, line.data(), line.size());
  (void)unused;
}

}  // namespace understudy
