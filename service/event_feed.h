// A run's live trace events queued for one reader that takes them at its own
// pace: Traces.Watch (a gRPC stream) and the web UI's server-sent events
// (service/ui_watch.h) both read a run through one of these.
//
//   std::atomic<size_t> all_feeds{0};
//   EventFeed::Options options;
//   options.max_bytes = 8 << 20;
//   options.total_bytes = &all_feeds;
//   options.max_total_bytes = 64 << 20;
//   absl::StatusOr<std::unique_ptr<EventFeed>> feed =
//       EventFeed::Subscribe(engine, run_id, options);
//   // Events before (*feed)->first_seq() are in the store; read them there.
//   while (true) {
//     EventFeed::Batch batch = (*feed)->Wait(absl::Milliseconds(50));
//     for (const v1::TraceEvent& e : batch.events()) Send(e);
//     if (batch.overflowed() || batch.ended()) break;
//   }
//
// Memory is bounded: the events queued and not yet taken, plus those taken
// in a Batch that is still alive, count against a bound per feed and a
// bound shared by every feed of one owner. Past either, the queue is dropped
// and the feed reports `overflowed` (and queues nothing more): a reader that
// stops reading must not make the server hold the whole run (20 such gRPC
// watches once held 325 MiB for 15 MiB of events). Nothing is lost: the
// reader resumes from the store after the last event it sent.
#ifndef UNDERSTUDY_SERVICE_EVENT_FEED_H_
#define UNDERSTUDY_SERVICE_EVENT_FEED_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/engine.h"
#include "trace/filter.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace service {

class EventFeed {
 public:
  struct Options {
    // Only events it matches are queued; null queues every event. Not
    // owned; must outlive the feed.
    const trace::EventFilter* filter = nullptr;
    // Serialized bytes of the events this feed may hold.
    size_t max_bytes = 8 << 20;
    // Required: the bytes every feed sharing it holds (the feeds add and
    // remove their own); must outlive the feed and its batches.
    std::atomic<size_t>* total_bytes = nullptr;
    size_t max_total_bytes = 64 << 20;
    // Called after an event is queued, and once the run has ended or the
    // feed overflowed, so that a reader without a thread of its own can
    // schedule a Take. It runs under the run's lock (engine::Engine::
    // Subscribe): it must not block, call the engine or destroy the feed.
    // Null: none (the reader waits with Wait).
    std::function<void()> on_ready;
  };

  // What one Take or Wait took. Its events count against the bounds until
  // the batch is destroyed (they are still held, now by the reader). Move
  // only.
  class Batch {
   public:
    Batch() = default;
    ~Batch();
    Batch(Batch&& other) noexcept;
    Batch& operator=(Batch&& other) noexcept;
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

    // In seq order.
    std::deque<v1::TraceEvent>& events() { return events_; }
    // The run has ended: nothing follows these events.
    bool ended() const { return ended_; }
    // The reader fell behind a bound; queued events were dropped and none
    // follows. Resume from the store after the last event sent.
    bool overflowed() const { return overflowed_; }

   private:
    friend class EventFeed;
    std::deque<v1::TraceEvent> events_;
    bool ended_ = false;
    bool overflowed_ = false;
    std::atomic<size_t>* total_ = nullptr;
    size_t bytes_ = 0;
  };

  // Subscribes to `run_id`'s events from the next one on (Engine::Subscribe).
  // NOT_FOUND for an unknown run; FAILED_PRECONDITION for one that has
  // ended (its trace is complete in the store); INVALID_ARGUMENT without
  // options.total_bytes. `engine` must outlive the feed.
  static absl::StatusOr<std::unique_ptr<EventFeed>> Subscribe(engine::Engine* engine,
                                                              absl::string_view run_id,
                                                              Options options);

  // Stops the subscription (no callback runs afterwards) and gives back
  // what is still queued to the shared total. Not from inside on_ready.
  ~EventFeed();
  EventFeed(const EventFeed&) = delete;
  EventFeed& operator=(const EventFeed&) = delete;

  // The seq of the first event the feed delivers: every earlier event is
  // already queued for the store.
  int64_t first_seq() const;

  // Takes whatever is queued, without waiting. Thread-safe.
  Batch Take();
  // Waits up to `timeout` for an event, the run's end or an overflow, then
  // takes whatever is queued. Thread-safe.
  Batch Wait(absl::Duration timeout);
  // True when a Take would return events or a final state. Thread-safe.
  bool ready();

  struct State;

 private:
  EventFeed() = default;

  std::shared_ptr<State> state_;
  std::unique_ptr<engine::EventSubscription> subscription_;
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_EVENT_FEED_H_
