// "Contains" for JSON values: what `arguments: {phase: verification}` means
// wherever a document describes a tool call's arguments — a trace assertion
// (trace/assertions.h, trace/spec.h) or a scenario rule's
// `when.tool_arguments` (scenario/rules.h): the call's arguments have at
// least these fields with these values. It lives here, below both users, so
// that the two agree on the meaning.
#ifndef UNDERSTUDY_VALIDATION_JSON_SUBSET_H_
#define UNDERSTUDY_VALIDATION_JSON_SUBSET_H_

#include <string>

#include "nlohmann/json.hpp"

namespace understudy {
namespace validation {

// True when `expected` is contained in `actual`: an object is contained when
// each of its keys is present in `actual`'s object with a contained value
// (recursively; other keys of `actual` are ignored); arrays and scalars must
// be equal (numbers compare by value: 1 equals 1.0).
//
// When not contained and `difference` is non-null, sets it to the first
// difference (keys in sorted order), e.g. `at phase: expected
// "verification", got "execute"`, `at meta.owner: missing (expected "ann")`,
// or `expected {"phase":"x"}, got "x"` at the top level. Long values are
// shortened (160 bytes). The difference quotes `actual`: callers that must
// not repeat a request's values pass nullptr.
//
// Recursion follows `expected`'s depth, which every parsed value bounds
// (validation/json_bounds.h). Thread-safe; no state.
bool JsonSubset(const nlohmann::json& expected, const nlohmann::json& actual,
                std::string* difference);

}  // namespace validation
}  // namespace understudy

#endif  // UNDERSTUDY_VALIDATION_JSON_SUBSET_H_
