// Text helpers shared by the explanations of trace assertions and specs, so
// that every check renders values, event lists and comparisons alike.
#ifndef UNDERSTUDY_TRACE_RENDER_H_
#define UNDERSTUDY_TRACE_RENDER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace trace {

// Values longer than this many bytes are shortened in explanations.
inline constexpr size_t kMaxShownBytes = 160;
// Event lists longer than this are shortened in explanations.
inline constexpr size_t kMaxShownSeqs = 20;

// `s` cut to at most `max` bytes on a UTF-8 boundary, with
// "... (N bytes)" appended when cut; `s` itself otherwise.
std::string Shorten(absl::string_view s, size_t max = kMaxShownBytes);

// `s` shortened, as a JSON string literal: "executor". Invalid UTF-8 is
// replaced, never an error.
std::string Quote(absl::string_view s);

// Compact JSON text of `value`, shortened.
std::string ShortJson(const nlohmann::json& value);

// "#3, #7, #9"; past kMaxShownSeqs: "#1, ..., #20 and 5 more".
std::string SeqList(const std::vector<int64_t>& seqs);

// "1 event", "2 events": `n` and the noun, plural when n != 1.
std::string Count(size_t n, absl::string_view singular, absl::string_view plural);

// Whether `actual <op> n` holds. An unknown op never holds.
bool Compare(v1::Comparison op, int64_t actual, int64_t n);
// "exactly 3", "other than 3", "fewer than 3", "at most 3", "more than 3",
// "at least 3".
std::string ComparisonWords(v1::Comparison op, int64_t n);
// "==", "!=", "<", "<=", ">", ">=".
std::string ComparisonSymbol(v1::Comparison op);

// "exact", "subsequence", "prefix" (the spec's words); "unknown" for any
// other value.
absl::string_view MatchName(v1::SequenceMatch m);
// The SequenceMatch a word names (MatchName's inverse); nullopt for any
// other word.
std::optional<v1::SequenceMatch> MatchFromName(absl::string_view name);

}  // namespace trace
}  // namespace understudy

#endif  // UNDERSTUDY_TRACE_RENDER_H_
