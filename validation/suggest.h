// "Did you mean" suggestions for misspelled names in validated documents.
#ifndef UNDERSTUDY_VALIDATION_SUGGEST_H_
#define UNDERSTUDY_VALIDATION_SUGGEST_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace understudy {
namespace validation {

// Optimal string alignment distance (a transposition of neighbours costs
// 1), ASCII case-insensitive: "agnet" is 1 from "agent". Quadratic in the
// lengths; callers keep words short.
size_t EditDistance(absl::string_view a, absl::string_view b);

// `did you mean "X"?` for the candidate closest to `word` within a third of
// the word's length (1 to 3 edits; the first of equals), else the first
// candidate that starts with `word` (3 characters or more: "output" for
// "output_tokens"), else "". Words over 64 bytes get no suggestion.
std::string Suggest(absl::string_view word, const std::vector<std::string>& candidates);

}  // namespace validation
}  // namespace understudy

#endif  // UNDERSTUDY_VALIDATION_SUGGEST_H_
