#include "provider/request_fields.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/text.h"

namespace understudy {
namespace provider {
namespace {

absl::Status ReadStop(const Json& stop, absl::string_view key, bool string_too,
                      v1::SamplingParams* params) {
  if (string_too && stop.is_string()) {
    params->add_stop(stop.get<std::string>());
    return absl::OkStatus();
  }
  if (!stop.is_array()) {
    return ExpectedError(key, string_too ? "a string or an array of strings" : "an array of strings",
                         stop);
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    const Json& s = stop[i];
    if (!s.is_string()) return ExpectedError(JoinPath(key, i), "a string", s);
    params->add_stop(s.get<std::string>());
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ReadSampling(const Json& object, std::initializer_list<SamplingField> fields,
                          v1::SamplingParams* params, absl::string_view path) {
  using Kind = SamplingField::Kind;
  for (const SamplingField& field : fields) {
    const Json* v = FindMember(object, field.key);
    if (v == nullptr) continue;
    const std::string key = path.empty() ? std::string(field.key) : JoinPath(std::string(path), field.key);
    switch (field.kind) {
      case Kind::kTemperature: {
        US_ASSIGN_OR_RETURN(double t, JsonToDouble(*v, key));
        params->set_temperature(t);
        break;
      }
      case Kind::kTopP: {
        US_ASSIGN_OR_RETURN(double p, JsonToDouble(*v, key));
        params->set_top_p(p);
        break;
      }
      case Kind::kMaxTokens: {
        US_ASSIGN_OR_RETURN(int64_t n, JsonToInt64(*v, key));
        params->set_max_tokens(n);
        break;
      }
      case Kind::kSeed: {
        US_ASSIGN_OR_RETURN(int64_t seed, JsonToInt64(*v, key));
        params->set_seed(seed);
        break;
      }
      case Kind::kStopArray:
      case Kind::kStop:
        US_RETURN_IF_ERROR(ReadStop(*v, key, field.kind == Kind::kStop, params));
        break;
    }
  }
  return absl::OkStatus();
}

absl::Status ParseTextParts(const Json* value, const std::string& path,
                            std::initializer_list<absl::string_view> text_types,
                            bool (*is_plain)(const Json& part), absl::string_view extra_key,
                            v1::Message* message, Json* extra) {
  if (value == nullptr) return absl::OkStatus();
  if (value->is_string()) {
    message->set_content(value->get<std::string>());
    return absl::OkStatus();
  }
  if (!value->is_array()) {
    return ExpectedError(path, "a string or an array of content parts", *value);
  }
  std::string text;
  bool text_only = true;
  for (size_t i = 0; i < value->size(); ++i) {
    const Json& part = (*value)[i];
    const std::string part_path = JoinPath(path, i);
    if (!part.is_object()) return ExpectedError(part_path, "a content part object", part);
    std::string type;
    US_RETURN_IF_ERROR(ReadRequiredString(part, "type", part_path, &type));
    if (absl::c_linear_search(text_types, type)) {
      std::string part_text;
      US_RETURN_IF_ERROR(ReadRequiredString(part, "text", part_path, &part_text));
      text += part_text;
      text_only = text_only && is_plain(part);
    } else {
      text_only = false;
    }
  }
  message->set_content(std::move(text));
  if (!text_only) (*extra)[std::string(extra_key)] = *value;
  return absl::OkStatus();
}

absl::Status ParseFunctionTools(const Json& tools, v1::CompletionRequest* request, Json* extra) {
  const std::string path = "tools";
  if (!tools.is_array()) return ExpectedError(path, "an array of tools", tools);
  bool exact = true;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& tool = tools[i];
    const std::string tool_path = JoinPath(path, i);
    if (!tool.is_object()) return ExpectedError(tool_path, "a tool object", tool);
    std::string type;
    US_RETURN_IF_ERROR(ReadOptionalString(tool, "type", tool_path, &type));
    if (!type.empty() && type != "function") {
      exact = false;
      continue;
    }
    const std::string fn_path = JoinPath(tool_path, "function");
    const Json* fn = FindMember(tool, "function");
    if (fn == nullptr) return MissingError(fn_path, "an object");
    if (!fn->is_object()) return ExpectedError(fn_path, "an object", *fn);
    v1::ToolDefinition* out = request->add_tools();
    US_RETURN_IF_ERROR(ReadRequiredString(*fn, "name", fn_path, out->mutable_name()));
    US_RETURN_IF_ERROR(ReadOptionalString(*fn, "description", fn_path, out->mutable_description()));
    if (const Json* parameters = FindMember(*fn, "parameters")) {
      out->set_parameters(DumpJson(*parameters));
    }
    exact = exact && !type.empty() && HasOnlyKeys(tool, {"type", "function"}) &&
            HasOnlyKeys(*fn, {"name", "description", "parameters"});
  }
  if (!exact) (*extra)["tools"] = tools;
  return absl::OkStatus();
}

absl::Status ParseFunctionToolCalls(const Json& calls, const std::string& path,
                                    v1::Message* message, Json* extra) {
  if (!calls.is_array()) return ExpectedError(path, "an array of tool calls", calls);
  bool exact = true;
  for (size_t i = 0; i < calls.size(); ++i) {
    const Json& call = calls[i];
    const std::string call_path = JoinPath(path, i);
    if (!call.is_object()) return ExpectedError(call_path, "a tool call object", call);
    std::string type;
    US_RETURN_IF_ERROR(ReadOptionalString(call, "type", call_path, &type));
    if (!type.empty() && type != "function") {
      exact = false;
      continue;
    }
    const std::string fn_path = JoinPath(call_path, "function");
    const Json* fn = FindMember(call, "function");
    if (fn == nullptr) return MissingError(fn_path, "an object");
    if (!fn->is_object()) return ExpectedError(fn_path, "an object", *fn);
    v1::ToolCall* out = message->add_tool_calls();
    US_RETURN_IF_ERROR(ReadOptionalString(call, "id", call_path, out->mutable_id()));
    US_RETURN_IF_ERROR(ReadRequiredString(*fn, "name", fn_path, out->mutable_name()));
    const Json* arguments = FindMember(*fn, "arguments");
    if (arguments != nullptr && !arguments->is_string()) {
      return ExpectedError(JoinPath(fn_path, "arguments"), "a string (JSON text)", *arguments);
    }
    if (arguments != nullptr) out->set_arguments(arguments->get<std::string>());
    exact = exact && !type.empty() && arguments != nullptr &&
            HasOnlyKeys(call, {"id", "type", "function"}) &&
            HasOnlyKeys(*fn, {"name", "arguments"});
  }
  if (!exact && extra != nullptr) (*extra)["tool_calls"] = calls;
  return absl::OkStatus();
}

absl::Status CheckRole(absl::string_view role, const std::string& path,
                       std::initializer_list<absl::string_view> roles) {
  std::string expected;
  size_t i = 0;
  for (absl::string_view r : roles) {
    if (r == role) return absl::OkStatus();
    absl::StrAppend(&expected, i == 0 ? "" : (i + 1 == roles.size() ? " or " : ", "), "\"", r, "\"");
    ++i;
  }
  return absl::InvalidArgumentError(absl::StrCat(JoinPath(path, "role"), ": expected ", expected,
                                                 ", got \"", absl::CHexEscape(Shorten(role, 40)),
                                                 "\""));
}

Json ArgumentsObject(const std::string& arguments) {
  if (arguments.empty()) return Json::object();
  absl::StatusOr<Json> parsed = ParseJson(arguments, "arguments");
  if (parsed.ok() && parsed->is_object()) return *std::move(parsed);
  Json wrapped = Json::object();
  wrapped["arguments"] = arguments;
  return wrapped;
}

}  // namespace provider
}  // namespace understudy
