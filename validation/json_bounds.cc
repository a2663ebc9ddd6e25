#include "validation/json_bounds.h"

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "validation/utf8.h"

namespace understudy {
namespace validation {
namespace {

// Longest parser reason quoted in an error message.
constexpr size_t kMaxReasonBytes = 300;

// The part of an nlohmann exception message after its "[json.exception...]
// parse error at line L, column C: " prefix.
absl::string_view Reason(absl::string_view what) {
  size_t start = what.find("] ");
  if (start != absl::string_view::npos) what.remove_prefix(start + 2);
  size_t colon = what.find(": ");
  if (absl::StartsWith(what, "parse error") && colon != absl::string_view::npos) {
    what.remove_prefix(colon + 2);
  }
  return what;
}

// `status` marked as a JsonError of `kind`.
absl::Status Marked(absl::Status status, JsonError kind) {
  const char* name = kind == JsonError::kUtf8 ? "utf8" : kind == JsonError::kSyntax ? "syntax" : "depth";
  status.SetPayload(kJsonErrorPayload, absl::Cord(name));
  return status;
}

// Scans `text` once. Stops at the first invalid UTF-8 byte when `utf8` is
// set, or at the first bracket past kMaxJsonDepth.
absl::Status Scan(absl::string_view text, absl::string_view where, bool utf8) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      size_t n = 1;
      if (utf8) {
        n = Utf8SequenceLength(text, i);
        if (n == 0) {
          return Marked(absl::InvalidArgumentError(absl::StrCat(where, ": invalid UTF-8 at byte ", i)),
                        JsonError::kUtf8);
        }
      }
      escaped = false;
      i += n;
      continue;
    }
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return Marked(absl::InvalidArgumentError(absl::StrCat(where, ": JSON nested deeper than ",
                                                              kMaxJsonDepth, " levels at byte ", i)),
                      JsonError::kDepth);
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
    ++i;
  }
  return absl::OkStatus();
}

}  // namespace

JsonError JsonErrorOf(const absl::Status& status) {
  const auto kind = status.GetPayload(kJsonErrorPayload);
  if (!kind.has_value()) return JsonError::kNone;
  if (*kind == "utf8") return JsonError::kUtf8;
  if (*kind == "syntax") return JsonError::kSyntax;
  if (*kind == "depth") return JsonError::kDepth;
  return JsonError::kNone;
}

absl::Status CheckJsonText(absl::string_view text, absl::string_view where) {
  return Scan(text, where, /*utf8=*/true);
}

bool NestsWithin(absl::string_view text) { return Scan(text, "", /*utf8=*/false).ok(); }

namespace internal {

absl::Status ParseError(absl::string_view where, const std::exception& e, long long byte) {
  if (byte < 0) {
    return Marked(absl::InvalidArgumentError(absl::StrCat(
                      where, ": invalid JSON: ", Shorten(Reason(e.what()), kMaxReasonBytes))),
                  JsonError::kSyntax);
  }
  return Marked(absl::InvalidArgumentError(absl::StrCat(where, ": invalid JSON at byte ",
                                                        byte > 0 ? byte - 1 : 0, ": ",
                                                        Shorten(Reason(e.what()), kMaxReasonBytes))),
                JsonError::kSyntax);
}

}  // namespace internal
}  // namespace validation
}  // namespace understudy
