// What outside clients and hostile input found, each kept fixed by a test
// that failed before the fix: values nested 100,000 levels deep, invalid
// UTF-8, files read on a caller's behalf, and the like. Each test also
// checks that the server is still serving afterwards.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "tests/e2e/e2e_test_base.h"

namespace understudy {
namespace e2e {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

// {"a":{"a":...1...}} nested `levels` deep: ~600 KB at 100,000.
std::string DeepObject(int levels) {
  std::string out;
  out.reserve(static_cast<size_t>(levels) * 6 + 1);
  for (int i = 0; i < levels; ++i) out += "{\"a\":";
  out += "1";
  out.append(static_cast<size_t>(levels), '}');
  return out;
}

constexpr int kDeep = 100000;

// An exchange whose answer calls `continue` with arguments {"phase": DEEP}.
v1::Exchange DeepToolCallExchange() {
  v1::Exchange e;
  e.set_agent("executor");
  *e.mutable_request() = UserRequest("go on");
  v1::Message* answer = e.mutable_response()->mutable_message();
  answer->set_role("assistant");
  v1::ToolCall* call = answer->add_tool_calls();
  call->set_id("call-1");
  call->set_name("continue");
  call->set_arguments(absl::StrCat("{\"phase\":", DeepObject(kDeep), "}"));
  e.mutable_response()->set_finish_reason("tool_calls");
  return e;
}

// A replay scenario whose phase extractor reads continue(phase).
constexpr char kPhaseExtractor[] = R"(schema: understudy.scenario/v1
extractors:
  phase: {tool: continue, argument: phase}
)";

// A replay run scripted to answer everything with `content`.
absl::StatusOr<v1::Run> StartScriptedRun(Clients& c, const std::string& content) {
  v1::StartRunRequest request;
  request.set_mode(v1::RUN_MODE_REPLAY);
  request.set_scenario_text(absl::StrCat(
      "schema: understudy.scenario/v1\ndefault: {respond: {content: ", content, "}}\n"));
  auto context = CallContext();
  v1::Run run;
  grpc::Status s = c.runs->StartRun(context.get(), request, &run);
  if (!s.ok()) return FromGrpc(s);
  return run;
}

class HardeningTest : public E2eTest {
 protected:
  // The server still answers a simple call.
  void ExpectServing(Clients& c) {
    ASSERT_OK_AND_ASSIGN(v1::Run run, StartScriptedRun(c, "still here"));
    ASSERT_OK_AND_ASSIGN(v1::CompletionResponse r, Complete(c, run.id(), "", UserRequest("ping")));
    EXPECT_EQ(r.message().content(), "still here");
  }
};

// --- 1. JSON nested 100,000 levels deep ----------------------------------------

TEST_F(HardeningTest, AssertWithDeeplyNestedExpectedArgumentsIsInvalidArgument) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScriptedRun(c, "ok"));
  v1::AssertRequest request;
  request.set_run(run.id());
  v1::ExpectedToolCall* call = request.add_assertions()->mutable_tool_calls()->add_calls();
  call->set_name("continue");
  call->set_arguments(DeepObject(kDeep));
  v1::AssertResponse response;
  auto context = CallContext();
  EXPECT_THAT(FromGrpc(c.traces->Assert(context.get(), request, &response)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "assertions[0].tool_calls.calls[0].arguments: JSON nested deeper than 256 "
                       "levels at byte 1280"));
  ExpectServing(c);
}

TEST_F(HardeningTest, ARecordedAnswerNestedTooDeeplyIsReplayedTracedAndAssertedWithoutACrash) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK(RecordExchanges(c, "deep", {DeepToolCallExchange()}, /*close=*/true).status());

  // Replayed under a phase extractor that reads the deep argument.
  v1::StartRunRequest start;
  start.set_session("deep");
  start.set_mode(v1::RUN_MODE_REPLAY);
  start.set_scenario_text(kPhaseExtractor);
  v1::Run run;
  {
    auto context = CallContext();
    ASSERT_OK(FromGrpc(c.runs->StartRun(context.get(), start, &run)));
  }
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse answer,
                       Complete(c, run.id(), "executor", UserRequest("go on")));
  ASSERT_THAT(answer.message().tool_calls(), SizeIs(1));
  EXPECT_EQ(answer.message().tool_calls(0).arguments().size(),
            DeepToolCallExchange().response().message().tool_calls(0).arguments().size());
  ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> calls, QueryTrace(c, run.id(), {"tool_call"}));
  ASSERT_THAT(calls, SizeIs(1));
  // No phase could be read from a value that deep: no phase change.
  ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> phases,
                       QueryTrace(c, run.id(), {"phase_transition"}));
  EXPECT_THAT(phases, SizeIs(0));

  // tool_calls and a json_subset select both read the deep arguments.
  v1::AssertRequest request;
  request.set_run(run.id());
  v1::ExpectedToolCall* expected = request.add_assertions()->mutable_tool_calls()->add_calls();
  expected->set_name("continue");
  expected->set_arguments(R"({"phase":"verification"})");
  request.add_assertions()->set_spec(R"(assertions:
  - select: {kind: tool_call, tool: continue}
    expect:
      attributes:
        gen_ai.tool.call.arguments: {json_subset: {phase: verification}}
)");
  v1::AssertResponse verdict;
  {
    auto context = CallContext();
    ASSERT_OK(FromGrpc(c.traces->Assert(context.get(), request, &verdict)));
  }
  EXPECT_FALSE(verdict.passed());
  ASSERT_THAT(verdict.results(), SizeIs(2));
  EXPECT_FALSE(verdict.results(0).passed());
  EXPECT_THAT(verdict.results(1).explanation(), HasSubstr("which nests deeper than 256 levels"));
  ExpectServing(c);
  ASSERT_OK(EndRun(c, run.id()).status());
  ASSERT_OK_AND_ASSIGN(int code, server->Terminate());
  EXPECT_EQ(code, 0);

  // The same run through the CLI, from the database.
  const std::string spec = Path("spec.yaml");
  WriteFile(spec, R"(assertions:
  - tool_calls: {calls: [{name: continue, arguments: {phase: verification}}]}
  - select: {kind: tool_call}
    expect: {attributes: {gen_ai.tool.call.arguments: {json_subset: {phase: x}}}}
)");
  ASSERT_OK_AND_ASSIGN(ProcessResult asserted,
                       Cli({"assert", "--run", run.id(), spec, "--db", db_path()}));
  EXPECT_EQ(asserted.exit_code, 1) << asserted.err;
  EXPECT_THAT(asserted.out, HasSubstr("0 of 2 checks passed"));
  ASSERT_OK_AND_ASSIGN(ProcessResult shown, Cli({"show", run.id(), "--db", db_path()}));
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_THAT(shown.out, HasSubstr("continue"));
}

// --- 2. Files read on a caller's behalf ---------------------------------------------

absl::StatusOr<v1::Run> StartRunNaming(Clients& c, const std::string& scenario) {
  v1::StartRunRequest request;
  request.set_mode(v1::RUN_MODE_REPLAY);
  request.set_scenario(scenario);
  auto context = CallContext();
  v1::Run run;
  grpc::Status s = c.runs->StartRun(context.get(), request, &run);
  if (!s.ok()) return FromGrpc(s);
  return run;
}

TEST_F(HardeningTest, StartRunNeverReadsAFileOfTheCallersChoosing) {
  // Secrets the server can read: a .env file and a YAML file with keys.
  const std::string env = Path("secrets.env");
  WriteFile(env, "OPENAI_API_KEY=sk-live-123\n");
  const std::string yaml = Path("config.yaml");
  WriteFile(yaml, "database_password: hunter2\napi_token: t0ken\n");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  for (const std::string& path : {std::string("/etc/passwd"), env, yaml}) {
    absl::StatusOr<v1::Run> run = StartRunNaming(c, path);
    EXPECT_THAT(run, StatusIs(absl::StatusCode::kPermissionDenied,
                              AllOf(HasSubstr("--scenario-dir"), HasSubstr("scenario_text"),
                                    Not(HasSubstr("root:")), Not(HasSubstr("OPENAI_API_KEY")),
                                    Not(HasSubstr("database_password")))))
        << path;
  }
  // A pack by name still works.
  EXPECT_OK(StartRunNaming(c, "rate-limit").status());
  ExpectServing(c);
}

TEST_F(HardeningTest, ScenarioDirAllowsItsFilesAndNothingOutsideIt) {
  const std::string allowed = Path("allowed");
  ASSERT_EQ(::mkdir(allowed.c_str(), 0700), 0);
  WriteFile(allowed + "/ok.yaml",
            "schema: understudy.scenario/v1\ndefault: {respond: {content: from the dir}}\n");
  WriteFile(Path("outside.yaml"), "schema: understudy.scenario/v1\nsecret_key: s3cr3t\n");
  ASSERT_EQ(::symlink("/etc/passwd", (allowed + "/passwd.yaml").c_str()), 0);
  ASSERT_EQ(::symlink(Path("outside.yaml").c_str(), (allowed + "/link.yaml").c_str()), 0);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--scenario-dir", allowed}));
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartRunNaming(c, "ok.yaml"));
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse r, Complete(c, run.id(), "", UserRequest("hi")));
  EXPECT_EQ(r.message().content(), "from the dir");
  EXPECT_OK(StartRunNaming(c, allowed + "/ok.yaml").status());
  for (const std::string& path : {std::string("../outside.yaml"), Path("outside.yaml"),
                                  std::string("passwd.yaml"), std::string("link.yaml"),
                                  std::string("/etc/passwd")}) {
    EXPECT_THAT(StartRunNaming(c, path),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         AllOf(HasSubstr("outside the directory"), Not(HasSubstr("root:")),
                               Not(HasSubstr("s3cr3t")), Not(HasSubstr("secret_key")))))
        << path;
  }
  EXPECT_THAT(StartRunNaming(c, "missing.yaml"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("--scenario-dir")));
  ASSERT_EQ(::mkfifo((allowed + "/fifo.yaml").c_str(), 0600), 0);
  EXPECT_THAT(StartRunNaming(c, "fifo.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a regular file")));
  ExpectServing(c);
}

TEST_F(HardeningTest, ServeRefusesAScenarioDirThatIsNotADirectory) {
  ASSERT_OK_AND_ASSIGN(ProcessResult r,
                       Cli({"serve", "--db", db_path(), "--listen", "127.0.0.1:0", "--http", "",
                            "--scenario-dir", "/etc/passwd"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;  // a bad flag value
  EXPECT_EQ(r.err, "understudy: --scenario-dir /etc/passwd: not a directory\n");
}

// yaml-cpp never returns from a document that starts with ','; a caller's
// scenario_text or spec must not be able to hold a server thread forever.
TEST_F(HardeningTest, YamlThatStallsTheParserIsRefusedNotHung) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  v1::StartRunRequest start;
  start.set_mode(v1::RUN_MODE_REPLAY);
  start.set_scenario_text(",");
  v1::Run run;
  {
    auto context = CallContext("", "", absl::Seconds(5));
    EXPECT_THAT(FromGrpc(c.runs->StartRun(context.get(), start, &run)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("makes no progress")));
  }
  ASSERT_OK_AND_ASSIGN(v1::Run scripted, StartScriptedRun(c, "ok"));
  v1::AssertRequest request;
  request.set_run(scripted.id());
  request.add_assertions()->set_spec("assertions:\n---\n, x\n");
  v1::AssertResponse response;
  {
    auto context = CallContext("", "", absl::Seconds(5));
    EXPECT_THAT(FromGrpc(c.traces->Assert(context.get(), request, &response)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("makes no progress")));
  }
  const std::string file = Path("comma.yaml");
  WriteFile(file, ",\n");
  ASSERT_OK_AND_ASSIGN(ProcessResult validated, Cli({"validate", file}, "", absl::Seconds(10)));
  EXPECT_EQ(validated.exit_code, 1);
  EXPECT_THAT(validated.out, HasSubstr("comma.yaml:1:1: error: YAML syntax error"));
  ExpectServing(c);
}

// --- 3. Invalid UTF-8 --------------------------------------------------------------

TEST_F(HardeningTest, AScenarioWithInvalidUtf8IsRefusedAndItsEscapedFormAnswersInUtf8) {
  const std::string file = Path("latin1.yaml");
  WriteFile(file,
            "schema: understudy.scenario/v1\ndefault: {respond: {content: \"caf\xE9\"}}\n");
  ASSERT_OK_AND_ASSIGN(ProcessResult validated, Cli({"validate", file}));
  EXPECT_EQ(validated.exit_code, 1);
  EXPECT_THAT(validated.out,
              HasSubstr("latin1.yaml:2:34: error: invalid UTF-8 (byte 0xE9 at offset 64)"));

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  v1::StartRunRequest request;
  request.set_mode(v1::RUN_MODE_REPLAY);
  // Over gRPC the text must itself be UTF-8 (protobuf refuses it otherwise),
  // so the bad byte arrives as YAML's own escape of it.
  request.set_scenario_text(
      "schema: understudy.scenario/v1\ndefault: {respond: {content: \"caf\\xE9\"}}\n");
  v1::Run run;
  auto context = CallContext();
  // \xE9 in YAML is the character U+00E9, which is valid: the run starts and
  // answers in UTF-8.
  ASSERT_OK(FromGrpc(c.runs->StartRun(context.get(), request, &run)));
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse r, Complete(c, run.id(), "", UserRequest("hi")));
  EXPECT_EQ(r.message().content(), "caf\xC3\xA9");
  ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> events, QueryTrace(c, run.id()));
  EXPECT_THAT(events, Not(SizeIs(0)));
}

TEST_F(HardeningTest, AnAssertionSpecWithInvalidUtf8IsAUsageError) {
  const std::string spec = Path("spec.yaml");
  WriteFile(spec, "assertions:\n  - feedback_propagated: {from: a, to: b, keyword: \"\xFF\"}\n");
  ASSERT_OK_AND_ASSIGN(ProcessResult r,
                       Cli({"assert", "--run", "run-x", spec, "--db", db_path()}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("spec.yaml:2:53: error: invalid UTF-8 (byte 0xFF at offset 64)"));
}

TEST_F(HardeningTest, HttpRunAndAgentNamesMustBeUtf8) {
  const std::string scenario = Path("answer.yaml");
  WriteFile(scenario, "schema: understudy.scenario/v1\ndefault: {respond: {content: ok}}\n");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--mode", "replay", "--scenario", scenario}));
  const std::string body = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
  auto post = [&](const std::string& extra_header) {
    return SendRaw(server->http_address(),
                   absl::StrCat("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                                extra_header, "content-type: application/json\r\n",
                                "content-length: ", body.size(), "\r\nconnection: close\r\n\r\n",
                                body));
  };
  ASSERT_OK_AND_ASSIGN(std::string agent, post("x-understudy-agent: exec\xFFutor\r\n"));
  EXPECT_THAT(agent, AllOf(HasSubstr("HTTP/1.1 400"),
                           HasSubstr("agent: the agent name (in the URL or X-Understudy-Agent) "
                                     "is not valid UTF-8")));
  ASSERT_OK_AND_ASSIGN(std::string ok, post(""));
  EXPECT_THAT(ok, AllOf(HasSubstr("HTTP/1.1 200"), HasSubstr("\"ok\"")));
  // The trace of the default run holds only valid UTF-8 and reads back.
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> events,
                       QueryTrace(c, server->first_line().substr(
                                         server->first_line().find("run=") + 4)));
  EXPECT_THAT(events, Not(SizeIs(0)));
}

// --- 5. A streamed recording is durable before its last chunk is sent --------------

// Streams `request` as `agent` in `run`, collecting chunks as they arrive.
class BackgroundStream {
 public:
  BackgroundStream(Clients& c, const std::string& run, const std::string& agent,
                   const v1::CompletionRequest& request)
      : context_(CallContext(run, agent, absl::Seconds(30))) {
    thread_ = std::thread([this, &c, request] {
      std::unique_ptr<grpc::ClientReader<v1::CompletionChunk>> reader =
          c.model->StreamComplete(context_.get(), request);
      v1::CompletionChunk chunk;
      while (reader->Read(&chunk)) {
        absl::MutexLock lock(&mu_);
        chunks_.push_back(chunk);
      }
      grpc::Status status = reader->Finish();
      absl::MutexLock lock(&mu_);
      status_ = FromGrpc(status);
      done_ = true;
    });
  }
  ~BackgroundStream() { thread_.join(); }

  // Waits (up to `timeout`) for at least `n` chunks; returns how many came.
  size_t WaitForChunks(size_t n, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto enough = [&] { return chunks_.size() >= n || done_; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
    return chunks_.size();
  }
  absl::Status Wait() {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&done_), absl::Seconds(30));
    return done_ ? status_ : absl::DeadlineExceededError("stream still open");
  }
  size_t size() {
    absl::MutexLock lock(&mu_);
    return chunks_.size();
  }

 private:
  std::unique_ptr<grpc::ClientContext> context_;
  absl::Mutex mu_;
  std::vector<v1::CompletionChunk> chunks_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

TEST_F(HardeningTest, TheLastChunkOfARecordedStreamWaitsForTheCommit) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<fakes::FakeModel> fake, fakes::FakeModel::Start());
  const v1::CompletionRequest request = UserRequest("write login()");
  // How many chunks the upstream sends for it.
  size_t total = 0;
  {
    Clients direct(grpc::CreateChannel(fake->target().substr(7), grpc::InsecureChannelCredentials()));
    ASSERT_OK_AND_ASSIGN(std::vector<v1::CompletionChunk> chunks,
                         StreamComplete(direct, "", "executor", request));
    total = chunks.size();
  }
  ASSERT_GE(total, 2u);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer(fake->target()));
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "durable", v1::RUN_MODE_RECORD));

  // Another process holds the database's write lock: the commit must wait.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  {
    BackgroundStream stream(c, run.id(), "executor", request);
    EXPECT_EQ(stream.WaitForChunks(total - 1, absl::Seconds(10)), total - 1);
    // Nothing signals that a chunk did not come: give a wrong implementation
    // time to send it.
    EXPECT_EQ(stream.WaitForChunks(total, absl::Milliseconds(500)), total - 1)
        << "the last chunk went out before the exchange was committed";
    // Killed now, the client never had the whole answer, and nothing is
    // recorded: consistent.
    ASSERT_OK(server->Kill9());
    EXPECT_THAT(stream.Wait(), StatusIs(absl::StatusCode::kUnavailable));
    EXPECT_EQ(stream.size(), total - 1);
  }
  ASSERT_EQ(sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);

  // Once the commit can happen, the last chunk follows it.
  ASSERT_OK_AND_ASSIGN(server, StartServer(fake->target()));
  Clients again(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run second, StartRun(again, "durable", v1::RUN_MODE_RECORD));
  ASSERT_OK_AND_ASSIGN(std::vector<v1::CompletionChunk> chunks,
                       StreamComplete(again, second.id(), "executor", request));
  EXPECT_EQ(chunks.size(), total);
  ASSERT_OK(server->Kill9());  // no EndRun, no flush: the commit came first
  ASSERT_OK_AND_ASSIGN(ProcessResult shown,
                       Cli({"sessions", "show", "durable@" + std::to_string(second.session_version()),
                            "--db", db_path()}));
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_THAT(shown.out, HasSubstr("1 exchanges"));
}

// --- 4. Slow consumers are bounded ---------------------------------------------------

TEST_F(HardeningTest, AWatchThatFallsFarBehindEndsWithWhereToResume) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScriptedRun(c, "ok"));
  // The watcher asks, then does not read while 20 MiB of events happen.
  v1::WatchRequest watch;
  watch.set_run(run.id());
  auto watch_context = CallContext("", "", absl::Seconds(60));
  std::unique_ptr<grpc::ClientReader<v1::TraceEvent>> reader =
      c.traces->Watch(watch_context.get(), watch);
  const std::string value(512 << 10, 'v');
  for (int i = 0; i < 40; ++i) {
    v1::EmitRequest emit;
    emit.set_run(run.id());
    emit.set_kind("custom.big");
    (*emit.mutable_attributes())["v"] = value;
    v1::TraceEvent out;
    auto context = CallContext();
    ASSERT_OK(FromGrpc(c.traces->Emit(context.get(), emit, &out)));
  }
  // Now it reads: what was kept, then the end, saying where to resume.
  v1::TraceEvent event;
  int64_t last = 0;
  int received = 0;
  while (reader->Read(&event)) {
    last = event.seq();
    ++received;
  }
  absl::Status status = FromGrpc(reader->Finish());
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kResourceExhausted,
                               HasSubstr(absl::StrCat("resume with Watch{after_seq: ", last, "}"))));
  EXPECT_LT(received, 40);
  // Resuming there gives the rest: nothing was lost, only not held.
  ASSERT_OK(EndRun(c, run.id()).status());
  watch.set_after_seq(last);
  auto again_context = CallContext();
  std::unique_ptr<grpc::ClientReader<v1::TraceEvent>> again =
      c.traces->Watch(again_context.get(), watch);
  int rest = 0;
  while (again->Read(&event)) {
    if (event.kind() == "custom.big") ++rest;
  }
  EXPECT_OK(FromGrpc(again->Finish()));
  EXPECT_EQ(received + rest, 40 + 1);  // the first read event is run_started
  ExpectServing(c);
}

TEST_F(HardeningTest, HttpClientsThatNeverReadABigRecordedStreamCostNoCopyOfIt) {
  // A recorded OpenAI stream of 1,000 events of 4 KB (4 MB).
  std::string native_chunks;
  for (int i = 0; i < 1000; ++i) {
    const std::string event = absl::StrCat(
        R"(data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":")",
        std::string(4000, 'x'), R"("},"finish_reason":null}]})", "\n\n");
    std::string b64;
    absl::Base64Escape(event, &b64);
    absl::StrAppend(&native_chunks, i == 0 ? "" : ",", R"({"data":")", b64,
                    R"(","offset_micros":")", i, R"("})");
  }
  std::string request_b64;
  absl::Base64Escape(R"({"model":"m","messages":[{"role":"user","content":"big"}],"stream":true})",
                     &request_b64);
  const std::string file = Path("big.jsonl");
  WriteFile(file, absl::StrCat(
                      R"({"header":{"format":"understudy.session/v1","name":"big","exchange_count":"1"}})",
                      "\n",
                      R"({"exchange":{"seq":"1","streamed":true,"request":{"model":"m","messages":[{"role":"user","content":"big"}]},)",
                      R"("response":{"message":{"role":"assistant","content":"x"}},)",
                      R"("native":{"provider":"openai","path":"/v1/chat/completions","request_body":")",
                      request_b64, R"(","status":200,"content_type":"text/event-stream","chunks":[)",
                      native_chunks, "]}}}\n"));
  ASSERT_OK_AND_ASSIGN(ProcessResult imported, Cli({"import", file, "--db", db_path()}));
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--mode", "replay", "--session", "big", "--repeat", "true"}));
  const std::string run = server->first_line().substr(server->first_line().find("run=") + 4);
  Clients c(server->NewChannel());
  const int64_t before = RssMiB(server->pid());
  // 30 clients ask for it and never read a byte.
  const std::string body = R"({"model":"m","messages":[{"role":"user","content":"big"}],"stream":true})";
  const std::string address = server->http_address();
  std::vector<int> sockets;
  for (int i = 0; i < 30; ++i) {
    ASSERT_OK_AND_ASSIGN(int fd, ConnectTcp(address));
    const int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    const std::string request =
        absl::StrCat("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                     "content-type: application/json\r\ncontent-length: ", body.size(),
                     "\r\n\r\n", body);
    ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    sockets.push_back(fd);
  }
  // Every request was answered (as far as the server is concerned).
  ASSERT_TRUE(WaitFor(
      [&] {
        absl::StatusOr<std::vector<v1::TraceEvent>> events = QueryTrace(c, run, {"exchange"});
        return events.ok() && events->size() == 30;
      },
      absl::Seconds(20)));
  const int64_t after = RssMiB(server->pid());
  for (int fd : sockets) ::close(fd);
  // Each connection used to hold its own copy of the 4 MB stream (30 copies:
  // +120 MiB and more); now they share the recording.
  std::cout << "30 clients not reading a 4 MB recorded stream: RSS " << before << " -> " << after
            << " MiB\n";
  EXPECT_LT(after - before, 80) << "before " << before << " MiB, after " << after << " MiB";
  ExpectServing(c);
}

// The server's RSS once it has stopped moving for 1.5 s: what an allocator
// returns, it returns within a second or so (jemalloc's decay). -1 when it
// never settles within `timeout`.
int64_t SettledRssMiB(pid_t pid, absl::Duration timeout) {
  int64_t last = RssMiB(pid);
  absl::Time since = absl::Now();
  const bool settled = WaitFor(
      [&] {
        const int64_t now = RssMiB(pid);
        if (now != last) {
          last = now;
          since = absl::Now();
        }
        return absl::Now() - since >= absl::Milliseconds(1500);
      },
      timeout);
  return settled ? last : -1;
}

// Whether the process runs on jemalloc (the release binary), which gives
// freed pages back to the system; AddressSanitizer's allocator keeps them
// for its own reuse.
bool RunsOnJemalloc(pid_t pid) {
  std::ifstream maps(absl::StrCat("/proc/", pid, "/maps"));
  std::string line;
  while (std::getline(maps, line)) {
    if (absl::StrContains(line, "libjemalloc")) return true;
  }
  return false;
}

// A stream recorded as chunks only (a session file as docs/session-format.md
// describes it, 1,000 chunks of 4 KiB with their timing) is rendered in the
// caller's shape. Rendered for each client whole, 40 clients that never
// read held 40 copies (+243 MiB under AddressSanitizer, +206 MiB on
// jemalloc, most of it still resident after they went); rendered as each
// client reads, each holds a few events, and gives them back when it goes.
// Run with UNDERSTUDY_BIN=build/cli/understudy to measure the release
// binary, which must also give the pages back to the system.
TEST_F(HardeningTest, HttpClientsThatNeverReadARenderedStreamHoldAFewEventsEach) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  // AddressSanitizer keeps freed memory in a quarantine (256 MiB by
  // default): RSS would measure the quarantine. A small one, and freed
  // pages returned at once, leave what the server holds.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options =
      absl::StrCat(asan == nullptr ? "" : asan, asan == nullptr ? "" : ":",
                   "quarantine_size_mb=4:allocator_release_to_os_interval_ms=0");
  ::setenv("ASAN_OPTIONS", asan_options.c_str(), 1);
#endif
#endif
  std::string chunks;
  for (int i = 0; i < 1000; ++i) {
    absl::StrAppend(&chunks, i == 0 ? "" : ",", R"({"content":")", std::string(4096, 'a' + i % 26),
                    R"(","offset_micros":")", i * 1000, R"("})");
  }
  const std::string file = Path("rendered.jsonl");
  WriteFile(file, absl::StrCat(
                      R"({"header":{"format":"understudy.session/v1","name":"rendered","exchange_count":"1"}})",
                      "\n",
                      R"({"exchange":{"seq":"1","streamed":true,"request":{"model":"m","messages":[{"role":"user","content":"big"}]},)",
                      R"("response":{"message":{"role":"assistant","content":"x"}},"chunks":[)", chunks,
                      "]}}\n"));
  ASSERT_OK_AND_ASSIGN(ProcessResult imported, Cli({"import", file, "--db", db_path()}));
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<ServerProcess> server,
      StartServer("", {"--mode", "replay", "--session", "rendered", "--repeat", "true"}));
  const std::string run = server->first_line().substr(server->first_line().find("run=") + 4);
  Clients c(server->NewChannel());
  const std::string address = server->http_address();
  const bool jemalloc = RunsOnJemalloc(server->pid());
  // Chat Completions, and Responses, whose last events carry the whole
  // text; Ollama's NDJSON lines and Bedrock's event-stream frames.
  const std::vector<std::pair<std::string, std::string>> apis = {
      {"/v1/chat/completions",
       R"({"model":"m","messages":[{"role":"user","content":"big"}],"stream":true})"},
      {"/v1/responses", R"({"model":"m","input":"big","stream":true})"},
      {"/api/chat", R"({"model":"m","messages":[{"role":"user","content":"big"}]})"},
      {"/model/m/converse-stream", R"({"messages":[{"role":"user","content":[{"text":"big"}]}]})"}};
  size_t answered = 0;
  for (const auto& [path, body] : apis) {
    // A warm-up: one client that reads it all, then the server left to
    // settle. What stays (the recording loaded, the trace written, the
    // threads' caches) is not the clients'; what the reader's answer took
    // while it was sent is given back before the count starts.
    ASSERT_OK_AND_ASSIGN(
        std::string whole,
        SendRaw(address,
                absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\nconnection: close\r\n",
                             "content-type: application/json\r\ncontent-length: ", body.size(),
                             "\r\n\r\n", body),
                absl::Seconds(30)));
    ASSERT_TRUE(absl::StartsWith(whole, "HTTP/1.1 200")) << whole.substr(0, 300);
    ASSERT_GT(whole.size(), 4000u * 1000u) << path;
    ++answered;
    const int64_t before = SettledRssMiB(server->pid(), absl::Seconds(20));
    ASSERT_GT(before, 0) << "the server's RSS never settled";
    // Two rounds of 40 clients that never read: each round may hold a few
    // events per client; the second finds what the first gave back.
    int64_t first_held = 0;
    for (int round = 1; round <= 2; ++round) {
      std::vector<int> sockets;
      for (int i = 0; i < 40; ++i) {
        ASSERT_OK_AND_ASSIGN(int fd, ConnectTcp(address));
        const int small = 4096;
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
        const std::string request =
            absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                         "content-type: application/json\r\ncontent-length: ", body.size(),
                         "\r\n\r\n", body);
        ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(request.size()));
        sockets.push_back(fd);
      }
      answered += sockets.size();
      // Every request was answered (as far as the server is concerned).
      ASSERT_TRUE(WaitFor(
          [&] {
            absl::StatusOr<std::vector<v1::TraceEvent>> events = QueryTrace(c, run, {"exchange"});
            return events.ok() && events->size() == answered;
          },
          absl::Seconds(30)));
      const int64_t held = RssMiB(server->pid());
      for (int fd : sockets) ::close(fd);
      const int64_t after = SettledRssMiB(server->pid(), absl::Seconds(20));
      std::cout << "40 clients not reading a rendered 4 MB stream (" << path << ", round " << round
                << (jemalloc ? ", jemalloc" : "") << "): RSS " << before << " -> " << held
                << " MiB, " << after << " MiB once they went\n";
      // A few events each: 2 MiB per client at most.
      EXPECT_LT(held - before, 80) << path << ": before " << before << " MiB, held " << held;
      ASSERT_GT(after, 0) << "the server's RSS never settled after the clients went";
      if (round == 1) {
        first_held = held;
      } else {
        // What the first 40 held went back to the allocator when they went:
        // the next 40 are served from it.
        EXPECT_LT(held - first_held, 10) << path << ": round 1 held " << first_held
                                         << " MiB, round 2 " << held << " MiB";
      }
      // jemalloc gives it back to the system too.
      if (jemalloc) {
        EXPECT_LT(after - before, 10) << path << ": before " << before << " MiB, after " << after;
      }
    }
  }
  ExpectServing(c);
}

// --- 9. Paging a session's trace ---------------------------------------------------

TEST_F(HardeningTest, ASessionsTracePagesThroughEveryRunAndAnUnknownSessionIsNotFound) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  v1::Exchange e;
  e.set_agent("a");
  *e.mutable_request() = UserRequest("hi");
  e.mutable_response()->mutable_message()->set_content("hello");
  ASSERT_OK(RecordExchanges(c, "paged", {e}, /*close=*/true).status());
  // Three runs of the session, each with run_started, 38 custom events and
  // run_ended: 120 events.
  std::vector<std::string> expected;
  for (int r = 0; r < 3; ++r) {
    ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "paged", v1::RUN_MODE_REPLAY));
    for (int i = 0; i < 38; ++i) {
      v1::EmitRequest emit;
      emit.set_run(run.id());
      emit.set_kind("custom.step");
      (*emit.mutable_attributes())["i"] = absl::StrCat(i);
      v1::TraceEvent out;
      auto context = CallContext();
      ASSERT_OK(FromGrpc(c.traces->Emit(context.get(), emit, &out)));
    }
    ASSERT_OK(EndRun(c, run.id()).status());
    ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> events, QueryTrace(c, run.id()));
    ASSERT_THAT(events, SizeIs(40));
    for (const v1::TraceEvent& ev : events) expected.push_back(absl::StrCat(run.id(), "#", ev.seq()));
  }
  std::vector<std::string> got;
  std::vector<int> page_sizes;
  v1::QueryRequest request;
  request.set_session("paged");
  request.set_limit(50);
  for (int page = 0; page < 10; ++page) {
    v1::QueryResponse response;
    auto context = CallContext();
    ASSERT_OK(FromGrpc(c.traces->Query(context.get(), request, &response)));
    page_sizes.push_back(response.events_size());
    for (const v1::TraceEvent& ev : response.events()) {
      got.push_back(absl::StrCat(ev.run(), "#", ev.seq()));
    }
    EXPECT_EQ(response.next_after_seq(), 0);  // session pages continue by token only
    if (response.next_page_token().empty()) break;
    request.set_page_token(response.next_page_token());
  }
  EXPECT_THAT(page_sizes, ::testing::ElementsAre(50, 50, 20));
  EXPECT_EQ(got, expected);

  // A token from elsewhere, and a session that does not exist.
  request.set_page_token("run-elsewhere/3");
  v1::QueryResponse response;
  {
    auto context = CallContext();
    EXPECT_THAT(FromGrpc(c.traces->Query(context.get(), request, &response)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("page_token")));
  }
  v1::QueryRequest unknown;
  unknown.set_session("no-such-session");
  {
    auto context = CallContext();
    EXPECT_THAT(FromGrpc(c.traces->Query(context.get(), unknown, &response)),
                StatusIs(absl::StatusCode::kNotFound, HasSubstr("no-such-session")));
  }
}

// --- 10. A stream answered from a recording that was not streamed ------------------

TEST_F(HardeningTest, AStreamFromAWholeRecordedBodyIsTheSameBytesEveryTimeAndKeepsItsFields) {
  // A chat.completion recorded over HTTP without streaming.
  const std::string body =
      R"({"id":"chatcmpl-abc","object":"chat.completion","created":1700000000,)"
      R"("model":"gpt-4o-mini","service_tier":"default","system_fingerprint":"fp_123",)"
      R"("choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},)"
      R"("finish_reason":"stop","logprobs":null}],)"
      R"("usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}})";
  const std::string request_body = R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]})";
  auto b64 = [](const std::string& s) {
    std::string out;
    absl::Base64Escape(s, &out);
    return out;
  };
  const std::string file = Path("whole.jsonl");
  WriteFile(file,
            absl::StrCat(
                R"({"header":{"format":"understudy.session/v1","name":"whole","exchange_count":"1"}})",
                "\n",
                R"({"exchange":{"seq":"1","request":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]},)",
                R"("response":{"id":"chatcmpl-abc","model":"gpt-4o-mini","message":{"role":"assistant","content":"Hello there"},)",
                R"("finish_reason":"stop","usage":{"input_tokens":"5","output_tokens":"2"}},)",
                R"("recorded_at_micros":"1700000003123456","native":{"provider":"openai","path":"/v1/chat/completions",)",
                R"("request_body":")", b64(request_body), R"(","status":200,"content_type":"application/json",)",
                R"("response_body":")", b64(body), R"("}}})", "\n"));
  ASSERT_OK_AND_ASSIGN(ProcessResult imported, Cli({"import", file, "--db", db_path()}));
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--mode", "replay", "--session", "whole", "--repeat", "true"}));
  const std::string streamed =
      R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"stream":true,)"
      R"("stream_options":{"include_usage":true}})";
  auto post = [&]() -> std::string {
    absl::StatusOr<std::string> r = SendRaw(
        server->http_address(),
        absl::StrCat("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "content-type: application/json\r\ncontent-length: ",
                     streamed.size(), "\r\nconnection: close\r\n\r\n", streamed));
    EXPECT_OK(r.status());
    if (!r.ok()) return "";
    return r->substr(r->find("\r\n\r\n") + 4);  // the chunked body
  };
  const std::string first = post();
  absl::SleepFor(absl::Milliseconds(1100));  // a second later: still the same bytes
  const std::string second = post();
  EXPECT_EQ(first, second);
  EXPECT_THAT(first, AllOf(HasSubstr(R"("created":1700000000,"model":"gpt-4o-mini",)"
                                     R"("service_tier":"default","system_fingerprint":"fp_123")"),
                           HasSubstr(R"("usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7})"),
                           HasSubstr("data: [DONE]")));
}

// --- 11. Loose ends -----------------------------------------------------------------

TEST_F(HardeningTest, ModelsAnswerWithoutARun) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  ASSERT_OK_AND_ASSIGN(std::string openai,
                       SendRaw(server->http_address(),
                               "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                               "connection: close\r\n\r\n"));
  EXPECT_THAT(openai, AllOf(HasSubstr("HTTP/1.1 200"), HasSubstr(R"({"object":"list","data":[]})")));
  ASSERT_OK_AND_ASSIGN(std::string anthropic,
                       SendRaw(server->http_address(),
                               "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                               "anthropic-version: 2023-06-01\r\nconnection: close\r\n\r\n"));
  EXPECT_THAT(anthropic, AllOf(HasSubstr("HTTP/1.1 200"), HasSubstr(R"("data":[],"has_more":false)")));
  // A run that does not exist is still an error.
  ASSERT_OK_AND_ASSIGN(std::string unknown,
                       SendRaw(server->http_address(),
                               "GET /run/nope/v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                               "connection: close\r\n\r\n"));
  EXPECT_THAT(unknown, HasSubstr("HTTP/1.1 404"));
}

// --- 12. Debug logs say why --------------------------------------------------------

// The value of `field=` on the first line of `log` holding `event`.
std::string LogField(const std::string& log, const std::string& event, const std::string& field) {
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (!absl::StrContains(line, absl::StrCat(" ", event, " "))) continue;
    const size_t at = line.find(absl::StrCat(" ", field, "="));
    if (at == absl::string_view::npos) continue;
    absl::string_view rest = line.substr(at + field.size() + 2);
    return std::string(rest.substr(0, rest.find(' ')));
  }
  return "";
}

TEST_F(HardeningTest, DebugLogsSayWhyNoRuleFiredWhatTheMatchKeyWasAndWhatAnswered) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<fakes::FakeModel> fake, fakes::FakeModel::Start());
  const v1::CompletionRequest request = UserRequest("SECRET-PROMPT-TEXT please");
  std::string record_log;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                         StartServer(fake->target(), {"--log-level", "debug"}));
    Clients c(server->NewChannel());
    ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "dbg", v1::RUN_MODE_RECORD));
    ASSERT_OK(Complete(c, run.id(), "executor", request).status());
    ASSERT_OK(EndRun(c, run.id()).status());
    c.Disconnect();
    ASSERT_OK(server->Terminate().status());
    record_log = server->Stderr();
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--log-level", "debug"}));
  Clients c(server->NewChannel());
  v1::StartRunRequest start;
  start.set_session("dbg");
  start.set_mode(v1::RUN_MODE_REPLAY);
  start.set_scenario_text(R"(schema: understudy.scenario/v1
rules:
  - name: reviewer-only
    when: {agent: reviewer}
    respond: {content: no}
  - name: asks-for-tests
    when: {user_message: 'write tests'}
    respond: {content: no}
)");
  v1::Run run;
  {
    auto context = CallContext();
    ASSERT_OK(FromGrpc(c.runs->StartRun(context.get(), start, &run)));
  }
  ASSERT_OK(Complete(c, run.id(), "executor", request).status());
  EXPECT_THAT(Complete(c, run.id(), "executor", UserRequest("something else")),
              StatusIs(absl::StatusCode::kNotFound));
  const std::string log = server->Stderr();
  EXPECT_THAT(log, HasSubstr(R"(rule_not_matched run=)" + run.id() +
                             R"( rule=reviewer-only reason="when.agent is \"reviewer\", the caller is \"executor\"")"));
  EXPECT_THAT(log, HasSubstr(R"(rule=asks-for-tests reason="when.user_message /write tests/ is not found in the last user message")"));
  EXPECT_THAT(log, HasSubstr("answer run=" + run.id() + " source=recording exchange=1"));
  EXPECT_THAT(log, HasSubstr("miss run=" + run.id() + " report="));
  // The replayed request's key is the recorded one's.
  const std::string recorded_key = LogField(record_log, "recorded", "key");
  EXPECT_THAT(recorded_key, ::testing::MatchesRegex("[0-9a-f]{16}"));
  EXPECT_EQ(LogField(log, "request", "key"), recorded_key);
  // No prompt text in either log.
  EXPECT_THAT(record_log, Not(HasSubstr("SECRET-PROMPT-TEXT")));
  EXPECT_THAT(log, Not(HasSubstr("SECRET-PROMPT-TEXT")));
}

}  // namespace
}  // namespace e2e
}  // namespace understudy
