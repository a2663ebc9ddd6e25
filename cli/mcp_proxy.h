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
// The pieces, each usable and tested on its own:
//   LineSplitter     the stdio framing: one JSON-RPC message per line
//   SseParser        the events of a text/event-stream answer
//   ParseMcpMessage  what a line holds: request, notification or response
//   ChildProcess     the command, spawned with pipes, and its termination
//   StdioBridge      the command behind a loopback HTTP endpoint
//   McpProxy         stdin → HTTP → stdout, concurrent, with a clean end
#ifndef UNDERSTUDY_CLI_MCP_PROXY_H_
#define UNDERSTUDY_CLI_MCP_PROXY_H_

#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace understudy {
namespace cli {

// The longest message (line) accepted on stdin, and on a child's stdout.
inline constexpr size_t kMaxMcpMessageBytes = size_t{16} << 20;

// JSON-RPC 2.0 error codes the proxy answers with.
inline constexpr int kJsonRpcParseError = -32700;
inline constexpr int kJsonRpcInvalidRequest = -32600;
inline constexpr int kJsonRpcMethodNotFound = -32601;
inline constexpr int kJsonRpcInternalError = -32603;

// Splits a byte stream into newline-delimited lines (MCP's stdio framing).
// A '\r' before the '\n' is dropped. Not thread-safe.
class LineSplitter {
 public:
  struct Line {
    // The line without its terminator; empty when `too_long`.
    std::string text;
    // The line had more than the maximum bytes. Its bytes were discarded
    // as they came (never held in memory), and reading goes on after it.
    bool too_long = false;
  };

  explicit LineSplitter(size_t max_line_bytes = kMaxMcpMessageBytes);

  // Consumes `data` and appends every line it completes to `*lines`, in
  // order. A partial last line waits for the next Feed.
  void Feed(absl::string_view data, std::vector<Line>* lines);
  // The end of the stream: appends the unterminated last line, if any.
  void Finish(std::vector<Line>* lines);

 private:
  const size_t max_;
  std::string partial_;
  bool discarding_ = false;  // Inside a line already known to be too long.
};

// Parses a text/event-stream body piece by piece (WHATWG HTML, "server-sent
// events"): lines end in LF, CRLF or CR, anywhere across pieces; `data`
// fields are joined with '\n'; comments and other fields are skipped. Not
// thread-safe.
class SseParser {
 public:
  using EventFn = std::function<void(std::string data)>;

  // Consumes `chunk`; calls `on_event` with the data of each event it
  // completes (a blank line ends an event). Events without a data field are
  // not reported.
  void Feed(absl::string_view chunk, const EventFn& on_event);
  // The end of the stream. An event whose closing blank line never came is
  // reported too: the server's last word is not thrown away over a framing
  // slip.
  void Finish(const EventFn& on_event);

 private:
  void Line(absl::string_view line, const EventFn& on_event);

  std::string line_;       // The current line so far.
  bool after_cr_ = false;  // The last byte seen was a CR: skip an LF next.
  std::string data_;       // The current event's data.
  bool has_data_ = false;
};

enum class McpMessageKind { kRequest, kNotification, kResponse };

// One JSON-RPC 2.0 message, classified.
struct McpMessage {
  McpMessageKind kind = McpMessageKind::kNotification;
  // The method of a request or notification; "" for a response.
  std::string method;
  // The id as JSON text (`7`, `"a"`), for requests and responses; "".
  std::string id;
  // The progress token as JSON text, or "": a request's
  // params._meta.progressToken, a notifications/progress's
  // params.progressToken. Ties progress notifications to their request.
  std::string progress_token;
  // The message as given (a single line).
  std::string text;
};

// Classifies one message. INVALID_ARGUMENT otherwise, with the JSON-RPC
// error code to answer with (JsonRpcErrorCode): kJsonRpcParseError for text
// that is not JSON (or not UTF-8, or nested too deep), naming the byte
// offset; kJsonRpcInvalidRequest for an array (batches are not supported),
// any other non-object, or an object that is none of request (method and
// id), notification (method) and response (id and result or error).
absl::StatusOr<McpMessage> ParseMcpMessage(absl::string_view text);

// The JSON-RPC error code a ParseMcpMessage failure asks for;
// kJsonRpcInternalError for any other status.
int JsonRpcErrorCode(const absl::Status& status);

// `{"jsonrpc":"2.0","id":ID,"error":{"code":CODE,"message":MESSAGE}}` as one
// line. `id_json` is JSON text ("null" when empty); `message` is made valid
// UTF-8.
std::string JsonRpcErrorResponse(absl::string_view id_json, int code, absl::string_view message);

// `text` as one line: unchanged when it holds no CR or LF, else re-serialized
// compactly. INVALID_ARGUMENT when it has line breaks and is not JSON.
absl::StatusOr<std::string> ToOneLine(std::string text);

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

// A command running with its stdin and stdout piped to this process and its
// stderr inherited, in a process group of its own (so that a launcher such
// as npx and the server it starts end together), with default signal
// dispositions and an empty signal mask, and no other descriptor of ours.
// Thread-safe, except that each of the two pipe ends has one user at a time.
class ChildProcess {
 public:
  // Starts `argv` (argv[0] looked up in PATH), exactly as given: an
  // argument that looks like an option is the command's own. The
  // environment is this process's. INVALID_ARGUMENT for an empty `argv`;
  // NOT_FOUND when argv[0] cannot be found, PERMISSION_DENIED when it cannot
  // be run, UNAVAILABLE for other failures; each naming the command.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(const std::vector<std::string>& argv);

  // Kills the process group (SIGKILL) and reaps the child when it is still
  // running; closes the pipes.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Our end of the child's stdin: write-only, non-blocking; -1 once closed.
  int stdin_fd() const { return stdin_fd_; }
  // Our end of the child's stdout: read-only, non-blocking.
  int stdout_fd() const { return stdout_fd_; }
  // A descriptor that becomes readable (POLLIN) once the child has exited,
  // or -1 when the kernel has no pidfd (then poll WaitFor).
  int exit_fd() const { return pidfd_; }

  // Closes our end of the child's stdin (it reads EOF). Not concurrently
  // with a write to stdin_fd().
  void CloseStdin();
  // Waits up to `timeout` for the child to exit (0: just checks). The wait
  // status (<sys/wait.h>) once it has, nullopt while it still runs.
  std::optional<int> WaitFor(absl::Duration timeout);
  // Sends `signal` to the child's process group. A no-op once the child has
  // been reaped.
  void Signal(int signal);
  // Ends the child politely, then less so: closes its stdin and waits
  // `grace`; SIGTERM and waits `grace`; SIGKILL and waits. The wait status,
  // or nullopt if even SIGKILL did not end it within `grace`.
  std::optional<int> Terminate(absl::Duration grace);

  // "exited with status 1", "killed by signal 9 (Killed)".
  static std::string DescribeExit(int wait_status);

 private:
  ChildProcess(pid_t pid, int stdin_fd, int stdout_fd, int pidfd);

  const pid_t pid_;
  int stdin_fd_;
  const int stdout_fd_;
  const int pidfd_;
  absl::Mutex mu_;
  std::optional<int> wait_status_ ABSL_GUARDED_BY(mu_);
};

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
// event by event as it arrives. A line that is not a JSON-RPC message (not
// JSON, an array, longer than kMaxMcpMessageBytes) is answered with a
// JSON-RPC error with id null; a request that understudy cannot answer
// (another HTTP status, a transport failure) with a JSON-RPC error
// (-32603) with its id, beginning "understudy mcp-proxy: ". Every such
// problem is also logged on stderr.
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
