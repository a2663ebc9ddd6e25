// The Traces service: what happened in a run, asked from any language.
//
//   Query / QueryStream   events by run or session, filtered, paged or streamed
//   Assert                verdicts with explanations (trace/assertions.h)
//   WaitFor               the first matching event, past or future
//   Watch                 a run's matching events as they happen
//   Emit                  a custom event from the system under test
//
// Reads wait for pending trace writes to commit, so everything emitted
// before a call is visible to it. Live feeds come from the engine
// (Engine::Subscribe), never from polling the store.
//
// A thin adapter: the reads are query/'s (query/events.h, query/assert.h);
// the waits and the live feeds are the service's own.
//
// Synchronous gRPC service: queries and assertions wait on disk, and WaitFor
// and Watch hold their thread while they wait (bounded by the call's
// deadline, the client's cancel, the run's end and server shutdown).
#ifndef UNDERSTUDY_SERVICE_TRACES_SERVICE_H_
#define UNDERSTUDY_SERVICE_TRACES_SERVICE_H_

#include <atomic>
#include <cstddef>

#include "engine/engine.h"
#include "query/source.h"
#include "service/call_tracker.h"
#include "store/store.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace service {

class TracesService final : public v1::Traces::Service {
 public:
  // Watch holds at most `max_watch_backlog_bytes` of events a client has
  // not read yet, and every watch together at most
  // `max_total_watch_backlog_bytes`; past either, the watch ends with
  // RESOURCE_EXHAUSTED naming the seq to resume after.
  TracesService(engine::Engine* engine, store::Store* store, CallTracker* tracker,
                size_t max_watch_backlog_bytes = 8 << 20,
                size_t max_total_watch_backlog_bytes = 64 << 20)
      : engine_(engine),
        store_(store),
        tracker_(tracker),
        max_watch_backlog_bytes_(max_watch_backlog_bytes),
        max_total_watch_backlog_bytes_(max_total_watch_backlog_bytes) {}

  grpc::Status Query(grpc::ServerContext* context, const v1::QueryRequest* request,
                     v1::QueryResponse* response) override;
  grpc::Status QueryStream(grpc::ServerContext* context, const v1::QueryRequest* request,
                           grpc::ServerWriter<v1::TraceEvent>* writer) override;
  grpc::Status Assert(grpc::ServerContext* context, const v1::AssertRequest* request,
                      v1::AssertResponse* response) override;
  grpc::Status WaitFor(grpc::ServerContext* context, const v1::WaitForRequest* request,
                       v1::TraceEvent* response) override;
  grpc::Status Watch(grpc::ServerContext* context, const v1::WatchRequest* request,
                     grpc::ServerWriter<v1::TraceEvent>* writer) override;
  grpc::Status Emit(grpc::ServerContext* context, const v1::EmitRequest* request,
                    v1::TraceEvent* response) override;

 private:
  query::Source source() const { return query::Source{store_, engine_}; }

  engine::Engine* const engine_;
  store::Store* const store_;
  CallTracker* const tracker_;
  const size_t max_watch_backlog_bytes_;
  const size_t max_total_watch_backlog_bytes_;
  // Events queued by every Watch and not yet written.
  std::atomic<size_t> watch_backlog_bytes_{0};
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_TRACES_SERVICE_H_
