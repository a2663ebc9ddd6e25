#include "scenario/playbook.h"

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace scenario {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kPlanApproval[] = R"(
playbook:
  turns:
    - when: 'make a plan'
      actions:
        - call: {tool: plan_propose, args: {goal: ship}}
        - say: {text: "Plan {{plan_id}} is ready."}
      capture:
        plan_id: {from_tool_result: plan_propose, regex: '(PLAN-[0-9a-f]+)'}
    - when: 'approve'
      actions:
        - call: {tool: plan_approve, args: {id: "{{plan_id}}"}}
        - say: {text: "Approved {{plan_id}}."}
)";

// Loads `body` (YAML after the schema line); a load failure fails the test
// and yields an empty scenario.
std::shared_ptr<const Scenario> MustLoad(const std::string& body) {
  absl::StatusOr<Scenario> s =
      LoadScenario(absl::StrCat("schema: understudy.scenario/v1\n", body), "test");
  if (!s.ok()) {
    ADD_FAILURE() << s.status();
    return std::make_shared<const Scenario>();
  }
  return std::make_shared<const Scenario>(*std::move(s));
}

v1::Message Msg(const std::string& role, const std::string& content) {
  v1::Message m;
  m.set_role(role);
  m.set_content(content);
  return m;
}

// A tool result answering `call_id`, as most SDKs send it (no name).
v1::Message ToolResult(const std::string& call_id, const std::string& content) {
  v1::Message m = Msg("tool", content);
  m.set_tool_call_id(call_id);
  return m;
}

v1::CompletionRequest Request(const std::vector<v1::Message>& messages) {
  v1::CompletionRequest request;
  request.set_model("gpt-4o");
  for (const v1::Message& m : messages) *request.add_messages() = m;
  return request;
}

// A one-turn playbook of `n` say actions, "step 0" .. "step n-1".
std::string SayTurn(int n) {
  std::string yaml = "playbook:\n  turns:\n    - actions:\n";
  for (int i = 0; i < n; ++i) absl::StrAppend(&yaml, "        - say: {text: 'step ", i, "'}\n");
  return yaml;
}

TEST(PlaybookRunTest, PlanApprovalRunsEndToEnd) {
  PlaybookRun playbook(MustLoad(kPlanApproval));
  RunContext context;
  EXPECT_FALSE(playbook.empty());
  EXPECT_EQ(playbook.remaining(), 4);

  v1::CompletionRequest request =
      Request({Msg("system", "You plan releases."), Msg("user", "Please make a plan.")});
  absl::StatusOr<v1::CompletionResponse> propose = playbook.Next(request, context);
  ASSERT_THAT(propose, IsOk());
  EXPECT_EQ(propose->id(), "pb-0-0");
  EXPECT_EQ(propose->model(), "gpt-4o");
  EXPECT_EQ(propose->finish_reason(), "tool_calls");
  EXPECT_EQ(propose->message().role(), "assistant");
  EXPECT_EQ(propose->message().content(), "");
  ASSERT_THAT(propose->message().tool_calls(), SizeIs(1));
  EXPECT_EQ(propose->message().tool_calls(0).id(), "call_pb_0_0");
  EXPECT_EQ(propose->message().tool_calls(0).name(), "plan_propose");
  EXPECT_EQ(propose->message().tool_calls(0).arguments(), R"({"goal":"ship"})");

  *request.add_messages() = propose->message();
  *request.add_messages() = ToolResult("call_pb_0_0", "Created PLAN-4f2a (draft).");
  absl::StatusOr<v1::CompletionResponse> ready = playbook.Next(request, context);
  ASSERT_THAT(ready, IsOk());
  EXPECT_EQ(ready->id(), "pb-0-1");
  EXPECT_EQ(ready->finish_reason(), "stop");
  EXPECT_EQ(ready->message().content(), "Plan PLAN-4f2a is ready.");
  EXPECT_THAT(ready->message().tool_calls(), IsEmpty());
  EXPECT_EQ(context.capture("plan_id"), "PLAN-4f2a");

  *request.add_messages() = ready->message();
  *request.add_messages() = Msg("user", "Looks good, approve it.");
  absl::StatusOr<v1::CompletionResponse> approve = playbook.Next(request, context);
  ASSERT_THAT(approve, IsOk());
  EXPECT_EQ(approve->id(), "pb-1-0");
  ASSERT_THAT(approve->message().tool_calls(), SizeIs(1));
  EXPECT_EQ(approve->message().tool_calls(0).id(), "call_pb_1_0");
  EXPECT_EQ(approve->message().tool_calls(0).name(), "plan_approve");
  EXPECT_EQ(approve->message().tool_calls(0).arguments(), R"({"id":"PLAN-4f2a"})");

  *request.add_messages() = approve->message();
  *request.add_messages() = ToolResult("call_pb_1_0", "ok");
  absl::StatusOr<v1::CompletionResponse> approved = playbook.Next(request, context);
  ASSERT_THAT(approved, IsOk());
  EXPECT_EQ(approved->id(), "pb-1-1");
  EXPECT_EQ(approved->message().content(), "Approved PLAN-4f2a.");

  EXPECT_EQ(playbook.remaining(), 0);
  EXPECT_THAT(playbook.failures(), IsEmpty());
  EXPECT_THAT(playbook.EndFailures(), IsEmpty());
}

TEST(PlaybookRunTest, SameRequestsGiveSameBytes) {
  const std::shared_ptr<const Scenario> scenario = MustLoad(kPlanApproval);
  std::vector<std::string> runs[2];
  for (std::vector<std::string>& out : runs) {
    PlaybookRun playbook(scenario);
    RunContext context;
    v1::CompletionRequest request = Request({Msg("user", "make a plan")});
    auto call = playbook.Next(request, context);
    ASSERT_THAT(call, IsOk());
    out.push_back(call->SerializeAsString());
    *request.add_messages() = call->message();
    *request.add_messages() = ToolResult("call_pb_0_0", "PLAN-1");
    auto say = playbook.Next(request, context);
    ASSERT_THAT(say, IsOk());
    out.push_back(say->SerializeAsString());
  }
  EXPECT_EQ(runs[0], runs[1]);
}

TEST(PlaybookRunTest, CapturesByToolMessageName) {
  PlaybookRun playbook(MustLoad(kPlanApproval));
  RunContext context;
  v1::Message result = Msg("tool", "id: PLAN-77");
  result.set_name("plan_propose");
  result.set_tool_call_id("call_from_elsewhere");  // answers no call in the request
  ASSERT_THAT(playbook.Next(Request({Msg("user", "make a plan"), result}), context), IsOk());
  EXPECT_EQ(context.capture("plan_id"), "PLAN-77");
}

TEST(PlaybookRunTest, CapturesOnlyFromTheNamedToolAndLaterResultsWin) {
  PlaybookRun playbook(MustLoad(kPlanApproval));
  RunContext context;
  v1::Message calls = Msg("assistant", "");
  for (const auto& [id, name] : {std::pair{"c1", "plan_propose"}, std::pair{"c2", "search"},
                                 std::pair{"c3", "plan_propose"}}) {
    v1::ToolCall* call = calls.add_tool_calls();
    call->set_id(id);
    call->set_name(name);
  }
  ASSERT_THAT(playbook.Next(Request({Msg("user", "make a plan"), calls, ToolResult("c1", "PLAN-1"),
                                     ToolResult("c2", "PLAN-2"), ToolResult("c3", "PLAN-3"),
                                     ToolResult("c4", "PLAN-4"), ToolResult("c3", "no plan here")}),
                            context),
              IsOk());
  // c2 is another tool, c4 answers no call, the last c3 result does not match.
  EXPECT_EQ(context.capture("plan_id"), "PLAN-3");
}

TEST(PlaybookRunTest, CaptureWithoutGroupTakesTheWholeMatchAndAnyTurnsCapturesApply) {
  PlaybookRun playbook(MustLoad(R"(
playbook:
  turns:
    - actions:
        - say: {text: "ticket {{ticket}}"}
    - actions:
        - say: {text: "unused"}
      capture:
        ticket: {from_tool_result: open_ticket, regex: 'T-[0-9]+'}
)"));
  RunContext context;
  v1::Message result = Msg("tool", "opened T-42 for you");
  result.set_name("open_ticket");
  absl::StatusOr<v1::CompletionResponse> say =
      playbook.Next(Request({Msg("user", "hi"), result}), context);
  ASSERT_THAT(say, IsOk());
  EXPECT_EQ(say->message().content(), "ticket T-42");
}

TEST(PlaybookRunTest, UncapturedValueFailsWithoutMovingTheCursor) {
  PlaybookRun playbook(MustLoad(R"(
playbook:
  turns:
    - actions:
        - say: {text: "Plan {{plan_id}} is ready."}
      capture:
        plan_id: {from_tool_result: plan_propose, regex: '(PLAN-[0-9a-f]+)'}
)"));
  RunContext context;
  const v1::CompletionRequest request = Request({Msg("user", "status?")});
  EXPECT_THAT(playbook.Next(request, context),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "playbook.turns[0].actions[0]: {{plan_id}} is not set "
                       "(captured so far: none)"));
  context.SetCapture("zeta", "1");
  context.SetCapture("alpha", "2");
  EXPECT_THAT(
      playbook.Next(request, context),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("(captured so far: alpha, zeta)")));
  EXPECT_EQ(playbook.remaining(), 1);

  v1::Message result = Msg("tool", "PLAN-9");
  result.set_name("plan_propose");
  absl::StatusOr<v1::CompletionResponse> say =
      playbook.Next(Request({Msg("user", "status?"), result}), context);
  ASSERT_THAT(say, IsOk());
  EXPECT_EQ(say->id(), "pb-0-0");
  EXPECT_EQ(say->message().content(), "Plan PLAN-9 is ready.");
  EXPECT_THAT(playbook.failures(), SizeIs(2));
  EXPECT_THAT(playbook.EndFailures(), SizeIs(2));
}

TEST(PlaybookRunTest, TurnThatDoesNotMatchTheUserMessageFails) {
  PlaybookRun playbook(MustLoad(kPlanApproval));
  RunContext context;
  EXPECT_THAT(playbook.Next(Request({Msg("user", "make a plan"), Msg("assistant", "sure"),
                                     Msg("user", "say \"hi\"\nnow")}),
                            context),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "playbook.turns[0]: expects a user message matching \"make a plan\" but "
                       "the last user message is \"say \\\"hi\\\"\\nnow\""));
  EXPECT_THAT(playbook.Next(Request({Msg("system", "make a plan")}), context),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "playbook.turns[0]: expects a user message matching \"make a plan\" but "
                       "the request has no user message"));
  EXPECT_THAT(
      playbook.Next(Request({Msg("user", std::string(500, 'x'))}), context),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr(absl::StrCat("is \"", std::string(200, 'x'), "\"... (500 bytes)"))));
  EXPECT_EQ(playbook.remaining(), 4);
  EXPECT_THAT(playbook.failures(), SizeIs(3));
}

TEST(PlaybookRunTest, SecondTurnChecksItsWhenOnlyWhenItStarts) {
  PlaybookRun playbook(MustLoad(kPlanApproval));
  RunContext context;
  context.SetCapture("plan_id", "PLAN-1");
  v1::CompletionRequest request = Request({Msg("user", "make a plan")});
  ASSERT_THAT(playbook.Next(request, context), IsOk());
  ASSERT_THAT(playbook.Next(request, context), IsOk());
  // Turn 1 starts: the last user message is still "make a plan".
  EXPECT_THAT(playbook.Next(request, context),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "playbook.turns[1]: expects a user message matching \"approve\" but the "
                       "last user message is \"make a plan\""));
  *request.add_messages() = Msg("user", "approve");
  ASSERT_THAT(playbook.Next(request, context), IsOk());
  // Mid-turn, the user message is not looked at.
  *request.add_messages() = Msg("user", "something else entirely");
  absl::StatusOr<v1::CompletionResponse> last = playbook.Next(request, context);
  ASSERT_THAT(last, IsOk());
  EXPECT_EQ(last->message().content(), "Approved PLAN-1.");
}

TEST(PlaybookRunTest, NoActionLeftFails) {
  PlaybookRun playbook(MustLoad(SayTurn(2)));
  RunContext context;
  const v1::CompletionRequest request = Request({Msg("user", "go")});
  ASSERT_THAT(playbook.Next(request, context), IsOk());
  ASSERT_THAT(playbook.Next(request, context), IsOk());
  EXPECT_THAT(playbook.Next(request, context),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "playbook: no action left for this request (all 2 actions were used)"));
  EXPECT_EQ(playbook.remaining(), 0);
  EXPECT_THAT(playbook.EndFailures(),
              ElementsAre("playbook: no action left for this request (all 2 actions were used)"));
}

TEST(PlaybookRunTest, EndFailuresReportWhatIsLeft) {
  PlaybookRun playbook(MustLoad(kPlanApproval));
  RunContext context;
  context.SetCapture("plan_id", "PLAN-1");
  EXPECT_THAT(playbook.EndFailures(),
              ElementsAre("playbook not fully consumed: 4 actions remaining "
                          "(next: playbook.turns[0].actions[0])"));
  v1::CompletionRequest request = Request({Msg("user", "make a plan")});
  ASSERT_THAT(playbook.Next(request, context), IsOk());
  EXPECT_EQ(playbook.remaining(), 3);
  EXPECT_THAT(playbook.EndFailures(),
              ElementsAre("playbook not fully consumed: 3 actions remaining "
                          "(next: playbook.turns[0].actions[1])"));
  ASSERT_THAT(playbook.Next(request, context), IsOk());
  ASSERT_THAT(playbook.Next(request, context), StatusIs(absl::StatusCode::kFailedPrecondition));
  *request.add_messages() = Msg("user", "approve");
  ASSERT_THAT(playbook.Next(request, context), IsOk());
  EXPECT_THAT(playbook.EndFailures(),
              ElementsAre(HasSubstr("playbook.turns[1]: expects a user message"),
                          "playbook not fully consumed: 1 action remaining "
                          "(next: playbook.turns[1].actions[1])"));
}

TEST(PlaybookRunTest, KeepsTheFirstHundredFailures) {
  PlaybookRun playbook(MustLoad(kPlanApproval));
  RunContext context;
  const v1::CompletionRequest request = Request({Msg("user", "nope")});
  for (int i = 0; i < 150; ++i) {
    ASSERT_THAT(playbook.Next(request, context), StatusIs(absl::StatusCode::kFailedPrecondition));
  }
  EXPECT_THAT(playbook.failures(), SizeIs(PlaybookRun::kMaxFailures));
  const std::vector<std::string> end = playbook.EndFailures();
  ASSERT_THAT(end, SizeIs(PlaybookRun::kMaxFailures + 2));
  EXPECT_EQ(end[100], "playbook: 50 more failed requests not listed (the first 100 are)");
  EXPECT_THAT(end[101], HasSubstr("4 actions remaining"));
}

TEST(PlaybookRunTest, EmptyPlaybook) {
  PlaybookRun playbook(MustLoad("name: no-playbook\n"));
  RunContext context;
  EXPECT_TRUE(playbook.empty());
  EXPECT_EQ(playbook.remaining(), 0);
  EXPECT_THAT(playbook.Next(Request({Msg("user", "hi")}), context),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no action left")));
}

TEST(PlaybookRunTest, ConcurrentRequestsTakeEveryActionExactlyOnce) {
  constexpr int kActions = 300;
  constexpr int kThreads = 8;
  PlaybookRun playbook(MustLoad(SayTurn(kActions)));
  RunContext context;
  const v1::CompletionRequest request = Request({Msg("user", "go")});
  absl::Mutex mu;
  std::vector<std::string> ids, texts;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (;;) {
        absl::StatusOr<v1::CompletionResponse> r = playbook.Next(request, context);
        if (!r.ok()) {
          EXPECT_THAT(r,
                      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no action left")));
          return;
        }
        absl::MutexLock lock(&mu);
        ids.push_back(r->id());
        texts.push_back(r->message().content());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  ASSERT_THAT(ids, SizeIs(kActions));
  std::set<std::string> want_ids, want_texts;
  for (int i = 0; i < kActions; ++i) {
    want_ids.insert(absl::StrCat("pb-0-", i));
    want_texts.insert(absl::StrCat("step ", i));
  }
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()), want_ids);
  EXPECT_EQ(std::set<std::string>(texts.begin(), texts.end()), want_texts);
  EXPECT_EQ(playbook.remaining(), 0);
  EXPECT_THAT(playbook.failures(), SizeIs(kThreads));  // one "no action left" per thread
}

}  // namespace
}  // namespace scenario
}  // namespace understudy
