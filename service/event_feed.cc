#include "service/event_feed.h"

#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace understudy {
namespace service {

struct EventFeed::State {
  absl::Mutex mu;
  std::deque<v1::TraceEvent> events ABSL_GUARDED_BY(mu);
  // Serialized bytes of `events`, counted in *total too.
  size_t bytes ABSL_GUARDED_BY(mu) = 0;
  bool ended ABSL_GUARDED_BY(mu) = false;
  bool overflowed ABSL_GUARDED_BY(mu) = false;
  std::atomic<size_t>* total = nullptr;

  // Gives the queued bytes back to the total and forgets them.
  void ReleaseLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    total->fetch_sub(bytes, std::memory_order_relaxed);
    bytes = 0;
  }

  bool ReadyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return !events.empty() || ended || overflowed;
  }

  Batch TakeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    Batch batch;
    batch.events_.swap(events);
    batch.ended_ = ended;
    batch.overflowed_ = overflowed;
    // Still counted while the reader holds them.
    batch.total_ = total;
    batch.bytes_ = bytes;
    bytes = 0;
    return batch;
  }
};

EventFeed::Batch::~Batch() {
  if (total_ != nullptr) total_->fetch_sub(bytes_, std::memory_order_relaxed);
}

EventFeed::Batch::Batch(Batch&& other) noexcept
    : events_(std::move(other.events_)),
      ended_(other.ended_),
      overflowed_(other.overflowed_),
      total_(other.total_),
      bytes_(other.bytes_) {
  other.total_ = nullptr;
  other.bytes_ = 0;
}

EventFeed::Batch& EventFeed::Batch::operator=(Batch&& other) noexcept {
  if (this == &other) return *this;
  if (total_ != nullptr) total_->fetch_sub(bytes_, std::memory_order_relaxed);
  events_ = std::move(other.events_);
  ended_ = other.ended_;
  overflowed_ = other.overflowed_;
  total_ = other.total_;
  bytes_ = other.bytes_;
  other.total_ = nullptr;
  other.bytes_ = 0;
  return *this;
}

absl::StatusOr<std::unique_ptr<EventFeed>> EventFeed::Subscribe(engine::Engine* engine,
                                                                absl::string_view run_id,
                                                                Options options) {
  if (options.total_bytes == nullptr) {
    return absl::InvalidArgumentError("EventFeed: options.total_bytes is required");
  }
  auto state = std::make_shared<State>();
  state->total = options.total_bytes;
  const trace::EventFilter* filter = options.filter;
  const size_t max_bytes = options.max_bytes;
  const size_t max_total = options.max_total_bytes;
  std::function<void()> on_ready = options.on_ready;
  absl::StatusOr<std::unique_ptr<engine::EventSubscription>> subscription = engine->Subscribe(
      run_id,
      [state, filter, max_bytes, max_total, on_ready](const v1::TraceEvent& e) {
        if (filter != nullptr && !filter->Matches(e)) return;
        const size_t size = e.ByteSizeLong();
        {
          absl::MutexLock lock(&state->mu);
          if (state->overflowed) return;
          if (state->bytes + size > max_bytes ||
              state->total->load(std::memory_order_relaxed) + size > max_total) {
            state->overflowed = true;
            state->ReleaseLocked();
            state->events.clear();
          } else {
            state->bytes += size;
            state->total->fetch_add(size, std::memory_order_relaxed);
            state->events.push_back(e);
          }
        }
        if (on_ready) on_ready();
      },
      [state, on_ready] {
        {
          absl::MutexLock lock(&state->mu);
          state->ended = true;
        }
        if (on_ready) on_ready();
      });
  if (!subscription.ok()) return subscription.status();
  std::unique_ptr<EventFeed> feed(new EventFeed());
  feed->state_ = std::move(state);
  feed->subscription_ = *std::move(subscription);
  return feed;
}

EventFeed::~EventFeed() {
  // No callback runs once the subscription is gone.
  subscription_.reset();
  absl::MutexLock lock(&state_->mu);
  state_->ReleaseLocked();
  state_->events.clear();
}

int64_t EventFeed::first_seq() const { return subscription_->first_seq(); }

EventFeed::Batch EventFeed::Take() {
  absl::MutexLock lock(&state_->mu);
  return state_->TakeLocked();
}

EventFeed::Batch EventFeed::Wait(absl::Duration timeout) {
  State* state = state_.get();
  absl::MutexLock lock(&state->mu);
  auto ready = [state]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) { return state->ReadyLocked(); };
  state->mu.AwaitWithTimeout(absl::Condition(&ready), timeout);
  return state->TakeLocked();
}

bool EventFeed::ready() {
  absl::MutexLock lock(&state_->mu);
  return state_->ReadyLocked();
}

}  // namespace service
}  // namespace understudy
