// Helpers of the run administration and retention tests (runs_test.cc,
// retention_test.cc): traces that take real space, and the ids a store
// lists.
#ifndef UNDERSTUDY_STORE_RUNS_TEST_UTIL_H_
#define UNDERSTUDY_STORE_RUNS_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {

// `n` letters that no codec compresses much, the same for the same `seed`.
inline std::string Noise(size_t n, uint32_t seed) {
  std::string text(n, ' ');
  for (char& c : text) {
    seed = seed * 1664525u + 1013904223u;
    c = static_cast<char>('a' + (seed >> 24) % 26);
  }
  return text;
}

// `n` custom events ("custom.note", seq 1..n) of run `run`, each with a
// `bytes`-long Noise attribute: a trace that takes real space.
inline std::vector<::understudy::v1::TraceEvent> NoteEvents(const std::string& run, int n,
                                                           size_t bytes) {
  std::vector<::understudy::v1::TraceEvent> events;
  for (int seq = 1; seq <= n; ++seq) {
    ::understudy::v1::TraceEvent& e = events.emplace_back();
    e.set_run(run);
    e.set_seq(seq);
    e.set_kind("custom.note");
    (*e.mutable_attributes())["note"] = Noise(bytes, static_cast<uint32_t>(seq));
  }
  return events;
}

// The ids of `runs` (Store::ListRuns's answer), in order; a failure to list
// them fails the test and gives none.
inline std::vector<std::string> RunIds(
    const absl::StatusOr<std::vector<::understudy::v1::Run>>& runs) {
  std::vector<std::string> ids;
  EXPECT_TRUE(runs.ok()) << runs.status();
  if (runs.ok()) {
    for (const ::understudy::v1::Run& run : *runs) ids.push_back(run.id());
  }
  return ids;
}

}  // namespace store
}  // namespace understudy

#endif  // UNDERSTUDY_STORE_RUNS_TEST_UTIL_H_
