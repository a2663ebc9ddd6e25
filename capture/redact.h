// Redaction: secrets never reach the store, exports, traces or logs.
//
// Headers are never stored at all (only a response's content type is), so a
// key in `Authorization`, `x-api-key` or `api-key` cannot leak through a
// recording; the header list here also keeps values out of debug logs.
// JSON paths name body fields whose values are replaced by "[REDACTED]"
// before a request body is stored or matched.
#ifndef UNDERSTUDY_CAPTURE_REDACT_H_
#define UNDERSTUDY_CAPTURE_REDACT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "capture/json_path.h"

namespace understudy {
namespace capture {

inline constexpr char kRedacted[] = "[REDACTED]";

class Redactor {
 public:
  // Always-secret headers plus `extra_headers` (any case); JSON `paths` in
  // JsonPath syntax. INVALID_ARGUMENT naming a malformed path.
  static absl::StatusOr<Redactor> Create(const std::vector<std::string>& extra_headers,
                                         const std::vector<std::string>& paths);
  Redactor();

  // Whether a header's value is a secret (name in any case).
  bool IsSecretHeader(absl::string_view name) const;

  // `body` with every configured path's value replaced by "[REDACTED]".
  // The bytes are returned unchanged when no path matches or the body is not
  // JSON, so that recordings stay byte-faithful unless a secret was there.
  std::string RedactBody(absl::string_view body) const;

  bool has_paths() const { return !paths_.empty(); }

 private:
  std::vector<std::string> headers_;  // lower-case
  std::vector<JsonPath> paths_;
};

}  // namespace capture
}  // namespace understudy

#endif  // UNDERSTUDY_CAPTURE_REDACT_H_
