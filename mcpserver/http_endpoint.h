// understudy's own MCP server over Streamable HTTP, at /mcp on the HTTP
// listener (docs/agents.md):
//
//   POST   /mcp   one JSON-RPC message (Content-Type application/json, else
//                 415; an Origin header other than a loopback one: 403): a
//                 request is answered with its JSON response, a
//                 notification or response with 202 and no body
//   GET    /mcp   405: no server-initiated stream
//   DELETE /mcp   405: the server keeps no session
//
// Stateless: no Mcp-Session-Id is issued, so any request may come on any
// connection, and a client needs no initialize to call a tool. Tool calls run
// on the endpoint's own threads (a run_tests call may take minutes), never on
// the listener's; a client that goes away does not stop a call in progress,
// but its answer is dropped.
//
// Transport-neutral: the endpoint takes the request's method, the headers it
// reads and its body, and hands its answer to a callback; the HTTP listener
// that serves it adapts its own request and responder types (cli/ wires it
// to service/'s listener).
#ifndef UNDERSTUDY_MCPSERVER_HTTP_ENDPOINT_H_
#define UNDERSTUDY_MCPSERVER_HTTP_ENDPOINT_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/worker_pool.h"
#include "mcpserver/protocol.h"
#include "mcpserver/tools.h"

namespace understudy {
namespace mcpserver {

// What the endpoint reads of a request to /mcp.
struct McpHttpRequest {
  std::string method;        // "POST", "GET", ...
  std::string content_type;  // the Content-Type header ("" when absent)
  std::string origin;        // the Origin header ("" when absent)
  std::string body;
};

// Its answer: a status, headers and a body (empty for 202).
struct McpHttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

class HttpEndpoint {
 public:
  // `threads`: the most tool calls that run at once; later ones wait.
  HttpEndpoint(ToolsOptions options, std::string version, int threads = 4);
  // Waits for the calls in progress.
  ~HttpEndpoint();

  // Answers one request for /mcp: calls `respond` once, on this thread or
  // on one of the endpoint's, unless `cancelled` (called from the
  // endpoint's thread before a tool call runs; may be null) says the client
  // went away. Both must stay callable until then. Thread-safe; never
  // blocks.
  void Handle(McpHttpRequest request, std::function<void(McpHttpResponse)> respond,
              std::function<bool()> cancelled = nullptr);

 private:
  Tools tools_;
  Protocol protocol_;
  WorkerPool pool_;
};

}  // namespace mcpserver
}  // namespace understudy

#endif  // UNDERSTUDY_MCPSERVER_HTTP_ENDPOINT_H_
