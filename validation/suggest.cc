#include "validation/suggest.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace understudy {
namespace validation {

size_t EditDistance(absl::string_view a, absl::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const char x = absl::ascii_tolower(a[i - 1]), y = absl::ascii_tolower(b[j - 1]);
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (x == y ? 0 : 1)});
      if (i > 1 && j > 1 && x == absl::ascii_tolower(b[j - 2]) &&
          absl::ascii_tolower(a[i - 2]) == y) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::string Suggest(absl::string_view word, const std::vector<std::string>& candidates) {
  if (word.size() > 64) return "";  // keeps the quadratic distance cheap
  const size_t limit = std::min<size_t>(3, word.size() / 3 + 1);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    if (candidate.size() > 64) continue;
    const size_t distance = EditDistance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  if (best.empty() && word.size() >= 3) {
    for (const std::string& candidate : candidates) {
      if (absl::StartsWithIgnoreCase(candidate, word)) {
        best = candidate;
        break;
      }
    }
  }
  return best.empty() ? "" : absl::StrCat("did you mean \"", best, "\"?");
}

}  // namespace validation
}  // namespace understudy
