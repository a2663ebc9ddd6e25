// The MCP server side of the protocol (JSON-RPC 2.0, MCP 2025-06-18), apart
// from any transport: one message in, the response out. `understudy mcp`
// frames it over stdio (cli/mcp_serve.h), the HTTP listener over Streamable
// HTTP at /mcp (mcpserver/http_endpoint.h).
//
//   Protocol protocol(&tools, "1.2.0");
//   std::string reply = protocol.Handle(line);   // "" when none is owed
//
// Methods: initialize (the client's protocol version when this server
// speaks it, else the newest it speaks), ping, tools/list, tools/call;
// notifications and responses from the client are accepted and answer
// nothing. Errors are JSON-RPC errors: -32700 for text that is not JSON,
// -32600 for a message that is not a request (a batch, a bad id), -32601
// for an unknown method, -32602 for tools/call without a tool name, or
// naming no tool. A tool's own failures are results with isError (see
// mcpserver/tools.h).
#ifndef UNDERSTUDY_MCPSERVER_PROTOCOL_H_
#define UNDERSTUDY_MCPSERVER_PROTOCOL_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "mcpserver/tools.h"

namespace understudy {
namespace mcpserver {

// The protocol versions this server speaks, newest first.
inline constexpr const char* kProtocolVersions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

class Protocol {
 public:
  // `tools` is not owned and must outlive the protocol; `version` is
  // understudy's, for serverInfo.
  Protocol(const Tools* tools, std::string version);

  // Answers one JSON-RPC message (a line of stdio, a POST body): the
  // response's JSON text (one line), or "" for a notification or response.
  // Thread-safe; blocks while a tool runs.
  std::string Handle(absl::string_view message) const;

  // Whether `message` is a request (needs an answer), cheaply: used by
  // transports to answer 202 to notifications without running anything.
  static bool IsRequest(absl::string_view message);

 private:
  const Tools* tools_;
  std::string version_;
};

}  // namespace mcpserver
}  // namespace understudy

#endif  // UNDERSTUDY_MCPSERVER_PROTOCOL_H_
