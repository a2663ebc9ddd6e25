// JSON helpers shared by the provider codecs: bounded parsing of untrusted
// text and the vocabulary of their error messages.
//
// Every codec error is INVALID_ARGUMENT and starts with the JSON path of the
// bad value, then says what was expected and what was found:
//
//   messages[2].content: expected a string or an array of content parts, got number
//   model: missing; expected a string
//   body: invalid JSON at byte 17: syntax error while parsing value - ...
//
// Paths are written the way a reader of the body would point at the value:
// object keys joined with ".", array positions in brackets, with no leading
// "$". The root of the text is named by the caller ("body" for an HTTP body,
// "data" for the data of a server-sent event).
#ifndef UNDERSTUDY_PROVIDER_JSON_UTIL_H_
#define UNDERSTUDY_PROVIDER_JSON_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "understudy/v1/completion.pb.h"
#include "validation/json_bounds.h"
#include "validation/problems.h"

namespace understudy {
namespace provider {

// The JSON value type of the codecs. Objects keep their keys in the order
// of the text they were parsed from, so that values passed through (tool
// arguments, schemas, extra fields) keep the bytes' order; matching does not
// depend on it, since the canonical form sorts keys.
using Json = nlohmann::ordered_json;

// The depth bound every JSON parse holds to (validation/json_bounds.h).
using validation::kMaxJsonDepth;

// Parses `text` as exactly one JSON value of the codecs' type: UTF-8 and the
// depth are checked before anything is built. Errors as
// validation::ParseJson ("<where>: invalid UTF-8 at byte N", "<where>: JSON
// nested deeper than 256 levels at byte N", "<where>: invalid JSON at byte
// N: <reason>"). Integers too large for 64 bits become doubles (nlohmann's
// behaviour). Thread-safe.
absl::StatusOr<Json> ParseJson(absl::string_view text, absl::string_view where);

// The JSON type of `value` as error messages name it: "null", "boolean",
// "number", "string", "array", "object".
std::string JsonTypeName(const Json& value);

// `value` serialized compactly (no whitespace) with UTF-8 kept as is; bytes
// that are not valid UTF-8 (possible only in values that did not come from
// ParseJson) are replaced by U+FFFD instead of throwing. Key order is the
// value's own: sorted for nlohmann::json, insertion order for ordered_json.
std::string DumpJson(const nlohmann::json& value);
std::string DumpJson(const nlohmann::ordered_json& value);

// `parent.key` (`key` at the root) and `parent[index]`.
using validation::JoinPath;

// INVALID_ARGUMENT "<path>: expected <expected>, got <type of got>".
absl::Status ExpectedError(absl::string_view path, absl::string_view expected, const Json& got);

// INVALID_ARGUMENT "<path>: missing; expected <expected>".
absl::Status MissingError(absl::string_view path, absl::string_view expected);

// `value` as a signed 64-bit integer. Fails with ExpectedError(path, "an
// integer", value) for anything else, including numbers with a fraction or
// exponent and integers outside the int64 range.
absl::StatusOr<int64_t> JsonToInt64(const Json& value, absl::string_view path);

// `value` as a double. Fails with ExpectedError(path, "a number", value)
// for anything that is not a JSON number.
absl::StatusOr<double> JsonToDouble(const Json& value, absl::string_view path);

// The member `key` of `object`, or nullptr when `object` is not an object or
// has no such member or its value is null: in both providers' APIs a null
// field means the same as an absent one. The pointer lives as long as
// `object` is unchanged.
const Json* FindMember(const Json& object, absl::string_view key);

// Sets `*out` to the string member `key` of `object`; leaves it unchanged
// when the member is absent or null. Fails with ExpectedError at
// `parent.key` when the member is not a string.
absl::Status ReadOptionalString(const Json& object, absl::string_view key, absl::string_view parent,
                                std::string* out);

// Like ReadOptionalString, but an absent or null member fails with
// MissingError(parent.key, "a string").
absl::Status ReadRequiredString(const Json& object, absl::string_view key, absl::string_view parent,
                                std::string* out);

// Reads a usage object's token counts, `input_key` and `output_key` (each
// where present), into `out`. Fails with ExpectedError at `path` for a
// non-object, and at `path.key` for a count that is not an integer.
absl::Status ReadUsage(const Json& usage, absl::string_view path, absl::string_view input_key,
                       absl::string_view output_key, v1::Usage* out);

// True when every non-null member of `object` is named in `keys`: the test
// for "this object maps exactly onto canonical fields".
bool HasOnlyKeys(const Json& object, std::initializer_list<absl::string_view> keys);

// The status code an OpenAI API error stands for, from the error object's
// `type` (or, in the Responses API, its `code`): the inverse of
// openai::ErrorType, plus "insufficient_quota" and "rate_limit_exceeded"
// (RESOURCE_EXHAUSTED); UNKNOWN for anything else. Shared by the Chat
// Completions and Responses stream decoders.
absl::StatusCode OpenAiErrorStatusCode(absl::string_view type);

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_JSON_UTIL_H_
