// understudy's own MCP server (mcpserver/protocol.h) on any message: every
// request gets exactly one JSON-RPC response with its id, every tool call
// a result or a protocol error, structured content only on success, and
// nothing a message says reaches the disk (no server, no folder for files).
// Tools that run programs (validate_test_code, run_tests) are not called:
// their inputs are the same JSON the others check.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "mcpserver/protocol.h"
#include "mcpserver/tools.h"
#include "nlohmann/json.hpp"
#include "provider/jsonrpc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  namespace jsonrpc = provider::jsonrpc;
  static const mcpserver::Tools* const tools = new mcpserver::Tools(mcpserver::ToolsOptions{});
  static const mcpserver::Protocol* const protocol = new mcpserver::Protocol(tools, "fuzz");
  const absl::string_view text = fuzz::View(data, size);

  absl::StatusOr<jsonrpc::Message> message = jsonrpc::ParseMessage(text);
  if (message.ok() && message->method == "tools/call" && message->params.is_object()) {
    const auto name = message->params.find("name");
    if (name != message->params.end() && name->is_string() &&
        (*name == "validate_test_code" || *name == "run_tests")) {
      return 0;
    }
  }
  const std::string reply = protocol->Handle(text);
  const bool owed = !message.ok() || message->kind == jsonrpc::Message::Kind::kRequest;
  FUZZ_CHECK(reply.empty() != owed, "a request (or unreadable text) gets one answer, nothing else does");
  if (reply.empty()) return 0;
  FUZZ_CHECK(reply.find('\n') == std::string::npos, "an answer is one line");
  absl::StatusOr<jsonrpc::Message> answer = jsonrpc::ParseMessage(reply);
  FUZZ_CHECK(answer.ok() && answer->kind == jsonrpc::Message::Kind::kResponse,
             "the answer is a JSON-RPC response");
  if (message.ok()) FUZZ_CHECK(answer->id == message->id, "the answer carries the request's id");
  if (message.ok() && message->method == "tools/call" && answer->error.is_null()) {
    const provider::Json& result = answer->result;
    FUZZ_CHECK(result.contains("content") && result["content"].is_array() &&
                   result.contains("isError") && result["isError"].is_boolean(),
               "a tool result has content and isError");
    FUZZ_CHECK(result["isError"].get<bool>() != result.contains("structuredContent"),
               "structured content exactly when the call succeeded");
  }
  return 0;
}
