// The tools that read sessions and runs: list_sessions, show_run,
// query_trace, assert_run. Each goes through the server's gRPC services.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/env.h"
#include "base/status_macros.h"
#include "grpcpp/grpcpp.h"
#include "mcpserver/tool_impl.h"
#include "query/timeline.h"
#include "testgen/run_source.h"
#include "trace/proto_json.h"
#include "trace/spec.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace mcpserver {
namespace {

using nlohmann::json;
namespace v1 = ::understudy::v1;

// The most events one query_trace or show_run result carries.
constexpr int64_t kMaxEvents = 5000;

absl::Status NeedServer(const ToolsOptions& options) {
  if (options.channel == nullptr) {
    return absl::FailedPreconditionError(
        "no understudy server to read from (start `understudy mcp` with --db or --addr)");
  }
  return absl::OkStatus();
}

void SetDeadline(grpc::ClientContext* context, const ToolsOptions& options) {
  context->set_deadline(absl::ToChronoTime(Env::Default()->Now() + options.call_timeout));
}

absl::Status FromGrpc(const grpc::Status& s, absl::string_view what) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
}

json EventJson(const v1::TraceEvent& e) {
  return json::parse(trace::ToJson(e), nullptr, /*allow_exceptions=*/false);
}

json WithDescription(json schema, const char* description) {
  schema["description"] = description;
  return schema;
}

json AnyObject(const char* description) {
  return {{"type", "object"}, {"description", description}};
}

// ---------------------------------------------------------------------------

absl::StatusOr<ToolResult> ListSessions(const ToolsOptions& options, const json& args) {
  US_RETURN_IF_ERROR(NeedServer(options));
  auto stub = v1::Sessions::NewStub(options.channel);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::ListSessionsRequest request;
  request.set_prefix(Arg<std::string>(args, "prefix", ""));
  v1::ListSessionsResponse response;
  grpc::Status s = stub->ListSessions(&context, request, &response);
  if (!s.ok()) return FromGrpc(s, "ListSessions");
  json sessions = json::array();
  for (const v1::Session& session : response.sessions()) {
    sessions.push_back(
        {{"name", session.name()},
         {"version", session.version()},
         {"ref", absl::StrCat(session.name(), "@", session.version())},
         {"state", session.state() == v1::SESSION_STATE_OPEN ? "open" : "closed"},
         {"exchanges", session.exchange_count()},
         {"agents", std::vector<std::string>(session.agents().begin(), session.agents().end())},
         {"created_at_micros", session.created_at_micros()}});
  }
  return Structured({{"sessions", std::move(sessions)}});
}

ToolDef ListSessionsDef() {
  json session = ObjectSchema(
      {{"name", {{"type", "string"}}},
       {"version", {{"type", "integer"}}},
       {"ref", {{"type", "string"}, {"description", "NAME@VERSION, for show_run and generate_test_spec"}}},
       {"state", {{"type", "string"}, {"enum", {"open", "closed"}}}},
       {"exchanges", {{"type", "integer"}}},
       {"agents", {{"type", "array"}, {"items", {{"type", "string"}}}}},
       {"created_at_micros", {{"type", "integer"}}}},
      {"name", "version", "ref", "state", "exchanges", "agents", "created_at_micros"});
  return {"list_sessions",
          "List recorded sessions",
          "Every recorded session (each version): its name, version, exchange count and the "
          "agents that spoke in it. Use a session's ref with show_run or generate_test_spec.",
          ObjectSchema({{"prefix", {{"type", "string"}, {"maxLength", 1024},
                                    {"description", "only sessions whose name starts with this"}}}}),
          ObjectSchema({{"sessions", {{"type", "array"}, {"items", session}}}}, {"sessions"}),
          true,
          &ListSessions};
}

// ---------------------------------------------------------------------------

json RunRefSchema() {
  return {{"type", "string"},
          {"minLength", 1},
          {"maxLength", 1024},
          {"description", "a run id, or a session NAME or NAME@VERSION for its latest run"}};
}

absl::StatusOr<ToolResult> ShowRun(const ToolsOptions& options, const json& args) {
  US_RETURN_IF_ERROR(NeedServer(options));
  const std::string ref = args.at("run").get<std::string>();
  US_ASSIGN_OR_RETURN(testgen::RunData run,
                      testgen::LoadRun(options.channel, ref, options.call_timeout));
  query::TimelineOptions timeline_options;
  timeline_options.width = static_cast<int>(Arg<int64_t>(args, "width", 80));
  std::vector<std::string> lines = query::FormatTimeline(run.events, timeline_options);
  // A long run's timeline is cut, saying how to read the rest, so that one
  // answer stays a size an agent (and its context) can take.
  const size_t max_lines = static_cast<size_t>(Arg<int64_t>(args, "max_lines", 2000));
  const bool timeline_truncated = lines.size() > max_lines;
  if (timeline_truncated) {
    const size_t more = lines.size() - max_lines;
    lines.resize(max_lines);
    lines.push_back(absl::StrCat("… ", more, " more lines: query_trace reads the events from a seq on"));
  }
  const bool with_events = Arg<bool>(args, "events", true);
  json events = json::array();
  bool truncated = false;
  if (with_events) {
    for (const v1::TraceEvent& e : run.events) {
      if (static_cast<int64_t>(events.size()) >= kMaxEvents) {
        truncated = true;
        break;
      }
      events.push_back(EventJson(e));
    }
  }
  json structured = {{"run", run.run},
                     {"session", run.session},
                     {"session_version", run.session_version},
                     {"event_count", static_cast<int64_t>(run.events.size())},
                     {"timeline", lines},
                     {"timeline_truncated", timeline_truncated},
                     {"events", std::move(events)},
                     {"events_truncated", truncated}};
  if (run.summary.has_value()) {
    structured["summary"] = json::parse(trace::ToJson(*run.summary), nullptr, false);
  }
  ToolResult result = Structured(std::move(structured));
  // People (and agents) read the timeline first; the JSON is in structuredContent.
  result.text = absl::StrJoin(lines, "\n");
  return result;
}

ToolDef ShowRunDef() {
  return {"show_run",
          "Show a run",
          "What happened in a run, one line per trace event, as `understudy show RUN` prints it "
          "(agents, model answers, tool calls and results, phase transitions, misses), and the "
          "events as JSON as `understudy show --json` prints them.",
          ObjectSchema({{"run", RunRefSchema()},
                        {"width", {{"type", "integer"}, {"minimum", 10}, {"maximum", 100000},
                                   {"description", "characters kept of free text per line (80)"}}},
                        {"events", {{"type", "boolean"},
                                    {"description", "include the events as JSON (true)"}}},
                        {"max_lines", {{"type", "integer"}, {"minimum", 1}, {"maximum", 100000},
                                       {"description", "timeline lines kept (2000)"}}}},
                       {"run"}),
          ObjectSchema(
              {{"run", {{"type", "string"}}},
               {"session", {{"type", "string"}}},
               {"session_version", {{"type", "integer"}}},
               {"event_count", {{"type", "integer"}}},
               {"timeline", {{"type", "array"}, {"items", {{"type", "string"}}}}},
               {"timeline_truncated", {{"type", "boolean"}}},
               {"events", {{"type", "array"}, {"items", AnyObject("a TraceEvent as proto JSON")}}},
               {"events_truncated", {{"type", "boolean"}}},
               {"summary", AnyObject("the RunSummary, once the run ended")}},
              {"run", "session", "session_version", "event_count", "timeline",
               "timeline_truncated", "events", "events_truncated"}),
          true,
          &ShowRun};
}

// ---------------------------------------------------------------------------

absl::StatusOr<ToolResult> QueryTrace(const ToolsOptions& options, const json& args) {
  US_RETURN_IF_ERROR(NeedServer(options));
  v1::QueryRequest request;
  const std::string run = Arg<std::string>(args, "run", "");
  request.set_session(Arg<std::string>(args, "session", ""));
  if (run.empty() == request.session().empty()) {
    return absl::InvalidArgumentError("arguments: give exactly one of \"run\" and \"session\"");
  }
  if (!run.empty()) {
    // A session stands for its latest run, as in show_run and assert_run.
    US_ASSIGN_OR_RETURN(const v1::Run resolved,
                        testgen::ResolveRun(options.channel, run, options.call_timeout));
    request.set_run(resolved.id());
  }
  v1::EventFilter* f = request.mutable_filter();
  for (const std::string& kind : Arg<std::vector<std::string>>(args, "kinds", {})) f->add_kinds(kind);
  f->set_agent(Arg<std::string>(args, "agent", ""));
  f->set_tool(Arg<std::string>(args, "tool", ""));
  f->set_phase(Arg<std::string>(args, "phase", ""));
  for (const auto& [k, v] : Arg<std::map<std::string, std::string>>(args, "attributes", {})) {
    (*f->mutable_attributes())[k] = v;
  }
  for (const auto& [k, v] :
       Arg<std::map<std::string, std::string>>(args, "attribute_patterns", {})) {
    (*f->mutable_attribute_patterns())[k] = v;
  }
  f->set_min_seq(Arg<int64_t>(args, "min_seq", 0));
  f->set_max_seq(Arg<int64_t>(args, "max_seq", 0));
  const int64_t limit = Arg<int64_t>(args, "limit", 100);

  auto stub = v1::Traces::NewStub(options.channel);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  std::unique_ptr<grpc::ClientReader<v1::TraceEvent>> reader = stub->QueryStream(&context, request);
  json events = json::array();
  bool truncated = false;
  v1::TraceEvent event;
  while (reader->Read(&event)) {
    if (static_cast<int64_t>(events.size()) >= limit) {
      truncated = true;
      context.TryCancel();
      break;
    }
    events.push_back(EventJson(event));
  }
  grpc::Status s = reader->Finish();
  if (!s.ok() && !truncated) return FromGrpc(s, "Query");
  const int64_t count = static_cast<int64_t>(events.size());
  return Structured({{"events", std::move(events)}, {"count", count}, {"truncated", truncated}});
}

ToolDef QueryTraceDef() {
  json text = {{"type", "string"}, {"maxLength", 4096}};
  json string_map = {{"type", "object"}, {"additionalProperties", text}};
  json properties = {
      {"run", RunRefSchema()},
      {"session", {{"type", "string"}, {"maxLength", 1024},
                   {"description", "instead of run: every run of this session (NAME or "
                                   "NAME@VERSION)"}}},
      {"kinds", {{"type", "array"}, {"items", text}, {"maxItems", 64},
                 {"description", "event kinds: exchange, tool_call, tool_result, miss, "
                                 "phase_transition, routing_decision, ..."}}},
      {"agent", text},
      {"tool", WithDescription(text, "tool_call/tool_result events of this tool")},
      {"phase", text},
      {"attributes", WithDescription(string_map, "attributes that must equal these values")},
      {"attribute_patterns",
       WithDescription(string_map, "RE2 patterns that must be found in these attributes")},
      {"min_seq", {{"type", "integer"}, {"minimum", 0}}},
      {"max_seq", {{"type", "integer"}, {"minimum", 0}}},
      {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", kMaxEvents},
                 {"description", "the most events returned (100)"}}}};
  return {"query_trace",
          "Query a run's trace",
          "The trace events of a run (or of every run of a session) that match a filter, in seq "
          "order, as Traces.Query answers them. `run` takes a run id, or a session for its "
          "latest run; `session` every run of the session. Every condition given must hold.",
          ObjectSchema(properties),
          ObjectSchema({{"events", {{"type", "array"}, {"items", AnyObject("a TraceEvent")}}},
                        {"count", {{"type", "integer"}}},
                        {"truncated", {{"type", "boolean"},
                                       {"description", "more events matched than `limit`"}}}},
                       {"events", "count", "truncated"}),
          true,
          &QueryTrace};
}

// ---------------------------------------------------------------------------

absl::StatusOr<ToolResult> AssertRun(const ToolsOptions& options, const json& args) {
  US_RETURN_IF_ERROR(NeedServer(options));
  US_ASSIGN_OR_RETURN(std::string spec, DocumentArgument(args, "spec"));
  validation::Report report = trace::ValidateSpec(spec, "spec");
  if (!report.ok()) {
    report.SortByPosition();
    return absl::InvalidArgumentError(
        absl::StrCat("arguments.spec: the spec does not validate (validate_test_spec shows every "
                     "problem with its path):\n",
                     validation::FormatReport(report)));
  }
  const std::string ref = args.at("run").get<std::string>();
  // A session stands for its latest run, as in show_run.
  US_ASSIGN_OR_RETURN(testgen::RunData run,
                      testgen::LoadRun(options.channel, ref, options.call_timeout));
  v1::AssertRequest request;
  request.set_run(run.run);
  request.add_assertions()->set_spec(spec);
  auto stub = v1::Traces::NewStub(options.channel);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::AssertResponse response;
  grpc::Status s = stub->Assert(&context, request, &response);
  if (!s.ok()) return FromGrpc(s, "Assert");
  json results = json::array();
  int passed = 0;
  for (const v1::AssertionResult& r : response.results()) {
    passed += r.passed() ? 1 : 0;
    results.push_back({{"name", r.name()},
                       {"passed", r.passed()},
                       {"explanation", r.explanation()},
                       {"expected", r.expected()},
                       {"actual", r.actual()},
                       {"event_seqs", std::vector<int64_t>(r.event_seqs().begin(),
                                                           r.event_seqs().end())}});
  }
  const int total = response.results_size();
  return Structured({{"run", run.run},
                     {"passed", response.passed()},
                     {"checks", total},
                     {"checks_passed", passed},
                     {"results", std::move(results)},
                     {"report", response.report()}});
}

ToolDef AssertRunDef() {
  json result = ObjectSchema({{"name", {{"type", "string"}}},
                              {"passed", {{"type", "boolean"}}},
                              {"explanation", {{"type", "string"}}},
                              {"expected", {{"type", "string"}}},
                              {"actual", {{"type", "string"}}},
                              {"event_seqs", {{"type", "array"}, {"items", {{"type", "integer"}}}}}},
                             {"name", "passed", "explanation"});
  return {"assert_run",
          "Check a run against a spec",
          "Evaluates an assertion spec (docs/assertions.md; YAML or JSON text, or the parsed "
          "object) on a run's trace: one verdict per check, each failed one with an explanation "
          "that points at the trace events. A spec that does not validate is an error listing "
          "every problem.",
          ObjectSchema({{"run", RunRefSchema()},
                        {"spec", {{"type", {"string", "object"}},
                                  {"description", "the spec document: YAML/JSON text or an object"}}}},
                       {"run", "spec"}),
          ObjectSchema({{"run", {{"type", "string"}}},
                        {"passed", {{"type", "boolean"}}},
                        {"checks", {{"type", "integer"}}},
                        {"checks_passed", {{"type", "integer"}}},
                        {"results", {{"type", "array"}, {"items", result}}},
                        {"report", {{"type", "string"}}}},
                       {"run", "passed", "checks", "checks_passed", "results", "report"}),
          true,
          &AssertRun};
}

}  // namespace

std::vector<ToolDef> TraceTools() {
  return {ListSessionsDef(), ShowRunDef(), QueryTraceDef(), AssertRunDef()};
}

}  // namespace mcpserver
}  // namespace understudy
