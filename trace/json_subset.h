// "Contains" for JSON values: what a tool-call expectation means by
// `arguments: {phase: verification}` — the call's arguments have at least
// these fields with these values.
#ifndef UNDERSTUDY_TRACE_JSON_SUBSET_H_
#define UNDERSTUDY_TRACE_JSON_SUBSET_H_

#include <string>

#include "nlohmann/json.hpp"

namespace understudy {
namespace trace {

// True when `expected` is contained in `actual`: an object is contained when
// each of its keys is present in `actual`'s object with a contained value
// (recursively; other keys of `actual` are ignored); arrays and scalars must
// be equal (numbers compare by value: 1 equals 1.0).
//
// When not contained and `difference` is non-null, sets it to the first
// difference (keys in sorted order), e.g. `at phase: expected
// "verification", got "execute"`, `at meta.owner: missing (expected "ann")`,
// or `expected {"phase":"x"}, got "x"` at the top level. Long values are
// shortened.
bool JsonSubset(const nlohmann::json& expected, const nlohmann::json& actual,
                std::string* difference);

}  // namespace trace
}  // namespace understudy

#endif  // UNDERSTUDY_TRACE_JSON_SUBSET_H_
