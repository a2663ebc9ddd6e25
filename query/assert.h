// Assertions over a run (trace/assertions.h), read the cheap way: only the
// events the checks read, through the run's indexes.
#ifndef UNDERSTUDY_QUERY_ASSERT_H_
#define UNDERSTUDY_QUERY_ASSERT_H_

#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "query/source.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace query {

// The verdicts of `assertions` on run `run`'s trace, with its summary once
// it ended, as Traces.Assert answers (pending trace writes are committed
// first). INVALID_ARGUMENT "run: required" for an empty run, "assertions:
// give at least one" for none, or a malformed assertion (from
// trace::EvaluateAll); NOT_FOUND for an unknown run; DATA_LOSS naming a
// stored event that does not parse; the store's errors otherwise.
absl::StatusOr<v1::AssertResponse> AssertRun(
    const Source& source, const std::string& run,
    const google::protobuf::RepeatedPtrField<v1::Assertion>& assertions);

}  // namespace query
}  // namespace understudy

#endif  // UNDERSTUDY_QUERY_ASSERT_H_
