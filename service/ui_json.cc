#include "service/ui_json.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/http_status.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace service {

absl::StatusOr<std::string> UiMessageJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string out;
  auto printed = google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!printed.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot print a ", message.GetTypeName(), " as JSON: ", printed.ToString()));
  }
  return out;
}

std::string UiErrorJson(absl::string_view code, absl::string_view message) {
  nlohmann::json body;
  body["error"]["code"] = std::string(code);
  body["error"]["message"] = std::string(message);
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string UiErrorBody(const absl::Status& status) {
  return UiErrorJson(absl::StatusCodeToString(status.code()), status.message());
}

HttpHeaders UiJsonHeaders() {
  return {{"content-type", "application/json"},
          {"cache-control", "no-store"},
          {"x-content-type-options", "nosniff"}};
}

void RespondUiJson(HttpResponder& out, std::string body) {
  out.Respond(200, UiJsonHeaders(), std::move(body));
}

void RespondUiMessage(HttpResponder& out, const google::protobuf::Message& message) {
  absl::StatusOr<std::string> json = UiMessageJson(message);
  if (!json.ok()) return RespondUiError(out, json.status());
  RespondUiJson(out, *std::move(json));
}

void RespondUiError(HttpResponder& out, const absl::Status& status, int http) {
  out.Respond(http != 0 ? http : HttpStatusFor(status.code()), UiJsonHeaders(),
              UiErrorBody(status));
}

absl::Status UiRunStatus(const absl::Status& status, const std::string& run) {
  if (absl::IsNotFound(status)) {
    return absl::NotFoundError(absl::StrCat("run \"", run, "\" not found"));
  }
  return status;
}

}  // namespace service
}  // namespace understudy
