#include "provider/cohere.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "provider/derived_id.h"
#include "provider/request_fields.h"

namespace understudy {
namespace provider {
namespace cohere {
namespace {

using nlohmann::ordered_json;

// The one finish-reason table; FinishReasonFromCohere reads it left to
// right, FinishReasonToCohere right to left (first row wins).
struct FinishReasonRow {
  absl::string_view cohere;
  absl::string_view canonical;
};
constexpr FinishReasonRow kFinishReasons[] = {
    {"COMPLETE", "stop"},
    {"STOP_SEQUENCE", "stop"},
    {"MAX_TOKENS", "length"},
    {"TOOL_CALL", "tool_calls"},
};

// The content part types a role may send: the SDK's unions
// (SystemMessageV2ContentOneItem, Content, AssistantMessageV2ContentOneItem,
// ToolContent). "" fills an unused place.
struct RoleParts {
  absl::string_view role;
  absl::string_view types[2];
};
constexpr RoleParts kRoles[] = {
    {"system", {"text", ""}},
    {"user", {"text", "image_url"}},
    {"assistant", {"text", "thinking"}},
    {"tool", {"text", "document"}},
};

const RoleParts* FindRole(absl::string_view role) {
  for (const RoleParts& r : kRoles) {
    if (r.role == role) return &r;
  }
  return nullptr;
}

bool Allows(const RoleParts& parts, absl::string_view type) {
  return !type.empty() && (parts.types[0] == type || parts.types[1] == type);
}

// The types of `parts` as an error message lists them: "text" or
// "\"text\" or \"image_url\"".
std::string ExpectedTypes(const RoleParts& parts) {
  std::string out = absl::StrCat("\"", parts.types[0], "\"");
  if (!parts.types[1].empty()) absl::StrAppend(&out, " or \"", parts.types[1], "\"");
  return out;
}

// A text part with nothing but its type and text.
bool IsPlainText(const Json& part) { return HasOnlyKeys(part, {"type", "text"}); }

// Fails unless member `key` of `object` (at `path`) is an object.
absl::Status RequireObject(const Json& object, absl::string_view key, const std::string& path) {
  const std::string key_path = JoinPath(path, key);
  const Json* value = FindMember(object, key);
  if (value == nullptr) return MissingError(key_path, "an object");
  if (!value->is_object()) return ExpectedError(key_path, "an object", *value);
  return absl::OkStatus();
}

// What a part of `type` holds besides its type; text parts are checked by
// ParseTextParts.
absl::Status CheckPartBody(const Json& part, absl::string_view type, const std::string& path) {
  if (type == "thinking") {
    std::string ignored;
    return ReadRequiredString(part, "thinking", path, &ignored);
  }
  if (type == "image_url" || type == "document") return RequireObject(part, type, path);
  return absl::OkStatus();
}

// Checks that every part of `content` (when it is an array) is of a type
// its role may send, with what that type needs.
absl::Status CheckParts(const Json& content, const std::string& path, const RoleParts& parts) {
  if (!content.is_array()) return absl::OkStatus();  // ParseTextParts names it
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string part_path = JoinPath(path, i);
    if (!part.is_object()) return ExpectedError(part_path, "a content part object", part);
    std::string type;
    US_RETURN_IF_ERROR(ReadRequiredString(part, "type", part_path, &type));
    if (!Allows(parts, type)) {
      return absl::InvalidArgumentError(absl::StrCat(JoinPath(part_path, "type"), ": expected ",
                                                     ExpectedTypes(parts), ", got ",
                                                     DumpJson(Json(type))));
    }
    US_RETURN_IF_ERROR(CheckPartBody(part, type, part_path));
  }
  return absl::OkStatus();
}

// The `data` of the document parts of `content` (checked), one per line: a
// string as it is, anything else as compact JSON with sorted keys.
std::string DocumentText(const Json& content) {
  std::vector<std::string> lines;
  for (const Json& part : content) {
    const Json* type = FindMember(part, "type");
    const Json* document = FindMember(part, "document");
    if (type == nullptr || *type != "document" || document == nullptr) continue;
    const Json* data = FindMember(*document, "data");
    if (data == nullptr) continue;
    // Sorted keys: the same data in another key order is the same result.
    lines.push_back(data->is_string() ? data->get<std::string>()
                                      : DumpJson(nlohmann::json(*data)));
  }
  return absl::StrJoin(lines, "\n");
}

// The content of a request message of the role `parts` describes.
absl::Status ParseContent(const Json& in, const std::string& path, const RoleParts& parts,
                          v1::Message* message, Json* extra) {
  const std::string content_path = JoinPath(path, "content");
  const Json* content = FindMember(in, "content");
  if (content == nullptr) {
    if (parts.role == "assistant") return absl::OkStatus();  // tool calls alone
    return MissingError(content_path, "a string or an array of content parts");
  }
  US_RETURN_IF_ERROR(CheckParts(*content, content_path, parts));
  US_RETURN_IF_ERROR(
      ParseTextParts(content, content_path, {"text"}, &IsPlainText, "content", message, extra));
  if (parts.role == "tool" && message->content().empty() && content->is_array()) {
    message->set_content(DocumentText(*content));
  }
  return absl::OkStatus();
}

absl::Status ParseMessage(const Json& in, const std::string& path, v1::Message* message) {
  if (!in.is_object()) return ExpectedError(path, "a message object", in);
  std::string role;
  US_RETURN_IF_ERROR(ReadRequiredString(in, "role", path, &role));
  US_RETURN_IF_ERROR(CheckRole(role, path, {"system", "user", "assistant", "tool"}));
  const RoleParts* parts = FindRole(role);
  message->set_role(role);
  Json extra = Json::object();
  US_RETURN_IF_ERROR(ParseContent(in, path, *parts, message, &extra));
  const bool tool = role == "tool";
  const bool assistant = role == "assistant";
  if (tool) {
    US_RETURN_IF_ERROR(
        ReadRequiredString(in, "tool_call_id", path, message->mutable_tool_call_id()));
  }
  const Json* calls = FindMember(in, "tool_calls");
  if (assistant && calls != nullptr) {
    US_RETURN_IF_ERROR(ParseFunctionToolCalls(*calls, JoinPath(path, "tool_calls"), message, &extra));
  }
  for (auto it = in.begin(); it != in.end(); ++it) {
    const std::string& key = it.key();
    if (it->is_null() || key == "role" || key == "content" || (tool && key == "tool_call_id") ||
        (assistant && key == "tool_calls")) {
      continue;
    }
    extra[key] = *it;
  }
  if (!extra.empty()) message->set_extra(DumpJson(extra));
  return absl::OkStatus();
}

// A usage object's counts: `tokens` (what the model read and wrote), each
// count falling back to `billed_units`.
absl::Status ReadCohereUsage(const Json& usage, const std::string& path, v1::Usage* out) {
  if (!usage.is_object()) return ExpectedError(path, "a usage object", usage);
  for (absl::string_view key : {"billed_units", "tokens"}) {
    if (const Json* counts = FindMember(usage, key)) {
      US_RETURN_IF_ERROR(
          ReadUsage(*counts, JoinPath(path, key), "input_tokens", "output_tokens", out));
    }
  }
  return absl::OkStatus();
}

ordered_json UsageJson(const v1::Usage& usage) {
  ordered_json counts = ordered_json::object();
  counts["input_tokens"] = usage.input_tokens();
  counts["output_tokens"] = usage.output_tokens();
  ordered_json out = ordered_json::object();
  out["billed_units"] = counts;
  out["tokens"] = std::move(counts);
  return out;
}

// data.delta.message's member `key` when it is there, null when it is not
// (nor anything on the way); fails for a non-object on the way.
absl::StatusOr<const Json*> DeltaMember(const Json& data, absl::string_view key) {
  constexpr const Json* kAbsent = nullptr;
  const Json* delta = FindMember(data, "delta");
  if (delta == nullptr) return kAbsent;
  if (!delta->is_object()) return ExpectedError("data.delta", "an object", *delta);
  const Json* message = FindMember(*delta, "message");
  if (message == nullptr) return kAbsent;
  if (!message->is_object()) return ExpectedError("data.delta.message", "an object", *message);
  const Json* value = FindMember(*message, key);
  if (value == nullptr) return kAbsent;
  if (!value->is_object()) {
    return ExpectedError(absl::StrCat("data.delta.message.", key), "an object", *value);
  }
  return value;
}

absl::StatusOr<int64_t> ReadIndex(const Json& data, bool required) {
  const Json* index = FindMember(data, "index");
  if (index == nullptr) {
    if (required) return MissingError("data.index", "an integer");
    return int64_t{0};
  }
  return JsonToInt64(*index, "data.index");
}

// The function of a streamed tool call (at `path`): its name (`with_name`)
// and arguments fragment into `out`.
absl::Status ReadStreamedFunction(const Json& call, const std::string& path, bool with_name,
                                  v1::ToolCallDelta* out) {
  const Json* fn = FindMember(call, "function");
  if (fn == nullptr) return absl::OkStatus();
  const std::string fn_path = JoinPath(path, "function");
  if (!fn->is_object()) return ExpectedError(fn_path, "an object", *fn);
  if (with_name) US_RETURN_IF_ERROR(ReadOptionalString(*fn, "name", fn_path, out->mutable_name()));
  return ReadOptionalString(*fn, "arguments", fn_path, out->mutable_arguments());
}

// One whole event. The SDK reads each `data:` line alone and stops at one
// that contains "[DONE]": that text inside a string is written with an
// escape, the same JSON.
std::string Sse(absl::string_view type, const ordered_json& data) {
  return absl::StrCat("event: ", type, "\ndata: ",
                      absl::StrReplaceAll(DumpJson(data), {{"[DONE]", "\\u005bDONE]"}}), "\n\n");
}

// {"type": type, "index": index}, then `delta` {"message": {key: value}}
// when `key` is not empty.
ordered_json IndexedEvent(absl::string_view type, int index, absl::string_view key = "",
                          ordered_json value = nullptr) {
  ordered_json e = ordered_json::object();
  e["type"] = std::string(type);
  e["index"] = index;
  if (!key.empty()) {
    ordered_json message = ordered_json::object();
    message[std::string(key)] = std::move(value);
    e["delta"]["message"] = std::move(message);
  }
  return e;
}

}  // namespace

std::string FinishReasonFromCohere(absl::string_view finish_reason) {
  // Ignoring case, so that what FinishReasonToCohere upper-cases comes back
  // as it was ("complete" -> COMPLETE -> "stop" would not).
  for (const FinishReasonRow& row : kFinishReasons) {
    if (absl::EqualsIgnoreCase(row.cohere, finish_reason)) return std::string(row.canonical);
  }
  return absl::AsciiStrToLower(finish_reason);
}

std::string FinishReasonToCohere(absl::string_view finish_reason, bool has_tool_calls) {
  if (finish_reason.empty()) return has_tool_calls ? "TOOL_CALL" : "COMPLETE";
  for (const FinishReasonRow& row : kFinishReasons) {
    if (row.canonical == finish_reason) return std::string(row.cohere);
  }
  return absl::AsciiStrToUpper(finish_reason);
}

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
  US_RETURN_IF_ERROR(ReadSampling(root,
                                  {{"temperature", Sampling::kTemperature},
                                   {"p", Sampling::kTopP},
                                   {"max_tokens", Sampling::kMaxTokens},
                                   {"stop_sequences", Sampling::kStopArray},
                                   {"seed", Sampling::kSeed}},
                                  &params));
  if (params.ByteSizeLong() > 0) *request.mutable_params() = std::move(params);

  if (const Json* v = FindMember(root, "stream")) {
    if (!v->is_boolean()) return ExpectedError("stream", "a boolean", *v);
    out.stream = v->get<bool>();
  }
  out.include_usage = out.stream;

  CopyUnmapped(root, kIgnoredRequestFields,
               {"model", "messages", "tools", "temperature", "p", "max_tokens", "stop_sequences",
                "seed"},
               &extra);
  if (!extra.empty()) request.set_extra(DumpJson(extra));
  return out;
}

absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseJson(body, "body"));
  if (!root.is_object()) return ExpectedError("body", "a JSON object", root);
  v1::CompletionResponse out;
  US_RETURN_IF_ERROR(ReadOptionalString(root, "id", "", out.mutable_id()));
  const Json* message = FindMember(root, "message");
  if (message == nullptr) return MissingError("message", "a message object");
  if (!message->is_object()) return ExpectedError("message", "a message object", *message);
  v1::Message* m = out.mutable_message();
  m->set_role("assistant");
  Json dropped = Json::object();  // thinking parts and the like
  US_RETURN_IF_ERROR(ParseTextParts(FindMember(*message, "content"), "message.content", {"text"},
                                    &IsPlainText, "content", m, &dropped));
  if (const Json* calls = FindMember(*message, "tool_calls")) {
    US_RETURN_IF_ERROR(ParseFunctionToolCalls(*calls, "message.tool_calls", m, /*extra=*/nullptr));
  }
  std::string finish_reason;
  US_RETURN_IF_ERROR(ReadOptionalString(root, "finish_reason", "", &finish_reason));
  out.set_finish_reason(FinishReasonFromCohere(finish_reason));
  if (const Json* usage = FindMember(root, "usage")) {
    US_RETURN_IF_ERROR(ReadCohereUsage(*usage, "usage", out.mutable_usage()));
  }
  return out;
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::Decode(const SseEvent& event) {
  if (absl::StripAsciiWhitespace(event.data) == "[DONE]") {
    done_ = true;
    return std::nullopt;
  }
  if (done_) return absl::FailedPreconditionError("data: event after message-end");
  US_ASSIGN_OR_RETURN(Json data, ParseJson(event.data, "data"));
  if (!data.is_object()) return ExpectedError("data", "an event object", data);
  std::string type = event.event;
  US_RETURN_IF_ERROR(ReadOptionalString(data, "type", "data", &type));

  if (type == "message-start") {
    v1::CompletionChunk chunk;
    US_RETURN_IF_ERROR(ReadOptionalString(data, "id", "data", chunk.mutable_id()));
    return chunk;
  }
  if (type == "content-start" || type == "content-delta") return DecodeContent(type, data);
  if (type == "tool-call-start" || type == "tool-call-delta") return DecodeToolCall(type, data);
  if (type == "message-end") return DecodeEnd(data);
  // content-end, tool-plan-delta, tool-call-end, citation-start/-end,
  // debug, and types added later.
  return std::nullopt;
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::DecodeContent(
    const std::string& type, const Json& data) {
  US_ASSIGN_OR_RETURN(int64_t index, ReadIndex(data, /*required=*/false));
  US_ASSIGN_OR_RETURN(const Json* content, DeltaMember(data, "content"));
  const std::string path = "data.delta.message.content";
  std::string part_type;
  std::string text;
  if (content != nullptr) {
    US_RETURN_IF_ERROR(ReadOptionalString(*content, "type", path, &part_type));
    US_RETURN_IF_ERROR(ReadOptionalString(*content, "text", path, &text));
  }
  if (type == "content-start") {
    thinking_[index] = part_type == "thinking";
  }
  auto part = thinking_.find(index);
  if ((part != thinking_.end() && part->second) || text.empty()) return std::nullopt;
  v1::CompletionChunk chunk;
  chunk.set_content(std::move(text));
  return chunk;
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::DecodeToolCall(
    const std::string& type, const Json& data) {
  US_ASSIGN_OR_RETURN(int64_t index, ReadIndex(data, /*required=*/true));
  US_ASSIGN_OR_RETURN(const Json* call, DeltaMember(data, "tool_calls"));
  const std::string path = "data.delta.message.tool_calls";
  const bool start = type == "tool-call-start";
  v1::CompletionChunk chunk;
  v1::ToolCallDelta* d = chunk.add_tool_calls();
  if (start) {
    // A call started twice keeps its ordinal.
    const int ordinal = static_cast<int>(tool_index_.size());
    d->set_index(tool_index_.emplace(index, ordinal).first->second);
    if (call != nullptr) US_RETURN_IF_ERROR(ReadOptionalString(*call, "id", path, d->mutable_id()));
  } else {
    auto ordinal = tool_index_.find(index);
    if (ordinal == tool_index_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.index: tool-call-delta for tool call ", index, ", which was never started"));
    }
    d->set_index(ordinal->second);
  }
  if (call != nullptr) US_RETURN_IF_ERROR(ReadStreamedFunction(*call, path, start, d));
  return chunk;
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::DecodeEnd(const Json& data) {
  done_ = true;
  v1::CompletionChunk chunk;
  const Json* delta = FindMember(data, "delta");
  if (delta == nullptr) return chunk;
  if (!delta->is_object()) return ExpectedError("data.delta", "an object", *delta);
  std::string finish_reason;
  std::string error;
  US_RETURN_IF_ERROR(ReadOptionalString(*delta, "finish_reason", "data.delta", &finish_reason));
  US_RETURN_IF_ERROR(ReadOptionalString(*delta, "error", "data.delta", &error));
  if (!error.empty()) {
    const absl::StatusCode code = finish_reason == "TIMEOUT" ? absl::StatusCode::kDeadlineExceeded
                                                             : absl::StatusCode::kUnknown;
    return absl::Status(code, absl::StrCat("upstream stream error (",
                                           finish_reason.empty() ? "ERROR" : finish_reason,
                                           "): ", error));
  }
  chunk.set_finish_reason(FinishReasonFromCohere(finish_reason));
  if (const Json* usage = FindMember(*delta, "usage")) {
    US_RETURN_IF_ERROR(ReadCohereUsage(*usage, "data.delta.usage", chunk.mutable_usage()));
  }
  return chunk;
}

std::string RenderResponse(const v1::CompletionResponse& response) {
  const v1::Message& m = response.message();
  ordered_json message = ordered_json::object();
  message["role"] = "assistant";
  if (!m.content().empty() || m.tool_calls_size() == 0) {
    ordered_json content = ordered_json::array();
    if (!m.content().empty()) content.push_back({{"type", "text"}, {"text", m.content()}});
    message["content"] = std::move(content);
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
  ordered_json body = ordered_json::object();
  body["id"] = response.id();
  body["message"] = std::move(message);
  body["finish_reason"] = FinishReasonToCohere(response.finish_reason(), m.tool_calls_size() > 0);
  if (response.has_usage()) body["usage"] = UsageJson(response.usage());
  return DumpJson(body);
}

namespace {

// RenderStream, a step at a time: the message's start, the text part's
// start, each delta and end, each tool call's start, fragments and end,
// then the message's end.
class ChatStreamRenderer final : public SteppedRenderer {
 public:
  explicit ChatStreamRenderer(const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks)
      : chunks_(chunks) {
    for (int i = 0; i < chunks_.size(); ++i) {
      const v1::CompletionChunk& c = chunks_[i];
      if (id_.empty()) id_ = c.id();
      if (!c.finish_reason().empty()) {
        finish_reason_ = c.finish_reason();
        end_chunk_ = i;
      }
      if (c.has_usage()) {
        usage_ = c.usage();
        has_usage_ = true;
        end_chunk_ = i;
      }
      has_text_ = has_text_ || !c.content().empty();
      for (const v1::ToolCallDelta& d : c.tool_calls()) tools_[d.index()].push_back({&d, i});
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
        TextStep();
        return true;
      case Phase::kTools:
        if (tool_ != tools_.end()) {
          ToolStep();
          return true;
        }
        End();
        phase_ = Phase::kDone;
        return false;
      case Phase::kDone:
        return false;
    }
    return false;
  }

 private:
  enum class Phase { kStart, kText, kTools, kDone };
  struct Fragment {
    const v1::ToolCallDelta* delta;
    int chunk;
  };

  void Start() {
    ordered_json message = ordered_json::object();
    message["role"] = "assistant";
    message["content"] = ordered_json::array();
    message["tool_plan"] = "";
    message["tool_calls"] = ordered_json::array();
    message["citations"] = ordered_json::array();
    ordered_json e = ordered_json::object();
    e["id"] = id_;
    e["type"] = "message-start";
    e["delta"]["message"] = std::move(message);
    Emit(Sse("message-start", e));
  }

  // The text part's start, the next chunk's text, or the part's end.
  void TextStep() {
    if (next_ == -1) {
      Emit(Sse("content-start",
               IndexedEvent("content-start", 0, "content", {{"type", "text"}, {"text", ""}})));
      next_ = 0;
    } else if (next_ < chunks_.size()) {
      const int i = next_++;
      const std::string& text = chunks_[i].content();
      if (!text.empty()) {
        Emit(Sse("content-delta", IndexedEvent("content-delta", 0, "content", {{"text", text}})),
             i);
      }
    } else {
      Emit(Sse("content-end", IndexedEvent("content-end", 0)));
      phase_ = Phase::kTools;
    }
  }

  // One step of the current tool call: its start (with its first
  // fragment), a later fragment, or its end (then the next call).
  void ToolStep() {
    const std::vector<Fragment>& fragments = tool_->second;
    if (fragment_ == 0) {
      std::string call_id;
      std::string name;
      for (const Fragment& f : fragments) {
        if (call_id.empty()) call_id = f.delta->id();
        if (name.empty()) name = f.delta->name();
      }
      ordered_json call = ordered_json::object();
      call["id"] = call_id;
      call["type"] = "function";
      call["function"]["name"] = name;
      call["function"]["arguments"] = fragments[0].delta->arguments();
      Emit(Sse("tool-call-start", IndexedEvent("tool-call-start", ordinal_, "tool_calls", call)),
           fragments[0].chunk);
      fragment_ = 1;
    } else if (fragment_ < static_cast<int>(fragments.size())) {
      const Fragment& f = fragments[fragment_++];
      ordered_json call = ordered_json::object();
      call["function"]["arguments"] = f.delta->arguments();
      Emit(Sse("tool-call-delta", IndexedEvent("tool-call-delta", ordinal_, "tool_calls", call)),
           f.chunk);
    } else {
      Emit(Sse("tool-call-end", IndexedEvent("tool-call-end", ordinal_++)));
      ++tool_;
      fragment_ = 0;
    }
  }

  void End() {
    ordered_json delta = ordered_json::object();
    delta["finish_reason"] = FinishReasonToCohere(finish_reason_, !tools_.empty());
    if (has_usage_) delta["usage"] = UsageJson(usage_);
    ordered_json e = ordered_json::object();
    e["type"] = "message-end";
    e["delta"] = std::move(delta);
    Emit(Sse("message-end", e), end_chunk_);
  }

  const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks_;
  std::string id_;
  std::string finish_reason_;
  v1::Usage usage_;
  bool has_usage_ = false;
  bool has_text_ = false;
  int end_chunk_ = -1;  // The last chunk with a finish reason or usage.
  // Tool index -> its fragments, in stream order.
  std::map<int, std::vector<Fragment>> tools_;
  Phase phase_ = Phase::kStart;
  int next_ = -1;  // The next chunk's text (-1: the text part not started).
  std::map<int, std::vector<Fragment>>::const_iterator tool_;
  int fragment_ = 0;  // The next fragment of *tool_ (0: its start).
  int ordinal_ = 0;   // The index *tool_ is rendered with.
};

// A UUID-shaped id derived from `seed`.
std::string DerivedUuid(absl::string_view seed) {
  const std::string hex = DerivedId("", seed);
  return absl::StrCat(hex.substr(0, 8), "-", hex.substr(8, 4), "-", hex.substr(12, 4), "-",
                      hex.substr(16, 4), "-", hex.substr(20));
}

}  // namespace

std::unique_ptr<EventRenderer> StreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks) {
  return std::make_unique<ChatStreamRenderer>(chunks);
}

std::vector<std::string> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks) {
  return RenderAllText(*StreamRenderer(chunks));
}

std::string ErrorBody(const absl::Status& status) {
  ordered_json body = ordered_json::object();
  body["id"] = DerivedUuid(
      absl::StrCat(absl::StatusCodeToString(status.code()), "\n", status.message()));
  body["message"] = std::string(status.message());
  return DumpJson(body);
}

std::string ErrorMessage(absl::string_view body) {
  absl::StatusOr<Json> parsed = ParseJson(body, "body");
  if (!parsed.ok()) return "";
  std::string message;
  if (!ReadOptionalString(*parsed, "message", "", &message).ok()) return "";
  return message;
}

}  // namespace cohere
}  // namespace provider
}  // namespace understudy
