// MCP tool servers over Streamable HTTP (docs/mcp.md): what an agent's MCP
// client talks to once its server URL points here, and what
// `understudy mcp-proxy` (the stdio transport) forwards to.
//
//   POST   /mcp/{name}   one JSON-RPC message; a request is answered with
//                        JSON or an SSE stream (notifications, then the
//                        response), a notification or response with 202
//   GET    /mcp/{name}   405: no server-initiated stream
//   DELETE /mcp/{name}   ends the session
//
// (each also under /run/{run}[/agent/{agent}]). Requests are decided by the
// engine like model requests (engine/engine.h, IsMcpRequest): replay
// answers with the recorded messages and the caller's ids; record and
// passthrough forward to the server's upstream — `--mcp-upstream NAME=URL`,
// or the loopback URL an mcp-proxy names in X-Understudy-Mcp-Upstream —
// relay its answer as it arrives and record it once complete. Errors are
// JSON-RPC error responses; a replay miss has code -32001 and the miss
// report. A request for a run that is unknown, has ended or is not named
// is the client's mistake: HTTP 404, 412 or 400 as on the model routes,
// with a JSON-RPC error -32600.
//
// Sessions: understudy answers `initialize` with its own Mcp-Session-Id,
// derived from the run, the server name and a count (the same in every
// replay), and keeps the upstream's session id behind it.
#ifndef UNDERSTUDY_SERVICE_MCP_API_H_
#define UNDERSTUDY_SERVICE_MCP_API_H_

#include <map>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "base/env.h"
#include "capture/redact.h"
#include "engine/engine.h"
#include "service/http_server.h"
#include "upstream/http_upstream.h"

namespace understudy {
namespace service {

// An MCP server's upstream: where it is reached, and the path of its
// endpoint there.
struct McpUpstream {
  upstream::UpstreamHttpInterface* http = nullptr;  // not owned
  std::string path = "/";
};

struct McpApiOptions {
  // Required. Not owned; must outlive the API.
  engine::Engine* engine = nullptr;
  // By server name (--mcp-upstream NAME=URL).
  std::map<std::string, McpUpstream> upstreams;
  // What never reaches the store. Not owned; null means the defaults.
  const capture::Redactor* redactor = nullptr;
  Env* env = Env::Default();
};

class McpApi {
 public:
  explicit McpApi(McpApiOptions options);
  ~McpApi();

  // Answers one request for server `name` (the route's prefix already read
  // into `call`). Thread-safe; never blocks.
  void Handle(engine::CallInfo call, std::string name, HttpRequest request,
              std::shared_ptr<HttpResponder> out);

  // A JSON-RPC error body (id null) for the server's own errors.
  static std::string ErrorBody(absl::string_view message);

  struct Session;
  struct Pending;

 private:
  // Handle's DELETE: ends the session `session_header` names (404 for an
  // unknown one) and answers 200; when the upstream gave the session an id
  // of its own, sends it the DELETE too, fire and forget (no answer is
  // awaited; none when the upstream cannot be found). Takes mu_ and the
  // session's lock, one at a time; call it holding neither.
  void EndSession(const std::string& name, const HttpRequest& request,
                  const std::string& session_header, HttpResponder& out);
  // Handle's notification or client response (`pending`'s message) in a run
  // that may forward: sent on to server `name`'s upstream, fire and forget,
  // under the upstream's session id when `pending`'s session has one (and
  // notifications/initialized notes whether that session is initialized).
  // Nothing is sent when there is no upstream. Takes the session's lock;
  // call it holding none.
  void PassOn(const std::string& name, const HttpRequest& request, const Pending& pending);
  void Answer(std::shared_ptr<Pending> pending, std::shared_ptr<HttpResponder> out);
  void Forward(std::shared_ptr<Pending> pending, McpUpstream upstream,
               std::shared_ptr<HttpResponder> out);
  // The upstream for a request: the proxy's URL, else --mcp-upstream's.
  absl::StatusOr<McpUpstream> UpstreamFor(const std::string& name, const HttpRequest& request);
  std::shared_ptr<Session> FindSession(absl::string_view id);
  std::string NewSession(const std::string& run, const std::string& name,
                         std::string initialize_body);

  McpApiOptions options_;
  capture::Redactor default_redactor_;

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int64_t> session_counts_ ABSL_GUARDED_BY(mu_);
  // Upstreams for the loopback URLs mcp-proxy names, by base URL.
  absl::flat_hash_map<std::string, std::unique_ptr<upstream::HttpUpstream>> proxy_upstreams_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_MCP_API_H_
