#include "provider/anthropic.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "provider/json_util.h"
#include "provider/request_fields.h"

namespace understudy {
namespace provider {
namespace anthropic {
namespace {

using nlohmann::ordered_json;

// The one stop-reason table; FinishReasonFromStopReason reads it left to
// right, StopReasonFromFinishReason right to left (first row wins).
struct StopReasonRow {
  absl::string_view stop_reason;
  absl::string_view finish_reason;
};
constexpr StopReasonRow kStopReasons[] = {
    {"end_turn", "stop"},     {"stop_sequence", "stop"},     {"tool_use", "tool_calls"},
    {"max_tokens", "length"}, {"refusal", "content_filter"},
};

// Error types of `error` events and the status codes they stand for.
struct ErrorRow {
  absl::string_view type;
  absl::StatusCode code;
};
constexpr ErrorRow kErrorTypes[] = {
    {"invalid_request_error", absl::StatusCode::kInvalidArgument},
    {"authentication_error", absl::StatusCode::kUnauthenticated},
    {"permission_error", absl::StatusCode::kPermissionDenied},
    {"not_found_error", absl::StatusCode::kNotFound},
    {"request_too_large", absl::StatusCode::kInvalidArgument},
    {"rate_limit_error", absl::StatusCode::kResourceExhausted},
    {"timeout_error", absl::StatusCode::kDeadlineExceeded},
    {"api_error", absl::StatusCode::kInternal},
    {"overloaded_error", absl::StatusCode::kUnavailable},
};

// Checks the fields of a content block that the codec reads, and returns
// its type.
absl::Status CheckBlock(const Json& block, const std::string& path, std::string* type) {
  if (!block.is_object()) return ExpectedError(path, "a content block object", block);
  US_RETURN_IF_ERROR(ReadRequiredString(block, "type", path, type));
  std::string ignored;
  if (*type == "text") {
    US_RETURN_IF_ERROR(ReadRequiredString(block, "text", path, &ignored));
  } else if (*type == "tool_use") {
    US_RETURN_IF_ERROR(ReadRequiredString(block, "id", path, &ignored));
    US_RETURN_IF_ERROR(ReadRequiredString(block, "name", path, &ignored));
    const Json* input = FindMember(block, "input");
    if (input == nullptr) return MissingError(JoinPath(path, "input"), "an object");
    if (!input->is_object()) return ExpectedError(JoinPath(path, "input"), "an object", *input);
  } else if (*type == "tool_result") {
    US_RETURN_IF_ERROR(ReadRequiredString(block, "tool_use_id", path, &ignored));
  }
  return absl::OkStatus();
}

bool IsPlainText(const Json& block) {
  const Json* type = FindMember(block, "type");
  return type != nullptr && *type == "text" && HasOnlyKeys(block, {"type", "text"});
}

// Content that is text: a string, or an array of blocks whose text blocks
// are concatenated. Anything but a string or a single plain text block also
// goes verbatim into extra["content"].
absl::Status ParseTextContent(const Json& content, const std::string& path, v1::Message* message,
                              Json* extra) {
  if (content.is_string()) {
    message->set_content(content.get<std::string>());
    return absl::OkStatus();
  }
  if (!content.is_array()) {
    return ExpectedError(path, "a string or an array of content blocks", content);
  }
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    std::string type;
    US_RETURN_IF_ERROR(CheckBlock(content[i], JoinPath(path, i), &type));
    if (type == "text") text += content[i]["text"].get<std::string>();
  }
  message->set_content(std::move(text));
  if (!(content.size() == 1 && IsPlainText(content[0]))) (*extra)["content"] = content;
  return absl::OkStatus();
}

void SetExtra(const Json& extra, v1::Message* message) {
  if (!extra.empty()) message->set_extra(DumpJson(extra));
}

// A user turn given as blocks: one "tool" message per tool_result block,
// then a "user" message with the other blocks (if any).
absl::Status ParseUserBlocks(const Json& blocks, const std::string& path, Json message_extra,
                             v1::CompletionRequest* request) {
  Json others = Json::array();
  bool seen_other = false;
  bool out_of_order = false;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::string block_path = JoinPath(path, i);
    std::string type;
    US_RETURN_IF_ERROR(CheckBlock(blocks[i], block_path, &type));
    if (type != "tool_result") {
      seen_other = true;
      others.push_back(blocks[i]);
      continue;
    }
    out_of_order = out_of_order || seen_other;
    const Json& block = blocks[i];
    v1::Message* tool = request->add_messages();
    tool->set_role("tool");
    tool->set_tool_call_id(block["tool_use_id"].get<std::string>());
    Json extra = std::move(message_extra);  // the turn's own extras, once
    message_extra = Json::object();
    if (const Json* content = FindMember(block, "content")) {
      US_RETURN_IF_ERROR(ParseTextContent(*content, JoinPath(block_path, "content"), tool, &extra));
    }
    for (auto it = block.begin(); it != block.end(); ++it) {
      if (it->is_null() || it.key() == "type" || it.key() == "tool_use_id" ||
          it.key() == "content") {
        continue;
      }
      extra[it.key()] = *it;
    }
    SetExtra(extra, tool);
  }
  if (others.empty() && !blocks.empty()) return absl::OkStatus();
  v1::Message* user = request->add_messages();
  user->set_role("user");
  Json extra = std::move(message_extra);
  std::string text;
  for (const Json& block : others) {
    if (block["type"] == "text") text += block["text"].get<std::string>();
  }
  user->set_content(std::move(text));
  if (out_of_order) {
    extra["content"] = blocks;
  } else if (!others.empty() && !(others.size() == 1 && IsPlainText(others[0]))) {
    extra["content"] = others;
  }
  SetExtra(extra, user);
  return absl::OkStatus();
}

// An assistant turn given as blocks: text, then tool_use blocks as tool calls.
absl::Status ParseAssistantBlocks(const Json& blocks, const std::string& path, Json extra,
                                  v1::Message* message) {
  std::string text;
  bool exact = true;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Json& block = blocks[i];
    std::string type;
    US_RETURN_IF_ERROR(CheckBlock(block, JoinPath(path, i), &type));
    if (type == "text") {
      text += block["text"].get<std::string>();
      exact = exact && i == 0 && IsPlainText(block);
    } else if (type == "tool_use") {
      v1::ToolCall* call = message->add_tool_calls();
      call->set_id(block["id"].get<std::string>());
      call->set_name(block["name"].get<std::string>());
      call->set_arguments(DumpJson(block["input"]));
      exact = exact && HasOnlyKeys(block, {"type", "id", "name", "input"});
    } else {
      exact = false;
    }
  }
  message->set_content(std::move(text));
  if (!exact) extra["content"] = blocks;
  SetExtra(extra, message);
  return absl::OkStatus();
}

absl::Status ParseMessage(const Json& in, const std::string& path, v1::CompletionRequest* request) {
  if (!in.is_object()) return ExpectedError(path, "a message object", in);
  std::string role;
  US_RETURN_IF_ERROR(ReadRequiredString(in, "role", path, &role));
  US_RETURN_IF_ERROR(CheckRole(role, path, {"user", "assistant"}));
  Json extra = Json::object();
  for (auto it = in.begin(); it != in.end(); ++it) {
    if (it->is_null() || it.key() == "role" || it.key() == "content") continue;
    extra[it.key()] = *it;
  }
  const std::string content_path = JoinPath(path, "content");
  const Json* content = FindMember(in, "content");
  if (content == nullptr) {
    return MissingError(content_path, "a string or an array of content blocks");
  }
  if (content->is_string()) {
    v1::Message* m = request->add_messages();
    m->set_role(role);
    m->set_content(content->get<std::string>());
    SetExtra(extra, m);
    return absl::OkStatus();
  }
  if (!content->is_array()) {
    return ExpectedError(content_path, "a string or an array of content blocks", *content);
  }
  if (role == "user") return ParseUserBlocks(*content, content_path, std::move(extra), request);
  v1::Message* m = request->add_messages();
  m->set_role(role);
  return ParseAssistantBlocks(*content, content_path, std::move(extra), m);
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
    US_RETURN_IF_ERROR(ReadOptionalString(tool, "type", tool_path, &type));
    if (!type.empty() && type != "custom") {
      exact = false;  // a server tool (web search, bash, ...): no canonical form
      continue;
    }
    v1::ToolDefinition* out = request->add_tools();
    US_RETURN_IF_ERROR(ReadRequiredString(tool, "name", tool_path, out->mutable_name()));
    US_RETURN_IF_ERROR(
        ReadOptionalString(tool, "description", tool_path, out->mutable_description()));
    if (const Json* schema = FindMember(tool, "input_schema")) {
      out->set_parameters(DumpJson(*schema));
    }
    exact = exact && type.empty() && HasOnlyKeys(tool, {"name", "description", "input_schema"});
  }
  if (!exact) (*extra)["tools"] = tools;
  return absl::OkStatus();
}


absl::StatusOr<int64_t> ReadBlockIndex(const Json& data) {
  const Json* index = FindMember(data, "index");
  if (index == nullptr) return MissingError("data.index", "an integer");
  return JsonToInt64(*index, "data.index");
}

absl::Status UpstreamError(const Json& data) {
  std::string type;
  std::string message;
  if (const Json* error = FindMember(data, "error")) {
    if (!error->is_object()) return ExpectedError("data.error", "an object", *error);
    US_RETURN_IF_ERROR(ReadOptionalString(*error, "type", "data.error", &type));
    US_RETURN_IF_ERROR(ReadOptionalString(*error, "message", "data.error", &message));
  }
  absl::StatusCode code = absl::StatusCode::kUnknown;
  for (const ErrorRow& row : kErrorTypes) {
    if (row.type == type) code = row.code;
  }
  return absl::Status(code, absl::StrCat("upstream stream error (", type.empty() ? "untyped" : type,
                                         "): ", message));
}

std::string Sse(absl::string_view name, const ordered_json& data) {
  return absl::StrCat("event: ", name, "\ndata: ", DumpJson(data), "\n\n");
}

ordered_json UsageJson(const v1::Usage& usage) {
  ordered_json out = ordered_json::object();
  out["input_tokens"] = usage.input_tokens();
  out["output_tokens"] = usage.output_tokens();
  return out;
}

}  // namespace

std::string FinishReasonFromStopReason(absl::string_view stop_reason) {
  for (const StopReasonRow& row : kStopReasons) {
    if (row.stop_reason == stop_reason) return std::string(row.finish_reason);
  }
  return std::string(stop_reason);
}

std::string StopReasonFromFinishReason(absl::string_view finish_reason, bool has_tool_calls) {
  if (finish_reason.empty()) return has_tool_calls ? "tool_use" : "end_turn";
  for (const StopReasonRow& row : kStopReasons) {
    if (row.finish_reason == finish_reason) return std::string(row.stop_reason);
  }
  return std::string(finish_reason);
}

absl::StatusOr<ParsedRequest> ParseRequest(absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseJson(body, "body"));
  if (!root.is_object()) return ExpectedError("body", "a JSON object", root);
  ParsedRequest out;
  v1::CompletionRequest& request = out.canonical;
  Json extra = Json::object();

  US_RETURN_IF_ERROR(ReadRequiredString(root, "model", "", request.mutable_model()));
  if (const Json* system = FindMember(root, "system")) {
    v1::Message* m = request.add_messages();
    m->set_role("system");
    Json system_extra = Json::object();
    US_RETURN_IF_ERROR(ParseTextContent(*system, "system", m, &system_extra));
    SetExtra(system_extra, m);
  }
  const Json* messages = FindMember(root, "messages");
  if (messages == nullptr) return MissingError("messages", "an array of messages");
  if (!messages->is_array()) return ExpectedError("messages", "an array of messages", *messages);
  for (size_t i = 0; i < messages->size(); ++i) {
    US_RETURN_IF_ERROR(ParseMessage((*messages)[i], JoinPath("messages", i), &request));
  }
  if (const Json* tools = FindMember(root, "tools")) {
    US_RETURN_IF_ERROR(ParseTools(*tools, &request, &extra));
  }

  using Sampling = SamplingField::Kind;
  v1::SamplingParams params;
  US_RETURN_IF_ERROR(ReadSampling(root,
                                  {{"max_tokens", Sampling::kMaxTokens},
                                   {"temperature", Sampling::kTemperature},
                                   {"top_p", Sampling::kTopP},
                                   {"stop_sequences", Sampling::kStopArray}},
                                  &params));
  if (params.ByteSizeLong() > 0) *request.mutable_params() = std::move(params);

  if (const Json* v = FindMember(root, "stream")) {
    if (!v->is_boolean()) return ExpectedError("stream", "a boolean", *v);
    out.stream = v->get<bool>();
  }
  out.include_usage = out.stream;

  CopyUnmapped(root, kIgnoredRequestFields,
               {"model", "system", "messages", "tools", "max_tokens", "temperature", "top_p",
                "stop_sequences"},
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
  const Json* content = FindMember(root, "content");
  if (content == nullptr) return MissingError("content", "an array of content blocks");
  if (!content->is_array()) {
    return ExpectedError("content", "an array of content blocks", *content);
  }
  v1::Message* m = out.mutable_message();
  m->set_role("assistant");
  for (size_t i = 0; i < content->size(); ++i) {
    const Json& block = (*content)[i];
    std::string type;
    US_RETURN_IF_ERROR(CheckBlock(block, JoinPath("content", i), &type));
    if (type == "text") {
      m->mutable_content()->append(block["text"].get<std::string>());
    } else if (type == "tool_use") {
      v1::ToolCall* call = m->add_tool_calls();
      call->set_id(block["id"].get<std::string>());
      call->set_name(block["name"].get<std::string>());
      call->set_arguments(DumpJson(block["input"]));
    }
  }
  std::string stop_reason;
  US_RETURN_IF_ERROR(ReadOptionalString(root, "stop_reason", "", &stop_reason));
  out.set_finish_reason(FinishReasonFromStopReason(stop_reason));
  if (const Json* usage = FindMember(root, "usage")) {
    US_RETURN_IF_ERROR(ReadUsage(*usage, "usage", "input_tokens", "output_tokens", out.mutable_usage()));
  }
  return out;
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::Decode(const SseEvent& event) {
  if (done_) return absl::FailedPreconditionError("data: event after message_stop");
  US_ASSIGN_OR_RETURN(Json data, ParseJson(event.data, "data"));
  if (!data.is_object()) return ExpectedError("data", "an event object", data);
  std::string type = event.event;
  US_RETURN_IF_ERROR(ReadOptionalString(data, "type", "data", &type));

  v1::CompletionChunk chunk;
  if (type == "message_start") {
    const Json* message = FindMember(data, "message");
    if (message == nullptr) return MissingError("data.message", "an object");
    if (!message->is_object()) return ExpectedError("data.message", "an object", *message);
    US_RETURN_IF_ERROR(ReadOptionalString(*message, "id", "data.message", chunk.mutable_id()));
    US_RETURN_IF_ERROR(
        ReadOptionalString(*message, "model", "data.message", chunk.mutable_model()));
    if (const Json* usage = FindMember(*message, "usage")) {
      US_RETURN_IF_ERROR(ReadUsage(*usage, "data.message.usage", "input_tokens", "output_tokens", chunk.mutable_usage()));
      input_tokens_ = chunk.usage().input_tokens();
    }
    return chunk;
  }
  if (type == "content_block_start") {
    US_ASSIGN_OR_RETURN(int64_t block_index, ReadBlockIndex(data));
    const Json* block = FindMember(data, "content_block");
    if (block == nullptr) return MissingError("data.content_block", "an object");
    std::string block_type;
    US_RETURN_IF_ERROR(CheckBlock(*block, "data.content_block", &block_type));
    if (block_type == "text") {
      tool_index_of_block_[block_index] = -1;
      const std::string& text = (*block)["text"].get_ref<const std::string&>();
      if (text.empty()) return std::nullopt;
      chunk.set_content(text);
      return chunk;
    }
    if (block_type != "tool_use") {
      // thinking, server_tool_use, ...: no canonical form; their deltas
      // are dropped too.
      tool_index_of_block_[block_index] = -1;
      return std::nullopt;
    }
    const int tool_index = next_tool_index_++;
    tool_index_of_block_[block_index] = tool_index;
    v1::ToolCallDelta* d = chunk.add_tool_calls();
    d->set_index(tool_index);
    d->set_id((*block)["id"].get<std::string>());
    d->set_name((*block)["name"].get<std::string>());
    // Streams start tool_use blocks with an empty input and send it in
    // input_json_delta fragments; a non-empty one is the first fragment.
    if (!(*block)["input"].empty()) d->set_arguments(DumpJson((*block)["input"]));
    return chunk;
  }
  if (type == "content_block_delta") {
    US_ASSIGN_OR_RETURN(int64_t block_index, ReadBlockIndex(data));
    const Json* delta = FindMember(data, "delta");
    if (delta == nullptr) return MissingError("data.delta", "an object");
    if (!delta->is_object()) return ExpectedError("data.delta", "an object", *delta);
    std::string delta_type;
    US_RETURN_IF_ERROR(ReadRequiredString(*delta, "type", "data.delta", &delta_type));
    if (delta_type == "text_delta") {
      US_RETURN_IF_ERROR(ReadRequiredString(*delta, "text", "data.delta", chunk.mutable_content()));
      return chunk;
    }
    if (delta_type != "input_json_delta") return std::nullopt;
    auto tool = tool_index_of_block_.find(block_index);
    if (tool == tool_index_of_block_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("data.index: input_json_delta for content block ", block_index,
                       ", which was never started"));
    }
    if (tool->second < 0) return std::nullopt;  // the input of a server tool
    v1::ToolCallDelta* d = chunk.add_tool_calls();
    d->set_index(tool->second);
    US_RETURN_IF_ERROR(
        ReadRequiredString(*delta, "partial_json", "data.delta", d->mutable_arguments()));
    return chunk;
  }
  if (type == "message_delta") {
    if (const Json* delta = FindMember(data, "delta")) {
      if (!delta->is_object()) return ExpectedError("data.delta", "an object", *delta);
      std::string stop_reason;
      US_RETURN_IF_ERROR(ReadOptionalString(*delta, "stop_reason", "data.delta", &stop_reason));
      chunk.set_finish_reason(FinishReasonFromStopReason(stop_reason));
    }
    if (const Json* usage = FindMember(data, "usage")) {
      v1::Usage* u = chunk.mutable_usage();
      u->set_input_tokens(input_tokens_);
      US_RETURN_IF_ERROR(ReadUsage(*usage, "data.usage", "input_tokens", "output_tokens", u));
    }
    return chunk;
  }
  if (type == "message_stop") {
    done_ = true;
    return std::nullopt;
  }
  if (type == "error") return UpstreamError(data);
  return std::nullopt;  // ping, content_block_stop, and types added later
}

absl::StatusOr<std::string> RenderResponse(const v1::CompletionResponse& response) {
  const v1::Message& m = response.message();
  ordered_json content = ordered_json::array();
  if (!m.content().empty()) {
    ordered_json text = ordered_json::object();
    text["type"] = "text";
    text["text"] = m.content();
    content.push_back(std::move(text));
  }
  for (int i = 0; i < m.tool_calls_size(); ++i) {
    const v1::ToolCall& call = m.tool_calls(i);
    ordered_json input = ordered_json::object();
    if (!call.arguments().empty()) {
      const std::string path = absl::StrCat("message.tool_calls[", i, "].arguments");
      absl::StatusOr<Json> parsed = ParseJson(call.arguments(), path);
      if (parsed.ok() && !parsed->is_object())
        parsed = ExpectedError(path, "a JSON object", *parsed);
      if (!parsed.ok()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "cannot render as an Anthropic tool_use block: ", parsed.status().message()));
      }
      input = *std::move(parsed);
    }
    ordered_json block = ordered_json::object();
    block["type"] = "tool_use";
    block["id"] = call.id();
    block["name"] = call.name();
    block["input"] = std::move(input);
    content.push_back(std::move(block));
  }
  ordered_json body = ordered_json::object();
  body["id"] = response.id();
  body["type"] = "message";
  body["role"] = "assistant";
  body["model"] = response.model();
  body["content"] = std::move(content);
  body["stop_reason"] =
      StopReasonFromFinishReason(response.finish_reason(), m.tool_calls_size() > 0);
  body["stop_sequence"] = nullptr;
  body["usage"] = UsageJson(response.usage());
  return DumpJson(body);
}

namespace {

// RenderStream, a step at a time: the message's start, then each text
// delta, each tool block's start, fragment and stop, then its end.
class MessagesStreamRenderer final : public SteppedRenderer {
 public:
  explicit MessagesStreamRenderer(
      const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks)
      : chunks_(chunks) {
    for (const v1::CompletionChunk& c : chunks_) {
      if (id_.empty()) id_ = c.id();
      if (model_.empty()) model_ = c.model();
      if (!c.finish_reason().empty()) finish_reason_ = c.finish_reason();
      if (c.has_usage()) usage_ = c.usage();
      has_text_ = has_text_ || !c.content().empty();
      for (const v1::ToolCallDelta& d : c.tool_calls()) tools_[d.index()].push_back(&d);
    }
    tool_ = tools_.begin();
  }

 protected:
  bool Step() override {
    switch (phase_) {
      case Phase::kStart:
        Start();
        phase_ = has_text_ ? Phase::kText : Phase::kTools;
        return true;
      case Phase::kText:
        if (next_ == -1) {
          ordered_json block = ordered_json::object();
          block["type"] = "text";
          block["text"] = "";
          BlockStart(std::move(block));
          next_ = 0;
        } else if (next_ < chunks_.size()) {
          const v1::CompletionChunk& c = chunks_[next_++];
          if (!c.content().empty()) BlockDelta("text_delta", "text", c.content());
        } else {
          BlockStop();
          phase_ = Phase::kTools;
        }
        return true;
      case Phase::kTools:
        if (tool_ == tools_.end()) {
          End();
          phase_ = Phase::kDone;
          return false;
        }
        ToolStep();
        return true;
      case Phase::kDone:
        return false;
    }
    return false;
  }

 private:
  enum class Phase { kStart, kText, kTools, kDone };

  void Start() {
    v1::Usage start_usage;
    if (!chunks_.empty() && chunks_[0].has_usage()) {
      start_usage = chunks_[0].usage();
    } else {
      start_usage.set_input_tokens(usage_.input_tokens());
    }
    ordered_json message = ordered_json::object();
    message["id"] = id_;
    message["type"] = "message";
    message["role"] = "assistant";
    message["model"] = model_;
    message["content"] = ordered_json::array();
    message["stop_reason"] = nullptr;
    message["stop_sequence"] = nullptr;
    message["usage"] = UsageJson(start_usage);
    ordered_json start = ordered_json::object();
    start["type"] = "message_start";
    start["message"] = std::move(message);
    Emit(Sse("message_start", start));
    Emit(Sse("ping", ordered_json{{"type", "ping"}}));
  }

  // One step of the current tool block: its start, a fragment, or its
  // stop (then the next block).
  void ToolStep() {
    const std::vector<const v1::ToolCallDelta*>& fragments = tool_->second;
    if (fragment_ == -1) {
      std::string call_id;
      std::string name;
      for (const v1::ToolCallDelta* d : fragments) {
        if (call_id.empty()) call_id = d->id();
        if (name.empty()) name = d->name();
      }
      ordered_json block = ordered_json::object();
      block["type"] = "tool_use";
      block["id"] = call_id;
      block["name"] = name;
      block["input"] = ordered_json::object();
      BlockStart(std::move(block));
      fragment_ = 0;
      return;
    }
    if (fragment_ < static_cast<int>(fragments.size())) {
      const v1::ToolCallDelta* d = fragments[fragment_++];
      const bool announces_only =
          d->arguments().empty() && (!d->id().empty() || !d->name().empty());
      if (!announces_only) BlockDelta("input_json_delta", "partial_json", d->arguments());
      return;
    }
    BlockStop();
    ++tool_;
    fragment_ = -1;
  }

  void End() {
    ordered_json delta = ordered_json::object();
    delta["stop_reason"] = StopReasonFromFinishReason(finish_reason_, !tools_.empty());
    delta["stop_sequence"] = nullptr;
    ordered_json end_usage = ordered_json::object();
    end_usage["output_tokens"] = usage_.output_tokens();
    ordered_json message_delta = ordered_json::object();
    message_delta["type"] = "message_delta";
    message_delta["delta"] = std::move(delta);
    message_delta["usage"] = std::move(end_usage);
    Emit(Sse("message_delta", message_delta));
    Emit(Sse("message_stop", ordered_json{{"type", "message_stop"}}));
  }

  void BlockStart(ordered_json block) {
    ordered_json e = ordered_json::object();
    e["type"] = "content_block_start";
    e["index"] = index_;
    e["content_block"] = std::move(block);
    Emit(Sse("content_block_start", e));
  }
  void BlockDelta(absl::string_view type, absl::string_view key, const std::string& value) {
    ordered_json delta = ordered_json::object();
    delta["type"] = std::string(type);
    delta[std::string(key)] = value;
    ordered_json e = ordered_json::object();
    e["type"] = "content_block_delta";
    e["index"] = index_;
    e["delta"] = std::move(delta);
    Emit(Sse("content_block_delta", e));
  }
  void BlockStop() {
    ordered_json e = ordered_json::object();
    e["type"] = "content_block_stop";
    e["index"] = index_++;
    Emit(Sse("content_block_stop", e));
  }

  const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks_;
  std::string id_;
  std::string model_;
  std::string finish_reason_;
  v1::Usage usage_;
  bool has_text_ = false;
  // Tool index -> its fragments, in stream order.
  std::map<int, std::vector<const v1::ToolCallDelta*>> tools_;
  Phase phase_ = Phase::kStart;
  int index_ = 0;   // The content block's.
  int next_ = -1;   // The next chunk's text (-1: the text block not started).
  std::map<int, std::vector<const v1::ToolCallDelta*>>::const_iterator tool_;
  int fragment_ = -1;  // The next fragment of *tool_ (-1: its block not started).
};

}  // namespace

std::unique_ptr<EventRenderer> StreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks) {
  return std::make_unique<MessagesStreamRenderer>(chunks);
}

std::vector<std::string> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks) {
  return RenderAllText(*StreamRenderer(chunks));
}

std::string ErrorBody(absl::string_view message, absl::string_view type) {
  ordered_json error = ordered_json::object();
  error["type"] = std::string(type);
  error["message"] = std::string(message);
  ordered_json body = ordered_json::object();
  body["type"] = "error";
  body["error"] = std::move(error);
  return DumpJson(body);
}

absl::string_view ErrorType(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kAlreadyExists:
      return "invalid_request_error";
    case absl::StatusCode::kUnauthenticated:
      return "authentication_error";
    case absl::StatusCode::kPermissionDenied:
      return "permission_error";
    case absl::StatusCode::kNotFound:
      return "not_found_error";
    case absl::StatusCode::kResourceExhausted:
      return "rate_limit_error";
    case absl::StatusCode::kDeadlineExceeded:
      return "timeout_error";
    case absl::StatusCode::kUnavailable:
      return "overloaded_error";
    default:
      return "api_error";
  }
}

}  // namespace anthropic
}  // namespace provider
}  // namespace understudy
