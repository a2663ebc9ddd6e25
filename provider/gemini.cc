#include "provider/gemini.h"

#include <initializer_list>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/http_status.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "provider/json_util.h"
#include "provider/request_fields.h"

namespace understudy {
namespace provider {
namespace gemini {
namespace {

using nlohmann::ordered_json;

// Finish reasons that mean the answer was filtered.
constexpr absl::string_view kFilterReasons[] = {"SAFETY", "RECITATION", "BLOCKLIST",
                                                "PROHIBITED_CONTENT", "SPII"};

// What a part carries (one of these, named in the "unknown part" error),
// and what may accompany it.
constexpr absl::string_view kPartData[] = {
    "text",           "inlineData",          "fileData", "functionCall", "functionResponse",
    "executableCode", "codeExecutionResult", "toolCall", "toolResponse",
};
constexpr absl::string_view kPartMetadata[] = {
    "thought", "thoughtSignature", "videoMetadata", "mediaResolution", "partMetadata",
};

bool IsIgnored(const std::string& key) {
  for (absl::string_view field : kIgnoredRequestFields) {
    if (field == key) return true;
  }
  return false;
}

// The proto (snake_case) name of the JSON (lowerCamelCase) name `camel`.
std::string SnakeName(absl::string_view camel) {
  std::string out;
  for (char c : camel) {
    if (absl::ascii_isupper(static_cast<unsigned char>(c))) {
      out += '_';
      out += absl::ascii_tolower(static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out;
}

// True when `key` spells the field `camel` in either of the API's ways.
bool IsField(absl::string_view key, absl::string_view camel) {
  return key == camel || key == SnakeName(camel);
}

bool IsAnyField(absl::string_view key, std::initializer_list<absl::string_view> camels) {
  for (absl::string_view camel : camels) {
    if (IsField(key, camel)) return true;
  }
  return false;
}

// HasOnlyKeys for fields that may be spelled either way.
bool HasOnlyFields(const Json& object, std::initializer_list<absl::string_view> camels) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (!it->is_null() && !IsAnyField(it.key(), camels)) return false;
  }
  return true;
}

// A field of an object as the body spelled it: its value (nullptr when
// absent or null) and its path.
struct Member {
  const Json* value = nullptr;
  std::string key;
  std::string path;
};

// The field `camel` of `object` under its JSON or its proto name. Fails when
// the body gives both.
absl::StatusOr<Member> Field(const Json& object, absl::string_view camel,
                             absl::string_view parent) {
  Member out;
  out.key = std::string(camel);
  out.value = FindMember(object, camel);
  const std::string snake = SnakeName(camel);
  if (snake == camel) {
    out.path = JoinPath(parent, camel);
    return out;
  }
  if (const Json* other = FindMember(object, snake)) {
    if (out.value != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(JoinPath(parent, snake), ": given twice, also as ", camel));
    }
    out.value = other;
    out.key = snake;
  }
  out.path = JoinPath(parent, out.key);
  return out;
}

absl::StatusOr<const Json*> OptionalObject(const Json& object, absl::string_view camel,
                                           absl::string_view parent) {
  US_ASSIGN_OR_RETURN(Member m, Field(object, camel, parent));
  if (m.value != nullptr && !m.value->is_object()) {
    return ExpectedError(m.path, "an object", *m.value);
  }
  return m.value;
}

// A functionCall object (request or response) as a ToolCall.
absl::Status ParseFunctionCall(const Json& call, const std::string& path, v1::ToolCall* out) {
  if (!call.is_object()) return ExpectedError(path, "an object", call);
  US_RETURN_IF_ERROR(ReadRequiredString(call, "name", path, out->mutable_name()));
  US_RETURN_IF_ERROR(ReadOptionalString(call, "id", path, out->mutable_id()));
  US_ASSIGN_OR_RETURN(const Json* args, OptionalObject(call, "args", path));
  out->set_arguments(args == nullptr ? "{}" : DumpJson(*args));
  return absl::OkStatus();
}

// What a part is, as far as exact mapping goes.
enum class PartKind { kPlainText, kPlainCall, kPlainResponse, kOther };

// One part of a content: text parts (not thoughts) append to `message`'s
// content, functionCall parts to its tool calls, functionResponse parts
// become tool messages in `tool_messages`. Returns the part's kind.
absl::StatusOr<PartKind> ParsePart(const Json& part, const std::string& path, v1::Message* message,
                                   std::vector<v1::Message>* tool_messages) {
  if (!part.is_object()) return ExpectedError(path, "a part object", part);
  bool known = false;
  for (auto it = part.begin(); it != part.end(); ++it) {
    if (it->is_null()) continue;
    for (absl::string_view k : kPartData) known = known || IsField(it.key(), k);
    for (absl::string_view k : kPartMetadata) known = known || IsField(it.key(), k);
  }
  if (!known) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": unknown part; expected one of ", absl::StrJoin(kPartData, ", ")));
  }
  PartKind kind = PartKind::kOther;
  US_ASSIGN_OR_RETURN(Member thought, Field(part, "thought", path));
  if (thought.value != nullptr && !thought.value->is_boolean()) {
    return ExpectedError(thought.path, "a boolean", *thought.value);
  }
  const bool is_thought = thought.value != nullptr && thought.value->get<bool>();
  US_ASSIGN_OR_RETURN(Member text, Field(part, "text", path));
  if (text.value != nullptr) {
    if (!text.value->is_string()) return ExpectedError(text.path, "a string", *text.value);
    if (!is_thought) message->mutable_content()->append(text.value->get<std::string>());
    if (HasOnlyFields(part, {"text"})) kind = PartKind::kPlainText;
  }
  US_ASSIGN_OR_RETURN(Member call, Field(part, "functionCall", path));
  if (call.value != nullptr) {
    US_RETURN_IF_ERROR(ParseFunctionCall(*call.value, call.path, message->add_tool_calls()));
    if (HasOnlyFields(part, {"functionCall"}) &&
        HasOnlyFields(*call.value, {"name", "args", "id"})) {
      kind = PartKind::kPlainCall;
    }
  }
  US_ASSIGN_OR_RETURN(Member response, Field(part, "functionResponse", path));
  if (response.value != nullptr) {
    const Json& r = *response.value;
    if (!r.is_object()) return ExpectedError(response.path, "an object", r);
    v1::Message tool;
    tool.set_role("tool");
    US_RETURN_IF_ERROR(ReadRequiredString(r, "name", response.path, tool.mutable_name()));
    US_RETURN_IF_ERROR(ReadOptionalString(r, "id", response.path, tool.mutable_tool_call_id()));
    US_ASSIGN_OR_RETURN(const Json* result, OptionalObject(r, "response", response.path));
    if (result != nullptr) tool.set_content(DumpJson(*result));
    tool_messages->push_back(std::move(tool));
    if (HasOnlyFields(part, {"functionResponse"}) && HasOnlyFields(r, {"name", "response", "id"})) {
      kind = PartKind::kPlainResponse;
    }
  }
  return kind;
}

// `parts` of a content (`member`, absent for none) into `message` and
// `tool_messages`. Sets `*exact` when the canonical messages reproduce the
// parts exactly (see the file comment of gemini.h).
absl::Status ParseParts(const Member& member, v1::Message* message,
                        std::vector<v1::Message>* tool_messages, bool* exact) {
  *exact = true;
  if (member.value == nullptr) return absl::OkStatus();
  const Json& parts = *member.value;
  if (!parts.is_array()) return ExpectedError(member.path, "an array of parts", parts);
  bool responses_only = true;
  bool calls_after_text = true;  // [text] call*
  for (size_t i = 0; i < parts.size(); ++i) {
    US_ASSIGN_OR_RETURN(PartKind kind,
                        ParsePart(parts[i], JoinPath(member.path, i), message, tool_messages));
    responses_only = responses_only && kind == PartKind::kPlainResponse;
    calls_after_text = calls_after_text &&
                       (kind == PartKind::kPlainCall || (kind == PartKind::kPlainText && i == 0));
  }
  *exact = tool_messages->empty() ? calls_after_text : responses_only;
  return absl::OkStatus();
}

void SetExtra(const Json& extra, v1::Message* message) {
  if (!extra.empty()) message->set_extra(DumpJson(extra));
}

// One entry of `contents`: tool messages for its functionResponse parts,
// then a user or assistant message for the rest (if any rest, or if there
// are no function responses).
absl::Status ParseContent(const Json& in, const std::string& path, v1::CompletionRequest* request) {
  if (!in.is_object()) return ExpectedError(path, "a content object", in);
  Json extra = Json::object();
  v1::Message message;
  message.set_role("user");
  if (const Json* role = FindMember(in, "role")) {
    const std::string role_path = JoinPath(path, "role");
    if (!role->is_string()) return ExpectedError(role_path, "a string", *role);
    const std::string value = role->get<std::string>();
    if (value == "model") {
      message.set_role("assistant");
    } else if (value == "function") {
      extra["role"] = value;
    } else if (value != "user") {
      return absl::InvalidArgumentError(absl::StrCat(
          role_path, ": expected \"user\", \"model\" or \"function\", got \"", value, "\""));
    }
  }
  US_ASSIGN_OR_RETURN(Member parts, Field(in, "parts", path));
  std::vector<v1::Message> tool_messages;
  bool exact = true;
  US_RETURN_IF_ERROR(ParseParts(parts, &message, &tool_messages, &exact));
  const size_t responses = tool_messages.size();
  const size_t part_count = parts.value == nullptr ? 0 : parts.value->size();
  // The rest of the content, unless it was nothing but function responses.
  if (responses == 0 || responses < part_count) tool_messages.push_back(std::move(message));
  if (!exact) extra[parts.key] = *parts.value;
  for (auto it = in.begin(); it != in.end(); ++it) {
    if (it->is_null() || it.key() == "role" || it.key() == "parts") continue;
    extra[it.key()] = *it;
  }
  SetExtra(extra, &tool_messages.front());
  for (v1::Message& m : tool_messages) *request->add_messages() = std::move(m);
  return absl::OkStatus();
}

// `systemInstruction`: a Content, or a string.
absl::Status ParseSystem(const Member& system, v1::CompletionRequest* request) {
  v1::Message* message = request->add_messages();
  message->set_role("system");
  const Json& in = *system.value;
  if (in.is_string()) {
    message->set_content(in.get<std::string>());
    return absl::OkStatus();
  }
  if (!in.is_object()) {
    return ExpectedError(system.path, "a content object or a string", in);
  }
  if (const Json* role = FindMember(in, "role"); role != nullptr && !role->is_string()) {
    return ExpectedError(JoinPath(system.path, "role"), "a string", *role);
  }
  US_ASSIGN_OR_RETURN(Member parts, Field(in, "parts", system.path));
  std::vector<v1::Message> ignored;
  bool exact = true;
  US_RETURN_IF_ERROR(ParseParts(parts, message, &ignored, &exact));
  // Exact: no parts, or one plain text part. Function calls and responses
  // are not the system's to make: they stay in the parts kept in extra.
  const bool plain =
      parts.value == nullptr || parts.value->empty() ||
      (parts.value->size() == 1 && exact && message->tool_calls_size() == 0 && ignored.empty());
  message->clear_tool_calls();
  Json extra = Json::object();
  if (!plain) extra[parts.key] = *parts.value;
  for (auto it = in.begin(); it != in.end(); ++it) {
    // The API ignores the role of a system instruction.
    if (it->is_null() || it.key() == "role" || it.key() == "parts") continue;
    extra[it.key()] = *it;
  }
  SetExtra(extra, message);
  return absl::OkStatus();
}

absl::Status ParseTools(const Member& member, v1::CompletionRequest* request, Json* extra) {
  const Json& tools = *member.value;
  if (!tools.is_array()) return ExpectedError(member.path, "an array of tools", tools);
  bool exact = true;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& tool = tools[i];
    const std::string tool_path = JoinPath(member.path, i);
    if (!tool.is_object()) return ExpectedError(tool_path, "a tool object", tool);
    US_ASSIGN_OR_RETURN(Member decls, Field(tool, "functionDeclarations", tool_path));
    exact = exact && HasOnlyFields(tool, {"functionDeclarations"});
    if (decls.value == nullptr) continue;  // googleSearch, codeExecution, ...
    if (!decls.value->is_array()) {
      return ExpectedError(decls.path, "an array of function declarations", *decls.value);
    }
    for (size_t k = 0; k < decls.value->size(); ++k) {
      const Json& decl = (*decls.value)[k];
      const std::string decl_path = JoinPath(decls.path, k);
      if (!decl.is_object()) return ExpectedError(decl_path, "a function declaration object", decl);
      v1::ToolDefinition* out = request->add_tools();
      US_RETURN_IF_ERROR(ReadRequiredString(decl, "name", decl_path, out->mutable_name()));
      US_RETURN_IF_ERROR(
          ReadOptionalString(decl, "description", decl_path, out->mutable_description()));
      US_ASSIGN_OR_RETURN(Member schema, Field(decl, "parameters", decl_path));
      US_ASSIGN_OR_RETURN(Member json_schema, Field(decl, "parametersJsonSchema", decl_path));
      if (schema.value != nullptr) {
        out->set_parameters(DumpJson(*schema.value));
      } else if (json_schema.value != nullptr) {
        out->set_parameters(DumpJson(*json_schema.value));
      }
      exact = exact && !(schema.value != nullptr && json_schema.value != nullptr) &&
              HasOnlyFields(decl, {"name", "description", "parameters", "parametersJsonSchema"});
    }
  }
  if (!exact) (*extra)[member.key] = tools;
  return absl::OkStatus();
}

absl::Status ParseGenerationConfig(const Member& member, v1::CompletionRequest* request,
                                   Json* extra) {
  const Json& config = *member.value;
  if (!config.is_object()) return ExpectedError(member.path, "an object", config);
  v1::SamplingParams params;
  // Reads the number `camel` of the config, if given, with `read` (JsonToDouble
  // or JsonToInt64) and hands it to `set`.
  const auto number = [&](absl::string_view camel, auto read, auto set) -> absl::Status {
    US_ASSIGN_OR_RETURN(Member m, Field(config, camel, member.path));
    if (m.value == nullptr) return absl::OkStatus();
    US_ASSIGN_OR_RETURN(auto value, read(*m.value, m.path));
    set(value);
    return absl::OkStatus();
  };
  US_RETURN_IF_ERROR(
      number("temperature", JsonToDouble, [&](double v) { params.set_temperature(v); }));
  US_RETURN_IF_ERROR(number("topP", JsonToDouble, [&](double v) { params.set_top_p(v); }));
  US_RETURN_IF_ERROR(
      number("maxOutputTokens", JsonToInt64, [&](int64_t v) { params.set_max_tokens(v); }));
  US_RETURN_IF_ERROR(number("seed", JsonToInt64, [&](int64_t v) { params.set_seed(v); }));
  US_ASSIGN_OR_RETURN(Member stop, Field(config, "stopSequences", member.path));
  if (stop.value != nullptr) {
    if (!stop.value->is_array()) {
      return ExpectedError(stop.path, "an array of strings", *stop.value);
    }
    for (size_t i = 0; i < stop.value->size(); ++i) {
      const Json& s = (*stop.value)[i];
      if (!s.is_string()) return ExpectedError(JoinPath(stop.path, i), "a string", s);
      params.add_stop(s.get<std::string>());
    }
  }
  if (params.ByteSizeLong() > 0) *request->mutable_params() = std::move(params);
  Json rest = Json::object();
  for (auto it = config.begin(); it != config.end(); ++it) {
    if (it->is_null() ||
        IsAnyField(it.key(), {"temperature", "topP", "maxOutputTokens", "stopSequences", "seed"})) {
      continue;
    }
    rest[it.key()] = *it;
  }
  // Under the JSON name however the body spelled it: the container is the
  // codec's, its members are the body's.
  if (!rest.empty()) (*extra)["generationConfig"] = std::move(rest);
  return absl::OkStatus();
}

// What a GenerateContentResponse says about candidate 0.
struct Answer {
  std::string id;
  std::string model;
  bool has_candidate = false;
  v1::Message message;
  std::string finish_reason;  // Gemini's
  std::string block_reason;
  bool has_usage = false;
  v1::Usage usage;
};

// Reads a GenerateContentResponse object; `where` names its root ("" for
// a body, so that paths read "candidates[0]...").
absl::Status ParseAnswer(const Json& root, const std::string& where, Answer* out) {
  US_RETURN_IF_ERROR(ReadOptionalString(root, "responseId", where, &out->id));
  US_RETURN_IF_ERROR(ReadOptionalString(root, "modelVersion", where, &out->model));
  out->message.set_role("assistant");
  const std::string candidates_path = JoinPath(where, "candidates");
  if (const Json* candidates = FindMember(root, "candidates")) {
    if (!candidates->is_array()) {
      return ExpectedError(candidates_path, "an array of candidates", *candidates);
    }
    for (size_t i = 0; i < candidates->size() && !out->has_candidate; ++i) {
      const Json& candidate = (*candidates)[i];
      const std::string path = JoinPath(candidates_path, i);
      if (!candidate.is_object()) return ExpectedError(path, "a candidate object", candidate);
      if (const Json* index = FindMember(candidate, "index")) {
        US_ASSIGN_OR_RETURN(int64_t n, JsonToInt64(*index, JoinPath(path, "index")));
        if (n != 0) continue;  // the canonical answer is candidate 0
      }
      out->has_candidate = true;
      US_RETURN_IF_ERROR(ReadOptionalString(candidate, "finishReason", path, &out->finish_reason));
      US_ASSIGN_OR_RETURN(const Json* content, OptionalObject(candidate, "content", path));
      if (content == nullptr) break;
      const std::string parts_path = JoinPath(JoinPath(path, "content"), "parts");
      const Json* parts = FindMember(*content, "parts");
      if (parts == nullptr) break;
      if (!parts->is_array()) return ExpectedError(parts_path, "an array of parts", *parts);
      for (size_t k = 0; k < parts->size(); ++k) {
        const Json& part = (*parts)[k];
        const std::string part_path = JoinPath(parts_path, k);
        if (!part.is_object()) return ExpectedError(part_path, "a part object", part);
        // Parts of other kinds (executableCode, inlineData, ...) have no
        // canonical place in an answer.
        if (const Json* call = FindMember(part, "functionCall")) {
          US_RETURN_IF_ERROR(ParseFunctionCall(*call, JoinPath(part_path, "functionCall"),
                                               out->message.add_tool_calls()));
        }
        const Json* text = FindMember(part, "text");
        if (text == nullptr) continue;
        if (!text->is_string())
          return ExpectedError(JoinPath(part_path, "text"), "a string", *text);
        const Json* thought = FindMember(part, "thought");
        if (thought != nullptr && !thought->is_boolean()) {
          return ExpectedError(JoinPath(part_path, "thought"), "a boolean", *thought);
        }
        if (thought == nullptr || !thought->get<bool>()) {
          out->message.mutable_content()->append(text->get<std::string>());
        }
      }
    }
  }
  const std::string feedback_path = JoinPath(where, "promptFeedback");
  if (const Json* feedback = FindMember(root, "promptFeedback")) {
    if (!feedback->is_object()) return ExpectedError(feedback_path, "an object", *feedback);
    US_RETURN_IF_ERROR(
        ReadOptionalString(*feedback, "blockReason", feedback_path, &out->block_reason));
  }
  if (const Json* usage = FindMember(root, "usageMetadata")) {
    out->has_usage = true;
    US_RETURN_IF_ERROR(ReadUsage(*usage, JoinPath(where, "usageMetadata"), "promptTokenCount", "candidatesTokenCount", &out->usage));
  }
  return absl::OkStatus();
}

// The canonical finish reason of an answer; `has_calls` when the answer
// (so far, in a stream) has function calls.
std::string FinishReason(const Answer& answer, bool has_calls) {
  if (answer.finish_reason.empty()) {
    return !answer.has_candidate && !answer.block_reason.empty() ? "content_filter" : "";
  }
  if (answer.finish_reason == "STOP" && has_calls) return "tool_calls";
  return FinishReasonFromGemini(answer.finish_reason);
}

// The status an error object sent by the API stands for.
absl::Status UpstreamError(const Json& error, const std::string& path) {
  std::string status;
  std::string message;
  absl::StatusCode code = absl::StatusCode::kUnknown;
  if (error.is_object()) {
    US_RETURN_IF_ERROR(ReadOptionalString(error, "status", path, &status));
    US_RETURN_IF_ERROR(ReadOptionalString(error, "message", path, &message));
    if (!status.empty()) {
      code = CodeFromStatusName(status);
    } else if (const Json* http = FindMember(error, "code")) {
      absl::StatusOr<int64_t> n = JsonToInt64(*http, JoinPath(path, "code"));
      if (n.ok() && *n > 0 && *n < 1000) code = StatusCodeForHttp(static_cast<int>(*n));
    }
  } else if (error.is_string()) {
    message = error.get<std::string>();
  }
  if (code == absl::StatusCode::kOk) code = absl::StatusCode::kUnknown;
  return absl::Status(code, absl::StrCat("upstream stream error (",
                                         status.empty() ? "no status" : status, "): ", message));
}

ordered_json FunctionCallPart(const std::string& id, const std::string& name,
                              const std::string& arguments) {
  ordered_json call = ordered_json::object();
  if (!id.empty()) call["id"] = id;
  call["name"] = name;
  call["args"] = ArgumentsObject(arguments);
  ordered_json part = ordered_json::object();
  part["functionCall"] = std::move(call);
  return part;
}

// A GenerateContentResponse with one candidate.
ordered_json ResponseJson(const std::string& text, ordered_json calls,
                          const std::string& finish_reason, const v1::Usage* usage,
                          const std::string& model, const std::string& id) {
  ordered_json parts = ordered_json::array();
  if (!text.empty() || calls.empty()) parts.push_back(ordered_json{{"text", text}});
  for (ordered_json& call : calls) parts.push_back(std::move(call));
  ordered_json content = ordered_json::object();
  content["parts"] = std::move(parts);
  content["role"] = "model";
  ordered_json candidate = ordered_json::object();
  candidate["content"] = std::move(content);
  if (!finish_reason.empty()) candidate["finishReason"] = finish_reason;
  candidate["index"] = 0;
  ordered_json body = ordered_json::object();
  body["candidates"] = ordered_json::array({std::move(candidate)});
  if (usage != nullptr) {
    ordered_json u = ordered_json::object();
    u["promptTokenCount"] = usage->input_tokens();
    u["candidatesTokenCount"] = usage->output_tokens();
    int64_t total = 0;
    if (__builtin_add_overflow(usage->input_tokens(), usage->output_tokens(), &total)) {
      total = usage->input_tokens() > 0 ? std::numeric_limits<int64_t>::max()
                                        : std::numeric_limits<int64_t>::min();
    }
    u["totalTokenCount"] = total;
    body["usageMetadata"] = std::move(u);
  }
  if (!model.empty()) body["modelVersion"] = model;
  if (!id.empty()) body["responseId"] = id;
  return body;
}

}  // namespace

std::string FinishReasonFromGemini(absl::string_view reason) {
  if (reason == "STOP") return "stop";
  if (reason == "MAX_TOKENS") return "length";
  for (absl::string_view filter : kFilterReasons) {
    if (reason == filter) return "content_filter";
  }
  return absl::AsciiStrToLower(reason);
}

std::string FinishReasonToGemini(absl::string_view finish_reason) {
  if (finish_reason == "stop" || finish_reason == "tool_calls") return "STOP";
  if (finish_reason == "length") return "MAX_TOKENS";
  if (finish_reason == "content_filter") return "SAFETY";
  return absl::AsciiStrToUpper(finish_reason);
}

absl::StatusOr<ParsedRequest> ParseRequest(absl::string_view body, absl::string_view model) {
  US_ASSIGN_OR_RETURN(Json root, ParseJson(body, "body"));
  if (!root.is_object()) return ExpectedError("body", "a JSON object", root);
  ParsedRequest out;
  v1::CompletionRequest& request = out.canonical;
  request.set_model(std::string(model));
  Json extra = Json::object();

  US_ASSIGN_OR_RETURN(Member system, Field(root, "systemInstruction", ""));
  if (system.value != nullptr) US_RETURN_IF_ERROR(ParseSystem(system, &request));
  const Json* contents = FindMember(root, "contents");
  if (contents == nullptr) return MissingError("contents", "an array of contents");
  if (!contents->is_array()) return ExpectedError("contents", "an array of contents", *contents);
  for (size_t i = 0; i < contents->size(); ++i) {
    US_RETURN_IF_ERROR(ParseContent((*contents)[i], JoinPath("contents", i), &request));
  }
  US_ASSIGN_OR_RETURN(Member tools, Field(root, "tools", ""));
  if (tools.value != nullptr) US_RETURN_IF_ERROR(ParseTools(tools, &request, &extra));
  US_ASSIGN_OR_RETURN(Member config, Field(root, "generationConfig", ""));
  if (config.value != nullptr) US_RETURN_IF_ERROR(ParseGenerationConfig(config, &request, &extra));

  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string& key = it.key();
    if (it->is_null() || IsIgnored(key) ||
        IsAnyField(key, {"contents", "systemInstruction", "tools", "generationConfig"})) {
      continue;
    }
    extra[key] = *it;
  }
  if (!extra.empty()) request.set_extra(DumpJson(extra));
  return out;
}

absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseJson(body, "body"));
  if (!root.is_object()) return ExpectedError("body", "a JSON object", root);
  Answer answer;
  US_RETURN_IF_ERROR(ParseAnswer(root, "", &answer));
  if (!answer.has_candidate && answer.block_reason.empty()) {
    const Json* candidates = FindMember(root, "candidates");
    if (candidates == nullptr) {
      return MissingError("candidates", "a non-empty array of candidates");
    }
    return absl::InvalidArgumentError("candidates: expected a candidate with index 0, got none");
  }
  v1::CompletionResponse out;
  out.set_id(answer.id);
  out.set_model(answer.model);
  out.set_finish_reason(FinishReason(answer, answer.message.tool_calls_size() > 0));
  *out.mutable_message() = std::move(answer.message);
  if (answer.has_usage) *out.mutable_usage() = answer.usage;
  return out;
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::Decode(const SseEvent& event) {
  if (absl::StripAsciiWhitespace(event.data) == "[DONE]") {
    done_ = true;
    return std::nullopt;
  }
  return DecodeJson(event.data, "data");
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::DecodeElement(
    absl::string_view json) {
  return DecodeJson(json, "element");
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::DecodeJson(
    absl::string_view text, absl::string_view where) {
  const std::string root_path(where);
  US_ASSIGN_OR_RETURN(Json root, ParseJson(text, root_path));
  if (!root.is_object()) return ExpectedError(root_path, "a GenerateContentResponse object", root);
  if (const Json* error = FindMember(root, "error")) {
    return UpstreamError(*error, JoinPath(root_path, "error"));
  }
  Answer answer;
  US_RETURN_IF_ERROR(ParseAnswer(root, root_path, &answer));
  v1::CompletionChunk chunk;
  chunk.set_id(answer.id);
  chunk.set_model(answer.model);
  chunk.set_content(answer.message.content());
  for (const v1::ToolCall& call : answer.message.tool_calls()) {
    v1::ToolCallDelta* delta = chunk.add_tool_calls();
    delta->set_index(next_tool_index_++);
    delta->set_id(call.id());
    delta->set_name(call.name());
    delta->set_arguments(call.arguments());
  }
  chunk.set_finish_reason(FinishReason(answer, next_tool_index_ > 0));
  if (!chunk.finish_reason().empty()) done_ = true;
  if (answer.has_usage) *chunk.mutable_usage() = answer.usage;
  return chunk;
}

std::string RenderResponse(const v1::CompletionResponse& response, absl::string_view model) {
  const v1::Message& m = response.message();
  ordered_json calls = ordered_json::array();
  for (const v1::ToolCall& c : m.tool_calls()) {
    calls.push_back(FunctionCallPart(c.id(), c.name(), c.arguments()));
  }
  const std::string reason =
      response.finish_reason().empty() ? "STOP" : FinishReasonToGemini(response.finish_reason());
  const std::string model_version =
      response.model().empty() ? std::string(model) : response.model();
  return DumpJson(ResponseJson(m.content(), std::move(calls), reason,
                               response.has_usage() ? &response.usage() : nullptr, model_version,
                               response.id()));
}

namespace {

// RenderStream, a chunk at a time.
class GeminiStreamRenderer final : public SteppedRenderer {
 public:
  GeminiStreamRenderer(const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
                       absl::string_view model, bool sse)
      : chunks_(chunks), sse_(sse) {
    for (int i = 0; i < chunks_.size(); ++i) {
      if (id_.empty()) id_ = chunks_[i].id();
      if (model_version_.empty()) model_version_ = chunks_[i].model();
      for (const v1::ToolCallDelta& d : chunks_[i].tool_calls()) last_chunk_[d.index()] = i;
    }
    if (model_version_.empty()) model_version_ = std::string(model);
  }

 protected:
  bool Step() override {
    if (next_ < chunks_.size()) {
      const int i = next_++;
      Body(ChunkBody(i), i);
      return true;
    }
    if (next_ == chunks_.size()) {
      ++next_;
      if (chunks_.empty()) {
        Body(DumpJson(ResponseJson("", ordered_json::array(), "STOP", nullptr, model_version_, id_)),
             -1);
      }
      if (!sse_) Emit("\n]");
    }
    return false;
  }

 private:
  struct Call {
    std::string id, name, arguments;
  };

  std::string ChunkBody(int i) {
    const v1::CompletionChunk& c = chunks_[i];
    for (const v1::ToolCallDelta& d : c.tool_calls()) {
      Call& call = open_[d.index()];
      if (call.id.empty()) call.id = d.id();
      if (call.name.empty()) call.name = d.name();
      call.arguments += d.arguments();
    }
    ordered_json calls = ordered_json::array();
    for (auto it = open_.begin(); it != open_.end();) {
      if (last_chunk_[it->first] != i) {
        ++it;
        continue;
      }
      calls.push_back(FunctionCallPart(it->second.id, it->second.name, it->second.arguments));
      it = open_.erase(it);
    }
    return DumpJson(ResponseJson(c.content(), std::move(calls),
                                 FinishReasonToGemini(c.finish_reason()),
                                 c.has_usage() ? &c.usage() : nullptr, model_version_, id_));
  }

  void Body(const std::string& body, int chunk) {
    if (sse_) {
      Emit(absl::StrCat("data: ", body, "\r\n\r\n"), chunk);
    } else {
      Emit(absl::StrCat(bodies_++ == 0 ? "[" : "\n,\r\n", body), chunk);
    }
  }

  const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks_;
  const bool sse_;
  std::string id_;
  std::string model_version_;
  // Where each tool call's last fragment is, and the fragments so far
  // of the calls not yet sent.
  std::map<int32_t, int> last_chunk_;
  std::map<int32_t, Call> open_;
  int next_ = 0;
  int bodies_ = 0;
};

}  // namespace

std::unique_ptr<EventRenderer> StreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks, absl::string_view model,
    bool sse) {
  return std::make_unique<GeminiStreamRenderer>(chunks, model, sse);
}

std::vector<std::string> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks, absl::string_view model,
    bool sse) {
  return RenderAllText(*StreamRenderer(chunks, model, sse));
}

std::string ErrorBody(const absl::Status& status) {
  ordered_json error = ordered_json::object();
  error["code"] = HttpStatusFor(status.code());
  error["message"] = std::string(status.message());
  error["status"] = absl::StatusCodeToString(status.code());
  ordered_json body = ordered_json::object();
  body["error"] = std::move(error);
  return DumpJson(body);
}

absl::StatusCode CodeFromStatusName(absl::string_view name) {
  for (int code = 0; code <= 16; ++code) {
    const absl::StatusCode c = static_cast<absl::StatusCode>(code);
    if (absl::StatusCodeToString(c) == name) return c;
  }
  return absl::StatusCode::kUnknown;
}

}  // namespace gemini
}  // namespace provider
}  // namespace understudy
