#include "testgen/analyze.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "re2/re2.h"
#include "validation/utf8.h"

namespace understudy {
namespace testgen {
namespace {

// "FAIL name: explanation" anywhere on a line (pytest prefixes "E   ",
// node "AssertionError [ERR_ASSERTION]: ", gtest quotes it in a matcher's
// listener text).
const LazyRE2 kFailLine = {R"(FAIL ([^:\n]{1,200}): (.+)$)"};
// The run's sequence as the sequence checks print it.
const LazyRE2 kRunHad = {
    R"(but the run had (.*?); (?:they first differ|the expected|it occurs|the closest))"};
const LazyRE2 kCommandLine = {
    R"((the command .{0,300}? (?:exited with status \d+|timed out after \S+|was killed by \S+(?: \d+)?)))"};

std::string FirstLines(absl::string_view text, int n) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  if (static_cast<int>(lines.size()) > n) lines.resize(n);
  return validation::Shorten(absl::StrJoin(lines, "\n"), 1200);
}

// The kind of check an explanation is about: its first word
// ("agent_sequence (exact): ..." -> agent_sequence).
std::string KindOf(absl::string_view explanation) {
  static const LazyRE2 kKind = {R"(^(agent_sequence|phase_transitions|tool_calls|feedback_propagated|count|no_misses|all_consumed|select)\b)"};
  std::string kind;
  RE2::PartialMatch(std::string(explanation), *kKind, &kind);
  return kind;
}

Finding FromCheck(absl::string_view test, const std::string& name, const std::string& explanation,
                  absl::string_view session) {
  Finding f;
  f.test = std::string(test);
  f.check = name;
  f.explanation = explanation;
  f.kind = "expectation";
  const std::string kind = KindOf(explanation);
  std::string actual;
  if (RE2::PartialMatch(explanation, *kRunHad, &actual)) f.actual = actual;
  const std::string replay_hint =
      session.empty() ? "understudy record --mode new --session SESSION -- COMMAND"
                      : absl::StrCat("understudy record --mode new --session ", session,
                                     " -- COMMAND");
  if (kind == "no_misses") {
    f.kind = "drift";
    f.suggestion = absl::StrCat(
        "the recording drifted: the system sent requests the session does not hold (each miss "
        "above names the field that differs from the closest recorded request). If the change "
        "is intended, record the session again (",
        replay_hint, ") and regenerate the spec; otherwise fix the system under test");
  } else if (kind == "all_consumed") {
    f.kind = "drift";
    f.suggestion =
        absl::StrCat("the recording drifted: recorded exchanges were never used, so the system made "
                     "fewer calls than when it was recorded. If that is intended, record again (",
                     replay_hint, ") and regenerate the spec");
  } else if (kind == "agent_sequence" || kind == "phase_transitions" || kind == "tool_calls") {
    const std::string field = kind == "agent_sequence"      ? "agents"
                              : kind == "phase_transitions" ? "phases"
                                                            : "calls";
    f.suggestion =
        f.actual.empty()
            ? absl::StrCat("if the new behaviour is intended, change the ", kind,
                           " expectation to what the run did (see the explanation); otherwise "
                           "fix the system under test")
            : absl::StrCat("if the new behaviour is intended, change the expectation to what the "
                           "run did: ",
                           kind, ": {", field, ": ", f.actual,
                           "} (or loosen it with match: subsequence / prefix); otherwise fix the "
                           "system under test");
  } else if (kind == "feedback_propagated") {
    f.suggestion =
        "the feedback did not travel as recorded: if the wording changed on purpose, use a "
        "keyword the new answer and the later request both carry; otherwise make sure the "
        "receiving agent is given the other's answer";
  } else if (kind == "count") {
    f.suggestion =
        "change the expected count to what the run had (see the explanation), or fix the "
        "system under test";
  } else {
    f.suggestion =
        "change the expectation of this check to what the run did (see the explanation), or fix "
        "the system under test";
  }
  return f;
}

}  // namespace

std::vector<Finding> AnalyzeMessage(absl::string_view test, absl::string_view message) {
  std::vector<Finding> findings;
  // The session, when the message names it ("run R of session S fails ...").
  std::string session;
  static const LazyRE2 kSession = {R"(of session (\S+) fails)"};
  const std::string text(message);
  RE2::PartialMatch(text, *kSession, &session);

  std::string command;
  if (RE2::PartialMatch(text, *kCommandLine, &command)) {
    Finding f;
    f.test = std::string(test);
    f.check = "command";
    f.kind = "command";
    f.explanation = command;
    f.suggestion =
        "the system under test failed against the replay: read its output in the message. A "
        "request the recording does not hold is answered with an error in strict replay, so a "
        "command failing this way usually means the recording drifted (see no_misses below, "
        "when the spec checks it)";
    findings.push_back(std::move(f));
  }
  for (const std::string& line : std::vector<std::string>(absl::StrSplit(message, '\n'))) {
    std::string name;
    std::string explanation;
    if (!RE2::PartialMatch(line, *kFailLine, &name, &explanation)) continue;
    // The combined verdict of a spec ("FAIL spec: spec: 1 passed, 2 failed
    // of 3 checks") heads the lines of its checks.
    if (absl::StartsWith(explanation, "spec: ")) continue;
    findings.push_back(FromCheck(test, name, explanation, session));
  }
  if (findings.empty()) {
    Finding f;
    f.test = std::string(test);
    f.check = "test";
    f.kind = "error";
    f.explanation = FirstLines(message, 12);
    f.suggestion =
        "no check failed: the test itself could not run. Fix what the message names (a compile "
        "or syntax error: validate_test_code; a server that did not start: its database and "
        "binary)";
    findings.push_back(std::move(f));
  }
  return findings;
}

std::vector<Finding> AnalyzeResults(const TestRun& run) {
  std::vector<Finding> findings;
  for (const TestResult& t : run.tests) {
    if (t.outcome != Outcome::kFailed && t.outcome != Outcome::kError) continue;
    std::vector<Finding> more = AnalyzeMessage(t.name, t.message);
    findings.insert(findings.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  }
  return findings;
}

nlohmann::json ToJson(const std::vector<Finding>& findings) {
  nlohmann::json list = nlohmann::json::array();
  for (const Finding& f : findings) {
    list.push_back({{"test", validation::SanitizeUtf8(f.test)},
                    {"check", validation::SanitizeUtf8(f.check)},
                    {"kind", f.kind},
                    {"explanation", validation::SanitizeUtf8(f.explanation)},
                    {"suggestion", validation::SanitizeUtf8(f.suggestion)},
                    {"actual", validation::SanitizeUtf8(f.actual)}});
  }
  return {{"ok", findings.empty()}, {"findings", std::move(list)}};
}

}  // namespace testgen
}  // namespace understudy
