#include "provider/jsonrpc.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "validation/json_bounds.h"

namespace understudy {
namespace provider {
namespace jsonrpc {
namespace {

constexpr char kBatchMessage[] =
    "a JSON-RPC batch (array) is not accepted: send one message per request";

bool ValidId(const Json& id) {
  return id.is_string() || id.is_number_integer() || id.is_number_unsigned();
}

}  // namespace

absl::StatusOr<Message> ParseMessage(absl::string_view text, absl::string_view where) {
  absl::StatusOr<Json> parsed = ParseJson(text, where);
  if (!parsed.ok()) return parsed.status();
  Json& value = *parsed;
  if (value.is_array()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", kBatchMessage));
  if (!value.is_object()) return ExpectedError(where, "a JSON-RPC message (an object)", value);
  const Json* version = FindMember(value, "jsonrpc");
  if (version == nullptr) return MissingError(JoinPath(where, "jsonrpc"), "\"2.0\"");
  if (!version->is_string() || version->get_ref<const std::string&>() != "2.0") {
    return absl::InvalidArgumentError(
        absl::StrCat(JoinPath(where, "jsonrpc"), ": expected \"2.0\", got ", DumpJson(*version).substr(0, 40)));
  }
  Message message;
  const Json* id = FindMember(value, "id");  // null when absent or null
  // A null id: only an error response to a request whose id could not be
  // read (JSON-RPC 2.0, section 5).
  static const Json kNull;
  if (id == nullptr && value.contains("id") && FindMember(value, "method") == nullptr &&
      FindMember(value, "error") != nullptr) {
    id = &kNull;
  }
  if (id == nullptr && value.contains("id") && FindMember(value, "method") != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        JoinPath(where, "id"), ": null; a request needs a string or integer id"));
  }
  if (id != nullptr && !id->is_null() && !ValidId(*id)) {
    return ExpectedError(JoinPath(where, "id"), "a string or an integer", *id);
  }
  const Json* method = FindMember(value, "method");
  if (method != nullptr) {
    if (!method->is_string()) return ExpectedError(JoinPath(where, "method"), "a string", *method);
    message.method = method->get<std::string>();
    if (message.method.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(JoinPath(where, "method"), ": empty"));
    }
    message.kind = id != nullptr ? Message::Kind::kRequest : Message::Kind::kNotification;
    if (id != nullptr) message.id = *id;
    if (const Json* params = FindMember(value, "params"); params != nullptr && !params->is_null()) {
      if (!params->is_object() && !params->is_array()) {
        return ExpectedError(JoinPath(where, "params"), "an object or an array", *params);
      }
      message.params = std::move(value["params"]);
    }
    return message;
  }
  // A response.
  if (id == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": neither a request nor a notification (no \"method\") nor a response (no \"id\")"));
  }
  message.kind = Message::Kind::kResponse;
  message.id = *id;
  const Json* result = FindMember(value, "result");
  const Json* error = FindMember(value, "error");
  if ((result == nullptr) == (error == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": a response needs exactly one of \"result\" and \"error\""));
  }
  if (error != nullptr) {
    if (!error->is_object()) return ExpectedError(JoinPath(where, "error"), "an object", *error);
    message.error = std::move(value["error"]);
  } else {
    message.result = std::move(value["result"]);
  }
  return message;
}

int ErrorCodeFor(const absl::Status& parse_error) {
  const validation::JsonError json = validation::JsonErrorOf(parse_error);
  return json == validation::JsonError::kSyntax || json == validation::JsonError::kUtf8
             ? kParseError
             : kInvalidRequest;
}

std::string IdText(const Message& message) {
  return message.kind == Message::Kind::kNotification ? std::string() : DumpJson(message.id);
}

std::string ResultResponse(const Json& id, absl::string_view result_json) {
  return absl::StrCat("{\"jsonrpc\":\"2.0\",\"id\":", DumpJson(id),
                      ",\"result\":", result_json.empty() ? "{}" : result_json, "}");
}

std::string ErrorResponse(const Json& id, int code, absl::string_view message,
                          absl::string_view data_json) {
  Json error = Json::object();
  error["code"] = code;
  error["message"] = std::string(message);
  std::string out = absl::StrCat("{\"jsonrpc\":\"2.0\",\"id\":", DumpJson(id), ",\"error\":");
  std::string body = DumpJson(error);
  if (!data_json.empty()) {
    body.pop_back();  // the closing brace
    absl::StrAppend(&body, ",\"data\":", data_json, "}");
  }
  absl::StrAppend(&out, body, "}");
  return out;
}

Outcome OutcomeOf(const Message& response) {
  Outcome out;
  if (!response.error.is_null()) {
    out.is_error = true;
    const Json* code = FindMember(response.error, "code");
    if (code != nullptr && code->is_number_integer()) out.code = code->get<int>();
    const Json* message = FindMember(response.error, "message");
    if (message != nullptr && message->is_string()) out.message = message->get<std::string>();
    if (out.code == 0) out.code = kInternalError;
    return out;
  }
  out.result_json = DumpJson(response.result);
  return out;
}

bool ReplaceResponseId(Json& value, const Json& id) {
  if (!value.is_object() || value.contains("method")) return false;
  auto it = value.find("id");
  if (it == value.end() || *it == id) return false;
  *it = id;
  return true;
}

}  // namespace jsonrpc
}  // namespace provider
}  // namespace understudy
