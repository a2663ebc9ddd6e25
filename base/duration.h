// Durations as people write them in flags and config files: `serve
// --keep-trace-for 7d`, `runs prune --older-than 12h`, a sim config's
// `delay: 150`. The one reader of such text in the project.
#ifndef UNDERSTUDY_BASE_DURATION_H_
#define UNDERSTUDY_BASE_DURATION_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace understudy {

// What a number without a unit means.
enum class PlainNumber {
  kRefused,       // "7" is an error: seconds? days? (retention flags)
  kMilliseconds,  // "150" is 150 ms (sim configs, UNDERSTUDY_SIM_DELAY)
};

// Parses `text`: absl's form ("150ms", "2s", "1.5m", "12h", "1h30m"), whole
// or fractional days with an optional absl rest ("7d", "1.5d", "1d12h"), or
// a plain number as `plain` says. Surrounding blanks are ignored. The result
// is finite and not negative; anything else is INVALID_ARGUMENT whose
// message says what was expected and what was given ("expected a duration:
// a number with a unit (30m, 12h, 7d), got \"soon\"", "must not be
// negative, got -1s", "must be finite, got inf"), for the caller to prefix
// with the flag or field it came from.
absl::StatusOr<absl::Duration> ParseDuration(absl::string_view text,
                                             PlainNumber plain = PlainNumber::kRefused);

// The "expected a duration: ..." words ParseDuration uses for `plain`, for
// callers that refuse a value that is not text at all (a YAML list) the
// same way.
std::string DurationExpected(PlainNumber plain);

}  // namespace understudy

#endif  // UNDERSTUDY_BASE_DURATION_H_
