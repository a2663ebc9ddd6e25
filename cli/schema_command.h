// `understudy schema KIND`: prints the JSON Schema (2020-12) of a document
// kind — scenario, spec, session — as shipped in the binary
// (validation/schemas.h), for editors and tools:
//
//   understudy schema scenario > scenario.schema.json
#ifndef UNDERSTUDY_CLI_SCHEMA_COMMAND_H_
#define UNDERSTUDY_CLI_SCHEMA_COMMAND_H_

#include <ostream>
#include <string>

namespace understudy {
namespace cli {

// Writes the schema of `kind` to `out` exactly as embedded (it ends in a
// newline) and returns 0. For an unknown kind writes one line to `err`,
// "understudy: unknown schema kind \"x\"; kinds: scenario, session, sim, sim-meow, spec",
// and returns 2 (a usage error, cli/command_base.h); 3 when `out` fails.
int Schema(const std::string& kind, std::ostream& out, std::ostream& err);

// The same on stdout and stderr.
int Schema(const std::string& kind);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_SCHEMA_COMMAND_H_
