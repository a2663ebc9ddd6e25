// How the web UI's JSON API (service/ui_api.h, docs/ui.md) answers, for its
// request routes (ui_api.cc) and its watch streams (ui_watch.cc) alike:
// messages in protobuf's JSON mapping, errors as
//
//   {"error": {"code": "NOT_FOUND", "message": "run \"x\" not found"}}
//
// with the HTTP status base/http_status.h gives the code, and the same
// headers on every JSON answer.
#ifndef UNDERSTUDY_SERVICE_UI_JSON_H_
#define UNDERSTUDY_SERVICE_UI_JSON_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "service/http_server.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace service {

// Protobuf's JSON mapping of `message` on one line, fields at their default
// value included (a run with no misses says "misses": "0"). INTERNAL when
// the printer fails.
absl::StatusOr<std::string> UiMessageJson(const google::protobuf::Message& message);

// The error body for `code` (a status code's name, e.g. "NOT_FOUND") and
// `message`. Never fails: bytes of `message` that are not UTF-8 (it may
// quote what a caller sent) are replaced.
std::string UiErrorJson(absl::string_view code, absl::string_view message);

// The error body for `status`.
std::string UiErrorBody(const absl::Status& status);

// The headers of every JSON answer: its type, no caching, no sniffing.
HttpHeaders UiJsonHeaders();

// Answers 200 with `body`, which must be JSON.
void RespondUiJson(HttpResponder& out, std::string body);

// Answers 200 with `message` as JSON (UiMessageJson), or 500 when it cannot
// be printed.
void RespondUiMessage(HttpResponder& out, const google::protobuf::Message& message);

// Answers `status`, which must not be OK, as an error: with its HTTP status
// (base/http_status.h), or `http` when that is not 0.
void RespondUiError(HttpResponder& out, const absl::Status& status, int http = 0);

// `status` of a call about run `run`: NOT_FOUND, whatever layer said it,
// becomes `run "ID" not found`; anything else is returned as it is.
absl::Status UiRunStatus(const absl::Status& status, const std::string& run);

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_UI_JSON_H_
