// Run and session lookup, for every reader of traces: the gRPC services,
// the web UI's JSON API, the CLI and spec generation.
//
//   US_ASSIGN_OR_RETURN(v1::Run run, query::GetRun(source, "r1"));
//   US_ASSIGN_OR_RETURN(v1::Run latest, query::ResolveRunRef(*store, "golden@2"));
#ifndef UNDERSTUDY_QUERY_RUNS_H_
#define UNDERSTUDY_QUERY_RUNS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "query/source.h"
#include "store/store.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace query {

// Run `run`'s record: the engine's (live) when the source has one, else the
// stored one. INVALID_ARGUMENT "run: required" for an empty id; NOT_FOUND for
// an unknown run; the store's errors otherwise. Thread-safe.
absl::StatusOr<v1::Run> GetRun(const Source& source, absl::string_view run);

// The runs of session `name` (any version when `version` is 0), in order of
// start. NOT_FOUND when no such session (version) exists; an empty list for
// a known one no run has used yet; the store's errors otherwise.
absl::StatusOr<std::vector<v1::Run>> RunsOfSession(store::Store& store, const std::string& name,
                                                   int64_t version);

// The run `ref` names: a run id, else a session NAME or NAME@N standing for
// its (version's) latest run, the one started last. A run id is tried
// first. INVALID_ARGUMENT for an empty ref; NOT_FOUND UnknownRunRef(ref)
// when it is neither a run nor a session, NoRunsOf(ref) for a session no
// run has used; the store's errors otherwise.
absl::StatusOr<v1::Run> ResolveRunRef(store::Store& store, const std::string& ref);

// The NOT_FOUND errors of ResolveRunRef, for readers that resolve a ref
// their own way (over gRPC, testgen/run_source.h) and say the same.
absl::Status UnknownRunRef(const std::string& ref);
absl::Status NoRunsOf(const std::string& ref);

// The sessions whose name starts with `prefix` (every version), as
// Sessions.ListSessions answers. The store's errors.
absl::StatusOr<v1::ListSessionsResponse> ListSessions(store::Store& store,
                                                      const std::string& prefix);

// Session `name` at `version` (0: the latest) with its exchanges when
// `include_exchanges`, as Sessions.GetSession answers. NOT_FOUND for an
// unknown session or version; the store's errors otherwise.
absl::StatusOr<v1::GetSessionResponse> GetSession(store::Store& store, const std::string& name,
                                                  int64_t version, bool include_exchanges);

}  // namespace query
}  // namespace understudy

#endif  // UNDERSTUDY_QUERY_RUNS_H_
