// UTF-8 checks for text that crosses an entry point (scenario and spec
// files, imports, HTTP bodies and headers, gRPC strings) and repair of text
// that was stored before those checks existed.
//
// "Valid" is RFC 3629: no overlong forms, no surrogates (U+D800..U+DFFF),
// nothing above U+10FFFF. Protobuf's proto3 `string` fields demand exactly
// this, so text that passes here always serializes into a message every
// client can parse.
#ifndef UNDERSTUDY_VALIDATION_UTF8_H_
#define UNDERSTUDY_VALIDATION_UTF8_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "base/text.h"

namespace understudy {
namespace validation {

// Length of the well-formed UTF-8 sequence that starts at text[i], or 0 when
// the bytes there are not one. `i` must be < text.size().
size_t Utf8SequenceLength(absl::string_view text, size_t i);

// The byte offset of the first byte that does not start a well-formed
// sequence, or nullopt when all of `text` is valid UTF-8.
std::optional<size_t> FindInvalidUtf8(absl::string_view text);

inline bool IsValidUtf8(absl::string_view text) { return !FindInvalidUtf8(text).has_value(); }

// `text` with each ill-formed byte replaced by U+FFFD (the "replacement
// character"), valid sequences kept as they are. Returns `text` unchanged
// (one copy) when it is valid.
std::string SanitizeUtf8(absl::string_view text);

// base/text.h's, for the callers that find it here.
using ::understudy::Shorten;

// A 1-based line and column (in bytes) of `offset` within `text`, for
// messages that point into a file.
struct TextPosition {
  int line = 1;
  int column = 1;
};
TextPosition PositionOf(absl::string_view text, size_t offset);

}  // namespace validation
}  // namespace understudy

#endif  // UNDERSTUDY_VALIDATION_UTF8_H_
