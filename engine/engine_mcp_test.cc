// The engine's MCP requests (engine_mcp.cc): recorded and replayed as
// exchanges, matched on server, tool and arguments, scripted by tool rules
// and mock_tools, traced as tool_call / tool_result pairs.
#include <future>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "engine/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/test_util.h"

namespace understudy {
namespace engine {
namespace {

using ::testing::HasSubstr;
using store::IsOkAndHolds;

// The exchange a decision answers from (the decision must be one).
const v1::Exchange* Reply(const Decision& d) { return d.As<ReplyFromExchange>()->exchange; }

v1::CompletionRequest ToolCall(const std::string& tool, const std::string& arguments,
                               const std::string& server = "fs") {
  v1::CompletionRequest r;
  r.set_operation("mcp:tools/call");
  r.set_model(server);
  r.set_extra(absl::StrCat(R"({"name":")", tool, R"(","arguments":)", arguments, "}"));
  return r;
}

v1::CompletionRequest Method(const std::string& method) {
  v1::CompletionRequest r;
  r.set_operation(absl::StrCat("mcp:", method));
  r.set_model("fs");
  r.set_extra("{}");
  return r;
}

CallInfo Call(const std::string& run) {
  CallInfo c;
  c.run = run;
  return c;
}

class EngineMcpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions so;
    so.path = dir_.File("test.db");
    auto s = store::Store::Open(so);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    EngineOptions eo;
    eo.store = store_.get();
    eo.has_upstream = true;
    int next = 0;
    eo.new_run_id = [next]() mutable { return absl::StrCat("run-", ++next); };
    auto e = Engine::Create(std::move(eo));
    ASSERT_TRUE(e.ok()) << e.status();
    engine_ = std::move(*e);
  }

  std::string Start(v1::RunMode mode, const std::string& session,
                    const std::string& scenario = "") {
    v1::StartRunRequest r;
    r.set_mode(mode);
    r.set_session(session);
    r.set_strict(true);
    r.set_scenario_text(scenario);
    auto run = engine_->StartRun(r);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? run->id() : "";
  }

  // Forwards `request` as an adapter would and records `result` (or a
  // JSON-RPC error when `error_code` is set).
  void Forward(const std::string& run, const v1::CompletionRequest& request,
               const std::string& result, int error_code = 0) {
    auto decided = engine_->Decide(Call(run), request, false);
    ASSERT_TRUE(decided.ok()) << decided.status();
    ASSERT_NE(decided->As<ForwardUpstream>(), nullptr);
    v1::Exchange ex;
    if (error_code != 0) {
      ex.mutable_error()->set_code(error_code);
      ex.mutable_error()->set_message(result);
    } else {
      ex.mutable_response()->mutable_message()->set_role("tool");
      ex.mutable_response()->mutable_message()->set_content(result);
    }
    std::promise<absl::Status> done;
    engine_->FinishForward(std::move(decided->As<ForwardUpstream>()->ticket), std::move(ex),
                           absl::OkStatus(), [&done](absl::Status s) { done.set_value(s); });
    ASSERT_THAT(done.get_future().get(), IsOk());
  }

  std::vector<v1::TraceEvent> Events(const std::string& run) {
    EXPECT_THAT(store_->Flush(), IsOk());
    store::EventQuery q;
    q.run = run;
    auto page = store_->QueryEvents(q);
    EXPECT_TRUE(page.ok()) << page.status();
    return page.ok() ? page->events : std::vector<v1::TraceEvent>{};
  }

  static std::string Attr(const v1::TraceEvent& e, const std::string& key) {
    auto it = e.attributes().find(key);
    return it == e.attributes().end() ? "" : it->second;
  }

  store::ScopedTempDir dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineMcpTest, RecordsAndReplaysToolCallsInOrder) {
  const std::string rec = Start(v1::RUN_MODE_RECORD, "tools");
  Forward(rec, Method("tools/list"), R"({"tools":[]})");
  Forward(rec, ToolCall("counter", "{}"), R"({"content":[{"type":"text","text":"1"}]})");
  Forward(rec, ToolCall("counter", "{}"), R"({"content":[{"type":"text","text":"2"}]})");
  Forward(rec, ToolCall("read", R"({"path":"a"})"), "no such file", -32602);
  ASSERT_THAT(engine_->EndRun(rec).status(), IsOk());

  const std::string rep = Start(v1::RUN_MODE_REPLAY, "tools");
  auto answer = [&](const v1::CompletionRequest& r) -> absl::StatusOr<std::string> {
    auto d = engine_->Decide(Call(rep), r, false);
    if (!d.ok()) return d.status();
    if (d->As<ReplyFromExchange>() == nullptr) return absl::InternalError("no recording");
    if (Reply(*d)->has_error()) return absl::StrCat("error ", Reply(*d)->error().code());
    return Reply(*d)->response().message().content();
  };
  // Identical calls answer in recorded order; key order does not matter.
  EXPECT_THAT(answer(ToolCall("counter", "{}")), IsOkAndHolds(HasSubstr("\"1\"")));
  EXPECT_THAT(answer(ToolCall("counter", "{ }")), IsOkAndHolds(HasSubstr("\"2\"")));
  EXPECT_THAT(answer(ToolCall("read", R"({"path":"a"})")), IsOkAndHolds("error -32602"));
  // Another argument: a miss naming it, and counted.
  EXPECT_THAT(answer(ToolCall("read", R"({"path":"b"})")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("extra.arguments.path")));
  // Another server is another call.
  EXPECT_THAT(answer(ToolCall("counter", "{}", "other")), StatusIs(absl::StatusCode::kNotFound));
  auto summary = engine_->EndRun(rep);
  ASSERT_THAT(summary.status(), IsOk());
  EXPECT_EQ(summary->run().misses(), 2);

  // Each tool call is a tool_call then its tool_result; tools/list an exchange.
  std::vector<std::string> kinds;
  for (const v1::TraceEvent& e : Events(rep)) kinds.push_back(e.kind());
  EXPECT_THAT(kinds, ::testing::ElementsAre("run_started", "tool_call", "tool_result", "tool_call",
                                            "tool_result", "tool_call", "tool_result", "miss",
                                            "miss", "run_ended"));
  std::vector<v1::TraceEvent> events = Events(rep);
  EXPECT_EQ(Attr(events[1], "gen_ai.tool.name"), "counter");
  EXPECT_EQ(Attr(events[1], "understudy.mcp.server"), "fs");
  EXPECT_THAT(Attr(events[2], "gen_ai.tool.call.result"), HasSubstr("\"1\""));
  EXPECT_THAT(Attr(events[6], "understudy.error"), HasSubstr("JSON-RPC error -32602"));
}

// `record -- CMD` prints these: "recorded #2 mcp fs tools/call counter".
TEST_F(EngineMcpTest, TheSummaryNamesTheServerMethodAndToolOfEachExchange) {
  const std::string rec = Start(v1::RUN_MODE_RECORD, "named");
  Forward(rec, Method("tools/list"), R"({"tools":[]})");
  Forward(rec, ToolCall("counter", "{}"), R"({"content":[]})");
  absl::StatusOr<v1::RunSummary> recorded = engine_->EndRun(rec);
  ASSERT_THAT(recorded.status(), IsOk());
  ASSERT_EQ(recorded->recorded_size(), 2);
  EXPECT_EQ(recorded->recorded(0).seq(), 1);
  EXPECT_EQ(recorded->recorded(0).model(), "fs");
  EXPECT_EQ(recorded->recorded(0).operation(), "mcp:tools/list");
  EXPECT_EQ(recorded->recorded(0).tool(), "");
  EXPECT_EQ(recorded->recorded(1).seq(), 2);
  EXPECT_EQ(recorded->recorded(1).model(), "fs");
  EXPECT_EQ(recorded->recorded(1).operation(), "mcp:tools/call");
  EXPECT_EQ(recorded->recorded(1).tool(), "counter");

  // A replay that leaves the tool call unused names it the same way.
  const std::string rep = Start(v1::RUN_MODE_REPLAY, "named");
  ASSERT_THAT(engine_->Decide(Call(rep), Method("tools/list"), false).status(), IsOk());
  absl::StatusOr<v1::RunSummary> replayed = engine_->EndRun(rep);
  ASSERT_THAT(replayed.status(), IsOk());
  ASSERT_EQ(replayed->unconsumed_size(), 1);
  EXPECT_EQ(replayed->unconsumed(0).seq(), 2);
  EXPECT_EQ(replayed->unconsumed(0).operation(), "mcp:tools/call");
  EXPECT_EQ(replayed->unconsumed(0).tool(), "counter");
}

TEST_F(EngineMcpTest, ToolRulesAnswerBeforeTheRecordingAndLeaveModelRulesAlone) {
  const std::string scenario = R"(
schema: understudy.scenario/v1
rules:
  - name: broken-disk
    when: {tool: write_.*, tool_arguments: {path: /etc/passwd}}
    error: {message: "permission denied"}
  - name: flaky
    when: {tool: fetch}
    fail_then_succeed:
      failures: 1
      error: {message: "upstream timeout", jsonrpc_code: -32000}
      then: {respond: {structured: {status: 200}}}
  - name: model
    respond: {content: "model answer"}
)";
  const std::string run = Start(v1::RUN_MODE_REPLAY, "", scenario);
  auto decide = [&](const v1::CompletionRequest& r) { return engine_->Decide(Call(run), r, false); };

  auto denied = decide(ToolCall("write_file", R"({"path":"/etc/passwd","text":"x"})"));
  ASSERT_THAT(denied.status(), IsOk());
  ASSERT_NE(denied->As<ReplyFromExchange>(), nullptr);
  EXPECT_THAT(Reply(*denied)->response().message().content(), HasSubstr("\"isError\":true"));
  EXPECT_THAT(Reply(*denied)->response().message().content(), HasSubstr("permission denied"));

  auto first = decide(ToolCall("fetch", "{}"));
  ASSERT_THAT(first.status(), IsOk());
  ASSERT_TRUE(Reply(*first)->has_error());
  EXPECT_EQ(Reply(*first)->error().code(), -32000);
  auto second = decide(ToolCall("fetch", "{}"));
  ASSERT_THAT(second.status(), IsOk());
  EXPECT_THAT(Reply(*second)->response().message().content(),
              HasSubstr(R"("structuredContent":{"status":200})"));

  // A tool with no rule, recording or mock: a miss, not the model rule.
  EXPECT_THAT(decide(ToolCall("read", "{}")).status(), StatusIs(absl::StatusCode::kNotFound));
  // The model rule still answers model requests.
  v1::CompletionRequest model;
  model.set_model("m");
  model.add_messages()->set_role("user");
  model.mutable_messages(0)->set_content("hi");
  auto answered = decide(model);
  ASSERT_THAT(answered.status(), IsOk());
  EXPECT_EQ(Reply(*answered)->response().message().content(), "model answer");
}

TEST_F(EngineMcpTest, MockToolsStandInForAServerNeverRecorded) {
  const std::string run = Start(v1::RUN_MODE_REPLAY, "", R"(
schema: understudy.scenario/v1
mock_tools:
  search: {template: "found {{query}}"}
  weather: {result: {temp: 21}}
)");
  auto decide = [&](const v1::CompletionRequest& r) { return engine_->Decide(Call(run), r, false); };
  auto init = decide(Method("initialize"));
  ASSERT_THAT(init.status(), IsOk());
  EXPECT_THAT(Reply(*init)->response().message().content(), HasSubstr("\"serverInfo\""));
  auto list = decide(Method("tools/list"));
  ASSERT_THAT(list.status(), IsOk());
  EXPECT_THAT(Reply(*list)->response().message().content(), HasSubstr("\"name\":\"search\""));
  EXPECT_THAT(Reply(*list)->response().message().content(), HasSubstr("\"name\":\"weather\""));
  auto search = decide(ToolCall("search", R"({"query":"cats"})"));
  ASSERT_THAT(search.status(), IsOk());
  EXPECT_THAT(Reply(*search)->response().message().content(), HasSubstr("found cats"));
  auto weather = decide(ToolCall("weather", "{}"));
  ASSERT_THAT(weather.status(), IsOk());
  EXPECT_THAT(Reply(*weather)->response().message().content(),
              HasSubstr(R"("structuredContent":{"temp":21})"));
  EXPECT_THAT(decide(ToolCall("unmocked", "{}")).status(), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(EngineMcpTest, AModelsToolCallRunOverMcpIsTracedOnce) {
  const std::string run = Start(v1::RUN_MODE_REPLAY, "", R"(
schema: understudy.scenario/v1
rules:
  - name: ask-tool
    when: {iteration: 1}
    respond: {tool_calls: [{name: read, arguments: {path: a}}]}
  - name: tool
    when: {tool: read}
    respond: {content: "contents of a"}
)");
  v1::CompletionRequest model;
  model.set_model("m");
  model.add_messages()->set_role("user");
  model.mutable_messages(0)->set_content("read a");
  auto asked = engine_->Decide(Call(run), model, false);
  ASSERT_THAT(asked.status(), IsOk());
  const std::string call_id = Reply(*asked)->response().message().tool_calls(0).id();
  ASSERT_THAT(engine_->Decide(Call(run), ToolCall("read", R"({"path":"a"})"), false).status(),
              IsOk());
  // The next model request carries the result: not traced again.
  v1::Message* assistant = model.add_messages();
  *assistant = Reply(*asked)->response().message();
  v1::Message* result = model.add_messages();
  result->set_role("tool");
  result->set_tool_call_id(call_id);
  result->set_content("contents of a");
  (void)engine_->Decide(Call(run), model, false);
  ASSERT_THAT(engine_->EndRun(run).status(), IsOk());

  int calls = 0;
  int results = 0;
  for (const v1::TraceEvent& e : Events(run)) {
    if (e.kind() == "tool_call") ++calls;
    if (e.kind() == "tool_result") {
      ++results;
      EXPECT_EQ(Attr(e, "gen_ai.tool.call.id"), call_id);
      EXPECT_EQ(Attr(e, "understudy.mcp.server"), "fs");
    }
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(results, 1);
}

}  // namespace
}  // namespace engine
}  // namespace understudy
