// GoogleTest matchers for absl::Status, which Debian's Abseil lacks.
#ifndef UNDERSTUDY_BASE_STATUS_MATCHERS_H_
#define UNDERSTUDY_BASE_STATUS_MATCHERS_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace understudy {
namespace testing_internal {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

}  // namespace testing_internal

// Matches a Status or StatusOr whose code is `code` and whose message
// matches `message_matcher` (any message by default).
MATCHER_P2(StatusIsImpl, code, message_matcher, "") {
  const absl::Status& s = testing_internal::GetStatus(arg);
  if (s.code() != code) {
    *result_listener << "code is " << absl::StatusCodeToString(s.code())
                     << " (" << s.message() << ")";
    return false;
  }
  if (::testing::ExplainMatchResult(message_matcher, std::string(s.message()), result_listener)) {
    return true;
  }
  *result_listener << "message is \"" << s.message() << "\"";
  return false;
}

template <typename M>
auto StatusIs(absl::StatusCode code, M message_matcher) {
  return StatusIsImpl(code, ::testing::Matcher<std::string>(message_matcher));
}
inline auto StatusIs(absl::StatusCode code) {
  return StatusIsImpl(code, ::testing::Matcher<std::string>(::testing::_));
}

MATCHER(IsOk, "") {
  const absl::Status& s = testing_internal::GetStatus(arg);
  if (!s.ok()) *result_listener << s.ToString();
  return s.ok();
}

}  // namespace understudy

#endif  // UNDERSTUDY_BASE_STATUS_MATCHERS_H_
