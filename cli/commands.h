// The `understudy` subcommands, each a function from parsed flags to an exit
// code. Exit codes: 0 success; 1 what was asked about is wrong or missing
// (unknown session, malformed import file); 2 usage error (reported by the
// flag parser); 3 operational failure (cannot open the database, cannot
// listen). Errors print one line, "understudy: REASON", on stderr.
#ifndef UNDERSTUDY_CLI_COMMANDS_H_
#define UNDERSTUDY_CLI_COMMANDS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "query/timeline.h"
#include "service/server.h"
#include "store/store.h"

namespace understudy {
namespace cli {

// The timeline's vocabulary (query/timeline.h), as `show` takes it.
using query::ColorMode;
using query::ShouldColor;

// Prints "understudy: <message>" and returns the exit code for `status`.
int Fail(const absl::Status& status);

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

// `understudy record|replay [flags] -- CMD...`: serves on free loopback
// ports with a default run of `serve.mode`, runs CMD with OPENAI_BASE_URL,
// ANTHROPIC_BASE_URL, UNDERSTUDY_ADDR, UNDERSTUDY_HTTP and UNDERSTUDY_RUN
// set, forwards SIGINT/SIGTERM to it, ends the run, prints the summary on
// stderr when the run was used (RunWasUsed) and returns CMD's exit code
// (128 + N when a signal N ended it). A replay that records nothing
// (modes none and replay) never writes --db: without --trace-db it serves a
// temporary copy, removed when CMD is done (see RunWrapped).
int Wrap(const ServeFlags& serve, const std::vector<std::string>& command);

// Whether a run did anything a summary would report: it answered, recorded
// or missed a request, or failed its scenario's script. The default run of a
// wrapped command whose tests start runs of their own is not used.
bool RunWasUsed(const v1::RunSummary& summary);

// Whether `mode` (a ServeFlags::mode of record or replay) only replays,
// writing no recording: "none" and "replay".
bool ReplaysOnly(const std::string& mode);

// Where and how RunWrapped runs the command; the defaults are Wrap's.
struct WrapOptions {
  // The command's working directory; "" keeps this process's.
  std::string cwd;
  // The command's environment ("NAME=value" entries) before understudy's
  // variables are set (any OPENAI_BASE_URL, UNDERSTUDY_RUN, … in it is
  // replaced); nullopt: this process's.
  std::optional<std::vector<std::string>> env;
  // A file that takes the command's stderr (created or truncated, mode
  // 0600); "": the command inherits this process's stderr.
  std::string stderr_path;
  // Where a replay that records nothing (ReplaysOnly) and names no
  // --trace-db keeps its copy of the recording with the run and its trace:
  // DIR/trace.db, left for the caller. "": a temporary folder, removed
  // before RunWrapped returns.
  std::string trace_dir;
};

// What a wrapped command did.
struct WrapResult {
  // The command's exit code, 128 + N when signal N ended it.
  int exit_code = 0;
  // The ended run: its id, state and counts, misses and unused recordings.
  v1::RunSummary summary;
  // The database that holds the run and its trace: --trace-db, DIR/trace.db
  // of WrapOptions::trace_dir, or --db itself (record, and replay --mode
  // new, write there); "" when it was a temporary copy, already removed.
  std::string db;
};

// Wrap's work, for commands that run something under a record or replay
// and go on (verify-install): serves, runs `command` (argv[0] looked up in
// this process's PATH) with `options`, forwards SIGINT/SIGTERM to it, waits
// for it, ends the run, stops the server and prints the run's summary on
// stderr (when RunWasUsed). The run is then in WrapResult::db. Errors: the server's
// start failure (tagged with its service::StartStage); NOT_FOUND naming
// the command when it cannot be run; the store's error when the run cannot
// be ended or the server cannot stop cleanly. Blocks SIGINT, SIGTERM and
// SIGCHLD in the calling thread (it takes them with sigwait); call it from
// the main thread before other threads start.
absl::StatusOr<WrapResult> RunWrapped(const ServeFlags& serve,
                                      const std::vector<std::string>& command,
                                      const WrapOptions& options = {});

// Prints "understudy: <message>" for a RunWrapped error and returns its
// exit code: a start failure by its stage (2 options, 1 a session or
// scenario it names, 3 store or listen), anything else as Fail does.
int FailWrapped(const absl::Status& status);

struct DbFlags {
  std::string db = "understudy.db";
  bool json = false;
};
// Opens the database of a command. Only `import` creates it: for the others
// a mistyped --db is an error, not a new empty database. Any failure is an
// operational one (exit 3): UNAVAILABLE, its message naming the file
// ("cannot open database x.db: no such file").
absl::StatusOr<std::unique_ptr<store::Store>> OpenStore(const DbFlags& db, bool create = false);

int SessionsList(const DbFlags& db, const std::string& prefix);
int SessionsShow(const DbFlags& db, const std::string& ref);
int SessionsRemove(const DbFlags& db, const std::string& ref);
// Writes the JSONL to `output`, or stdout when it is "" or "-".
int Export(const DbFlags& db, const std::string& ref, const std::string& output);
// Reads JSONL from `input` ("-" for stdin).
int Import(const DbFlags& db, const std::string& input, const std::string& name);
int Trace(const DbFlags& db, const std::string& run, const std::vector<std::string>& kinds,
          const std::string& agent);

// `understudy show RUN|SESSION`: what happened, one line per event, for
// people (shapes in query/timeline.h). `ref` is tried as a run id first (the
// run's trace events, in seq order), then as a session NAME or NAME@N (its
// exchanges). Colors per ShouldColor(color, isatty(stdout), $NO_COLOR).
// With db.json, one JSON object per line instead: each TraceEvent exactly as
// `trace --json` prints it, or each Exchange of the session. Returns 0; 1
// when `ref` is neither a run nor a session ("unknown run or session"); 3
// when the database file does not exist (it is never created) or cannot be
// read.
int Show(const DbFlags& db, const std::string& ref, ColorMode color);

// `understudy validate FILE|NAME...`: checks scenario files (a path, or the
// name of a shipped pack, see replayer::ResolveScenario) and prints every
// problem, one per line, "FILE:LINE:COL: severity: path: message
// (suggestion)", then "N errors, M warnings in K files"; with `json`, one
// JSON document {"files": [ReportToJson...], "errors", "warnings"} instead.
// Returns 0 when no file has an error (warnings allowed), 1 when any does,
// 3 when a file cannot be found or read (the others are still checked).
int Validate(const std::vector<std::string>& files, bool json);

// `understudy assert --run RUN SPEC...`: checks a run's trace against
// assertion specs (trace/spec.h; docs/assertions.md). Each spec file is
// parsed and validated first; every problem is printed as
// "FILE:LINE:COL: PATH: MESSAGE". Then the checks run, from the database
// (`db.db`, read-only) or, when `addr` is set, through a running server's
// Traces.Assert (which sees the live run, even before it is flushed).
// Prints one "PASS name" / "FAIL name: explanation" line per check and
// "N of M checks passed"; with db.json, the AssertResponse as one JSON
// document instead.
// Returns 0 when every check passed, 1 when one failed, 2 when a spec is
// invalid (nothing is checked), 3 when a spec, the database or the server
// cannot be read, or the run is unknown.
int Assert(const DbFlags& db, const std::string& addr, const std::string& run,
           const std::vector<std::string>& spec_files);

// Assert's two halves, for commands that check a run they made
// (verify-install) and so want the specs validated before they start.
//
// LoadSpecs reads and validates every spec file, printing each problem on
// stderr as Assert does. Returns the assertions of all files in order; on
// failure every problem has been printed and the status says only which
// exit code applies: INVALID_ARGUMENT (2) for an invalid or oversized spec
// or none listing an assertion, any other code (3) for one that cannot be
// read.
absl::StatusOr<std::vector<v1::Assertion>> LoadSpecs(const std::vector<std::string>& spec_files);
// CheckRun evaluates `assertions` against `run` (from the database, or the
// server at `addr` when it is set) and prints the verdicts as Assert does;
// returns Assert's exit code.
int CheckRun(const DbFlags& db, const std::string& addr, const std::string& run,
             const std::vector<v1::Assertion>& assertions);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_COMMANDS_H_
