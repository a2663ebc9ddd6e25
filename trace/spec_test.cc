#include "trace/spec.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "trace/test_trace.h"

namespace understudy {
namespace trace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ReviewLoop;
using ::testing::SizeIs;
using ::testing::StartsWith;

// Every kind of item, as docs/assertions.md shows them.
constexpr char kFull[] = R"yaml(
description: the review loop reaches verification
assertions:
  - name: executor hands over to verification
    select: {kind: tool_call, agent: executor, tool: continue}
    position: last
    expect:
      count: {ge: 1}
      attributes:
        gen_ai.tool.call.arguments: {json_subset: {phase: verification}}
  - agent_sequence: {agents: [orchestrator, executor], match: subsequence, collapse_repeats: true}
  - phase_transitions: {phases: [discovery, execute, verification]}
  - tool_calls: {agent: executor, calls: [{name: continue, arguments: {phase: verification}}], match: subsequence}
  - feedback_propagated: {from: reviewer, to: executor, keyword: SQL injection}
  - count: {select: {kind: miss}, eq: 0}
  - no_misses: true
  - all_consumed: true
)yaml";

std::vector<v1::AssertionResult> EvalSpec(const std::string& text,
                                          const std::vector<v1::TraceEvent>& events,
                                          const v1::RunSummary* summary = nullptr) {
  absl::StatusOr<std::vector<v1::AssertionResult>> results =
      EvaluateSpec(text, "spec.yaml", TraceView{&events, summary});
  EXPECT_THAT(results, IsOk());
  return results.ok() ? *results : std::vector<v1::AssertionResult>();
}

v1::AssertionResult RunOne(const std::string& text,
                           const std::vector<v1::TraceEvent>& events = ReviewLoop()) {
  std::vector<v1::AssertionResult> results = EvalSpec(text, events);
  EXPECT_THAT(results, SizeIs(1));
  return results.empty() ? v1::AssertionResult() : results[0];
}

std::string Problems(const std::string& text) {
  absl::StatusOr<std::vector<v1::Assertion>> parsed = ParseSpec(text, "spec.yaml");
  EXPECT_THAT(parsed, StatusIs(absl::StatusCode::kInvalidArgument));
  return std::string(parsed.status().message());
}

std::vector<int64_t> Seqs(const v1::AssertionResult& r) {
  return {r.event_seqs().begin(), r.event_seqs().end()};
}

// ---------------------------------------------------------------------------
// Parsing

TEST(ParseSpecTest, BuiltInChecksBecomeTheirAssertions) {
  absl::StatusOr<std::vector<v1::Assertion>> parsed = ParseSpec(kFull, "spec.yaml");
  ASSERT_THAT(parsed, IsOk());
  ASSERT_THAT(*parsed, SizeIs(8));
  const std::vector<v1::Assertion>& a = *parsed;

  EXPECT_EQ(a[0].name(), "executor hands over to verification");
  ASSERT_EQ(a[0].check_case(), v1::Assertion::kSpec);
  EXPECT_EQ(nlohmann::json::parse(a[0].spec()), nlohmann::json::parse(R"({"assertions":[{
      "name":"executor hands over to verification",
      "select":{"kind":["tool_call"],"agent":"executor","tool":"continue"},
      "position":"last",
      "expect":{"count":{"ge":1},
                "attributes":{"gen_ai.tool.call.arguments":{"json_subset":{"phase":"verification"}}}}
    }]})"));

  EXPECT_EQ(a[1].name(), "");
  EXPECT_THAT(a[1].agent_sequence().agents(), ElementsAre("orchestrator", "executor"));
  EXPECT_EQ(a[1].agent_sequence().match(), v1::SEQUENCE_MATCH_SUBSEQUENCE);
  EXPECT_TRUE(a[1].agent_sequence().collapse_repeats());
  EXPECT_THAT(a[2].phase_transitions().phases(),
              ElementsAre("discovery", "execute", "verification"));
  EXPECT_EQ(a[2].phase_transitions().match(), v1::SEQUENCE_MATCH_EXACT);
  EXPECT_EQ(a[3].tool_calls().agent(), "executor");
  ASSERT_EQ(a[3].tool_calls().calls_size(), 1);
  EXPECT_EQ(a[3].tool_calls().calls(0).name(), "continue");
  EXPECT_EQ(a[3].tool_calls().calls(0).arguments(), R"({"phase":"verification"})");
  EXPECT_EQ(a[4].feedback_propagated().keyword(), "SQL injection");
  EXPECT_THAT(a[5].count().filter().kinds(), ElementsAre("miss"));
  EXPECT_EQ(a[5].count().comparison(), v1::COMPARISON_EQ);
  EXPECT_EQ(a[5].count().n(), 0);
  EXPECT_TRUE(a[6].no_misses());
  EXPECT_TRUE(a[7].all_consumed());
}

TEST(ParseSpecTest, ShorthandsAndJson) {
  absl::StatusOr<std::vector<v1::Assertion>> parsed = ParseSpec(
      R"({"assertions": [
            {"agent_sequence": ["orchestrator", "executor"]},
            {"phase_transitions": ["discovery"]},
            {"tool_calls": {"calls": ["read_file", {"name": "continue",
                                                    "arguments": "{\"phase\": \"execute\"}"}]}},
            {"count": {"select": {"kind": ["miss", "exchange"], "min_seq": 3}, "le": 7}}]})",
      "spec.json");
  ASSERT_THAT(parsed, IsOk());
  ASSERT_THAT(*parsed, SizeIs(4));
  EXPECT_THAT((*parsed)[0].agent_sequence().agents(), ElementsAre("orchestrator", "executor"));
  EXPECT_THAT((*parsed)[1].phase_transitions().phases(), ElementsAre("discovery"));
  EXPECT_EQ((*parsed)[2].tool_calls().calls(0).name(), "read_file");
  EXPECT_EQ((*parsed)[2].tool_calls().calls(0).arguments(), "");
  EXPECT_EQ((*parsed)[2].tool_calls().calls(1).arguments(), R"({"phase":"execute"})");
  EXPECT_THAT((*parsed)[3].count().filter().kinds(), ElementsAre("miss", "exchange"));
  EXPECT_EQ((*parsed)[3].count().filter().min_seq(), 3);
  EXPECT_EQ((*parsed)[3].count().comparison(), v1::COMPARISON_LE);
}

TEST(ParseSpecTest, ReportsEveryProblemWithPathPositionAndSuggestion) {
  EXPECT_EQ(Problems(R"yaml(assertions:
  - select: {kind: tool_call}
    expect: {count: 1}
  - agent_sequence: {agents: [a], match: subseq}
  - select: {kind: exchange}
    expect:
      cuont: {ge: 1}
  - select: {knd: miss}
  - select: {kind: tool_call}
    position: lats
  - tool_calls: {calls: [{name: continue, arguments: "[1]"}]}
  - no_misses: false
  - count: {select: {kind: miss}, eq: 0, ge: 1}
  - select:
      attribute_patterns: {gen_ai.tool.name: "(unclosed"}
    expect:
      attributes:
        gen_ai.tool.name: {equal: x}
)yaml"),
            "spec.yaml:4:42: error: assertions[1].agent_sequence.match: expected one of exact, "
            "subsequence, prefix, got \"subseq\" (did you mean \"subsequence\"?)\n"
            "spec.yaml:7:7: error: assertions[2].expect.cuont: unknown field (did you mean \"count\"?)\n"
            "spec.yaml:8:14: error: assertions[3].select.knd: unknown field (did you mean \"kind\"?)\n"
            "spec.yaml:10:15: error: assertions[4].position: expected first, last, all or an index (0 "
            "is the first event), got \"lats\" (did you mean \"last\"?)\n"
            "spec.yaml:11:54: error: assertions[5].tool_calls.calls[0].arguments: expected a mapping or "
            "a JSON object's text, got \"[1]\" (write the arguments to check as a mapping, e.g. "
            "`arguments: {path: a.py}`)\n"
            "spec.yaml:12:16: error: assertions[6].no_misses: must be true (false checks nothing; to "
            "require misses, count kind: miss) (write `no_misses: true`, or leave the item out)\n"
            "spec.yaml:13:42: error: assertions[7].count.ge: one comparison only; this one already has "
            "eq (keep one of eq and ge; two comparisons take two items)\n"
            "spec.yaml:15:46: error: assertions[8].select.attribute_patterns[\"gen_ai.tool.name\"]: "
            "invalid regex: missing ): (unclosed (RE2 syntax; a backslash before a character meant "
            "literally: \\( \\. \\*)\n"
            "spec.yaml:18:28: error: assertions[8].expect.attributes[\"gen_ai.tool.name\"].equal: "
            "unknown field (did you mean \"equals\"?)");
}

TEST(ParseSpecTest, ItemsHoldExactlyOneCheck) {
  EXPECT_EQ(Problems("assertions:\n"
                     "  - no_misses: true\n"
                     "    all_consumed: true\n"
                     "  - select: {kind: miss}\n"
                     "    count: {eq: 0}\n"
                     "  - agent_sequence: [a]\n"
                     "    expect: {count: 1}\n"
                     "  - name: nothing\n"),
            "spec.yaml:3:19: error: assertions[0].all_consumed: an item holds one check; this one "
            "already has no_misses (make it its own item)\n"
            "spec.yaml:5:12: error: assertions[1].count: an item holds one check; this one already has "
            "select (make it its own item)\n"
            "spec.yaml:7:13: error: assertions[2].expect: only with select; agent_sequence takes its "
            "settings inside it\n"
            "spec.yaml:8:5: error: assertions[3]: no check: give select (with expect), or one of "
            "agent_sequence, phase_transitions, tool_calls, feedback_propagated, count, "
            "no_misses, all_consumed");
}

TEST(ParseSpecTest, DocumentLevelProblems) {
  EXPECT_EQ(Problems(""),
            "spec.yaml:1:1: error: empty spec; expected a mapping with an `assertions` list");
  EXPECT_EQ(Problems("- no_misses: true\n"),
            "spec.yaml:1:1: error: expected a mapping with an `assertions` list, got a list");
  EXPECT_EQ(Problems("asertions: []\n"),
            "spec.yaml:1:1: error: asertions: unknown field (did you mean \"assertions\"?)\n"
            "spec.yaml:1:1: error: missing required field \"assertions\"");
  EXPECT_EQ(Problems("assertions: []\n"),
            "spec.yaml:1:13: error: assertions: no assertions; add at least one");
  EXPECT_THAT(Problems("assertions: [no_misses: true\n"),
              StartsWith("spec.yaml:2:1: error: YAML syntax error: "));
  EXPECT_THAT(Problems("assertions: []\n---\nassertions: []\n"),
              HasSubstr("the text holds 2 YAML documents; a spec is exactly one"));
}

TEST(ParseSpecTest, SchemaSessionAndDescriptionAreOptionalTopLevelKeys) {
  absl::StatusOr<std::vector<v1::Assertion>> parsed = ParseSpec(
      "schema: understudy.spec/v1\n"
      "session: review-loop\n"
      "description: the review loop has no misses\n"
      "assertions: [{no_misses: true}]\n",
      "spec.yaml");
  ASSERT_THAT(parsed, IsOk());
  ASSERT_THAT(*parsed, SizeIs(1));
  EXPECT_TRUE((*parsed)[0].no_misses());
  // Without them, the document reads the same.
  EXPECT_THAT(ParseSpec("assertions: [{no_misses: true}]\n", "spec.yaml"), IsOk());
}

TEST(ParseSpecTest, UnknownSchemaVersionNamesTheSupportedOnes) {
  EXPECT_EQ(Problems("schema: understudy.spec/v9\nassertions: [{no_misses: true}]\n"),
            "spec.yaml:1:9: error: schema: unknown schema \"understudy.spec/v9\"; this build "
            "reads understudy.spec/v1 (use schema: understudy.spec/v1)");
  EXPECT_EQ(Problems("schema: [understudy.spec/v1]\nsession: {name: x}\ndescription: 3\n"
                     "assertions: [{no_misses: true}]\n"),
            "spec.yaml:1:9: error: schema: expected a string, got a list (write one text value, "
            "e.g. `schema: \"text\"`)\n"
            "spec.yaml:2:10: error: session: expected a string, got a mapping (write one text "
            "value, e.g. `session: \"text\"`)");
}

TEST(ValidateSpecTest, ReportsEveryProblemAsData) {
  validation::Report report = ValidateSpec(
      "schema: understudy.spec/v2\n"
      "sesion: x\n"
      "assertions:\n"
      "  - agent_sequence: {agents: [a], mach: exact}\n",
      "s.yaml");
  EXPECT_EQ(report.source, "s.yaml");
  ASSERT_THAT(report.problems, SizeIs(3));
  EXPECT_EQ(report.errors(), 3);
  EXPECT_FALSE(report.ok());
  const validation::Problem& unknown = report.problems[1];
  EXPECT_EQ(unknown.path, "sesion");
  EXPECT_EQ(unknown.message, "unknown field");
  EXPECT_EQ(unknown.suggestion, "did you mean \"session\"?");
  EXPECT_EQ(unknown.line, 2);
  EXPECT_EQ(unknown.column, 1);
  EXPECT_EQ(report.problems[0].path, "schema");
  EXPECT_EQ(report.problems[2].path, "assertions[0].agent_sequence.mach");
  EXPECT_EQ(report.problems[2].line, 4);
}

TEST(ValidateSpecTest, WrongTypesSuggestTheFormTheValueTakes) {
  validation::Report report = ValidateSpec(
      "assertions:\n"
      "  - count: {select: {kind: miss}, eq: seven}\n"
      "  - count: {eq: 2.0}\n"
      "  - select: {kind: tool_call}\n"
      "    expect: {count: [1]}\n"
      "  - no_misses: maybe\n"
      "  - tool_calls: {calls: read_file}\n",
      "s.yaml");
  ASSERT_THAT(report.problems, SizeIs(5));
  EXPECT_EQ(report.problems[0].path, "assertions[0].count.eq");
  EXPECT_EQ(report.problems[0].message, "expected an integer, got \"seven\"");
  EXPECT_EQ(report.problems[0].suggestion, "write an integer of at least 0, e.g. `eq: 1`");
  // A whole number in another form: the integer it spells.
  EXPECT_EQ(report.problems[1].suggestion, "write it as an integer: `eq: 2`");
  // A value of the wrong shape: the shapes it may take.
  EXPECT_EQ(report.problems[2].path, "assertions[2].expect.count");
  EXPECT_THAT(report.problems[2].suggestion, HasSubstr("`count: {ge: 1}`"));
  EXPECT_EQ(report.problems[3].suggestion, "write `no_misses: true`");
  EXPECT_THAT(report.problems[4].suggestion, HasSubstr("`calls: [read_file, "));
  for (const validation::Problem& p : report.problems) {
    EXPECT_NE(p.suggestion, "") << p.path << ": " << p.message;
  }
}

TEST(ValidateSpecTest, AgreesWithParseSpec) {
  for (const std::string& text :
       {std::string(kFull), std::string(""), std::string("assertions: []\n"),
        std::string("schema: understudy.spec/v1\nassertions: [{all_consumed: true}]\n"),
        std::string("assertions: [{count: {eq: 0, ne: 1}}]\n")}) {
    validation::Report report = ValidateSpec(text, "spec.yaml");
    absl::StatusOr<std::vector<v1::Assertion>> parsed = ParseSpec(text, "spec.yaml");
    EXPECT_EQ(report.ok(), parsed.ok()) << text;
    if (!parsed.ok()) {
      EXPECT_EQ(validation::FormatReport(report), parsed.status().message());
    }
  }
}

TEST(ParseSpecTest, HostileInputIsBounded) {
  std::string big = "assertions:\n  - no_misses: true\n#";
  big.append(kMaxSpecBytes, 'x');
  EXPECT_THAT(Problems(big), HasSubstr("more than the 1048576 allowed; refused"));

  std::string deep = "assertions:\n  - count: {select: {attributes: {a: ";
  for (int i = 0; i < 80; ++i) deep += "[";
  for (int i = 0; i < 80; ++i) deep += "]";
  deep += "}}, eq: 0}\n";
  EXPECT_THAT(Problems(deep), HasSubstr("nesting deeper than 64 levels"));

  // Anchors that would expand to billions of nodes.
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c) {
    laughs += absl::StrCat(std::string(1, c), ": &", std::string(1, c), " [");
    for (int i = 0; i < 10; ++i) laughs += absl::StrCat(i ? ", " : "", "*", std::string(1, c - 1));
    laughs += "]\n";
  }
  laughs += "assertions: [{no_misses: true}]\n";
  EXPECT_THAT(Problems(laughs), HasSubstr("nodes once aliases are expanded"));
}

// ---------------------------------------------------------------------------
// Evaluation

TEST(EvaluateSpecTest, TheFullSpecPassesOnTheReviewLoop) {
  v1::RunSummary summary;
  std::vector<v1::AssertionResult> results = EvalSpec(kFull, ReviewLoop(), &summary);
  ASSERT_THAT(results, SizeIs(8));
  std::vector<std::string> names;
  for (const v1::AssertionResult& r : results) {
    EXPECT_TRUE(r.passed()) << r.name() << ": " << r.explanation();
    names.push_back(r.name());
  }
  EXPECT_THAT(names, ElementsAre("executor hands over to verification", "agent_sequence",
                                 "phase_transitions", "tool_calls", "feedback_propagated", "count",
                                 "no_misses", "all_consumed"));
  EXPECT_EQ(results[0].explanation(),
            "select (kind=tool_call agent=executor tool=continue) matched 2 events (#9, #15), as "
            "expected (at least 1); the last (#15) has gen_ai.tool.call.arguments containing "
            "{\"phase\":\"verification\"}");
  EXPECT_THAT(Seqs(results[0]), ElementsAre(9, 15));
}

TEST(EvaluateSpecTest, AllConsumedNeedsAnEndedRun) {
  const std::vector<v1::TraceEvent> events = ReviewLoop();
  EXPECT_THAT(EvaluateSpec(kFull, "spec.yaml", TraceView{&events, nullptr}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       StartsWith("spec.yaml: assertions[7]: all_consumed: the run is still "
                                  "active; end it first")));
}

TEST(EvaluateSpecTest, ParsedAssertionsEvaluateLikeTheDocument) {
  absl::StatusOr<std::vector<v1::Assertion>> parsed = ParseSpec(kFull, "spec.yaml");
  ASSERT_THAT(parsed, IsOk());
  v1::RunSummary summary;
  summary.add_unconsumed()->set_seq(7);
  std::vector<v1::TraceEvent> events = ReviewLoop();
  events[14].mutable_attributes()->at("gen_ai.tool.call.arguments") = R"({"phase":"done"})";
  const std::vector<v1::AssertionResult> direct = EvalSpec(kFull, events, &summary);
  ASSERT_EQ(direct.size(), parsed->size());
  for (size_t i = 0; i < parsed->size(); ++i) {
    absl::StatusOr<v1::AssertionResult> r = Evaluate((*parsed)[i], TraceView{&events, &summary});
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->DebugString(), direct[i].DebugString());
  }
  EXPECT_FALSE(direct[0].passed());
  EXPECT_FALSE(direct[7].passed());
}

TEST(EvaluateSpecTest, PositionPicksTheEventTheAttributesAreCheckedOn) {
  const std::string first = R"yaml(assertions:
  - select: {kind: tool_call, agent: executor, tool: continue}
    position: first
    expect:
      attributes:
        gen_ai.tool.call.arguments: {json_subset: {phase: verification}}
)yaml";
  v1::AssertionResult r = RunOne(first);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.name(), "select kind=tool_call agent=executor tool=continue");
  EXPECT_EQ(
      r.explanation(),
      "select (kind=tool_call agent=executor tool=continue) matched 2 events (#9, #15); "
      "the first (#9) does not hold: gen_ai.tool.call.arguments: expected JSON containing "
      "{\"phase\":\"verification\"}, got {\"files\":[\"src/login.py\"],\"phase\":\"execute\"} "
      "(at phase: expected \"verification\", got \"execute\")");
  EXPECT_EQ(r.divergence_index(), 0);
  EXPECT_EQ(r.expected(),
            "the first event: gen_ai.tool.call.arguments containing {\"phase\":\"verification\"}");
  EXPECT_EQ(r.actual(),
            "matched [#9, #15]; #9: gen_ai.tool.call.arguments = "
            "\"{\\\"phase\\\":\\\"execute\\\",\\\"files\\\":[\\\"src/login.py\\\"]}\"");

  v1::AssertionResult index1 = RunOne(
      absl::StrCat("assertions:\n  - select: {kind: tool_call, agent: executor, tool: continue}\n"
                   "    position: 1\n"
                   "    expect: {attributes: {gen_ai.tool.call.arguments: {json_subset: {phase: "
                   "verification}}}}\n"));
  EXPECT_TRUE(index1.passed()) << index1.explanation();
  EXPECT_THAT(index1.explanation(), HasSubstr("; the one at index 1 (#15) has "));

  v1::AssertionResult past = RunOne(
      "assertions:\n  - select: {kind: tool_call, agent: executor, tool: continue}\n"
      "    position: 2\n"
      "    expect: {attributes: {gen_ai.tool.name: continue}}\n");
  EXPECT_FALSE(past.passed());
  EXPECT_EQ(past.explanation(),
            "select (kind=tool_call agent=executor tool=continue) matched 2 events (#9, #15); "
            "there is no event at index 2 (0 is the first) for gen_ai.tool.name = \"continue\"");
}

TEST(EvaluateSpecTest, PositionAllChecksEveryMatchedEvent) {
  v1::AssertionResult r = RunOne(R"yaml(assertions:
  - name: every continue verifies
    select: {kind: tool_call, tool: continue}
    expect:
      attributes:
        gen_ai.tool.call.arguments: {json_subset: {phase: verification}}
        gen_ai.agent.name: {matches: '^(executor|orchestrator)$'}
)yaml");
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.name(), "every continue verifies");
  EXPECT_EQ(r.explanation(),
            "select (kind=tool_call tool=continue) matched 3 events (#3, #9, #15); 2 of 3 (#3, #9) "
            "do not hold: event #3: gen_ai.tool.call.arguments: expected JSON containing "
            "{\"phase\":\"verification\"}, got {\"phase\":\"discovery\"} (at phase: expected "
            "\"verification\", got \"discovery\"); event #9: gen_ai.tool.call.arguments: expected "
            "JSON containing {\"phase\":\"verification\"}, got "
            "{\"files\":[\"src/login.py\"],\"phase\":\"execute\"} (at phase: expected "
            "\"verification\", got \"execute\")");
  EXPECT_EQ(r.divergence_index(), 0);

  v1::AssertionResult ok = RunOne(R"yaml(assertions:
  - select: {kind: tool_call, agent: executor}
    expect:
      attributes:
        gen_ai.agent.name: executor
        gen_ai.tool.call.id: {matches: '^call-\d+$'}
)yaml");
  EXPECT_TRUE(ok.passed()) << ok.explanation();
  EXPECT_EQ(ok.explanation(),
            "select (kind=tool_call agent=executor) matched 3 events (#6, #9, #15); all 3 of them "
            "have gen_ai.agent.name = \"executor\" and gen_ai.tool.call.id matching /^call-\\d+$/");
}

TEST(EvaluateSpecTest, AttributeExpectationsExplainWhatWasThere) {
  v1::AssertionResult r = RunOne(R"yaml(assertions:
  - select: {kind: tool_result}
    expect:
      attributes:
        gen_ai.tool.name: {equals: write_file}
        gen_ai.tool.call.result: {json_subset: {ok: true}}
        error.type: {matches: .}
)yaml");
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.explanation(),
            "select (kind=tool_result) matched 1 event (#7); it (#7) does not hold: error.type: "
            "missing (expected a match for /./); gen_ai.tool.call.result: expected JSON "
            "containing {\"ok\":true}, got \"def login(user, pw): ...\", which is not JSON; "
            "gen_ai.tool.name: expected \"write_file\", got \"read_file\"");
  EXPECT_EQ(r.actual(),
            "matched [#7]; #7: error.type missing, gen_ai.tool.call.result = \"def login(user, "
            "pw): ...\", gen_ai.tool.name = \"read_file\"");
}

TEST(EvaluateSpecTest, CountExpectations) {
  v1::AssertionResult none = RunOne("assertions:\n  - select: {kind: miss}\n");
  EXPECT_FALSE(none.passed());
  EXPECT_EQ(none.explanation(), "select (kind=miss) matched no events; expected at least 1");

  v1::AssertionResult exact =
      RunOne("assertions:\n  - select: {kind: exchange, phase: execute}\n    expect: {count: 3}\n");
  EXPECT_FALSE(exact.passed());
  EXPECT_EQ(exact.explanation(),
            "select (kind=exchange phase=execute) matched 2 events (#11, #14); expected exactly 3");
  EXPECT_EQ(exact.expected(), "count == 3");

  v1::AssertionResult lt = RunOne(
      "assertions:\n  - select: {kind: exchange, agent: reviewer}\n    expect: {count: {lt: 3}}\n");
  EXPECT_TRUE(lt.passed()) << lt.explanation();

  // The count is over every matched event; position picks for attributes.
  v1::AssertionResult both = RunOne(R"yaml(assertions:
  - select: {kind: phase_transition}
    position: last
    expect:
      count: {gt: 3}
      attributes: {understudy.phase.to: verification}
)yaml");
  EXPECT_FALSE(both.passed());
  EXPECT_EQ(both.explanation(),
            "select (kind=phase_transition) matched 3 events (#4, #10, #16); expected more than 3; "
            "the last (#16) has understudy.phase.to = \"verification\"");
}

TEST(EvaluateSpecTest, SelectorsUseEveryFilterField) {
  v1::AssertionResult r = RunOne(R"yaml(assertions:
  - select:
      kind: [exchange, tool_call]
      agent: executor
      attributes: {understudy.phase: execute}
      attribute_patterns: {understudy.agent.iteration: '^[0-9]+$'}
      min_seq: 10
      max_seq: 20
    expect: {count: 1}
)yaml");
  EXPECT_TRUE(r.passed()) << r.explanation();
  EXPECT_THAT(Seqs(r), ElementsAre(14));
}

TEST(EvaluateSpecTest, BuiltInFailuresKeepTheirExplanations) {
  std::vector<v1::AssertionResult> results = EvalSpec(R"yaml(assertions:
  - name: review before execution
    agent_sequence: {agents: [orchestrator, reviewer, executor], match: prefix}
  - feedback_propagated: {from: reviewer, to: executor, keyword: XSS}
)yaml",
                                                      ReviewLoop());
  ASSERT_THAT(results, SizeIs(2));
  EXPECT_EQ(results[0].name(), "review before execution");
  EXPECT_EQ(results[0].explanation(),
            "agent_sequence (prefix): expected [orchestrator, reviewer, executor] but the run had "
            "[orchestrator, executor, executor, reviewer, executor, reviewer]; they first differ "
            "at position 2: expected \"reviewer\", got \"executor\" (event #5)");
  EXPECT_FALSE(results[1].passed());
  EXPECT_THAT(results[1].explanation(), HasSubstr("no answer of reviewer has it"));
}

}  // namespace
}  // namespace trace
}  // namespace understudy
