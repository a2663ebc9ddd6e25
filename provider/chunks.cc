#include "provider/chunks.h"

#include <map>

namespace understudy {
namespace provider {

v1::CompletionResponse AssembleResponse(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks) {
  v1::CompletionResponse out;
  v1::Message* message = out.mutable_message();
  message->set_role("assistant");
  std::map<int, v1::ToolCall> calls;  // ordered by index
  for (const v1::CompletionChunk& c : chunks) {
    if (out.id().empty() && !c.id().empty()) out.set_id(c.id());
    if (out.model().empty() && !c.model().empty()) out.set_model(c.model());
    message->mutable_content()->append(c.content());
    for (const v1::ToolCallDelta& d : c.tool_calls()) {
      v1::ToolCall& call = calls[d.index()];
      if (call.id().empty() && !d.id().empty()) call.set_id(d.id());
      if (call.name().empty() && !d.name().empty()) call.set_name(d.name());
      call.mutable_arguments()->append(d.arguments());
    }
    if (!c.finish_reason().empty()) out.set_finish_reason(c.finish_reason());
    if (c.has_usage()) *out.mutable_usage() = c.usage();
  }
  for (auto& [index, call] : calls) *message->add_tool_calls() = std::move(call);
  return out;
}

v1::CompletionChunk ChunkFromResponse(const v1::CompletionResponse& response) {
  v1::CompletionChunk chunk;
  chunk.set_id(response.id());
  chunk.set_model(response.model());
  chunk.set_content(response.message().content());
  int index = 0;
  for (const v1::ToolCall& call : response.message().tool_calls()) {
    v1::ToolCallDelta* d = chunk.add_tool_calls();
    d->set_index(index++);
    d->set_id(call.id());
    d->set_name(call.name());
    d->set_arguments(call.arguments());
  }
  chunk.set_finish_reason(response.finish_reason());
  if (response.has_usage()) *chunk.mutable_usage() = response.usage();
  return chunk;
}

}  // namespace provider
}  // namespace understudy
