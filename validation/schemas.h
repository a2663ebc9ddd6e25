// The JSON Schemas (2020-12) of understudy's document formats, shipped in
// the binary so that `understudy schema KIND` prints the very schema this
// build's validators agree with (tests/schemas checks that they do):
//
//   scenario  a scenario file, understudy.scenario/v1 (scenario/scenario.h)
//   spec      an assertion spec, understudy.spec/v1 (trace/spec.h)
//   session   ONE LINE of a session file, understudy.session/v1
//             (store/session_file.h)
//   sim       a sim config, understudy.sim/v1 (sim/config.h)
//   sim-meow  a sim config in the MEOW orchestrator's dialect (sim/config.h)
//
// The texts are the files schemas/KIND.v1.json, embedded at build time. The
// validators stay the final word: they also check what a schema cannot say
// (RE2 patterns compile, cross-field rules, seq order across lines). Editors
// use the schemas for completion and early errors; see docs/schemas.md.
//
//   absl::StatusOr<absl::string_view> text = validation::SchemaText("spec");
#ifndef UNDERSTUDY_VALIDATION_SCHEMAS_H_
#define UNDERSTUDY_VALIDATION_SCHEMAS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace understudy {
namespace validation {

// The schema of document kind `kind` ("scenario", "spec", "session", "sim",
// "sim-meow"): a JSON text ending in a newline. The view points at static
// storage and stays valid for the life of the process. NOT_FOUND for any
// other kind, naming the kinds there are ("unknown schema kind \"x\"; kinds:
// scenario, session, sim, sim-meow, spec"). Thread-safe.
absl::StatusOr<absl::string_view> SchemaText(absl::string_view kind);

// The kinds SchemaText knows, sorted. Thread-safe.
std::vector<std::string> SchemaKinds();

}  // namespace validation
}  // namespace understudy

#endif  // UNDERSTUDY_VALIDATION_SCHEMAS_H_
