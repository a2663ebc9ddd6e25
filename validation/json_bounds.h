// Bounded JSON parsing: the one depth limit every JSON text in understudy is
// held to, wherever it comes from (HTTP bodies, tool arguments recorded from
// an upstream, assertion arguments, scenario values, imports).
//
// nlohmann's parser is iterative, but serializing, comparing and walking a
// value recurse, so a value nested 100,000 levels deep parses fine and then
// overflows the stack of whatever touches it next. Every parse of text that
// did not come from understudy itself goes through ParseJson or
// ParseJsonOrDiscarded below, which refuse such text before building
// anything; every recursive walk in the project is then bounded by
// kMaxJsonDepth.
//
//   absl::StatusOr<nlohmann::json> v = ParseJson<nlohmann::json>(text, "arguments");
//   nlohmann::json args = ParseJsonOrDiscarded<nlohmann::json>(recorded);  // untrusted, optional
//   if (args.is_discarded()) ...  // not JSON, or too deep: treat as text
#ifndef UNDERSTUDY_VALIDATION_JSON_BOUNDS_H_
#define UNDERSTUDY_VALIDATION_JSON_BOUNDS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace validation {

// The deepest nesting of arrays and objects accepted. Real requests (a JSON
// schema inside a tool inside a request) stay far below it; a thread's stack
// holds a walk of this depth many times over.
inline constexpr int kMaxJsonDepth = 256;

// What a CheckJsonText or ParseJson error is about. The error carries it as
// its payload under kJsonErrorPayload, so that callers tell a text that is
// not JSON from one that is too deep without reading the message.
enum class JsonError {
  kNone,    // not such an error (or OK)
  kUtf8,    // invalid UTF-8
  kSyntax,  // not JSON: a syntax error or a number out of range
  kDepth,   // nested deeper than kMaxJsonDepth
};
inline constexpr absl::string_view kJsonErrorPayload = "type.understudy/validation.JsonError";

// The JsonError `status` carries; kNone for OK and for any other error.
JsonError JsonErrorOf(const absl::Status& status);

// One pass over `text` (JSON or not): UTF-8 validity everywhere, and the
// nesting of brackets outside strings. OK, or INVALID_ARGUMENT (carrying
// JsonError kUtf8 or kDepth):
//   "<where>: invalid UTF-8 at byte N"
//   "<where>: JSON nested deeper than 256 levels at byte N"
absl::Status CheckJsonText(absl::string_view text, absl::string_view where);

// True when the brackets of `text` outside strings nest no deeper than
// kMaxJsonDepth. Cheaper than CheckJsonText; says nothing of UTF-8.
bool NestsWithin(absl::string_view text);

namespace internal {
// The error of a failed nlohmann parse, as ParseJson reports it.
// `byte` is nlohmann's 1-based position of a syntax error, or -1 for an
// error without a position (number overflow).
absl::Status ParseError(absl::string_view where, const std::exception& e, long long byte);
}  // namespace internal

// Parses `text` as exactly one JSON value (RFC 8259: UTF-8, no comments, no
// trailing bytes) into J (nlohmann::json or nlohmann::ordered_json). Checks
// CheckJsonText first. INVALID_ARGUMENT (carrying a JsonError: kUtf8,
// kDepth, or kSyntax for the last two forms), offsets counting from 0:
//   "<where>: invalid UTF-8 at byte N"
//   "<where>: JSON nested deeper than 256 levels at byte N"
//   "<where>: invalid JSON at byte N: <reason>"   (syntax errors)
//   "<where>: invalid JSON: number overflow parsing '1e400'"
// Reasons are cut to a few hundred bytes. Of duplicate keys the last wins.
template <typename J>
absl::StatusOr<J> ParseJson(absl::string_view text, absl::string_view where) {
  absl::Status checked = CheckJsonText(text, where);
  if (!checked.ok()) return checked;
  try {
    return J::parse(text.begin(), text.end());
  } catch (const typename J::parse_error& e) {
    return internal::ParseError(where, e, static_cast<long long>(e.byte));
  } catch (const typename J::exception& e) {  // out_of_range 406: number overflow
    return internal::ParseError(where, e, -1);
  }
}

// `text` parsed, or a discarded value (is_discarded()) when it is not JSON,
// not UTF-8 or nested deeper than kMaxJsonDepth. For text that may or may
// not be JSON (a recorded tool call's arguments) and is used only when it is.
template <typename J>
J ParseJsonOrDiscarded(absl::string_view text) {
  if (!NestsWithin(text)) return J(J::value_t::discarded);
  return J::parse(text.begin(), text.end(), /*cb=*/nullptr, /*allow_exceptions=*/false);
}

}  // namespace validation
}  // namespace understudy

#endif  // UNDERSTUDY_VALIDATION_JSON_BOUNDS_H_
