#include "provider/a2a.h"

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "provider/derived_id.h"

namespace understudy {
namespace provider {
namespace a2a {
namespace {

struct MethodName {
  absl::string_view v1;
  absl::string_view v03;
  Method method;
};
constexpr MethodName kMethods[] = {
    {"SendMessage", "message/send", Method::kSend},
    {"SendStreamingMessage", "message/stream", Method::kStream},
    {"GetTask", "tasks/get", Method::kGetTask},
    {"CancelTask", "tasks/cancel", Method::kCancelTask},
};

bool IsMessageMethod(Method method) { return method == Method::kSend || method == Method::kStream; }

std::string StringMember(const Json& object, absl::string_view key) {
  const Json* value = FindMember(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

// The text parts of `parts` (an array), appended to `out`.
void AppendPartsText(const Json* parts, std::vector<std::string>* out) {
  if (parts == nullptr || !parts->is_array()) return;
  for (const Json& part : *parts) {
    if (!part.is_object()) continue;
    const Json* text = FindMember(part, "text");
    if (text != nullptr && text->is_string()) out->push_back(text->get<std::string>());
  }
}

void AppendMessageText(const Json* message, std::vector<std::string>* out) {
  if (message != nullptr && message->is_object()) AppendPartsText(FindMember(*message, "parts"), out);
}

void AppendStatusText(const Json& holder, std::vector<std::string>* out) {
  const Json* status = FindMember(holder, "status");
  if (status != nullptr && status->is_object()) AppendMessageText(FindMember(*status, "message"), out);
}

void AppendTaskText(const Json& task, std::vector<std::string>* out) {
  AppendStatusText(task, out);
  const Json* artifacts = FindMember(task, "artifacts");
  if (artifacts == nullptr || !artifacts->is_array()) return;
  for (const Json& artifact : *artifacts) {
    if (artifact.is_object()) AppendPartsText(FindMember(artifact, "parts"), out);
  }
}

// One result's text: v1.0 wraps it in a member naming its kind, v0.3 names
// the kind in "kind"; GetTask's result is the bare task in both.
void AppendResultText(const Json& result, std::vector<std::string>* out) {
  if (!result.is_object()) return;
  if (const Json* m = FindMember(result, "message"); m != nullptr && m->is_object() &&
                                                       FindMember(result, "kind") == nullptr) {
    return AppendMessageText(m, out);
  }
  if (const Json* t = FindMember(result, "task"); t != nullptr && t->is_object()) {
    return AppendTaskText(*t, out);
  }
  if (const Json* s = FindMember(result, "statusUpdate"); s != nullptr && s->is_object()) {
    return AppendStatusText(*s, out);
  }
  if (const Json* a = FindMember(result, "artifactUpdate"); a != nullptr && a->is_object()) {
    const Json* artifact = FindMember(*a, "artifact");
    if (artifact != nullptr && artifact->is_object()) AppendPartsText(FindMember(*artifact, "parts"), out);
    return;
  }
  const std::string kind = StringMember(result, "kind");
  if (kind == "message") return AppendPartsText(FindMember(result, "parts"), out);
  if (kind == "status-update") return AppendStatusText(result, out);
  if (kind == "artifact-update") {
    const Json* artifact = FindMember(result, "artifact");
    if (artifact != nullptr && artifact->is_object()) AppendPartsText(FindMember(*artifact, "parts"), out);
    return;
  }
  if (kind == "task" || FindMember(result, "status") != nullptr) AppendTaskText(result, out);
}

// The state of one result, as written ("" when none).
std::string StateOf(const Json& result) {
  if (!result.is_object()) return "";
  const Json* holder = &result;
  for (absl::string_view wrapper : {"task", "statusUpdate"}) {
    if (const Json* inner = FindMember(result, wrapper); inner != nullptr && inner->is_object()) {
      holder = inner;
    }
  }
  const Json* status = FindMember(*holder, "status");
  return status != nullptr && status->is_object() ? StringMember(*status, "state") : "";
}

absl::Status FieldError(absl::string_view path, absl::string_view expected, const Json& got) {
  return ExpectedError(path, expected, got);
}

}  // namespace

Call ClassifyMethod(absl::string_view method) {
  Call call;
  call.version = absl::StrContains(method, '/') ? Version::kV03 : Version::kV1;
  for (const MethodName& name : kMethods) {
    if (method == name.v1 || method == name.v03) call.method = name.method;
  }
  return call;
}

absl::StatusOr<Call> ReadCall(const jsonrpc::Message& request) {
  Call call = ClassifyMethod(request.method);
  if (call.method == Method::kOther) return call;
  if (!request.params.is_object()) {
    return FieldError("params", "an object", request.params);
  }
  if (!IsMessageMethod(call.method)) {
    const Json* id = FindMember(request.params, "id");
    if (id == nullptr) return MissingError("params.id", "the task's id");
    if (!id->is_string()) return FieldError("params.id", "a string", *id);
    call.task_id = id->get<std::string>();
    return call;
  }
  const Json* message = FindMember(request.params, "message");
  if (message == nullptr) return MissingError("params.message", "the message to send");
  if (!message->is_object()) return FieldError("params.message", "an object", *message);
  for (auto [key, field] : {std::pair<absl::string_view, std::string*>{"messageId", &call.message_id},
                            {"contextId", &call.context_id},
                            {"taskId", &call.task_id}}) {
    const Json* value = FindMember(*message, key);
    if (value == nullptr) continue;
    if (!value->is_string()) {
      return FieldError(absl::StrCat("params.message.", key), "a string", *value);
    }
    *field = value->get<std::string>();
  }
  const Json* parts = FindMember(*message, "parts");
  if (parts == nullptr) return MissingError("params.message.parts", "an array of parts");
  if (!parts->is_array()) return FieldError("params.message.parts", "an array", *parts);
  std::vector<std::string> texts;
  for (size_t i = 0; i < parts->size(); ++i) {
    const Json& part = (*parts)[i];
    const std::string path = absl::StrCat("params.message.parts[", i, "]");
    if (!part.is_object()) return FieldError(path, "an object", part);
    const Json* text = FindMember(part, "text");
    if (text == nullptr) continue;
    if (!text->is_string()) return FieldError(absl::StrCat(path, ".text"), "a string", *text);
    texts.push_back(text->get<std::string>());
  }
  call.text = absl::StrJoin(texts, "\n");
  return call;
}

v1::CompletionRequest CanonicalRequest(absl::string_view agent, const jsonrpc::Message& request) {
  v1::CompletionRequest canonical;
  canonical.set_operation(absl::StrCat(kOperationPrefix, request.method));
  canonical.set_model(std::string(agent));
  Json params = request.params.is_null() ? Json::object() : request.params;
  if (params.is_object()) {
    auto message = params.find("message");
    if (message != params.end() && message->is_object()) message->erase("messageId");
  }
  canonical.set_extra(DumpJson(params));
  return canonical;
}

v1::CompletionRequest CardRequest(absl::string_view agent) {
  v1::CompletionRequest canonical;
  canonical.set_operation(kCardOperation);
  canonical.set_model(std::string(agent));
  return canonical;
}

bool IsA2aRequest(const v1::CompletionRequest& request) {
  return absl::StartsWith(request.operation(), kOperationPrefix);
}

Call CallOf(const v1::CompletionRequest& request) {
  jsonrpc::Message message;
  message.method =
      std::string(absl::string_view(request.operation()).substr(sizeof(kOperationPrefix) - 1));
  absl::StatusOr<Json> params = ParseJson(request.extra(), "extra");
  if (params.ok()) message.params = *std::move(params);
  absl::StatusOr<Call> call = ReadCall(message);
  return call.ok() ? *std::move(call) : ClassifyMethod(message.method);
}

std::string ResultText(absl::string_view result_json) {
  absl::StatusOr<Json> parsed = ParseJson(result_json, "result");
  if (!parsed.ok()) return "";
  std::vector<std::string> texts;
  if (parsed->is_array()) {
    for (const Json& result : *parsed) AppendResultText(result, &texts);
  } else {
    AppendResultText(*parsed, &texts);
  }
  return absl::StrJoin(texts, "\n");
}

std::string ResultState(absl::string_view result_json) {
  absl::StatusOr<Json> parsed = ParseJson(result_json, "result");
  if (!parsed.ok()) return "";
  std::string state;
  if (parsed->is_array()) {
    for (const Json& result : *parsed) {
      if (std::string s = StateOf(result); !s.empty()) state = std::move(s);
    }
  } else {
    state = StateOf(*parsed);
  }
  if (absl::StartsWith(state, "TASK_STATE_")) {
    state = absl::AsciiStrToLower(state.substr(sizeof("TASK_STATE_") - 1));
    absl::StrReplaceAll({{"_", "-"}}, &state);
  }
  return state;
}

bool ChangesForCaller(const Json& recorded_id, const Json& id,
                      const std::vector<std::pair<std::string, std::string>>& message_ids) {
  if (recorded_id != id) return true;
  for (const auto& [was, is] : message_ids) {
    if (!was.empty() && !is.empty() && was != is) return true;
  }
  return false;
}

std::string ForCaller(absl::string_view recorded, const Json& recorded_id, const Json& id,
                      const std::vector<std::pair<std::string, std::string>>& message_ids) {
  std::string out;
  absl::StatusOr<Json> parsed =
      recorded_id == id ? absl::StatusOr<Json>(absl::CancelledError()) : ParseJson(recorded, "message");
  if (parsed.ok() && jsonrpc::ReplaceResponseId(*parsed, id)) {
    out = DumpJson(*parsed);
  } else {
    out = std::string(recorded);
  }
  // Ids are compared as whole JSON strings: a messageId inside another
  // string is not an echo of it.
  std::vector<std::pair<std::string, std::string>> quoted;
  for (const auto& [was, is] : message_ids) {
    if (was.empty() || is.empty() || was == is) continue;
    quoted.emplace_back(DumpJson(Json(was)), DumpJson(Json(is)));
  }
  if (!quoted.empty()) absl::StrReplaceAll(quoted, &out);
  return out;
}

std::string ScriptedResult(const Call& call, absl::string_view text, bool failed,
                           absl::string_view seed) {
  const bool v1 = call.version == Version::kV1;
  const std::string context_id =
      !call.context_id.empty() ? call.context_id : DerivedId("ctx-", absl::StrCat(seed, "\x1f" "context"));
  Json message = Json::object();
  if (!v1) message["kind"] = "message";
  message["messageId"] = DerivedId("msg-", absl::StrCat(seed, "\x1f" "message"));
  message["contextId"] = context_id;
  Json part = Json::object();
  if (!v1) part["kind"] = "text";
  part["text"] = std::string(text);
  message["role"] = v1 ? "ROLE_AGENT" : "agent";
  message["parts"] = Json::array({std::move(part)});
  if (!failed) {
    if (!call.task_id.empty()) message["taskId"] = call.task_id;
    if (!v1) return DumpJson(message);
    Json result = Json::object();
    result["message"] = std::move(message);
    return DumpJson(result);
  }
  const std::string task_id =
      !call.task_id.empty() ? call.task_id : DerivedId("task-", absl::StrCat(seed, "\x1f" "task"));
  message["taskId"] = task_id;
  Json task = Json::object();
  if (!v1) task["kind"] = "task";
  task["id"] = task_id;
  task["contextId"] = context_id;
  task["status"] = Json::object();
  task["status"]["state"] = v1 ? "TASK_STATE_FAILED" : "failed";
  task["status"]["message"] = std::move(message);
  if (!v1) return DumpJson(task);
  Json result = Json::object();
  result["task"] = std::move(task);
  return DumpJson(result);
}

v1::CompletionResponse CanonicalAnswer(absl::string_view result_json) {
  v1::CompletionResponse answer;
  answer.mutable_message()->set_role("assistant");
  answer.mutable_message()->set_content(ResultText(result_json));
  answer.set_finish_reason(ResultState(result_json));
  return answer;
}

v1::Exchange ScriptedExchange(const Call& call, absl::string_view text, bool failed,
                              absl::string_view seed) {
  const std::string result = ScriptedResult(call, text, failed, seed);
  v1::Exchange exchange;
  *exchange.mutable_response() = CanonicalAnswer(result);
  v1::NativeExchange* native = exchange.mutable_native();
  native->set_provider("a2a");
  native->set_status(200);
  std::string body = jsonrpc::ResultResponse(Json(), result);
  if (call.method == Method::kStream) {
    native->set_content_type("text/event-stream");
    native->add_chunks()->set_data(std::move(body));
  } else {
    native->set_content_type("application/json");
    native->set_response_body(std::move(body));
  }
  return exchange;
}

v1::Exchange ScriptedCardExchange(absl::string_view agent) {
  v1::Exchange exchange;
  std::string card = ScriptedCard(agent);
  exchange.mutable_response()->mutable_message()->set_role("assistant");
  exchange.mutable_response()->mutable_message()->set_content(card);
  v1::NativeExchange* native = exchange.mutable_native();
  native->set_provider("a2a");
  native->set_status(200);
  native->set_content_type("application/json");
  native->set_response_body(std::move(card));
  return exchange;
}

absl::StatusOr<std::string> CardForUrl(absl::string_view card_json, absl::string_view url) {
  absl::StatusOr<Json> parsed = ParseJson(card_json, "agent card");
  if (!parsed.ok()) return parsed.status();
  Json& card = *parsed;
  if (!card.is_object()) return ExpectedError("agent card", "a JSON object", card);
  const std::string target(url);
  if (auto it = card.find("url"); it != card.end() && it->is_string()) *it = target;
  for (absl::string_view list : {"supportedInterfaces", "additionalInterfaces"}) {
    auto it = card.find(std::string(list));
    if (it == card.end() || !it->is_array()) continue;
    for (Json& entry : *it) {
      if (!entry.is_object()) continue;
      if (auto u = entry.find("url"); u != entry.end() && u->is_string()) *u = target;
    }
  }
  return DumpJson(card);
}

std::string ScriptedCard(absl::string_view agent) {
  Json card = Json::object();
  card["name"] = std::string(agent);
  card["description"] = absl::StrCat("Agent \"", agent, "\", answered by understudy's scenario rules");
  card["version"] = "1.0.0";
  Json interfaces = Json::array();
  for (absl::string_view version : {"1.0", "0.3"}) {
    Json entry = Json::object();
    entry["url"] = "";
    entry["protocolBinding"] = "JSONRPC";
    entry["protocolVersion"] = std::string(version);
    interfaces.push_back(std::move(entry));
  }
  card["supportedInterfaces"] = std::move(interfaces);
  // v0.3's fields, for clients that speak only v0.3.
  card["url"] = "";
  card["protocolVersion"] = "0.3.0";
  card["preferredTransport"] = "JSONRPC";
  card["capabilities"] = Json::object();
  card["capabilities"]["streaming"] = true;
  card["defaultInputModes"] = Json::array({"text/plain"});
  card["defaultOutputModes"] = Json::array({"text/plain"});
  card["skills"] = Json::array();
  return DumpJson(card);
}

}  // namespace a2a
}  // namespace provider
}  // namespace understudy
