// The trace the assertion fuzzers evaluate against: the review loop of
// trace/test_trace.h, as an ended run (all_consumed reads its summary).
#ifndef UNDERSTUDY_FUZZ_TRACE_FIXTURE_H_
#define UNDERSTUDY_FUZZ_TRACE_FIXTURE_H_

#include <vector>

#include "trace/assertions.h"
#include "trace/test_trace.h"

namespace understudy {
namespace fuzz {

inline trace::TraceView ReviewLoopView() {
  static const std::vector<v1::TraceEvent>* const events =
      new std::vector<v1::TraceEvent>(trace::testing::ReviewLoop());
  static const v1::RunSummary* const summary = [] {
    auto* s = new v1::RunSummary;
    s->mutable_run()->set_state(v1::RUN_STATE_ENDED);
    return s;
  }();
  return trace::TraceView{events, summary};
}

}  // namespace fuzz
}  // namespace understudy

#endif  // UNDERSTUDY_FUZZ_TRACE_FIXTURE_H_
