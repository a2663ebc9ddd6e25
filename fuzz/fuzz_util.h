// What the fuzz targets share: a check that aborts (so libFuzzer reports the
// input) when an invariant the code promises does not hold, and splitting
// one input into parts.
#ifndef UNDERSTUDY_FUZZ_FUZZ_UTIL_H_
#define UNDERSTUDY_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

// Aborts with `what` when `condition` does not hold.
#define FUZZ_CHECK(condition, what)                                              \
  do {                                                                           \
    if (!(condition)) {                                                          \
      std::fprintf(stderr, "invariant failed: %s (%s:%d)\n", what, __FILE__, __LINE__); \
      std::abort();                                                              \
    }                                                                            \
  } while (0)

namespace understudy {
namespace fuzz {

inline absl::string_view View(const uint8_t* data, size_t size) {
  return absl::string_view(reinterpret_cast<const char*>(data), size);
}

// `input` split at each occurrence of `separator` (at most `max_parts`
// parts; the last holds the rest).
inline std::vector<absl::string_view> Split(absl::string_view input, absl::string_view separator,
                                            size_t max_parts) {
  std::vector<absl::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t at = input.find(separator);
    if (at == absl::string_view::npos) break;
    parts.push_back(input.substr(0, at));
    input.remove_prefix(at + separator.size());
  }
  parts.push_back(input);
  return parts;
}

}  // namespace fuzz
}  // namespace understudy

#endif  // UNDERSTUDY_FUZZ_FUZZ_UTIL_H_
