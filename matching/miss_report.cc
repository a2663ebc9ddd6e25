#include "matching/miss_report.h"

#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "matching/diff.h"

namespace understudy {
namespace matching {
namespace {

constexpr size_t kMaxListedDiffs = 20;

std::string Quoted(absl::string_view s) { return nlohmann::json(std::string(s)).dump(); }

// How far exchange i is from `got`: JsonDistance, a different agent
// counting as one more field.
size_t Score(const SessionIndex& index, size_t i, absl::string_view agent,
             const nlohmann::json& got, size_t limit) {
  size_t score = index.exchange(i).agent() != agent ? 1 : 0;
  return score + JsonDistance(index.canonical(i), got, limit);
}

}  // namespace

size_t FindClosest(const SessionIndex& index, const std::vector<uint8_t>& consumed,
                   absl::string_view agent, const nlohmann::json& got, bool unconsumed_only) {
  size_t best = index.size();
  size_t best_score = std::numeric_limits<size_t>::max();
  bool best_consumed = true;
  for (size_t i = 0; i < index.size(); ++i) {
    bool is_consumed = consumed[i] != 0;
    if (unconsumed_only && is_consumed) continue;
    // Counting past the current best cannot change the outcome.
    size_t limit = best == index.size() ? 100000 : best_score + 1;
    size_t score = Score(index, i, agent, got, limit);
    if (score < best_score || (score == best_score && best_consumed && !is_consumed)) {
      best = i;
      best_score = score;
      best_consumed = is_consumed;
    }
  }
  return best;
}

v1::MissReport BuildMissReport(const SessionIndex& index, const std::vector<uint8_t>& consumed,
                               absl::string_view agent, const nlohmann::json& got) {
  v1::MissReport report;
  report.set_agent(std::string(agent));

  size_t best = FindClosest(index, consumed, agent, got, /*unconsumed_only=*/false);
  std::string text = absl::StrCat("no recorded exchange matches this request (agent ",
                                  Quoted(agent), ", session \"", index.session().name(), "@",
                                  index.session().version(), "\")");
  if (best == index.size()) {
    absl::StrAppend(&text, "; the session has no exchanges");
    report.set_text(text);
    return report;
  }

  const v1::Exchange& closest = index.exchange(best);
  const bool best_consumed = consumed[best] != 0;
  // The fields that differ, as listed (an absent message is one).
  const size_t best_score =
      (closest.agent() != agent ? 1 : 0) + CountJsonDiffs(index.canonical(best), got, 100000);
  report.set_closest_seq(closest.seq());
  report.set_closest_agent(closest.agent());
  if (closest.agent() != agent) {
    v1::FieldDiff* d = report.add_diffs();
    d->set_path("agent");
    d->set_recorded(Quoted(closest.agent()));
    d->set_got(Quoted(agent));
  }
  for (const JsonDiff& diff : DiffJson(index.canonical(best), got, kMaxListedDiffs)) {
    v1::FieldDiff* d = report.add_diffs();
    d->set_path(diff.path);
    d->set_recorded(diff.recorded);
    d->set_got(diff.got);
  }
  report.set_consumed_only(best_score == 0);

  if (report.consumed_only()) {
    absl::StrAppend(&text, ": an identical recording, exchange #", closest.seq(),
                    ", exists but this run already used it (each recording answers once; "
                    "the session has no further copy of this request)");
  } else {
    absl::StrAppend(&text, "; closest is exchange #", closest.seq(), " (agent ",
                    Quoted(closest.agent()), best_consumed ? ", already used" : "", "), ",
                    best_score, best_score == 1 ? " field differs:" : " fields differ:");
    for (const v1::FieldDiff& d : report.diffs()) {
      absl::StrAppend(&text, "\n  ", d.path().empty() ? "(request)" : d.path(), ": recorded ",
                      d.recorded().empty() ? "(absent)" : d.recorded(), " got ",
                      d.got().empty() ? "(absent)" : d.got());
    }
    if (best_score > static_cast<size_t>(report.diffs_size())) {
      absl::StrAppend(&text, "\n  … and more");
    }
  }
  report.set_text(text);
  return report;
}

}  // namespace matching
}  // namespace understudy
