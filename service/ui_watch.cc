#include "service/ui_watch.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/env.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "query/events.h"
#include "service/event_feed.h"
#include "service/ui_json.h"

namespace understudy {
namespace service {

// One open watch stream.
struct UiWatches::Watch {
  std::shared_ptr<HttpResponder> out;
  std::string run;
  int64_t after_seq = 0;
  // The last seq sent. Only the one task that sends (Start, then one Drain
  // at a time) touches it.
  int64_t last_sent = 0;

  absl::Mutex mu;
  // Null for a run that had ended when the watch began, and once finished.
  // Destroyed only outside `mu` (its callbacks take `mu`) and never from
  // one of its own callbacks: Finish moves it out first.
  std::unique_ptr<EventFeed> feed ABSL_GUARDED_BY(mu);
  // The stored events are sent: live ones may follow.
  bool live ABSL_GUARDED_BY(mu) = false;
  // The stream has started (else Finish answers 503).
  bool started ABSL_GUARDED_BY(mu) = false;
  // A Drain is queued or running.
  bool scheduled ABSL_GUARDED_BY(mu) = false;
  bool finished ABSL_GUARDED_BY(mu) = false;
};

namespace {

// Stored events a watch reads at a time (events may be large: a page of
// them is held at once), and the bytes it hands the listener at a time
// (well under its queued-bytes bound per connection).
constexpr int kWatchPage = 32;
constexpr size_t kWatchWriteBytes = 64 << 10;

constexpr char kEndFrame[] = "event: end\ndata: {}\n\n";

// One server-sent event for `event`.
absl::Status AppendTraceFrame(const v1::TraceEvent& event, std::string* out) {
  absl::StatusOr<std::string> json = UiMessageJson(event);
  if (!json.ok()) return json.status();
  // The printer escapes newlines inside strings: the data is one line.
  absl::StrAppend(out, "id: ", event.seq(), "\nevent: trace\ndata: ", *json, "\n\n");
  return absl::OkStatus();
}

}  // namespace

UiWatches::UiWatches(UiWatchOptions options) : options_(std::move(options)) {}

UiWatches::~UiWatches() { Shutdown(); }

absl::Status UiWatches::CheckRoom() {
  absl::MutexLock lock(&mu_);
  if (static_cast<int>(watches_.size()) >= options_.max_watches) {
    return absl::UnavailableError(
        absl::StrCat("busy: ", options_.max_watches, " watches are open; close one or try again"));
  }
  return absl::OkStatus();
}

void UiWatches::ScheduleKeepalive(std::weak_ptr<Watch> weak, absl::Duration period) {
  Env::Default()->ScheduleAfter(period, [weak, period] {
    std::shared_ptr<Watch> watch = weak.lock();
    if (watch == nullptr) return;
    {
      absl::MutexLock lock(&watch->mu);
      if (watch->finished) return;
    }
    if (watch->out->cancelled()) return;
    watch->out->Write(": keepalive\n\n");
    ScheduleKeepalive(weak, period);
  });
}

void UiWatches::Start(const std::string& run, int64_t after_seq,
                      std::shared_ptr<HttpResponder> out) {
  if (out->cancelled()) return;
  auto watch = std::make_shared<Watch>();
  watch->out = out;
  watch->run = run;
  watch->after_seq = after_seq;
  watch->last_sent = after_seq;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return RespondUiError(*out, absl::UnavailableError("the server is shutting down"));
    }
    watches_.insert(watch);
  }
  EventFeed::Options feed_options;
  feed_options.max_bytes = options_.max_backlog_bytes;
  feed_options.total_bytes = &backlog_bytes_;
  feed_options.max_total_bytes = options_.max_total_backlog_bytes;
  std::weak_ptr<Watch> weak = watch;
  // Under the run's lock: only schedules.
  feed_options.on_ready = [this, weak] {
    if (std::shared_ptr<Watch> w = weak.lock()) ScheduleDrain(w);
  };
  absl::StatusOr<std::unique_ptr<EventFeed>> feed =
      EventFeed::Subscribe(options_.engine, run, feed_options);
  if (!feed.ok() && !absl::IsFailedPrecondition(feed.status())) {
    {
      absl::MutexLock lock(&mu_);
      watches_.erase(watch);
    }
    return RespondUiError(*out, UiRunStatus(feed.status(), run));
  }
  // Events before it are in the store (or queued for it); an ended run's
  // are all there.
  const bool active = feed.ok();
  const int64_t before = active ? (*feed)->first_seq() : 0;
  {
    absl::MutexLock lock(&watch->mu);
    if (!watch->finished) {
      if (active) watch->feed = *std::move(feed);
      // Under the lock, so that Finish ends a stream that has started and
      // answers one that has not.
      watch->started = true;
      out->StartStream(200, {{"content-type", "text/event-stream"},
                             {"cache-control", "no-cache"},
                             {"x-content-type-options", "nosniff"},
                             {"x-accel-buffering", "no"}});
    }
  }
  // Finished already (shutdown): the feed, if any, goes here, outside the
  // watch's lock.
  if (feed.ok()) feed->reset();
  out->OnCancel([this, weak] {
    std::shared_ptr<Watch> w = weak.lock();
    if (w == nullptr) return;
    // Not here (a listener thread): ending the feed waits for the run's lock.
    if (!options_.pool->TrySubmit([this, w] { Finish(w, false); }, options_.max_queued)) {
      Finish(w, false);
    }
  });
  // Reconnect soon after a drop: nothing is lost, the browser resumes after
  // the last id it got.
  out->Write("retry: 2000\n\n");
  absl::Status sent = SendStored(*watch, before);
  if (!sent.ok()) {
    Log(LogLevel::kWarning, "ui_watch_failed", {{"run", run}, {"status", sent.ToString()}});
    return Finish(watch, false);
  }
  if (!active) return Finish(watch, true);
  ScheduleKeepalive(weak, options_.keepalive);
  {
    absl::MutexLock lock(&watch->mu);
    watch->live = true;
  }
  // What came while the stored events went out.
  ScheduleDrain(watch);
}

absl::Status UiWatches::SendStored(Watch& watch, int64_t before_seq) {
  // Whether the stream goes on: the client is there and the watch open.
  auto going = [&watch] {
    if (watch.out->cancelled()) return false;
    absl::MutexLock lock(&watch.mu);
    return !watch.finished;
  };
  if (!going() || (before_seq > 0 && watch.after_seq >= before_seq - 1)) return absl::OkStatus();
  {
    TrackedCall call(options_.tracker);
    if (!call.admitted()) return absl::UnavailableError("the server is shutting down");
    // Everything before the feed's first event was queued for the store.
    US_RETURN_IF_ERROR(options_.store->Flush());
  }
  store::EventQuery stored;
  stored.run = watch.run;
  stored.after_seq = watch.after_seq;
  stored.limit = kWatchPage;
  std::string chunk;
  absl::Status failed;
  US_RETURN_IF_ERROR(query::ForEachPage(
      *options_.store, std::move(stored), [&](std::vector<v1::TraceEvent>& page, bool) {
        if (!going()) return false;
        if (options_.tracker->draining()) {
          failed = absl::UnavailableError("the server is shutting down");
          return false;
        }
        // Past the feed's first event: the feed has the rest.
        bool reached = false;
        for (const v1::TraceEvent& e : page) {
          if (before_seq > 0 && e.seq() >= before_seq) {
            reached = true;
            break;
          }
          failed = AppendTraceFrame(e, &chunk);
          if (!failed.ok()) return false;
          watch.last_sent = e.seq();
          if (chunk.size() >= kWatchWriteBytes) {
            watch.out->Write(std::exchange(chunk, std::string()));
          }
        }
        if (!chunk.empty()) watch.out->Write(std::exchange(chunk, std::string()));
        return !reached;
      }));
  return failed;
}

void UiWatches::ScheduleDrain(const std::shared_ptr<Watch>& watch) {
  {
    absl::MutexLock lock(&watch->mu);
    if (!watch->live || watch->scheduled || watch->finished) return;
    watch->scheduled = true;
  }
  // One pending Drain per watch at most, so room for every watch.
  if (!options_.pool->TrySubmit([this, watch] { Drain(watch); }, options_.max_queued)) {
    // Stopping: Shutdown finishes the watch.
    absl::MutexLock lock(&watch->mu);
    watch->scheduled = false;
  }
}

void UiWatches::Drain(const std::shared_ptr<Watch>& watch) {
  while (true) {
    if (watch->out->cancelled()) return Finish(watch, false);
    EventFeed::Batch batch;
    {
      absl::MutexLock lock(&watch->mu);
      if (watch->finished || watch->feed == nullptr) return;
      batch = watch->feed->Take();
    }
    std::string chunk;
    for (const v1::TraceEvent& e : batch.events()) {
      if (e.seq() <= watch->last_sent) continue;
      if (absl::Status s = AppendTraceFrame(e, &chunk); !s.ok()) {
        Log(LogLevel::kWarning, "ui_watch_failed", {{"run", watch->run}, {"status", s.ToString()}});
        return Finish(watch, false);
      }
      watch->last_sent = e.seq();
      if (chunk.size() >= kWatchWriteBytes) watch->out->Write(std::exchange(chunk, std::string()));
    }
    if (!chunk.empty()) watch->out->Write(std::move(chunk));
    // Fell behind: the stream ends, and the browser resumes from the store
    // after the last id it got.
    if (batch.overflowed()) return Finish(watch, false);
    if (batch.ended()) return Finish(watch, true);
    absl::MutexLock lock(&watch->mu);
    if (watch->finished || watch->feed == nullptr) return;
    // An event queued after the Take is seen here, or its on_ready finds
    // `scheduled` false and schedules the next Drain.
    if (!watch->feed->ready()) {
      watch->scheduled = false;
      return;
    }
  }
}

void UiWatches::Finish(const std::shared_ptr<Watch>& watch, bool ended) {
  std::unique_ptr<EventFeed> feed;
  bool started;
  {
    absl::MutexLock lock(&watch->mu);
    if (watch->finished) return;
    watch->finished = true;
    started = watch->started;
    feed = std::move(watch->feed);
  }
  // Outside watch->mu: its callbacks take it.
  feed.reset();
  if (!started) {
    RespondUiError(*watch->out, absl::UnavailableError("the server is shutting down"));
  } else {
    if (ended) watch->out->Write(kEndFrame);
    watch->out->End();
  }
  absl::MutexLock lock(&mu_);
  watches_.erase(watch);
}

void UiWatches::Shutdown() {
  std::vector<std::shared_ptr<Watch>> open;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    open.assign(watches_.begin(), watches_.end());
  }
  for (const std::shared_ptr<Watch>& watch : open) Finish(watch, false);
}

}  // namespace service
}  // namespace understudy
