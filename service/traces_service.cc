#include "service/traces_service.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "engine/engine.h"
#include "query/assert.h"
#include "query/events.h"
#include "service/event_feed.h"
#include "service/grpc_status.h"
#include "trace/filter.h"
#include "trace/vocabulary.h"

namespace understudy {
namespace service {
namespace {

// How often waits look at the client's cancel and the server's drain.
constexpr absl::Duration kTick = absl::Milliseconds(50);

grpc::Status ShuttingDown() {
  return ToGrpcStatus(absl::UnavailableError("the server is shutting down"));
}


absl::Status ValidateCustomKind(absl::string_view kind) {
  if (kind.empty() || kind.size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("kind: must be 1 to 64 characters, got ", kind.size()));
  }
  const bool lower_start = kind[0] >= 'a' && kind[0] <= 'z';
  const bool rest_ok = kind.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_.") ==
                       absl::string_view::npos;
  if (!lower_start || !rest_ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kind: \"", absl::CHexEscape(kind), "\" is not [a-z][a-z0-9_.]* (e.g. checkpoint, "
        "custom.approval)"));
  }
  for (absl::string_view reserved : trace::event::kEngineKinds) {
    if (kind == reserved) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kind: \"", kind, "\" is understudy's own; name custom events differently (e.g. "
          "custom.", kind, ")"));
    }
  }
  return absl::OkStatus();
}

// A live feed into a queue, for WaitFor (which keeps at most one event).
struct Feed {
  absl::Mutex mu;
  std::deque<v1::TraceEvent> events ABSL_GUARDED_BY(mu);
  bool ended ABSL_GUARDED_BY(mu) = false;
};

}  // namespace

grpc::Status TracesService::Query(grpc::ServerContext*, const v1::QueryRequest* request,
                                  v1::QueryResponse* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  absl::StatusOr<v1::QueryResponse> page = query::Query(source(), *request);
  if (!page.ok()) return ToGrpcStatus(page.status());
  *response = *std::move(page);
  return grpc::Status::OK;
}

grpc::Status TracesService::QueryStream(grpc::ServerContext* context,
                                        const v1::QueryRequest* request,
                                        grpc::ServerWriter<v1::TraceEvent>* writer) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  bool broken = false;
  absl::Status s = query::QueryEach(source(), *request, [&](v1::TraceEvent& e) {
    broken = context->IsCancelled() || !writer->Write(e);
    return !broken;
  });
  if (!s.ok()) return ToGrpcStatus(s);
  if (broken) return ToGrpcStatus(absl::CancelledError("the client went away"));
  return grpc::Status::OK;
}

grpc::Status TracesService::Assert(grpc::ServerContext*, const v1::AssertRequest* request,
                                   v1::AssertResponse* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  absl::StatusOr<v1::AssertResponse> verdict =
      query::AssertRun(source(), request->run(), request->assertions());
  if (!verdict.ok()) return ToGrpcStatus(verdict.status());
  *response = *std::move(verdict);
  return grpc::Status::OK;
}

grpc::Status TracesService::WaitFor(grpc::ServerContext* context,
                                    const v1::WaitForRequest* request, v1::TraceEvent* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  if (request->run().empty()) return ToGrpcStatus(absl::InvalidArgumentError("run: required"));
  if (request->timeout_ms() < 0) {
    return ToGrpcStatus(absl::InvalidArgumentError("timeout_ms: must be 0 or more"));
  }
  absl::StatusOr<trace::EventFilter> filter = trace::EventFilter::Create(request->filter(), "filter");
  if (!filter.ok()) return ToGrpcStatus(filter.status());
  absl::Time deadline = absl::FromChrono(context->deadline());
  if (request->timeout_ms() > 0) {
    deadline = std::min(deadline, Env::Default()->Now() + absl::Milliseconds(request->timeout_ms()));
  }

  // Subscribe first, then read the past up to where the feed starts: no
  // event falls between the two.
  auto feed = std::make_shared<Feed>();
  const trace::EventFilter* match = &*filter;
  absl::StatusOr<std::unique_ptr<engine::EventSubscription>> subscription = engine_->Subscribe(
      request->run(),
      [feed, match](const v1::TraceEvent& e) {
        if (!match->Matches(e)) return;
        absl::MutexLock lock(&feed->mu);
        if (feed->events.empty()) feed->events.push_back(e);
      },
      [feed] {
        absl::MutexLock lock(&feed->mu);
        feed->ended = true;
      });
  if (!subscription.ok() && !absl::IsFailedPrecondition(subscription.status())) {
    return ToGrpcStatus(subscription.status());
  }
  const int64_t before = subscription.ok() ? (*subscription)->first_seq() : 0;
  absl::Status flushed = store_->Flush();
  if (!flushed.ok()) return ToGrpcStatus(flushed);
  std::optional<v1::TraceEvent> found;
  absl::Status read =
      query::ForEachMatching(*store_, request->run(), 0, before, *filter, [&](v1::TraceEvent& e) {
        found = std::move(e);
        return false;
      });
  if (!read.ok()) return ToGrpcStatus(read);
  if (found.has_value()) {
    *response = *std::move(found);
    return grpc::Status::OK;
  }
  if (!subscription.ok()) {
    return ToGrpcStatus(absl::FailedPreconditionError(
        absl::StrCat("no event matches ", filter->Describe(), " and ",
                     query::DescribeRun(source(), request->run()))));
  }
  while (true) {
    bool ended = false;
    {
      absl::MutexLock lock(&feed->mu);
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(feed->mu) {
        return !feed->events.empty() || feed->ended;
      };
      feed->mu.AwaitWithDeadline(absl::Condition(&ready), std::min(deadline, Env::Default()->Now() + kTick));
      if (!feed->events.empty()) {
        *response = std::move(feed->events.front());
        return grpc::Status::OK;
      }
      ended = feed->ended;
    }
    if (ended) {
      return ToGrpcStatus(absl::FailedPreconditionError(absl::StrCat(
          "the run ended with no event matching ", filter->Describe(), "; ",
          query::DescribeRun(source(), request->run()))));
    }
    if (context->IsCancelled()) return ToGrpcStatus(absl::CancelledError("the client went away"));
    if (tracker_->draining()) return ShuttingDown();
    if (Env::Default()->Now() >= deadline) {
      (void)store_->Flush();
      return ToGrpcStatus(absl::DeadlineExceededError(
          absl::StrCat("no event matching ", filter->Describe(), " came in time; ",
                       query::DescribeRun(source(), request->run()))));
    }
  }
}

grpc::Status TracesService::Watch(grpc::ServerContext* context, const v1::WatchRequest* request,
                                  grpc::ServerWriter<v1::TraceEvent>* writer) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  if (request->run().empty()) return ToGrpcStatus(absl::InvalidArgumentError("run: required"));
  if (request->after_seq() < 0) {
    return ToGrpcStatus(absl::InvalidArgumentError("after_seq: must be 0 or more"));
  }
  absl::StatusOr<trace::EventFilter> filter = trace::EventFilter::Create(request->filter(), "filter");
  if (!filter.ok()) return ToGrpcStatus(filter.status());
  // Events wait in the feed while the client reads the ones before, within
  // bounds per watch and over every watch together (service/event_feed.h);
  // past either, the watch ends with RESOURCE_EXHAUSTED saying where to
  // resume.
  EventFeed::Options feed_options;
  feed_options.filter = &*filter;
  feed_options.max_bytes = max_watch_backlog_bytes_;
  feed_options.total_bytes = &watch_backlog_bytes_;
  feed_options.max_total_bytes = max_total_watch_backlog_bytes_;
  absl::StatusOr<std::unique_ptr<EventFeed>> feed =
      EventFeed::Subscribe(engine_, request->run(), feed_options);
  if (!feed.ok() && !absl::IsFailedPrecondition(feed.status())) {
    return ToGrpcStatus(feed.status());
  }
  const int64_t before = feed.ok() ? (*feed)->first_seq() : 0;
  absl::Status flushed = store_->Flush();
  if (!flushed.ok()) return ToGrpcStatus(flushed);
  bool broken = false;
  absl::Status read = query::ForEachMatching(
      *store_, request->run(), request->after_seq(), before, *filter, [&](v1::TraceEvent& e) {
        broken = context->IsCancelled() || !writer->Write(e);
        return !broken;
      });
  if (!read.ok()) return ToGrpcStatus(read);
  if (broken) return ToGrpcStatus(absl::CancelledError("the client went away"));
  // An ended run's trace is complete in the store.
  if (!feed.ok()) return grpc::Status::OK;
  int64_t last_sent = std::max(before - 1, request->after_seq());
  while (true) {
    // Counted against the bounds until written: a batch is backlog too.
    EventFeed::Batch batch = (*feed)->Wait(kTick);
    for (v1::TraceEvent& e : batch.events()) {
      if (e.seq() <= request->after_seq()) continue;
      if (context->IsCancelled() || !writer->Write(e)) {
        return ToGrpcStatus(absl::CancelledError("the client went away"));
      }
      last_sent = e.seq();
    }
    if (batch.overflowed()) {
      return ToGrpcStatus(absl::ResourceExhaustedError(absl::StrCat(
          "watch: the client fell more than ", max_watch_backlog_bytes_,
          " bytes of events behind (it does not read fast enough), or every watch together "
          "more than ",
          max_total_watch_backlog_bytes_, "; the last event it was sent is #", last_sent,
          ": resume with Watch{after_seq: ", last_sent, "}")));
    }
    if (batch.ended()) return grpc::Status::OK;
    if (context->IsCancelled()) return ToGrpcStatus(absl::CancelledError("the client went away"));
    if (tracker_->draining()) return ShuttingDown();
  }
}

grpc::Status TracesService::Emit(grpc::ServerContext*, const v1::EmitRequest* request,
                                 v1::TraceEvent* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  if (request->run().empty()) return ToGrpcStatus(absl::InvalidArgumentError("run: required"));
  absl::Status kind = ValidateCustomKind(request->kind());
  if (!kind.ok()) return ToGrpcStatus(kind);
  size_t bytes = request->agent().size();
  for (const auto& [name, value] : request->attributes()) {
    if (name.empty() || name.size() > 256) {
      return ToGrpcStatus(absl::InvalidArgumentError(absl::StrCat(
          "attributes: names must be 1 to 256 bytes, got ", name.size(), " (\"",
          absl::CHexEscape(name.substr(0, 64)), "\")")));
    }
    bytes += name.size() + value.size();
  }
  if (bytes > (1 << 20)) {
    return ToGrpcStatus(absl::InvalidArgumentError(
        absl::StrCat("attributes: ", bytes, " bytes; a custom event holds at most 1 MiB")));
  }
  v1::TraceEvent event;
  event.set_kind(request->kind());
  event.set_agent(request->agent());
  *event.mutable_attributes() = request->attributes();
  if (!request->agent().empty()) (*event.mutable_attributes())[trace::attr::kGenAiAgentName] = request->agent();
  engine::CallInfo info;
  info.run = request->run();
  absl::StatusOr<v1::TraceEvent> emitted = engine_->Emit(info, std::move(event));
  if (!emitted.ok()) return ToGrpcStatus(emitted.status());
  *response = *std::move(emitted);
  return grpc::Status::OK;
}

}  // namespace service
}  // namespace understudy
