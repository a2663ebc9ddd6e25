// StdioBridge: an MCP stdio server (a command) behind a loopback HTTP
// endpoint, which understudy forwards to when a run records:
//
//   understudy ─HTTP─ StdioBridge ─stdio─ CMD
#ifndef UNDERSTUDY_CLI_MCP_BRIDGE_H_
#define UNDERSTUDY_CLI_MCP_BRIDGE_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace understudy {
namespace cli {

// What the agent told the MCP server when the session began, for a server
// started after that (see StdioBridgeOptions::init_state).
struct McpInitState {
  // The agent's `initialize` request as one line; "" when it sent none.
  std::string initialize;
  // Whether the agent has sent `notifications/initialized`.
  bool initialized_sent = false;
};

struct StdioBridgeOptions {
  // The MCP server's command, argv[0] first (see ChildProcess::Spawn).
  std::vector<std::string> command;
  // Asked when the first message for the child is not `initialize` (a
  // replay answered it from the recording): the bridge then sends the
  // agent's initialize (with id "understudy-init"), waits for and drops its
  // response, sends notifications/initialized when the agent had sent it,
  // and only then the message. Called once, on the bridge's writer thread.
  // Null: never.
  std::function<McpInitState()> init_state;
};

// An MCP stdio server behind a loopback HTTP endpoint, so understudy can
// forward to it as to any Streamable HTTP server. The endpoint takes a POST
// of one JSON-RPC message and writes it to the child's stdin as one line.
// For a request, it answers 200 text/event-stream: each notification the
// child writes while the request is pending (a notifications/progress with
// the request's progress token goes to that request; any other to the
// oldest pending request), then the child's response with the request's id,
// last. A notification or response is answered 202. Requests the child
// sends (roots/list, sampling/createMessage, …) are refused at once with
// JSON-RPC error -32601: the proxy does not relay server-to-client
// requests. Once the child has exited (or closed its stdout), every pending
// and later request is answered 502 with a JSON-RPC error saying how it
// ended and naming the command (a request whose event stream has begun is
// broken off instead). DELETE is answered 200; other methods 405.
// Thread-safe.
class StdioBridge {
 public:
  // Spawns the command and starts listening on 127.0.0.1, port chosen by
  // the system. ChildProcess::Spawn's errors; UNAVAILABLE when the listener
  // cannot start.
  static absl::StatusOr<std::unique_ptr<StdioBridge>> Start(StdioBridgeOptions options);

  // Shutdown(2 s) unless it has run.
  ~StdioBridge();
  StdioBridge(const StdioBridge&) = delete;
  StdioBridge& operator=(const StdioBridge&) = delete;

  // `http://127.0.0.1:PORT/mcp`: what understudy is to forward to.
  const std::string& url() const { return url_; }
  // The child's process id.
  pid_t pid() const;

  // Answers the requests still pending 502, ends the child
  // (ChildProcess::Terminate with `grace`) and stops listening. Idempotent;
  // not concurrently with itself.
  void Shutdown(absl::Duration grace);

 private:
  class Impl;
  explicit StdioBridge(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
  std::string url_;
};

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_MCP_BRIDGE_H_
