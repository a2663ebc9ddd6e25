#include "replayer/rules.h"

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
namespace replayer {
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

}  // namespace
}  // namespace replayer
}  // namespace understudy
