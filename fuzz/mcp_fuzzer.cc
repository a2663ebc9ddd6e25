// The JSON-RPC envelope (provider/jsonrpc.h) and MCP's canonical form
// (provider/mcp.h): any text either parses into one
// message or is refused with a JSON-RPC error code; a parsed message's
// canonical request is a function of it; rewriting ids keeps a message
// parseable and puts the caller's id in it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "provider/canonical.h"
#include "provider/jsonrpc.h"
#include "provider/mcp.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  namespace jsonrpc = provider::jsonrpc;
  namespace mcp = provider::mcp;
  const absl::string_view text = fuzz::View(data, size);

  absl::StatusOr<jsonrpc::Message> message = jsonrpc::ParseMessage(text);
  if (!message.ok()) {
    const int code = jsonrpc::ErrorCodeFor(message.status());
    FUZZ_CHECK(code == jsonrpc::kParseError || code == jsonrpc::kInvalidRequest,
               "a refused message maps to a JSON-RPC error code");
    // The error answer is itself a valid response.
    FUZZ_CHECK(jsonrpc::ParseMessage(jsonrpc::ErrorResponse(provider::Json(), code,
                                                    message.status().message()))
                   .ok(),
               "an error response parses");
    return 0;
  }
  if (message->kind != jsonrpc::Message::Kind::kResponse) {
    v1::CompletionRequest a = mcp::CanonicalRequest("server", *message);
    v1::CompletionRequest b = mcp::CanonicalRequest("server", *message);
    FUZZ_CHECK(provider::CanonicalText(a) == provider::CanonicalText(b),
               "the canonical request is a function of the message");
    FUZZ_CHECK(a.operation() == "mcp:" + message->method, "the operation names the method");
  } else {
    const jsonrpc::Outcome outcome = jsonrpc::OutcomeOf(*message);
    if (!outcome.is_error) {
      FUZZ_CHECK(jsonrpc::ParseMessage(jsonrpc::ResultResponse(message->id, outcome.result_json)).ok(),
                 "a result re-rendered parses");
    }
    const std::string rewritten = mcp::WithIds(text, provider::Json("caller"), provider::Json());
    absl::StatusOr<jsonrpc::Message> again = jsonrpc::ParseMessage(rewritten);
    FUZZ_CHECK(again.ok(), "a response with a new id still parses");
    FUZZ_CHECK(again->id == provider::Json("caller"), "the new id is the caller's");
  }
  return 0;
}
