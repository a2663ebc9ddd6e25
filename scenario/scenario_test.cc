#include "scenario/scenario.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace scenario {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

// Every field of the schema, once.
constexpr char kFull[] = R"yaml(
schema: understudy.scenario/v1
name: review-loop
description: executor and reviewer
agents:
  - name: executor
    system_prompt: 'You are the executor'
  - name: reviewer
    system_prompt: '(?i)you review'
extractors:
  phase: {tool: continue, argument: phase}
  routing: {agents_field: next, phase_field: stage, reason_field: why}
  end: {tool: complete}
matching:
  ignore_paths: [params.temperature, 'messages[*].name']
  normalizers: [uuid, 'id-[0-9]+=>id']
  strict: true
rules:
  - name: reviewer-finds-hole
    priority: 10
    times: 2
    when:
      system_prompt: 'review'
      user_message: 'diff'
      message_contains: 'password'
      agent: reviewer
      previous_agent: executor
      phase: verification
      model: gpt-4o
      iteration: {min: 1, max: 3}
      previous_tool_calls: [write_file, run_tests]
      has_tool_result: true
      tool_available: continue
    respond:
      content: 'Security hole in auth.py'
      tool_calls:
        - name: continue
          arguments: {phase: fix, attempts: 2, deep: {ok: true}}
        - name: raw
          arguments: '{"a": 1}'
      finish_reason: tool_calls
      usage: {input_tokens: 12, output_tokens: 34}
  - name: second-call-fails
    when: {iteration: 2}
    error: {grpc_code: RESOURCE_EXHAUSTED, http_status: 429, message: slow down, retry_after_seconds: 1.5}
  - name: pause
    delay: {ms: 250}
  - name: stall
    hang: {}
  - name: cut
    disconnect: {after_chunks: 3}
  - name: flaky
    fail_then_succeed:
      failures: 2
      error: {grpc_code: UNAVAILABLE}
      then: {respond: {content: ok}}
  - name: steps
    sequence:
      - respond: {content: one}
      - error: {http_status: 500}
      - sequence: [{hang: {}}]
  - name: replay-other
    from_session: {session: golden@2, seq: 4}
  - name: tool-fails
    when: {tool: 'read_.*', tool_arguments: {path: a.txt, opts: {deep: [1, 2]}}, agent: executor}
    sequence:
      - error: {jsonrpc_code: -32602, message: no such file}
      - error: {message: disk on fire}
      - respond: {content: hello, structured: {lines: 1, text: hello}}
default:
  respond: {content: 'default answer'}
playbook:
  turns:
    - when: 'make a plan'
      actions:
        - call: {tool: plan_propose, args: {goal: ship}}
        - say: {text: 'Plan {{plan_id}} proposed'}
      capture:
        plan_id: {from_tool_result: plan_propose, regex: '(PLAN-[0-9a-f]+)'}
mock_tools:
  search: 'no results'
  weather: {template: 'sunny in {{city}}'}
  calc: {result: {value: 42, exact: true}}
mock_ui: {confirm: false, select: 2, input: yes please, editor: 'text'}
)yaml";

TEST(ScenarioTest, FullExampleLoadsEveryField) {
  absl::StatusOr<Scenario> loaded = LoadScenario(kFull, "full.yaml");
  ASSERT_THAT(loaded, IsOk());
  const Scenario& s = *loaded;
  EXPECT_EQ(s.source, "full.yaml");
  EXPECT_EQ(s.name, "review-loop");
  EXPECT_EQ(s.description, "executor and reviewer");
  ASSERT_THAT(s.agents, SizeIs(2));
  EXPECT_EQ(s.agents[1].name, "reviewer");
  EXPECT_TRUE(RE2::PartialMatch("You Review code", *s.agents[1].system_prompt.re));

  ASSERT_TRUE(s.extractors.phase && s.extractors.routing && s.extractors.end);
  EXPECT_EQ(s.extractors.phase->tool, "continue");
  EXPECT_EQ(s.extractors.phase->argument, "phase");
  EXPECT_EQ(s.extractors.routing->agents_field, "next");
  EXPECT_EQ(s.extractors.routing->phase_field, "stage");
  EXPECT_EQ(s.extractors.routing->reason_field, "why");
  EXPECT_EQ(s.extractors.end->tool, "complete");

  EXPECT_THAT(s.matching.ignore_paths, ElementsAre("params.temperature", "messages[*].name"));
  EXPECT_THAT(s.matching.normalizers, ElementsAre("uuid", "id-[0-9]+=>id"));
  EXPECT_EQ(s.matching.strict, true);
  ASSERT_NE(s.matching.normalizer, nullptr);
  EXPECT_FALSE(s.matching.normalizer->empty());

  ASSERT_THAT(s.rules, SizeIs(9));
  const Rule& r0 = s.rules[0];
  EXPECT_EQ(r0.name, "reviewer-finds-hole");
  EXPECT_EQ(r0.priority, 10);
  EXPECT_EQ(r0.times, 2);
  EXPECT_EQ(r0.index, 0u);
  const When& w = r0.when;
  ASSERT_TRUE(w.system_prompt && w.user_message && w.message_contains);
  EXPECT_TRUE(RE2::PartialMatch("please review", *w.system_prompt->re));
  EXPECT_EQ(w.user_message->text, "diff");
  EXPECT_EQ(w.agent, "reviewer");
  EXPECT_EQ(w.previous_agent, "executor");
  EXPECT_EQ(w.phase, "verification");
  EXPECT_EQ(w.model, "gpt-4o");
  ASSERT_TRUE(w.iteration);
  EXPECT_EQ(w.iteration->min, 1);
  EXPECT_EQ(w.iteration->max, 3);
  EXPECT_THAT(w.previous_tool_calls, ElementsAre("write_file", "run_tests"));
  EXPECT_EQ(w.has_tool_result, true);
  EXPECT_EQ(w.tool_available, "continue");

  const auto& respond = std::get<RespondAction>(r0.action.value);
  EXPECT_STREQ(r0.action.kind_name(), "respond");
  EXPECT_EQ(respond.content, "Security hole in auth.py");
  ASSERT_THAT(respond.tool_calls, SizeIs(2));
  EXPECT_EQ(respond.tool_calls[0].arguments,
            nlohmann::json::parse(R"({"phase":"fix","attempts":2,"deep":{"ok":true}})"));
  EXPECT_EQ(respond.tool_calls[1].arguments, nlohmann::json("{\"a\": 1}"));
  EXPECT_EQ(respond.finish_reason, "tool_calls");
  ASSERT_TRUE(respond.usage);
  EXPECT_EQ(respond.usage->input_tokens, 12);
  EXPECT_EQ(respond.usage->output_tokens, 34);

  EXPECT_EQ(s.rules[1].when.iteration->min, 2);
  EXPECT_EQ(s.rules[1].when.iteration->max, 2);
  const auto& error = std::get<ErrorAction>(s.rules[1].action.value);
  EXPECT_EQ(error.grpc_code, absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(error.http_status, 429);
  EXPECT_EQ(error.message, "slow down");
  EXPECT_EQ(error.retry_after_seconds, 1.5);
  EXPECT_EQ(s.rules[1].priority, 0);
  EXPECT_FALSE(s.rules[1].times);

  EXPECT_EQ(std::get<DelayAction>(s.rules[2].action.value).ms, 250);
  EXPECT_TRUE(std::holds_alternative<HangAction>(s.rules[3].action.value));
  EXPECT_EQ(std::get<DisconnectAction>(s.rules[4].action.value).after_chunks, 3);
  const auto& flaky = std::get<FailThenSucceedAction>(s.rules[5].action.value);
  EXPECT_EQ(flaky.failures, 2);
  EXPECT_EQ(flaky.error.grpc_code, absl::StatusCode::kUnavailable);
  ASSERT_NE(flaky.then, nullptr);
  EXPECT_EQ(std::get<RespondAction>(flaky.then->value).content, "ok");
  const auto& steps = std::get<SequenceAction>(s.rules[6].action.value);
  ASSERT_THAT(steps.steps, SizeIs(3));
  EXPECT_EQ(std::get<ErrorAction>(steps.steps[1].value).http_status, 500);
  EXPECT_STREQ(steps.steps[2].kind_name(), "sequence");
  const auto& from = std::get<FromSessionAction>(s.rules[7].action.value);
  EXPECT_EQ(from.session, "golden@2");
  EXPECT_EQ(from.seq, 4);
  EXPECT_FALSE(s.rules[7].when.is_tool_rule());

  const When& tw = s.rules[8].when;
  EXPECT_TRUE(tw.is_tool_rule());
  ASSERT_TRUE(tw.tool);
  EXPECT_EQ(tw.tool->text, "read_.*");
  EXPECT_EQ(tw.tool_arguments, nlohmann::json::parse(R"({"path":"a.txt","opts":{"deep":[1,2]}})"));
  EXPECT_EQ(tw.agent, "executor");
  const auto& tool_steps = std::get<SequenceAction>(s.rules[8].action.value);
  ASSERT_THAT(tool_steps.steps, SizeIs(3));
  const auto& jsonrpc = std::get<ErrorAction>(tool_steps.steps[0].value);
  EXPECT_EQ(jsonrpc.jsonrpc_code, -32602);
  EXPECT_FALSE(jsonrpc.grpc_code);
  EXPECT_FALSE(jsonrpc.http_status);
  const auto& is_error = std::get<ErrorAction>(tool_steps.steps[1].value);
  EXPECT_FALSE(is_error.jsonrpc_code || is_error.grpc_code || is_error.http_status);
  EXPECT_EQ(is_error.message, "disk on fire");
  const auto& result = std::get<RespondAction>(tool_steps.steps[2].value);
  EXPECT_EQ(result.content, "hello");
  EXPECT_EQ(result.structured, nlohmann::json::parse(R"({"lines":1,"text":"hello"})"));
  EXPECT_FALSE(respond.structured);
  EXPECT_FALSE(error.jsonrpc_code);

  ASSERT_TRUE(s.default_action);
  EXPECT_EQ(std::get<RespondAction>(s.default_action->value).content, "default answer");

  ASSERT_THAT(s.playbook, SizeIs(1));
  const PlaybookTurn& turn = s.playbook[0];
  EXPECT_EQ(turn.when->text, "make a plan");
  ASSERT_THAT(turn.actions, SizeIs(2));
  EXPECT_EQ(turn.actions[0].kind, PlaybookStep::Kind::kCall);
  EXPECT_EQ(turn.actions[0].tool, "plan_propose");
  EXPECT_EQ(turn.actions[0].args, nlohmann::json::parse(R"({"goal":"ship"})"));
  EXPECT_EQ(turn.actions[1].kind, PlaybookStep::Kind::kSay);
  EXPECT_EQ(turn.actions[1].text, "Plan {{plan_id}} proposed");
  ASSERT_THAT(turn.captures, SizeIs(1));
  EXPECT_EQ(turn.captures[0].name, "plan_id");
  EXPECT_EQ(turn.captures[0].from_tool_result, "plan_propose");
  std::string id;
  EXPECT_TRUE(RE2::PartialMatch("created PLAN-beef", *turn.captures[0].regex.re, &id));
  EXPECT_EQ(id, "PLAN-beef");

  ASSERT_EQ(s.mock_tools.size(), 3u);
  EXPECT_EQ(s.mock_tools.at("search").kind, MockTool::Kind::kText);
  EXPECT_EQ(s.mock_tools.at("search").text, "no results");
  EXPECT_EQ(s.mock_tools.at("weather").kind, MockTool::Kind::kTemplate);
  EXPECT_EQ(s.mock_tools.at("weather").text, "sunny in {{city}}");
  EXPECT_EQ(s.mock_tools.at("calc").kind, MockTool::Kind::kResult);
  EXPECT_EQ(s.mock_tools.at("calc").result, nlohmann::json::parse(R"({"value":42,"exact":true})"));
  EXPECT_FALSE(s.mock_ui.confirm);
  EXPECT_EQ(s.mock_ui.select, 2);
  EXPECT_EQ(s.mock_ui.input, "yes please");
  EXPECT_EQ(s.mock_ui.editor, "text");
}

TEST(ScenarioTest, JsonLoadsLikeYaml) {
  absl::StatusOr<Scenario> s = LoadScenario(
      R"({"schema": "understudy.scenario/v1",
          "rules": [{"name": "r", "when": {"agent": "a", "iteration": 1},
                     "respond": {"content": "hi", "tool_calls": [{"name": "t", "arguments": {"n": 1.5, "q": "1"}}]}}]})",
      "s.json");
  ASSERT_THAT(s, IsOk());
  const auto& respond = std::get<RespondAction>(s->rules[0].action.value);
  EXPECT_EQ(respond.tool_calls[0].arguments, nlohmann::json::parse(R"({"n":1.5,"q":"1"})"));
}

TEST(ScenarioTest, MinimalDocumentHasDefaults) {
  absl::StatusOr<Scenario> s = LoadScenario("schema: understudy.scenario/v1\n", "min.yaml");
  ASSERT_THAT(s, IsOk());
  EXPECT_TRUE(s->rules.empty());
  EXPECT_FALSE(s->default_action);
  EXPECT_TRUE(s->mock_ui.confirm);
  EXPECT_EQ(s->mock_ui.select, 0);
  EXPECT_FALSE(s->matching.strict);
  ASSERT_NE(s->matching.normalizer, nullptr);
  EXPECT_TRUE(s->matching.normalizer->empty());
}

TEST(ScenarioTest, MisspelledFieldSuggestsTheClosestName) {
  ValidationReport report = ValidateScenario(
      "schema: understudy.scenario/v1\n"
      "rules:\n"
      "  - name: a\n"
      "    when: {agnet: reviewer}\n"
      "    respond: {content: x}\n",
      "f.yaml");
  ASSERT_THAT(report.problems, SizeIs(1));
  EXPECT_EQ(FormatProblem(report, report.problems[0]),
            "f.yaml:4:12: error: rules[0].when.agnet: unknown field (did you mean \"agent\"?)");
}

TEST(ScenarioTest, FarOffFieldListsTheAllowedFields) {
  ValidationReport report = ValidateScenario(
      "schema: understudy.scenario/v1\nmock_ui: {zebra_crossing: 1}\n", "f.yaml");
  ASSERT_THAT(report.problems, SizeIs(1));
  EXPECT_EQ(report.problems[0].suggestion, "expected one of: confirm, select, input, editor");
}

TEST(ScenarioTest, PacksResolveByName) {
  ::unsetenv("UNDERSTUDY_SCENARIOS");
  absl::StatusOr<std::string> path = ResolveScenario("rate-limit");
  ASSERT_THAT(path, IsOk());
  absl::StatusOr<std::string> text = ReadScenarioFile(*path);
  ASSERT_THAT(text, IsOk());
  EXPECT_THAT(LoadScenario(*text, *path), IsOk());
}

TEST(ScenarioTest, ReportsEveryProblemAtOnce) {
  ValidationReport report = ValidateScenario(
      "schema: understudy.scenario/v1\n"
      "rules:\n"
      "  - name: a\n"
      "    times: 0\n"
      "    respond: {content: x}\n"
      "  - name: a\n"
      "    when: {user_message: '(unclosed'}\n"
      "    error: {grpc_code: RESOURCE_EXHUSTED}\n"
      "  - name: c\n"
      "    delay: {ms: -5}\n"
      "    hang: {}\n"
      "default: {error: {http_status: 700}}\n",
      "many.yaml");
  EXPECT_EQ(report.errors(), 5);
  EXPECT_EQ(report.warnings(), 1);
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(FormatReport(report),
            "many.yaml:4:12: error: rules[0].times: must be at least 1, got 0 (use 1 or more, e.g. "
            "`times: 1`)\n"
            "many.yaml:6:11: warning: rules[1].name: duplicate rule name \"a\" (also rules[0])\n"
            "many.yaml:7:26: error: rules[1].when.user_message: invalid regex: missing ): "
            "(unclosed (RE2 syntax; a backslash before a character meant literally: \\( \\. "
            "\\*)\n"
            "many.yaml:8:24: error: rules[1].error.grpc_code: unknown gRPC code "
            "\"RESOURCE_EXHUSTED\" (did you mean \"RESOURCE_EXHAUSTED\"?)\n"
            "many.yaml:9:5: error: rules[2]: 2 actions (delay, hang); expected exactly one\n"
            "many.yaml:12:32: error: default.error.http_status: must be an HTTP error status "
            "between 400 and 599, got 700");
}

TEST(ScenarioTest, LoadFailsWithTheFormattedReport) {
  absl::StatusOr<Scenario> s =
      LoadScenario("schema: understudy.scenario/v1\nrules: [{name: x}]\n", "r.yaml");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument,
                          HasSubstr("r.yaml:2:9: error: rules[0]: no action; expected one of "
                                    "respond, error, delay, hang")));
}

TEST(ScenarioTest, WarningsAloneDoNotFailLoading) {
  absl::StatusOr<Scenario> s = LoadScenario(
      "schema: understudy.scenario/v1\n"
      "rules:\n"
      "  - {name: same, hang: {}}\n"
      "  - {name: same, hang: {}}\n",
      "w.yaml");
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(s->rules, SizeIs(2));
}

TEST(ScenarioTest, PathologicalRegexMatchesInLinearTime) {
  absl::StatusOr<Scenario> s = LoadScenario(
      "schema: understudy.scenario/v1\n"
      "rules:\n"
      "  - name: evil\n"
      "    when: {user_message: '(a+)+$'}\n"
      "    hang: {}\n",
      "evil.yaml");
  ASSERT_THAT(s, IsOk());
  // A backtracking engine takes exponential time on this input; RE2 does not.
  std::string input(100000, 'a');
  input += '!';
  EXPECT_FALSE(RE2::PartialMatch(input, *s->rules[0].when.user_message->re));
  input.back() = 'a';
  EXPECT_TRUE(RE2::PartialMatch(input, *s->rules[0].when.user_message->re));
}

TEST(ScenarioTest, DeepNestingIsRefusedNotACrash) {
  for (int depth : {100, 5000, 200000}) {
    std::string text = "schema: understudy.scenario/v1\nmock_tools: {t: {result: ";
    text += std::string(depth, '[') + std::string(depth, ']') + "}}\n";
    ValidationReport report = ValidateScenario(text, "deep.yaml");
    ASSERT_THAT(report.problems, SizeIs(1)) << depth;
    EXPECT_EQ(report.problems[0].severity, Problem::Severity::kError);
    EXPECT_THAT(report.problems[0].message, HasSubstr("deep")) << depth;
  }
}

TEST(ScenarioTest, DeepBlockNestingIsRefused) {
  std::string text = "schema: understudy.scenario/v1\nmock_tools:\n  t:\n    result:\n";
  for (int i = 0; i < 100; ++i) text += std::string(6 + 2 * i, ' ') + "- \n";
  ValidationReport report = ValidateScenario(text, "deep.yaml");
  ASSERT_THAT(report.problems, SizeIs(1));
  EXPECT_EQ(report.problems[0].message, "nesting deeper than 64 levels");
}

TEST(ScenarioTest, AliasBombIsRefused) {
  std::string text = "schema: understudy.scenario/v1\nmock_tools:\n  t:\n    result:\n";
  text += "      a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    text += absl::StrCat("      a", i, ": &a", i, " [");
    for (int j = 0; j < 10; ++j) text += absl::StrCat(j ? ", " : "", "*a", i - 1);
    text += "]\n";
  }
  ValidationReport report = ValidateScenario(text, "bomb.yaml");
  ASSERT_THAT(report.problems, SizeIs(1));
  EXPECT_THAT(report.problems[0].message, HasSubstr("aliases are expanded"));
}

TEST(ScenarioTest, OversizedFileIsRefusedBeforeParsing) {
  std::string text = "schema: understudy.scenario/v1\ndescription: '";
  text += std::string(kMaxScenarioBytes, 'x') + "'\n";
  ValidationReport report = ValidateScenario(text, "big.yaml");
  ASSERT_THAT(report.problems, SizeIs(1));
  EXPECT_THAT(FormatReport(report),
              "big.yaml: error: scenario is 4194351 bytes, more than the 4194304 allowed; refused");
}

TEST(ScenarioTest, ActionsNestedTooDeeplyAreRefused) {
  std::string action = "{hang: {}}";
  for (int i = 0; i < kMaxActionDepth + 1; ++i) action = "{sequence: [" + action + "]}";
  ValidationReport report =
      ValidateScenario("schema: understudy.scenario/v1\ndefault: " + action + "\n", "n.yaml");
  ASSERT_THAT(report.problems, SizeIs(1));
  EXPECT_THAT(report.problems[0].message, "actions nested deeper than 8 levels");
}

TEST(ScenarioTest, ReportConvertsToJson) {
  ValidationReport report =
      ValidateScenario("schema: understudy.scenario/v1\nnmae: x\n", "j.yaml");
  nlohmann::json j = ReportToJson(report);
  EXPECT_EQ(j["file"], "j.yaml");
  EXPECT_EQ(j["errors"], 1);
  EXPECT_EQ(j["warnings"], 0);
  EXPECT_EQ(j["problems"][0]["path"], "nmae");
  EXPECT_EQ(j["problems"][0]["suggestion"], "did you mean \"name\"?");
  EXPECT_EQ(j["problems"][0]["line"], 2);
  EXPECT_EQ(j["problems"][0]["column"], 1);
}

TEST(ScenarioTest, ToolRuleErrorNeedsNoCodeAndFailThenSucceedFollows) {
  absl::StatusOr<Scenario> s = LoadScenario(R"yaml(
schema: understudy.scenario/v1
rules:
  - name: tool-error
    when: {tool: deploy}
    error: {message: refused}
  - name: flaky-tool
    when: {tool_arguments: {env: prod}}
    fail_then_succeed:
      failures: 1
      error: {jsonrpc_code: 7}
      then: {fail_then_succeed: {failures: 1, error: {}, then: {respond: {content: ok}}}}
)yaml",
                                            "tools.yaml");
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(std::get<ErrorAction>(s->rules[0].action.value).message, "refused");
  const auto& flaky = std::get<FailThenSucceedAction>(s->rules[1].action.value);
  EXPECT_EQ(flaky.error.jsonrpc_code, 7);
  EXPECT_FALSE(s->rules[1].when.tool);
  EXPECT_EQ(s->rules[1].when.tool_arguments, nlohmann::json::parse(R"({"env":"prod"})"));
}

TEST(ScenarioTest, JsonRpcCodeTakesAnyThirtyTwoBitInteger) {
  for (const char* code : {"-32768", "-32000", "0", "1", "404", "2147483647", "-2147483648"}) {
    absl::StatusOr<Scenario> s = LoadScenario(
        absl::StrCat("schema: understudy.scenario/v1\nrules:\n  - name: t\n    when: {tool: x}\n"
                     "    error: {jsonrpc_code: ",
                     code, "}\n"),
        "c.yaml");
    ASSERT_THAT(s, IsOk()) << code;
    EXPECT_EQ(std::get<ErrorAction>(s->rules[0].action.value).jsonrpc_code, std::stoi(code));
  }
  ValidationReport report = ValidateScenario(
      "schema: understudy.scenario/v1\nrules:\n  - name: t\n    when: {tool: x}\n"
      "    error: {jsonrpc_code: 2147483648}\n",
      "big.yaml");
  EXPECT_EQ(FormatReport(report),
            "big.yaml:5:27: error: rules[0].error.jsonrpc_code: must be a 32-bit integer, got "
            "2147483648 (JSON-RPC reserves -32768..-32000; servers use other codes freely)");
}

TEST(ScenarioTest, ModelRulesStillNeedAGrpcOrHttpCode) {
  ValidationReport report = ValidateScenario(
      "schema: understudy.scenario/v1\n"
      "rules:\n"
      "  - {name: model, error: {message: x}}\n"
      "  - {name: flaky, fail_then_succeed: {failures: 1, error: {}, then: {hang: {}}}}\n",
      "m.yaml");
  EXPECT_EQ(FormatReport(report),
            "m.yaml:3:26: error: rules[0].error: expected grpc_code, http_status or both\n"
            "m.yaml:4:59: error: rules[1].fail_then_succeed.error: expected grpc_code, "
            "http_status or both");
}

TEST(ScenarioTest, ToolRuleProblemsAreReportedWithPathsAndFixes) {
  ValidationReport report = ValidateScenario(R"yaml(schema: understudy.scenario/v1
rules:
  - name: tool-cut
    when: {tool: read_file}
    disconnect: {after_chunks: 1}
  - name: tool-borrow
    when: {tool_arguments: {path: a.txt}}
    from_session: {session: golden}
  - name: tool-calls
    when: {tool: 'read_.*'}
    respond: {content: x, tool_calls: [{name: t}]}
  - name: nested
    when: {tool: x}
    sequence:
      - fail_then_succeed: {failures: 1, error: {}, then: {disconnect: {}}}
  - name: model-structured
    respond: {structured: {a: 1}}
  - name: model-jsonrpc
    error: {jsonrpc_code: -32000, message: x}
default:
  error: {jsonrpc_code: 1}
)yaml",
                                             "t.yaml");
  EXPECT_EQ(report.errors(), 7);
  EXPECT_EQ(report.warnings(), 0);
  EXPECT_EQ(
      FormatReport(report),
      "t.yaml:5:5: error: rules[0].disconnect: disconnect cuts a model's answer stream, and this "
      "is a tool rule (when.tool/tool_arguments), which answers MCP tool calls (use respond, "
      "error, delay or hang; or drop when.tool/tool_arguments to answer model requests)\n"
      "t.yaml:8:5: error: rules[1].from_session: from_session answers with a recorded model "
      "exchange, and this is a tool rule (when.tool/tool_arguments), which answers MCP tool "
      "calls (use respond, error, delay or hang; or drop when.tool/tool_arguments to answer "
      "model requests)\n"
      "t.yaml:11:27: error: rules[2].respond.tool_calls: tool_calls are a model's answer, and "
      "this is a tool rule (when.tool/tool_arguments), which answers MCP tool calls with a "
      "result (give the result as content or structured; or drop when.tool/tool_arguments to "
      "answer model requests)\n"
      "t.yaml:15:60: error: rules[3].sequence[0].fail_then_succeed.then.disconnect: disconnect "
      "cuts a model's answer stream, and this is a tool rule (when.tool/tool_arguments), which "
      "answers MCP tool calls (use respond, error, delay or hang; or drop "
      "when.tool/tool_arguments to answer model requests)\n"
      "t.yaml:17:15: error: rules[4].respond.structured: structured is a tool result's "
      "structuredContent, and this rule answers model requests (it has no when.tool or "
      "when.tool_arguments) (add tool: NAME under when to answer that tool's MCP calls)\n"
      "t.yaml:19:13: error: rules[5].error.jsonrpc_code: jsonrpc_code is the code of an MCP "
      "tool call's JSON-RPC error, and this rule answers model requests (it has no when.tool or "
      "when.tool_arguments) (add tool: NAME under when to answer that tool's MCP calls)\n"
      "t.yaml:21:11: error: default.error.jsonrpc_code: jsonrpc_code is the code of an MCP tool "
      "call's JSON-RPC error, and default answers model requests only (move it to a rule with "
      "when.tool: NAME)");
}

TEST(ScenarioTest, MisspelledToolFieldsSuggestTheirNames) {
  ValidationReport report = ValidateScenario(R"yaml(schema: understudy.scenario/v1
rules:
  - name: typos
    when: {tol: x, tool_argument: {}}
    respond: {structred: {}}
  - name: more
    when: {tool: x}
    error: {jsonrpc_cod: 1}
)yaml",
                                             "typo.yaml");
  ASSERT_THAT(report.problems, SizeIs(4));
  EXPECT_EQ(report.problems[0].path, "rules[0].when.tol");
  EXPECT_EQ(report.problems[0].suggestion, "did you mean \"tool\"?");
  EXPECT_EQ(report.problems[1].path, "rules[0].when.tool_argument");
  EXPECT_EQ(report.problems[1].suggestion, "did you mean \"tool_arguments\"?");
  EXPECT_EQ(report.problems[2].path, "rules[0].respond.structred");
  EXPECT_EQ(report.problems[2].suggestion, "did you mean \"structured\"?");
  EXPECT_EQ(FormatProblem(report, report.problems[3]),
            "typo.yaml:8:13: error: rules[1].error.jsonrpc_cod: unknown field (did you mean "
            "\"jsonrpc_code\"?)");
}

TEST(ScenarioTest, BadToolValuesAreReported) {
  ValidationReport report = ValidateScenario(R"yaml(schema: understudy.scenario/v1
rules:
  - name: a
    when: {tool: '(', tool_arguments: [1]}
    error: {jsonrpc_code: 1.5}
  - name: b
    when: {tool: ''}
    respond: {structured: [1]}
  - name: c
    when: {tool: x, tool_arguments: {a: 1, a: 2, b: {c: 1, c: 2}}}
    respond: {structured: {{k: 1}: v}}
)yaml",
                                             "bad.yaml");
  EXPECT_EQ(report.warnings(), 0);
  EXPECT_EQ(FormatReport(report),
            "bad.yaml:4:18: error: rules[0].when.tool: invalid regex: missing ): ( (RE2 syntax; a "
            "backslash before a character meant literally: \\( \\. \\*)\n"
            "bad.yaml:4:39: error: rules[0].when.tool_arguments: expected a mapping of argument: "
            "value (which the call's arguments must contain), got a list\n"
            "bad.yaml:5:27: error: rules[0].error.jsonrpc_code: expected an integer, got \"1.5\" "
            "(write an integer, e.g. `jsonrpc_code: 1`)\n"
            "bad.yaml:7:18: error: rules[1].when.tool: empty; expected a tool name or a pattern (a "
            "pattern matches whole names: read_file, read_.*, read_file|write_file)\n"
            "bad.yaml:8:27: error: rules[1].respond.structured: expected a mapping "
            "(structuredContent is a JSON object), got a list\n"
            "bad.yaml:10:44: error: rules[2].when.tool_arguments[\"a\"]: duplicate key\n"
            "bad.yaml:10:60: error: rules[2].when.tool_arguments[\"b\"][\"c\"]: duplicate key\n"
            "bad.yaml:11:28: error: rules[2].respond.structured: a mapping key is itself a "
            "mapping or a list; JSON keys are strings (quote the key)");
}

// A number outside int64's range (or inf/nan) where an integer is
// expected is refused with the generic suggestion; converting it to
// suggest "the integer it spells" would be undefined behaviour.
TEST(ScenarioTest, HugeFloatsWhereIntegersGoAreRefusedPlainly) {
  for (const char* value : {"1e300", "-1e300", ".inf", ".nan", "9.3e18"}) {
    ValidationReport report = ValidateScenario(
        absl::StrCat("schema: understudy.scenario/v1\nrules:\n  - name: a\n    when: {tool: x}\n"
                     "    error: {jsonrpc_code: ",
                     value, "}\n"),
        "big.yaml");
    EXPECT_THAT(FormatReport(report), HasSubstr("rules[0].error.jsonrpc_code")) << value;
    EXPECT_THAT(FormatReport(report), Not(HasSubstr("write it as an integer"))) << value;
  }
}

TEST(ScenarioTest, ToolRulesWarnAboutModelOnlyConditionsAndFields) {
  constexpr char kDoc[] = R"yaml(schema: understudy.scenario/v1
rules:
  - name: never
    when: {tool: x, user_message: hi, model: gpt-4o, tool_available: x}
    respond: {content: x, usage: {input_tokens: 1}, finish_reason: stop}
  - name: codes
    when: {tool: x}
    error: {grpc_code: UNAVAILABLE, http_status: 503, retry_after_seconds: 1}
)yaml";
  EXPECT_THAT(LoadScenario(kDoc, "w.yaml"), IsOk());  // warnings only
  ValidationReport report = ValidateScenario(kDoc, "w.yaml");
  EXPECT_EQ(report.errors(), 0);
  EXPECT_EQ(report.warnings(), 8);
  ASSERT_THAT(report.problems, SizeIs(8));
  EXPECT_EQ(FormatProblem(report, report.problems[0]),
            "w.yaml:4:21: warning: rules[0].when.user_message: user_message reads a model "
            "request's messages, so this tool rule (when.tool/tool_arguments) never holds "
            "(remove it; tool rules may also use agent, previous_agent, phase, iteration, "
            "previous_tool_calls)");
  EXPECT_EQ(report.problems[1].path, "rules[0].when.model");
  EXPECT_EQ(report.problems[1].message,
            "model reads a model request's model, so this tool rule (when.tool/tool_arguments) "
            "never holds");
  EXPECT_EQ(report.problems[2].path, "rules[0].when.tool_available");
  EXPECT_EQ(report.problems[3].path, "rules[0].respond.usage");
  EXPECT_EQ(report.problems[4].path, "rules[0].respond.finish_reason");
  EXPECT_EQ(report.problems[4].message,
            "finish_reason has no effect on a tool call's answer, and this is a tool rule "
            "(when.tool/tool_arguments)");
  EXPECT_EQ(FormatProblem(report, report.problems[5]),
            "w.yaml:8:13: warning: rules[1].error.grpc_code: grpc_code has no effect on a tool "
            "call's answer, and this is a tool rule (when.tool/tool_arguments) (remove it; give "
            "jsonrpc_code for a JSON-RPC error, or no code for a tool error result (isError))");
  EXPECT_EQ(report.problems[6].path, "rules[1].error.http_status");
  EXPECT_EQ(report.problems[7].path, "rules[1].error.retry_after_seconds");
}

TEST(ScenarioTest, A2aRulesLoadWithTheirActions) {
  constexpr char kDoc[] = R"yaml(schema: understudy.scenario/v1
rules:
  - name: writer-is-down
    when: {a2a: writer, message_contains: draft, user_message: '(?i)please'}
    times: 1
    error: {message: writer unavailable, jsonrpc_code: -32603}
  - name: researcher-answers
    when: {a2a: 'researcher|analyst', agent: planner, iteration: 2, phase: research}
    respond: {content: Three sources agree.}
  - name: flaky-editor
    when: {a2a: editor}
    fail_then_succeed:
      failures: 1
      error: {message: busy}
      then: {sequence: [{delay: {ms: 5}}, {hang: {}}]}
)yaml";
  ValidationReport report = ValidateScenario(kDoc, "a2a.yaml");
  EXPECT_TRUE(report.problems.empty()) << FormatReport(report);
  absl::StatusOr<Scenario> s = LoadScenario(kDoc, "a2a.yaml");
  ASSERT_THAT(s, IsOk());
  ASSERT_THAT(s->rules, SizeIs(3));
  const When& down = s->rules[0].when;
  EXPECT_TRUE(down.is_a2a_rule());
  EXPECT_FALSE(down.is_tool_rule());
  ASSERT_TRUE(down.a2a);
  EXPECT_EQ(down.a2a->text, "writer");
  ASSERT_NE(down.a2a->re, nullptr);
  EXPECT_EQ(down.message_contains->text, "draft");
  EXPECT_EQ(down.user_message->text, "(?i)please");
  const auto& error = std::get<ErrorAction>(s->rules[0].action.value);
  EXPECT_EQ(error.jsonrpc_code, -32603);
  EXPECT_EQ(error.message, "writer unavailable");
  EXPECT_FALSE(error.grpc_code);
  EXPECT_FALSE(error.http_status);

  const When& answers = s->rules[1].when;
  ASSERT_TRUE(answers.a2a);
  EXPECT_TRUE(RE2::FullMatch("analyst", *answers.a2a->re));
  EXPECT_EQ(answers.agent, "planner");
  EXPECT_EQ(std::get<RespondAction>(s->rules[1].action.value).content, "Three sources agree.");

  const auto& flaky = std::get<FailThenSucceedAction>(s->rules[2].action.value);
  EXPECT_FALSE(flaky.error.jsonrpc_code);  // a task in state failed
  EXPECT_EQ(flaky.error.message, "busy");
  EXPECT_FALSE(s->rules[2].when.is_tool_rule());
  EXPECT_FALSE(LoadScenario(kFull, "full.yaml")->rules[8].when.is_a2a_rule());
}

TEST(ScenarioTest, A2aRuleProblemsAreReportedWithPathsAndFixes) {
  ValidationReport report = ValidateScenario(R"yaml(schema: understudy.scenario/v1
rules:
  - name: empty
    when: {a2a: ''}
    respond: {content: x}
  - name: listed
    when: {a2a: [writer]}
    respond: {content: x}
  - name: both
    when: {a2a: writer, tool: read_file}
    respond: {content: x}
  - name: calls
    when: {a2a: writer}
    respond: {content: x, tool_calls: [{name: t}], structured: {a: 1}}
  - name: model-fields
    when: {a2a: writer}
    respond: {finish_reason: stop, usage: {input_tokens: 1}}
  - name: borrow
    when: {a2a: writer}
    from_session: {session: golden}
  - name: cut
    when: {a2a: writer}
    sequence: [{disconnect: {}}]
)yaml",
                                             "a.yaml");
  EXPECT_EQ(report.warnings(), 0) << FormatReport(report);
  EXPECT_EQ(
      FormatReport(report),
      "a.yaml:4:17: error: rules[0].when.a2a: empty; expected an agent name or a pattern (a "
      "pattern matches whole names: writer, writer|editor)\n"
      "a.yaml:7:17: error: rules[1].when.a2a: expected a string, got a list (write one text "
      "value, e.g. `a2a: \"text\"`)\n"
      "a.yaml:10:12: error: rules[2].when.a2a: a rule is an A2A rule (when.a2a), which answers "
      "calls to other agents, or a tool rule (when.tool/tool_arguments), which answers MCP tool "
      "calls; this one has both (pick one: keep when.a2a or when.tool/tool_arguments, and "
      "split the other into a rule of its own)\n"
      "a.yaml:14:27: error: rules[3].respond.tool_calls: tool_calls are a model's answer, and "
      "this is an A2A rule (when.a2a), which answers calls to other agents with a message "
      "(give the answer as content; or drop when.a2a to answer model requests)\n"
      "a.yaml:14:52: error: rules[3].respond.structured: structured is a tool result's "
      "structuredContent, and this is an A2A rule (when.a2a), which answers calls to other "
      "agents with a message (give the answer as content; structured is for tool rules "
      "(when.tool))\n"
      "a.yaml:17:15: error: rules[4].respond.finish_reason: finish_reason is a model answer's "
      "finish reason, and this is an A2A rule (when.a2a), which answers calls to other agents "
      "with a message (give the answer as content; or drop when.a2a to answer model requests)\n"
      "a.yaml:17:36: error: rules[4].respond.usage: usage is a model answer's token usage, and "
      "this is an A2A rule (when.a2a), which answers calls to other agents with a message (give "
      "the answer as content; or drop when.a2a to answer model requests)\n"
      "a.yaml:20:5: error: rules[5].from_session: from_session answers with a recorded model "
      "exchange, and this is an A2A rule (when.a2a), which answers calls to other agents (use "
      "respond, error, delay or hang; or drop when.a2a to answer model requests)\n"
      "a.yaml:23:17: error: rules[6].sequence[0].disconnect: disconnect cuts a model's answer "
      "stream, and this is an A2A rule (when.a2a), which answers calls to other agents (use "
      "respond, error, delay or hang; or drop when.a2a to answer model requests)");
}

TEST(ScenarioTest, A2aRulesWarnAboutConditionsThatNeverHoldAndModelErrorFields) {
  constexpr char kDoc[] = R"yaml(schema: understudy.scenario/v1
rules:
  - name: never
    when: {a2a: w, system_prompt: x, user_message: hi, message_contains: yo, model: m, has_tool_result: true, tool_available: t}
    respond: {content: x}
  - name: codes
    when: {a2a: w}
    error: {message: down, grpc_code: UNAVAILABLE, http_status: 503, retry_after_seconds: 1}
)yaml";
  EXPECT_THAT(LoadScenario(kDoc, "w.yaml"), IsOk());  // warnings only
  ValidationReport report = ValidateScenario(kDoc, "w.yaml");
  EXPECT_EQ(report.errors(), 0);
  ASSERT_THAT(report.problems, SizeIs(7)) << FormatReport(report);
  EXPECT_EQ(FormatProblem(report, report.problems[0]),
            "w.yaml:4:20: warning: rules[0].when.system_prompt: system_prompt reads a model "
            "request's messages, so this A2A rule (when.a2a) never holds (remove it; A2A rules "
            "may also use user_message or message_contains (searched in the call's message), "
            "agent, previous_agent, phase, iteration, previous_tool_calls)");
  // user_message and message_contains read the A2A call's message: no warning.
  EXPECT_EQ(report.problems[1].path, "rules[0].when.model");
  EXPECT_EQ(report.problems[2].path, "rules[0].when.has_tool_result");
  EXPECT_EQ(report.problems[3].path, "rules[0].when.tool_available");
  EXPECT_EQ(FormatProblem(report, report.problems[4]),
            "w.yaml:8:28: warning: rules[1].error.grpc_code: grpc_code has no effect on an A2A "
            "call's answer, and this is an A2A rule (when.a2a) (remove it; give jsonrpc_code for "
            "a JSON-RPC error, or no code for a task in state failed)");
  EXPECT_EQ(report.problems[5].path, "rules[1].error.http_status");
  EXPECT_EQ(report.problems[6].path, "rules[1].error.retry_after_seconds");
}

class ResolveScenarioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / "packs";
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "mine.yaml") << "schema: understudy.scenario/v1\n";
    ::setenv("UNDERSTUDY_SCENARIOS", dir_.c_str(), 1);
  }
  void TearDown() override { ::unsetenv("UNDERSTUDY_SCENARIOS"); }
  std::filesystem::path dir_;
};

TEST_F(ResolveScenarioTest, FindsAPackByNameInTheEnvironmentDirectory) {
  EXPECT_THAT(ResolveScenario("mine"), IsOk());
  EXPECT_EQ(*ResolveScenario("mine"), (dir_ / "mine.yaml").string());
}

TEST_F(ResolveScenarioTest, TakesAPathAsIs) {
  const std::string path = (dir_ / "mine.yaml").string();
  EXPECT_EQ(*ResolveScenario(path), path);
}

TEST_F(ResolveScenarioTest, UnknownNameListsThePacks) {
  EXPECT_THAT(ResolveScenario("nope"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("mine")));
  EXPECT_THAT(ResolveScenario("nope.yaml"), StatusIs(absl::StatusCode::kNotFound));
}

TEST(ReadScenarioFileTest, MissingFileIsNotFound) {
  EXPECT_THAT(ReadScenarioFile("/nonexistent/x.yaml"), StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace scenario
}  // namespace understudy
