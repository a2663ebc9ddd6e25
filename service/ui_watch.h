// The watch streams of the web UI's API (service/ui_api.h, docs/ui.md):
// GET /api/v1/runs/{id}/watch, a run's trace events as server-sent events,
//
//   retry: 2000                       first: reconnect soon after a drop
//   id: SEQ                           per event after the seq asked for,
//   event: trace                      the stored ones first (query/events.h),
//   data: {TraceEvent as JSON}        then the live ones as the run goes on
//   event: end                        once the run has ended
//   data: {}
//   : keepalive                       every `keepalive` while it is quiet
//
// A watch holds no thread while it waits: live events reach it through an
// EventFeed (service/event_feed.h, as Traces.Watch), whose on_ready queues
// one task on the pool that sends what is queued; one such task per watch
// at a time. Memory is bounded by the feeds' bounds and the listener's
// queued-bytes bound per connection: a watch that falls behind, or whose
// client stops reading, ends its stream, and the browser's EventSource
// resumes from the store after the last id it got (nothing is lost).
#ifndef UNDERSTUDY_SERVICE_UI_WATCH_H_
#define UNDERSTUDY_SERVICE_UI_WATCH_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/worker_pool.h"
#include "engine/engine.h"
#include "service/call_tracker.h"
#include "service/http_server.h"
#include "store/store.h"

namespace understudy {
namespace service {

struct UiWatchOptions {
  // Required. Not owned; each must outlive the UiWatches and every task it
  // queued on `pool`.
  engine::Engine* engine = nullptr;  // the live events
  store::Store* store = nullptr;       // the stored events
  CallTracker* tracker = nullptr;      // once it drains, reading them fails
                                       // UNAVAILABLE
  WorkerPool* pool = nullptr;          // runs the sends
  // Tasks that may wait for a thread of `pool` when a watch queues one
  // (WorkerPool::TrySubmit): room for one per watch beyond the pool's other
  // work.
  int max_queued = 64 + 256;
  // Watches open at once (CheckRoom).
  int max_watches = 256;
  // Live events one watch may hold before they are sent, and all watches
  // together (EventFeed::Options).
  size_t max_backlog_bytes = 4 << 20;
  size_t max_total_backlog_bytes = 64 << 20;
  // Between `: keepalive` comments.
  absl::Duration keepalive = absl::Seconds(15);
};

// The open watches of one UiApi. Thread-safe.
class UiWatches {
 public:
  explicit UiWatches(UiWatchOptions options);
  // Shutdown. The pool must not run this object's tasks afterwards (close
  // it first).
  ~UiWatches();
  UiWatches(const UiWatches&) = delete;
  UiWatches& operator=(const UiWatches&) = delete;

  // OK while fewer than max_watches are open; UNAVAILABLE ("busy") past
  // that. For a request to be refused before it queues a Start; the count
  // may change in between.
  absl::Status CheckRoom() ABSL_LOCKS_EXCLUDED(mu_);

  // Streams `run`'s events after `after_seq` to `out` (above) until the run
  // ends, the client goes away, the watch falls behind or Shutdown. An
  // error before the stream starts is answered on `out` as the API's
  // errors are (service/ui_json.h): NOT_FOUND naming an unknown run,
  // UNAVAILABLE once shutting down; a failure to read the store later ends
  // the stream (logged). Blocks while it sends the stored events: call it on
  // a thread of `pool`.
  void Start(const std::string& run, int64_t after_seq, std::shared_ptr<HttpResponder> out)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Ends every open watch's stream without an `end` event (one whose
  // stream has not started yet is answered 503) and makes later Starts
  // answer 503. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Watch;

  // Writes `: keepalive` every `period` while the watch lasts.
  static void ScheduleKeepalive(std::weak_ptr<Watch> weak, absl::Duration period);
  // Sends the stored events after watch.after_seq and before `before_seq`
  // (all of them when 0).
  absl::Status SendStored(Watch& watch, int64_t before_seq);
  // What the feed has queued goes out on the pool, one task per watch at a
  // time.
  void ScheduleDrain(const std::shared_ptr<Watch>& watch);
  void Drain(const std::shared_ptr<Watch>& watch);
  // Ends the watch's stream (with an `end` event when `ended`) and its feed.
  void Finish(const std::shared_ptr<Watch>& watch, bool ended) ABSL_LOCKS_EXCLUDED(mu_);

  const UiWatchOptions options_;
  // Live events every watch holds.
  std::atomic<size_t> backlog_bytes_{0};

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<std::shared_ptr<Watch>> watches_ ABSL_GUARDED_BY(mu_);
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_UI_WATCH_H_
