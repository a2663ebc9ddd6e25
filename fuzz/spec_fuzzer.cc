// Assertion specs (trace/spec.h): parsed and, when valid, evaluated against a
// realistic trace; a valid spec's checks always evaluate.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "trace/assertions.h"
#include "trace/spec.h"
#include "trace/test_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  static const std::vector<v1::TraceEvent>* const kTrace =
      new std::vector<v1::TraceEvent>(trace::testing::ReviewLoop());
  // An ended run (all_consumed reads its summary).
  static const v1::RunSummary* const kSummary = [] {
    auto* summary = new v1::RunSummary;
    summary->mutable_run()->set_state(v1::RUN_STATE_ENDED);
    return summary;
  }();
  const absl::string_view text = fuzz::View(data, size);
  absl::StatusOr<std::vector<v1::Assertion>> parsed = trace::ParseSpec(text, "fuzz.yaml");
  if (!parsed.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(parsed.status()), "a bad spec is INVALID_ARGUMENT");
    return 0;
  }
  absl::StatusOr<v1::AssertResponse> verdict =
      trace::EvaluateAll(*parsed, trace::TraceView{kTrace, kSummary});
  FUZZ_CHECK(verdict.ok(), "a valid spec evaluates");
  FUZZ_CHECK(verdict->results_size() >= static_cast<int>(parsed->size()),
             "one result (at least) per check");
  return 0;
}
