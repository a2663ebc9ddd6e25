// Checks on what clients send before it reaches matching or the store.
#ifndef UNDERSTUDY_CAPTURE_VALIDATE_H_
#define UNDERSTUDY_CAPTURE_VALIDATE_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace capture {

// OK when `request` has at least one message and every role is one of
// system, developer, user, assistant, tool. Otherwise INVALID_ARGUMENT whose
// message starts with `path` + the field, e.g. "messages[2].role: ...".
absl::Status ValidateRequest(const v1::CompletionRequest& request, absl::string_view path = "");

// ValidateRequest on the exchange's request, plus: streamed exchanges carry
// chunks. Paths are prefixed with `path`.
absl::Status ValidateExchange(const v1::Exchange& exchange, absl::string_view path);

}  // namespace capture
}  // namespace understudy

#endif  // UNDERSTUDY_CAPTURE_VALIDATE_H_
