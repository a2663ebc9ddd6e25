// `understudy mcp-proxy`: the stdio transport of MCP. The agent's MCP config
// runs the proxy instead of the server's command; the proxy relays every
// JSON-RPC message the agent writes on its stdin to understudy's HTTP
// listener (`/run/{run}/mcp/{name}`), and writes the answers on its stdout.
// When the run records (or passes through), understudy asks for the real
// server (HTTP 409 `start_upstream`): the proxy then starts the command and
// puts it behind a loopback HTTP endpoint, the bridge, which understudy
// forwards to. In replay the command never starts.
//
//   agent ─stdio─ McpProxy ─HTTP─ understudy ─HTTP─ StdioBridge ─stdio─ CMD
//
// Usage:
//   McpProxyOptions options;
//   options.name = "fs";
//   options.http = "http://127.0.0.1:7141";
//   options.run = "run-1a2b";
//   options.command = {"npx", "@modelcontextprotocol/server-filesystem", "/tmp"};
//   return RunMcpProxy(options);  // until stdin ends, or SIGINT/SIGTERM
//
// The pieces, each in its own file and tested on its own:
//   cli/mcp_stdio.h      the stdio framing: one JSON-RPC message per line
//   base/subprocess.h    the command, spawned with pipes, and its termination
//   cli/mcp_bridge.h     StdioBridge: the command behind a loopback HTTP endpoint
//   base/worker_pool.h   the threads requests are relayed on
//   cli/mcp_proxy.h      McpProxy: stdin → HTTP → stdout, concurrent, with a
//                        clean end (this file)
// Messages are parsed and answered with provider/mcp.h, SSE answers read
// with provider/sse.h.
#ifndef UNDERSTUDY_CLI_MCP_PROXY_H_
#define UNDERSTUDY_CLI_MCP_PROXY_H_

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace understudy {
namespace cli {

// The path of an MCP server on understudy's HTTP listener:
// `/run/{run}/mcp/{name}`, or `/mcp/{name}` when `run` is empty, each
// segment percent-encoded (everything but RFC 3986 unreserved characters).
std::string McpEndpointPath(absl::string_view run, absl::string_view name);

// The token to present to an understudy server: `token` (--auth-token,
// $UNDERSTUDY_AUTH_TOKEN) or the first line of `token_file`
// (--auth-token-file), held to the rules `serve` holds its own to
// (service::AccessToken: at least 16 printable characters; a file readable
// by its owner only). "" when both are empty. INVALID_ARGUMENT, naming the
// flag, otherwise, and when both are given.
absl::StatusOr<std::string> ResolveClientToken(const std::string& token,
                                               const std::string& token_file);
struct McpProxyOptions {
  // The MCP server's name: the {name} of /mcp/{name}. Required.
  std::string name;
  // understudy's HTTP listener: `http://HOST:PORT` (or `HOST:PORT`), or
  // https://. Required.
  std::string http;
  // The run to relay into; "" for the server's default run.
  std::string run;
  // Sent as X-Understudy-Agent when set.
  std::string agent;
  // Sent as `Authorization: Bearer TOKEN` when set (ResolveClientToken).
  std::string auth_token;
  // The real server's command, started only when understudy asks for it.
  // Required.
  std::vector<std::string> command;
  // Where the agent's messages come from and where answers go.
  int input_fd = STDIN_FILENO;
  int output_fd = STDOUT_FILENO;
  // Messages relayed at once; reading waits while this many are.
  int max_in_flight = 64;
  // At the end, how long answers still coming may take.
  absl::Duration drain_timeout = absl::Seconds(10);
  // How long a response waits for the agent to read the notifications
  // that came before it in its answer (below).
  absl::Duration read_wait = absl::Seconds(2);
  // Each step of ending the real server (ChildProcess::Terminate).
  absl::Duration child_grace = absl::Seconds(2);
};

// The proxy: reads messages from `input_fd`, relays each to understudy,
// and writes the answers to `output_fd`, one message per line, whole lines
// only, each flushed as it is written. Requests are relayed at once, up to
// max_in_flight together, and answered in whatever order they complete; a
// notification or response is relayed only after everything before it was
// sent, and what follows it only once it was accepted (stdio's order, which
// initialization and cancellation rely on). A request's SSE answer is written
// event by event as it arrives; its response only once the agent has read
// the notifications before it (up to read_wait): the SDK clients handle a
// notification a moment after the read that brings it but a response at
// once, so a response read together with its progress notifications
// would overtake them and they would be dropped (a replay sends them all
// at once). A line that is not a JSON-RPC message (not
// JSON, an array, longer than kMaxMcpMessageBytes) is answered with a
// JSON-RPC error with id null. A request that understudy refuses (HTTP 4xx)
// with a JSON-RPC error for it (an unknown run: 404, -32600) gets that
// error as it is; one that understudy cannot answer (another HTTP
// status, a transport failure) a JSON-RPC error (-32603) with its id,
// beginning "understudy mcp-proxy: ". Every such problem is also logged on
// stderr.
class McpProxy {
 public:
  // INVALID_ARGUMENT (a usage error) for a missing name, HTTP address or
  // command, or an HTTP address that is not a URL.
  static absl::StatusOr<std::unique_ptr<McpProxy>> Create(McpProxyOptions options);

  ~McpProxy();
  McpProxy(const McpProxy&) = delete;
  McpProxy& operator=(const McpProxy&) = delete;

  // Relays until the input ends or Stop, then ends cleanly: waits up to
  // drain_timeout for the answers in flight (then cancels them: their
  // requests get an error), ends the MCP session on the server (DELETE),
  // and ends the real server if it was started. OK; UNAVAILABLE when the
  // input could not be read or the output written (the agent is gone).
  // Once only.
  absl::Status Run();

  // Makes Run stop reading and end as above, promptly. A second call also
  // cancels the answers in flight at once. Thread-safe; not
  // async-signal-safe (RunMcpProxy calls it from a sigwait thread).
  void Stop();

 private:
  class Impl;
  explicit McpProxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// `understudy mcp-proxy`: McpProxy on stdin and stdout, SIGINT and SIGTERM
// calling Stop. Returns the exit code: 0 after a clean end; 2 for a usage
// error (Create's INVALID_ARGUMENT); 3 when stdin or stdout failed. Errors
// print one line, "understudy: REASON", on stderr.
int RunMcpProxy(const McpProxyOptions& options);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_MCP_PROXY_H_
