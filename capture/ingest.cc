#include "capture/ingest.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "capture/validate.h"

namespace understudy {
namespace capture {

absl::StatusOr<v1::RecordExchangesResponse> Ingest(store::Store* store, const std::string& session,
                                                   std::vector<v1::Exchange> exchanges,
                                                   bool close) {
  if (session.empty()) return absl::InvalidArgumentError("session: required");
  for (size_t i = 0; i < exchanges.size(); ++i) {
    US_RETURN_IF_ERROR(ValidateExchange(exchanges[i], absl::StrCat("exchanges[", i, "].")));
    exchanges[i].mutable_request()->clear_run();
    exchanges[i].mutable_request()->clear_agent();
  }
  v1::RecordExchangesResponse out;
  out.set_session(session);
  if (exchanges.empty()) {
    US_ASSIGN_OR_RETURN(v1::Session open, store->OpenSessionForAppend(session));
    out.set_version(open.version());
  } else {
    // Finding the open version and appending are one transaction: one
    // commit per call, and no scan of the version's earlier exchanges.
    const int64_t n = static_cast<int64_t>(exchanges.size());
    US_ASSIGN_OR_RETURN(store::AppendResult r,
                        store->AppendToOpenSessionAndWait(session, std::move(exchanges)));
    out.set_version(r.version);
    out.set_committed(n);
    out.set_first_seq(r.first_seq);
    out.set_last_seq(r.last_seq);
  }
  if (close) US_RETURN_IF_ERROR(store->CloseSession(session, out.version()));
  return out;
}

}  // namespace capture
}  // namespace understudy
