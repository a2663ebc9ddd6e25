#include "testgen/run_source.h"

#include <functional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/env.h"
#include "base/status_macros.h"
#include "grpcpp/client_context.h"
#include "query/events.h"
#include "query/runs.h"
#include "trace/vocabulary.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace testgen {
namespace {

// The run record's fields RunData keeps.
RunData FromRun(const v1::Run& run) {
  RunData data;
  data.run = run.id();
  data.session = run.session();
  data.session_version = run.session_version();
  return data;
}

// Same code (gRPC's codes are absl's numbers), the message prefixed with
// what was being read.
absl::Status FromGrpc(const grpc::Status& status, absl::string_view what) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(what, ": ", status.error_message()));
}

void SetDeadline(grpc::ClientContext* context, absl::Duration timeout) {
  context->set_deadline(absl::ToChronoTime(Env::Default()->Now() + timeout));
}

// Every page the server answers `request` with, in order, to `fn` (which
// may move the events out); each call within `timeout`. The first failed
// call's status.
grpc::Status ForEachRemotePage(v1::Traces::Stub& traces, v1::QueryRequest request,
                               absl::Duration timeout,
                               const std::function<void(v1::QueryResponse&)>& fn) {
  while (true) {
    grpc::ClientContext context;
    SetDeadline(&context, timeout);
    v1::QueryResponse page;
    grpc::Status s = traces.Query(&context, request, &page);
    if (!s.ok()) return s;
    fn(page);
    if (page.next_page_token().empty()) return grpc::Status::OK;
    request.set_page_token(page.next_page_token());
  }
}

}  // namespace

absl::StatusOr<RunData> LoadRun(store::Store& store, const std::string& ref) {
  US_ASSIGN_OR_RETURN(const v1::Run run, query::ResolveRunRef(store, ref));
  RunData data = FromRun(run);
  US_ASSIGN_OR_RETURN(data.events, query::ReadRunEvents(store, run.id()));
  if (run.state() != v1::RUN_STATE_ACTIVE) {
    absl::StatusOr<v1::RunSummary> summary = store.GetRunSummary(run.id());
    if (summary.ok()) {
      data.summary = *std::move(summary);
    } else if (!absl::IsNotFound(summary.status())) {
      return summary.status();
    }
  }
  return data;
}

absl::StatusOr<v1::Run> ResolveRun(const std::shared_ptr<grpc::Channel>& channel,
                                   const std::string& ref, absl::Duration timeout) {
  if (ref.empty()) return absl::InvalidArgumentError("no run or session given");
  std::unique_ptr<v1::Runs::Stub> runs = v1::Runs::NewStub(channel);
  std::unique_ptr<v1::Traces::Stub> traces = v1::Traces::NewStub(channel);

  auto get_run = [&](const std::string& id, v1::Run* out) {
    grpc::ClientContext context;
    SetDeadline(&context, timeout);
    v1::GetRunRequest request;
    request.set_run(id);
    return runs->GetRun(&context, request, out);
  };

  v1::Run run;
  std::string asked = ref;  // the run id last asked for
  grpc::Status status = get_run(asked, &run);
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
    // A session: its runs' run_started events come in order of start, so
    // the last names the latest run.
    v1::QueryRequest ask;
    ask.set_session(ref);
    ask.add_kinds(trace::event::kRunStarted);
    ask.set_limit(query::kMaxPage);
    std::string latest;
    grpc::Status s = ForEachRemotePage(*traces, ask, timeout, [&latest](v1::QueryResponse& page) {
      if (!page.events().empty()) latest = page.events(page.events_size() - 1).run();
    });
    if (s.error_code() == grpc::StatusCode::NOT_FOUND ||
        s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      return query::UnknownRunRef(ref);
    }
    if (!s.ok()) return FromGrpc(s, absl::StrCat("runs of session \"", ref, "\""));
    if (latest.empty()) return query::NoRunsOf(ref);
    asked = latest;
    status = get_run(asked, &run);
  }
  if (!status.ok()) return FromGrpc(status, absl::StrCat("run \"", asked, "\""));
  return run;
}

absl::StatusOr<RunData> LoadRun(const std::shared_ptr<grpc::Channel>& channel,
                                const std::string& ref, absl::Duration timeout) {
  US_ASSIGN_OR_RETURN(const v1::Run run, ResolveRun(channel, ref, timeout));
  std::unique_ptr<v1::Traces::Stub> traces = v1::Traces::NewStub(channel);
  RunData data = FromRun(run);
  v1::QueryRequest ask;
  ask.set_run(run.id());
  ask.set_limit(query::kMaxPage);
  grpc::Status s = ForEachRemotePage(*traces, ask, timeout, [&data](v1::QueryResponse& page) {
    for (v1::TraceEvent& e : *page.mutable_events()) data.events.push_back(std::move(e));
  });
  if (!s.ok()) return FromGrpc(s, absl::StrCat("trace of run \"", run.id(), "\""));
  return data;
}

}  // namespace testgen
}  // namespace understudy
