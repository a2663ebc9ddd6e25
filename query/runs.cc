#include "query/runs.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/engine.h"

namespace understudy {
namespace query {

absl::StatusOr<v1::Run> GetRun(const Source& source, absl::string_view run) {
  if (run.empty()) return absl::InvalidArgumentError("run: required");
  if (source.engine != nullptr) return source.engine->GetRun(run);
  return source.store->GetRun(run);
}

absl::StatusOr<std::vector<v1::Run>> RunsOfSession(store::Store& store, const std::string& name,
                                                   int64_t version) {
  US_ASSIGN_OR_RETURN(std::vector<v1::Run> runs, store.ListRunsOfSession(name, version));
  if (runs.empty()) {
    // An unknown session is NOT_FOUND; a known one that no run has used yet
    // has no runs.
    US_RETURN_IF_ERROR(store.GetSession(name, version).status());
  }
  return runs;
}

absl::Status UnknownRunRef(const std::string& ref) {
  return absl::NotFoundError(absl::StrCat("no run or session \"", ref, "\""));
}

absl::Status NoRunsOf(const std::string& ref) {
  return absl::NotFoundError(
      absl::StrCat("session \"", ref, "\" has no runs; record or replay it first"));
}

absl::StatusOr<v1::Run> ResolveRunRef(store::Store& store, const std::string& ref) {
  if (ref.empty()) return absl::InvalidArgumentError("no run or session given");
  absl::StatusOr<v1::Run> run = store.GetRun(ref);
  if (run.ok() || !absl::IsNotFound(run.status())) return run;
  absl::StatusOr<std::pair<std::string, int64_t>> session = engine::ParseSessionRef(ref);
  if (!session.ok()) return UnknownRunRef(ref);
  absl::StatusOr<std::vector<v1::Run>> runs = RunsOfSession(store, session->first, session->second);
  if (absl::IsNotFound(runs.status())) return UnknownRunRef(ref);
  US_RETURN_IF_ERROR(runs.status());
  if (runs->empty()) return NoRunsOf(ref);
  return std::move(runs->back());  // in order of start: the latest
}

absl::StatusOr<v1::ListSessionsResponse> ListSessions(store::Store& store,
                                                      const std::string& prefix) {
  US_ASSIGN_OR_RETURN(std::vector<v1::Session> sessions, store.ListSessions(prefix));
  v1::ListSessionsResponse response;
  for (v1::Session& s : sessions) *response.add_sessions() = std::move(s);
  return response;
}

absl::StatusOr<v1::GetSessionResponse> GetSession(store::Store& store, const std::string& name,
                                                  int64_t version, bool include_exchanges) {
  US_ASSIGN_OR_RETURN(v1::Session session, store.GetSession(name, version));
  v1::GetSessionResponse response;
  if (include_exchanges) {
    US_ASSIGN_OR_RETURN(std::vector<v1::Exchange> exchanges,
                        store.LoadExchanges(session.name(), session.version()));
    for (v1::Exchange& e : exchanges) *response.add_exchanges() = std::move(e);
  }
  *response.mutable_session() = std::move(session);
  return response;
}

}  // namespace query
}  // namespace understudy
