// The Ollama wire format (see ollama.h for the mapping of its shapes).
#include "provider/ollama.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "nlohmann/json.hpp"
#include "provider/derived_id.h"
#include "provider/embeddings.h"
#include "provider/json_util.h"
#include "provider/request_fields.h"

namespace understudy {
namespace provider {
namespace ollama {
namespace {

using nlohmann::ordered_json;
// The extra objects: sorted keys, so that the same fields in another order
// give the same bytes.
using Extra = nlohmann::json;

constexpr absl::string_view kEmbeddingsOperation = "embeddings";
// What a whole answer must hold for its endpoint to be known.
constexpr absl::string_view kAnswerExpected =
    "a message object (chat), or a `response` string (generate) or an `embeddings` array "
    "(embed)";

void SetExtra(const Extra& extra, std::string* out) {
  if (!extra.empty()) *out = DumpJson(extra);
}

absl::StatusOr<Json> ParseRoot(absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseJson(body, "body"));
  if (!root.is_object()) return ExpectedError("body", "a JSON object", root);
  return root;
}

// ---- Requests ----

// One entry of `tool_calls` ({id?, function: {index?, name, arguments}},
// request or answer) into `out`. Returns whether the canonical call
// reproduces it exactly, at `position` in its array.
absl::StatusOr<bool> ParseToolCall(const Json& call, const std::string& path, size_t position,
                                   v1::ToolCall* out) {
  if (!call.is_object()) return ExpectedError(path, "a tool call object", call);
  US_RETURN_IF_ERROR(ReadOptionalString(call, "id", path, out->mutable_id()));
  const std::string fn_path = JoinPath(path, "function");
  const Json* fn = FindMember(call, "function");
  if (fn == nullptr) return MissingError(fn_path, "an object");
  if (!fn->is_object()) return ExpectedError(fn_path, "an object", *fn);
  US_RETURN_IF_ERROR(ReadRequiredString(*fn, "name", fn_path, out->mutable_name()));
  const Json* args = FindMember(*fn, "arguments");
  if (args != nullptr && !args->is_object()) {
    return ExpectedError(JoinPath(fn_path, "arguments"), "an object", *args);
  }
  out->set_arguments(args == nullptr ? "{}" : DumpJson(*args));
  bool exact =
      HasOnlyKeys(call, {"id", "function"}) && HasOnlyKeys(*fn, {"index", "name", "arguments"});
  if (const Json* index = FindMember(*fn, "index")) {
    US_ASSIGN_OR_RETURN(int64_t n, JsonToInt64(*index, JoinPath(fn_path, "index")));
    exact = exact && n == static_cast<int64_t>(position);
  }
  return exact;
}

// `tool_calls` (at `path`) into `message`; `*exact` as ParseToolCall's.
absl::Status ParseToolCalls(const Json& calls, const std::string& path, v1::Message* message,
                            bool* exact) {
  if (!calls.is_array()) return ExpectedError(path, "an array of tool calls", calls);
  *exact = true;
  for (size_t i = 0; i < calls.size(); ++i) {
    US_ASSIGN_OR_RETURN(bool one,
                        ParseToolCall(calls[i], JoinPath(path, i), i, message->add_tool_calls()));
    *exact = *exact && one;
  }
  return absl::OkStatus();
}

absl::Status ParseMessage(const Json& in, const std::string& path, v1::Message* out) {
  if (!in.is_object()) return ExpectedError(path, "a message object", in);
  US_RETURN_IF_ERROR(ReadRequiredString(in, "role", path, out->mutable_role()));
  US_RETURN_IF_ERROR(CheckRole(out->role(), path, {"system", "user", "assistant", "tool"}));
  US_RETURN_IF_ERROR(ReadOptionalString(in, "content", path, out->mutable_content()));
  US_RETURN_IF_ERROR(ReadOptionalString(in, "tool_name", path, out->mutable_name()));
  Extra extra = Extra::object();
  if (const Json* calls = FindMember(in, "tool_calls")) {
    bool exact = true;
    US_RETURN_IF_ERROR(ParseToolCalls(*calls, JoinPath(path, "tool_calls"), out, &exact));
    if (!exact) extra["tool_calls"] = Extra(*calls);
  }
  CopyUnmapped(in, {}, {"role", "content", "tool_calls", "tool_name"}, &extra);
  SetExtra(extra, out->mutable_extra());
  return absl::OkStatus();
}

absl::Status ParseTools(const Json& tools, v1::CompletionRequest* request, Extra* extra) {
  if (!tools.is_array()) return ExpectedError("tools", "an array of tools", tools);
  bool exact = true;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& tool = tools[i];
    const std::string path = JoinPath("tools", i);
    if (!tool.is_object()) return ExpectedError(path, "a tool object", tool);
    std::string type;
    US_RETURN_IF_ERROR(ReadOptionalString(tool, "type", path, &type));
    if (type != "function") {
      exact = false;
      if (!type.empty()) continue;  // a kind the canonical tools cannot hold
    }
    const std::string fn_path = JoinPath(path, "function");
    const Json* fn = FindMember(tool, "function");
    if (fn == nullptr) return MissingError(fn_path, "an object");
    if (!fn->is_object()) return ExpectedError(fn_path, "an object", *fn);
    v1::ToolDefinition* out = request->add_tools();
    US_RETURN_IF_ERROR(ReadRequiredString(*fn, "name", fn_path, out->mutable_name()));
    US_RETURN_IF_ERROR(ReadOptionalString(*fn, "description", fn_path, out->mutable_description()));
    if (const Json* parameters = FindMember(*fn, "parameters")) {
      out->set_parameters(DumpJson(*parameters));
    }
    exact = exact && HasOnlyKeys(tool, {"type", "function"}) &&
            HasOnlyKeys(*fn, {"name", "description", "parameters"});
  }
  if (!exact) (*extra)["tools"] = Extra(tools);
  return absl::OkStatus();
}

// `options`: the sampling parameters into params, the rest into
// extra["options"].
absl::Status ReadOptions(const Json& root, v1::CompletionRequest* request, Extra* extra) {
  const Json* options = FindMember(root, "options");
  if (options == nullptr) return absl::OkStatus();
  if (!options->is_object()) return ExpectedError("options", "an object", *options);
  using Sampling = SamplingField::Kind;
  v1::SamplingParams params;
  US_RETURN_IF_ERROR(ReadSampling(*options,
                                  {{"temperature", Sampling::kTemperature},
                                   {"top_p", Sampling::kTopP},
                                   {"num_predict", Sampling::kMaxTokens},
                                   {"stop", Sampling::kStopArray},
                                   {"seed", Sampling::kSeed}},
                                  &params, "options"));
  if (params.ByteSizeLong() > 0) *request->mutable_params() = std::move(params);
  Extra rest = Extra::object();
  CopyUnmapped(*options, {}, {"temperature", "top_p", "num_predict", "stop", "seed"}, &rest);
  if (!rest.empty()) (*extra)["options"] = std::move(rest);
  return absl::OkStatus();
}

// `stream` (a boolean, true when absent) and what follows from it.
absl::Status ReadStream(const Json& root, ParsedRequest* out) {
  bool stream = true;
  if (const Json* v = FindMember(root, "stream")) {
    if (!v->is_boolean()) return ExpectedError("stream", "a boolean", *v);
    stream = v->get<bool>();
  }
  out->stream = stream;
  out->include_usage = stream;  // the done line always has the counts
  if (stream) out->stream_framing = StreamFraming::kNdjson;
  return absl::OkStatus();
}

absl::StatusOr<ParsedRequest> ParseChat(const Json& root) {
  ParsedRequest out;
  v1::CompletionRequest& request = out.canonical;
  Extra extra = Extra::object();
  US_RETURN_IF_ERROR(ReadRequiredString(root, "model", "", request.mutable_model()));
  if (const Json* messages = FindMember(root, "messages")) {
    if (!messages->is_array()) return ExpectedError("messages", "an array of messages", *messages);
    for (size_t i = 0; i < messages->size(); ++i) {
      US_RETURN_IF_ERROR(
          ParseMessage((*messages)[i], JoinPath("messages", i), request.add_messages()));
    }
  }
  if (const Json* tools = FindMember(root, "tools")) {
    US_RETURN_IF_ERROR(ParseTools(*tools, &request, &extra));
  }
  US_RETURN_IF_ERROR(ReadOptions(root, &request, &extra));
  US_RETURN_IF_ERROR(ReadStream(root, &out));
  CopyUnmapped(root, kIgnoredRequestFields, {"model", "messages", "tools", "options"}, &extra);
  SetExtra(extra, request.mutable_extra());
  return out;
}

absl::StatusOr<ParsedRequest> ParseGenerate(const Json& root) {
  ParsedRequest out;
  v1::CompletionRequest& request = out.canonical;
  request.set_operation(std::string(kGenerateOperation));
  Extra extra = Extra::object();
  US_RETURN_IF_ERROR(ReadRequiredString(root, "model", "", request.mutable_model()));
  std::string system;
  US_RETURN_IF_ERROR(ReadOptionalString(root, "system", "", &system));
  if (!system.empty()) {
    v1::Message* m = request.add_messages();
    m->set_role("system");
    m->set_content(std::move(system));
  }
  v1::Message* prompt = request.add_messages();
  prompt->set_role("user");
  US_RETURN_IF_ERROR(ReadOptionalString(root, "prompt", "", prompt->mutable_content()));
  US_RETURN_IF_ERROR(ReadOptions(root, &request, &extra));
  US_RETURN_IF_ERROR(ReadStream(root, &out));
  CopyUnmapped(root, kIgnoredRequestFields, {"model", "prompt", "system", "options"}, &extra);
  SetExtra(extra, request.mutable_extra());
  return out;
}

// `input` of an embed request: one user message per input.
absl::Status ParseEmbedInput(const Json* input, v1::CompletionRequest* request) {
  if (input == nullptr) return absl::OkStatus();
  const auto add = [request](const Json& text) {
    v1::Message* m = request->add_messages();
    m->set_role("user");
    m->set_content(text.get<std::string>());
  };
  if (input->is_string()) {
    if (!input->get_ref<const std::string&>().empty()) add(*input);
    return absl::OkStatus();
  }
  if (!input->is_array()) return ExpectedError("input", "a string or an array of strings", *input);
  if (input->size() > embeddings::kMaxInputs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input: expected at most ", embeddings::kMaxInputs, " inputs, got ", input->size()));
  }
  for (size_t i = 0; i < input->size(); ++i) {
    const Json& text = (*input)[i];
    if (!text.is_string()) return ExpectedError(JoinPath("input", i), "a string", text);
    add(text);
  }
  return absl::OkStatus();
}

absl::Status CheckDimensions(const Json& root) {
  const Json* dimensions = FindMember(root, "dimensions");
  if (dimensions == nullptr) return absl::OkStatus();
  const std::string expected = absl::StrCat("an integer in [1, ", embeddings::kMaxDimensions, "]");
  absl::StatusOr<int64_t> n = JsonToInt64(*dimensions, "dimensions");
  if (n.ok() && *n >= 1 && *n <= embeddings::kMaxDimensions) return absl::OkStatus();
  if (!dimensions->is_number()) return ExpectedError("dimensions", expected, *dimensions);
  return absl::InvalidArgumentError(absl::StrCat("dimensions: expected ", expected, ", got ",
                                                 Shorten(DumpJson(*dimensions), 40)));
}

absl::StatusOr<ParsedRequest> ParseEmbed(const Json& root) {
  ParsedRequest out;
  v1::CompletionRequest& request = out.canonical;
  request.set_operation(std::string(kEmbeddingsOperation));
  US_RETURN_IF_ERROR(ReadRequiredString(root, "model", "", request.mutable_model()));
  US_RETURN_IF_ERROR(ParseEmbedInput(FindMember(root, "input"), &request));
  US_RETURN_IF_ERROR(CheckDimensions(root));
  if (const Json* truncate = FindMember(root, "truncate"); truncate && !truncate->is_boolean()) {
    return ExpectedError("truncate", "a boolean", *truncate);
  }
  if (const Json* options = FindMember(root, "options"); options && !options->is_object()) {
    return ExpectedError("options", "an object", *options);
  }
  Extra extra = Extra::object();
  CopyUnmapped(root, kIgnoredRequestFields, {"model", "input"}, &extra);
  SetExtra(extra, request.mutable_extra());
  return out;
}

// ---- Answers ----

// What a chat or generate answer (a whole body or a stream line) says.
struct Answer {
  std::string model;
  v1::Message message;  // role "assistant"
  bool done = false;
  std::string done_reason;
  bool has_usage = false;
  v1::Usage usage;
};

// Reads a chat or generate answer object; `where` names its root ("" for a
// body, so that paths read "message.content").
absl::Status ReadAnswer(const Json& root, const std::string& where, Answer* out) {
  US_RETURN_IF_ERROR(ReadOptionalString(root, "model", where, &out->model));
  out->message.set_role("assistant");
  if (const Json* message = FindMember(root, "message")) {
    const std::string path = JoinPath(where, "message");
    if (!message->is_object()) return ExpectedError(path, "a message object", *message);
    US_RETURN_IF_ERROR(
        ReadOptionalString(*message, "content", path, out->message.mutable_content()));
    if (const Json* calls = FindMember(*message, "tool_calls")) {
      bool exact = true;
      US_RETURN_IF_ERROR(
          ParseToolCalls(*calls, JoinPath(path, "tool_calls"), &out->message, &exact));
    }
  } else {
    US_RETURN_IF_ERROR(ReadOptionalString(root, "response", where, out->message.mutable_content()));
  }
  if (const Json* done = FindMember(root, "done")) {
    if (!done->is_boolean()) return ExpectedError(JoinPath(where, "done"), "a boolean", *done);
    out->done = done->get<bool>();
  }
  US_RETURN_IF_ERROR(ReadOptionalString(root, "done_reason", where, &out->done_reason));
  if (FindMember(root, "prompt_eval_count") != nullptr ||
      FindMember(root, "eval_count") != nullptr) {
    out->has_usage = true;
    US_RETURN_IF_ERROR(ReadUsage(root, where, "prompt_eval_count", "eval_count", &out->usage));
  }
  return absl::OkStatus();
}

// The canonical finish reason of an answer; `has_calls` when the answer
// (so far, in a stream) has tool calls.
std::string FinishReason(const Answer& answer, bool has_calls) {
  if (!answer.done_reason.empty()) return FinishReasonFromOllama(answer.done_reason, has_calls);
  return answer.done ? FinishReasonFromOllama("stop", has_calls) : "";
}

absl::StatusOr<v1::CompletionResponse> ParseEmbedAnswer(const Json& root) {
  v1::CompletionResponse out;
  US_RETURN_IF_ERROR(ReadOptionalString(root, "model", "", out.mutable_model()));
  const Json& vectors = *FindMember(root, "embeddings");
  if (!vectors.is_array()) return ExpectedError("embeddings", "an array of embeddings", vectors);
  for (size_t i = 0; i < vectors.size(); ++i) {
    const Json& vector = vectors[i];
    const std::string path = JoinPath("embeddings", i);
    if (!vector.is_array()) return ExpectedError(path, "an array of numbers", vector);
    for (size_t k = 0; k < vector.size(); ++k) {
      if (!vector[k].is_number()) return ExpectedError(JoinPath(path, k), "a number", vector[k]);
    }
  }
  if (const Json* count = FindMember(root, "prompt_eval_count")) {
    US_ASSIGN_OR_RETURN(int64_t n, JsonToInt64(*count, "prompt_eval_count"));
    out.mutable_usage()->set_input_tokens(n);
  }
  out.mutable_message()->set_role("assistant");
  out.set_finish_reason("stop");
  return out;
}

// The status an error line of a stream stands for.
absl::Status UpstreamError(const Json& error) {
  std::string message;
  if (error.is_string()) {
    message = error.get<std::string>();
  } else if (const Json* m = FindMember(error, "message"); m != nullptr && m->is_string()) {
    message = m->get<std::string>();
  } else {
    message = DumpJson(error);
  }
  return absl::UnknownError(absl::StrCat("upstream stream error: ", message));
}

// ---- Rendering ----

ordered_json ToolCallJson(const std::string& id, const std::string& name,
                          const std::string& arguments, int64_t index) {
  ordered_json fn = ordered_json::object();
  fn["index"] = index;
  fn["name"] = name;
  fn["arguments"] = ArgumentsObject(arguments);
  ordered_json call = ordered_json::object();
  if (!id.empty()) call["id"] = id;
  call["function"] = std::move(fn);
  return call;
}

// What the done line of an answer says besides its content.
struct DoneLine {
  std::string done_reason;
  const v1::Usage* usage = nullptr;  // null: counts 0
  // From a recorded whole body: the durations and `context` it gave.
  const ordered_json* recorded = nullptr;
};

// A recorded duration (or 0).
ordered_json Recorded(const DoneLine& done, const char* key) {
  if (done.recorded == nullptr) return 0;
  const Json* v = FindMember(*done.recorded, key);
  return v != nullptr && v->is_number_integer() ? *v : ordered_json(0);
}

void AddDone(Endpoint endpoint, const DoneLine& done, ordered_json* line) {
  (*line)["done_reason"] = done.done_reason;
  if (endpoint == Endpoint::kGenerate && done.recorded != nullptr) {
    const Json* context = FindMember(*done.recorded, "context");
    if (context != nullptr && context->is_array()) (*line)["context"] = *context;
  }
  (*line)["total_duration"] = Recorded(done, "total_duration");
  (*line)["load_duration"] = Recorded(done, "load_duration");
  (*line)["prompt_eval_count"] = done.usage != nullptr ? done.usage->input_tokens() : 0;
  (*line)["prompt_eval_duration"] = Recorded(done, "prompt_eval_duration");
  (*line)["eval_count"] = done.usage != nullptr ? done.usage->output_tokens() : 0;
  (*line)["eval_duration"] = Recorded(done, "eval_duration");
}

// One chat or generate answer object: a stream line, or with `done` the
// last line or a whole body.
ordered_json AnswerJson(Endpoint endpoint, const std::string& model, const std::string& created_at,
                        const std::string& content, ordered_json calls, const DoneLine* done) {
  ordered_json line = ordered_json::object();
  line["model"] = model;
  line["created_at"] = created_at;
  if (endpoint == Endpoint::kGenerate) {
    line["response"] = content;
  } else {
    ordered_json message = ordered_json::object();
    message["role"] = "assistant";
    message["content"] = content;
    if (!calls.empty()) message["tool_calls"] = std::move(calls);
    line["message"] = std::move(message);
  }
  line["done"] = done != nullptr;
  if (done != nullptr) AddDone(endpoint, *done, &line);
  return line;
}

// The float32 `value` in its shortest form that reads back the same.
void AppendFloat(float value, std::string* out) {
  char buffer[32];
  const std::to_chars_result r = std::to_chars(buffer, buffer + sizeof buffer, value);
  out->append(buffer, r.ptr);
}

// The `dimensions` of a canonical embed request's extra, 0 when not given
// (or not what ParseRequest admits: a request built over gRPC).
int64_t RequestedDimensions(const v1::CompletionRequest& request) {
  if (request.extra().empty()) return 0;
  absl::StatusOr<Json> extra = ParseJson(request.extra(), "extra");
  if (!extra.ok()) return 0;
  const Json* dimensions = FindMember(*extra, "dimensions");
  if (dimensions == nullptr) return 0;
  absl::StatusOr<int64_t> n = JsonToInt64(*dimensions, "dimensions");
  return n.ok() && *n >= 1 && *n <= embeddings::kMaxDimensions ? *n : 0;
}

}  // namespace

std::optional<Endpoint> EndpointOf(absl::string_view path) {
  if (path == "/api/chat") return Endpoint::kChat;
  if (path == "/api/generate") return Endpoint::kGenerate;
  if (path == "/api/embed") return Endpoint::kEmbed;
  return std::nullopt;
}

Endpoint EndpointOfRequest(const v1::CompletionRequest& canonical) {
  if (canonical.operation() == kEmbeddingsOperation) return Endpoint::kEmbed;
  if (canonical.operation() == kGenerateOperation) return Endpoint::kGenerate;
  return Endpoint::kChat;
}

bool IsNdjson(absl::string_view content_type) {
  const absl::string_view type = absl::StripAsciiWhitespace(
      content_type.substr(0, std::min(content_type.find(';'), content_type.size())));
  return absl::EqualsIgnoreCase(type, kNdjsonContentType);
}

absl::StatusOr<ParsedRequest> ParseRequest(Endpoint endpoint, absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseRoot(body));
  switch (endpoint) {
    case Endpoint::kChat:
      return ParseChat(root);
    case Endpoint::kGenerate:
      return ParseGenerate(root);
    case Endpoint::kEmbed:
      return ParseEmbed(root);
  }
  return absl::InternalError("ollama: unknown endpoint");
}

absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseRoot(body));
  if (FindMember(root, "embeddings") != nullptr) return ParseEmbedAnswer(root);
  if (FindMember(root, "message") == nullptr && FindMember(root, "response") == nullptr) {
    return MissingError("message", kAnswerExpected);
  }
  Answer answer;
  US_RETURN_IF_ERROR(ReadAnswer(root, "", &answer));
  v1::CompletionResponse out;
  out.set_model(std::move(answer.model));
  out.set_finish_reason(FinishReason(answer, answer.message.tool_calls_size() > 0));
  *out.mutable_message() = std::move(answer.message);
  if (answer.has_usage) *out.mutable_usage() = answer.usage;
  return out;
}

std::string FinishReasonFromOllama(absl::string_view done_reason, bool has_calls) {
  if (done_reason == "stop" && has_calls) return "tool_calls";
  return std::string(done_reason);
}

std::string FinishReasonToOllama(absl::string_view finish_reason) {
  if (finish_reason.empty() || finish_reason == "tool_calls") return "stop";
  return std::string(finish_reason);
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::DecodeElement(
    absl::string_view json) {
  return DecodeJson(json, "element");
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::Decode(const SseEvent& event) {
  if (absl::StripAsciiWhitespace(event.data).empty()) return std::nullopt;
  return DecodeJson(event.data, "data");
}

absl::StatusOr<std::optional<v1::CompletionChunk>> StreamDecoder::DecodeJson(
    absl::string_view text, absl::string_view where) {
  const std::string root_path(where);
  US_ASSIGN_OR_RETURN(Json root, ParseJson(text, root_path));
  if (!root.is_object()) return ExpectedError(root_path, "a stream line object", root);
  if (const Json* error = FindMember(root, "error")) return UpstreamError(*error);
  Answer answer;
  US_RETURN_IF_ERROR(ReadAnswer(root, root_path, &answer));
  v1::CompletionChunk chunk;
  chunk.set_model(std::move(answer.model));
  chunk.set_content(answer.message.content());
  for (const v1::ToolCall& call : answer.message.tool_calls()) {
    v1::ToolCallDelta* delta = chunk.add_tool_calls();
    delta->set_index(next_tool_index_++);
    delta->set_id(call.id());
    delta->set_name(call.name());
    delta->set_arguments(call.arguments());
  }
  chunk.set_finish_reason(FinishReason(answer, next_tool_index_ > 0));
  if (answer.done) done_ = true;
  if (answer.has_usage) *chunk.mutable_usage() = answer.usage;
  return chunk;
}

std::string CreatedAt(int64_t unix_seconds) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(unix_seconds),
                          absl::UTCTimeZone());
}

std::string RenderResponse(const v1::CompletionResponse& response, Endpoint endpoint,
                           absl::string_view model, int64_t created) {
  const v1::Message& m = response.message();
  ordered_json calls = ordered_json::array();
  for (int i = 0; i < m.tool_calls_size(); ++i) {
    const v1::ToolCall& c = m.tool_calls(i);
    calls.push_back(ToolCallJson(c.id(), c.name(), c.arguments(), i));
  }
  DoneLine done;
  done.done_reason = FinishReasonToOllama(response.finish_reason());
  if (response.has_usage()) done.usage = &response.usage();
  const std::string name = response.model().empty() ? std::string(model) : response.model();
  return DumpJson(
      AnswerJson(endpoint, name, CreatedAt(created), m.content(), std::move(calls), &done));
}

int64_t DefaultEmbedDimensions(absl::string_view model) {
  if (absl::StartsWith(model, "all-minilm")) return 384;
  if (absl::StartsWith(model, "mxbai-embed-large")) return 1024;
  return 768;
}

std::string RenderEmbedResponse(const v1::CompletionRequest& request, absl::string_view model) {
  const int64_t requested = RequestedDimensions(request);
  const int64_t dimensions = requested > 0 ? requested : DefaultEmbedDimensions(model);
  std::string out =
      absl::StrCat(R"({"model":)", DumpJson(Json(std::string(model))), R"(,"embeddings":[)");
  int64_t tokens = 0;
  for (int i = 0; i < request.messages_size(); ++i) {
    const std::string& text = request.messages(i).content();
    out.append(i == 0 ? "[" : ",[");
    const std::vector<float> vector = embeddings::PseudoEmbedding(text, dimensions);
    for (size_t j = 0; j < vector.size(); ++j) {
      if (j > 0) out.push_back(',');
      AppendFloat(vector[j], &out);
    }
    out.push_back(']');
    tokens += static_cast<int64_t>((text.size() + 3) / 4);
  }
  absl::StrAppend(&out, R"(],"total_duration":0,"load_duration":0,"prompt_eval_count":)", tokens,
                  "}");
  return out;
}

namespace {

// RenderStream, a chunk at a time.
class OllamaStreamRenderer final : public SteppedRenderer {
 public:
  OllamaStreamRenderer(const OllamaStreamRenderer&) = delete;
  OllamaStreamRenderer& operator=(const OllamaStreamRenderer&) = delete;
  OllamaStreamRenderer(const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
                       const StreamShape& shape)
      : chunks_(chunks), endpoint_(shape.endpoint), created_at_(CreatedAt(shape.created)) {
    for (int i = 0; i < chunks_.size(); ++i) {
      const v1::CompletionChunk& c = chunks_[i];
      if (model_.empty()) model_ = c.model();
      if (!c.finish_reason().empty()) done_.done_reason = c.finish_reason();
      if (c.has_usage()) done_.usage = &c.usage();
      for (const v1::ToolCallDelta& d : c.tool_calls()) last_chunk_[d.index()] = i;
    }
    if (model_.empty()) model_ = shape.model;
    done_.done_reason = FinishReasonToOllama(done_.done_reason);
    ReadRecorded(shape.recorded_body);
  }

 protected:
  bool Step() override {
    if (chunks_.empty()) {
      Emit(Line("", ordered_json::array(), true), -1);
      return false;
    }
    const int i = next_++;
    const bool last = next_ == chunks_.size();
    Emit(Line(chunks_[i].content(), CallsEndingAt(i), last), i);
    return !last;
  }

 private:
  struct Call {
    std::string id, name, arguments;
  };

  // What a recorded whole body said that the chunks do not.
  void ReadRecorded(const std::string& body) {
    if (body.empty()) return;
    absl::StatusOr<Json> root = ParseJson(body, "body");
    if (!root.ok() || !root->is_object()) return;
    recorded_ = *std::move(root);
    done_.recorded = &recorded_;
    const Json* created_at = FindMember(recorded_, "created_at");
    if (created_at != nullptr && created_at->is_string()) {
      created_at_ = created_at->get<std::string>();
    }
  }

  // The tool calls whose last fragment chunk `i` holds, whole.
  ordered_json CallsEndingAt(int i) {
    for (const v1::ToolCallDelta& d : chunks_[i].tool_calls()) {
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
      calls.push_back(
          ToolCallJson(it->second.id, it->second.name, it->second.arguments, sent_calls_++));
      it = open_.erase(it);
    }
    return calls;
  }

  std::string Line(const std::string& content, ordered_json calls, bool last) {
    return absl::StrCat(DumpJson(AnswerJson(endpoint_, model_, created_at_, content,
                                            std::move(calls), last ? &done_ : nullptr)),
                        "\n");
  }

  const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks_;
  const Endpoint endpoint_;
  std::string created_at_;
  std::string model_;
  DoneLine done_;
  // The recorded whole body, which done_.recorded points into (hence no
  // copies of the renderer).
  ordered_json recorded_;
  // Where each tool call's last fragment is, and the fragments so far of
  // the calls not yet sent.
  std::map<int32_t, int> last_chunk_;
  std::map<int32_t, Call> open_;
  int64_t sent_calls_ = 0;
  int next_ = 0;
};

}  // namespace

std::unique_ptr<EventRenderer> StreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
    const StreamShape& shape) {
  return std::make_unique<OllamaStreamRenderer>(chunks, shape);
}

std::vector<std::string> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
    const StreamShape& shape) {
  return RenderAllText(*StreamRenderer(chunks, shape));
}

std::string ErrorBody(const absl::Status& status) {
  ordered_json body = ordered_json::object();
  body["error"] = std::string(status.message());
  return DumpJson(body);
}

std::string ErrorMessage(absl::string_view body) {
  absl::StatusOr<Json> root = ParseJson(body, "body");
  if (!root.ok()) return "";
  const Json* error = FindMember(*root, "error");
  if (error == nullptr) return "";
  if (error->is_string()) return error->get<std::string>();
  const Json* message = FindMember(*error, "message");
  return message != nullptr && message->is_string() ? message->get<std::string>() : "";
}

std::string ModelList(const std::vector<std::string>& models) {
  ordered_json list = ordered_json::array();
  for (const std::string& name : models) {
    ordered_json details = ordered_json::object();
    details["parent_model"] = "";
    details["format"] = "gguf";
    details["family"] = "";
    details["families"] = ordered_json::array();
    details["parameter_size"] = "";
    details["quantization_level"] = "";
    ordered_json model = ordered_json::object();
    model["name"] = name;
    model["model"] = name;
    model["modified_at"] = CreatedAt(0);
    model["size"] = 0;
    model["digest"] =
        absl::StrCat(DerivedId("", name), DerivedId("", absl::StrCat("digest:", name)));
    model["details"] = std::move(details);
    list.push_back(std::move(model));
  }
  ordered_json body = ordered_json::object();
  body["models"] = std::move(list);
  return DumpJson(body);
}

}  // namespace ollama
}  // namespace provider
}  // namespace understudy
