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
#ifndef UNDERSTUDY_MCPSERVER_HTTP_ENDPOINT_H_
#define UNDERSTUDY_MCPSERVER_HTTP_ENDPOINT_H_

#include <memory>
#include <string>

#include "base/worker_pool.h"
#include "mcpserver/protocol.h"
#include "mcpserver/tools.h"
#include "service/http_server.h"

namespace understudy {
namespace mcpserver {

class HttpEndpoint {
 public:
  // `threads`: the most tool calls that run at once; later ones wait.
  HttpEndpoint(ToolsOptions options, std::string version, int threads = 4);
  // Waits for the calls in progress.
  ~HttpEndpoint();

  // Answers one request for /mcp. Thread-safe; never blocks.
  void Handle(service::HttpRequest request, std::shared_ptr<service::HttpResponder> out);

 private:
  Tools tools_;
  Protocol protocol_;
  WorkerPool pool_;
};

}  // namespace mcpserver
}  // namespace understudy

#endif  // UNDERSTUDY_MCPSERVER_HTTP_ENDPOINT_H_
