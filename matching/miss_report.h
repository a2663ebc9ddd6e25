// Miss reports: when no recording answers a request, say which recorded
// exchange came closest and exactly which fields differ.
#ifndef UNDERSTUDY_MATCHING_MISS_REPORT_H_
#define UNDERSTUDY_MATCHING_MISS_REPORT_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "matching/session_index.h"
#include "nlohmann/json.hpp"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace matching {

// The position of the recorded exchange closest to `got` from `agent`: the
// smallest JsonDistance (diff.h; a field present on one side only weighs
// what it holds), a different agent counting as one more field; ties go to
// an unconsumed one, then to the lowest seq. With
// `unconsumed_only`, consumed positions are not candidates. Returns
// index.size() when there is no candidate. Deterministic.
size_t FindClosest(const SessionIndex& index, const std::vector<uint8_t>& consumed,
                   absl::string_view agent, const nlohmann::json& got, bool unconsumed_only);

// Builds the report for a request (`got`, canonical JSON) from `agent` that
// matched nothing unconsumed in `index`. `consumed[i]` says whether position
// i was already used by the run.
// The closest is FindClosest's. Same inputs, same report, same text.
v1::MissReport BuildMissReport(const SessionIndex& index, const std::vector<uint8_t>& consumed,
                               absl::string_view agent, const nlohmann::json& got);

}  // namespace matching
}  // namespace understudy

#endif  // UNDERSTUDY_MATCHING_MISS_REPORT_H_
