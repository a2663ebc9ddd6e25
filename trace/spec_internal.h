// internal to trace/spec*.cc; callers use trace/spec.h. The parsed form of
// a spec's items, which spec_check.cc reads a document into and spec.cc
// turns into assertions and results, and the checker's entry points.
#ifndef UNDERSTUDY_TRACE_SPEC_INTERNAL_H_
#define UNDERSTUDY_TRACE_SPEC_INTERNAL_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "understudy/v1/understudy.pb.h"
#include "validation/problems.h"

namespace understudy {
namespace trace {
namespace spec_internal {

using Keys = std::initializer_list<const char*>;

// The comparisons a count takes, and their values, in the same order.
constexpr Keys kOps = {"eq", "ne", "lt", "le", "gt", "ge"};
constexpr v1::Comparison kOpValues[] = {v1::COMPARISON_EQ, v1::COMPARISON_NE, v1::COMPARISON_LT,
                                        v1::COMPARISON_LE, v1::COMPARISON_GT, v1::COMPARISON_GE};

// ---------------------------------------------------------------------------
// The parsed form of a select item.

struct AttributeExpectation {
  enum class Op { kEquals, kMatches, kJsonSubset };
  std::string key;
  Op op = Op::kEquals;
  std::string text;               // kEquals: the value; kMatches: the pattern
  nlohmann::json json;            // kJsonSubset
  std::shared_ptr<const RE2> re;  // kMatches; never null then
};

struct Position {
  enum class Kind { kAll, kFirst, kLast, kIndex };
  Kind kind = Kind::kAll;
  int64_t index = 0;
};

struct SelectCheck {
  std::string name;
  v1::EventFilter select;
  Position position;
  bool has_count = false;
  v1::Comparison op = v1::COMPARISON_GE;
  int64_t n = 1;
  std::vector<AttributeExpectation> attributes;  // document order
};

struct Item {
  std::string path;  // "assertions[3]"
  // Exactly one of the two.
  std::optional<v1::Assertion> builtin;
  std::optional<SelectCheck> select;
};

// validation::JoinPath: `path` and field `key` ("assertions[3].select").
std::string Join(const std::string& path, absl::string_view key);

// Validates `text` into `report`, adding the parsed items to `items` (all of
// them only when the report is ok()).
void Check(absl::string_view text, absl::string_view source, validation::Report* out,
           std::vector<Item>* items);

// The items of `text`, or INVALID_ARGUMENT listing every problem.
absl::StatusOr<std::vector<Item>> Parse(absl::string_view text, absl::string_view source);

}  // namespace spec_internal
}  // namespace trace
}  // namespace understudy

#endif  // UNDERSTUDY_TRACE_SPEC_INTERNAL_H_
