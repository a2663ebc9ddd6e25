#include "service/traces_service.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/node_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/env.h"
#include "base/status_macros.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/unknown_field_set.h"
#include "replayer/engine.h"
#include "service/event_feed.h"
#include "service/grpc_status.h"
#include "store/proto_utf8.h"
#include "trace/assertions.h"
#include "trace/filter.h"

namespace understudy {
namespace service {
namespace {

constexpr int kPage = 10000;
// How often waits look at the client's cancel and the server's drain.
constexpr absl::Duration kTick = absl::Milliseconds(50);

grpc::Status ShuttingDown() {
  return ToGrpcStatus(absl::UnavailableError("the server is shutting down"));
}

// Calls `fn` for each stored event of `run` with after_seq < seq < before_seq
// (0: no bound) that `filter` matches, in seq order, until it returns false.
absl::Status ForEachStored(store::Store* store, const std::string& run, int64_t after_seq,
                           int64_t before_seq, const trace::EventFilter& filter,
                           const std::function<bool(v1::TraceEvent&)>& fn) {
  store::EventQuery query;
  query.run = run;
  query.after_seq = after_seq;
  query.limit = kPage;
  // The kinds, the tool and the seq range go to the store, which reads them
  // from its kind index and the run's key range; the filter checks the rest.
  const v1::EventFilter& f = filter.proto();
  query.kinds.assign(f.kinds().begin(), f.kinds().end());
  query.tool = f.tool();
  if (f.min_seq() > 0) query.after_seq = std::max(query.after_seq, f.min_seq() - 1);
  if (f.max_seq() > 0) before_seq = before_seq > 0 ? std::min(before_seq, f.max_seq() + 1) : f.max_seq() + 1;
  while (true) {
    US_ASSIGN_OR_RETURN(store::EventPage page, store->QueryEvents(query));
    for (v1::TraceEvent& e : page.events) {
      if (before_seq > 0 && e.seq() >= before_seq) return absl::OkStatus();
      if (filter.Matches(e) && !fn(e)) return absl::OkStatus();
    }
    if (page.next_after_seq == 0) return absl::OkStatus();
    query.after_seq = page.next_after_seq;
  }
}

// The filter of a query: its own fields ANDed with `filter`.
absl::StatusOr<trace::EventFilter> QueryFilter(const v1::QueryRequest& request) {
  v1::EventFilter f = request.filter();
  if (!request.kinds().empty()) {
    if (!f.kinds().empty()) {
      return absl::InvalidArgumentError("kinds, filter.kinds: give the kinds once");
    }
    *f.mutable_kinds() = request.kinds();
  }
  if (!request.agent().empty()) {
    if (!f.agent().empty() && f.agent() != request.agent()) {
      return absl::InvalidArgumentError("agent, filter.agent: they differ");
    }
    f.set_agent(request.agent());
  }
  return trace::EventFilter::Create(f, "filter");
}

// The runs a query reads: the run, or every run of the session.
absl::StatusOr<std::vector<std::string>> QueryRuns(replayer::Engine* engine, store::Store* store,
                                                   const v1::QueryRequest& request) {
  if (request.run().empty() == request.session().empty()) {
    return absl::InvalidArgumentError("run, session: give exactly one");
  }
  if (!request.run().empty()) {
    US_RETURN_IF_ERROR(engine->GetRun(request.run()).status());
    return std::vector<std::string>{request.run()};
  }
  US_ASSIGN_OR_RETURN(auto ref, replayer::ParseSessionRef(request.session()));
  US_ASSIGN_OR_RETURN(std::vector<v1::Run> runs, store->ListRunsOfSession(ref.first, ref.second));
  if (runs.empty()) {
    // An unknown session is NOT_FOUND, as an unknown run is; a known one
    // that no run has used yet has no events.
    absl::Status known = store->GetSession(ref.first, ref.second).status();
    if (absl::IsNotFound(known)) {
      return absl::NotFoundError(absl::StrCat("unknown session \"", request.session(), "\""));
    }
    US_RETURN_IF_ERROR(known);
  }
  std::vector<std::string> ids;
  for (const v1::Run& r : runs) ids.push_back(r.id());
  return ids;
}

// Where a page starts: the run (an index into the query's runs) and the
// seq after which to read it.
struct Cursor {
  size_t run = 0;
  int64_t after_seq = 0;
};

// "<run id>/<seq>": the last event a page returned. Opaque to clients.
std::string PageToken(const std::string& run, int64_t seq) {
  return absl::StrCat(run, "/", seq);
}

absl::StatusOr<Cursor> StartOf(const v1::QueryRequest& request,
                               const std::vector<std::string>& runs) {
  Cursor cursor;
  cursor.after_seq = request.after_seq();
  if (request.page_token().empty()) return cursor;
  const absl::string_view token = request.page_token();
  const size_t slash = token.rfind('/');
  int64_t seq = 0;
  if (slash != absl::string_view::npos && absl::SimpleAtoi(token.substr(slash + 1), &seq) &&
      seq > 0) {
    const absl::string_view run = token.substr(0, slash);
    for (size_t i = 0; i < runs.size(); ++i) {
      if (runs[i] == run) return Cursor{i, seq};
    }
  }
  return absl::InvalidArgumentError(
      "page_token: not a token a query like this one returned (pass next_page_token back "
      "unchanged, with the same run or session)");
}

std::string DescribeRun(replayer::Engine* engine, store::Store* store, const std::string& run) {
  absl::StatusOr<v1::Run> r = engine->GetRun(run);
  if (!r.ok()) return std::string(r.status().message());
  std::string last;
  store::EventQuery query;
  query.run = run;
  query.after_seq = 0;
  query.limit = kPage;
  int64_t count = 0;
  // Only the tail matters; runs in a wait are small enough to page through.
  while (true) {
    absl::StatusOr<store::EventPage> page = store->QueryEvents(query);
    if (!page.ok()) break;
    count += static_cast<int64_t>(page->events.size());
    if (!page->events.empty()) {
      const v1::TraceEvent& e = page->events.back();
      last = absl::StrCat("#", e.seq(), " ", e.kind(), e.agent().empty() ? "" : " ", e.agent());
    }
    if (page->next_after_seq == 0) break;
    query.after_seq = page->next_after_seq;
  }
  return absl::StrCat("run \"", run, "\" is ",
                      r->state() == v1::RUN_STATE_ACTIVE ? "active" : "ended", " with ", count,
                      " events", last.empty() ? "" : absl::StrCat("; the last is ", last));
}

// Kinds understudy emits itself; a custom event may not pose as one.
constexpr absl::string_view kReservedKinds[] = {
    "run_started",    "run_ended", "exchange",         "miss",          "agent_execution",
    "tool_call",      "tool_result", "routing_decision", "phase_transition", "workflow_end",
    "ui_call"};

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
  for (absl::string_view reserved : kReservedKinds) {
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
  if (request->limit() < 0 || request->limit() > kPage) {
    return ToGrpcStatus(absl::InvalidArgumentError(
        absl::StrCat("limit: must be 0 (default 1000) to 10000, got ", request->limit())));
  }
  absl::StatusOr<trace::EventFilter> filter = QueryFilter(*request);
  if (!filter.ok()) return ToGrpcStatus(filter.status());
  absl::StatusOr<std::vector<std::string>> runs = QueryRuns(engine_, store_, *request);
  if (!runs.ok()) return ToGrpcStatus(runs.status());
  absl::Status flushed = store_->Flush();
  if (!flushed.ok()) return ToGrpcStatus(flushed);
  absl::StatusOr<Cursor> start = StartOf(*request, *runs);
  if (!start.ok()) return ToGrpcStatus(start.status());
  const int limit = request->limit() == 0 ? 1000 : request->limit();
  std::string last_run;
  int64_t last_seq = 0;
  bool more = false;
  // A filter the store answers whole (kinds, tool, seq range) needs no
  // event parsed: the stored bytes go into the response as they are, as
  // the wire form of its repeated `events` (unknown fields are written
  // verbatim). 50k events: 1.3 s -> see docs/PERFORMANCE.md.
  const v1::EventFilter& f = filter->proto();
  const bool raw = f.agent().empty() && f.phase().empty() && f.attributes().empty() &&
                   f.attribute_patterns().empty();
  if (raw) {
    google::protobuf::UnknownFieldSet* out =
        response->GetReflection()->MutableUnknownFields(response);
    int count = 0;
    std::string repaired;
    for (size_t i = start->run; i < runs->size() && !more; ++i) {
      const std::string& run = (*runs)[i];
      store::EventQuery query;
      query.run = run;
      query.after_seq = i == start->run ? start->after_seq : 0;
      query.kinds.assign(f.kinds().begin(), f.kinds().end());
      query.tool = f.tool();
      if (f.min_seq() > 0) query.after_seq = std::max(query.after_seq, f.min_seq() - 1);
      absl::Status parse_error;
      absl::Status s = store_->ScanEvents(query, store::Store::Bodies::kAll,
                                          [&](const store::StoredEvent& e) {
        if (f.max_seq() > 0 && e.seq > f.max_seq()) return false;
        if (count == limit) {
          more = true;
          return false;
        }
        if (e.legacy) {
          v1::TraceEvent event;
          parse_error = store::ParseStored(e.body, &event);
          if (!parse_error.ok()) return false;
          repaired.clear();
          event.SerializeToString(&repaired);
          out->AddLengthDelimited(1, repaired);
        } else {
          out->AddLengthDelimited(1, std::string(e.body));
        }
        ++count;
        last_run = run;
        last_seq = e.seq;
        return true;
      });
      if (!s.ok()) return ToGrpcStatus(s);
      if (!parse_error.ok()) {
        return ToGrpcStatus(absl::DataLossError(
            absl::StrCat("run \"", run, "\": stored event seq ", last_seq + 1,
                         " does not parse")));
      }
    }
    if (more) {
      response->set_next_page_token(PageToken(last_run, last_seq));
      if (!request->run().empty()) response->set_next_after_seq(last_seq);
    }
    return grpc::Status::OK;
  }
  for (size_t i = start->run; i < runs->size() && !more; ++i) {
    const std::string& run = (*runs)[i];
    const int64_t after = i == start->run ? start->after_seq : 0;
    absl::Status s = ForEachStored(store_, run, after, 0, *filter, [&](v1::TraceEvent& e) {
      if (response->events_size() == limit) {
        more = true;
        return false;
      }
      last_run = run;
      last_seq = e.seq();
      *response->add_events() = std::move(e);
      return true;
    });
    if (!s.ok()) return ToGrpcStatus(s);
  }
  if (more) {
    response->set_next_page_token(PageToken(last_run, last_seq));
    if (!request->run().empty()) response->set_next_after_seq(last_seq);
  }
  return grpc::Status::OK;
}

grpc::Status TracesService::QueryStream(grpc::ServerContext* context,
                                        const v1::QueryRequest* request,
                                        grpc::ServerWriter<v1::TraceEvent>* writer) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  absl::StatusOr<trace::EventFilter> filter = QueryFilter(*request);
  if (!filter.ok()) return ToGrpcStatus(filter.status());
  absl::StatusOr<std::vector<std::string>> runs = QueryRuns(engine_, store_, *request);
  if (!runs.ok()) return ToGrpcStatus(runs.status());
  absl::Status flushed = store_->Flush();
  if (!flushed.ok()) return ToGrpcStatus(flushed);
  absl::StatusOr<Cursor> start = StartOf(*request, *runs);
  if (!start.ok()) return ToGrpcStatus(start.status());
  bool broken = false;
  for (size_t i = start->run; i < runs->size(); ++i) {
    const std::string& run = (*runs)[i];
    absl::Status s = ForEachStored(store_, run, i == start->run ? start->after_seq : 0, 0, *filter,
                                   [&](v1::TraceEvent& e) {
                                     if (context->IsCancelled() || !writer->Write(e)) {
                                       broken = true;
                                       return false;
                                     }
                                     return true;
                                   });
    if (!s.ok()) return ToGrpcStatus(s);
    if (broken) return ToGrpcStatus(absl::CancelledError("the client went away"));
  }
  return grpc::Status::OK;
}

grpc::Status TracesService::Assert(grpc::ServerContext*, const v1::AssertRequest* request,
                                   v1::AssertResponse* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  if (request->run().empty()) return ToGrpcStatus(absl::InvalidArgumentError("run: required"));
  if (request->assertions().empty()) {
    return ToGrpcStatus(absl::InvalidArgumentError("assertions: give at least one"));
  }
  absl::StatusOr<v1::Run> run = engine_->GetRun(request->run());
  if (!run.ok()) return ToGrpcStatus(run.status());
  absl::Status flushed = store_->Flush();
  if (!flushed.ok()) return ToGrpcStatus(flushed);
  // Only the events the checks read are read (trace::ReadPlan), through the
  // run's indexes, so the cost follows this run's size, not the store's: a
  // kind no check reads is skipped, and one of which the checks read only
  // seq, kind and agent comes from the (run, kind, seq, agent) index alone,
  // without its bodies. What is parsed goes into one arena: an event's
  // attribute map is dozens of small allocations, and freeing them one by
  // one was most of the time on large runs (bench/run, perf).
  const trace::ReadPlan plan = trace::ReadPlan::For(request->assertions());
  google::protobuf::Arena arena;
  std::vector<trace::EventRef> events;
  // The kinds and agents of events read only in part: few distinct names,
  // kept once each (node-based, so the views stay put).
  absl::node_hash_set<std::string> names;
  auto intern = [&names](absl::string_view name) -> absl::string_view {
    return *names.emplace(name).first;
  };
  absl::Status corrupt;
  auto take = [&](const store::StoredEvent& row) {
    if (!plan.Reads(row.kind)) return true;
    if (!row.agent.empty() && !plan.ReadsBody(row.kind)) {
      events.push_back({row.seq, intern(row.kind), intern(row.agent), nullptr});
      return true;
    }
    auto* e = google::protobuf::Arena::CreateMessage<v1::TraceEvent>(&arena);
    if (!store::ParseStored(row.body, e).ok()) {
      corrupt = absl::DataLossError(absl::StrCat("run \"", request->run(), "\": stored event seq ",
                                                 row.seq, " does not parse"));
      return false;
    }
    events.push_back({e->seq(), e->kind(), e->agent(), e});
    return true;
  };
  std::vector<store::Store::EventScan> scans;
  if (plan.ReadsAllKinds()) {
    scans.emplace_back().query.run = request->run();
  } else {
    // One index range per kind, in one snapshot; merged by seq below.
    for (const std::string& kind : plan.kinds()) {
      store::Store::EventScan& scan = scans.emplace_back();
      scan.query.run = request->run();
      scan.query.kinds = {kind};
      scan.bodies = plan.ReadsBody(kind) ? store::Store::Bodies::kAll
                                         : store::Store::Bodies::kWhenNoAgent;
    }
  }
  // Each scan gives its events in seq order; where one scan ends and the
  // next begins is noted, and the sorted ranges are merged (linear) below.
  std::vector<size_t> range_ends;
  auto scan_end = [&] { range_ends.push_back(events.size()); };
  absl::Status read = store_->ScanEvents(scans, take, scan_end);
  if (!read.ok()) return ToGrpcStatus(read);
  if (!corrupt.ok()) return ToGrpcStatus(corrupt);
  auto by_seq = [](const trace::EventRef& a, const trace::EventRef& b) { return a.seq < b.seq; };
  for (size_t i = 1; i < range_ends.size(); ++i) {
    std::inplace_merge(events.begin(), events.begin() + static_cast<ptrdiff_t>(range_ends[i - 1]),
                       events.begin() + static_cast<ptrdiff_t>(range_ends[i]), by_seq);
  }
  std::optional<v1::RunSummary> summary;
  if (run->state() != v1::RUN_STATE_ACTIVE) {
    absl::StatusOr<v1::RunSummary> stored = store_->GetRunSummary(request->run());
    if (stored.ok()) summary = *std::move(stored);
  }
  trace::TraceView view;
  view.refs = &events;
  view.summary = summary.has_value() ? &*summary : nullptr;
  std::vector<v1::Assertion> assertions(request->assertions().begin(),
                                        request->assertions().end());
  absl::StatusOr<v1::AssertResponse> verdict = trace::EvaluateAll(assertions, view);
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
  absl::StatusOr<std::unique_ptr<replayer::EventSubscription>> subscription = engine_->Subscribe(
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
  absl::Status read = ForEachStored(store_, request->run(), 0, before, *filter,
                                    [&](v1::TraceEvent& e) {
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
                     DescribeRun(engine_, store_, request->run()))));
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
          DescribeRun(engine_, store_, request->run()))));
    }
    if (context->IsCancelled()) return ToGrpcStatus(absl::CancelledError("the client went away"));
    if (tracker_->draining()) return ShuttingDown();
    if (Env::Default()->Now() >= deadline) {
      (void)store_->Flush();
      return ToGrpcStatus(absl::DeadlineExceededError(
          absl::StrCat("no event matching ", filter->Describe(), " came in time; ",
                       DescribeRun(engine_, store_, request->run()))));
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
  absl::Status read = ForEachStored(store_, request->run(), request->after_seq(), before, *filter,
                                    [&](v1::TraceEvent& e) {
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
  if (!request->agent().empty()) (*event.mutable_attributes())["gen_ai.agent.name"] = request->agent();
  replayer::CallInfo info;
  info.run = request->run();
  absl::StatusOr<v1::TraceEvent> emitted = engine_->Emit(info, std::move(event));
  if (!emitted.ok()) return ToGrpcStatus(emitted.status());
  *response = *std::move(emitted);
  return grpc::Status::OK;
}

}  // namespace service
}  // namespace understudy
