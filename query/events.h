// Reading a run's trace events: the one paging loop over the store, and
// Traces.Query's queries (filters, a run or a whole session, pages and
// their cursors), for the gRPC service, the web UI's JSON API, the CLI and
// spec generation alike.
//
//   v1::QueryRequest request;
//   request.set_run("r1");
//   request.add_kinds("tool_call");
//   US_ASSIGN_OR_RETURN(v1::QueryResponse page, query::Query(source, request));
//   // more: request.set_page_token(page.next_page_token()) and ask again.
//
// Reads through a Source wait for pending trace writes to commit first
// (Store::Flush), so everything emitted before a call is visible to it.
#ifndef UNDERSTUDY_QUERY_EVENTS_H_
#define UNDERSTUDY_QUERY_EVENTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "query/source.h"
#include "store/store.h"
#include "trace/filter.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace query {

// The paging loop: calls `fn` with each page of the events `query` selects
// (query.limit events at most, <= 0 for 1000), in seq order, `last` true
// on the final one, until it returns false. `fn` may move the events out.
// Reads committed events only (no flush). The store's errors.
absl::Status ForEachPage(
    store::Store& store, store::EventQuery query,
    const std::function<bool(std::vector<v1::TraceEvent>& page, bool last)>& fn);

// Calls `fn` with each event `query` selects, in seq order, until it
// returns false. Pages of kMaxPage. The store's errors.
absl::Status ForEachEvent(store::Store& store, store::EventQuery query,
                          const std::function<bool(v1::TraceEvent&)>& fn);

// Every committed event of `run`, in seq order (none for an unknown run).
// The store's errors.
absl::StatusOr<std::vector<v1::TraceEvent>> ReadRunEvents(store::Store& store,
                                                          const std::string& run);

// Calls `fn` for each stored event of `run` with after_seq < seq <
// before_seq (0: no bound) that `filter` matches, in seq order, until it
// returns false. The kinds, the tool and the seq range go to the store
// (its kind index and the run's key range); the filter checks the rest.
absl::Status ForEachMatching(store::Store& store, const std::string& run, int64_t after_seq,
                             int64_t before_seq, const trace::EventFilter& filter,
                             const std::function<bool(v1::TraceEvent&)>& fn);

// One page of Traces.Query (proto/understudy/v1/understudy.proto): the
// events of request.run, or of every run of request.session in order of
// start, that its filter matches, after its after_seq or page_token, at
// most its limit (0: 1000). next_page_token (and next_after_seq for a run)
// is set when there are more. A filter the store answers whole (kinds,
// tool, seq range) puts the stored bytes into the response unparsed, as
// unknown fields (ForEachQueriedEvent reads both forms).
// INVALID_ARGUMENT for a limit outside 0..10000, a malformed filter, not
// exactly one of run and session, or a page_token this query did not give;
// NOT_FOUND for an unknown run or session; DATA_LOSS naming a stored event
// that does not parse; the store's errors otherwise.
absl::StatusOr<v1::QueryResponse> Query(const Source& source, const v1::QueryRequest& request);

// Every event Query would return from the request's start on, with no
// limit, parsed, in order, to `fn` until it returns false (then OK).
// Errors as Query's (the limit aside).
absl::Status QueryEach(const Source& source, const v1::QueryRequest& request,
                       const std::function<bool(v1::TraceEvent&)>& fn);

// Calls `fn` with each event of a Query response, in order, and stops at
// the first error it returns. Query may put stored events into the
// response as their stored bytes (unknown fields: the wire form of
// `events`), which a JSON printer would not see: those are parsed here,
// one at a time. DATA_LOSS when one does not parse.
absl::Status ForEachQueriedEvent(const v1::QueryResponse& response,
                                 const std::function<absl::Status(v1::TraceEvent&)>& fn);

// `run "ID" is active with N events; the last is #S KIND AGENT`, or the
// run lookup's error message: for errors that say where a run stands.
std::string DescribeRun(const Source& source, const std::string& run);

}  // namespace query
}  // namespace understudy

#endif  // UNDERSTUDY_QUERY_EVENTS_H_
