#include "sim/config.h"

#include <csignal>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

// Every problem as "LINE:COL: severity: path: message (suggestion)",
// without the source.
std::vector<std::string> Problems(const std::string& text) {
  validation::Report report = ValidateSimConfig(text, "t.yaml");
  std::vector<std::string> out;
  for (const validation::Problem& p : report.problems) {
    std::string line = validation::FormatProblem(report, p);
    out.push_back(line.substr(line.find(':') + 1));
  }
  return out;
}

SimConfig Parsed(const std::string& text) {
  absl::StatusOr<SimConfig> config = ParseSimConfig(text, "t.yaml");
  EXPECT_THAT(config, IsOk());
  return config.ok() ? *std::move(config) : DefaultSimConfig();
}

constexpr char kFull[] = R"(schema: understudy.sim/v1
name: coder
startup:
  lines: ["Welcome", "  cwd: {cwd}"]
  delay: 20
prompt: "$ "
timing: {scale: 0.5, jitter: 0.1}
settings: .claude/settings.json
env: {EXTRA: "1"}
completion:
  command: ["meow", "done"]
  output_flag: --out
  on_failure: retry
  retries: 3
  retry_delay: 1s
  timeout: 2m
behaviours:
  - name: deploy
    when: {contains: deploy, matches: "(?i)prod"}
    action: complete
    delay: 200ms
    output: ["Deployed."]
    outputs: {status: ok, count: 2}
    events:
      - {at: 10ms, tool: Bash, input: {command: ls, n: 1}, result: a.txt, duration: 5}
    completion: {command: "echo hi", retries: 1}
  - name: pick-db
    when: {contains: database}
    action: ask
    question: Which database?
    options:
      - {answer: postgres, then: deploy}
      - {answer: sqlite, then: {action: fail, message: "Error: sqlite refused"}}
      - mysql
  - {when: {contains: flaky}, action: fail_then_succeed, failures: 2, message: "Error: flaky"}
  - {when: {contains: stuck}, action: hang}
  - {when: {contains: boom}, action: crash, exit_code: 3}
  - {when: {contains: kill}, action: crash, signal: KILL}
  - {when: {contains: think}, action: model, model: gpt-4o, agent: planner, system_prompt: Be brief.}
  - {when: {contains: yes}, action: ask, question: "Sure?", then: deploy}
default: {action: fail, message: "Error: no idea"}
)";

TEST(SimConfigTest, ParsesEveryKey) {
  SimConfig c = Parsed(kFull);
  EXPECT_EQ(c.source, "t.yaml");
  EXPECT_EQ(c.name, "coder");
  EXPECT_THAT(c.startup_lines, ElementsAre("Welcome", "  cwd: {cwd}"));
  EXPECT_EQ(c.startup_delay, absl::Milliseconds(20));
  EXPECT_EQ(c.prompt, "$ ");
  EXPECT_EQ(c.timing.scale, 0.5);
  EXPECT_EQ(c.timing.jitter, 0.1);
  EXPECT_EQ(c.settings, ".claude/settings.json");
  EXPECT_THAT(c.env, ElementsAre(Pair("EXTRA", "1")));
  EXPECT_THAT(c.completion.command, ElementsAre("meow", "done"));
  EXPECT_EQ(c.completion.output_flag, "--out");
  EXPECT_EQ(c.completion.on_failure, OnFailure::kRetry);
  EXPECT_EQ(c.completion.retries, 3);
  EXPECT_EQ(c.completion.retry_delay, absl::Seconds(1));
  EXPECT_EQ(c.completion.timeout, absl::Minutes(2));
  ASSERT_EQ(c.behaviours.size(), 8u);

  const Behaviour& deploy = *c.behaviours[0];
  EXPECT_EQ(deploy.name, "deploy");
  EXPECT_EQ(deploy.index, 0);
  EXPECT_EQ(deploy.path, "behaviours[0]");
  EXPECT_EQ(deploy.contains, "deploy");
  ASSERT_NE(deploy.matches, nullptr);
  EXPECT_EQ(deploy.action, ActionKind::kComplete);
  EXPECT_EQ(deploy.delay, absl::Milliseconds(200));
  EXPECT_THAT(deploy.output, ElementsAre("Deployed."));
  EXPECT_THAT(deploy.outputs, ElementsAre(Pair("count", "2"), Pair("status", "ok")));
  ASSERT_EQ(deploy.events.size(), 1u);
  EXPECT_EQ(deploy.events[0].at, absl::Milliseconds(10));
  EXPECT_EQ(deploy.events[0].duration, absl::Milliseconds(5));
  EXPECT_EQ(deploy.events[0].tool, "Bash");
  EXPECT_EQ(deploy.events[0].input_json, R"({"command":"ls","n":1})");
  EXPECT_EQ(deploy.events[0].result, "a.txt");
  // Merged field by field over the top-level completion.
  ASSERT_TRUE(deploy.completion.has_value());
  EXPECT_THAT(deploy.completion->command, ElementsAre("/bin/sh", "-c", "echo hi"));
  EXPECT_EQ(deploy.completion->retries, 1);
  EXPECT_EQ(deploy.completion->output_flag, "--out");
  EXPECT_EQ(deploy.completion->on_failure, OnFailure::kRetry);

  const Behaviour& ask = *c.behaviours[1];
  EXPECT_EQ(ask.action, ActionKind::kAsk);
  EXPECT_EQ(ask.question, "Which database?");
  ASSERT_EQ(ask.options.size(), 3u);
  EXPECT_EQ(ask.options[0].answer, "postgres");
  EXPECT_EQ(ask.options[0].then.get(), &deploy);
  EXPECT_EQ(ask.options[1].then->action, ActionKind::kFail);
  EXPECT_EQ(ask.options[1].then->message, "Error: sqlite refused");
  EXPECT_EQ(ask.options[1].then->path, "behaviours[1].options[1].then");
  // No then of its own nor the ask's: a plain complete.
  ASSERT_NE(ask.options[2].then, nullptr);
  EXPECT_EQ(ask.options[2].then->action, ActionKind::kComplete);
  EXPECT_EQ(ask.then, nullptr);

  EXPECT_EQ(c.behaviours[2]->action, ActionKind::kFailThenSucceed);
  EXPECT_EQ(c.behaviours[2]->failures, 2);
  EXPECT_EQ(c.behaviours[2]->message, "Error: flaky");
  EXPECT_EQ(c.behaviours[3]->action, ActionKind::kHang);
  EXPECT_EQ(c.behaviours[4]->exit_code, 3);
  EXPECT_EQ(c.behaviours[4]->signal, 0);
  EXPECT_EQ(c.behaviours[5]->signal, SIGKILL);
  const Behaviour& model = *c.behaviours[6];
  EXPECT_EQ(model.action, ActionKind::kModel);
  EXPECT_EQ(model.model, "gpt-4o");
  EXPECT_EQ(model.model_agent, "planner");
  EXPECT_EQ(model.system_prompt, "Be brief.");
  // Without options: one implicit option, answer "", going on with then.
  EXPECT_EQ(c.behaviours[7]->then.get(), &deploy);
  ASSERT_EQ(c.behaviours[7]->options.size(), 1u);
  EXPECT_EQ(c.behaviours[7]->options[0].answer, "");
  EXPECT_EQ(c.behaviours[7]->options[0].then.get(), &deploy);
  EXPECT_EQ(c.default_behaviour->action, ActionKind::kFail);
  EXPECT_EQ(c.default_behaviour->path, "default");
}

TEST(SimConfigTest, GoodConfigHasNoProblems) {
  EXPECT_THAT(Problems(kFull), IsEmpty());
}

TEST(SimConfigTest, JsonIsReadToo) {
  SimConfig c = Parsed(R"({"behaviours": [{"when": {"contains": "x"}, "action": "hang"}]})");
  ASSERT_EQ(c.behaviours.size(), 1u);
  EXPECT_EQ(c.behaviours[0]->action, ActionKind::kHang);
}

TEST(SimConfigTest, SelectTakesTheFirstMatchElseTheDefault) {
  SimConfig c = Parsed(R"(behaviours:
  - {name: a, when: {contains: deploy, matches: "(?i)prod"}}
  - {name: b, when: {contains: deploy}}
  - {name: c, when: {matches: "^fix"}}
)");
  EXPECT_EQ(c.Select("deploy to PROD").name, "a");
  EXPECT_EQ(c.Select("deploy to staging").name, "b");
  EXPECT_EQ(c.Select("fix it, deploy").name, "b");
  EXPECT_EQ(c.Select("fix it").name, "c");
  EXPECT_EQ(c.Select("please fix").path, "default");
  EXPECT_EQ(c.Select("").path, "default");
  EXPECT_EQ(c.default_behaviour->action, ActionKind::kComplete);
}

TEST(SimConfigTest, DefaultConfigCompletesEverything) {
  SimConfig c = DefaultSimConfig();
  EXPECT_TRUE(c.behaviours.empty());
  EXPECT_EQ(c.prompt, "> ");
  const Behaviour& b = c.Select("anything");
  EXPECT_EQ(b.action, ActionKind::kComplete);
  EXPECT_EQ(b.delay, absl::ZeroDuration());
  ASSERT_TRUE(b.completion.has_value());
  EXPECT_TRUE(b.completion->command.empty());
}

TEST(SimConfigTest, EmptyMappingIsTheDefault) {
  SimConfig c = Parsed("{}");
  EXPECT_EQ(c.Select("x").action, ActionKind::kComplete);
}

TEST(SimConfigTest, ActionNames) {
  EXPECT_EQ(ActionName(ActionKind::kComplete), "complete");
  EXPECT_EQ(ActionName(ActionKind::kFailThenSucceed), "fail_then_succeed");
  EXPECT_EQ(ActionName(ActionKind::kModel), "model");
}

TEST(SimConfigTest, DurationsAreMillisecondsOrUnits) {
  SimConfig c = Parsed(R"(behaviours:
  - {delay: 150}
  - {delay: 1.5}
  - {delay: 2s}
  - {delay: "1m30s"}
  - {delay: 0}
)");
  EXPECT_EQ(c.behaviours[0]->delay, absl::Milliseconds(150));
  EXPECT_EQ(c.behaviours[1]->delay, absl::Microseconds(1500));
  EXPECT_EQ(c.behaviours[2]->delay, absl::Seconds(2));
  EXPECT_EQ(c.behaviours[3]->delay, absl::Seconds(90));
  EXPECT_EQ(c.behaviours[4]->delay, absl::ZeroDuration());
}

TEST(SimConfigTest, BadDurationsAreRefused) {
  EXPECT_THAT(Problems("startup: {delay: -5}\n"),
              ElementsAre("1:18: error: startup.delay: must not be negative, got -5"));
  EXPECT_THAT(Problems("startup: {delay: -1s}\n"),
              ElementsAre("1:18: error: startup.delay: must not be negative, got -1s"));
  EXPECT_THAT(Problems("startup: {delay: soon}\n"),
              ElementsAre("1:18: error: startup.delay: expected a duration: milliseconds (150) "
                          "or a number with a unit (150ms, 2s, 1m), got \"soon\""));
  EXPECT_THAT(Problems("startup: {delay: inf}\n"),
              ElementsAre("1:18: error: startup.delay: must be finite, got inf"));
}

TEST(SimConfigTest, SignalsByNameOrNumber) {
  SimConfig c = Parsed(R"(behaviours:
  - {action: crash, signal: SIGSEGV}
  - {action: crash, signal: term}
  - {action: crash, signal: 6}
)");
  EXPECT_EQ(c.behaviours[0]->signal, SIGSEGV);
  EXPECT_EQ(c.behaviours[1]->signal, SIGTERM);
  EXPECT_EQ(c.behaviours[2]->signal, 6);
  EXPECT_THAT(Problems("behaviours: [{action: crash, signal: SIGKIL}]\n"),
              ElementsAre("1:38: error: behaviours[0].signal: unknown signal \"SIGKIL\" "
                          "(did you mean \"SIGKILL\"?)"));
  EXPECT_THAT(Problems("behaviours: [{action: crash, signal: 0}]\n"),
              ElementsAre("1:38: error: behaviours[0].signal: must be a signal number from 1 "
                          "to 64, got 0"));
  EXPECT_THAT(Problems("behaviours: [{action: crash, signal: 9, exit_code: 1}]\n"),
              ElementsAre("1:30: error: behaviours[0].signal: give exit_code or signal, not both "
                          "(a process dies by a signal or exits)"));
}

TEST(SimConfigTest, UnknownKeysGetSuggestions) {
  // (`behaviors` alone is the MEOW dialect's; with this dialect's schema it
  // is a misspelling.)
  EXPECT_THAT(Problems("schema: understudy.sim/v1\nbehaviors: []\n"),
              ElementsAre("2:1: error: behaviors: unknown field (did you mean \"behaviours\"?)"));
  EXPECT_THAT(Problems("behaviours: [{when: {contain: x}}]\n"),
              ElementsAre("1:22: error: behaviours[0].when.contain: unknown field (did you mean "
                          "\"contains\"?)"));
}

TEST(SimConfigTest, UnknownActionGetsASuggestion) {
  EXPECT_THAT(Problems("behaviours: [{action: complet}]\n"),
              ElementsAre("1:23: error: behaviours[0].action: expected one of complete, ask, "
                          "fail, fail_then_succeed, hang, crash, model, got \"complet\" (did you "
                          "mean \"complete\"?)"));
}

TEST(SimConfigTest, FieldsOfAnotherActionAreRefused) {
  EXPECT_THAT(Problems("behaviours: [{action: complete, question: \"Why?\"}]\n"),
              ElementsAre("1:33: error: behaviours[0].question: only for action ask (this "
                          "behaviour's action is complete)"));
  EXPECT_THAT(Problems("default: {action: hang, outputs: {a: b}}\n"),
              ElementsAre("1:25: error: default.outputs: only for actions complete, "
                          "fail_then_succeed, model (this behaviour's action is hang)"));
}

TEST(SimConfigTest, WrongTypesAreReported) {
  EXPECT_THAT(Problems("prompt: [a]\nbehaviours: {a: 1}\ntiming: {scale: fast}\n"),
              ElementsAre("1:9: error: prompt: expected a string, got a list (write one text value, e.g. "
                          "`prompt: \"text\"`)",
                          "2:13: error: behaviours: expected a list of behaviours, got a mapping",
                          "3:17: error: timing.scale: expected a number, got \"fast\" (write a number, e.g. "
                          "`scale: 1.5`)"));
}

TEST(SimConfigTest, AskNeedsOptionsOrThen) {
  EXPECT_THAT(Problems("behaviours: [{action: ask, question: \"Q?\"}]\n"),
              ElementsAre("1:14: error: behaviours[0]: an ask needs options, or then for any "
                          "answer (add options: [{answer: yes, then: NAME}, {answer: no, then: "
                          "NAME}])"));
  EXPECT_THAT(Problems("behaviours: [{action: ask, then: x}]\n"),
              ElementsAre("1:14: error: behaviours[0]: missing required field \"question\" (add "
                          "`question: ...`)",
                          "1:34: error: behaviours[0].then: no behaviour named \"x\" (no "
                          "behaviour has a name; give one a name: field)"));
}

TEST(SimConfigTest, UnknownThenNamesTheClosest) {
  EXPECT_THAT(
      Problems("behaviours:\n  - {name: deploy, when: {contains: d}}\n  - {action: ask, question: Q, options: "
               "[{answer: a, then: deplyo}]}\n"),
      ElementsAre("3:60: error: behaviours[1].options[0].then: no behaviour named \"deplyo\" "
                  "(did you mean \"deploy\"?)"));
}

TEST(SimConfigTest, DuplicateNamesAndAnswers) {
  EXPECT_THAT(Problems("behaviours:\n  - {name: a, when: {contains: x}}\n  - {name: a}\n"),
              ElementsAre("3:12: error: behaviours[1].name: duplicate behaviour name; "
                          "behaviours[0] already has it"));
  EXPECT_THAT(Problems("behaviours: [{action: ask, question: Q, options: [yes, YES]}]\n"),
              ElementsAre("1:56: error: behaviours[0].options[1]: duplicate answer; options[0] "
                          "already has it"));
}

TEST(SimConfigTest, ThenLoopsAreRefused) {
  EXPECT_THAT(Problems(R"(behaviours:
  - {name: a, when: {contains: a}, action: ask, question: "A?", options: [{answer: x, then: b}]}
  - {name: b, action: ask, question: "B?", then: a}
)"),
              ElementsAre("3:50: error: behaviours[1].then: then loops back: a -> b -> a "
                          "(end the chain with a behaviour that is not an ask)"));
  EXPECT_THAT(Problems("behaviours: [{name: s, action: ask, question: Q, then: s}]\n"),
              ElementsAre("1:56: error: behaviours[0].then: then loops back: s -> s (end the "
                          "chain with a behaviour that is not an ask)"));
  // Through an inline ask.
  EXPECT_THAT(
      Problems("behaviours: [{name: s, action: ask, question: Q, then: {action: ask, question: "
               "R, then: s}}]\n"),
      ElementsAre(HasSubstr("then loops back: s -> behaviours[0].then -> s")));
}

TEST(SimConfigTest, RangesAreChecked) {
  EXPECT_THAT(
      Problems(R"(timing: {scale: 0, jitter: 1}
completion: {command: "", retries: 101, timeout: 0}
behaviours:
  - {action: fail_then_succeed, failures: 0, when: {contains: f}}
  - {action: crash, exit_code: 256}
)"),
      ElementsAre("1:17: error: timing.scale: must be more than 0, got 0 (1 keeps the delays as "
                  "written; 0.1 runs ten times faster)",
                  "1:28: error: timing.jitter: must be less than 1 (a fraction of each delay), "
                  "got 1 (0.2 varies each delay by up to 20%)",
                  "2:23: error: completion.command: must not be empty (give a command line (run "
                  "by /bin/sh -c) or a list of arguments)",
                  "2:36: error: completion.retries: must be at most 100, got 101",
                  "2:50: error: completion.timeout: must be more than 0",
                  "4:43: error: behaviours[0].failures: must be at least 1, got 0 (use 1 or more, e.g. "
                  "`failures: 1`)",
                  "5:32: error: behaviours[1].exit_code: must be at most 255 (an exit status), "
                  "got 256 (to die by a signal, give signal: SIGKILL)"));
  EXPECT_THAT(Problems("completion: {command: []}\n"),
              ElementsAre(HasSubstr("completion.command: must not be empty")));
  EXPECT_THAT(Problems("completion: {retries: -1}\n"),
              ElementsAre(HasSubstr("completion.retries: must be at least 0, got -1")));
}

TEST(SimConfigTest, EventsAreChecked) {
  EXPECT_THAT(Problems("behaviours: [{events: [{at: -1, input: ls}]}]\n"),
              ElementsAre("1:24: error: behaviours[0].events[0]: missing required field \"tool\" "
                          "(add `tool: ...`)",
                          "1:29: error: behaviours[0].events[0].at: must not be negative, got -1",
                          "1:40: error: behaviours[0].events[0].input: expected a mapping (the "
                          "tool's input), got \"ls\""));
}

TEST(SimConfigTest, BadRegexIsReported) {
  EXPECT_THAT(Problems("behaviours: [{when: {matches: \"(\"}}]\n"),
              ElementsAre(HasSubstr("1:31: error: behaviours[0].when.matches: invalid regex: "
                                    "missing )")));
}

TEST(SimConfigTest, EmptyWhenAndUnreachableBehavioursAreWarned) {
  EXPECT_THAT(Problems("behaviours:\n  - {when: {}}\n  - {when: {contains: x}}\ndefault: {}\n"),
              ElementsAre("2:12: warning: behaviours[0].when: no conditions: matches every prompt "
                          "(give contains or matches, or drop when)",
                          "3:5: warning: behaviours[1]: never reached: behaviours[0] before it "
                          "matches every prompt (give behaviours[0] a when, or move this one "
                          "above it)",
                          "4:1: warning: default: never reached: behaviours[0] matches every "
                          "prompt"));
  // Warnings do not stop a config from loading.
  EXPECT_THAT(ParseSimConfig("behaviours: [{when: {}}, {}]\n", "t.yaml"), IsOk());
}

TEST(SimConfigTest, NameAndWhenOnlyInTheList) {
  EXPECT_THAT(Problems("default: {name: d, when: {contains: x}}\n"),
              ElementsAre("1:11: error: default.name: default takes no name (name behaviours in "
                          "the behaviours list, and refer to them with then: NAME)",
                          "1:20: error: default.when: default answers every prompt no behaviour "
                          "matched; it takes no when"));
}

TEST(SimConfigTest, WrongSchemaIsRefused) {
  EXPECT_THAT(Problems("schema: understudy.sim/v2\n"),
              ElementsAre("1:9: error: schema: unknown schema \"understudy.sim/v2\"; this build "
                          "reads understudy.sim/v1 (use schema: understudy.sim/v1)"));
}

TEST(SimConfigTest, ParseFailsWithEveryErrorAndNoWarnings) {
  absl::StatusOr<SimConfig> c =
      ParseSimConfig("behaviours: [{when: {}}, {action: nope}]\nprompt: 1: 2\n", "bad.yaml");
  EXPECT_THAT(c, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad.yaml:")));
  c = ParseSimConfig("behaviours: [{when: {}}, {action: nope}]\n", "bad.yaml");
  EXPECT_THAT(c, StatusIs(absl::StatusCode::kInvalidArgument,
                          "bad.yaml:1:35: error: behaviours[1].action: expected one of complete, "
                          "ask, fail, fail_then_succeed, hang, crash, model, got \"nope\" (write one "
                          "of them, e.g. `action: complete`)"));
}

TEST(SimConfigTest, LooksLikeSimConfig) {
  EXPECT_TRUE(LooksLikeSimConfig("schema: understudy.sim/v1\n"));
  EXPECT_TRUE(LooksLikeSimConfig("schema: \"understudy.sim/v2\"\n"));
  EXPECT_TRUE(LooksLikeSimConfig("name: x\nbehaviours:\n  - {}\n"));
  EXPECT_TRUE(LooksLikeSimConfig("name: x\nbehaviours: [ {{{\n"));  // broken YAML still counts
  EXPECT_TRUE(LooksLikeSimConfig(R"({"behaviours": []})"));
  EXPECT_TRUE(LooksLikeSimConfig(R"({"schema": "understudy.sim/v1"})"));
  EXPECT_FALSE(LooksLikeSimConfig("schema: understudy.scenario/v1\nrules: []\n"));
  EXPECT_FALSE(LooksLikeSimConfig(
      "schema: understudy.scenario/v1\nrules:\n  - respond: |\n      behaviours: x\n"));
  EXPECT_FALSE(LooksLikeSimConfig(R"({"rules": [{"respond": "\"behaviours\": 1"}]})"));
  EXPECT_FALSE(LooksLikeSimConfig(""));
  EXPECT_FALSE(LooksLikeSimConfig(std::string("\xff\xfe", 2)));
}

// --- hostile input -------------------------------------------------------

TEST(SimConfigTest, DeepNestingIsRefusedWithoutRecursing) {
  const std::string text = "behaviours: " + std::string(100000, '[') + std::string(100000, ']');
  validation::Report report = ValidateSimConfig(text, "t.yaml");
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_THAT(report.problems[0].message, HasSubstr("nesting deeper than 64 levels"));
}

TEST(SimConfigTest, DeepInlineThenIsRefused) {
  std::string text = "behaviours:\n  - ";
  for (int i = 0; i < 100; ++i) text += "{action: ask, question: q, then: ";
  text += "{}" + std::string(100, '}') + "\n";
  validation::Report report = ValidateSimConfig(text, "t.yaml");
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_THAT(report.problems[0].message, HasSubstr("nesting deeper than"));
}

TEST(SimConfigTest, InvalidUtf8IsRefused) {
  validation::Report report =
      ValidateSimConfig("behaviours: [{when: {contains: \"\xc3\x28\"}}]\n", "t.yaml");
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_THAT(report.problems[0].message, HasSubstr("invalid UTF-8"));
}

TEST(SimConfigTest, HugeFileIsRefusedBeforeParsing) {
  const std::string text = "name: " + std::string(kMaxSimConfigBytes, 'x') + "\n";
  validation::Report report = ValidateSimConfig(text, "t.yaml");
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_THAT(report.problems[0].message, HasSubstr("refused"));
}

TEST(SimConfigTest, AliasBombIsRefused) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    text += absl::StrCat("a", i, ": &a", i, " [");
    for (int j = 0; j < 10; ++j) text += absl::StrCat(j ? ", " : "", "*a", i - 1);
    text += "]\n";
  }
  text += "behaviours: [{output: *a9}]\n";
  validation::Report report = ValidateSimConfig(text, "t.yaml");
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.problems[0].message, HasSubstr("nodes once aliases are expanded"));
}

TEST(SimConfigTest, ThenReferencesShareTheNamedBehaviour) {
  SimConfig c = Parsed(R"(behaviours:
  - {name: done, when: {contains: zzz}, output: [ok]}
  - {action: ask, question: Q, options: [a, b], then: done}
)");
  const Behaviour& ask = *c.behaviours[1];
  EXPECT_EQ(ask.options[0].then.get(), c.behaviours[0].get());
  EXPECT_EQ(ask.options[1].then.get(), c.behaviours[0].get());
}

}  // namespace
}  // namespace sim
}  // namespace understudy
