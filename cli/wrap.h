// `understudy record|replay -- CMD`: a server for the length of one command,
// and the run's summary after it.
#ifndef UNDERSTUDY_CLI_WRAP_H_
#define UNDERSTUDY_CLI_WRAP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/serve.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace cli {

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

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_WRAP_H_
