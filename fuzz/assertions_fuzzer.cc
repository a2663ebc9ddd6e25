// Traces.Assert as a remote caller sends it: any AssertRequest (the input as
// serialized protobuf), evaluated against a realistic trace. Errors name the
// assertion; nothing crashes whatever the arguments' JSON holds.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "trace/assertions.h"
#include "trace/test_trace.h"
#include "understudy/v1/understudy.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  static const std::vector<v1::TraceEvent>* const kTrace =
      new std::vector<v1::TraceEvent>(trace::testing::ReviewLoop());
  static const v1::RunSummary* const kSummary = [] {
    auto* summary = new v1::RunSummary;
    summary->mutable_run()->set_state(v1::RUN_STATE_ENDED);
    return summary;
  }();
  v1::AssertRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<v1::AssertResponse> verdict =
      trace::EvaluateAll(request.assertions(), trace::TraceView{kTrace, kSummary});
  if (verdict.ok()) {
    for (const v1::AssertionResult& r : verdict->results()) (void)trace::ReportLine(r);
  } else {
    FUZZ_CHECK(!verdict.status().message().empty(), "errors say what is wrong");
  }
  return 0;
}
