#include "provider/responses.h"

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "provider/chunks.h"
#include "provider/json_util.h"
#include "provider/request_fields.h"

namespace understudy {
namespace provider {
namespace responses {
namespace {

using nlohmann::ordered_json;

// The input item types ParseRequest passes through whole (see the header),
// with the role of the message that carries them, in the order the SDK's
// ResponseInputItem union lists them.
struct PassThroughItem {
  absl::string_view type;
  absl::string_view role;
};
constexpr PassThroughItem kPassThroughItems[] = {
    {"file_search_call", "assistant"},
    {"computer_call", "assistant"},
    {"computer_call_output", "tool"},
    {"web_search_call", "assistant"},
    {"tool_search_call", "assistant"},
    {"tool_search_output", "tool"},
    {"additional_tools", "system"},  // developer-provided tools
    {"reasoning", "assistant"},
    {"compaction", "assistant"},
    {"image_generation_call", "assistant"},
    {"code_interpreter_call", "assistant"},
    {"local_shell_call", "assistant"},
    {"local_shell_call_output", "tool"},
    {"shell_call", "assistant"},
    {"shell_call_output", "tool"},
    {"apply_patch_call", "assistant"},
    {"apply_patch_call_output", "tool"},
    {"mcp_list_tools", "assistant"},
    {"mcp_approval_request", "assistant"},
    {"mcp_approval_response", "user"},
    {"mcp_call", "assistant"},
    {"custom_tool_call_output", "tool"},
    {"custom_tool_call", "assistant"},
    {"compaction_trigger", "user"},
    {"item_reference", "user"},
    {"program", "assistant"},
    {"program_output", "tool"},
};

// "message, function_call, function_call_output, file_search_call, ...".
std::string KnownItemTypes() {
  std::vector<absl::string_view> types = {"message", "function_call", "function_call_output"};
  for (const PassThroughItem& item : kPassThroughItems) types.push_back(item.type);
  return absl::StrJoin(types, ", ");
}

// A text part that says nothing but its text: `annotations` and `logprobs`
// count only when not empty (output items sent back carry empty ones).
bool IsPlainText(const Json& part) {
  for (auto it = part.begin(); it != part.end(); ++it) {
    const std::string& key = it.key();
    if (it->is_null() || key == "type" || key == "text") continue;
    if ((key == "annotations" || key == "logprobs") && it->is_array() && it->empty()) continue;
    return false;
  }
  return true;
}

// Every non-null member of `item` not named in `skip` goes into `extra`.
void CopyOthers(const Json& item, std::initializer_list<absl::string_view> skip, Json* extra) {
  CopyUnmapped(item, {}, skip, extra);
}

// `value` (message `content` or function_call_output `output`): a string,
// or an array of content parts whose text parts (input_text, output_text)
// are joined into the content. An array that is more than plain text parts
// also goes verbatim into extra[key].
absl::Status ParseParts(const Json* value, const std::string& path, absl::string_view key,
                        v1::Message* message, Json* extra) {
  return ParseTextParts(value, path, {"input_text", "output_text"}, &IsPlainText, key, message,
                        extra);
}

void SetExtra(const Json& extra, v1::Message* message) {
  if (!extra.empty()) message->set_extra(DumpJson(extra));
}

absl::Status ParseMessageItem(const Json& item, const std::string& path, v1::Message* message) {
  Json extra = Json::object();
  std::string role;
  US_RETURN_IF_ERROR(ReadRequiredString(item, "role", path, &role));
  if (role == "developer") {
    // The newer name of the system role: same place in the prompt.
    message->set_role("system");
    extra["role"] = role;
  } else if (role == "user" || role == "assistant" || role == "system") {
    message->set_role(role);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(JoinPath(path, "role"), ": unknown role \"", role,
                     "\"; expected one of user, assistant, system, developer"));
  }
  US_RETURN_IF_ERROR(ParseParts(FindMember(item, "content"), JoinPath(path, "content"), "content",
                                message, &extra));
  CopyOthers(item, {"type", "role", "content"}, &extra);  // type "message" is implied
  SetExtra(extra, message);
  return absl::OkStatus();
}

absl::Status ParseFunctionCall(const Json& item, const std::string& path, v1::Message* message) {
  message->set_role("assistant");
  v1::ToolCall* call = message->add_tool_calls();
  US_RETURN_IF_ERROR(ReadRequiredString(item, "call_id", path, call->mutable_id()));
  US_RETURN_IF_ERROR(ReadRequiredString(item, "name", path, call->mutable_name()));
  US_RETURN_IF_ERROR(ReadRequiredString(item, "arguments", path, call->mutable_arguments()));
  Json extra = Json::object();
  extra["type"] = "function_call";
  CopyOthers(item, {"type", "call_id", "name", "arguments"}, &extra);
  SetExtra(extra, message);
  return absl::OkStatus();
}

absl::Status ParseFunctionCallOutput(const Json& item, const std::string& path,
                                     v1::Message* message) {
  message->set_role("tool");
  US_RETURN_IF_ERROR(ReadRequiredString(item, "call_id", path, message->mutable_tool_call_id()));
  const std::string output_path = JoinPath(path, "output");
  const Json* output = FindMember(item, "output");
  if (output == nullptr) return MissingError(output_path, "a string or an array of content parts");
  Json extra = Json::object();
  US_RETURN_IF_ERROR(ParseParts(output, output_path, "output", message, &extra));
  CopyOthers(item, {"type", "call_id", "output"}, &extra);
  SetExtra(extra, message);
  return absl::OkStatus();
}

// The type of input item `item` at `path`, implied when absent.
absl::StatusOr<std::string> ItemType(const Json& item, const std::string& path) {
  if (!item.is_object()) return ExpectedError(path, "an input item object", item);
  std::string type;
  US_RETURN_IF_ERROR(ReadOptionalString(item, "type", path, &type));
  if (!type.empty()) return type;
  // Both have an optional `type`: a message has a role, a reference an id.
  if (FindMember(item, "role") != nullptr) return std::string("message");
  if (FindMember(item, "id") != nullptr) return std::string("item_reference");
  return MissingError(JoinPath(path, "type"), "a string");
}

absl::Status ParseItem(const Json& item, const std::string& path, v1::Message* message) {
  US_ASSIGN_OR_RETURN(const std::string type, ItemType(item, path));
  if (type == "message") return ParseMessageItem(item, path, message);
  if (type == "function_call") return ParseFunctionCall(item, path, message);
  if (type == "function_call_output") return ParseFunctionCallOutput(item, path, message);
  for (const PassThroughItem& known : kPassThroughItems) {
    if (known.type != type) continue;
    message->set_role(std::string(known.role));
    Json extra = Json::object();
    extra["item"] = item;
    SetExtra(extra, message);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(JoinPath(path, "type"), ": unknown item type ",
                                                 DumpJson(Json(type)), "; expected one of ",
                                                 KnownItemTypes()));
}

absl::Status ParseTools(const Json& tools, v1::CompletionRequest* request, Json* extra) {
  const std::string path = "tools";
  if (!tools.is_array()) return ExpectedError(path, "an array of tools", tools);
  bool exact = true;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& tool = tools[i];
    const std::string tool_path = JoinPath(path, i);
    if (!tool.is_object()) return ExpectedError(tool_path, "a tool object", tool);
    std::string type;
    US_RETURN_IF_ERROR(ReadRequiredString(tool, "type", tool_path, &type));
    if (type != "function") {  // a hosted tool: web_search, file_search, mcp, ...
      exact = false;
      continue;
    }
    v1::ToolDefinition* out = request->add_tools();
    US_RETURN_IF_ERROR(ReadRequiredString(tool, "name", tool_path, out->mutable_name()));
    US_RETURN_IF_ERROR(
        ReadOptionalString(tool, "description", tool_path, out->mutable_description()));
    if (const Json* parameters = FindMember(tool, "parameters")) {
      out->set_parameters(DumpJson(*parameters));
    }
    exact = exact && HasOnlyKeys(tool, {"type", "name", "description", "parameters"});
  }
  if (!exact) (*extra)["tools"] = tools;
  return absl::OkStatus();
}

// A required non-negative int32 member, such as an event's output_index.
absl::StatusOr<int32_t> ReadIndex(const Json& object, absl::string_view key,
                                  absl::string_view parent) {
  const std::string path = JoinPath(parent, key);
  const Json* value = FindMember(object, key);
  if (value == nullptr) return MissingError(path, "an integer");
  US_ASSIGN_OR_RETURN(int64_t n, JsonToInt64(*value, path));
  if (n < 0 || n > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected an integer in [0, 2^31), got ", n));
  }
  return static_cast<int32_t>(n);
}

// A response object (the body of a unary answer, or the `response` of a
// stream's final event) at `path` ("" for the body).
absl::Status ParseResponseObject(const Json& root, absl::string_view path,
                                 v1::CompletionResponse* out) {
  if (!root.is_object()) {
    return ExpectedError(path.empty() ? "body" : path, "a response object", root);
  }
  US_RETURN_IF_ERROR(ReadOptionalString(root, "id", path, out->mutable_id()));
  US_RETURN_IF_ERROR(ReadOptionalString(root, "model", path, out->mutable_model()));
  v1::Message* message = out->mutable_message();
  message->set_role("assistant");
  const std::string output_path = JoinPath(path, "output");
  const Json* output = FindMember(root, "output");
  if (output == nullptr) return MissingError(output_path, "an array of output items");
  if (!output->is_array()) return ExpectedError(output_path, "an array of output items", *output);
  for (size_t i = 0; i < output->size(); ++i) {
    const Json& item = (*output)[i];
    const std::string item_path = JoinPath(output_path, i);
    if (!item.is_object()) return ExpectedError(item_path, "an output item object", item);
    std::string type;
    US_RETURN_IF_ERROR(ReadRequiredString(item, "type", item_path, &type));
    if (type == "function_call") {
      v1::ToolCall* call = message->add_tool_calls();
      US_RETURN_IF_ERROR(ReadRequiredString(item, "call_id", item_path, call->mutable_id()));
      US_RETURN_IF_ERROR(ReadRequiredString(item, "name", item_path, call->mutable_name()));
      US_RETURN_IF_ERROR(
          ReadOptionalString(item, "arguments", item_path, call->mutable_arguments()));
      continue;
    }
    if (type != "message") continue;  // reasoning, hosted tool calls, ...
    const std::string content_path = JoinPath(item_path, "content");
    const Json* content = FindMember(item, "content");
    if (content == nullptr) continue;
    if (!content->is_array()) {
      return ExpectedError(content_path, "an array of content parts", *content);
    }
    for (size_t k = 0; k < content->size(); ++k) {
      const Json& part = (*content)[k];
      const std::string part_path = JoinPath(content_path, k);
      if (!part.is_object()) return ExpectedError(part_path, "a content part object", part);
      std::string part_type;
      US_RETURN_IF_ERROR(ReadRequiredString(part, "type", part_path, &part_type));
      if (part_type != "output_text") continue;  // refusals are dropped, as in openai.h
      std::string text;
      US_RETURN_IF_ERROR(ReadRequiredString(part, "text", part_path, &text));
      message->mutable_content()->append(text);
    }
  }

  std::string status;
  US_RETURN_IF_ERROR(ReadOptionalString(root, "status", path, &status));
  std::string reason;
  if (const Json* details = FindMember(root, "incomplete_details")) {
    const std::string details_path = JoinPath(path, "incomplete_details");
    if (!details->is_object()) return ExpectedError(details_path, "an object", *details);
    US_RETURN_IF_ERROR(ReadOptionalString(*details, "reason", details_path, &reason));
  }
  if (message->tool_calls_size() > 0) {
    out->set_finish_reason("tool_calls");
  } else if (status == "completed") {
    out->set_finish_reason("stop");
  } else if (status == "incomplete" && reason == "max_output_tokens") {
    out->set_finish_reason("length");
  } else if (status == "incomplete" && reason == "content_filter") {
    out->set_finish_reason("content_filter");
  } else {
    out->set_finish_reason(status);
  }
  if (const Json* usage = FindMember(root, "usage")) {
    US_RETURN_IF_ERROR(ReadUsage(*usage, JoinPath(path, "usage"), "input_tokens", "output_tokens", out->mutable_usage()));
  }
  return absl::OkStatus();
}

// The status an error sent by the API stands for: `error` is an error
// object with `code`, `message` and, when `typed`, its own `type` (not so
// for the flat error event, whose `type` is the event's).
absl::Status UpstreamError(const Json& error, absl::string_view path, bool typed,
                           absl::string_view what) {
  std::string type;
  std::string code;
  std::string message;
  if (typed) US_RETURN_IF_ERROR(ReadOptionalString(error, "type", path, &type));
  US_RETURN_IF_ERROR(ReadOptionalString(error, "code", path, &code));
  US_RETURN_IF_ERROR(ReadOptionalString(error, "message", path, &message));
  absl::StatusCode status_code = OpenAiErrorStatusCode(type);
  if (status_code == absl::StatusCode::kUnknown) status_code = OpenAiErrorStatusCode(code);
  const std::string& label = !type.empty() ? type : !code.empty() ? code : "untyped";
  return absl::Status(status_code, absl::StrCat(what, " (", label, "): ", message));
}

}  // namespace

absl::StatusOr<ParsedRequest> ParseRequest(absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseJson(body, "body"));
  if (!root.is_object()) return ExpectedError("body", "a JSON object", root);
  ParsedRequest out;
  v1::CompletionRequest& request = out.canonical;
  Json extra = Json::object();

  US_RETURN_IF_ERROR(ReadRequiredString(root, "model", "", request.mutable_model()));
  bool instructions_mapped = false;
  if (const Json* instructions = FindMember(root, "instructions")) {
    if (instructions->is_string()) {
      v1::Message* system = request.add_messages();
      system->set_role("system");
      system->set_content(instructions->get<std::string>());
      instructions_mapped = true;
      out.leading_messages = 1;
    } else if (!instructions->is_array()) {  // an array of prompt items stays in extra
      return ExpectedError("instructions", "a string or an array of input items", *instructions);
    }
  }
  if (const Json* input = FindMember(root, "input")) {
    if (input->is_string()) {
      v1::Message* user = request.add_messages();
      user->set_role("user");
      user->set_content(input->get<std::string>());
    } else if (input->is_array()) {
      for (size_t i = 0; i < input->size(); ++i) {
        const Json& item = (*input)[i];
        const std::string path = JoinPath("input", i);
        US_RETURN_IF_ERROR(ParseItem(item, path, request.add_messages()));
        if (*ItemType(item, path) != "item_reference") continue;
        const Json* id = FindMember(item, "id");
        if (id != nullptr && id->is_string()) {
          out.item_references.push_back({request.messages_size() - 1, id->get<std::string>()});
        }
      }
    } else {
      return ExpectedError("input", "a string or an array of input items", *input);
    }
  }
  if (const Json* tools = FindMember(root, "tools")) {
    US_RETURN_IF_ERROR(ParseTools(*tools, &request, &extra));
  }

  using Sampling = SamplingField::Kind;
  v1::SamplingParams params;
  US_RETURN_IF_ERROR(ReadSampling(root,
                                  {{"temperature", Sampling::kTemperature},
                                   {"top_p", Sampling::kTopP},
                                   {"max_output_tokens", Sampling::kMaxTokens}},
                                  &params));
  if (params.ByteSizeLong() > 0) *request.mutable_params() = std::move(params);

  if (const Json* v = FindMember(root, "stream")) {
    if (!v->is_boolean()) return ExpectedError("stream", "a boolean", *v);
    out.stream = v->get<bool>();
  }
  out.include_usage = out.stream;  // response.completed always carries usage
  US_RETURN_IF_ERROR(
      ReadOptionalString(root, "previous_response_id", "", &out.previous_response_id));

  std::vector<absl::string_view> mapped = {"model",       "input", "tools",
                                            "temperature", "top_p", "max_output_tokens"};
  if (instructions_mapped) mapped.push_back("instructions");
  CopyUnmapped(root, kIgnoredRequestFields, mapped, &extra);
  if (!extra.empty()) request.set_extra(DumpJson(extra));
  return out;
}

std::vector<std::pair<std::string, v1::Message>> OutputItems(absl::string_view response_object) {
  std::vector<std::pair<std::string, v1::Message>> out;
  absl::StatusOr<Json> root = ParseJson(response_object, "body");
  if (!root.ok() || !root->is_object()) return out;
  const Json* output = FindMember(*root, "output");
  if (output == nullptr || !output->is_array()) return out;
  for (size_t i = 0; i < output->size(); ++i) {
    const Json& item = (*output)[i];
    const Json* id = item.is_object() ? FindMember(item, "id") : nullptr;
    if (id == nullptr || !id->is_string()) continue;
    v1::Message message;
    if (!ParseItem(item, JoinPath("output", i), &message).ok()) continue;
    out.emplace_back(id->get<std::string>(), std::move(message));
  }
  return out;
}

absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseJson(body, "body"));
  v1::CompletionResponse out;
  US_RETURN_IF_ERROR(ParseResponseObject(root, "", &out));
  return out;
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::Decode(const SseEvent& event) {
  if (done_) return absl::FailedPreconditionError("data: event after the end of the stream");
  US_ASSIGN_OR_RETURN(Json data, ParseJson(event.data, "data"));
  if (!data.is_object()) return ExpectedError("data", "an event object", data);
  std::string type = event.event;
  US_RETURN_IF_ERROR(ReadOptionalString(data, "type", "data", &type));
  if (type.empty()) return MissingError("data.type", "a string");

  v1::CompletionChunk chunk;
  if (type == "response.created") {
    const Json* response = FindMember(data, "response");
    if (response == nullptr) return MissingError("data.response", "a response object");
    if (!response->is_object())
      return ExpectedError("data.response", "a response object", *response);
    US_RETURN_IF_ERROR(ReadOptionalString(*response, "id", "data.response", chunk.mutable_id()));
    US_RETURN_IF_ERROR(
        ReadOptionalString(*response, "model", "data.response", chunk.mutable_model()));
    return chunk;
  }
  if (type == "response.output_text.delta") {
    US_RETURN_IF_ERROR(ReadRequiredString(data, "delta", "data", chunk.mutable_content()));
    return chunk;
  }
  if (type == "response.output_item.added") {
    const Json* item = FindMember(data, "item");
    if (item == nullptr) return MissingError("data.item", "an output item object");
    if (!item->is_object()) return ExpectedError("data.item", "an output item object", *item);
    std::string item_type;
    US_RETURN_IF_ERROR(ReadRequiredString(*item, "type", "data.item", &item_type));
    if (item_type != "function_call") return std::nullopt;
    US_ASSIGN_OR_RETURN(int32_t index, ReadIndex(data, "output_index", "data"));
    v1::ToolCallDelta* d = chunk.add_tool_calls();
    d->set_index(index);
    US_RETURN_IF_ERROR(ReadRequiredString(*item, "call_id", "data.item", d->mutable_id()));
    US_RETURN_IF_ERROR(ReadRequiredString(*item, "name", "data.item", d->mutable_name()));
    return chunk;
  }
  if (type == "response.function_call_arguments.delta") {
    US_ASSIGN_OR_RETURN(int32_t index, ReadIndex(data, "output_index", "data"));
    v1::ToolCallDelta* d = chunk.add_tool_calls();
    d->set_index(index);
    US_RETURN_IF_ERROR(ReadRequiredString(data, "delta", "data", d->mutable_arguments()));
    return chunk;
  }
  if (type == "response.completed" || type == "response.incomplete") {
    const Json* response = FindMember(data, "response");
    if (response == nullptr) return MissingError("data.response", "a response object");
    v1::CompletionResponse final_response;
    US_RETURN_IF_ERROR(ParseResponseObject(*response, "data.response", &final_response));
    chunk.set_finish_reason(final_response.finish_reason());
    if (final_response.has_usage()) *chunk.mutable_usage() = final_response.usage();
    done_ = true;
    return chunk;
  }
  if (type == "response.failed") {
    done_ = true;
    const Json* response = FindMember(data, "response");
    const Json* error = response == nullptr ? nullptr : FindMember(*response, "error");
    if (error == nullptr || !error->is_object()) {
      return absl::UnknownError("upstream response failed (untyped): no error object");
    }
    return UpstreamError(*error, "data.response.error", true, "upstream response failed");
  }
  if (type == "error") {
    // The API nests the error under `error`; its reference puts the fields
    // at the top level. Both are read.
    const Json* nested = FindMember(data, "error");
    if (nested != nullptr && nested->is_object()) {
      return UpstreamError(*nested, "data.error", true, "upstream stream error");
    }
    return UpstreamError(data, "data", false, "upstream stream error");
  }
  return std::nullopt;  // adds nothing to the canonical answer
}


std::string ResponseObjectFromEvent(absl::string_view data) {
  absl::StatusOr<Json> root = ParseJson(data, "data");
  if (!root.ok()) return "";
  const Json* type = FindMember(*root, "type");
  if (type == nullptr || !type->is_string()) return "";
  const std::string& t = type->get_ref<const std::string&>();
  if (t != "response.completed" && t != "response.incomplete" && t != "response.failed") return "";
  const Json* response = FindMember(*root, "response");
  if (response == nullptr || !response->is_object()) return "";
  return DumpJson(*response);
}

std::string ResponseIdOf(absl::string_view body) {
  absl::StatusOr<Json> root = ParseJson(body, "body");
  if (!root.ok()) return "";
  const Json* id = FindMember(*root, "id");
  return id != nullptr && id->is_string() ? id->get<std::string>() : "";
}

}  // namespace responses
}  // namespace provider
}  // namespace understudy
