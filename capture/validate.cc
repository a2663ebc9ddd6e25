#include "capture/validate.h"

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "provider/canonical.h"

namespace understudy {
namespace capture {

absl::Status ValidateRequest(const v1::CompletionRequest& request, absl::string_view path) {
  // An MCP or A2A request has its params in `extra`.
  if (request.messages_size() == 0 && !provider::IsCallRequest(request)) {
    return absl::InvalidArgumentError(absl::StrCat(path, "messages: must not be empty"));
  }
  for (int i = 0; i < request.messages_size(); ++i) {
    const std::string& role = request.messages(i).role();
    if (role != "system" && role != "user" && role != "assistant" && role != "tool" &&
        role != "developer") {
      return absl::InvalidArgumentError(absl::StrCat(
          path, "messages[", i,
          "].role: expected system, developer, user, assistant or tool, got \"",
          absl::CHexEscape(role.substr(0, 64)), "\""));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateExchange(const v1::Exchange& exchange, absl::string_view path) {
  absl::Status s = ValidateRequest(exchange.request(), absl::StrCat(path, "request."));
  if (!s.ok()) return s;
  if (exchange.streamed() && exchange.chunks_size() == 0 && !exchange.has_error()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, "chunks: a streamed exchange needs its chunks"));
  }
  return absl::OkStatus();
}

}  // namespace capture
}  // namespace understudy
