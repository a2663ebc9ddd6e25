// The simulated agent's log: one line per state change, hook call,
// completion attempt and the like, as text or JSON lines, on stderr or in a
// file (--log-file). Never on stdout: the pane shows only what the agent
// "says".
//
//   text:  state IDLE <- WORKING (completed)
//          hook Stop exit=0 outcome=ok duration_ms=4 command="./on-stop.sh"
//   json:  {"ts":"2026-01-02T03:04:05.678Z","event":"state","state":"IDLE","from":"WORKING","reason":"completed"}
//          {"ts":"…","event":"hook","hook":"Stop","command":"./on-stop.sh","exit":0,"outcome":"ok","duration_ms":4}
//
// Thread-safe: each line is one write().
#ifndef UNDERSTUDY_SIM_EVENT_LOG_H_
#define UNDERSTUDY_SIM_EVENT_LOG_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace sim {

enum class LogFormat { kText, kJson };

// How much is logged: a line goes out when its level is at least the log's.
// Debug: what was typed or printed by the completion command, prompts
// queued; info: states, prompts, hooks, completions; warn: what went wrong
// without stopping the agent (the trace unreachable, state not saved).
enum class LogLevel { kDebug, kInfo, kWarn, kError };

// "debug", "info", "warn", "error" (also "warning"), case-insensitive;
// INVALID_ARGUMENT naming the levels for anything else.
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name);

class EventLog {
 public:
  using Fields = std::vector<std::pair<std::string, nlohmann::json>>;

  // Lines to `fd` (not owned; must outlive the log).
  EventLog(int fd, LogFormat format);
  // Lines appended to the file at `path` (created when missing); stderr when
  // `path` is empty. UNAVAILABLE naming the path when it cannot be opened.
  static absl::StatusOr<std::unique_ptr<EventLog>> Open(const std::string& path, LogFormat format);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Lines below `level` are dropped from now on (default kDebug: all).
  // Not to be called while other threads write.
  void set_level(LogLevel level) { level_ = level; }

  // "state TO <- FROM (reason)", at level info.
  void State(absl::string_view to, absl::string_view from, absl::string_view reason);
  // "EVENT k=v k=\"v w\" ...": strings quoted when they hold a space, a quote
  // or a control character (JSON-escaped), other values as JSON.
  void Write(absl::string_view event, const Fields& fields, LogLevel level = LogLevel::kInfo);

 private:
  void WriteLine(std::string line);

  int fd_;
  const LogFormat format_;
  LogLevel level_ = LogLevel::kDebug;
  bool owns_fd_ = false;
};

}  // namespace sim
}  // namespace understudy

#endif  // UNDERSTUDY_SIM_EVENT_LOG_H_
