// Field-by-field differences between two canonical requests, for miss
// reports: `messages[2].content: recorded "..." got "..."`.
#ifndef UNDERSTUDY_MATCHING_DIFF_H_
#define UNDERSTUDY_MATCHING_DIFF_H_

#include <cstddef>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace understudy {
namespace matching {

struct JsonDiff {
  // `messages[2].content`; "" for the root.
  std::string path;
  // Compact JSON of each side, cut to a readable length; "" when absent.
  std::string recorded;
  std::string got;
};

// Leaf differences of `recorded` vs `got`, depth first, object keys in sorted
// order, array elements by index. Stops after `max_diffs` (the count returned
// by CountJsonDiffs is exact up to that bound too). Deterministic.
std::vector<JsonDiff> DiffJson(const nlohmann::json& recorded, const nlohmann::json& got,
                               size_t max_diffs = 20);

// How many leaf differences there are, counting at most `limit`: what
// DiffJson would list.
size_t CountJsonDiffs(const nlohmann::json& recorded, const nlohmann::json& got,
                      size_t limit);

// How far apart the two are, counting at most `limit`: CountJsonDiffs, but
// a value present on one side only counts as the leaves it holds (at least
// one). A request that differs from a recording in two ids is closer to it
// than to a recording that lacks its last two messages, though DiffJson
// lists two differences either way.
size_t JsonDistance(const nlohmann::json& recorded, const nlohmann::json& got, size_t limit);

// `value` as compact JSON, cut to `max_chars` with an ellipsis.
std::string Abbreviate(const nlohmann::json& value, size_t max_chars = 120);

}  // namespace matching
}  // namespace understudy

#endif  // UNDERSTUDY_MATCHING_DIFF_H_
