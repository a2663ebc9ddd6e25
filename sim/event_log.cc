#include "sim/event_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/env.h"
#include "base/fd_io.h"

namespace understudy {
namespace sim {
namespace {

std::string TextValue(const nlohmann::json& value) {
  if (!value.is_string()) return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string& text = value.get_ref<const std::string&>();
  bool plain = !text.empty();
  for (unsigned char c : text) {
    if (c <= ' ' || c == '"' || c == '\\' || c == 0x7f) plain = false;
  }
  if (plain) return text;
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "debug") return LogLevel::kDebug;
  if (lower == "info") return LogLevel::kInfo;
  if (lower == "warn" || lower == "warning") return LogLevel::kWarn;
  if (lower == "error") return LogLevel::kError;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown log level \"", name, "\"; expected debug, info, warn or error"));
}

EventLog::EventLog(int fd, LogFormat format) : fd_(fd), format_(format) {}

absl::StatusOr<std::unique_ptr<EventLog>> EventLog::Open(const std::string& path,
                                                         LogFormat format) {
  if (path.empty()) return std::make_unique<EventLog>(STDERR_FILENO, format);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot open log file ", path, ": ", ErrnoText(errno)));
  }
  auto log = std::make_unique<EventLog>(fd, format);
  log->owns_fd_ = true;
  return log;
}

EventLog::~EventLog() {
  if (owns_fd_) close(fd_);
}

void EventLog::State(absl::string_view to, absl::string_view from, absl::string_view reason) {
  if (level_ > LogLevel::kInfo) return;
  if (format_ == LogFormat::kJson) {
    Write("state", {{"state", std::string(to)}, {"from", std::string(from)},
                    {"reason", std::string(reason)}});
    return;
  }
  WriteLine(absl::StrCat("state ", to, " <- ", from, " (", reason, ")"));
}

void EventLog::Write(absl::string_view event, const Fields& fields, LogLevel level) {
  if (level < level_) return;
  if (format_ == LogFormat::kJson) {
    nlohmann::ordered_json line;
    line["ts"] = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", Env::Default()->Now(), absl::UTCTimeZone());
    line["event"] = std::string(event);
    for (const auto& [name, value] : fields) line[name] = value;
    WriteLine(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  std::string line(event);
  for (const auto& [name, value] : fields) absl::StrAppend(&line, " ", name, "=", TextValue(value));
  WriteLine(std::move(line));
}

void EventLog::WriteLine(std::string line) {
  line.push_back('\n');
  // One write per line; a log that cannot be written is not worth failing for.
  (void)WriteFully(fd_, {line}, -1);
}

}  // namespace sim
}  // namespace understudy
