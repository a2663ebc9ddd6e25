// The MEOW dialect of sim configs (sim/meow_config.cc): what each of its
// fields becomes in the SimConfig the simulator runs. Its problem reports are
// pinned by the corpus (tests/sim/configs/meow, config_corpus_test.cc).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/config.h"

namespace understudy {
namespace sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

SimConfig Parsed(const std::string& text) {
  absl::StatusOr<SimConfig> config = ParseSimConfig(text, "meow.yaml");
  EXPECT_THAT(config, IsOk());
  return config.ok() ? *std::move(config) : DefaultSimConfig();
}

std::vector<std::string> Problems(const std::string& text) {
  validation::Report report = ValidateSimConfig(text, "meow.yaml");
  std::vector<std::string> out;
  for (const validation::Problem& p : report.problems) {
    std::string line = validation::FormatProblem(report, p);
    out.push_back(line.substr(line.find(':') + 1));
  }
  return out;
}

// The configuration of MEOW's simulator design, whole.
constexpr char kDesign[] = R"yaml(# sim-config.yaml
timing:
  startup_delay: 100ms
  default_work_delay: 500ms
  prompt_delay: 50ms
hooks:
  fire_stop_hook: true
  fire_tool_events: true
behaviors:
  - match: "Write failing tests"
    type: regex
    action:
      type: complete
      delay: 1s
      outputs:
        test_file: "src/__tests__/feature.test.ts"
      events:
        - type: tool-starting
          data: {tool: "Write"}
          when: before
        - type: tool-completed
          data: {tool: "Write"}
          when: after
  - match: "implement.*feature"
    type: regex
    action:
      type: ask
      question: "I found 3 potential approaches. Which should I use?"
      options:
        - "Use approach A (fastest)"
        - "Use approach B (most maintainable)"
        - "Use approach C (most flexible)"
  - match: "fail-on-first-attempt"
    action:
      type: fail_then_succeed
      fail_count: 1
      fail_message: "Error: Could not parse configuration"
      success_outputs:
        result: "fixed"
  - match: "hang-forever"
    action:
      type: hang
  - match: "crash-immediately"
    action:
      type: crash
      exit_code: 137
  - match: "complex-operation"
    action:
      type: complete
      delay: 2s
      events:
        - {type: tool-starting, data: {tool: Read}, when: 0ms}
        - {type: tool-completed, data: {tool: Read}, when: 200ms}
        - {type: tool-starting, data: {tool: Write}, when: 500ms}
        - {type: tool-completed, data: {tool: Write}, when: 1500ms}
      outputs:
        files_modified: 3
default:
  action:
    type: complete
    delay: 500ms
    outputs: {}
logging:
  level: debug
  format: json
  file: ""
)yaml";

TEST(MeowConfigTest, TheDesignsConfigMapsOntoTheSimConfig) {
  EXPECT_THAT(Problems(kDesign), ::testing::IsEmpty());
  const SimConfig c = Parsed(kDesign);
  EXPECT_EQ(c.dialect, Dialect::kMeow);
  EXPECT_EQ(c.startup_delay, absl::Milliseconds(100));
  EXPECT_EQ(c.prompt_delay, absl::Milliseconds(50));
  EXPECT_TRUE(c.stop_hooks);
  EXPECT_TRUE(c.tool_hooks);
  EXPECT_EQ(c.log.level, "debug");
  EXPECT_EQ(c.log.format, "json");
  EXPECT_EQ(c.log.file, "");
  EXPECT_THAT(c.completion.command, ElementsAre("meow", "done"));
  EXPECT_EQ(c.completion.output_flag, "--output");
  ASSERT_EQ(c.behaviours.size(), 6u);

  const Behaviour& tests = *c.behaviours[0];
  EXPECT_EQ(tests.path, "behaviors[0]");
  EXPECT_EQ(tests.action, ActionKind::kComplete);
  EXPECT_EQ(tests.delay, absl::Seconds(1));
  EXPECT_THAT(tests.outputs, ElementsAre(Pair("test_file", "src/__tests__/feature.test.ts")));
  ASSERT_EQ(tests.events.size(), 1u);  // tool-starting and tool-completed of Write: one call
  EXPECT_EQ(tests.events[0].tool, "Write");
  EXPECT_EQ(tests.events[0].at, absl::ZeroDuration());
  EXPECT_EQ(tests.events[0].duration, absl::Seconds(1));
  EXPECT_EQ(tests.events[0].input_json, "{}");
  EXPECT_EQ(&c.Select("Write failing tests for login"), &tests);

  const Behaviour& ask = *c.behaviours[1];
  EXPECT_EQ(ask.action, ActionKind::kAsk);
  EXPECT_EQ(ask.delay, absl::Milliseconds(500));  // timing.default_work_delay
  EXPECT_EQ(ask.question, "I found 3 potential approaches. Which should I use?");
  ASSERT_EQ(ask.options.size(), 3u);
  EXPECT_EQ(ask.options[1].answer, "Use approach B (most maintainable)");
  EXPECT_TRUE(ask.any_answer);
  ASSERT_NE(ask.then, nullptr);
  EXPECT_EQ(ask.then->action, ActionKind::kComplete);
  EXPECT_EQ(ask.then->answer_output, "answer");
  EXPECT_EQ(ask.then->delay, absl::ZeroDuration());  // an answer is taken at once
  EXPECT_EQ(ask.options[2].then, ask.then);
  EXPECT_EQ(&c.Select("implement the login feature"), &ask);

  const Behaviour& flaky = *c.behaviours[2];
  EXPECT_EQ(flaky.action, ActionKind::kFailThenSucceed);
  EXPECT_EQ(flaky.failures, 1);
  EXPECT_EQ(flaky.message, "Error: Could not parse configuration");
  EXPECT_THAT(flaky.outputs, ElementsAre(Pair("result", "fixed")));
  EXPECT_FALSE(flaky.crash_on_failure);
  EXPECT_EQ(&c.Select("please fail-on-first-attempt"), &flaky);

  EXPECT_EQ(c.behaviours[3]->action, ActionKind::kHang);
  EXPECT_EQ(c.behaviours[4]->action, ActionKind::kCrash);
  EXPECT_EQ(c.behaviours[4]->exit_code, 137);

  const Behaviour& complex = *c.behaviours[5];
  ASSERT_EQ(complex.events.size(), 2u);
  EXPECT_EQ(complex.events[0].tool, "Read");
  EXPECT_EQ(complex.events[0].at, absl::ZeroDuration());
  EXPECT_EQ(complex.events[0].duration, absl::Milliseconds(200));
  EXPECT_EQ(complex.events[1].tool, "Write");
  EXPECT_EQ(complex.events[1].at, absl::Milliseconds(500));
  EXPECT_EQ(complex.events[1].duration, absl::Seconds(1));
  EXPECT_THAT(complex.outputs, ElementsAre(Pair("files_modified", "3")));

  EXPECT_EQ(c.default_behaviour->path, "default");
  EXPECT_EQ(c.default_behaviour->action, ActionKind::kComplete);
  EXPECT_EQ(c.default_behaviour->delay, absl::Milliseconds(500));
  EXPECT_EQ(&c.Select("something else"), c.default_behaviour.get());
}

TEST(MeowConfigTest, DefaultsAreMeowsOwn) {
  const SimConfig c = Parsed("behaviors: []\n");
  EXPECT_EQ(c.dialect, Dialect::kMeow);
  EXPECT_EQ(c.startup_delay, absl::Milliseconds(100));
  EXPECT_EQ(c.prompt_delay, absl::Milliseconds(10));
  EXPECT_EQ(c.default_behaviour->delay, absl::Milliseconds(100));
  EXPECT_EQ(c.default_behaviour->action, ActionKind::kComplete);
  EXPECT_EQ(c.log.level, "info");
  EXPECT_EQ(c.log.format, "json");
  const SimConfig quick = Parsed(
      "timing: {default_work_delay: 5ms}\nbehaviors: [{match: x, action: {type: fail}}]\n");
  EXPECT_EQ(quick.behaviours[0]->delay, absl::Milliseconds(5));
  EXPECT_EQ(quick.behaviours[0]->message, "Error: An error occurred");
  EXPECT_EQ(quick.default_behaviour->delay, absl::Milliseconds(5));
  const SimConfig asks = Parsed("behaviors: [{match: q, action: {type: ask}}]\n");
  EXPECT_EQ(asks.behaviours[0]->question, "I have a question for you.");
  ASSERT_EQ(asks.behaviours[0]->options.size(), 1u);  // any answer, no option shown
  EXPECT_EQ(asks.behaviours[0]->options[0].answer, "");
}

TEST(MeowConfigTest, HooksAndEventsSwitches) {
  const SimConfig c = Parsed("hooks: {fire_stop_hook: false, fire_tool_events: false}\n");
  EXPECT_FALSE(c.stop_hooks);
  EXPECT_FALSE(c.tool_hooks);
}

// tool-starting and tool-completed pair up by tool, in order; the words of
// `when` are the start, the middle and the end of the work's delay; a start
// never completed ends with the work; a completion never started is a call
// of its own; data beyond `tool` is the tool's input.
TEST(MeowConfigTest, EventsPairIntoToolCalls) {
  const SimConfig c = Parsed(R"(behaviors:
  - match: go
    action:
      type: complete
      delay: 1s
      events:
        - {type: tool-starting, data: {tool: Bash, command: "make test"}, when: before}
        - {type: tool-starting, data: {tool: Read}, when: during}
        - {type: tool-completed, data: {tool: Bash}, when: during}
        - {type: tool-completed, data: {tool: Edit, file_path: a.txt}, when: 1200ms}
)");
  const std::vector<ToolEvent>& events = c.behaviours[0]->events;
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].tool, "Bash");
  EXPECT_EQ(events[0].input_json, R"({"command":"make test"})");
  EXPECT_EQ(events[0].at, absl::ZeroDuration());
  EXPECT_EQ(events[0].duration, absl::Milliseconds(500));
  EXPECT_EQ(events[1].tool, "Read");
  EXPECT_EQ(events[1].at, absl::Milliseconds(500));
  EXPECT_EQ(events[1].duration, absl::Milliseconds(500));  // ends with the work
  EXPECT_EQ(events[2].tool, "Edit");
  EXPECT_EQ(events[2].input_json, R"({"file_path":"a.txt"})");
  EXPECT_EQ(events[2].at, absl::Milliseconds(1200));
  EXPECT_EQ(events[2].duration, absl::ZeroDuration());
}

// A fail_then_succeed given an exit_code crashes on its failing turns: with
// its count kept across --resume, "crash, then succeed after the restart".
TEST(MeowConfigTest, FailThenSucceedWithAnExitCodeCrashes) {
  const SimConfig c = Parsed(
      "behaviors: [{match: step-2, action: {type: fail_then_succeed, exit_code: 137}}]\n");
  EXPECT_TRUE(c.behaviours[0]->crash_on_failure);
  EXPECT_EQ(c.behaviours[0]->exit_code, 137);
  EXPECT_EQ(c.behaviours[0]->failures, 1);
}

TEST(MeowConfigTest, DialectIsToldByItsKeys) {
  EXPECT_EQ(Parsed("hooks: {}\n").dialect, Dialect::kMeow);
  EXPECT_EQ(Parsed("logging: {level: warn}\n").dialect, Dialect::kMeow);
  EXPECT_EQ(Parsed("timing: {prompt_delay: 0}\n").dialect, Dialect::kMeow);
  EXPECT_EQ(Parsed("default: {action: {type: hang}}\n").dialect, Dialect::kMeow);
  EXPECT_EQ(Parsed("timing: {scale: 2}\n").dialect, Dialect::kUnderstudy);
  EXPECT_EQ(Parsed("default: {action: hang}\n").dialect, Dialect::kUnderstudy);
  EXPECT_EQ(Parsed("{}\n").dialect, Dialect::kUnderstudy);
  // With this build's schema it is understudy's, whatever else it holds.
  EXPECT_THAT(Problems("schema: understudy.sim/v1\nhooks: {}\n"),
              ElementsAre(HasSubstr("2:1: error: hooks: unknown field")));
  EXPECT_TRUE(LooksLikeSimConfig("behaviors:\n  - match: x\n"));
  EXPECT_TRUE(LooksLikeSimConfig("hooks:\n  fire_stop_hook: false\n"));
  EXPECT_TRUE(LooksLikeSimConfig("{\"behaviors\": []}"));
  EXPECT_EQ(DialectName(Dialect::kMeow), "meow");
  EXPECT_EQ(DialectName(Dialect::kUnderstudy), "understudy");
}

// Every problem at once, each with its place and a suggestion where one is
// close, as for the understudy dialect.
TEST(MeowConfigTest, ProblemsHavePathsPositionsAndSuggestions) {
  EXPECT_THAT(
      Problems(R"(behaviors:
  - match: x
    typ: regex
    action: {type: complet}
  - match: y
    action: {type: hang, question: "why?"}
  - match: z
    action:
      type: complete
      events: [{type: tool-started, data: {tool: Bash}, when: befor}]
)"),
      ElementsAre(
          "3:5: error: behaviors[0].typ: unknown field (did you mean \"type\"?)",
          "4:20: error: behaviors[0].action.type: expected one of complete, ask, fail, "
          "fail_then_succeed, hang, crash, got \"complet\" (did you mean \"complete\"?)",
          "6:26: error: behaviors[1].action.question: only for type ask (this action's type is "
          "hang)",
          "10:23: error: behaviors[2].action.events[0].type: expected one of tool-starting, "
          "tool-completed, got \"tool-started\" (did you mean \"tool-starting\"?)",
          "10:63: error: behaviors[2].action.events[0].when: expected before, during, after or a "
          "duration (150ms, 2s), got \"befor\" (did you mean \"before\"?)"));
}

}  // namespace
}  // namespace sim
}  // namespace understudy
