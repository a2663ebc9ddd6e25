#include "query/events.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/engine.h"
#include "google/protobuf/unknown_field_set.h"
#include "query/runs.h"
#include "store/proto_utf8.h"

namespace understudy {
namespace query {
namespace {

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
absl::StatusOr<std::vector<std::string>> QueryRuns(const Source& source,
                                                   const v1::QueryRequest& request) {
  if (request.run().empty() == request.session().empty()) {
    return absl::InvalidArgumentError("run, session: give exactly one");
  }
  if (!request.run().empty()) {
    US_RETURN_IF_ERROR(GetRun(source, request.run()).status());
    return std::vector<std::string>{request.run()};
  }
  US_ASSIGN_OR_RETURN(auto ref, engine::ParseSessionRef(request.session()));
  absl::StatusOr<std::vector<v1::Run>> runs = RunsOfSession(*source.store, ref.first, ref.second);
  if (absl::IsNotFound(runs.status())) {
    // As an unknown run is.
    return absl::NotFoundError(absl::StrCat("unknown session \"", request.session(), "\""));
  }
  US_RETURN_IF_ERROR(runs.status());
  std::vector<std::string> ids;
  for (const v1::Run& r : *runs) ids.push_back(r.id());
  return ids;
}

// Where a page starts: the run (an index into the query's runs) and the
// seq after which to read it.
struct Cursor {
  size_t run = 0;
  int64_t after_seq = 0;
};

// "<run id>/<seq>": the last event a page returned. Opaque to clients.
std::string PageToken(const std::string& run, int64_t seq) { return absl::StrCat(run, "/", seq); }

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

// What a query reads, checked, once pending writes are committed.
struct Plan {
  trace::EventFilter filter;
  std::vector<std::string> runs;
  Cursor start;
};

absl::StatusOr<Plan> PlanOf(const Source& source, const v1::QueryRequest& request) {
  US_ASSIGN_OR_RETURN(trace::EventFilter filter, QueryFilter(request));
  US_ASSIGN_OR_RETURN(std::vector<std::string> runs, QueryRuns(source, request));
  US_RETURN_IF_ERROR(source.store->Flush());
  US_ASSIGN_OR_RETURN(Cursor start, StartOf(request, runs));
  return Plan{std::move(filter), std::move(runs), start};
}

// The store's part of `f` (kinds, tool, lower seq bound) on `query`.
void Narrow(const v1::EventFilter& f, store::EventQuery* query) {
  query->kinds.assign(f.kinds().begin(), f.kinds().end());
  query->tool = f.tool();
  if (f.min_seq() > 0) query->after_seq = std::max(query->after_seq, f.min_seq() - 1);
}

// Query for a filter the store answers whole: no event parsed, the stored
// bytes go into the response as they are, as the wire form of its repeated
// `events` (unknown fields are written verbatim). 50k events: 1.3 s ->
// see docs/PERFORMANCE.md.
absl::Status QueryRaw(store::Store& store, const Plan& plan, int limit, v1::QueryResponse* response,
                      std::string* last_run, int64_t* last_seq, bool* more) {
  const v1::EventFilter& f = plan.filter.proto();
  google::protobuf::UnknownFieldSet* out =
      response->GetReflection()->MutableUnknownFields(response);
  int count = 0;
  std::string repaired;
  for (size_t i = plan.start.run; i < plan.runs.size() && !*more; ++i) {
    const std::string& run = plan.runs[i];
    store::EventQuery query;
    query.run = run;
    query.after_seq = i == plan.start.run ? plan.start.after_seq : 0;
    Narrow(f, &query);
    absl::Status parse_error;
    US_RETURN_IF_ERROR(
        store.ScanEvents(query, store::Store::Bodies::kAll, [&](const store::StoredEvent& e) {
          if (f.max_seq() > 0 && e.seq > f.max_seq()) return false;
          if (count == limit) {
            *more = true;
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
          *last_run = run;
          *last_seq = e.seq;
          return true;
        }));
    if (!parse_error.ok()) {
      return absl::DataLossError(
          absl::StrCat("run \"", run, "\": stored event seq ", *last_seq + 1, " does not parse"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ForEachPage(
    store::Store& store, store::EventQuery query,
    const std::function<bool(std::vector<v1::TraceEvent>& page, bool last)>& fn) {
  while (true) {
    US_ASSIGN_OR_RETURN(store::EventPage page, store.QueryEvents(query));
    const bool last = page.next_after_seq == 0;
    if (!fn(page.events, last) || last) return absl::OkStatus();
    query.after_seq = page.next_after_seq;
  }
}

absl::Status ForEachEvent(store::Store& store, store::EventQuery query,
                          const std::function<bool(v1::TraceEvent&)>& fn) {
  query.limit = kMaxPage;
  return ForEachPage(store, std::move(query), [&fn](std::vector<v1::TraceEvent>& page, bool) {
    for (v1::TraceEvent& e : page) {
      if (!fn(e)) return false;
    }
    return true;
  });
}

absl::StatusOr<std::vector<v1::TraceEvent>> ReadRunEvents(store::Store& store,
                                                          const std::string& run) {
  std::vector<v1::TraceEvent> events;
  store::EventQuery query;
  query.run = run;
  US_RETURN_IF_ERROR(ForEachEvent(store, std::move(query), [&events](v1::TraceEvent& e) {
    events.push_back(std::move(e));
    return true;
  }));
  return events;
}

absl::Status ForEachMatching(store::Store& store, const std::string& run, int64_t after_seq,
                             int64_t before_seq, const trace::EventFilter& filter,
                             const std::function<bool(v1::TraceEvent&)>& fn) {
  store::EventQuery query;
  query.run = run;
  query.after_seq = after_seq;
  const v1::EventFilter& f = filter.proto();
  Narrow(f, &query);
  if (f.max_seq() > 0) {
    before_seq = before_seq > 0 ? std::min(before_seq, f.max_seq() + 1) : f.max_seq() + 1;
  }
  return ForEachEvent(store, std::move(query), [&](v1::TraceEvent& e) {
    if (before_seq > 0 && e.seq() >= before_seq) return false;
    return !filter.Matches(e) || fn(e);
  });
}

absl::StatusOr<v1::QueryResponse> Query(const Source& source, const v1::QueryRequest& request) {
  if (request.limit() < 0 || request.limit() > kMaxPage) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit: must be 0 (default 1000) to 10000, got ", request.limit()));
  }
  US_ASSIGN_OR_RETURN(Plan plan, PlanOf(source, request));
  const int limit = request.limit() == 0 ? 1000 : request.limit();
  v1::QueryResponse response;
  std::string last_run;
  int64_t last_seq = 0;
  bool more = false;
  const v1::EventFilter& f = plan.filter.proto();
  const bool raw = f.agent().empty() && f.phase().empty() && f.attributes().empty() &&
                   f.attribute_patterns().empty();
  if (raw) {
    US_RETURN_IF_ERROR(
        QueryRaw(*source.store, plan, limit, &response, &last_run, &last_seq, &more));
  } else {
    for (size_t i = plan.start.run; i < plan.runs.size() && !more; ++i) {
      const std::string& run = plan.runs[i];
      const int64_t after = i == plan.start.run ? plan.start.after_seq : 0;
      US_RETURN_IF_ERROR(
          ForEachMatching(*source.store, run, after, 0, plan.filter, [&](v1::TraceEvent& e) {
            if (response.events_size() == limit) {
              more = true;
              return false;
            }
            last_run = run;
            last_seq = e.seq();
            *response.add_events() = std::move(e);
            return true;
          }));
    }
  }
  if (more) {
    response.set_next_page_token(PageToken(last_run, last_seq));
    if (!request.run().empty()) response.set_next_after_seq(last_seq);
  }
  return response;
}

absl::Status QueryEach(const Source& source, const v1::QueryRequest& request,
                       const std::function<bool(v1::TraceEvent&)>& fn) {
  US_ASSIGN_OR_RETURN(Plan plan, PlanOf(source, request));
  bool stopped = false;
  for (size_t i = plan.start.run; i < plan.runs.size() && !stopped; ++i) {
    US_RETURN_IF_ERROR(ForEachMatching(*source.store, plan.runs[i],
                                       i == plan.start.run ? plan.start.after_seq : 0, 0,
                                       plan.filter, [&](v1::TraceEvent& e) {
                                         stopped = !fn(e);
                                         return !stopped;
                                       }));
  }
  return absl::OkStatus();
}

absl::Status ForEachQueriedEvent(const v1::QueryResponse& response,
                                 const std::function<absl::Status(v1::TraceEvent&)>& fn) {
  for (const v1::TraceEvent& parsed : response.events()) {
    v1::TraceEvent e = parsed;
    US_RETURN_IF_ERROR(fn(e));
  }
  const google::protobuf::UnknownFieldSet& raw =
      response.GetReflection()->GetUnknownFields(response);
  for (int i = 0; i < raw.field_count(); ++i) {
    const google::protobuf::UnknownField& field = raw.field(i);
    if (field.number() != v1::QueryResponse::kEventsFieldNumber ||
        field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      continue;
    }
    v1::TraceEvent e;
    if (!e.ParseFromString(field.length_delimited())) {
      return absl::DataLossError("a stored trace event does not parse");
    }
    US_RETURN_IF_ERROR(fn(e));
  }
  return absl::OkStatus();
}

std::string DescribeRun(const Source& source, const std::string& run) {
  absl::StatusOr<v1::Run> r = GetRun(source, run);
  if (!r.ok()) return std::string(r.status().message());
  std::string last;
  int64_t count = 0;
  store::EventQuery query;
  query.run = run;
  query.limit = kMaxPage;
  // Only the tail matters; runs in a wait are small enough to page through.
  // A read error leaves what was counted so far.
  (void)ForEachPage(*source.store, std::move(query), [&](std::vector<v1::TraceEvent>& page, bool) {
    count += static_cast<int64_t>(page.size());
    if (!page.empty()) {
      const v1::TraceEvent& e = page.back();
      last = absl::StrCat("#", e.seq(), " ", e.kind(), e.agent().empty() ? "" : " ", e.agent());
    }
    return true;
  });
  return absl::StrCat("run \"", run, "\" is ",
                      r->state() == v1::RUN_STATE_ACTIVE ? "active" : "ended", " with ", count,
                      " events", last.empty() ? "" : absl::StrCat("; the last is ", last));
}

}  // namespace query
}  // namespace understudy
