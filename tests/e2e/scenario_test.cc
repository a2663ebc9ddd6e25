// Scenarios through the real binary over gRPC: a run scripted by a scenario
// (no session needed) answers from its rules and default; hangs end at the
// caller's deadline or at the run's end, disconnects cut streams after the
// chunks asked for, errors carry their code; `serve --scenario` refuses an
// invalid file and loads a pack; every shipped pack loads by name;
// pathological patterns cost linear time; `times` holds under concurrency.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "tests/e2e/e2e_test_base.h"

namespace understudy {
namespace e2e {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

constexpr char kAgent[] = "tester";

// StartRun in replay mode with `text` (inline) or `scenario` (pack or path)
// and no session.
absl::StatusOr<v1::Run> StartScenarioRun(Clients& c, const std::string& text,
                                         const std::string& scenario = "",
                                         const std::string& run_id = "") {
  v1::StartRunRequest request;
  request.set_mode(v1::RUN_MODE_REPLAY);
  request.set_scenario_text(text);
  request.set_scenario(scenario);
  request.set_run_id(run_id);
  v1::Run run;
  auto context = CallContext();
  grpc::Status s = c.runs->StartRun(context.get(), request, &run);
  if (!s.ok()) return FromGrpc(s);
  return run;
}

v1::CompletionRequest UserRequest(const std::string& text) {
  v1::CompletionRequest request;
  request.set_model("scripted-1");
  v1::Message* system = request.add_messages();
  system->set_role("system");
  system->set_content("You are the tester.");
  v1::Message* user = request.add_messages();
  user->set_role("user");
  user->set_content(text);
  return request;
}

// Complete with a deadline `timeout` from now.
absl::StatusOr<v1::CompletionResponse> CompleteWithin(Clients& c, const std::string& run,
                                                      const std::string& text,
                                                      absl::Duration timeout = kCallTimeout,
                                                      const std::string& agent = kAgent) {
  v1::CompletionResponse response;
  auto context = CallContext(run, agent, timeout);
  grpc::Status s = c.model->Complete(context.get(), UserRequest(text), &response);
  if (!s.ok()) return FromGrpc(s);
  return response;
}

// What a StreamComplete caller saw: the chunks that arrived, then how the
// call ended (kept together: a cut stream has both).
struct StreamOutcome {
  std::vector<v1::CompletionChunk> chunks;
  absl::Status status;
};

StreamOutcome StreamWithin(Clients& c, const std::string& run, const std::string& text,
                           absl::Duration timeout = kCallTimeout,
                           const std::string& agent = kAgent) {
  auto context = CallContext(run, agent, timeout);
  std::unique_ptr<grpc::ClientReader<v1::CompletionChunk>> reader =
      c.model->StreamComplete(context.get(), UserRequest(text));
  StreamOutcome out;
  v1::CompletionChunk chunk;
  // Bounded by the context's deadline.
  while (reader->Read(&chunk)) out.chunks.push_back(chunk);
  out.status = FromGrpc(reader->Finish());
  return out;
}

std::vector<std::string> Contents(const std::vector<v1::CompletionChunk>& chunks) {
  std::vector<std::string> contents;
  for (const v1::CompletionChunk& chunk : chunks) contents.push_back(chunk.content());
  return contents;
}

// Exchange events of `run` whose rule is `rule`.
int CountRuleEvents(Clients& c, const std::string& run, const std::string& rule) {
  absl::StatusOr<std::vector<v1::TraceEvent>> events = QueryTrace(c, run, {"exchange"});
  if (!events.ok()) return -1;
  return static_cast<int>(std::count_if(events->begin(), events->end(), [&](const auto& e) {
    auto it = e.attributes().find("understudy.rule.name");
    return it != e.attributes().end() && it->second == rule;
  }));
}

class ScenarioE2eTest : public E2eTest {};

// ---------------------------------------------------------------------------
// hang

constexpr char kHangs[] = R"yaml(schema: understudy.scenario/v1
name: hangs
rules:
  - name: stall
    when: {user_message: 'please hang'}
    hang: {}
default:
  respond: {content: "still here"}
)yaml";

TEST_F(ScenarioE2eTest, HangEndsAtTheClientsDeadline) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScenarioRun(c, kHangs));

  absl::Time start = absl::Now();
  EXPECT_THAT(CompleteWithin(c, run.id(), "please hang", absl::Milliseconds(300)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(290));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));

  start = absl::Now();
  StreamOutcome stream = StreamWithin(c, run.id(), "please hang", absl::Milliseconds(300));
  EXPECT_THAT(stream.status, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(stream.chunks, IsEmpty());
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(290));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));

  // Nothing is stuck: the next calls answer at once.
  start = absl::Now();
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse answer, CompleteWithin(c, run.id(), "hello"));
  EXPECT_EQ(answer.message().content(), "still here");
  StreamOutcome streamed = StreamWithin(c, run.id(), "hello again");
  EXPECT_OK(streamed.status);
  EXPECT_THAT(Contents(streamed.chunks), ElementsAre("still ", "here", ""));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(CountRuleEvents(c, run.id(), "stall"), 2);

  ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, EndRun(c, run.id()));
  EXPECT_EQ(summary.run().state(), v1::RUN_STATE_ENDED);
  EXPECT_THAT(summary.failures(), IsEmpty());
  c.Disconnect();
  EXPECT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
}

TEST_F(ScenarioE2eTest, EndRunCancelsCallsHangingWithoutADeadline) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScenarioRun(c, kHangs));

  // No deadline: only the run's end can answer these. Each is cancelled
  // from this side if the server has not answered 10 s after EndRun, so a
  // bug fails the test instead of hanging it.
  grpc::ClientContext unary_context;
  unary_context.AddMetadata("understudy-run", run.id());
  unary_context.AddMetadata("understudy-agent", kAgent);
  grpc::ClientContext stream_context;
  stream_context.AddMetadata("understudy-run", run.id());
  stream_context.AddMetadata("understudy-agent", kAgent);
  absl::Notification unary_done, stream_done;
  grpc::Status unary_status, stream_status;
  int stream_chunks = 0;
  std::thread unary([&] {
    v1::CompletionResponse response;
    unary_status = c.model->Complete(&unary_context, UserRequest("please hang"), &response);
    unary_done.Notify();
  });
  std::thread stream([&] {
    auto reader = c.model->StreamComplete(&stream_context, UserRequest("please hang, streamed"));
    v1::CompletionChunk chunk;
    while (reader->Read(&chunk)) ++stream_chunks;
    stream_status = reader->Finish();
    stream_done.Notify();
  });

  // Both calls have reached the rule (each is traced when it is decided).
  const bool both_hanging =
      WaitFor([&] { return CountRuleEvents(c, run.id(), "stall") == 2; }, absl::Seconds(10));
  EXPECT_TRUE(both_hanging);
  EXPECT_FALSE(unary_done.HasBeenNotified());
  EXPECT_FALSE(stream_done.HasBeenNotified());

  const absl::Time start = absl::Now();
  absl::StatusOr<v1::RunSummary> summary = EndRun(c, run.id());
  EXPECT_OK(summary);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  const bool unary_ended = unary_done.WaitForNotificationWithTimeout(absl::Seconds(10));
  const bool stream_ended = stream_done.WaitForNotificationWithTimeout(absl::Seconds(10));
  if (!unary_ended) unary_context.TryCancel();
  if (!stream_ended) stream_context.TryCancel();
  unary.join();
  stream.join();
  EXPECT_TRUE(unary_ended) << "the unary call was still hanging after EndRun";
  EXPECT_TRUE(stream_ended) << "the streamed call was still hanging after EndRun";
  EXPECT_THAT(FromGrpc(unary_status), StatusIs(absl::StatusCode::kCancelled));
  EXPECT_THAT(FromGrpc(stream_status), StatusIs(absl::StatusCode::kCancelled));
  EXPECT_EQ(stream_chunks, 0);
  c.Disconnect();
  EXPECT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
}

// ---------------------------------------------------------------------------
// disconnect, error and the other actions

constexpr char kNetwork[] = R"yaml(schema: understudy.scenario/v1
name: network
rules:
  - name: cut-after-two
    when: {user_message: 'cut after two'}
    disconnect: {after_chunks: 2}
  - name: cut-at-once
    when: {user_message: 'cut at once'}
    disconnect: {}
default:
  respond:
    content: "one two three four five"
    tool_calls:
      - name: lookup
        arguments: {q: x}
)yaml";

TEST_F(ScenarioE2eTest, DisconnectCutsTheStreamAfterTheChunksAskedFor) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScenarioRun(c, kNetwork));

  // The whole answer, for reference: one chunk per word, the tool call, the
  // finish.
  StreamOutcome whole = StreamWithin(c, run.id(), "answer in full");
  ASSERT_OK(whole.status);
  ASSERT_THAT(whole.chunks, SizeIs(7));
  EXPECT_THAT(Contents(whole.chunks),
              ElementsAre("one ", "two ", "three ", "four ", "five", "", ""));
  ASSERT_THAT(whole.chunks[5].tool_calls(), SizeIs(1));
  EXPECT_EQ(whole.chunks[5].tool_calls(0).name(), "lookup");
  EXPECT_EQ(whole.chunks[6].finish_reason(), "tool_calls");

  StreamOutcome cut = StreamWithin(c, run.id(), "cut after two");
  EXPECT_THAT(cut.status, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(Contents(cut.chunks), ElementsAre("one ", "two "));

  StreamOutcome at_once = StreamWithin(c, run.id(), "cut at once");
  EXPECT_THAT(at_once.status, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(at_once.chunks, IsEmpty());

  // A unary answer is all or nothing.
  EXPECT_THAT(CompleteWithin(c, run.id(), "cut after two"),
              StatusIs(absl::StatusCode::kUnavailable));
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse answer, CompleteWithin(c, run.id(), "in full"));
  EXPECT_EQ(answer.message().content(), "one two three four five");

  // The channel survives the cuts.
  EXPECT_OK(EndRun(c, run.id()));
  c.Disconnect();
  EXPECT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
}

constexpr char kErrors[] = R"yaml(schema: understudy.scenario/v1
name: errors
rules:
  - name: denied
    when: {user_message: '^denied$'}
    error: {grpc_code: PERMISSION_DENIED, http_status: 403, message: "scripted denial"}
  - name: throttled
    when: {user_message: '^throttled$'}
    error: {http_status: 429, message: "slow down"}
  - name: flaky
    when: {user_message: '^flaky$'}
    fail_then_succeed:
      failures: 2
      error: {grpc_code: UNAVAILABLE}
      then: {respond: {content: "recovered"}}
  - name: steps
    when: {user_message: '^steps$'}
    sequence:
      - error: {grpc_code: ABORTED, message: "first step"}
      - respond: {content: "second step"}
  - name: slow
    when: {user_message: '^slow$'}
    delay: {ms: 400}
default:
  respond: {content: "default answer"}
)yaml";

TEST_F(ScenarioE2eTest, ErrorActionsAnswerWithTheirCode) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScenarioRun(c, kErrors));

  EXPECT_THAT(CompleteWithin(c, run.id(), "denied"),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("scripted denial")));
  StreamOutcome denied = StreamWithin(c, run.id(), "denied");
  EXPECT_THAT(denied.status,
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("scripted denial")));
  EXPECT_THAT(denied.chunks, IsEmpty());
  // No grpc_code: the code for the HTTP status.
  EXPECT_THAT(CompleteWithin(c, run.id(), "throttled"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("slow down")));

  EXPECT_THAT(CompleteWithin(c, run.id(), "flaky"), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(CompleteWithin(c, run.id(), "flaky"), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(
      CompleteWithin(c, run.id(), "flaky"),
      IsOkAndHolds(::testing::Property(&v1::CompletionResponse::message,
                                       ::testing::Property(&v1::Message::content, "recovered"))));

  // A sequence takes one step per use, and starts over.
  EXPECT_THAT(CompleteWithin(c, run.id(), "steps"),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("first step")));
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse second, CompleteWithin(c, run.id(), "steps"));
  EXPECT_EQ(second.message().content(), "second step");
  EXPECT_THAT(CompleteWithin(c, run.id(), "steps"), StatusIs(absl::StatusCode::kAborted));

  // A delay waits, then the next source (here the default) answers.
  const absl::Time start = absl::Now();
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse slow, CompleteWithin(c, run.id(), "slow"));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(390));
  EXPECT_EQ(slow.message().content(), "default answer");

  ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, EndRun(c, run.id()));
  EXPECT_EQ(summary.run().state(), v1::RUN_STATE_ENDED);
  c.Disconnect();
  EXPECT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
}

// ---------------------------------------------------------------------------
// serve --scenario, packs, files

constexpr char kInvalid[] = R"yaml(schema: understudy.scenario/v1
name: broken
rules:
  - name: r1
    when: {agnet: executor}
    respond: {content: hi}
)yaml";

TEST_F(ScenarioE2eTest, ServeRefusesAnInvalidScenarioNamingTheProblem) {
  const std::string bad = Path("bad.yaml");
  WriteFile(bad, kInvalid);
  ASSERT_OK_AND_ASSIGN(ProcessResult result,
                       Cli({"serve", "--db", db_path(), "--listen", "127.0.0.1:0", "--http",
                            "127.0.0.1:0", "--scenario", bad},
                           "", absl::Seconds(15)));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err,
              HasSubstr(absl::StrCat(bad, ":5:12: error: rules[0].when.agnet: unknown field")));
  EXPECT_THAT(result.out, Not(HasSubstr("understudy serving")));

  ASSERT_OK_AND_ASSIGN(ProcessResult unknown,
                       Cli({"serve", "--db", db_path(), "--listen", "127.0.0.1:0", "--http",
                            "127.0.0.1:0", "--scenario", "no-such-pack"},
                           "", absl::Seconds(15)));
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.err, HasSubstr("no-such-pack"));
}

TEST_F(ScenarioE2eTest, ServeWithAPackAndADefaultReplayRunNeedsNoSession) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--scenario", "network-resilience", "--mode", "replay"}));
  Clients c(server->NewChannel());
  // Calls naming no run go to the default run, scripted by the pack: its
  // first three calls drop, drop, hang.
  EXPECT_THAT(CompleteWithin(c, "", "first", kCallTimeout, ""),
              StatusIs(absl::StatusCode::kUnavailable));
  StreamOutcome second = StreamWithin(c, "", "second", kCallTimeout, "");
  EXPECT_THAT(second.status, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(second.chunks, IsEmpty());
  EXPECT_THAT(CompleteWithin(c, "", "third", absl::Milliseconds(300), ""),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  c.Disconnect();
  EXPECT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
}

TEST_F(ScenarioE2eTest, EveryShippedPackStartsARunByName) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  struct Pack {
    std::string name;
    absl::StatusCode first_call;  // how the pack answers a run's first call
  };
  const std::vector<Pack> packs = {
      {"error-handling", absl::StatusCode::kInvalidArgument},
      {"rate-limit", absl::StatusCode::kResourceExhausted},
      {"network-resilience", absl::StatusCode::kUnavailable},
      {"slow-stream", absl::StatusCode::kOk},
  };
  for (const Pack& pack : packs) {
    SCOPED_TRACE(pack.name);
    ASSERT_OK_AND_ASSIGN(v1::Run run, StartScenarioRun(c, "", pack.name));
    EXPECT_EQ(run.scenario(), pack.name);
    EXPECT_EQ(run.mode(), v1::RUN_MODE_REPLAY);
    EXPECT_EQ(run.session(), "");
    const absl::Time start = absl::Now();
    absl::StatusOr<v1::CompletionResponse> first = CompleteWithin(c, run.id(), "hello");
    EXPECT_EQ(first.status().code(), pack.first_call) << first.status();
    if (pack.name == "slow-stream") {
      EXPECT_GE(absl::Now() - start, absl::Milliseconds(1990));
      ASSERT_OK(first);
      EXPECT_EQ(first->message().content(), "This answer took a while to start.");
    }
    ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, EndRun(c, run.id()));
    EXPECT_EQ(summary.run().scenario(), pack.name);
  }
  c.Disconnect();
  EXPECT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
}

// docs/scenarios.md: "INVALID_ARGUMENT/400, then UNAUTHENTICATED/401, then
// INTERNAL/500, then UNAVAILABLE twice and an answer", for an agent that
// keeps calling (and retrying).
TEST_F(ScenarioE2eTest, ErrorHandlingPackFailsInItsDocumentedOrder) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScenarioRun(c, "", "error-handling"));
  const std::vector<absl::StatusCode> expected = {
      absl::StatusCode::kInvalidArgument, absl::StatusCode::kUnauthenticated,
      absl::StatusCode::kInternal,        absl::StatusCode::kUnavailable,
      absl::StatusCode::kUnavailable,     absl::StatusCode::kOk};
  for (size_t i = 0; i < expected.size(); ++i) {
    absl::StatusOr<v1::CompletionResponse> r = CompleteWithin(c, run.id(), "do the task");
    EXPECT_EQ(r.status().code(), expected[i]) << "call " << i + 1 << ": " << r.status();
    if (expected[i] == absl::StatusCode::kOk && r.ok()) {
      EXPECT_EQ(r->message().content(), "Recovered after two failures.");
    }
  }
  EXPECT_OK(EndRun(c, run.id()));
  c.Disconnect();
  EXPECT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
}

TEST_F(ScenarioE2eTest, StartRunLoadsAScenarioFileByPathUnderTheScenarioDir) {
  const std::string file = Path("errors.yaml");
  WriteFile(file, kErrors);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--scenario-dir", dir()}));
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScenarioRun(c, "", file));
  EXPECT_EQ(run.scenario(), "errors");
  ASSERT_OK_AND_ASSIGN(v1::Run relative, StartScenarioRun(c, "", "errors.yaml"));
  EXPECT_EQ(relative.scenario(), "errors");
  EXPECT_THAT(CompleteWithin(c, run.id(), "denied"), StatusIs(absl::StatusCode::kPermissionDenied));

  const std::string bad = Path("bad.yaml");
  WriteFile(bad, kInvalid);
  EXPECT_THAT(StartScenarioRun(c, "", bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("rules[0].when.agnet: unknown field (did you mean \"agent\"?)")));
  c.Disconnect();
  EXPECT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
}

// ---------------------------------------------------------------------------
// Patterns: RE2 is linear; a backtracking engine would take years here.

constexpr char kPathological[] = R"yaml(schema: understudy.scenario/v1
name: pathological
rules:
  - name: nested-quantifier
    when: {message_contains: '(a+)+$'}
    respond: {content: "matched a"}
  - name: overlapping-quantifiers
    when: {message_contains: '(x+x+)+y'}
    respond: {content: "matched x"}
default:
  respond: {content: "no rule"}
)yaml";

TEST_F(ScenarioE2eTest, PathologicalPatternsAnswerInLinearTime) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScenarioRun(c, kPathological));

  // Each call has kCallTimeout (10 s); a backtracking engine would not
  // finish either within the age of the universe.
  absl::Time start = absl::Now();
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse a,
                       CompleteWithin(c, run.id(), std::string(100000, 'a') + "b"));
  EXPECT_EQ(a.message().content(), "no rule");
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse x,
                       CompleteWithin(c, run.id(), std::string(100000, 'x')));
  EXPECT_EQ(x.message().content(), "no rule");
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));

  // The rules do match what they should.
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse a_match,
                       CompleteWithin(c, run.id(), std::string(100000, 'a')));
  EXPECT_EQ(a_match.message().content(), "matched a");
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse x_match,
                       CompleteWithin(c, run.id(), std::string(100000, 'x') + "y"));
  EXPECT_EQ(x_match.message().content(), "matched x");
  EXPECT_OK(EndRun(c, run.id()));
  c.Disconnect();
  EXPECT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
}

// ---------------------------------------------------------------------------
// Concurrency

constexpr char kLimited[] = R"yaml(schema: understudy.scenario/v1
name: limited
rules:
  - name: five
    priority: 2
    times: 5
    respond: {content: "five"}
  - name: ten
    priority: 1
    times: 10
    respond: {content: "ten"}
default:
  respond: {content: "default"}
)yaml";

TEST_F(ScenarioE2eTest, TimesLimitsHoldUnderConcurrentCalls) {
  constexpr int kCalls = 32;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients control(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScenarioRun(control, kLimited));

  // Four connections, eight callers each, all released at once.
  std::vector<std::unique_ptr<Clients>> channels;
  for (int i = 0; i < 4; ++i) channels.push_back(std::make_unique<Clients>(server->NewChannel()));
  absl::Mutex mu;
  std::map<std::string, int> answers;  // content (or error) -> count
  absl::Notification go;
  std::vector<std::thread> threads;
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([&, i] {
      go.WaitForNotification();
      absl::StatusOr<v1::CompletionResponse> r =
          CompleteWithin(*channels[i % channels.size()], run.id(), absl::StrCat("call ", i));
      absl::MutexLock lock(&mu);
      ++answers[r.ok() ? r->message().content() : r.status().ToString()];
    });
  }
  go.Notify();
  for (std::thread& t : threads) t.join();
  EXPECT_THAT(answers, ElementsAre(std::pair<const std::string, int>("default", 17),
                                   std::pair<const std::string, int>("five", 5),
                                   std::pair<const std::string, int>("ten", 10)));

  // Each call got its own iteration number, 1 to 32.
  ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> events,
                       QueryTrace(control, run.id(), {"exchange"}));
  ASSERT_THAT(events, SizeIs(kCalls));
  std::vector<int> agent_iterations, iterations;
  std::map<std::string, int> rules;
  for (const v1::TraceEvent& e : events) {
    auto it = e.attributes().find("understudy.agent.iteration");
    agent_iterations.push_back(it == e.attributes().end() ? 0 : std::stoi(it->second));
    it = e.attributes().find("understudy.iteration");
    iterations.push_back(it == e.attributes().end() ? 0 : std::stoi(it->second));
    it = e.attributes().find("understudy.rule.name");
    ++rules[it == e.attributes().end() ? "" : it->second];
  }
  std::sort(agent_iterations.begin(), agent_iterations.end());
  std::sort(iterations.begin(), iterations.end());
  std::vector<int> one_to_n(kCalls);
  for (int i = 0; i < kCalls; ++i) one_to_n[i] = i + 1;
  EXPECT_EQ(agent_iterations, one_to_n);
  EXPECT_EQ(iterations, one_to_n);
  EXPECT_EQ(rules["five"], 5);
  EXPECT_EQ(rules["ten"], 10);

  ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, EndRun(control, run.id()));
  EXPECT_EQ(summary.run().state(), v1::RUN_STATE_ENDED);
  for (auto& channel : channels) channel->Disconnect();
  control.Disconnect();
  EXPECT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
}

}  // namespace
}  // namespace e2e
}  // namespace understudy
