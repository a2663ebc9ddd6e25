// Where a generated spec or test gets its run from: the database, or a
// running server over gRPC. Both read the same thing: the run's whole trace
// in seq order, and its summary once it ended.
//
//   US_ASSIGN_OR_RETURN(RunData run, LoadRun(*store, "golden"));  // latest run
//   US_ASSIGN_OR_RETURN(GeneratedSpec spec, GenerateSpec(run, {}));
//
// A reference names a run by its id, or a session by NAME or NAME@N, which
// stands for that session's (version's) latest run: the one started last.
// A run id is tried first, so a run and a session of the same name resolve
// to the run.
#ifndef UNDERSTUDY_TESTGEN_RUN_SOURCE_H_
#define UNDERSTUDY_TESTGEN_RUN_SOURCE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "store/store.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace testgen {

namespace v1 = ::understudy::v1;

// One run as the generators read it.
struct RunData {
  std::string run;      // the run's id
  std::string session;  // its session's name ("" for a run without one)
  int64_t session_version = 0;
  std::vector<v1::TraceEvent> events;  // every event of the run, in seq order
  // Set once the run ended, when the source has it: the database keeps
  // summaries; a server exposes none without ending the run, so LoadRun
  // over gRPC leaves this unset.
  std::optional<v1::RunSummary> summary;
};

// Reads the run `ref` names (see above) from `store`, which it only reads.
// NOT_FOUND naming the ref when it is neither a run nor a session with a
// run ("no run or session \"x\""; "session \"golden@2\" has no runs");
// INVALID_ARGUMENT for an empty ref; the store's errors otherwise.
// Thread-safe as the Store is.
absl::StatusOr<RunData> LoadRun(store::Store& store, const std::string& ref);

// The run `ref` names (see above), through a running server's Runs and
// Traces services on `channel` (not owned beyond the call), each call
// within `timeout`: for tools that take a run or a session and then read
// the run their own way. Errors as LoadRun's below.
absl::StatusOr<v1::Run> ResolveRun(const std::shared_ptr<grpc::Channel>& channel,
                                   const std::string& ref, absl::Duration timeout);

// The same through a running server's Runs and Traces services on
// `channel` (not owned beyond the call), each call within `timeout`.
// Errors as above, plus the server's: UNAVAILABLE when it cannot be
// reached, DEADLINE_EXCEEDED past `timeout`, each message naming what was
// asked for.
absl::StatusOr<RunData> LoadRun(const std::shared_ptr<grpc::Channel>& channel,
                                const std::string& ref, absl::Duration timeout);

}  // namespace testgen
}  // namespace understudy

#endif  // UNDERSTUDY_TESTGEN_RUN_SOURCE_H_
