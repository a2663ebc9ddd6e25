#include "provider/openai.h"

#include <limits>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "provider/json_util.h"
#include "provider/request_fields.h"

namespace understudy {
namespace provider {
namespace openai {
namespace {

using nlohmann::ordered_json;

// A text part with nothing but its type and text.
bool IsPlainText(const Json& part) { return HasOnlyKeys(part, {"type", "text"}); }

absl::Status ParseMessage(const Json& in, const std::string& path, v1::Message* message) {
  if (!in.is_object()) return ExpectedError(path, "a message object", in);
  Json extra = Json::object();
  std::string role;
  US_RETURN_IF_ERROR(ReadRequiredString(in, "role", path, &role));
  if (role == "developer") {
    // The newer name of the system role: same place in the prompt.
    message->set_role("system");
    extra["role"] = role;
  } else {
    message->set_role(role);
  }
  US_RETURN_IF_ERROR(
      ParseTextParts(FindMember(in, "content"), JoinPath(path, "content"), {"text"},
                     &IsPlainText, "content", message, &extra));
  US_RETURN_IF_ERROR(ReadOptionalString(in, "name", path, message->mutable_name()));
  US_RETURN_IF_ERROR(ReadOptionalString(in, "tool_call_id", path, message->mutable_tool_call_id()));
  if (const Json* calls = FindMember(in, "tool_calls")) {
    US_RETURN_IF_ERROR(ParseFunctionToolCalls(*calls, JoinPath(path, "tool_calls"), message, &extra));
  }
  for (auto it = in.begin(); it != in.end(); ++it) {
    const std::string& key = it.key();
    if (it->is_null() || key == "role" || key == "content" || key == "name" ||
        key == "tool_call_id" || key == "tool_calls") {
      continue;
    }
    extra[key] = *it;
  }
  if (!extra.empty()) message->set_extra(DumpJson(extra));
  return absl::OkStatus();
}

// The status an error object sent by the API stands for.
absl::Status UpstreamError(const Json& error, absl::string_view path) {
  std::string type;
  std::string message;
  if (error.is_object()) {
    US_RETURN_IF_ERROR(ReadOptionalString(error, "type", path, &type));
    US_RETURN_IF_ERROR(ReadOptionalString(error, "message", path, &message));
  } else if (error.is_string()) {
    message = error.get<std::string>();
  }
  const absl::StatusCode code = OpenAiErrorStatusCode(type);
  return absl::Status(code, absl::StrCat("upstream stream error (", type.empty() ? "untyped" : type,
                                         "): ", message));
}

std::string FinishReason(const v1::CompletionResponse& response) {
  if (!response.finish_reason().empty()) return response.finish_reason();
  return response.message().tool_calls_size() > 0 ? "tool_calls" : "stop";
}

ordered_json UsageJson(const v1::Usage& usage) {
  ordered_json out = ordered_json::object();
  out["prompt_tokens"] = usage.input_tokens();
  out["completion_tokens"] = usage.output_tokens();
  out["total_tokens"] = usage.input_tokens() + usage.output_tokens();
  return out;
}

}  // namespace

absl::StatusOr<ParsedRequest> ParseRequest(absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseJson(body, "body"));
  if (!root.is_object()) return ExpectedError("body", "a JSON object", root);
  ParsedRequest out;
  v1::CompletionRequest& request = out.canonical;
  Json extra = Json::object();

  US_RETURN_IF_ERROR(ReadRequiredString(root, "model", "", request.mutable_model()));
  const Json* messages = FindMember(root, "messages");
  if (messages == nullptr) return MissingError("messages", "an array of messages");
  if (!messages->is_array()) return ExpectedError("messages", "an array of messages", *messages);
  for (size_t i = 0; i < messages->size(); ++i) {
    US_RETURN_IF_ERROR(
        ParseMessage((*messages)[i], JoinPath("messages", i), request.add_messages()));
  }
  if (const Json* tools = FindMember(root, "tools")) {
    US_RETURN_IF_ERROR(ParseFunctionTools(*tools, &request, &extra));
  }

  using Sampling = SamplingField::Kind;
  v1::SamplingParams params;
  US_RETURN_IF_ERROR(ReadSampling(
      root, {{"temperature", Sampling::kTemperature}, {"top_p", Sampling::kTopP}}, &params));
  // max_completion_tokens replaced max_tokens; both bound the answer's
  // length. When both are sent, the second is kept exactly in extra.
  const Json* max_completion_tokens = FindMember(root, "max_completion_tokens");
  const Json* max_tokens = FindMember(root, "max_tokens");
  if (max_completion_tokens != nullptr) {
    US_ASSIGN_OR_RETURN(int64_t n, JsonToInt64(*max_completion_tokens, "max_completion_tokens"));
    params.set_max_tokens(n);
    if (max_tokens != nullptr) extra["max_tokens"] = *max_tokens;
  } else if (max_tokens != nullptr) {
    US_ASSIGN_OR_RETURN(int64_t n, JsonToInt64(*max_tokens, "max_tokens"));
    params.set_max_tokens(n);
  }
  US_RETURN_IF_ERROR(
      ReadSampling(root, {{"stop", Sampling::kStop}, {"seed", Sampling::kSeed}}, &params));
  if (params.ByteSizeLong() > 0) *request.mutable_params() = std::move(params);

  if (const Json* v = FindMember(root, "stream")) {
    if (!v->is_boolean()) return ExpectedError("stream", "a boolean", *v);
    out.stream = v->get<bool>();
  }
  if (const Json* options = FindMember(root, "stream_options")) {
    if (!options->is_object()) return ExpectedError("stream_options", "an object", *options);
    if (const Json* v = FindMember(*options, "include_usage")) {
      if (!v->is_boolean()) {
        return ExpectedError("stream_options.include_usage", "a boolean", *v);
      }
      out.include_usage = out.stream && v->get<bool>();
    }
  }

  CopyUnmapped(root, kIgnoredRequestFields,
               {"model", "messages", "tools", "temperature", "top_p", "max_completion_tokens",
                "max_tokens", "stop", "seed"},
               &extra);
  if (!extra.empty()) request.set_extra(DumpJson(extra));
  return out;
}

absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseJson(body, "body"));
  if (!root.is_object()) return ExpectedError("body", "a JSON object", root);
  v1::CompletionResponse out;
  US_RETURN_IF_ERROR(ReadOptionalString(root, "id", "", out.mutable_id()));
  US_RETURN_IF_ERROR(ReadOptionalString(root, "model", "", out.mutable_model()));
  const Json* choices = FindMember(root, "choices");
  if (choices == nullptr) return MissingError("choices", "a non-empty array of choices");
  if (!choices->is_array()) {
    return ExpectedError("choices", "a non-empty array of choices", *choices);
  }
  if (choices->empty()) {
    return absl::InvalidArgumentError(
        "choices: expected a non-empty array of choices, got an empty array");
  }
  const Json& choice = (*choices)[0];
  if (!choice.is_object()) return ExpectedError("choices[0]", "a choice object", choice);
  const Json* message = FindMember(choice, "message");
  if (message == nullptr) return MissingError("choices[0].message", "a message object");
  if (!message->is_object()) {
    return ExpectedError("choices[0].message", "a message object", *message);
  }
  v1::Message* m = out.mutable_message();
  m->set_role("assistant");
  US_RETURN_IF_ERROR(
      ReadOptionalString(*message, "content", "choices[0].message", m->mutable_content()));
  if (const Json* calls = FindMember(*message, "tool_calls")) {
    US_RETURN_IF_ERROR(
        ParseFunctionToolCalls(*calls, "choices[0].message.tool_calls", m, /*extra=*/nullptr));
  }
  US_RETURN_IF_ERROR(
      ReadOptionalString(choice, "finish_reason", "choices[0]", out.mutable_finish_reason()));
  if (const Json* usage = FindMember(root, "usage")) {
    US_RETURN_IF_ERROR(ReadUsage(*usage, "usage", "prompt_tokens", "completion_tokens", out.mutable_usage()));
  }
  return out;
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::Decode(const SseEvent& event) {
  if (done_) return absl::FailedPreconditionError("data: event after [DONE]");
  if (absl::StripAsciiWhitespace(event.data) == "[DONE]") {
    done_ = true;
    return std::nullopt;
  }
  US_ASSIGN_OR_RETURN(Json root, ParseJson(event.data, "data"));
  if (!root.is_object()) return ExpectedError("data", "a chunk object", root);
  if (const Json* error = FindMember(root, "error")) return UpstreamError(*error, "data.error");

  v1::CompletionChunk chunk;
  US_RETURN_IF_ERROR(ReadOptionalString(root, "id", "data", chunk.mutable_id()));
  US_RETURN_IF_ERROR(ReadOptionalString(root, "model", "data", chunk.mutable_model()));
  if (const Json* choices = FindMember(root, "choices")) {
    if (!choices->is_array()) return ExpectedError("data.choices", "an array", *choices);
    for (size_t i = 0; i < choices->size(); ++i) {
      const Json& choice = (*choices)[i];
      const std::string choice_path = JoinPath("data.choices", i);
      if (!choice.is_object()) return ExpectedError(choice_path, "a choice object", choice);
      if (const Json* index = FindMember(choice, "index")) {
        US_ASSIGN_OR_RETURN(int64_t n, JsonToInt64(*index, JoinPath(choice_path, "index")));
        if (n != 0) continue;  // the canonical answer is choice 0
      }
      US_RETURN_IF_ERROR(
          ReadOptionalString(choice, "finish_reason", choice_path, chunk.mutable_finish_reason()));
      const Json* delta = FindMember(choice, "delta");
      if (delta == nullptr) break;
      const std::string delta_path = JoinPath(choice_path, "delta");
      if (!delta->is_object()) return ExpectedError(delta_path, "an object", *delta);
      US_RETURN_IF_ERROR(
          ReadOptionalString(*delta, "content", delta_path, chunk.mutable_content()));
      const Json* calls = FindMember(*delta, "tool_calls");
      if (calls == nullptr) break;
      const std::string calls_path = JoinPath(delta_path, "tool_calls");
      if (!calls->is_array()) return ExpectedError(calls_path, "an array", *calls);
      for (size_t k = 0; k < calls->size(); ++k) {
        const Json& call = (*calls)[k];
        const std::string call_path = JoinPath(calls_path, k);
        if (!call.is_object()) return ExpectedError(call_path, "a tool call object", call);
        v1::ToolCallDelta* d = chunk.add_tool_calls();
        const std::string index_path = JoinPath(call_path, "index");
        const Json* index = FindMember(call, "index");
        if (index == nullptr) return MissingError(index_path, "an integer");
        US_ASSIGN_OR_RETURN(int64_t n, JsonToInt64(*index, index_path));
        if (n < 0 || n > std::numeric_limits<int32_t>::max()) {
          return absl::InvalidArgumentError(
              absl::StrCat(index_path, ": expected an integer in [0, 2^31), got ", n));
        }
        d->set_index(static_cast<int32_t>(n));
        US_RETURN_IF_ERROR(ReadOptionalString(call, "id", call_path, d->mutable_id()));
        if (const Json* fn = FindMember(call, "function")) {
          const std::string fn_path = JoinPath(call_path, "function");
          if (!fn->is_object()) return ExpectedError(fn_path, "an object", *fn);
          US_RETURN_IF_ERROR(ReadOptionalString(*fn, "name", fn_path, d->mutable_name()));
          US_RETURN_IF_ERROR(ReadOptionalString(*fn, "arguments", fn_path, d->mutable_arguments()));
        }
      }
      break;
    }
  }
  if (const Json* usage = FindMember(root, "usage")) {
    US_RETURN_IF_ERROR(ReadUsage(*usage, "data.usage", "prompt_tokens", "completion_tokens", chunk.mutable_usage()));
  }
  return chunk;
}

std::string RenderResponse(const v1::CompletionResponse& response, int64_t created_unix_seconds) {
  const v1::Message& m = response.message();
  ordered_json message = ordered_json::object();
  message["role"] = "assistant";
  if (m.content().empty() && m.tool_calls_size() > 0) {
    message["content"] = nullptr;
  } else {
    message["content"] = m.content();
  }
  if (m.tool_calls_size() > 0) {
    ordered_json calls = ordered_json::array();
    for (const v1::ToolCall& c : m.tool_calls()) {
      ordered_json call = ordered_json::object();
      call["id"] = c.id();
      call["type"] = "function";
      call["function"]["name"] = c.name();
      call["function"]["arguments"] = c.arguments();
      calls.push_back(std::move(call));
    }
    message["tool_calls"] = std::move(calls);
  }
  ordered_json choice = ordered_json::object();
  choice["index"] = 0;
  choice["message"] = std::move(message);
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = FinishReason(response);

  ordered_json body = ordered_json::object();
  body["id"] = response.id();
  body["object"] = "chat.completion";
  body["created"] = created_unix_seconds;
  body["model"] = response.model();
  body["choices"] = ordered_json::array({std::move(choice)});
  if (response.has_usage()) body["usage"] = UsageJson(response.usage());
  return DumpJson(body);
}

std::vector<std::string> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks, bool include_usage,
    int64_t created_unix_seconds) {
  StreamMeta meta;
  meta.created = created_unix_seconds;
  return RenderStream(chunks, include_usage, meta);
}

StreamMeta StreamMetaFromBody(absl::string_view body, int64_t fallback_created) {
  StreamMeta meta;
  meta.created = fallback_created;
  absl::StatusOr<Json> parsed = ParseJson(body, "body");
  if (!parsed.ok() || !parsed->is_object()) return meta;
  if (const Json* created = FindMember(*parsed, "created"); created != nullptr) {
    absl::StatusOr<int64_t> value = JsonToInt64(*created, "created");
    if (value.ok()) meta.created = *value;
  }
  if (const Json* tier = FindMember(*parsed, "service_tier"); tier != nullptr && tier->is_string()) {
    meta.service_tier = tier->get<std::string>();
  }
  if (const Json* fp = FindMember(*parsed, "system_fingerprint");
      fp != nullptr && fp->is_string()) {
    meta.system_fingerprint = fp->get<std::string>();
  }
  return meta;
}

namespace {

// RenderStream, a chunk at a time.
class ChatStreamRenderer final : public SteppedRenderer {
 public:
  ChatStreamRenderer(const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
                     bool include_usage, StreamMeta meta)
      : chunks_(chunks), include_usage_(include_usage), meta_(std::move(meta)) {
    for (const v1::CompletionChunk& c : chunks_) {
      if (id_.empty()) id_ = c.id();
      if (model_.empty()) model_ = c.model();
      if (c.has_usage()) usage_ = c.usage();
    }
  }

 protected:
  bool Step() override {
    if (next_ < chunks_.size()) {
      const int i = next_++;
      ChunkEvent(i);
      return true;
    }
    if (next_ == chunks_.size()) {
      ++next_;
      if (include_usage_) {
        ordered_json e = Event(ordered_json::array());
        e["usage"] = UsageJson(usage_);
        Emit(Sse(e));
      }
      Emit("data: [DONE]\n\n");
    }
    return false;
  }

 private:
  ordered_json Event(ordered_json choices) const {
    ordered_json e = ordered_json::object();
    e["id"] = id_;
    e["object"] = "chat.completion.chunk";
    e["created"] = meta_.created;
    e["model"] = model_;
    if (!meta_.service_tier.empty()) e["service_tier"] = meta_.service_tier;
    if (!meta_.system_fingerprint.empty()) e["system_fingerprint"] = meta_.system_fingerprint;
    e["choices"] = std::move(choices);
    return e;
  }

  static std::string Sse(const ordered_json& e) {
    return absl::StrCat("data: ", DumpJson(e), "\n\n");
  }

  void ChunkEvent(int i) {
    const v1::CompletionChunk& c = chunks_[i];
    const bool usage_only = c.content().empty() && c.tool_calls_size() == 0 &&
                            c.finish_reason().empty() && c.has_usage();
    if (usage_only) return;  // reported by the final usage event
    ordered_json delta = ordered_json::object();
    if (first_) {
      delta["role"] = "assistant";
      if (c.content().empty() && c.tool_calls_size() > 0) {
        delta["content"] = nullptr;
      } else {
        delta["content"] = c.content();
      }
    } else if (!c.content().empty()) {
      delta["content"] = c.content();
    }
    if (c.tool_calls_size() > 0) {
      ordered_json calls = ordered_json::array();
      for (const v1::ToolCallDelta& d : c.tool_calls()) {
        ordered_json call = ordered_json::object();
        call["index"] = d.index();
        if (!d.id().empty()) {
          call["id"] = d.id();
          call["type"] = "function";
        }
        ordered_json fn = ordered_json::object();
        if (!d.name().empty()) fn["name"] = d.name();
        fn["arguments"] = d.arguments();
        call["function"] = std::move(fn);
        calls.push_back(std::move(call));
      }
      delta["tool_calls"] = std::move(calls);
    }
    ordered_json choice = ordered_json::object();
    choice["index"] = 0;
    choice["delta"] = std::move(delta);
    choice["logprobs"] = nullptr;
    if (c.finish_reason().empty()) {
      choice["finish_reason"] = nullptr;
    } else {
      choice["finish_reason"] = c.finish_reason();
    }
    ordered_json e = Event(ordered_json::array({std::move(choice)}));
    if (include_usage_) e["usage"] = nullptr;
    Emit(Sse(e), i);
    first_ = false;
  }

  const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks_;
  const bool include_usage_;
  const StreamMeta meta_;
  std::string id_;
  std::string model_;
  v1::Usage usage_;
  int next_ = 0;
  bool first_ = true;
};

}  // namespace

std::unique_ptr<EventRenderer> StreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks, bool include_usage,
    const StreamMeta& meta) {
  return std::make_unique<ChatStreamRenderer>(chunks, include_usage, meta);
}

std::vector<std::string> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks, bool include_usage,
    const StreamMeta& meta) {
  return RenderAllText(*StreamRenderer(chunks, include_usage, meta));
}

std::string ErrorBody(absl::string_view message, absl::string_view type, absl::string_view code) {
  ordered_json error = ordered_json::object();
  error["message"] = std::string(message);
  error["type"] = std::string(type);
  error["param"] = nullptr;
  if (code.empty()) {
    error["code"] = nullptr;
  } else {
    error["code"] = std::string(code);
  }
  ordered_json body = ordered_json::object();
  body["error"] = std::move(error);
  return DumpJson(body);
}

absl::string_view ErrorType(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kAlreadyExists:
      return "invalid_request_error";
    case absl::StatusCode::kUnauthenticated:
      return "authentication_error";
    case absl::StatusCode::kPermissionDenied:
      return "permission_error";
    case absl::StatusCode::kResourceExhausted:
      return "rate_limit_error";
    case absl::StatusCode::kDeadlineExceeded:
      return "timeout_error";
    default:
      return "server_error";
  }
}

}  // namespace openai
}  // namespace provider
}  // namespace understudy
