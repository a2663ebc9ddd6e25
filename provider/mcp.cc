#include "provider/mcp.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace understudy {
namespace provider {
namespace mcp {

using jsonrpc::Message;

Json ProgressTokenOf(const Message& message) {
  if (!message.params.is_object()) return nullptr;
  const Json* holder = nullptr;
  if (message.kind == Message::Kind::kRequest) {
    holder = FindMember(message.params, "_meta");
  } else if (message.kind == Message::Kind::kNotification &&
             message.method == "notifications/progress") {
    holder = &message.params;
  }
  if (holder == nullptr || !holder->is_object()) return nullptr;
  const Json* token = FindMember(*holder, "progressToken");
  return token == nullptr ? Json(nullptr) : *token;
}

v1::CompletionRequest CanonicalRequest(absl::string_view server, const Message& message) {
  v1::CompletionRequest request;
  request.set_operation(absl::StrCat(kOperationPrefix, message.method));
  request.set_model(std::string(server));
  Json params = message.params.is_null() ? Json::object() : message.params;
  if (params.is_object()) params.erase("_meta");
  request.set_extra(DumpJson(params));
  return request;
}

std::string WithIds(absl::string_view message_json, const Json& id, const Json& progress_token) {
  absl::StatusOr<Json> parsed = ParseJson(message_json, "message");
  if (!parsed.ok() || !parsed->is_object()) return std::string(message_json);
  Json& value = *parsed;
  bool changed = false;
  auto method = value.find("method");
  if (method == value.end()) {
    changed = jsonrpc::ReplaceResponseId(value, id);
  } else if (!progress_token.is_null() && method->is_string() &&
             method->get_ref<const std::string&>() == "notifications/progress") {
    auto params = value.find("params");
    if (params != value.end() && params->is_object()) {
      auto token = params->find("progressToken");
      if (token != params->end() && *token != progress_token) {
        *token = progress_token;
        changed = true;
      }
    }
  }
  return changed ? DumpJson(value) : std::string(message_json);
}

namespace {
constexpr absl::string_view kSignalField = "understudy";
constexpr absl::string_view kStartUpstream = "start_upstream";
}  // namespace

std::string ProxySignalBody(ProxySignal signal) {
  Json body = Json::object();
  if (signal == ProxySignal::kStartUpstream) body[std::string(kSignalField)] = kStartUpstream;
  return DumpJson(body);
}

ProxySignal ProxySignalOf(absl::string_view body) {
  absl::StatusOr<Json> parsed = ParseJson(body, "body");
  if (!parsed.ok() || !parsed->is_object()) return ProxySignal::kNone;
  const Json* field = FindMember(*parsed, kSignalField);
  if (field != nullptr && field->is_string() &&
      field->get_ref<const std::string&>() == kStartUpstream) {
    return ProxySignal::kStartUpstream;
  }
  return ProxySignal::kNone;
}

}  // namespace mcp
}  // namespace provider
}  // namespace understudy
