// Traces.Assert as a remote caller sends it: any AssertRequest (the input as
// serialized protobuf), evaluated against a realistic trace. Errors name the
// assertion; nothing crashes whatever the arguments' JSON holds.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "fuzz/trace_fixture.h"
#include "trace/assertions.h"
#include "understudy/v1/understudy.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  v1::AssertRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<v1::AssertResponse> verdict =
      trace::EvaluateAll(request.assertions(), fuzz::ReviewLoopView());
  if (verdict.ok()) {
    for (const v1::AssertionResult& r : verdict->results()) (void)trace::ReportLine(r);
  } else {
    FUZZ_CHECK(!verdict.status().message().empty(), "errors say what is wrong");
  }
  return 0;
}
