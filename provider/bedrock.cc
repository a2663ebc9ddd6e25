#include "provider/bedrock.h"

#include <limits>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "provider/request_fields.h"

namespace understudy {
namespace provider {
namespace bedrock {
namespace {

using nlohmann::ordered_json;

// The one stop-reason table; FinishReasonFromStopReason reads it left to
// right, StopReasonFromFinishReason right to left (first row wins).
struct StopReasonRow {
  absl::string_view stop_reason;
  absl::string_view finish_reason;
};
constexpr StopReasonRow kStopReasons[] = {
    {"end_turn", "stop"},
    {"stop_sequence", "stop"},
    {"tool_use", "tool_calls"},
    {"max_tokens", "length"},
    {"content_filtered", "content_filter"},
    {"guardrail_intervened", "content_filter"},
};

// Bedrock's error types (HTTP `x-amzn-errortype`, a stream's
// `:exception-type`) and the status codes they stand for. ErrorType names
// the first row of a code.
struct ErrorRow {
  absl::string_view type;
  absl::StatusCode code;
};
constexpr ErrorRow kErrorTypes[] = {
    {"ValidationException", absl::StatusCode::kInvalidArgument},
    {"UnrecognizedClientException", absl::StatusCode::kUnauthenticated},
    {"AccessDeniedException", absl::StatusCode::kPermissionDenied},
    {"ResourceNotFoundException", absl::StatusCode::kNotFound},
    {"ThrottlingException", absl::StatusCode::kResourceExhausted},
    {"ModelTimeoutException", absl::StatusCode::kDeadlineExceeded},
    {"ConflictException", absl::StatusCode::kAborted},
    {"ServiceUnavailableException", absl::StatusCode::kUnavailable},
    {"InternalServerException", absl::StatusCode::kInternal},
    {"ServiceQuotaExceededException", absl::StatusCode::kResourceExhausted},
    {"ModelNotReadyException", absl::StatusCode::kUnavailable},
    {"ModelErrorException", absl::StatusCode::kInternal},
    {"ModelStreamErrorException", absl::StatusCode::kInternal},
    {"ExpiredTokenException", absl::StatusCode::kUnauthenticated},
    {"InvalidSignatureException", absl::StatusCode::kUnauthenticated},
};

constexpr absl::string_view kPayload = "element.payload";

void SetExtra(const Json& extra, v1::Message* message) {
  if (!extra.empty()) message->set_extra(DumpJson(extra));
}

// --- Requests ---------------------------------------------------------------

// What a content block is, by the member that names its kind.
enum class BlockKind { kText, kToolUse, kToolResult, kOther };

absl::Status CheckToolResult(const Json& result, const std::string& path) {
  if (!result.is_object()) return ExpectedError(path, "an object", result);
  std::string ignored;
  US_RETURN_IF_ERROR(ReadRequiredString(result, "toolUseId", path, &ignored));
  US_RETURN_IF_ERROR(ReadOptionalString(result, "status", path, &ignored));
  const std::string content_path = JoinPath(path, "content");
  const Json* content = FindMember(result, "content");
  constexpr absl::string_view kExpected = "an array of tool result content blocks";
  if (content == nullptr) return MissingError(content_path, kExpected);
  if (!content->is_array()) return ExpectedError(content_path, kExpected, *content);
  for (size_t i = 0; i < content->size(); ++i) {
    const Json& item = (*content)[i];
    const std::string item_path = JoinPath(content_path, i);
    if (!item.is_object()) return ExpectedError(item_path, "a content block object", item);
    US_RETURN_IF_ERROR(ReadOptionalString(item, "text", item_path, &ignored));
  }
  return absl::OkStatus();
}

// Checks the members of a content block that the codec reads, and returns
// its kind. Kinds it does not read (image, document, reasoningContent,
// cachePoint, kinds added later) are kOther, whatever they hold.
absl::StatusOr<BlockKind> CheckBlock(const Json& block, const std::string& path) {
  if (!block.is_object()) return ExpectedError(path, "a content block object", block);
  if (const Json* text = FindMember(block, "text")) {
    if (!text->is_string()) return ExpectedError(JoinPath(path, "text"), "a string", *text);
    return BlockKind::kText;
  }
  if (const Json* use = FindMember(block, "toolUse")) {
    const std::string use_path = JoinPath(path, "toolUse");
    if (!use->is_object()) return ExpectedError(use_path, "an object", *use);
    std::string ignored;
    US_RETURN_IF_ERROR(ReadRequiredString(*use, "toolUseId", use_path, &ignored));
    US_RETURN_IF_ERROR(ReadRequiredString(*use, "name", use_path, &ignored));
    if (FindMember(*use, "input") == nullptr) {
      return MissingError(JoinPath(use_path, "input"), "a JSON value");
    }
    return BlockKind::kToolUse;
  }
  if (const Json* result = FindMember(block, "toolResult")) {
    US_RETURN_IF_ERROR(CheckToolResult(*result, JoinPath(path, "toolResult")));
    return BlockKind::kToolResult;
  }
  return BlockKind::kOther;
}

bool IsPlainText(const Json& block) {
  return FindMember(block, "text") != nullptr && HasOnlyKeys(block, {"text"});
}

bool IsPlainToolUse(const Json& block) {
  const Json& use = block["toolUse"];
  return HasOnlyKeys(block, {"toolUse"}) && HasOnlyKeys(use, {"toolUseId", "name", "input"}) &&
         use["input"].is_object();
}

// A checked {toolUse} block as a tool call.
void ReadToolUse(const Json& block, v1::ToolCall* call) {
  const Json& use = block["toolUse"];
  call->set_id(use["toolUseId"].get<std::string>());
  call->set_name(use["name"].get<std::string>());
  call->set_arguments(DumpJson(use["input"]));
}

// A checked {toolResult} block as a "tool" message; `extra` holds the
// extras of the turn it came from, if it is the turn's first message.
void ReadToolResult(const Json& block, Json extra, v1::Message* tool) {
  const Json& result = block["toolResult"];
  tool->set_role("tool");
  tool->set_tool_call_id(result["toolUseId"].get<std::string>());
  const Json& content = result["content"];
  std::string text;
  for (const Json& item : content) {
    if (const Json* t = FindMember(item, "text")) {
      text += t->get<std::string>();
    } else if (const Json* json = FindMember(item, "json")) {
      text += DumpJson(*json);
    }
  }
  tool->set_content(std::move(text));
  if (!(content.size() == 1 && IsPlainText(content[0]))) extra["content"] = content;
  for (auto it = result.begin(); it != result.end(); ++it) {
    if (it->is_null() || it.key() == "toolUseId" || it.key() == "content") continue;
    extra[it.key()] = *it;
  }
  if (!HasOnlyKeys(block, {"toolResult"})) extra["block"] = block;
  SetExtra(extra, tool);
}

// A user turn: one "tool" message per toolResult block, then a "user"
// message with the other blocks (if any).
absl::Status ParseUserBlocks(const Json& blocks, const std::string& path, Json message_extra,
                             v1::CompletionRequest* request) {
  Json others = Json::array();
  bool seen_other = false;
  bool out_of_order = false;
  for (size_t i = 0; i < blocks.size(); ++i) {
    US_ASSIGN_OR_RETURN(BlockKind kind, CheckBlock(blocks[i], JoinPath(path, i)));
    if (kind != BlockKind::kToolResult) {
      seen_other = true;
      others.push_back(blocks[i]);
      continue;
    }
    out_of_order = out_of_order || seen_other;
    ReadToolResult(blocks[i], std::move(message_extra), request->add_messages());
    message_extra = Json::object();  // the turn's own extras go to its first message
  }
  if (others.empty() && !blocks.empty()) return absl::OkStatus();
  v1::Message* user = request->add_messages();
  user->set_role("user");
  std::string text;
  for (const Json& block : others) {
    if (const Json* t = FindMember(block, "text")) text += t->get<std::string>();
  }
  user->set_content(std::move(text));
  if (out_of_order) {
    message_extra["content"] = blocks;
  } else if (!(others.size() == 1 && IsPlainText(others[0]))) {
    message_extra["content"] = others;
  }
  SetExtra(message_extra, user);
  return absl::OkStatus();
}

// An assistant turn: text, then toolUse blocks as tool calls.
absl::Status ParseAssistantBlocks(const Json& blocks, const std::string& path, Json extra,
                                  v1::Message* message) {
  std::string text;
  bool exact = true;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Json& block = blocks[i];
    US_ASSIGN_OR_RETURN(BlockKind kind, CheckBlock(block, JoinPath(path, i)));
    if (kind == BlockKind::kText) {
      text += block["text"].get<std::string>();
      exact = exact && i == 0 && IsPlainText(block);
    } else if (kind == BlockKind::kToolUse) {
      ReadToolUse(block, message->add_tool_calls());
      exact = exact && IsPlainToolUse(block);
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
  CopyUnmapped(in, {}, {"role", "content"}, &extra);
  const std::string content_path = JoinPath(path, "content");
  const Json* content = FindMember(in, "content");
  constexpr absl::string_view kExpected = "an array of content blocks";
  if (content == nullptr) return MissingError(content_path, kExpected);
  if (!content->is_array()) return ExpectedError(content_path, kExpected, *content);
  if (role == "user") return ParseUserBlocks(*content, content_path, std::move(extra), request);
  v1::Message* m = request->add_messages();
  m->set_role(role);
  return ParseAssistantBlocks(*content, content_path, std::move(extra), m);
}

// `system`: an array of system content blocks ({text}, guardContent,
// cachePoint).
absl::Status ParseSystem(const Json& system, v1::CompletionRequest* request) {
  constexpr absl::string_view kExpected = "an array of system content blocks";
  if (!system.is_array()) return ExpectedError("system", kExpected, system);
  v1::Message* m = request->add_messages();
  m->set_role("system");
  std::string text;
  for (size_t i = 0; i < system.size(); ++i) {
    const Json& block = system[i];
    const std::string path = JoinPath("system", i);
    if (!block.is_object()) return ExpectedError(path, "a system content block object", block);
    std::string part;
    US_RETURN_IF_ERROR(ReadOptionalString(block, "text", path, &part));
    text += part;
  }
  m->set_content(std::move(text));
  if (!(system.size() == 1 && IsPlainText(system[0]))) {
    Json extra = Json::object();
    extra["content"] = system;
    SetExtra(extra, m);
  }
  return absl::OkStatus();
}

absl::Status ParseInferenceConfig(const Json& config, v1::CompletionRequest* request, Json* extra) {
  if (!config.is_object()) return ExpectedError("inferenceConfig", "an object", config);
  using Sampling = SamplingField::Kind;
  v1::SamplingParams params;
  US_RETURN_IF_ERROR(
      ReadSampling(config,
                   {{"maxTokens", Sampling::kMaxTokens},
                    {"temperature", Sampling::kTemperature},
                    {"topP", Sampling::kTopP},
                    {"stopSequences", Sampling::kStopArray}},
                   &params, "inferenceConfig"));
  if (params.ByteSizeLong() > 0) *request->mutable_params() = std::move(params);
  Json rest = Json::object();
  CopyUnmapped(config, {}, {"maxTokens", "temperature", "topP", "stopSequences"}, &rest);
  if (!rest.empty()) (*extra)["inferenceConfig"] = std::move(rest);
  return absl::OkStatus();
}

// One entry of toolConfig.tools; false when it is not a plain toolSpec.
absl::StatusOr<bool> ParseTool(const Json& tool, const std::string& path,
                               v1::CompletionRequest* request) {
  if (!tool.is_object()) return ExpectedError(path, "a tool object", tool);
  const Json* spec = FindMember(tool, "toolSpec");
  if (spec == nullptr) return false;  // cachePoint, systemTool, ...
  const std::string spec_path = JoinPath(path, "toolSpec");
  if (!spec->is_object()) return ExpectedError(spec_path, "an object", *spec);
  v1::ToolDefinition* out = request->add_tools();
  US_RETURN_IF_ERROR(ReadRequiredString(*spec, "name", spec_path, out->mutable_name()));
  US_RETURN_IF_ERROR(
      ReadOptionalString(*spec, "description", spec_path, out->mutable_description()));
  bool exact =
      HasOnlyKeys(tool, {"toolSpec"}) && HasOnlyKeys(*spec, {"name", "description", "inputSchema"});
  if (const Json* schema = FindMember(*spec, "inputSchema")) {
    const std::string schema_path = JoinPath(spec_path, "inputSchema");
    if (!schema->is_object()) return ExpectedError(schema_path, "an object", *schema);
    if (const Json* json = FindMember(*schema, "json")) out->set_parameters(DumpJson(*json));
    exact = exact && HasOnlyKeys(*schema, {"json"});
  }
  return exact;
}

absl::Status ParseToolConfig(const Json& config, v1::CompletionRequest* request, Json* extra) {
  if (!config.is_object()) return ExpectedError("toolConfig", "an object", config);
  Json rest = Json::object();
  if (const Json* tools = FindMember(config, "tools")) {
    if (!tools->is_array()) return ExpectedError("toolConfig.tools", "an array of tools", *tools);
    bool exact = true;
    for (size_t i = 0; i < tools->size(); ++i) {
      US_ASSIGN_OR_RETURN(bool plain,
                          ParseTool((*tools)[i], JoinPath("toolConfig.tools", i), request));
      exact = exact && plain;
    }
    if (!exact) rest["tools"] = *tools;
  }
  CopyUnmapped(config, {}, {"tools"}, &rest);
  if (!rest.empty()) (*extra)["toolConfig"] = std::move(rest);
  return absl::OkStatus();
}

// --- Answers ----------------------------------------------------------------

int64_t Total(const v1::Usage& usage) {
  int64_t total = 0;
  if (__builtin_add_overflow(usage.input_tokens(), usage.output_tokens(), &total)) {
    return usage.input_tokens() > 0 ? std::numeric_limits<int64_t>::max()
                                    : std::numeric_limits<int64_t>::min();
  }
  return total;
}

ordered_json UsageJson(const v1::Usage& usage) {
  ordered_json out = ordered_json::object();
  out["inputTokens"] = usage.input_tokens();
  out["outputTokens"] = usage.output_tokens();
  out["totalTokens"] = Total(usage);
  return out;
}

ordered_json MetricsJson() { return ordered_json{{"latencyMs", 0}}; }

// --- Streams ----------------------------------------------------------------

// What an event frame holds: its type and payload.
struct Event {
  std::string type;
  std::string payload;
};

// The status an exception frame stands for.
absl::Status StreamException(const std::string& type, absl::string_view payload) {
  const absl::StatusCode code = type.empty() ? absl::StatusCode::kUnknown : CodeFromErrorType(type);
  return absl::Status(code, absl::StrCat("upstream stream error (", type.empty() ? "untyped" : type,
                                         "): ", UpstreamErrorMessage(payload)));
}

// The event a frame holds, or the status it stands for when it reports an
// error.
absl::StatusOr<Event> ReadEvent(absl::string_view bytes) {
  absl::StatusOr<event_stream::Frame> frame = event_stream::DecodeFrame(bytes);
  if (!frame.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("element: ", frame.status().message()));
  }
  const std::string message_type = frame->StringHeader(":message-type");
  if (message_type == "event") {
    Event event{frame->StringHeader(":event-type"), std::move(frame->payload)};
    if (event.type.empty()) return MissingError("element.headers.:event-type", "a string");
    return event;
  }
  if (message_type == "exception") {
    return StreamException(frame->StringHeader(":exception-type"), frame->payload);
  }
  if (message_type == "error") {
    const std::string code = frame->StringHeader(":error-code");
    return absl::Status(code.empty() ? absl::StatusCode::kUnknown : CodeFromErrorType(code),
                        absl::StrCat("upstream stream error (", code.empty() ? "untyped" : code,
                                     "): ", frame->StringHeader(":error-message")));
  }
  if (message_type.empty()) return MissingError("element.headers.:message-type", "a string");
  return absl::InvalidArgumentError(absl::StrCat(
      "element.headers.:message-type: expected \"event\", \"exception\" or \"error\", got ",
      DumpJson(Json(message_type))));
}

absl::StatusOr<Json> PayloadObject(absl::string_view payload) {
  US_ASSIGN_OR_RETURN(Json root, ParseJson(payload, kPayload));
  if (!root.is_object()) return ExpectedError(kPayload, "an event object", root);
  return root;
}

absl::StatusOr<int64_t> ReadBlockIndex(const Json& payload) {
  const std::string path = JoinPath(kPayload, "contentBlockIndex");
  const Json* index = FindMember(payload, "contentBlockIndex");
  if (index == nullptr) return MissingError(path, "an integer");
  return JsonToInt64(*index, path);
}

// A member of `payload` that must be an object.
absl::StatusOr<const Json*> RequiredObject(const Json& object, absl::string_view key,
                                           absl::string_view parent) {
  const std::string path = JoinPath(parent, key);
  const Json* member = FindMember(object, key);
  if (member == nullptr) return MissingError(path, "an object");
  if (!member->is_object()) return ExpectedError(path, "an object", *member);
  return member;
}

// One frame of a rendered stream.
std::string JsonFrame(absl::string_view type, const ordered_json& payload) {
  return EventFrame(type, DumpJson(payload));
}

// RenderStream, a step at a time: the message's start, each text delta,
// each tool block's start, fragment and stop, then the message's end.
class ConverseStreamRenderer final : public SteppedRenderer {
 public:
  explicit ConverseStreamRenderer(
      const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks)
      : chunks_(chunks) {
    for (int i = 0; i < chunks_.size(); ++i) {
      const v1::CompletionChunk& c = chunks_[i];
      if (!c.finish_reason().empty()) finish_reason_ = c.finish_reason();
      if (c.has_usage()) usage_ = c.usage();
      has_text_ = has_text_ || !c.content().empty();
      for (const v1::ToolCallDelta& d : c.tool_calls()) tools_[d.index()].push_back({i, &d});
    }
    tool_ = tools_.begin();
  }

 protected:
  bool Step() override {
    switch (phase_) {
      case Phase::kStart:
        Emit(JsonFrame("messageStart", ordered_json{{"role", "assistant"}}));
        phase_ = has_text_ ? Phase::kText : Phase::kTools;
        return true;
      case Phase::kText:
        TextStep();
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
  struct Fragment {
    int chunk;
    const v1::ToolCallDelta* delta;
  };

  void TextStep() {
    if (next_ < chunks_.size()) {
      const int i = next_++;
      if (chunks_[i].content().empty()) return;
      ordered_json delta = ordered_json::object();
      delta["text"] = chunks_[i].content();
      Emit(JsonFrame("contentBlockDelta", BlockEvent("delta", std::move(delta))), i);
      return;
    }
    BlockStop();
    phase_ = Phase::kTools;
  }

  // One step of the current tool block: its start, a fragment, or its stop.
  void ToolStep() {
    const std::vector<Fragment>& fragments = tool_->second;
    if (fragment_ == -1) {
      std::string call_id;
      std::string name;
      for (const Fragment& f : fragments) {
        if (call_id.empty()) call_id = f.delta->id();
        if (name.empty()) name = f.delta->name();
      }
      ordered_json use = ordered_json::object();
      use["name"] = name;
      use["toolUseId"] = call_id;
      Emit(JsonFrame("contentBlockStart", BlockEvent("start", ordered_json{{"toolUse", use}})));
      fragment_ = 0;
      return;
    }
    if (fragment_ < static_cast<int>(fragments.size())) {
      const Fragment& f = fragments[fragment_++];
      const v1::ToolCallDelta& d = *f.delta;
      if (d.arguments().empty() && (!d.id().empty() || !d.name().empty())) return;
      ordered_json input = ordered_json::object();
      input["input"] = d.arguments();
      Emit(JsonFrame("contentBlockDelta", BlockEvent("delta", ordered_json{{"toolUse", input}})),
           f.chunk);
      return;
    }
    BlockStop();
    ++tool_;
    fragment_ = -1;
  }

  void End() {
    ordered_json stop = ordered_json::object();
    stop["stopReason"] = StopReasonFromFinishReason(finish_reason_, !tools_.empty());
    Emit(JsonFrame("messageStop", stop));
    ordered_json metadata = ordered_json::object();
    metadata["metrics"] = MetricsJson();
    metadata["usage"] = UsageJson(usage_);
    Emit(JsonFrame("metadata", metadata));
  }

  // {"contentBlockIndex": <the block's>, key: value}.
  ordered_json BlockEvent(const std::string& key, ordered_json value) const {
    ordered_json e = ordered_json::object();
    e["contentBlockIndex"] = index_;
    e[key] = std::move(value);
    return e;
  }
  void BlockStop() {
    Emit(JsonFrame("contentBlockStop", ordered_json{{"contentBlockIndex", index_++}}));
  }

  const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks_;
  std::string finish_reason_;
  v1::Usage usage_;
  bool has_text_ = false;
  // Tool index -> its fragments, in stream order.
  std::map<int, std::vector<Fragment>> tools_;
  Phase phase_ = Phase::kStart;
  int index_ = 0;  // The content block's.
  int next_ = 0;   // The next chunk whose text to send.
  std::map<int, std::vector<Fragment>>::const_iterator tool_;
  int fragment_ = -1;  // The next fragment of *tool_ (-1: its block not started).
};

// The events of an Anthropic stream renderer, each the `bytes` of a
// `chunk` frame.
class ChunkFrames final : public EventRenderer {
 public:
  explicit ChunkFrames(std::unique_ptr<EventRenderer> events) : events_(std::move(events)) {}

  std::optional<RenderedEvent> Next() override {
    std::optional<RenderedEvent> event = events_->Next();
    if (!event.has_value()) return std::nullopt;
    // The renderer makes whole events: one each.
    absl::StatusOr<std::vector<SseEvent>> parsed = ParseSse(event->text);
    const std::string data = parsed.ok() && parsed->size() == 1 ? (*parsed)[0].data : "";
    ordered_json payload = ordered_json::object();
    payload["bytes"] = absl::Base64Escape(data);
    event->text = JsonFrame("chunk", payload);
    return event;
  }

 private:
  std::unique_ptr<EventRenderer> events_;
};

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

absl::StatusOr<ParsedRequest> ParseRequest(absl::string_view body, absl::string_view model) {
  US_ASSIGN_OR_RETURN(Json root, ParseJson(body, "body"));
  if (!root.is_object()) return ExpectedError("body", "a JSON object", root);
  ParsedRequest out;
  v1::CompletionRequest& request = out.canonical;
  request.set_model(std::string(model));
  Json extra = Json::object();
  if (const Json* system = FindMember(root, "system")) {
    US_RETURN_IF_ERROR(ParseSystem(*system, &request));
  }
  const Json* messages = FindMember(root, "messages");
  if (messages == nullptr) return MissingError("messages", "an array of messages");
  if (!messages->is_array()) return ExpectedError("messages", "an array of messages", *messages);
  for (size_t i = 0; i < messages->size(); ++i) {
    US_RETURN_IF_ERROR(ParseMessage((*messages)[i], JoinPath("messages", i), &request));
  }
  if (const Json* config = FindMember(root, "inferenceConfig")) {
    US_RETURN_IF_ERROR(ParseInferenceConfig(*config, &request, &extra));
  }
  if (const Json* config = FindMember(root, "toolConfig")) {
    US_RETURN_IF_ERROR(ParseToolConfig(*config, &request, &extra));
  }
  CopyUnmapped(root, kIgnoredRequestFields, {"messages", "system", "inferenceConfig", "toolConfig"},
               &extra);
  if (!extra.empty()) request.set_extra(DumpJson(extra));
  return out;
}

absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseJson(body, "body"));
  if (!root.is_object()) return ExpectedError("body", "a JSON object", root);
  US_ASSIGN_OR_RETURN(const Json* output, RequiredObject(root, "output", ""));
  US_ASSIGN_OR_RETURN(const Json* message, RequiredObject(*output, "message", "output"));
  const Json* content = FindMember(*message, "content");
  constexpr absl::string_view kContent = "output.message.content";
  if (content == nullptr) return MissingError(kContent, "an array of content blocks");
  if (!content->is_array()) return ExpectedError(kContent, "an array of content blocks", *content);
  v1::CompletionResponse out;
  v1::Message* m = out.mutable_message();
  m->set_role("assistant");
  for (size_t i = 0; i < content->size(); ++i) {
    const Json& block = (*content)[i];
    US_ASSIGN_OR_RETURN(BlockKind kind, CheckBlock(block, JoinPath(kContent, i)));
    if (kind == BlockKind::kText) {
      m->mutable_content()->append(block["text"].get<std::string>());
    } else if (kind == BlockKind::kToolUse) {
      ReadToolUse(block, m->add_tool_calls());
    }
  }
  std::string stop_reason;
  US_RETURN_IF_ERROR(ReadOptionalString(root, "stopReason", "", &stop_reason));
  out.set_finish_reason(FinishReasonFromStopReason(stop_reason));
  if (const Json* usage = FindMember(root, "usage")) {
    US_RETURN_IF_ERROR(
        ReadUsage(*usage, "usage", "inputTokens", "outputTokens", out.mutable_usage()));
  }
  return out;
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::Decode(const SseEvent&) {
  return absl::UnimplementedError("Bedrock streams event stream frames, not server-sent events");
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::DecodeElement(
    absl::string_view frame) {
  US_ASSIGN_OR_RETURN(Event event, ReadEvent(frame));
  if (event.type != "contentBlockStart" && event.type != "contentBlockDelta" &&
      event.type != "messageStop" && event.type != "metadata") {
    return std::nullopt;  // messageStart, contentBlockStop, types added later
  }
  US_ASSIGN_OR_RETURN(Json payload, PayloadObject(event.payload));
  if (event.type == "contentBlockStart") return BlockStart(payload);
  if (event.type == "contentBlockDelta") return BlockDelta(payload);
  v1::CompletionChunk chunk;
  if (event.type == "messageStop") {
    std::string stop_reason;
    US_RETURN_IF_ERROR(ReadOptionalString(payload, "stopReason", kPayload, &stop_reason));
    chunk.set_finish_reason(FinishReasonFromStopReason(stop_reason));
    done_ = true;
    return chunk;
  }
  const Json* usage = FindMember(payload, "usage");
  if (usage == nullptr) return std::nullopt;
  US_RETURN_IF_ERROR(ReadUsage(*usage, JoinPath(kPayload, "usage"), "inputTokens", "outputTokens",
                               chunk.mutable_usage()));
  return chunk;
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::BlockStart(const Json& payload) {
  US_ASSIGN_OR_RETURN(int64_t block, ReadBlockIndex(payload));
  US_ASSIGN_OR_RETURN(const Json* start, RequiredObject(payload, "start", kPayload));
  const Json* use = FindMember(*start, "toolUse");
  if (use == nullptr) {  // toolResult, image, ...: nothing canonical
    tool_index_of_block_[block] = -1;
    return std::nullopt;
  }
  const std::string use_path = JoinPath(kPayload, "start.toolUse");
  if (!use->is_object()) return ExpectedError(use_path, "an object", *use);
  v1::CompletionChunk chunk;
  v1::ToolCallDelta* d = chunk.add_tool_calls();
  US_RETURN_IF_ERROR(ReadRequiredString(*use, "toolUseId", use_path, d->mutable_id()));
  US_RETURN_IF_ERROR(ReadRequiredString(*use, "name", use_path, d->mutable_name()));
  d->set_index(next_tool_index_);
  tool_index_of_block_[block] = next_tool_index_++;
  return chunk;
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::BlockDelta(const Json& payload) {
  US_ASSIGN_OR_RETURN(int64_t block, ReadBlockIndex(payload));
  const std::string delta_path = JoinPath(kPayload, "delta");
  US_ASSIGN_OR_RETURN(const Json* delta, RequiredObject(payload, "delta", kPayload));
  v1::CompletionChunk chunk;
  if (FindMember(*delta, "text") != nullptr) {
    US_RETURN_IF_ERROR(ReadRequiredString(*delta, "text", delta_path, chunk.mutable_content()));
    return chunk;
  }
  const Json* use = FindMember(*delta, "toolUse");
  if (use == nullptr) return std::nullopt;  // reasoningContent, citation, ...
  const std::string use_path = JoinPath(delta_path, "toolUse");
  if (!use->is_object()) return ExpectedError(use_path, "an object", *use);
  auto tool = tool_index_of_block_.find(block);
  if (tool == tool_index_of_block_.end()) {
    return absl::InvalidArgumentError(absl::StrCat(JoinPath(kPayload, "contentBlockIndex"),
                                                   ": toolUse delta for content block ", block,
                                                   ", which was never started"));
  }
  if (tool->second < 0) return std::nullopt;
  v1::ToolCallDelta* d = chunk.add_tool_calls();
  d->set_index(tool->second);
  US_RETURN_IF_ERROR(ReadRequiredString(*use, "input", use_path, d->mutable_arguments()));
  return chunk;
}

std::string RenderResponse(const v1::CompletionResponse& response) {
  const v1::Message& m = response.message();
  ordered_json content = ordered_json::array();
  if (!m.content().empty() || m.tool_calls_size() == 0) {
    content.push_back(ordered_json{{"text", m.content()}});
  }
  for (const v1::ToolCall& call : m.tool_calls()) {
    ordered_json use = ordered_json::object();
    use["input"] = ArgumentsObject(call.arguments());
    use["name"] = call.name();
    use["toolUseId"] = call.id();
    content.push_back(ordered_json{{"toolUse", std::move(use)}});
  }
  ordered_json message = ordered_json::object();
  message["content"] = std::move(content);
  message["role"] = "assistant";
  ordered_json body = ordered_json::object();
  body["metrics"] = MetricsJson();
  body["output"] = ordered_json{{"message", std::move(message)}};
  body["stopReason"] =
      StopReasonFromFinishReason(response.finish_reason(), m.tool_calls_size() > 0);
  body["usage"] = UsageJson(response.usage());
  return DumpJson(body);
}

std::unique_ptr<EventRenderer> StreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks) {
  return std::make_unique<ConverseStreamRenderer>(chunks);
}

std::vector<std::string> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks) {
  return RenderAllText(*StreamRenderer(chunks));
}

std::string EventFrame(absl::string_view event_type, absl::string_view payload) {
  event_stream::Frame frame;
  frame.headers = {{":event-type", std::string(event_type)},
                   {":content-type", std::string("application/json")},
                   {":message-type", std::string("event")}};
  frame.payload = std::string(payload);
  absl::StatusOr<std::string> bytes = event_stream::EncodeFrame(frame);
  if (bytes.ok()) return *std::move(bytes);
  return ExceptionFrame(
      "internalServerException",
      absl::StrCat("understudy cannot frame this event: ", bytes.status().message()));
}

std::string ExceptionFrame(absl::string_view exception_type, absl::string_view message) {
  event_stream::Frame frame;
  frame.headers = {{":exception-type", std::string(exception_type)},
                   {":content-type", std::string("application/json")},
                   {":message-type", std::string("exception")}};
  frame.payload = DumpJson(ordered_json{{"message", std::string(message)}});
  absl::StatusOr<std::string> bytes = event_stream::EncodeFrame(frame);
  // Only a message over 16 MiB fails to frame: say so in fewer words.
  return bytes.ok() ? *std::move(bytes) : ExceptionFrame(exception_type, "message too large");
}

std::string ErrorBody(const absl::Status& status) {
  ordered_json body = ordered_json::object();
  body["__type"] = std::string(ErrorType(status.code()));
  body["message"] = std::string(status.message());
  return DumpJson(body);
}

absl::string_view ErrorType(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kAlreadyExists:
      return "ValidationException";
    default:
      break;
  }
  for (const ErrorRow& row : kErrorTypes) {
    if (row.code == code) return row.type;
  }
  return "InternalServerException";
}

absl::StatusCode CodeFromErrorType(absl::string_view type) {
  // Spelled as the AWS SDKs read it: what precedes ',' and ':', what
  // follows '#'.
  type = type.substr(0, type.find(','));
  type = type.substr(0, type.find(':'));
  if (const size_t hash = type.find('#'); hash != absl::string_view::npos) {
    type = type.substr(hash + 1);
  }
  for (const ErrorRow& row : kErrorTypes) {
    if (absl::EqualsIgnoreCase(row.type, type)) return row.code;
  }
  return absl::StatusCode::kUnknown;
}

std::string UpstreamErrorMessage(absl::string_view body) {
  absl::StatusOr<Json> root = ParseJson(body, "body");
  if (!root.ok() || !root->is_object()) return "";
  for (absl::string_view key : {"message", "Message"}) {
    const Json* message = FindMember(*root, key);
    if (message != nullptr && message->is_string()) return message->get<std::string>();
  }
  return "";
}

absl::StatusOr<ParsedRequest> ParseInvokeRequest(absl::string_view body, absl::string_view model) {
  US_ASSIGN_OR_RETURN(Json root, ParseJson(body, "body"));
  if (!root.is_object()) return ExpectedError("body", "a JSON object", root);
  std::optional<Json> body_model;
  if (const Json* given = FindMember(root, "model")) body_model = *given;
  root["model"] = std::string(model);
  US_ASSIGN_OR_RETURN(ParsedRequest parsed, anthropic::ParseRequest(DumpJson(root)));
  parsed.stream = false;
  parsed.include_usage = false;
  if (body_model.has_value()) {
    Json extra = Json::object();
    if (!parsed.canonical.extra().empty()) {
      US_ASSIGN_OR_RETURN(extra, ParseJson(parsed.canonical.extra(), "extra"));
    }
    extra["model"] = *std::move(body_model);
    parsed.canonical.set_extra(DumpJson(extra));
  }
  return parsed;
}

absl::StatusOr<std::optional<v1::CompletionChunk>> InvokeStreamDecoder::Decode(const SseEvent&) {
  return absl::UnimplementedError("Bedrock streams event stream frames, not server-sent events");
}

absl::StatusOr<std::optional<v1::CompletionChunk>> InvokeStreamDecoder::DecodeElement(
    absl::string_view frame) {
  US_ASSIGN_OR_RETURN(Event event, ReadEvent(frame));
  if (event.type != "chunk") return std::nullopt;
  US_ASSIGN_OR_RETURN(Json payload, PayloadObject(event.payload));
  std::string encoded;
  US_RETURN_IF_ERROR(ReadRequiredString(payload, "bytes", kPayload, &encoded));
  SseEvent inner;
  if (!absl::Base64Unescape(encoded, &inner.data)) {
    return absl::InvalidArgumentError(
        absl::StrCat(JoinPath(kPayload, "bytes"), ": expected base64 text"));
  }
  return anthropic_.Decode(inner);
}

std::unique_ptr<EventRenderer> InvokeStreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks) {
  return std::make_unique<ChunkFrames>(anthropic::StreamRenderer(chunks));
}

}  // namespace bedrock
}  // namespace provider
}  // namespace understudy
