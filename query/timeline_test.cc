#include "query/timeline.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace query {
namespace {

using ::testing::ElementsAre;

v1::TraceEvent Event(int64_t seq, const std::string& kind, const std::string& agent,
                     const std::map<std::string, std::string>& attributes = {}) {
  v1::TraceEvent e;
  e.set_run("run-1");
  e.set_seq(seq);
  e.set_kind(kind);
  e.set_agent(agent);
  if (!agent.empty()) (*e.mutable_attributes())["gen_ai.agent.name"] = agent;
  for (const auto& [k, v] : attributes) (*e.mutable_attributes())[k] = v;
  return e;
}

v1::TraceEvent Answer(int64_t seq, const std::string& agent, const std::string& content,
                      const std::map<std::string, std::string>& attributes) {
  v1::TraceEvent e = Event(seq, "exchange", agent, attributes);
  e.mutable_response()->mutable_message()->set_role("assistant");
  e.mutable_response()->mutable_message()->set_content(content);
  return e;
}

std::string Plain(const v1::TraceEvent& e, int width = 80) {
  TimelineOptions options;
  options.width = width;
  std::vector<std::string> lines = FormatTimeline({e}, options);
  return lines.size() == 1 ? lines[0] : "<not one line>";
}

std::string Colored(const v1::TraceEvent& e) {
  TimelineOptions options;
  options.color = true;
  std::vector<std::string> lines = FormatTimeline({e}, options);
  return lines.size() == 1 ? lines[0] : "<not one line>";
}

// ---- One line per kind, plain -------------------------------------------

TEST(FormatTimelineTest, RunStartedNamesModeSessionAndScenario) {
  EXPECT_EQ(Plain(Event(1, "run_started", "",
                        {{"understudy.run.mode", "replay"},
                         {"understudy.run.strict", "true"},
                         {"understudy.session.name", "golden"},
                         {"understudy.session.version", "2"},
                         {"understudy.scenario.name", "review-loop"}})),
            "#1 run started (replay golden@2, scenario review-loop)");
  EXPECT_EQ(Plain(Event(1, "run_started", "",
                        {{"understudy.run.mode", "replay"},
                         {"understudy.run.requested_mode", "once"},
                         {"understudy.run.strict", "false"},
                         {"understudy.session.name", "golden"},
                         {"understudy.session.version", "1"}})),
            "#1 run started (replay golden@1, requested once, not strict)");
  EXPECT_EQ(Plain(Event(1, "run_started", "")), "#1 run started");
}

TEST(FormatTimelineTest, RunEndedCountsAndFailures) {
  EXPECT_EQ(Plain(Event(12, "run_ended", "",
                        {{"understudy.run.served", "7"},
                         {"understudy.run.recorded", "0"},
                         {"understudy.run.misses", "0"},
                         {"understudy.run.unconsumed", "0"}})),
            "#12 run ended: served 7, misses 0, unconsumed 0");
  EXPECT_EQ(Plain(Event(8, "run_ended", "",
                        {{"understudy.run.served", "6"},
                         {"understudy.run.recorded", "6"},
                         {"understudy.run.misses", "1"},
                         {"understudy.run.unconsumed", "2"},
                         {"understudy.run.failures",
                          "playbook not fully consumed: 2 actions remaining\nsecond"}})),
            "#8 run ended: served 6, recorded 6, misses 1, unconsumed 2 ✗ failed: playbook not "
            "fully consumed: 2 actions remaining; second");
}

TEST(FormatTimelineTest, ExchangeShowsPhaseSourceRuleAndAnswer) {
  EXPECT_EQ(Plain(Answer(4, "executor", "Writing login().",
                         {{"understudy.phase", "execute"},
                          {"understudy.answer.source", "rule"},
                          {"understudy.rule.name", "executor-writes"},
                          {"understudy.action", "respond"},
                          {"understudy.iteration", "4"}})),
            "#4 executor (phase: execute) ← answer [rule executor-writes]: \"Writing login().\"");
  EXPECT_EQ(
      Plain(Answer(2, "reviewer", "Looks\n\n  good",
                   {{"understudy.answer.source", "recording"}, {"understudy.exchange.seq", "3"}})),
      "#2 reviewer ← answer [recording #3]: \"Looks good\"");
  EXPECT_EQ(Plain(Answer(2, "", "", {})), "#2 - ← answer: \"\"");
}

TEST(FormatTimelineTest, JsonObjectAnswerReadsLikeArguments) {
  EXPECT_EQ(
      Plain(Answer(3, "orchestrator",
                   R"( {"agents": ["executor"], "phase": "implement", "reason": "code first"})",
                   {{"understudy.answer.source", "rule"}})),
      "#3 orchestrator ← answer [rule]: {agents: [\"executor\"], phase: \"implement\", "
      "reason: \"code first\"}");
  EXPECT_EQ(Plain(Answer(3, "o", R"({"a": "b", "c": 1})", {}), 12),
            "#3 o ← answer: {a: \"b\", c:…");
  // Not an object, or not JSON: quoted as text.
  EXPECT_EQ(Plain(Answer(3, "o", R"({not json)", {})), "#3 o ← answer: \"{not json\"");
  EXPECT_EQ(Plain(Answer(3, "o", R"(["a"])", {})), "#3 o ← answer: \"[\\\"a\\\"]\"");
}

TEST(FormatTimelineTest, ExchangeWithOnlyToolCallsCountsThem) {
  v1::TraceEvent e = Answer(5, "orchestrator", "", {{"understudy.answer.source", "upstream"}});
  e.mutable_response()->mutable_message()->add_tool_calls()->set_name("continue");
  e.mutable_response()->mutable_message()->add_tool_calls()->set_name("plan_propose");
  EXPECT_EQ(Plain(e), "#5 orchestrator ← answer [upstream]: (2 tool calls)");
}

TEST(FormatTimelineTest, ExchangeErrorShowsTypeAndMessage) {
  EXPECT_EQ(Plain(Event(6, "exchange", "executor",
                        {{"understudy.answer.source", "rule"},
                         {"understudy.rule.name", "rate-limit"},
                         {"error.type", "RESOURCE_EXHAUSTED"}})),
            "#6 executor ← ✗ RESOURCE_EXHAUSTED [rule rate-limit]");
  EXPECT_EQ(
      Plain(Event(6, "exchange", "executor",
                  {{"error.type", "RESOURCE_EXHAUSTED"}, {"understudy.error", "quota exceeded"}})),
      "#6 executor ← ✗ RESOURCE_EXHAUSTED: quota exceeded");
}

TEST(FormatTimelineTest, ExchangeWithoutAnswerNamesTheAction) {
  EXPECT_EQ(Plain(Event(7, "exchange", "executor",
                        {{"understudy.answer.source", "default"}, {"understudy.action", "hang"}})),
            "#7 executor ← hang [default]");
  EXPECT_EQ(Plain(Event(7, "exchange", "executor")), "#7 executor ← no answer");
}

TEST(FormatTimelineTest, LongAnswerIsCutWithAnEllipsis) {
  const std::string long_answer(200, 'x');
  EXPECT_EQ(Plain(Answer(4, "executor", long_answer, {}), /*width=*/10),
            "#4 executor ← answer: \"xxxxxxxxx…\"");
  // Default width: 79 characters and the ellipsis.
  EXPECT_EQ(Plain(Answer(4, "executor", long_answer, {})),
            "#4 executor ← answer: \"" + std::string(79, 'x') + "…\"");
  // Exactly `width` characters are kept whole.
  EXPECT_EQ(Plain(Answer(4, "executor", "0123456789", {}), 10),
            "#4 executor ← answer: \"0123456789\"");
}

TEST(FormatTimelineTest, CuttingCountsCodePointsNotBytes) {
  // Five two-byte and five three-byte characters: cut after four of them.
  EXPECT_EQ(Plain(Answer(1, "a", "ééééé€€€€€", {}), 5), "#1 a ← answer: \"éééé…\"");
  EXPECT_EQ(Plain(Answer(1, "a", "€€€€€€", {}), 5), "#1 a ← answer: \"€€€€…\"");
  // No space left dangling before the ellipsis.
  EXPECT_EQ(Plain(Answer(1, "a", "abc def ghi", {}), 5), "#1 a ← answer: \"abc…\"");
}

TEST(FormatTimelineTest, ControlCharactersAndBadUtf8CannotReachTheTerminal) {
  EXPECT_EQ(Plain(Answer(1, "evil\x1b[2J", "a\x1b[31mred\x7f\xc2\x9b \xff\xc0\xaf\"q\\", {})),
            "#1 evil\xEF\xBF\xBD[2J ← answer: \"a\xEF\xBF\xBD[31mred\xEF\xBF\xBD\xEF\xBF\xBD "
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\\\"q\\\\\"");
}

TEST(FormatTimelineTest, ToolCallIsIndentedWithCompactArguments) {
  EXPECT_EQ(Plain(Event(5, "tool_call", "orchestrator",
                        {{"gen_ai.tool.name", "continue"},
                         {"gen_ai.tool.call.id", "call_1"},
                         {"gen_ai.tool.call.arguments", R"({"phase": "verification"})"}})),
            "   → tool continue {phase: \"verification\"}");
  EXPECT_EQ(
      Plain(Event(5, "tool_call", "a",
                  {{"gen_ai.tool.name", "plan"},
                   {"gen_ai.tool.call.arguments",
                    R"({"z":1,"a":[true,null,2.5],"nested":{"k":"v"},"two words":"x"})"}})),
      "   → tool plan {z: 1, a: [true, null, 2.5], nested: {k: \"v\"}, \"two words\": \"x\"}");
  EXPECT_EQ(Plain(Event(5, "tool_call", "a",
                        {{"gen_ai.tool.name", "raw"}, {"gen_ai.tool.call.arguments", "not json"}})),
            "   → tool raw \"not json\"");
  EXPECT_EQ(Plain(Event(5, "tool_call", "a",
                        {{"gen_ai.tool.name", "none"}, {"gen_ai.tool.call.arguments", ""}})),
            "   → tool none");
  EXPECT_EQ(Plain(Event(5, "tool_call", "a",
                        {{"gen_ai.tool.name", "write"},
                         {"gen_ai.tool.call.arguments",
                          R"({"path":"a.py","content":"def login(): return True"})"}}),
                  20),
            "   → tool write {path: \"a.py\", cont…");
}

TEST(FormatTimelineTest, ToolResultShowsResultOrError) {
  EXPECT_EQ(Plain(Event(6, "tool_result", "executor",
                        {{"gen_ai.tool.name", "plan_propose"},
                         {"gen_ai.tool.call.result", "created PLAN-4f2a"}})),
            "   ← result plan_propose: \"created PLAN-4f2a\"");
  EXPECT_EQ(Plain(Event(6, "tool_result", "executor",
                        {{"gen_ai.tool.name", "search"},
                         {"gen_ai.tool.call.arguments", R"({"q":"x"})"},
                         {"understudy.mocked", "true"},
                         {"error.type", "NOT_FOUND"},
                         {"understudy.error", "no mock for tool \"search\""}})),
            "   ← result search {q: \"x\"} ✗ NOT_FOUND: no mock for tool \"search\"");
  EXPECT_EQ(Plain(Event(6, "tool_result", "", {{"gen_ai.tool.call.result", ""}})),
            "   ← result ?: \"\"");
}

TEST(FormatTimelineTest, RoutingDecisionListsAgentsAndReason) {
  EXPECT_EQ(Plain(Event(3, "routing_decision", "orchestrator",
                        {{"understudy.routing.agents", "test-pm"},
                         {"understudy.routing.phase", "execute"},
                         {"understudy.routing.reason", "tests first"}})),
            "#3 orchestrator (phase: execute) → route [test-pm]: \"tests first\"");
  EXPECT_EQ(Plain(Event(3, "routing_decision", "orchestrator",
                        {{"understudy.routing.agents", "executor,reviewer"}})),
            "#3 orchestrator → route [executor, reviewer]");
}

TEST(FormatTimelineTest, PhaseTransitionShowsEmptyPhaseAsEmptySet) {
  EXPECT_EQ(
      Plain(Event(9, "phase_transition", "orchestrator",
                  {{"understudy.phase.from", "discovery"}, {"understudy.phase.to", "execute"}})),
      "#9 phase discovery → execute");
  EXPECT_EQ(Plain(Event(2, "phase_transition", "orchestrator",
                        {{"understudy.phase.from", ""}, {"understudy.phase.to", "discovery"}})),
            "#2 phase ∅ → discovery");
}

TEST(FormatTimelineTest, MissShowsTheReportsFirstLineWhole) {
  const std::string first =
      "no recorded exchange matches this request (agent \"executor\", session \"golden@1\"); "
      "closest is exchange #2 (agent \"executor\"), 1 field differs:";
  EXPECT_EQ(Plain(Event(10, "miss", "executor",
                        {{"understudy.miss.report",
                          first + "\n  messages[1].content: recorded \"a\" got \"b\""}})),
            "#10 miss executor: " + first + " (+1 line)");
  EXPECT_EQ(
      Plain(Event(10, "miss", "executor", {{"understudy.miss.report", "playbook exhausted"}})),
      "#10 miss executor: playbook exhausted");
}

TEST(FormatTimelineTest, UiCallShowsPromptAndAnswer) {
  EXPECT_EQ(Plain(Event(7, "ui_call", "executor",
                        {{"understudy.ui.kind", "confirm"},
                         {"understudy.ui.prompt", "Deploy now?"},
                         {"understudy.ui.answer", "true"},
                         {"understudy.mocked", "true"}})),
            "#7 executor → ui confirm: \"Deploy now?\" ← \"true\"");
  EXPECT_EQ(Plain(Event(7, "ui_call", "executor",
                        {{"understudy.ui.kind", "select"},
                         {"understudy.ui.prompt", "Pick"},
                         {"error.type", "INVALID_ARGUMENT"},
                         {"understudy.error", "no choices"}})),
            "#7 executor → ui select: \"Pick\" ✗ INVALID_ARGUMENT: no choices");
}

TEST(FormatTimelineTest, WorkflowEndAndAgentExecution) {
  EXPECT_EQ(Plain(Event(11, "workflow_end", "executor")), "#11 executor ■ workflow end");
  EXPECT_EQ(
      Plain(Event(2, "agent_execution", "orchestrator", {{"understudy.agent.iteration", "1"}})),
      "#2 orchestrator ▶ turn 1");
  EXPECT_EQ(Plain(Event(5, "agent_execution", "executor",
                        {{"understudy.agent.iteration", "2"},
                         {"understudy.previous_agent", "orchestrator"},
                         {"understudy.phase", "execute"}})),
            "#5 executor (phase: execute) ▶ turn 2 (after orchestrator)");
}

TEST(FormatTimelineTest, CustomAndUnknownKindsListTheirAttributes) {
  EXPECT_EQ(Plain(Event(5, "custom.checkpoint", "executor",
                        {{"k", "v"}, {"note", "two words"}, {"empty", ""}, {"eq", "a=b"}})),
            "#5 custom.checkpoint executor empty=\"\" eq=\"a=b\" k=v note=\"two words\"");
  EXPECT_EQ(Plain(Event(6, "quantum_leap", "", {{"understudy.to", "1985"}})),
            "#6 quantum_leap understudy.to=1985");
  EXPECT_EQ(Plain(Event(6, "", "")), "#6 ?");
  EXPECT_EQ(Plain(Event(7, "custom.long", "", {{"v", std::string(100, 'y')}}), 8),
            "#7 custom.long v=yyyyyyy…");
}

// `understudy sim`'s events read like the rest, not as raw attributes.
TEST(FormatTimelineTest, SimEventsReadLikeTheRest) {
  EXPECT_EQ(Plain(Event(1, "sim.started", "coder",
                        {{"understudy.sim.session_id", "3f2a0c1e-0000-4000-8000-000000000001"},
                         {"understudy.sim.resumed", "true"},
                         {"understudy.sim.model", "default"},
                         {"understudy.sim.skip_permissions", "true"}})),
            "#1 coder ▶ sim started (session 3f2a0c1e-0000-4000-8000-000000000001, resumed, "
            "skipping permissions)");
  EXPECT_EQ(Plain(Event(2, "sim.state", "coder",
                        {{"understudy.sim.state", "STARTING"},
                         {"understudy.sim.state.from", "NONE"},
                         {"understudy.sim.reason", "started"}})),
            "#2 coder STARTING (started)");
  EXPECT_EQ(Plain(Event(3, "sim.state", "coder",
                        {{"understudy.sim.state", "IDLE"},
                         {"understudy.sim.state.from", "WORKING"},
                         {"understudy.sim.reason", "completed"}})),
            "#3 coder WORKING → IDLE (completed)");
  EXPECT_EQ(Plain(Event(4, "sim.prompt", "coder",
                        {{"understudy.sim.prompt", "deploy to prod\nthen report"},
                         {"understudy.sim.prompt.bytes", "26"},
                         {"understudy.sim.behaviour", "deploy"},
                         {"understudy.sim.model", "false"}})),
            "#4 coder ← prompt \"deploy to prod then report\" [behaviour deploy]");
  EXPECT_EQ(Plain(Event(5, "sim.hook", "coder",
                        {{"understudy.sim.hook.event", "PreToolUse"},
                         {"understudy.sim.hook.command", "./guard.sh"},
                         {"understudy.sim.hook.exit_code", "2"},
                         {"understudy.sim.hook.outcome", "blocked"},
                         {"understudy.sim.hook.duration_ms", "12"}})),
            "#5 coder hook PreToolUse: blocked (exit 2) 12 ms ./guard.sh");
  EXPECT_EQ(Plain(Event(6, "sim.tool_call", "coder",
                        {{"gen_ai.tool.name", "Bash"},
                         {"gen_ai.tool.call.id", "toolu_sim_1"},
                         {"gen_ai.tool.call.arguments", R"({"command":"ls -la"})"}})),
            "#6 coder → tool Bash {command: \"ls -la\"}");
  EXPECT_EQ(Plain(Event(7, "sim.tool_result", "coder",
                        {{"gen_ai.tool.name", "Bash"},
                         {"gen_ai.tool.call.result", "a.txt"},
                         {"understudy.sim.blocked", "false"}})),
            "#7 coder ← result Bash: \"a.txt\"");
  EXPECT_EQ(Plain(Event(8, "sim.tool_result", "coder",
                        {{"gen_ai.tool.name", "Edit"},
                         {"gen_ai.tool.call.result", ""},
                         {"understudy.sim.blocked", "true"},
                         {"understudy.sim.reason", "edits are frozen"}})),
            "#8 coder ← result Edit ✗ blocked by hook: edits are frozen");
  EXPECT_EQ(Plain(Event(9, "sim.question", "coder",
                        {{"understudy.sim.question", "Which database?"},
                         {"understudy.sim.options", R"(["postgres","sqlite"])"}})),
            "#9 coder ? \"Which database?\" [postgres, sqlite]");
  EXPECT_EQ(Plain(Event(10, "sim.answer", "coder",
                        {{"understudy.sim.answer", "1"}, {"understudy.sim.option", "1"}})),
            "#10 coder ← answer \"1\" (option 1)");
  EXPECT_EQ(Plain(Event(11, "sim.completion", "coder",
                        {{"understudy.sim.command", R"(["meow","done","--output","status=ok"])"},
                         {"understudy.sim.exit_code", "0"},
                         {"understudy.sim.outcome", "ok"},
                         {"understudy.sim.attempt", "1"},
                         {"understudy.sim.outputs", R"({"status":"ok"})"}})),
            "#11 coder ■ completion ok {status: \"ok\"} meow done --output status=ok");
  EXPECT_EQ(Plain(Event(12, "sim.completion", "coder",
                        {{"understudy.sim.command", R"(["meow","done"])"},
                         {"understudy.sim.exit_code", "1"},
                         {"understudy.sim.outcome", "failed"},
                         {"understudy.sim.attempt", "2"},
                         {"understudy.sim.outputs", "{}"}})),
            "#12 coder ■ completion ✗ failed (exit 1, attempt 2) meow done");
  EXPECT_EQ(Plain(Event(13, "sim.error", "coder",
                        {{"understudy.sim.message", "Error: the build is broken"}})),
            "#13 coder ✗ \"Error: the build is broken\"");
  EXPECT_EQ(Plain(Event(14, "sim.state", "coder",
                        {{"understudy.sim.state", "CRASHED"},
                         {"understudy.sim.state.from", "WORKING"},
                         {"understudy.sim.reason", "crash behaviour"}})),
            "#14 coder WORKING → CRASHED (crash behaviour)");
}

TEST(FormatTimelineColorTest, SimErrorsAreRedAndDetailsDim) {
  const std::string crashed = Colored(Event(14, "sim.state", "coder",
                                            {{"understudy.sim.state", "CRASHED"},
                                             {"understudy.sim.state.from", "WORKING"},
                                             {"understudy.sim.reason", "crash behaviour"}}));
  EXPECT_THAT(crashed, ::testing::HasSubstr("\x1b[31mWORKING → CRASHED\x1b[0m"));
  EXPECT_THAT(crashed, ::testing::HasSubstr("\x1b[2m(crash behaviour)\x1b[0m"));
  EXPECT_THAT(Colored(Event(13, "sim.error", "coder",
                            {{"understudy.sim.message", "Error: broken"}})),
              ::testing::HasSubstr("\x1b[31m✗ \"Error: broken\"\x1b[0m"));
}

TEST(FormatTimelineTest, OneLinePerEventInTheGivenOrder) {
  std::vector<v1::TraceEvent> events = {
      Event(1, "run_started", "",
            {{"understudy.run.mode", "record"},
             {"understudy.session.name", "golden"},
             {"understudy.session.version", "1"}}),
      Answer(2, "orchestrator", "", {{"understudy.answer.source", "upstream"}}),
      Event(3, "tool_call", "orchestrator",
            {{"gen_ai.tool.name", "continue"}, {"gen_ai.tool.call.arguments", "{}"}}),
      Event(4, "run_ended", "",
            {{"understudy.run.served", "1"},
             {"understudy.run.recorded", "1"},
             {"understudy.run.misses", "0"},
             {"understudy.run.unconsumed", "0"}}),
  };
  events[1].mutable_response()->mutable_message()->add_tool_calls()->set_name("continue");
  EXPECT_THAT(
      FormatTimeline(events, TimelineOptions()),
      ElementsAre("#1 run started (record golden@1)",
                  "#2 orchestrator ← answer [upstream]: (1 tool call)", "   → tool continue {}",
                  "#4 run ended: served 1, recorded 1, misses 0, unconsumed 0"));
  EXPECT_THAT(FormatTimeline({}, TimelineOptions()), ElementsAre());
}

// ---- Upstream answers: their effects are traced before them ---------------

v1::TraceEvent Call(int64_t seq, const std::string& agent, const std::string& name,
                    const std::string& id) {
  return Event(seq, "tool_call", agent,
               {{"gen_ai.tool.name", name},
                {"gen_ai.tool.call.id", id},
                {"gen_ai.tool.call.arguments", "{}"}});
}

v1::TraceEvent WithCalls(v1::TraceEvent e, const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    v1::ToolCall* c = e.mutable_response()->mutable_message()->add_tool_calls();
    c->set_id(id);
    c->set_name("t");
  }
  return e;
}

std::vector<std::string> Lines(const std::vector<v1::TraceEvent>& events) {
  return FormatTimeline(events, TimelineOptions());
}

TEST(FormatTimelineOrderTest, UpstreamAnswerIsDrawnAboveTheToolCallsItMade) {
  EXPECT_THAT(
      Lines({Event(2, "agent_execution", "executor", {{"understudy.agent.iteration", "1"}}),
             Call(3, "executor", "write_file", "c1"), Call(4, "executor", "run_tests", "c2"),
             WithCalls(Answer(5, "executor", "v1",
                              {{"understudy.answer.source", "upstream"},
                               {"understudy.exchange.seq", "2"}}),
                       {"c1", "c2"}),
             Event(6, "agent_execution", "reviewer")}),
      ElementsAre("#2 executor ▶ turn 1", "#5 executor ← answer [upstream #2]: \"v1\"",
                  "   → tool write_file {}", "   → tool run_tests {}", "#6 reviewer ▶ turn"));
}

TEST(FormatTimelineOrderTest, UpstreamRoutingAnswerTakesItsRoutingAndPhase) {
  EXPECT_THAT(
      Lines({Event(2, "routing_decision", "orchestrator", {{"understudy.routing.agents", "a"}}),
             Event(3, "phase_transition", "orchestrator",
                   {{"understudy.phase.from", ""}, {"understudy.phase.to", "p"}}),
             Answer(4, "orchestrator", R"({"agents": ["a"]})",
                    {{"understudy.answer.source", "upstream"}})}),
      ElementsAre("#4 orchestrator ← answer [upstream]: {agents: [\"a\"]}",
                  "#2 orchestrator → route [a]", "#3 phase ∅ → p"));
}

TEST(FormatTimelineOrderTest, OnlyEffectsThisAnswerCanHaveCausedMove) {
  // A scripted answer's effects follow it; the upstream answer after it
  // takes only its own call (by id), never the other agent's or the rule's.
  EXPECT_THAT(
      Lines(
          {WithCalls(Answer(1, "executor", "rule", {{"understudy.answer.source", "rule"}}), {"r1"}),
           Call(2, "executor", "a", "r1"), Call(3, "reviewer", "b", "x1"),
           Call(4, "executor", "c", "u1"),
           WithCalls(Answer(5, "executor", "up", {{"understudy.answer.source", "upstream"}}),
                     {"u1"})}),
      ElementsAre("#1 executor ← answer [rule]: \"rule\"", "   → tool a {}", "   → tool b {}",
                  "#5 executor ← answer [upstream]: \"up\"", "   → tool c {}"));
  // A plain-text upstream answer without calls caused nothing: a phase
  // change before it stays there.
  EXPECT_THAT(Lines({Event(1, "phase_transition", "executor",
                           {{"understudy.phase.from", "a"}, {"understudy.phase.to", "b"}}),
                     Answer(2, "executor", "text", {{"understudy.answer.source", "upstream"}})}),
              ElementsAre("#1 phase a → b", "#2 executor ← answer [upstream]: \"text\""));
  EXPECT_TRUE(IsAnswerEffect(Call(1, "a", "t", "")));
  EXPECT_TRUE(IsAnswerEffect(Event(1, "workflow_end", "a")));
  EXPECT_FALSE(IsAnswerEffect(Event(1, "tool_result", "a")));
  EXPECT_FALSE(IsAnswerEffect(Event(1, "exchange", "a")));
}

// ---- Colors -------------------------------------------------------------

// SGR sequences as the formatter writes them.
const std::string kDim = "\x1b[2m";
const std::string kBold = "\x1b[1m";
const std::string kRed = "\x1b[31m";
const std::string kCyan = "\x1b[36m";
const std::string kOff = "\x1b[0m";
// The agents' colors (FNV-1a of the name, 8 colors).
const std::string kOrchestrator = "\x1b[33m";
const std::string kExecutor = "\x1b[92m";
const std::string kTestPm = "\x1b[95m";

TEST(FormatTimelineColorTest, ExchangeColorsAgentPhaseAndSource) {
  EXPECT_EQ(Colored(Answer(4, "executor", "Writing login().",
                           {{"understudy.phase", "execute"},
                            {"understudy.answer.source", "rule"},
                            {"understudy.rule.name", "executor-writes"}})),
            kDim + "#4" + kOff + " " + kExecutor + "executor" + kOff + " (phase: " + kCyan +
                "execute" + kOff + ") ← answer " + kDim + "[rule executor-writes]" + kOff +
                ": \"Writing login().\"");
}

TEST(FormatTimelineColorTest, ErrorsAndMissesAreRed) {
  EXPECT_EQ(Colored(Event(6, "exchange", "executor",
                          {{"error.type", "RESOURCE_EXHAUSTED"}, {"understudy.error", "quota"}})),
            kDim + "#6" + kOff + " " + kExecutor + "executor" + kOff + " ← " + kRed +
                "✗ RESOURCE_EXHAUSTED" + kOff + ": " + kRed + "quota" + kOff);
  EXPECT_EQ(
      Colored(Event(10, "miss", "executor", {{"understudy.miss.report", "no match\n  detail"}})),
      kDim + "#10" + kOff + " " + kRed + "miss" + kOff + " " + kExecutor + "executor" + kOff +
          ": " + kRed + "no match" + kOff + " " + kDim + "(+1 line)" + kOff);
  EXPECT_EQ(Colored(Event(12, "run_ended", "",
                          {{"understudy.run.served", "3"},
                           {"understudy.run.misses", "1"},
                           {"understudy.run.unconsumed", "0"}})),
            kDim + "#12" + kOff + " " + kBold + "run ended" + kOff + ": served 3, " + kRed +
                "misses 1" + kOff + ", unconsumed 0");
}

TEST(FormatTimelineColorTest, PhasesAreCyanAndRoutedAgentsKeepTheirColors) {
  EXPECT_EQ(Colored(Event(9, "phase_transition", "orchestrator",
                          {{"understudy.phase.from", ""}, {"understudy.phase.to", "execute"}})),
            kDim + "#9" + kOff + " phase " + kCyan + "∅" + kOff + " → " + kCyan + "execute" + kOff);
  EXPECT_EQ(Colored(Event(3, "routing_decision", "orchestrator",
                          {{"understudy.routing.agents", "test-pm,executor"}})),
            kDim + "#3" + kOff + " " + kOrchestrator + "orchestrator" + kOff + " → route [" +
                kTestPm + "test-pm" + kOff + ", " + kExecutor + "executor" + kOff + "]");
}

TEST(FormatTimelineColorTest, ToolLinesAndUnknownKindsColorOnlyAgentsAndErrors) {
  EXPECT_EQ(Colored(Event(
                5, "tool_call", "executor",
                {{"gen_ai.tool.name", "continue"}, {"gen_ai.tool.call.arguments", R"({"a":1})"}})),
            "   → tool continue {a: 1}");
  EXPECT_EQ(Colored(Event(6, "tool_result", "executor",
                          {{"gen_ai.tool.name", "t"}, {"error.type", "NOT_FOUND"}})),
            "   ← result t " + kRed + "✗ NOT_FOUND" + kOff);
  EXPECT_EQ(Colored(Event(5, "custom.checkpoint", "executor", {{"k", "v"}})),
            kDim + "#5" + kOff + " custom.checkpoint " + kExecutor + "executor" + kOff + " k=v");
}

TEST(FormatTimelineColorTest, AnAgentHasTheSameColorEverywhere) {
  const std::string a = Colored(Event(1, "workflow_end", "reviewer"));
  const std::string b = Colored(Event(9, "agent_execution", "reviewer"));
  const std::string color = "\x1b[34mreviewer" + kOff;
  EXPECT_EQ(a, kDim + "#1" + kOff + " " + color + " ■ workflow end");
  EXPECT_EQ(b, kDim + "#9" + kOff + " " + color + " ▶ turn");
}

TEST(ShouldColorTest, AutoMeansATerminalWithoutNoColor) {
  EXPECT_TRUE(ShouldColor(ColorMode::kAuto, /*stdout_is_tty=*/true, nullptr));
  EXPECT_TRUE(ShouldColor(ColorMode::kAuto, true, ""));  // set but empty: ignored
  EXPECT_FALSE(ShouldColor(ColorMode::kAuto, true, "1"));
  EXPECT_FALSE(ShouldColor(ColorMode::kAuto, false, nullptr));
  EXPECT_TRUE(ShouldColor(ColorMode::kAlways, false, "1"));
  EXPECT_FALSE(ShouldColor(ColorMode::kNever, true, nullptr));
}

// ---- Sessions -----------------------------------------------------------

v1::Exchange Exchange(int64_t seq, const std::string& agent,
                      const std::vector<std::pair<std::string, std::string>>& messages,
                      const std::string& answer) {
  v1::Exchange x;
  x.set_seq(seq);
  x.set_agent(agent);
  for (const auto& [role, content] : messages) {
    v1::Message* m = x.mutable_request()->add_messages();
    m->set_role(role);
    m->set_content(content);
  }
  x.mutable_response()->mutable_message()->set_role("assistant");
  x.mutable_response()->mutable_message()->set_content(answer);
  return x;
}

TEST(FormatSessionTimelineTest, HeaderThenOneLinePerExchange) {
  v1::Session session;
  session.set_name("golden");
  session.set_version(2);
  session.set_state(v1::SESSION_STATE_CLOSED);
  session.set_exchange_count(4);
  session.add_agents("orchestrator");
  session.add_agents("executor");

  v1::Exchange first =
      Exchange(1, "orchestrator", {{"system", "You route."}, {"user", "Add login"}}, "");
  v1::ToolCall* call = first.mutable_response()->mutable_message()->add_tool_calls();
  call->set_name("continue");
  call->set_arguments(R"({"phase":"verification"})");
  v1::Exchange second =
      Exchange(2, "executor", {{"user", "Add login"}, {"assistant", "ok"}, {"tool", "done"}},
               "Writing login().");
  v1::Exchange third = Exchange(3, "executor", {{"tool", "only a tool result"}}, "");
  third.mutable_error()->set_code(8);
  third.mutable_error()->set_message("quota exceeded");
  v1::Exchange fourth = Exchange(4, "", {}, "hi");
  fourth.mutable_response()->mutable_message()->add_tool_calls()->set_name("a");

  EXPECT_THAT(
      FormatSessionTimeline(session, {first, second, third, fourth}, TimelineOptions()),
      ElementsAre("golden@2: closed, 4 exchanges, agents orchestrator, executor",
                  "#1 orchestrator → \"Add login\" ← [continue {phase: \"verification\"}]",
                  "#2 executor → \"Add login\" ← \"Writing login().\"",
                  "#3 executor → \"only a tool result\" ← ✗ RESOURCE_EXHAUSTED: quota exceeded",
                  "#4 - → \"\" ← \"hi\" [a]"));
}

TEST(FormatSessionTimelineTest, ColoredAndCut) {
  v1::Session session;
  session.set_name("s");
  session.set_version(1);
  session.set_state(v1::SESSION_STATE_OPEN);
  session.set_exchange_count(1);
  TimelineOptions options;
  options.color = true;
  options.width = 6;
  EXPECT_THAT(FormatSessionTimeline(
                  session, {Exchange(1, "executor", {{"user", "hello world"}}, "fine")}, options),
              ElementsAre(kBold + "s@1" + kOff + ": open, 1 exchange",
                          kDim + "#1" + kOff + " " + kExecutor + "executor" + kOff +
                              " → \"hello…\" ← \"fine\""));
}

}  // namespace
}  // namespace query
}  // namespace understudy
