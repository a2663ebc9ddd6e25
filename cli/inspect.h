// `understudy trace`, `show`, `assert` and `validate`: reading what a run did
// and checking it.
#ifndef UNDERSTUDY_CLI_INSPECT_H_
#define UNDERSTUDY_CLI_INSPECT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/command_base.h"
#include "query/timeline.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace cli {

// The timeline's vocabulary (query/timeline.h), as `show` takes it.
using query::ColorMode;
using query::ShouldColor;

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
// name of a shipped pack, see scenario::ResolveScenario) and prints every
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

#endif  // UNDERSTUDY_CLI_INSPECT_H_
