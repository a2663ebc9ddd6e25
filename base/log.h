// Logging: one line per event on stderr, as text or JSON. Never pass
// credentials or whole prompts at info level.
#ifndef UNDERSTUDY_BASE_LOG_H_
#define UNDERSTUDY_BASE_LOG_H_

#include <initializer_list>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"

namespace understudy {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };
enum class LogFormat { kText, kJson };

// Sets the process-wide threshold and format. Thread-safe.
void SetLogging(LogLevel level, LogFormat format);

// Whether a Log call at `level` would write: for work done only to log (a
// rule's reason for not matching, a match key). One relaxed atomic load.
bool LogEnabled(LogLevel level);

// Parses "debug|info|warning|error" / "text|json"; false on anything else.
bool ParseLogLevel(absl::string_view text, LogLevel* level);
bool ParseLogFormat(absl::string_view text, LogFormat* format);

using LogField = std::pair<absl::string_view, std::string>;

// Writes `event` with `fields` as one line (one write call, so lines from
// different threads never interleave) when `level` passes the threshold:
//   text: 2026-11-22T10:00:00.123Z info run_started run=r1 mode=replay
//   json: {"time":"…","level":"info","event":"run_started","run":"r1",…}
void Log(LogLevel level, absl::string_view event, std::initializer_list<LogField> fields = {});

}  // namespace understudy

#endif  // UNDERSTUDY_BASE_LOG_H_
