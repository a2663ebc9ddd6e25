// Rendering of the Responses API (provider/responses.h): canonical answers
// as `response` objects and event streams, derived ids, error events.
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

namespace understudy {
namespace provider {
namespace responses {
namespace {

using nlohmann::ordered_json;


std::string ResponseId(const v1::CompletionResponse& response, const RenderMeta& meta) {
  if (!meta.id.empty()) return meta.id;
  if (absl::StartsWith(response.id(), "resp_")) return response.id();
  if (!response.id().empty()) return DerivedId("resp_", response.id());
  return DerivedId("resp_", response.SerializeAsString());
}

// The output items of a rendered response, with their ids.
struct Plan {
  struct Call {
    std::string item_id;
    std::string call_id;
    const v1::ToolCall* call;
  };
  std::string id;
  std::string model;
  std::string message_id;  // "" when the answer has no text
  std::vector<Call> calls;
};

Plan MakePlan(const v1::CompletionResponse& response, const RenderMeta& meta) {
  Plan plan;
  plan.id = ResponseId(response, meta);
  plan.model = response.model().empty() ? meta.model : response.model();
  int position = 0;
  if (!response.message().content().empty()) {
    plan.message_id = DerivedId("msg_", absl::StrCat(plan.id, "#", position++));
  }
  for (const v1::ToolCall& call : response.message().tool_calls()) {
    const std::string seed = absl::StrCat(plan.id, "#", position++);
    plan.calls.push_back(
        {DerivedId("fc_", seed), call.id().empty() ? DerivedId("call_", seed) : call.id(), &call});
  }
  return plan;
}

ordered_json TextPart(const std::string& text) {
  ordered_json part = ordered_json::object();
  part["type"] = "output_text";
  part["annotations"] = ordered_json::array();
  part["logprobs"] = ordered_json::array();
  part["text"] = text;
  return part;
}

// The message item, in progress (no content yet) or done.
ordered_json MessageItem(const Plan& plan, const std::string& text, bool done) {
  ordered_json item = ordered_json::object();
  item["id"] = plan.message_id;
  item["type"] = "message";
  item["status"] = done ? "completed" : "in_progress";
  item["content"] = done ? ordered_json::array({TextPart(text)}) : ordered_json::array();
  item["role"] = "assistant";
  return item;
}

ordered_json CallItem(const Plan::Call& call, bool done) {
  ordered_json item = ordered_json::object();
  item["id"] = call.item_id;
  item["type"] = "function_call";
  item["status"] = done ? "completed" : "in_progress";
  item["arguments"] = done ? call.call->arguments() : "";
  item["call_id"] = call.call_id;
  item["name"] = call.call->name();
  return item;
}

// The incomplete_details reason a finish reason stands for ("" for none).
absl::string_view IncompleteReason(const v1::CompletionResponse& response) {
  if (response.finish_reason() == "length") return "max_output_tokens";
  if (response.finish_reason() == "content_filter") return "content_filter";
  return "";
}

// The response object: finished (with output and usage) or, for the first
// events of a stream, in progress.
ordered_json ResponseJson(const v1::CompletionResponse& response, const Plan& plan,
                          const RenderMeta& meta, bool finished) {
  const absl::string_view reason = IncompleteReason(response);
  ordered_json r = ordered_json::object();
  r["id"] = plan.id;
  r["object"] = "response";
  r["created_at"] = meta.created_at;
  r["status"] = !finished ? "in_progress" : reason.empty() ? "completed" : "incomplete";
  r["background"] = false;
  r["error"] = nullptr;
  if (finished && !reason.empty()) {
    r["incomplete_details"]["reason"] = std::string(reason);
  } else {
    r["incomplete_details"] = nullptr;
  }
  r["instructions"] = nullptr;
  r["max_output_tokens"] = nullptr;
  r["model"] = plan.model;
  ordered_json output = ordered_json::array();
  if (finished) {
    if (!plan.message_id.empty()) {
      output.push_back(MessageItem(plan, response.message().content(), /*done=*/true));
    }
    for (const Plan::Call& call : plan.calls) output.push_back(CallItem(call, /*done=*/true));
  }
  r["output"] = std::move(output);
  r["parallel_tool_calls"] = true;
  r["previous_response_id"] = nullptr;
  r["reasoning"] = {{"effort", nullptr}, {"summary", nullptr}};
  r["temperature"] = 1.0;
  r["text"]["format"]["type"] = "text";
  r["tool_choice"] = "auto";
  r["tools"] = ordered_json::array();
  r["top_p"] = 1.0;
  r["truncation"] = "disabled";
  if (finished && response.has_usage()) {
    const v1::Usage& u = response.usage();
    ordered_json usage = ordered_json::object();
    usage["input_tokens"] = u.input_tokens();
    usage["input_tokens_details"]["cached_tokens"] = 0;
    usage["output_tokens"] = u.output_tokens();
    usage["output_tokens_details"]["reasoning_tokens"] = 0;
    usage["total_tokens"] = u.input_tokens() + u.output_tokens();
    r["usage"] = std::move(usage);
  } else {
    r["usage"] = nullptr;
  }
  r["metadata"] = ordered_json::object();
  return r;
}

}  // namespace

std::string RenderResponse(const v1::CompletionResponse& response, const RenderMeta& meta) {
  return DumpJson(ResponseJson(response, MakePlan(response, meta), meta, /*finished=*/true));
}

namespace {

// RenderStream, a step at a time: the response's start, the text item's
// start, each delta and end, each call item's start, fragment and end, and
// the response's end. Every event is numbered (sequence_number).
class ResponsesStreamRenderer final : public SteppedRenderer {
 public:
  ResponsesStreamRenderer(const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
                          RenderMeta meta)
      : chunks_(chunks),
        meta_(std::move(meta)),
        response_(provider::AssembleResponse(chunks_)),
        plan_(MakePlan(response_, meta_)) {
    // The argument fragments of each call, keyed as AssembleResponse keys
    // the calls (so the k-th key is plan_.calls[k]), with their chunk's
    // index.
    for (int i = 0; i < chunks_.size(); ++i) {
      for (const v1::ToolCallDelta& d : chunks_[i].tool_calls()) {
        auto& list = fragments_[d.index()];
        if (!d.arguments().empty()) list.emplace_back(i, &d.arguments());
      }
    }
    call_fragments_ = fragments_.begin();
    // Until its last events, the text is sent as the chunks' deltas: not
    // held here meanwhile.
    std::string().swap(*response_.mutable_message()->mutable_content());
  }

 protected:
  bool Step() override {
    switch (phase_) {
      case Phase::kStart: {
        const ordered_json in_progress =
            ResponseJson(response_, plan_, meta_, /*finished=*/false);
        for (absl::string_view type : {"response.created", "response.in_progress"}) {
          ordered_json e = Start(type);
          e["response"] = in_progress;
          Emit(e);
        }
        phase_ = plan_.message_id.empty() ? Phase::kCalls : Phase::kText;
        return true;
      }
      case Phase::kText:
        TextStep();
        return true;
      case Phase::kCalls:
        if (call_ < plan_.calls.size()) {
          CallStep();
          return true;
        }
        {
          ordered_json e = Start(IncompleteReason(response_).empty() ? "response.completed"
                                                                     : "response.incomplete");
          e["response"] = ResponseJson(response_, plan_, meta_, /*finished=*/true);
          Emit(e);
        }
        phase_ = Phase::kDone;
        return false;
      case Phase::kDone:
        return false;
    }
    return false;
  }

 private:
  enum class Phase { kStart, kText, kCalls, kDone };

  // A new event object of `type`: "type" and "sequence_number" come first.
  ordered_json Start(absl::string_view type) {
    ordered_json e = ordered_json::object();
    e["type"] = std::string(type);
    e["sequence_number"] = sequence_++;
    return e;
  }
  void Emit(const ordered_json& e, int chunk = -1) {
    SteppedRenderer::Emit(
        absl::StrCat("event: ", e["type"].get<std::string>(), "\ndata: ", DumpJson(e), "\n\n"),
        chunk);
  }

  ordered_json TextEvent(absl::string_view type) {
    ordered_json e = Start(type);
    e["item_id"] = plan_.message_id;
    e["output_index"] = output_index_;
    e["content_index"] = 0;
    return e;
  }

  // The text item: its start, one chunk's delta, or its end.
  void TextStep() {
    const std::string& text = response_.message().content();
    if (next_ == -1) {
      ordered_json e = Start("response.output_item.added");
      e["output_index"] = output_index_;
      e["item"] = MessageItem(plan_, text, /*done=*/false);
      Emit(e);
      e = TextEvent("response.content_part.added");
      e["part"] = TextPart("");
      Emit(e);
      next_ = 0;
      return;
    }
    if (next_ < chunks_.size()) {
      const int i = next_++;
      if (chunks_[i].content().empty()) return;
      ordered_json e = TextEvent("response.output_text.delta");
      e["delta"] = chunks_[i].content();
      e["logprobs"] = ordered_json::array();
      Emit(e, i);
      return;
    }
    // The last events carry the whole text: one per step, so that a slow
    // client holds one of them at a time.
    switch (text_end_++) {
      case 0: {
        std::string* whole = response_.mutable_message()->mutable_content();
        for (const v1::CompletionChunk& c : chunks_) whole->append(c.content());
        ordered_json e = TextEvent("response.output_text.done");
        e["text"] = text;
        e["logprobs"] = ordered_json::array();
        Emit(e);
        return;
      }
      case 1: {
        ordered_json e = TextEvent("response.content_part.done");
        e["part"] = TextPart(text);
        Emit(e);
        return;
      }
      default: {
        ordered_json e = Start("response.output_item.done");
        e["output_index"] = output_index_;
        e["item"] = MessageItem(plan_, text, /*done=*/true);
        Emit(e);
        ++output_index_;
        phase_ = Phase::kCalls;
      }
    }
  }

  ordered_json CallEvent(const Plan::Call& call, absl::string_view type) {
    ordered_json e = Start(type);
    e["item_id"] = call.item_id;
    e["output_index"] = output_index_;
    return e;
  }

  // The current call item: its start, one fragment, or its end.
  void CallStep() {
    const Plan::Call& call = plan_.calls[call_];
    if (fragment_ == -1) {
      ordered_json e = Start("response.output_item.added");
      e["output_index"] = output_index_;
      e["item"] = CallItem(call, /*done=*/false);
      Emit(e);
      fragment_ = 0;
      return;
    }
    if (fragment_ < static_cast<int>(call_fragments_->second.size())) {
      const auto& [chunk_index, arguments] = call_fragments_->second[fragment_++];
      ordered_json e = CallEvent(call, "response.function_call_arguments.delta");
      e["delta"] = *arguments;
      Emit(e, chunk_index);
      return;
    }
    ++call_fragments_;
    ordered_json e = CallEvent(call, "response.function_call_arguments.done");
    e["arguments"] = call.call->arguments();
    e["name"] = call.call->name();
    Emit(e);
    e = Start("response.output_item.done");
    e["output_index"] = output_index_;
    e["item"] = CallItem(call, /*done=*/true);
    Emit(e);
    ++output_index_;
    ++call_;
    fragment_ = -1;
  }

  const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks_;
  const RenderMeta meta_;
  // The whole answer (plan_ points into it), but for its text until the
  // last events, which carry it.
  v1::CompletionResponse response_;
  const Plan plan_;
  std::map<int, std::vector<std::pair<int, const std::string*>>> fragments_;
  std::map<int, std::vector<std::pair<int, const std::string*>>>::const_iterator call_fragments_;
  Phase phase_ = Phase::kStart;
  int64_t sequence_ = 0;
  int output_index_ = 0;
  int next_ = -1;       // The next chunk's text (-1: the text item not started).
  int text_end_ = 0;    // The text item's last events sent.
  size_t call_ = 0;     // The call item in progress.
  int fragment_ = -1;   // Its next fragment (-1: its item not started).
};

}  // namespace

std::unique_ptr<EventRenderer> StreamRenderer(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks, const RenderMeta& meta) {
  return std::make_unique<ResponsesStreamRenderer>(chunks, meta);
}

std::vector<RenderedEvent> RenderStream(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks, const RenderMeta& meta) {
  return RenderAll(*StreamRenderer(chunks, meta));
}

std::string ErrorEvent(absl::string_view message, absl::string_view code, int64_t sequence_number) {
  ordered_json error = ordered_json::object();
  if (code.empty()) {
    error["code"] = nullptr;
  } else {
    error["code"] = std::string(code);
  }
  error["message"] = std::string(message);
  error["param"] = nullptr;
  ordered_json e = ordered_json::object();
  e["type"] = "error";
  e["sequence_number"] = sequence_number;
  for (auto it = error.begin(); it != error.end(); ++it) e[it.key()] = *it;
  e["error"] = std::move(error);
  return absl::StrCat("event: error\ndata: ", DumpJson(e), "\n\n");
}

}  // namespace responses
}  // namespace provider
}  // namespace understudy
