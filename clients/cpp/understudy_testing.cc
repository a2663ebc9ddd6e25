#include "clients/cpp/understudy_testing.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"

namespace understudy {
namespace test {
namespace {

const char* MatchName(v1::SequenceMatch match) {
  switch (match) {
    case v1::SEQUENCE_MATCH_SUBSEQUENCE:
      return "subsequence";
    case v1::SEQUENCE_MATCH_PREFIX:
      return "prefix";
    default:
      return "exact";
  }
}

const char* ComparisonName(v1::Comparison c) {
  switch (c) {
    case v1::COMPARISON_NE:
      return "!=";
    case v1::COMPARISON_LT:
      return "<";
    case v1::COMPARISON_LE:
      return "<=";
    case v1::COMPARISON_GT:
      return ">";
    case v1::COMPARISON_GE:
      return ">=";
    default:
      return "==";
  }
}

std::string DescribeFilter(const v1::EventFilter& f) {
  std::vector<std::string> parts;
  if (f.kinds_size() > 0) parts.push_back(absl::StrCat("kind=", absl::StrJoin(f.kinds(), "|")));
  if (!f.agent().empty()) parts.push_back(absl::StrCat("agent=", f.agent()));
  if (!f.tool().empty()) parts.push_back(absl::StrCat("tool=", f.tool()));
  if (!f.phase().empty()) parts.push_back(absl::StrCat("phase=", f.phase()));
  for (const auto& [k, v] : f.attributes()) parts.push_back(absl::StrCat(k, "=", v));
  for (const auto& [k, v] : f.attribute_patterns()) parts.push_back(absl::StrCat(k, "~", v));
  if (f.min_seq() > 0) parts.push_back(absl::StrCat("seq>=", f.min_seq()));
  if (f.max_seq() > 0) parts.push_back(absl::StrCat("seq<=", f.max_seq()));
  return parts.empty() ? "every event" : absl::StrJoin(parts, " ");
}

// Checks `assertions` when matched; explains with the failed checks.
class AssertionsMatcher : public ::testing::MatcherInterface<const RunTrace&> {
 public:
  explicit AssertionsMatcher(std::vector<v1::Assertion> assertions)
      : assertions_(std::move(assertions)) {}

  bool MatchAndExplain(const RunTrace& trace,
                       ::testing::MatchResultListener* listener) const override {
    absl::StatusOr<v1::AssertResponse> verdict = trace.Check(assertions_);
    if (!verdict.ok()) {
      *listener << "which could not be checked: " << verdict.status();
      return false;
    }
    if (verdict->passed()) return true;
    std::vector<std::string> failed;
    for (const v1::AssertionResult& r : verdict->results()) {
      if (!r.passed()) failed.push_back(r.explanation());
    }
    *listener << "which fails: " << absl::StrJoin(failed, "\n");
    return false;
  }

  void DescribeTo(std::ostream* os) const override {
    std::vector<std::string> parts;
    for (const v1::Assertion& a : assertions_) parts.push_back(Describe(a));
    *os << "passes " << absl::StrJoin(parts, ", and ");
  }

  void DescribeNegationTo(std::ostream* os) const override {
    std::vector<std::string> parts;
    for (const v1::Assertion& a : assertions_) parts.push_back(Describe(a));
    *os << "fails " << absl::StrJoin(parts, ", or ");
  }

 private:
  std::vector<v1::Assertion> assertions_;
};

}  // namespace

absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// ---------------------------------------------------------------------------
// RunTrace

RunTrace::RunTrace(std::shared_ptr<grpc::Channel> channel, std::string run, absl::Duration timeout)
    : channel_(channel),
      traces_(v1::Traces::NewStub(channel)),
      run_(std::move(run)),
      timeout_(timeout) {}

std::unique_ptr<grpc::ClientContext> RunTrace::Context() const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
  return context;
}

absl::StatusOr<v1::AssertResponse> RunTrace::Check(
    const std::vector<v1::Assertion>& assertions) const {
  v1::AssertRequest request;
  request.set_run(run_);
  for (const v1::Assertion& a : assertions) *request.add_assertions() = a;
  v1::AssertResponse response;
  grpc::Status status = traces_->Assert(Context().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<std::vector<v1::TraceEvent>> RunTrace::Events(const v1::EventFilter& filter) const {
  std::vector<v1::TraceEvent> events;
  v1::QueryRequest request;
  request.set_run(run_);
  *request.mutable_filter() = filter;
  request.set_limit(1000);
  while (true) {
    v1::QueryResponse page;
    grpc::Status status = traces_->Query(Context().get(), request, &page);
    if (!status.ok()) return FromGrpc(status);
    for (v1::TraceEvent& e : *page.mutable_events()) events.push_back(std::move(e));
    if (page.next_after_seq() == 0) return events;
    request.set_after_seq(page.next_after_seq());
  }
}

absl::StatusOr<v1::TraceEvent> RunTrace::WaitFor(const v1::EventFilter& filter,
                                                 absl::Duration timeout) const {
  v1::WaitForRequest request;
  request.set_run(run_);
  *request.mutable_filter() = filter;
  request.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
  grpc::ClientContext context;
  // The server answers DEADLINE_EXCEEDED with the run's state at `timeout`;
  // the call's own deadline leaves it time to.
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout + timeout_));
  v1::TraceEvent event;
  grpc::Status status = traces_->WaitFor(&context, request, &event);
  if (!status.ok()) return FromGrpc(status);
  return event;
}

namespace {

// The attributes of a simulated agent's sim.state events (docs/sim.md#trace).
constexpr char kSimState[] = "understudy.sim.state";
constexpr char kSimStateFrom[] = "understudy.sim.state.from";

v1::EventFilter SimStateFilter(const std::string& agent, int64_t after_seq) {
  v1::EventFilter filter;
  filter.add_kinds("sim.state");
  filter.set_agent(agent);
  filter.set_min_seq(after_seq + 1);
  return filter;
}

}  // namespace

absl::StatusOr<v1::TraceEvent> RunTrace::WaitForState(const std::string& agent,
                                                      const std::string& state,
                                                      absl::Duration timeout,
                                                      int64_t after_seq) const {
  v1::EventFilter filter = SimStateFilter(agent, after_seq);
  (*filter.mutable_attributes())[kSimState] = state;
  return WaitFor(filter, timeout);
}

absl::StatusOr<v1::TraceEvent> RunTrace::WaitForDone(const std::string& agent,
                                                     absl::Duration timeout,
                                                     int64_t after_seq) const {
  v1::EventFilter filter = SimStateFilter(agent, after_seq);
  (*filter.mutable_attribute_patterns())[kSimState] = "^(IDLE|DONE|CRASHED)$";
  (*filter.mutable_attribute_patterns())[kSimStateFrom] = "^(WORKING|ASKING)$";
  return WaitFor(filter, timeout);
}

absl::StatusOr<v1::TraceEvent> RunTrace::Emit(const std::string& kind,
                                              const std::map<std::string, std::string>& attributes,
                                              const std::string& agent) const {
  v1::EmitRequest request;
  request.set_run(run_);
  request.set_kind(kind);
  request.set_agent(agent);
  for (const auto& [k, v] : attributes) (*request.mutable_attributes())[k] = v;
  v1::TraceEvent event;
  grpc::Status status = traces_->Emit(Context().get(), request, &event);
  if (!status.ok()) return FromGrpc(status);
  return event;
}

void PrintTo(const RunTrace& trace, std::ostream* os) { *os << "run \"" << trace.run() << "\""; }

// ---------------------------------------------------------------------------
// ScopedRun

absl::StatusOr<ScopedRun> ScopedRun::Start(std::shared_ptr<grpc::Channel> channel,
                                           const v1::StartRunRequest& request,
                                           absl::Duration timeout) {
  std::unique_ptr<v1::Runs::Stub> runs = v1::Runs::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  v1::Run run;
  grpc::Status status = runs->StartRun(&context, request, &run);
  if (!status.ok()) return FromGrpc(status);
  return ScopedRun(std::move(channel), std::move(run), timeout);
}

ScopedRun::ScopedRun(std::shared_ptr<grpc::Channel> channel, v1::Run run, absl::Duration timeout)
    : channel_(std::move(channel)), run_(std::move(run)), timeout_(timeout) {}

ScopedRun::ScopedRun(ScopedRun&& other) noexcept
    : channel_(std::move(other.channel_)),
      run_(std::move(other.run_)),
      timeout_(other.timeout_),
      summary_(std::move(other.summary_)) {
  other.channel_ = nullptr;
}

ScopedRun& ScopedRun::operator=(ScopedRun&& other) noexcept {
  if (this != &other) {
    if (channel_ != nullptr && !summary_.has_value()) End().IgnoreError();
    channel_ = std::move(other.channel_);
    run_ = std::move(other.run_);
    timeout_ = other.timeout_;
    summary_ = std::move(other.summary_);
    other.channel_ = nullptr;
  }
  return *this;
}

ScopedRun::~ScopedRun() {
  if (channel_ != nullptr && !summary_.has_value()) End().IgnoreError();
}

void ScopedRun::Attach(grpc::ClientContext* context, const std::string& agent) const {
  context->AddMetadata("understudy-run", run_.id());
  if (!agent.empty()) context->AddMetadata("understudy-agent", agent);
}

namespace {
std::string RunBase(const std::string& http, const std::string& run, const std::string& agent) {
  std::string base = absl::StartsWith(http, "http://") || absl::StartsWith(http, "https://")
                         ? http
                         : absl::StrCat("http://", http);
  while (absl::EndsWith(base, "/")) base.pop_back();
  absl::StrAppend(&base, "/run/", run);
  if (!agent.empty()) absl::StrAppend(&base, "/agent/", agent);
  return base;
}
}  // namespace

std::string ScopedRun::openai_base_url(const std::string& http, const std::string& agent) const {
  return absl::StrCat(RunBase(http, run_.id(), agent), "/v1");
}

std::string ScopedRun::anthropic_base_url(const std::string& http,
                                          const std::string& agent) const {
  return RunBase(http, run_.id(), agent);
}

absl::StatusOr<v1::RunSummary> ScopedRun::End() {
  if (summary_.has_value()) return *summary_;
  if (channel_ == nullptr) return absl::FailedPreconditionError("moved-from ScopedRun");
  std::unique_ptr<v1::Runs::Stub> runs = v1::Runs::NewStub(channel_);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
  v1::EndRunRequest request;
  request.set_run(run_.id());
  v1::RunSummary summary;
  grpc::Status status = runs->EndRun(&context, request, &summary);
  summary_ = status.ok() ? absl::StatusOr<v1::RunSummary>(std::move(summary))
                         : absl::StatusOr<v1::RunSummary>(FromGrpc(status));
  return *summary_;
}

v1::StartRunRequest Replay(const std::string& session, const std::string& scenario_text,
                           v1::TraceLevel trace_level) {
  v1::StartRunRequest request;
  request.set_mode(v1::RUN_MODE_REPLAY);
  request.set_session(session);
  request.set_scenario_text(scenario_text);
  request.set_trace_level(trace_level);
  return request;
}

v1::StartRunRequest Record(const std::string& session, v1::TraceLevel trace_level) {
  v1::StartRunRequest request;
  request.set_mode(v1::RUN_MODE_RECORD);
  request.set_session(session);
  request.set_trace_level(trace_level);
  return request;
}

// ---------------------------------------------------------------------------
// Assertions

v1::Assertion AgentSequence(const std::vector<std::string>& agents, v1::SequenceMatch match,
                            bool collapse_repeats) {
  v1::Assertion a;
  v1::AgentSequenceAssertion* s = a.mutable_agent_sequence();
  for (const std::string& agent : agents) s->add_agents(agent);
  s->set_match(match);
  s->set_collapse_repeats(collapse_repeats);
  return a;
}

v1::Assertion PhaseTransitions(const std::vector<std::string>& phases, v1::SequenceMatch match) {
  v1::Assertion a;
  v1::PhaseTransitionsAssertion* p = a.mutable_phase_transitions();
  for (const std::string& phase : phases) p->add_phases(phase);
  p->set_match(match);
  return a;
}

v1::Assertion ToolCalls(const std::string& agent, const std::vector<ExpectedCall>& calls,
                        v1::SequenceMatch match) {
  v1::Assertion a;
  v1::ToolCallsAssertion* t = a.mutable_tool_calls();
  t->set_agent(agent);
  for (const ExpectedCall& c : calls) {
    v1::ExpectedToolCall* call = t->add_calls();
    call->set_name(c.name);
    call->set_arguments(c.arguments);
  }
  t->set_match(match);
  return a;
}

v1::Assertion FeedbackPropagated(const std::string& from, const std::string& to,
                                 const std::string& keyword) {
  v1::Assertion a;
  v1::FeedbackPropagatedAssertion* f = a.mutable_feedback_propagated();
  f->set_from(from);
  f->set_to(to);
  f->set_keyword(keyword);
  return a;
}

v1::Assertion Count(const v1::EventFilter& filter, v1::Comparison comparison, int64_t n) {
  v1::Assertion a;
  v1::CountAssertion* c = a.mutable_count();
  *c->mutable_filter() = filter;
  c->set_comparison(comparison);
  c->set_n(n);
  return a;
}

v1::Assertion NoMisses() {
  v1::Assertion a;
  a.set_no_misses(true);
  return a;
}

v1::Assertion AllConsumed() {
  v1::Assertion a;
  a.set_all_consumed(true);
  return a;
}

v1::Assertion Spec(const std::string& text) {
  v1::Assertion a;
  a.set_spec(text);
  return a;
}

v1::EventFilter Kind(const std::vector<std::string>& kinds, const std::string& agent) {
  v1::EventFilter f;
  for (const std::string& k : kinds) f.add_kinds(k);
  f.set_agent(agent);
  return f;
}

std::string Describe(const v1::Assertion& a) {
  switch (a.check_case()) {
    case v1::Assertion::kAgentSequence:
      return absl::StrCat("agent_sequence (", MatchName(a.agent_sequence().match()),
                          a.agent_sequence().collapse_repeats() ? ", repeats collapsed" : "",
                          ") [", absl::StrJoin(a.agent_sequence().agents(), ", "), "]");
    case v1::Assertion::kPhaseTransitions:
      return absl::StrCat("phase_transitions (", MatchName(a.phase_transitions().match()), ") [",
                          absl::StrJoin(a.phase_transitions().phases(), ", "), "]");
    case v1::Assertion::kToolCalls: {
      std::vector<std::string> calls;
      for (const v1::ExpectedToolCall& c : a.tool_calls().calls()) {
        calls.push_back(c.arguments().empty() ? c.name()
                                              : absl::StrCat(c.name(), "(", c.arguments(), ")"));
      }
      return absl::StrCat("tool_calls",
                          a.tool_calls().agent().empty() ? "" : " by " + a.tool_calls().agent(),
                          " (", MatchName(a.tool_calls().match()), ") [",
                          absl::StrJoin(calls, ", "), "]");
    }
    case v1::Assertion::kFeedbackPropagated:
      return absl::StrCat("feedback_propagated \"", a.feedback_propagated().keyword(), "\" from ",
                          a.feedback_propagated().from(), " to ", a.feedback_propagated().to());
    case v1::Assertion::kCount:
      return absl::StrCat("count of ", DescribeFilter(a.count().filter()), " ",
                          ComparisonName(a.count().comparison()), " ", a.count().n());
    case v1::Assertion::kNoMisses:
      return "no_misses";
    case v1::Assertion::kAllConsumed:
      return "all_consumed";
    case v1::Assertion::kSpec:
      return "the spec's checks";
    default:
      return "an assertion with no check set";
  }
}

// ---------------------------------------------------------------------------
// Matchers

::testing::Matcher<const RunTrace&> Satisfies(v1::Assertion assertion) {
  return SatisfiesAll({std::move(assertion)});
}

::testing::Matcher<const RunTrace&> SatisfiesAll(std::vector<v1::Assertion> assertions) {
  return ::testing::MakeMatcher(new AssertionsMatcher(std::move(assertions)));
}

::testing::Matcher<const RunTrace&> SatisfiesSpec(const std::string& text) {
  return Satisfies(Spec(text));
}

::testing::Matcher<const RunTrace&> HasAgentSequence(const std::vector<std::string>& agents,
                                                     v1::SequenceMatch match) {
  return Satisfies(AgentSequence(agents, match));
}

::testing::Matcher<const RunTrace&> HasPhaseTransitions(const std::vector<std::string>& phases,
                                                        v1::SequenceMatch match) {
  return Satisfies(PhaseTransitions(phases, match));
}

::testing::Matcher<const RunTrace&> HasToolCalls(const std::string& agent,
                                                 const std::vector<ExpectedCall>& calls,
                                                 v1::SequenceMatch match) {
  return Satisfies(ToolCalls(agent, calls, match));
}

::testing::Matcher<const RunTrace&> PropagatesFeedback(const std::string& from,
                                                       const std::string& to,
                                                       const std::string& keyword) {
  return Satisfies(FeedbackPropagated(from, to, keyword));
}

::testing::Matcher<const RunTrace&> HasNoMisses() { return Satisfies(NoMisses()); }

::testing::Matcher<const RunTrace&> ConsumedAll() { return Satisfies(AllConsumed()); }

::testing::AssertionResult Passes(const RunTrace& trace,
                                  const std::vector<v1::Assertion>& assertions) {
  absl::StatusOr<v1::AssertResponse> verdict = trace.Check(assertions);
  if (!verdict.ok()) {
    return ::testing::AssertionFailure()
           << "run \"" << trace.run() << "\" could not be checked: " << verdict.status();
  }
  if (verdict->passed()) return ::testing::AssertionSuccess() << verdict->report();
  return ::testing::AssertionFailure() << "run \"" << trace.run() << "\":\n" << verdict->report();
}

}  // namespace test
}  // namespace understudy
