// Assertion specs (trace/spec.h): parsed and, when valid, evaluated against a
// realistic trace; a valid spec's checks always evaluate.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "fuzz/trace_fixture.h"
#include "trace/assertions.h"
#include "trace/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  const absl::string_view text = fuzz::View(data, size);
  absl::StatusOr<std::vector<v1::Assertion>> parsed = trace::ParseSpec(text, "fuzz.yaml");
  if (!parsed.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(parsed.status()), "a bad spec is INVALID_ARGUMENT");
    return 0;
  }
  absl::StatusOr<v1::AssertResponse> verdict =
      trace::EvaluateAll(*parsed, fuzz::ReviewLoopView());
  FUZZ_CHECK(verdict.ok(), "a valid spec evaluates");
  FUZZ_CHECK(verdict->results_size() >= static_cast<int>(parsed->size()),
             "one result (at least) per check");
  return 0;
}
