// SDK-side capture: exchanges observed by a client, appended to a session.
#ifndef UNDERSTUDY_CAPTURE_INGEST_H_
#define UNDERSTUDY_CAPTURE_INGEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "store/store.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace capture {

// Appends `exchanges` to the open version of `session` (a new version when
// none is open) in one transaction, then closes it when `close`. Returns once
// committed. All or nothing: an invalid exchange fails the whole call with
// INVALID_ARGUMENT naming it ("exchanges[3].request.messages: ...") and
// nothing is stored. `store` is not owned.
absl::StatusOr<v1::RecordExchangesResponse> Ingest(store::Store* store, const std::string& session,
                                                   std::vector<v1::Exchange> exchanges,
                                                   bool close);

}  // namespace capture
}  // namespace understudy

#endif  // UNDERSTUDY_CAPTURE_INGEST_H_
