#include "scenario/rules.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace scenario {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Loads `body` (YAML after the schema line) as a scenario; a load failure
// fails the test and yields an empty scenario.
Scenario MustLoad(const std::string& body) {
  absl::StatusOr<Scenario> s =
      LoadScenario(absl::StrCat("schema: understudy.scenario/v1\n", body), "test.yaml");
  if (!s.ok()) {
    ADD_FAILURE() << s.status();
    return Scenario{};
  }
  return *std::move(s);
}

RuleSet MustBuild(const std::string& body) {
  absl::StatusOr<RuleSet> rules = RuleSet::Create(MustLoad(body));
  if (!rules.ok()) {
    ADD_FAILURE() << rules.status();
    return *RuleSet::Create(Scenario{});
  }
  return *std::move(rules);
}

struct Msg {
  std::string role;
  std::string content;
};

v1::CompletionRequest Request(const std::vector<Msg>& messages,
                              const std::vector<std::string>& tools = {},
                              const std::string& model = "gpt-4o") {
  v1::CompletionRequest request;
  request.set_model(model);
  for (const Msg& m : messages) {
    v1::Message* message = request.add_messages();
    message->set_role(m.role);
    message->set_content(m.content);
  }
  for (const std::string& tool : tools) request.add_tools()->set_name(tool);
  return request;
}

v1::CompletionRequest Hello() { return Request({{"user", "hello"}}); }

// The chosen rule's name, or "" when none.
std::string Pick(const RuleSet& rules, RunContext& context,
                 const v1::CompletionRequest& request, absl::string_view agent = "") {
  Selection s = rules.Select(context, request, agent);
  return s.rule == nullptr ? "" : s.rule->name;
}

v1::CompletionResponse ToolCalls(const std::vector<std::pair<std::string, std::string>>& calls,
                                 const std::string& content = "") {
  v1::CompletionResponse response;
  response.mutable_message()->set_role("assistant");
  response.mutable_message()->set_content(content);
  for (const auto& [name, arguments] : calls) {
    v1::ToolCall* call = response.mutable_message()->add_tool_calls();
    call->set_name(name);
    call->set_arguments(arguments);
  }
  return response;
}

// Rules that each check one condition; the fallback catches the rest.
RuleSet OneCondition(const std::string& when) {
  return MustBuild(absl::StrCat("rules:\n  - name: cond\n    priority: 1\n    when: ", when,
                                "\n    respond: {content: c}\n"));
}

TEST(RuleSetTest, HigherPriorityWinsRegardlessOfFileOrder) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - {name: low, priority: 1, respond: {content: l}}
  - {name: high, priority: 5, respond: {content: h}}
  - {name: mid, respond: {content: m}}
)yaml");
  ASSERT_EQ(rules.rules().size(), 3u);
  EXPECT_EQ(rules.rules()[0].name, "high");
  EXPECT_EQ(rules.rules()[1].name, "low");
  EXPECT_EQ(rules.rules()[2].name, "mid");
  RunContext context;
  Selection s = rules.Select(context, Hello(), "");
  ASSERT_NE(s.rule, nullptr);
  EXPECT_EQ(s.rule->name, "high");
  EXPECT_EQ(s.rule_index, 1);  // its position in the file
}

TEST(RuleSetTest, EqualPrioritiesKeepFileOrder) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - {name: first, priority: 3, respond: {content: a}}
  - {name: second, priority: 3, respond: {content: b}}
  - {name: third, priority: 3, respond: {content: c}}
)yaml");
  RunContext context;
  EXPECT_EQ(Pick(rules, context, Hello()), "first");
  EXPECT_EQ(rules.rules()[1].name, "second");
  EXPECT_EQ(rules.rules()[2].name, "third");
}

TEST(RuleSetTest, NoMatchingRuleSelectsNoneButCountsTheRequest) {
  RuleSet rules = OneCondition("{agent: reviewer}");
  RunContext context;
  Selection s = rules.Select(context, Hello(), "executor");
  EXPECT_EQ(s.rule_index, -1);
  EXPECT_EQ(s.rule, nullptr);
  EXPECT_EQ(s.rule_use, 0);
  EXPECT_EQ(s.overall_iteration, 1);
  EXPECT_EQ(s.agent_iteration, 1);
  EXPECT_EQ(context.previous_agent(), "executor");
}

TEST(RuleSetTest, EmptyWhenAlwaysHolds) {
  RuleSet rules = MustBuild("rules:\n  - {name: any, respond: {content: x}}\n");
  RunContext context;
  EXPECT_EQ(Pick(rules, context, Request({})), "any");
}

TEST(RuleSetTest, SystemPromptSearchesTheFirstSystemMessageOnly) {
  RuleSet rules = OneCondition("{system_prompt: '(?i)you review'}");
  RunContext context;
  EXPECT_EQ(Pick(rules, context, Request({{"system", "You review diffs."}, {"user", "x"}})),
            "cond");
  EXPECT_EQ(Pick(rules, context,
                 Request({{"system", "You execute."}, {"system", "you review"}, {"user", "x"}})),
            "");
  EXPECT_EQ(Pick(rules, context, Request({{"user", "you review"}})), "");
}

TEST(RuleSetTest, UserMessageSearchesTheLastUserMessageOnly) {
  RuleSet rules = OneCondition("{user_message: 'diff'}");
  RunContext context;
  EXPECT_EQ(Pick(rules, context,
                 Request({{"user", "hi"}, {"assistant", "diff"}, {"user", "see the diff"}})),
            "cond");
  EXPECT_EQ(Pick(rules, context, Request({{"user", "the diff"}, {"user", "thanks"}})), "");
  EXPECT_EQ(Pick(rules, context, Request({{"system", "diff"}})), "");
}

TEST(RuleSetTest, MessageContainsSearchesEveryMessage) {
  RuleSet rules = OneCondition("{message_contains: 'pass(word)?'}");
  RunContext context;
  EXPECT_EQ(Pick(rules, context,
                 Request({{"system", "s"}, {"user", "u"}, {"tool", "leaked password"}})),
            "cond");
  EXPECT_EQ(Pick(rules, context, Request({{"system", "s"}, {"user", "u"}})), "");
}

// Many regex rules are matched through one RE2::Set per condition; the
// choices must be exactly those of checking each rule's own pattern.
TEST(RuleSetTest, ManyRegexRulesChooseAsEachRuleAlone) {
  std::string body = "rules:\n";
  for (int i = 0; i < 40; ++i) {
    const char* field = i % 3 == 0 ? "system_prompt" : i % 3 == 1 ? "user_message" : "message_contains";
    absl::StrAppend(&body, "  - name: r", i, "\n    when: {", field, ": '(?i)ticket-", i,
                    "\\b'", i % 5 == 0 ? ", agent: executor" : "", "}\n    respond: {content: c}\n");
  }
  RuleSet rules = MustBuild(body);
  Scenario scenario = MustLoad(body);
  // The reference: the first rule (file order, equal priorities) whose own
  // pattern holds on the condition's text.
  auto reference = [&](const v1::CompletionRequest& request, const std::string& agent) {
    for (int i = 0; i < 40; ++i) {
      const When& when = scenario.rules[i].when;
      if (when.agent.has_value() && *when.agent != agent) continue;
      std::vector<std::string> texts;
      if (when.system_prompt.has_value()) {
        for (const auto& m : request.messages()) {
          if (m.role() == "system") {
            texts.push_back(m.content());
            break;
          }
        }
      } else if (when.user_message.has_value()) {
        for (int k = request.messages_size() - 1; k >= 0; --k) {
          if (request.messages(k).role() == "user") {
            texts.push_back(request.messages(k).content());
            break;
          }
        }
      } else {
        for (const auto& m : request.messages()) texts.push_back(m.content());
      }
      const Pattern& p = when.system_prompt.has_value()  ? *when.system_prompt
                         : when.user_message.has_value() ? *when.user_message
                                                         : *when.message_contains;
      for (const std::string& t : texts) {
        if (RE2::PartialMatch(t, *p.re)) return absl::StrCat("r", i);
      }
    }
    return std::string();
  };
  int chosen = 0;
  for (int a = 0; a < 40; ++a) {
    for (int b : {a, (a + 7) % 40, (a + 13) % 40}) {
      for (const std::string agent : {"executor", "reviewer"}) {
        v1::CompletionRequest request =
            Request({{"system", absl::StrCat("You handle TICKET-", a, ".")},
                     {"user", absl::StrCat("first about ticket-", b)},
                     {"assistant", absl::StrCat("noted ticket-", (a + 1) % 40, "x")},
                     {"user", absl::StrCat("now ticket-", b, " and ticket-", (b + 2) % 40)}});
        RunContext context;
        const std::string got = Pick(rules, context, request, agent);
        EXPECT_EQ(got, reference(request, agent)) << "a=" << a << " b=" << b << " " << agent;
        chosen += !got.empty();
      }
    }
  }
  EXPECT_GT(chosen, 100);  // the cases exercise matches, not only misses
}

TEST(RuleSetTest, AgentMustBeTheSpeakingAgent) {
  RuleSet rules = OneCondition("{agent: reviewer}");
  RunContext context;
  EXPECT_EQ(Pick(rules, context, Hello(), "reviewer"), "cond");
  EXPECT_EQ(Pick(rules, context, Hello(), "executor"), "");
  EXPECT_EQ(Pick(rules, context, Hello(), ""), "");
}

TEST(RuleSetTest, PreviousAgentIsTheAgentOfTheRequestBefore) {
  RuleSet rules = OneCondition("{previous_agent: executor}");
  RunContext context;
  Selection first = rules.Select(context, Hello(), "executor");
  EXPECT_EQ(first.rule, nullptr);  // nobody spoke before
  EXPECT_EQ(first.previous_agent, std::nullopt);
  Selection second = rules.Select(context, Hello(), "reviewer");
  ASSERT_NE(second.rule, nullptr);
  EXPECT_EQ(second.previous_agent, "executor");
  EXPECT_EQ(Pick(rules, context, Hello(), "reviewer"), "");  // previous: reviewer
  EXPECT_EQ(context.previous_agent(), "reviewer");
}

TEST(RuleSetTest, PhaseMustBeTheCurrentPhase) {
  RuleSet rules = OneCondition("{phase: verification}");
  RunContext context;
  EXPECT_EQ(Pick(rules, context, Hello()), "");
  context.SetPhase("verification");
  EXPECT_EQ(Pick(rules, context, Hello()), "cond");
  context.SetPhase("fix");
  EXPECT_EQ(Pick(rules, context, Hello()), "");
}

TEST(RuleSetTest, ModelMustBeTheRequestedModel) {
  RuleSet rules = OneCondition("{model: gpt-4o}");
  RunContext context;
  EXPECT_EQ(Pick(rules, context, Request({{"user", "x"}}, {}, "gpt-4o")), "cond");
  EXPECT_EQ(Pick(rules, context, Request({{"user", "x"}}, {}, "gpt-4o-mini")), "");
}

TEST(RuleSetTest, ExactIterationMatchesOnlyThatCallOfTheAgent) {
  RuleSet rules = OneCondition("{iteration: 2}");
  RunContext context;
  EXPECT_EQ(Pick(rules, context, Hello(), "a"), "");      // a#1
  EXPECT_EQ(Pick(rules, context, Hello(), "b"), "");      // b#1 (overall 2)
  EXPECT_EQ(Pick(rules, context, Hello(), "a"), "cond");  // a#2
  EXPECT_EQ(Pick(rules, context, Hello(), "a"), "");      // a#3
  EXPECT_EQ(Pick(rules, context, Hello(), "b"), "cond");  // b#2
}

TEST(RuleSetTest, IterationRangeBoundsTheAgentCount) {
  RuleSet rules = OneCondition("{iteration: {min: 2, max: 3}}");
  RunContext context;
  std::vector<std::string> picks;
  for (int i = 0; i < 4; ++i) picks.push_back(Pick(rules, context, Hello(), "a"));
  EXPECT_THAT(picks, ElementsAre("", "cond", "cond", ""));

  RuleSet open = OneCondition("{iteration: {min: 3}}");
  RunContext context2;
  picks.clear();
  for (int i = 0; i < 5; ++i) picks.push_back(Pick(open, context2, Hello(), "a"));
  EXPECT_THAT(picks, ElementsAre("", "", "cond", "cond", "cond"));
}

TEST(RuleSetTest, PreviousToolCallsRequiresEveryListedToolCalledBefore) {
  RuleSet rules = OneCondition("{previous_tool_calls: [write_file, run_tests]}");
  RunContext context;
  EXPECT_EQ(Pick(rules, context, Hello()), "");
  Observe(context, ToolCalls({{"write_file", "{}"}}), Extractors{});
  EXPECT_EQ(Pick(rules, context, Hello()), "");
  Observe(context, ToolCalls({{"run_tests", "{}"}}), Extractors{});
  EXPECT_EQ(Pick(rules, context, Hello()), "cond");
}

TEST(RuleSetTest, HasToolResultChecksForAToolMessage) {
  RuleSet with = OneCondition("{has_tool_result: true}");
  RuleSet without = OneCondition("{has_tool_result: false}");
  RunContext context;
  v1::CompletionRequest tool_result = Request({{"user", "u"}, {"tool", "42"}});
  EXPECT_EQ(Pick(with, context, tool_result), "cond");
  EXPECT_EQ(Pick(with, context, Hello()), "");
  EXPECT_EQ(Pick(without, context, Hello()), "cond");
  EXPECT_EQ(Pick(without, context, tool_result), "");
}

TEST(RuleSetTest, ToolAvailableRequiresTheRequestToOfferTheTool) {
  RuleSet rules = OneCondition("{tool_available: continue}");
  RunContext context;
  EXPECT_EQ(Pick(rules, context, Request({{"user", "u"}}, {"search", "continue"})), "cond");
  EXPECT_EQ(Pick(rules, context, Request({{"user", "u"}}, {"search"})), "");
  EXPECT_EQ(Pick(rules, context, Request({{"user", "u"}})), "");
}

TEST(RuleSetTest, AllConditionsMustHold) {
  RuleSet rules = OneCondition("{agent: reviewer, user_message: diff, iteration: 1}");
  RunContext context;
  EXPECT_EQ(Pick(rules, context, Request({{"user", "no"}}), "reviewer"), "");  // reviewer#1
  EXPECT_EQ(Pick(rules, context, Request({{"user", "diff"}}), "reviewer"), "");  // #2
  EXPECT_EQ(Pick(rules, context, Request({{"user", "diff"}}), "x"), "");
  RunContext fresh;
  EXPECT_EQ(Pick(rules, fresh, Request({{"user", "diff"}}), "reviewer"), "cond");
}

TEST(RuleSetTest, IterationsCountPerAgentAndOverall) {
  RuleSet rules = MustBuild("");
  RunContext context;
  std::vector<std::pair<int, int>> seen;  // {agent, overall}
  for (const char* agent : {"a", "b", "a", "a", "b", ""}) {
    Selection s = rules.Select(context, Hello(), agent);
    seen.emplace_back(s.agent_iteration, s.overall_iteration);
  }
  EXPECT_THAT(seen, ElementsAre(std::make_pair(1, 1), std::make_pair(1, 2),
                                std::make_pair(2, 3), std::make_pair(3, 4),
                                std::make_pair(2, 5), std::make_pair(1, 6)));
  EXPECT_EQ(context.overall_iteration(), 6);
  EXPECT_EQ(context.agent_iteration("a"), 3);
  EXPECT_EQ(context.agent_iteration("b"), 2);
  EXPECT_EQ(context.agent_iteration("nobody"), 0);
}

TEST(RuleSetTest, TimesLimitedRuleIsExhaustedAfterItsUses) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - {name: twice, priority: 1, times: 2, respond: {content: t}}
  - {name: fallback, respond: {content: f}}
)yaml");
  RunContext context;
  std::vector<std::pair<std::string, int64_t>> picks;
  for (int i = 0; i < 4; ++i) {
    Selection s = rules.Select(context, Hello(), "a");
    picks.emplace_back(s.rule->name, s.rule_use);
  }
  EXPECT_THAT(picks, ElementsAre(std::make_pair("twice", 1), std::make_pair("twice", 2),
                                 std::make_pair("fallback", 1), std::make_pair("fallback", 2)));
  EXPECT_EQ(context.rule_uses(0), 2);
  EXPECT_EQ(context.rule_uses(1), 2);
}

TEST(RuleSetTest, UsesAreCountedPerRunContext) {
  RuleSet rules = MustBuild("rules:\n  - {name: once, times: 1, respond: {content: o}}\n");
  RunContext run1, run2;
  EXPECT_EQ(Pick(rules, run1, Hello()), "once");
  EXPECT_EQ(Pick(rules, run1, Hello()), "");
  EXPECT_EQ(Pick(rules, run2, Hello()), "once");
}

TEST(RuleSetTest, CreateRefusesAnUncompiledPattern) {
  Scenario scenario;
  Rule rule;
  rule.name = "raw";
  rule.when.user_message = Pattern{"x", nullptr};
  scenario.rules.push_back(rule);
  EXPECT_THAT(RuleSet::Create(scenario),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("user_message")));
}

TEST(ObserveTest, KeepsEachToolNameOnceInFirstCallOrder) {
  RunContext context;
  Observation o = Observe(context, ToolCalls({{"search", "{}"}, {"read", "{}"}}), Extractors{});
  EXPECT_THAT(o.tool_calls, ElementsAre("search", "read"));
  EXPECT_EQ(o.phase, std::nullopt);
  Observe(context, ToolCalls({{"search", "{}"}}), Extractors{});
  EXPECT_THAT(context.tool_calls(), ElementsAre("search", "read"));
  Observe(context, ToolCalls({}, "plain text"), Extractors{});
  // A long run of the same calls keeps the context bounded.
  for (int i = 0; i < 1000; ++i) Observe(context, ToolCalls({{"read", "{}"}}), Extractors{});
  EXPECT_EQ(context.tool_calls().size(), 2u);
}

TEST(ObserveTest, SetsPhaseFromTheContinueToolArgument) {
  Scenario scenario = MustLoad("extractors:\n  phase: {tool: continue, argument: phase}\n");
  RunContext context;
  EXPECT_EQ(context.phase(), "");
  Observation o = Observe(context, ToolCalls({{"continue", R"({"phase": "verification"})"}}),
                          scenario.extractors);
  EXPECT_EQ(o.phase, "verification");
  EXPECT_EQ(context.phase(), "verification");
  // Other tools, missing arguments and malformed JSON leave the phase alone.
  Observe(context, ToolCalls({{"other", R"({"phase": "x"})"}}), scenario.extractors);
  Observe(context, ToolCalls({{"continue", R"({"reason": "x"})"}}), scenario.extractors);
  Observe(context, ToolCalls({{"continue", "{not json"}}), scenario.extractors);
  EXPECT_EQ(context.phase(), "verification");
  EXPECT_THAT(context.tool_calls(), ElementsAre("continue", "other"));
}

TEST(ObserveTest, ObservedPhaseFeedsThePhaseCondition) {
  Scenario scenario = MustLoad(R"yaml(
extractors:
  phase: {tool: continue, argument: phase}
rules:
  - {name: verify, when: {phase: verification}, respond: {content: v}}
)yaml");
  absl::StatusOr<RuleSet> rules = RuleSet::Create(scenario);
  ASSERT_THAT(rules, IsOk());
  RunContext context;
  EXPECT_EQ(Pick(*rules, context, Hello()), "");
  Observe(context, ToolCalls({{"continue", R"({"phase": "verification"})"}}),
          scenario.extractors);
  EXPECT_EQ(Pick(*rules, context, Hello()), "verify");
}

TEST(ObserveTest, SetsPhaseFromRoutingContentAndMarksTheEnd) {
  Scenario scenario = MustLoad(R"yaml(
extractors:
  routing: {agents_field: next, phase_field: stage, reason_field: why}
  end: {tool: complete}
)yaml");
  RunContext context;
  Observation o = Observe(
      context, ToolCalls({}, R"({"next": ["reviewer"], "stage": "review", "why": "done"})"),
      scenario.extractors);
  EXPECT_EQ(o.phase, "review");
  EXPECT_FALSE(o.ended);
  EXPECT_EQ(context.phase(), "review");
  EXPECT_FALSE(context.ended());
  o = Observe(context, ToolCalls({{"complete", "{}"}}), scenario.extractors);
  EXPECT_TRUE(o.ended);
  EXPECT_TRUE(context.ended());
}

TEST(RunContextTest, CapturesAreKeptByName) {
  RunContext context;
  EXPECT_EQ(context.capture("plan_id"), std::nullopt);
  context.SetCapture("plan_id", "PLAN-1");
  context.SetCapture("plan_id", "PLAN-2");
  EXPECT_EQ(context.capture("plan_id"), "PLAN-2");
  EXPECT_EQ(context.captures().size(), 1u);
}

// Issue 4: concurrent requests in one run never over-use a `times`-limited
// rule and never skip or repeat an iteration number.
void FireConcurrently(int64_t times_a, int64_t times_b) {
  constexpr int kThreads = 32;
  RuleSet rules = MustBuild(absl::StrCat(R"yaml(
rules:
  - {name: a, priority: 2, times: )yaml",
                                         times_a, R"yaml(, respond: {content: a}}
  - {name: b, priority: 1, times: )yaml",
                                         times_b, R"yaml(, respond: {content: b}}
)yaml"));
  RunContext context;
  std::vector<Selection> results(kThreads);
  absl::Notification start;
  std::vector<std::thread> threads;
  v1::CompletionRequest request = Hello();
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      start.WaitForNotification();
      results[i] = rules.Select(context, request, i % 2 == 0 ? "even" : "odd");
    });
  }
  start.Notify();
  for (std::thread& t : threads) t.join();

  std::map<std::string, int64_t> fires;
  std::set<int64_t> uses_a, uses_b;
  std::multiset<int> overall;
  std::map<std::string, std::multiset<int>> per_agent;
  for (int i = 0; i < kThreads; ++i) {
    const Selection& s = results[i];
    if (s.rule != nullptr) {
      ++fires[s.rule->name];
      (s.rule->name == "a" ? uses_a : uses_b).insert(s.rule_use);
    }
    overall.insert(s.overall_iteration);
    per_agent[i % 2 == 0 ? "even" : "odd"].insert(s.agent_iteration);
  }
  EXPECT_LE(fires["a"], times_a);
  EXPECT_LE(fires["b"], times_b);
  EXPECT_EQ(fires["a"] + fires["b"], std::min<int64_t>(kThreads, times_a + times_b));
  // Each use number handed out once: no two requests consumed the same use.
  EXPECT_EQ(static_cast<int64_t>(uses_a.size()), fires["a"]);
  EXPECT_EQ(static_cast<int64_t>(uses_b.size()), fires["b"]);

  std::multiset<int> expected_overall, expected_half;
  for (int i = 1; i <= kThreads; ++i) expected_overall.insert(i);
  for (int i = 1; i <= kThreads / 2; ++i) expected_half.insert(i);
  EXPECT_EQ(overall, expected_overall);
  EXPECT_EQ(per_agent["even"], expected_half);
  EXPECT_EQ(per_agent["odd"], expected_half);
  EXPECT_EQ(context.overall_iteration(), kThreads);
  EXPECT_EQ(context.rule_uses(0), fires["a"]);
  EXPECT_EQ(context.rule_uses(1), fires["b"]);
}

TEST(RuleSetTest, ConcurrentRequestsNeverOverUseRulesOrSkipIterations) {
  // Repeated to give the scheduler many interleavings.
  for (int round = 0; round < 25; ++round) {
    SCOPED_TRACE(round);
    FireConcurrently(5, 10);   // rules run out before the requests do
    FireConcurrently(20, 30);  // requests run out before the rules do
  }
}

// --- Tool rules (when.tool / when.tool_arguments) and SelectTool ---

using nlohmann::json;

// The chosen tool rule's name, or "" when none.
std::string PickTool(const RuleSet& rules, RunContext& context, absl::string_view tool,
                     const json& arguments = json::object(), absl::string_view agent = "") {
  Selection s = rules.SelectTool(context, tool, arguments, agent);
  return s.rule == nullptr ? "" : s.rule->name;
}

TEST(ToolRuleTest, SelectNeverChoosesAToolRule) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - {name: tool-any, priority: 9, when: {tool: '.*'}, respond: {content: t}}
  - {name: args-any, priority: 8, when: {tool_arguments: {}}, respond: {content: a}}
  - {name: model, respond: {content: m}}
)yaml");
  RunContext context;
  std::vector<RuleSkip> skipped;
  Selection s = rules.Select(context, Hello(), "a", &skipped);
  ASSERT_NE(s.rule, nullptr);
  EXPECT_EQ(s.rule->name, "model");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].rule, "tool-any");
  EXPECT_EQ(skipped[0].reason,
            "a tool rule (when.tool or when.tool_arguments): it answers MCP tool calls only");
  EXPECT_EQ(skipped[1].rule, "args-any");
  EXPECT_EQ(context.rule_uses(0), 0);
  EXPECT_EQ(context.rule_uses(1), 0);
}

TEST(ToolRuleTest, SelectToolNeverChoosesAModelRule) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - {name: model, priority: 9, respond: {content: m}}
  - {name: tool, when: {tool: read_file}, respond: {content: t}}
)yaml");
  RunContext context;
  std::vector<RuleSkip> skipped;
  Selection s = rules.SelectTool(context, "read_file", json::object(), "", &skipped);
  ASSERT_NE(s.rule, nullptr);
  EXPECT_EQ(s.rule->name, "tool");
  EXPECT_EQ(s.rule_index, 1);
  EXPECT_EQ(s.rule_use, 1);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].reason,
            "a model rule (no when.tool, when.tool_arguments or when.a2a): it answers model "
            "requests only");
  EXPECT_EQ(PickTool(rules, context, "write_file"), "");
  EXPECT_EQ(context.rule_uses(0), 0);
}

TEST(ToolRuleTest, PrioritiesAndTiesAsForModelRules) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - {name: low, priority: 1, when: {tool: x}, respond: {content: l}}
  - {name: first-tie, priority: 5, when: {tool: x}, respond: {content: a}}
  - {name: second-tie, priority: 5, when: {tool: x}, respond: {content: b}}
  - {name: model-high, priority: 50, respond: {content: m}}
)yaml");
  RunContext context;
  EXPECT_EQ(PickTool(rules, context, "x"), "first-tie");
  EXPECT_EQ(PickTool(rules, context, "x"), "first-tie");
}

TEST(ToolRuleTest, ToolNameIsMatchedInFull) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - {name: exact, priority: 3, when: {tool: read}, respond: {content: e}}
  - {name: family, priority: 2, when: {tool: 'read_.*'}, respond: {content: f}}
  - {name: either, priority: 1, when: {tool: 'write|delete'}, respond: {content: o}}
)yaml");
  RunContext context;
  EXPECT_EQ(PickTool(rules, context, "read"), "exact");
  EXPECT_EQ(PickTool(rules, context, "read_file"), "family");
  EXPECT_EQ(PickTool(rules, context, "reader"), "");       // `read` is not a prefix match
  EXPECT_EQ(PickTool(rules, context, "xread_file"), "");   // nor `read_.*` a search
  EXPECT_EQ(PickTool(rules, context, "write"), "either");  // the alternation is anchored whole
  EXPECT_EQ(PickTool(rules, context, "delete"), "either");
  EXPECT_EQ(PickTool(rules, context, "write_all"), "");
  std::vector<RuleSkip> skipped;
  rules.SelectTool(context, "reader", json::object(), "", &skipped);
  ASSERT_EQ(skipped.size(), 3u);
  EXPECT_EQ(skipped[0].reason, "when.tool /read/ does not match the whole tool name \"reader\"");
}

TEST(ToolRuleTest, ToolArgumentsMustBeContainedInTheCallsArguments) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - name: prod-deploy
    priority: 2
    when: {tool: deploy, tool_arguments: {env: prod, opts: {force: true}}}
    error: {message: refused}
  - name: any-a-txt
    priority: 1
    when: {tool_arguments: {path: a.txt, n: 1}}
    respond: {content: a}
  - name: empty-args
    when: {tool_arguments: {}}
    respond: {content: any}
)yaml");
  RunContext context;
  EXPECT_EQ(PickTool(rules, context, "deploy",
                     json::parse(R"({"env":"prod","opts":{"force":true,"dry":false},"v":2})")),
            "prod-deploy");
  EXPECT_EQ(PickTool(rules, context, "deploy", json::parse(R"({"env":"prod","opts":{}})")),
            "empty-args");
  // Any tool; numbers compare by value.
  EXPECT_EQ(PickTool(rules, context, "read", json::parse(R"({"path":"a.txt","n":1.0,"x":0})")),
            "any-a-txt");
  EXPECT_EQ(PickTool(rules, context, "read", json::parse(R"({"path":"b.txt","n":1})")),
            "empty-args");
  // No arguments at all (null) are {}.
  EXPECT_EQ(PickTool(rules, context, "read", json()), "empty-args");
  // Not an object: only contained when the rule asks nothing... of an object.
  EXPECT_EQ(PickTool(rules, context, "read", json::array()), "");

  // The reason names the rule's value, never the call's.
  std::vector<RuleSkip> skipped;
  rules.SelectTool(context, "deploy", json::parse(R"({"env":"secret-staging"})"), "", &skipped);
  ASSERT_FALSE(skipped.empty());
  EXPECT_EQ(skipped[0].reason,
            R"(when.tool_arguments {"env":"prod","opts":{"force":true}} are not contained in )"
            "the call's arguments");
  for (const RuleSkip& skip : skipped) {
    EXPECT_THAT(skip.reason, ::testing::Not(::testing::HasSubstr("secret")));
  }
}

TEST(ToolRuleTest, ToolCallsAreNotCountedAndLeaveThePreviousAgentAlone) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - {name: t, when: {tool: x}, respond: {content: t}}
)yaml");
  RunContext context;
  rules.Select(context, Hello(), "planner");
  rules.Select(context, Hello(), "executor");
  Selection s = rules.SelectTool(context, "x", json::object(), "executor");
  ASSERT_NE(s.rule, nullptr);
  EXPECT_EQ(s.overall_iteration, 2);  // the model requests so far
  EXPECT_EQ(s.agent_iteration, 1);
  EXPECT_EQ(s.previous_agent, "planner");  // before the executor's turn
  EXPECT_EQ(context.overall_iteration(), 2);
  EXPECT_EQ(context.agent_iteration("executor"), 1);
  EXPECT_EQ(context.previous_agent(), "executor");
  // The next model request sees the state as if no tool call happened.
  Selection next = rules.Select(context, Hello(), "planner");
  EXPECT_EQ(next.overall_iteration, 3);
  EXPECT_EQ(next.previous_agent, "executor");
  // An agent with no model request yet: iteration 0, no previous agent.
  Selection fresh = rules.SelectTool(context, "x", json::object(), "stranger");
  EXPECT_EQ(fresh.agent_iteration, 0);
  EXPECT_EQ(fresh.previous_agent, std::nullopt);
  EXPECT_EQ(context.agent_iteration("stranger"), 0);
}

TEST(ToolRuleTest, ContextConditionsApplyToTheAgentsLatestTurn) {
  Scenario scenario = MustLoad(R"yaml(
extractors:
  phase: {tool: continue, argument: phase}
rules:
  - name: executors-second-turn
    priority: 5
    when: {tool: x, agent: executor, iteration: 2}
    respond: {content: second}
  - name: after-review
    priority: 4
    when: {tool: x, previous_agent: reviewer}
    respond: {content: after-review}
  - name: in-fix-phase
    priority: 3
    when: {tool: x, phase: fix, previous_tool_calls: [continue]}
    respond: {content: fix}
  - name: fallback
    when: {tool: x}
    respond: {content: f}
)yaml");
  absl::StatusOr<RuleSet> built = RuleSet::Create(scenario);
  ASSERT_THAT(built, IsOk());
  const RuleSet& rules = *built;
  RunContext context;
  EXPECT_EQ(PickTool(rules, context, "x", json::object(), "executor"), "fallback");  // turn 0
  rules.Select(context, Hello(), "executor");
  EXPECT_EQ(PickTool(rules, context, "x", json::object(), "executor"), "fallback");  // turn 1
  rules.Select(context, Hello(), "reviewer");
  Observe(context, ToolCalls({{"continue", R"({"phase": "fix"})"}}), scenario.extractors);
  // The reviewer's turn: previous agent executor; the phase is fix now.
  EXPECT_EQ(PickTool(rules, context, "x", json::object(), "reviewer"), "in-fix-phase");
  rules.Select(context, Hello(), "executor");
  // The executor's second turn, after the reviewer.
  EXPECT_EQ(PickTool(rules, context, "x", json::object(), "executor"), "executors-second-turn");
  EXPECT_EQ(PickTool(rules, context, "x", json::object(), "other"), "in-fix-phase");
  context.SetPhase("done");
  EXPECT_EQ(PickTool(rules, context, "x", json::object(), "reviewer"), "fallback");
  rules.Select(context, Hello(), "reviewer");
  rules.Select(context, Hello(), "planner");
  // The planner's turn came right after the reviewer's.
  EXPECT_EQ(PickTool(rules, context, "x", json::object(), "planner"), "after-review");
  rules.Select(context, Hello(), "planner");
  std::vector<RuleSkip> skipped;
  EXPECT_EQ(PickTool(rules, context, "x", json::object(), "executor"), "executors-second-turn");
  Selection s = rules.SelectTool(context, "x", json::object(), "planner", &skipped);
  EXPECT_EQ(s.rule->name, "fallback");
  ASSERT_EQ(skipped.size(), 3u);
  EXPECT_EQ(skipped[0].reason, "when.agent is \"executor\", the caller is \"planner\"");
  EXPECT_EQ(skipped[1].reason,
            "when.previous_agent is \"reviewer\", the previous agent was \"planner\"");
  EXPECT_EQ(skipped[2].reason, "when.phase is \"fix\", the phase is \"done\"");
}

TEST(ToolRuleTest, IterationCountsTheAgentsModelRequests) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - {name: early, when: {tool: x, iteration: {max: 1}}, respond: {content: e}}
)yaml");
  RunContext context;
  std::vector<RuleSkip> skipped;
  EXPECT_EQ(rules.SelectTool(context, "x", json::object(), "a", &skipped).rule, nullptr);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].reason, "when.iteration is 1, the agent's model requests so far: 0");
  rules.Select(context, Hello(), "a");
  EXPECT_EQ(PickTool(rules, context, "x", json::object(), "a"), "early");
  EXPECT_EQ(PickTool(rules, context, "x", json::object(), "a"), "early");  // not counted
  rules.Select(context, Hello(), "a");
  EXPECT_EQ(PickTool(rules, context, "x", json::object(), "a"), "");
}

TEST(ToolRuleTest, ConditionsOnTheModelRequestNeverHold) {
  for (const char* when : {"system_prompt: x", "user_message: x", "message_contains: x",
                           "has_tool_result: false", "tool_available: x", "model: m"}) {
    SCOPED_TRACE(when);
    RuleSet rules = MustBuild(absl::StrCat("rules:\n  - name: r\n    when: {tool: x, ", when,
                                           "}\n    respond: {content: r}\n"));
    RunContext context;
    std::vector<RuleSkip> skipped;
    EXPECT_EQ(rules.SelectTool(context, "x", json::object(), "", &skipped).rule, nullptr);
    ASSERT_EQ(skipped.size(), 1u);
    EXPECT_THAT(skipped[0].reason, ::testing::EndsWith("reads a model request; this is a tool "
                                                       "call"));
  }
}

TEST(ToolRuleTest, UsesCountPerToolCallForTimesAndSequences) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - name: twice
    priority: 1
    times: 2
    when: {tool: x}
    sequence: [{error: {message: a}}, {respond: {content: b}}]
  - {name: after, when: {tool: x}, respond: {content: c}}
)yaml");
  RunContext context;
  std::vector<std::pair<std::string, int64_t>> picks;
  for (int i = 0; i < 4; ++i) {
    Selection s = rules.SelectTool(context, "x", json::object(), "a");
    picks.emplace_back(s.rule->name, s.rule_use);
  }
  EXPECT_THAT(picks, ElementsAre(std::make_pair("twice", 1), std::make_pair("twice", 2),
                                 std::make_pair("after", 1), std::make_pair("after", 2)));
  EXPECT_EQ(context.rule_uses(0), 2);
  // A call no rule matches consumes nothing.
  EXPECT_EQ(rules.SelectTool(context, "y", json::object(), "a").rule_use, 0);
  EXPECT_EQ(context.rule_uses(1), 2);
}

TEST(ToolRuleTest, CreateRefusesAnUncompiledToolPattern) {
  Scenario scenario;
  Rule rule;
  rule.name = "raw";
  rule.when.tool = Pattern{"x", nullptr};
  scenario.rules.push_back(rule);
  EXPECT_THAT(RuleSet::Create(scenario),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("when.tool")));
}

// Tool calls and model requests racing in one run: every tool use handed out
// once and never past `times`, model iterations neither skipped nor bumped by
// the tool calls.
TEST(ToolRuleTest, ConcurrentToolCallsNeverOverUseRules) {
  constexpr int kThreads = 32;
  for (int round = 0; round < 25; ++round) {
    SCOPED_TRACE(round);
    RuleSet rules = MustBuild(R"yaml(
rules:
  - {name: tool-a, priority: 2, times: 7, when: {tool: x}, respond: {content: a}}
  - {name: tool-b, priority: 1, times: 5, when: {tool: 'x|y'}, respond: {content: b}}
  - {name: model, times: 3, respond: {content: m}}
)yaml");
    RunContext context;
    std::vector<Selection> results(kThreads);
    absl::Notification start;
    std::vector<std::thread> threads;
    const v1::CompletionRequest request = Hello();
    const json arguments = json::parse(R"({"k":1})");
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        start.WaitForNotification();
        results[i] = i % 4 == 0 ? rules.Select(context, request, "m")
                                : rules.SelectTool(context, "x", arguments, "t");
      });
    }
    start.Notify();
    for (std::thread& t : threads) t.join();

    std::map<std::string, std::set<int64_t>> uses;
    std::multiset<int> model_iterations;
    int tool_calls = 0;
    for (int i = 0; i < kThreads; ++i) {
      const Selection& s = results[i];
      if (i % 4 == 0) {
        model_iterations.insert(s.overall_iteration);
      } else {
        ++tool_calls;
      }
      if (s.rule == nullptr) continue;
      EXPECT_TRUE(uses[s.rule->name].insert(s.rule_use).second) << s.rule->name;
      EXPECT_EQ(s.rule->name == "model", i % 4 == 0);
    }
    EXPECT_EQ(uses["tool-a"].size(), 7u);
    EXPECT_EQ(uses["tool-b"].size(), 5u);
    EXPECT_EQ(uses["model"].size(), 3u);
    EXPECT_EQ(tool_calls, 24);
    std::multiset<int> expected;
    for (int i = 1; i <= kThreads / 4; ++i) expected.insert(i);
    EXPECT_EQ(model_iterations, expected);
    EXPECT_EQ(context.overall_iteration(), kThreads / 4);
    EXPECT_EQ(context.rule_uses(0), 7);
    EXPECT_EQ(context.rule_uses(1), 5);
  }
}

// --- A2A rules (when.a2a) and SelectA2a ---

// The chosen A2A rule's name, or "" when none.
std::string PickA2a(const RuleSet& rules, RunContext& context, absl::string_view callee,
                    absl::string_view text = "hello", absl::string_view agent = "") {
  Selection s = rules.SelectA2a(context, callee, text, agent);
  return s.rule == nullptr ? "" : s.rule->name;
}

TEST(A2aRuleTest, CalleeIsMatchedInFull) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - {name: exact, priority: 3, when: {a2a: writer}, respond: {content: e}}
  - {name: family, priority: 2, when: {a2a: 'research.*'}, respond: {content: f}}
  - {name: either, priority: 1, when: {a2a: 'editor|critic'}, respond: {content: o}}
)yaml");
  RunContext context;
  EXPECT_EQ(PickA2a(rules, context, "writer"), "exact");
  EXPECT_EQ(PickA2a(rules, context, "researcher"), "family");
  EXPECT_EQ(PickA2a(rules, context, "writers"), "");          // not a prefix match
  EXPECT_EQ(PickA2a(rules, context, "a-researcher"), "");     // nor a search
  EXPECT_EQ(PickA2a(rules, context, "critic"), "either");     // the alternation is anchored whole
  EXPECT_EQ(PickA2a(rules, context, "editorial"), "");
  std::vector<RuleSkip> skipped;
  EXPECT_EQ(rules.SelectA2a(context, "writers", "hello", "", &skipped).rule, nullptr);
  ASSERT_EQ(skipped.size(), 3u);
  EXPECT_EQ(skipped[0].reason, "when.a2a /writer/ does not match the whole agent name \"writers\"");
}

TEST(A2aRuleTest, MessagePatternsAreSearchedInTheText) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - name: drafts
    priority: 3
    when: {a2a: writer, message_contains: '(?i)draft'}
    respond: {content: d}
  - {name: urgent, priority: 2, when: {a2a: writer, user_message: '^URGENT'}, respond: {content: u}}
  - {name: any, when: {a2a: writer}, respond: {content: a}}
)yaml");
  RunContext context;
  EXPECT_EQ(PickA2a(rules, context, "writer", "please write a Draft of the intro"), "drafts");
  EXPECT_EQ(PickA2a(rules, context, "writer", "URGENT: the summary"), "urgent");
  EXPECT_EQ(PickA2a(rules, context, "writer", "not URGENT: the summary"), "any");  // unanchored
  EXPECT_EQ(PickA2a(rules, context, "writer", ""), "any");
  // The reasons name the rule's patterns and the callee, never the text.
  std::vector<RuleSkip> skipped;
  Selection s = rules.SelectA2a(context, "writer", "top-secret plans", "", &skipped);
  ASSERT_NE(s.rule, nullptr);
  EXPECT_EQ(s.rule->name, "any");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].reason,
            "when.message_contains /(?i)draft/ is not found in the message to \"writer\"");
  EXPECT_EQ(skipped[1].reason,
            "when.user_message /^URGENT/ is not found in the message to \"writer\"");
  for (const RuleSkip& skip : skipped) {
    EXPECT_THAT(skip.reason, ::testing::Not(::testing::HasSubstr("secret")));
  }
}

TEST(A2aRuleTest, EachKindOfRuleAnswersItsOwnKindOfRequestOnly) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - {name: a2a-any, priority: 9, when: {a2a: '.*'}, respond: {content: x}}
  - {name: tool-any, priority: 8, when: {tool: '.*'}, respond: {content: t}}
  - {name: model, respond: {content: m}}
)yaml");
  RunContext context;
  std::vector<RuleSkip> skipped;
  Selection model = rules.Select(context, Hello(), "a", &skipped);
  ASSERT_NE(model.rule, nullptr);
  EXPECT_EQ(model.rule->name, "model");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].rule, "a2a-any");
  EXPECT_EQ(skipped[0].reason, "an A2A rule (when.a2a): it answers calls to other agents only");

  skipped.clear();
  Selection tool = rules.SelectTool(context, "x", json::object(), "a", &skipped);
  ASSERT_NE(tool.rule, nullptr);
  EXPECT_EQ(tool.rule->name, "tool-any");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].reason, "an A2A rule (when.a2a): it answers calls to other agents only");

  skipped.clear();
  Selection a2a = rules.SelectA2a(context, "writer", "hi", "a", &skipped);
  ASSERT_NE(a2a.rule, nullptr);
  EXPECT_EQ(a2a.rule->name, "a2a-any");
  EXPECT_EQ(a2a.rule_index, 0);
  EXPECT_TRUE(skipped.empty());

  // With no A2A rule left, SelectA2a answers nothing rather than take
  // another kind's.
  RuleSet others = MustBuild(R"yaml(
rules:
  - {name: tool-any, priority: 8, when: {tool: '.*'}, respond: {content: t}}
  - {name: model, respond: {content: m}}
)yaml");
  skipped.clear();
  Selection none = others.SelectA2a(context, "writer", "hi", "a", &skipped);
  EXPECT_EQ(none.rule, nullptr);
  EXPECT_EQ(none.rule_index, -1);
  EXPECT_EQ(none.rule_use, 0);
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].reason,
            "a tool rule (when.tool or when.tool_arguments): it answers MCP tool calls only");
  EXPECT_EQ(skipped[1].reason,
            "a model rule (no when.tool, when.tool_arguments or when.a2a): it answers model "
            "requests only");
}

TEST(A2aRuleTest, A2aCallsAreNotCountedAndLeaveThePreviousAgentAlone) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - {name: r, when: {a2a: writer}, respond: {content: r}}
)yaml");
  RunContext context;
  rules.Select(context, Hello(), "planner");
  rules.Select(context, Hello(), "executor");
  Selection s = rules.SelectA2a(context, "writer", "hi", "executor");
  ASSERT_NE(s.rule, nullptr);
  EXPECT_EQ(s.overall_iteration, 2);
  EXPECT_EQ(s.agent_iteration, 1);
  EXPECT_EQ(s.previous_agent, "planner");  // before the executor's turn
  EXPECT_EQ(context.overall_iteration(), 2);
  EXPECT_EQ(context.agent_iteration("executor"), 1);
  EXPECT_EQ(context.previous_agent(), "executor");
  Selection next = rules.Select(context, Hello(), "planner");
  EXPECT_EQ(next.overall_iteration, 3);
  EXPECT_EQ(next.previous_agent, "executor");
}

TEST(A2aRuleTest, ContextConditionsApplyToTheCallersLatestTurn) {
  Scenario scenario = MustLoad(R"yaml(
extractors:
  phase: {tool: continue, argument: phase}
rules:
  - name: executors-second-turn
    priority: 5
    when: {a2a: writer, agent: executor, iteration: 2}
    respond: {content: second}
  - name: after-review
    priority: 4
    when: {a2a: writer, previous_agent: reviewer}
    respond: {content: after-review}
  - name: in-fix-phase
    priority: 3
    when: {a2a: writer, phase: fix, previous_tool_calls: [continue]}
    respond: {content: fix}
  - name: fallback
    when: {a2a: writer}
    respond: {content: f}
)yaml");
  absl::StatusOr<RuleSet> built = RuleSet::Create(scenario);
  ASSERT_THAT(built, IsOk());
  const RuleSet& rules = *built;
  RunContext context;
  EXPECT_EQ(PickA2a(rules, context, "writer", "x", "executor"), "fallback");  // turn 0
  rules.Select(context, Hello(), "executor");
  EXPECT_EQ(PickA2a(rules, context, "writer", "x", "executor"), "fallback");  // turn 1
  rules.Select(context, Hello(), "reviewer");
  Observe(context, ToolCalls({{"continue", R"({"phase": "fix"})"}}), scenario.extractors);
  EXPECT_EQ(PickA2a(rules, context, "writer", "x", "reviewer"), "in-fix-phase");
  rules.Select(context, Hello(), "executor");
  EXPECT_EQ(PickA2a(rules, context, "writer", "x", "executor"), "executors-second-turn");
  context.SetPhase("done");
  rules.Select(context, Hello(), "reviewer");
  rules.Select(context, Hello(), "planner");
  EXPECT_EQ(PickA2a(rules, context, "writer", "x", "planner"), "after-review");
  rules.Select(context, Hello(), "planner");
  std::vector<RuleSkip> skipped;
  Selection s = rules.SelectA2a(context, "writer", "x", "planner", &skipped);
  ASSERT_NE(s.rule, nullptr);
  EXPECT_EQ(s.rule->name, "fallback");
  ASSERT_EQ(skipped.size(), 3u);
  EXPECT_EQ(skipped[0].reason, "when.agent is \"executor\", the caller is \"planner\"");
  EXPECT_EQ(skipped[1].reason,
            "when.previous_agent is \"reviewer\", the previous agent was \"planner\"");
  EXPECT_EQ(skipped[2].reason, "when.phase is \"fix\", the phase is \"done\"");
}

TEST(A2aRuleTest, ConditionsOnTheModelRequestNeverHold) {
  for (const char* when :
       {"system_prompt: x", "has_tool_result: false", "tool_available: x", "model: m"}) {
    SCOPED_TRACE(when);
    RuleSet rules = MustBuild(absl::StrCat("rules:\n  - name: r\n    when: {a2a: w, ", when,
                                           "}\n    respond: {content: r}\n"));
    RunContext context;
    rules.Select(context, Request({{"system", "x"}, {"user", "x"}}, {"x"}, "m"), "");
    std::vector<RuleSkip> skipped;
    EXPECT_EQ(rules.SelectA2a(context, "w", "x", "", &skipped).rule, nullptr);
    ASSERT_EQ(skipped.size(), 1u);
    EXPECT_THAT(skipped[0].reason,
                ::testing::EndsWith("reads a model request; this is an A2A call"));
  }
}

TEST(A2aRuleTest, UsesCountPerA2aCallForTimesAndSequences) {
  RuleSet rules = MustBuild(R"yaml(
rules:
  - name: twice
    priority: 1
    times: 2
    when: {a2a: writer}
    sequence: [{error: {message: down}}, {respond: {content: b}}]
  - {name: after, when: {a2a: writer}, respond: {content: c}}
  - {name: tool-twice, priority: 2, times: 2, when: {tool: writer}, respond: {content: t}}
)yaml");
  RunContext context;
  std::vector<std::pair<std::string, int64_t>> picks;
  for (int i = 0; i < 4; ++i) {
    Selection s = rules.SelectA2a(context, "writer", "go", "a");
    ASSERT_NE(s.rule, nullptr);
    picks.emplace_back(s.rule->name, s.rule_use);
  }
  EXPECT_THAT(picks, ElementsAre(std::make_pair("twice", 1), std::make_pair("twice", 2),
                                 std::make_pair("after", 1), std::make_pair("after", 2)));
  EXPECT_EQ(context.rule_uses(0), 2);
  EXPECT_EQ(context.rule_uses(2), 0);  // the tool rule of the same name is untouched
  // A call no rule matches consumes nothing.
  Selection none = rules.SelectA2a(context, "reader", "go", "a");
  EXPECT_EQ(none.rule, nullptr);
  EXPECT_EQ(none.rule_use, 0);
  EXPECT_EQ(context.rule_uses(1), 2);
}

TEST(A2aRuleTest, CreateRefusesAnUncompiledA2aPatternAndARuleOfTwoKinds) {
  Scenario raw;
  Rule rule;
  rule.name = "raw";
  rule.when.a2a = Pattern{"x", nullptr};
  raw.rules.push_back(rule);
  EXPECT_THAT(RuleSet::Create(raw),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("when.a2a")));

  Scenario both = MustLoad(R"yaml(
rules:
  - {name: both, when: {a2a: w}, respond: {content: x}}
)yaml");
  ASSERT_EQ(both.rules.size(), 1u);
  both.rules[0].when.tool = both.rules[0].when.a2a;
  EXPECT_THAT(RuleSet::Create(both),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("when.a2a with when.tool")));
}

}  // namespace
}  // namespace scenario
}  // namespace understudy
