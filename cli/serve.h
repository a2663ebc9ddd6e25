// `understudy serve`: the server's flags, how they become its options, and
// running it until a signal.
#ifndef UNDERSTUDY_CLI_SERVE_H_
#define UNDERSTUDY_CLI_SERVE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "service/server.h"

namespace understudy {
namespace cli {

// Sets the default run's mode from a --mode value: record, replay,
// passthrough, once, new, and the VCR names none (strict replay) and all
// (re-record as a new version). INVALID_ARGUMENT for anything else.
absl::Status ApplyMode(const std::string& mode, service::ServerOptions* options);

struct ServeFlags {
  service::ServerOptions server;
  std::string mode;  // "" or an ApplyMode value
  std::string ready_file;
  double drain_timeout_seconds = 10;
  double request_timeout_seconds = 60;
  // The folder understudy's MCP tools at /mcp may read and write files in
  // (docs/agents.md); "" for none: the file tools then answer an error.
  std::string tools_root;
  // understudy's version, for the MCP tools' serverInfo.
  std::string version;
  // --trace-level: full, summary or off ("": full).
  std::string trace_level;
  // --keep-runs (-1: no bound), --keep-trace-for ("": no bound) and
  // --prune-interval: the server's retention (store/retention.h).
  int64_t keep_runs = -1;
  std::string keep_trace_for;
  std::string prune_interval = "60s";
  // record|replay -- CMD: point the command's proxy variables (HTTPS_PROXY,
  // HTTP_PROXY, ALL_PROXY, lower case too, and NODE_USE_ENV_PROXY=1 for
  // Node's fetch) at the HTTP listener, which refuses every connection
  // (service::CheckNotProxied), with NO_PROXY naming only loopback: a
  // client that ignores its base URL fails naming the host it wanted
  // instead of reaching a real provider. Set for replays.
  bool refuse_egress = false;
  // --trace-db: serve a copy of server.db_path made in this file at start
  // (ServerOptions::snapshot_of), so that runs, traces and recordings go
  // there and server.db_path is only read; "" for none.
  std::string trace_db;
};

// Applies flags.trace_db to `options`: db_path becomes the copy and
// snapshot_of the database it copies. Nothing when it is "".
void ApplyTraceDb(const ServeFlags& flags, service::ServerOptions* options);

// Sets the default trace level and the retention bounds of `options` from
// `flags`; INVALID_ARGUMENT naming the flag for an unknown level or a
// malformed or negative duration (Server::Start checks the rest).
absl::Status ApplyTraceFlags(const ServeFlags& flags, service::ServerOptions* options);

// The factory of understudy's own MCP endpoint at /mcp (ServerOptions::
// own_mcp) for a server with `server`'s options: its tools read that server
// through its gRPC address and files under `tools_root`. Null when the
// server uses TLS or an access token (the tools' own loopback calls would
// need them): the tools are then served by `understudy mcp --addr`.
std::function<service::HttpHandler(const std::string&, const std::string&)> OwnMcpEndpoint(
    const service::ServerOptions& server, const std::string& tools_root,
    const std::string& version);

// Runs the server until SIGINT or SIGTERM. The first stdout line is
// `understudy serving grpc=HOST:PORT[ http=HOST:PORT] db=PATH[ run=ID]`.
int Serve(const ServeFlags& flags);

// Prints "understudy: <message>" for a server start failure and returns its
// exit code by its service::StartStage: 2 options, 1 a session or scenario
// it names, 3 store or listen.
int FailStart(const absl::Status& status);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_SERVE_H_
