// Text helpers that know nothing of the project's formats.
#ifndef UNDERSTUDY_BASE_TEXT_H_
#define UNDERSTUDY_BASE_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace understudy {

// `text` cut to at most `max` bytes without splitting a UTF-8 sequence,
// with "..." appended when anything was cut. For messages that quote
// what they were given.
std::string Shorten(absl::string_view text, size_t max);

}  // namespace understudy

#endif  // UNDERSTUDY_BASE_TEXT_H_
