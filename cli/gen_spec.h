// `understudy gen-spec RUN|SESSION`: writes the assertion spec of a
// recorded or replayed run (testgen/spec_gen.h), to check later runs with
// `understudy assert`.
#ifndef UNDERSTUDY_CLI_GEN_SPEC_H_
#define UNDERSTUDY_CLI_GEN_SPEC_H_

#include <string>

#include "cli/command_base.h"
#include "testgen/spec_gen.h"

namespace understudy {
namespace cli {

// Reads the run `ref` names (a run id, or a session NAME or NAME@N for its
// latest run) from the database db.db — read only, never created — or,
// when `addr` is not empty, from the server there; writes its spec to
// `output` atomically (a temporary file renamed over it), or to stdout
// when `output` is "" or "-". A file written gets one line on stderr,
// "wrote FILE: N checks of run RUN". With db.json, stdout gets one JSON
// object instead: {"run", "session", "checks", "output"} and, for stdout
// output, "spec" (the YAML).
// Returns 0 on success; 1 when `ref` names no run, or the run gives
// nothing to check (the message says what it lacks); 2 for malformed
// options; 3 when the database or server cannot be read or the file
// cannot be written. Errors print one "understudy: ..." line on stderr.
int GenSpec(const DbFlags& db, const std::string& addr, const std::string& ref,
            const testgen::SpecOptions& options, const std::string& output);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_GEN_SPEC_H_
