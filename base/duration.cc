#include "base/duration.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace understudy {
namespace {

// Larger plain numbers or day counts are typos, and would overflow the
// conversion to absl::Duration's integer representation.
constexpr double kMaxMilliseconds = 1e15;
constexpr double kMaxDays = 1e7;

bool LooksNumeric(absl::string_view s) {
  const char first = s.empty() ? '\0' : s[0];
  return absl::ascii_isdigit(static_cast<unsigned char>(first)) || first == '-' || first == '.' ||
         first == '+';
}

absl::Status Expected(PlainNumber plain, absl::string_view got) {
  return absl::InvalidArgumentError(absl::StrCat(DurationExpected(plain), ", got \"", got, "\""));
}

// "Nd" or "Nd<absl duration>": days are the one unit absl does not read.
// Anything else is refused in the words of DurationExpected(plain).
absl::StatusOr<absl::Duration> ParseDays(absl::string_view s, PlainNumber plain) {
  const size_t d = s.find('d');
  double days = 0;
  if (d == absl::string_view::npos || d == 0 || !LooksNumeric(s) ||
      !absl::SimpleAtod(s.substr(0, d), &days)) {
    return Expected(plain, s);
  }
  if (!std::isfinite(days)) return absl::InvalidArgumentError(absl::StrCat("must be finite, got ", s));
  if (std::fabs(days) > kMaxDays) {
    return absl::InvalidArgumentError(absl::StrCat("more than ", kMaxDays, " days, got ", s));
  }
  absl::Duration result = absl::Hours(24 * days);
  const absl::string_view rest = s.substr(d + 1);
  if (!rest.empty()) {
    absl::Duration more;
    if (rest[0] == '-' || rest[0] == '+' || !absl::ParseDuration(rest, &more) ||
        more == absl::InfiniteDuration()) {
      return Expected(plain, s);
    }
    result += more;
  }
  return result;
}

}  // namespace

std::string DurationExpected(PlainNumber plain) {
  switch (plain) {
    case PlainNumber::kMilliseconds:
      return "expected a duration: milliseconds (150) or a number with a unit (150ms, 2s, 1m)";
    case PlainNumber::kRefused:
      break;
  }
  return "expected a duration: a number with a unit (30m, 12h, 7d)";
}

absl::StatusOr<absl::Duration> ParseDuration(absl::string_view text, PlainNumber plain) {
  const absl::string_view s = absl::StripAsciiWhitespace(text);
  if (s.empty()) return Expected(plain, s);
  absl::Duration d;
  double number = 0;
  if (LooksNumeric(s) && absl::SimpleAtod(s, &number)) {
    if (plain == PlainNumber::kRefused) return Expected(plain, s);
    if (!std::isfinite(number) || std::fabs(number) > kMaxMilliseconds) {
      return absl::InvalidArgumentError(
          absl::StrCat("must be a finite number of milliseconds, got ", s));
    }
    d = absl::Milliseconds(number);
  } else if (absl::ParseDuration(s, &d)) {
    if (d == absl::InfiniteDuration() || d == -absl::InfiniteDuration()) {
      return absl::InvalidArgumentError(absl::StrCat("must be finite, got ", s));
    }
  } else {
    absl::StatusOr<absl::Duration> days = ParseDays(s, plain);
    if (!days.ok()) return days.status();
    d = *days;
  }
  if (d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("must not be negative, got ", s));
  }
  return d;
}

}  // namespace understudy
