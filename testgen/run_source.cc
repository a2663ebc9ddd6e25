#include "testgen/run_source.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/env.h"
#include "base/status_macros.h"
#include "grpcpp/client_context.h"
#include "replayer/engine.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace testgen {
namespace {

constexpr int kPage = 10000;

absl::Status UnknownRef(const std::string& ref) {
  return absl::NotFoundError(absl::StrCat("no run or session \"", ref, "\""));
}

absl::Status NoRuns(const std::string& ref) {
  return absl::NotFoundError(
      absl::StrCat("session \"", ref, "\" has no runs; record or replay it first"));
}

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

}  // namespace

absl::StatusOr<RunData> LoadRun(store::Store& store, const std::string& ref) {
  if (ref.empty()) return absl::InvalidArgumentError("no run or session given");
  absl::StatusOr<v1::Run> run = store.GetRun(ref);
  if (!run.ok() && !absl::IsNotFound(run.status())) return run.status();
  if (!run.ok()) {
    absl::StatusOr<std::pair<std::string, int64_t>> session = replayer::ParseSessionRef(ref);
    if (!session.ok()) return UnknownRef(ref);
    US_ASSIGN_OR_RETURN(std::vector<v1::Run> runs,
                        store.ListRunsOfSession(session->first, session->second));
    if (runs.empty()) {
      absl::Status known = store.GetSession(session->first, session->second).status();
      if (absl::IsNotFound(known)) return UnknownRef(ref);
      US_RETURN_IF_ERROR(known);
      return NoRuns(ref);
    }
    run = std::move(runs.back());  // in order of start: the latest
  }

  RunData data = FromRun(*run);
  store::EventQuery query;
  query.run = run->id();
  query.limit = kPage;
  while (true) {
    US_ASSIGN_OR_RETURN(store::EventPage page, store.QueryEvents(query));
    for (v1::TraceEvent& e : page.events) data.events.push_back(std::move(e));
    if (page.next_after_seq == 0) break;
    query.after_seq = page.next_after_seq;
  }
  if (run->state() != v1::RUN_STATE_ACTIVE) {
    absl::StatusOr<v1::RunSummary> summary = store.GetRunSummary(run->id());
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
    v1::QueryRequest query;
    query.set_session(ref);
    query.add_kinds("run_started");
    query.set_limit(kPage);
    std::string latest;
    while (true) {
      grpc::ClientContext context;
      SetDeadline(&context, timeout);
      v1::QueryResponse page;
      grpc::Status s = traces->Query(&context, query, &page);
      if (s.error_code() == grpc::StatusCode::NOT_FOUND ||
          s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
        return UnknownRef(ref);
      }
      if (!s.ok()) return FromGrpc(s, absl::StrCat("runs of session \"", ref, "\""));
      if (!page.events().empty()) latest = page.events(page.events_size() - 1).run();
      if (page.next_page_token().empty()) break;
      query.set_page_token(page.next_page_token());
    }
    if (latest.empty()) return NoRuns(ref);
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
  v1::QueryRequest query;
  query.set_run(run.id());
  query.set_limit(kPage);
  while (true) {
    grpc::ClientContext context;
    SetDeadline(&context, timeout);
    v1::QueryResponse page;
    grpc::Status s = traces->Query(&context, query, &page);
    if (!s.ok()) return FromGrpc(s, absl::StrCat("trace of run \"", run.id(), "\""));
    for (v1::TraceEvent& e : *page.mutable_events()) data.events.push_back(std::move(e));
    if (page.next_after_seq() == 0) break;
    query.set_after_seq(page.next_after_seq());
  }
  return data;
}

}  // namespace testgen
}  // namespace understudy
