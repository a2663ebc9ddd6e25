#include "testgen/analyze.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "re2/re2.h"
#include "trace/spec.h"
#include "trace/spec_writer.h"
#include "validation/utf8.h"

namespace understudy {
namespace testgen {
namespace {

// "FAIL name: explanation" anywhere on a line (pytest may prefix "E   ",
// node "AssertionError [ERR_ASSERTION]: "); the prefix is kept to
// recognise the lines that continue the explanation.
const LazyRE2 kFailLine = {R"(^(.*?)FAIL ([^:\n]{1,200}): (.+)$)"};
// The lists of the sequence checks.
const LazyRE2 kExpected = {R"(: expected (\[.*?\]) but the run had )"};
const LazyRE2 kRunHad = {
    R"(but the run had (.*?); (?:they first differ|the expected|it occurs|the closest))"};
const LazyRE2 kCommandLine = {
    R"((the command .{0,300}? (?:exited with status \d+|timed out after \S+|was killed by \S+(?: \d+)?)))"};
// The labels that start the sequence checks' explanations.
const LazyRE2 kAgentLabel = {
    R"(^agent_sequence \((exact|prefix|subsequence)(, repeats collapsed)?\): expected )"};
const LazyRE2 kPhaseLabel = {R"(^phase_transitions \((exact|prefix|subsequence)\): expected )"};
const LazyRE2 kToolLabel = {
    R"(^tool_calls(?: by (.+?))? \((exact|prefix|subsequence)\): expected )"};
// How the assertions shorten a long value (trace/render.h Shorten).
const LazyRE2 kShortened = {R"(\.\.\. \(\d+ bytes\)$)"};
const LazyRE2 kShortenedName = {R"(^[^(]*\.\.\. \(\d+ bytes\))"};
const LazyRE2 kShortenedAtStart = {R"(^(\.\.\. \(\d+ bytes\)))"};

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

// A failed check of the report: its name and its explanation with the
// lines that continue it.
struct FailedCheck {
  std::string name;
  std::string explanation;
};

// The report's failed checks, in order. A check's explanation goes on over
// the lines after it that carry the same prefix followed by indentation (a
// miss report lists each differing field on its own "  PATH: recorded ...
// got ..." line), up to the next PASS or FAIL line.
std::vector<FailedCheck> FailedChecks(absl::string_view message) {
  const std::vector<std::string> lines = absl::StrSplit(message, '\n');
  std::vector<FailedCheck> checks;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string prefix;
    FailedCheck check;
    if (!RE2::PartialMatch(lines[i], *kFailLine, &prefix, &check.name, &check.explanation)) {
      continue;
    }
    for (size_t j = i + 1; j < lines.size(); ++j) {
      absl::string_view rest = lines[j];
      if (!absl::ConsumePrefix(&rest, prefix) || rest.empty() || (rest[0] != ' ' && rest[0] != '\t')) {
        break;
      }
      const absl::string_view body = absl::StripLeadingAsciiWhitespace(rest);
      if (body.empty() || absl::StartsWith(body, "FAIL ") || absl::StartsWith(body, "PASS ")) break;
      absl::StrAppend(&check.explanation, "\n", rest);
      i = j;
    }
    checks.push_back(std::move(check));
  }
  return checks;
}

// The continuation lines of an explanation, stripped: the fields a miss
// differs in.
std::string ContinuationLines(absl::string_view explanation) {
  std::vector<std::string> out;
  std::vector<absl::string_view> lines = absl::StrSplit(explanation, '\n');
  for (size_t i = 1; i < lines.size(); ++i) {
    const absl::string_view line = absl::StripAsciiWhitespace(lines[i]);
    if (!line.empty()) out.emplace_back(line);
  }
  return absl::StrJoin(out, "\n");
}

// The items of a list as the assertions show it ("[a, b]"), split at the
// ", " between items (not inside the parentheses, braces, brackets and
// JSON strings of a tool call's arguments). nullopt for a list cut short
// ("[a, ..., ... and 3 more]") or one that is not a list.
std::optional<std::vector<std::string>> SplitList(absl::string_view list) {
  if (!absl::ConsumePrefix(&list, "[") || !absl::ConsumeSuffix(&list, "]")) return std::nullopt;
  std::vector<std::string> items;
  if (list.empty()) return items;
  int depth = 0;
  bool in_string = false;
  size_t start = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const char c = list[i];
    // Where a call's arguments were shortened, mid-string maybe, its
    // parentheses close right after the marker.
    if (depth > 0 && c == '.') {
      absl::string_view rest = list.substr(i);
      std::string marker;
      if (RE2::PartialMatch(re2::StringPiece(rest.data(), rest.size()), *kShortenedAtStart,
                            &marker)) {
        i += marker.size() - 1;
        in_string = false;
        depth = 1;
        continue;
      }
    }
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"' && depth > 0) {
      in_string = true;
    } else if (c == '(' || c == '{' || c == '[') {
      ++depth;
    } else if ((c == ')' || c == '}' || c == ']') && depth > 0) {
      --depth;
    } else if (depth == 0 && c == ',' && i + 1 < list.size() && list[i + 1] == ' ') {
      items.emplace_back(list.substr(start, i - start));
      start = i + 2;
      ++i;
    }
  }
  items.emplace_back(list.substr(start));
  static const LazyRE2 kMore = {R"(^\.\.\. and \d+ more$)"};
  if (RE2::FullMatch(items.back(), *kMore)) return std::nullopt;
  return items;
}

// The `match: M` of a replacement, "" for exact (the default).
std::string MatchField(const std::string& match) {
  return match == "exact" ? "" : absl::StrCat(", match: ", match);
}

// `name: NAME, ` when the failed item had a name (the report names an
// unnamed item by its check's kind).
std::string NameField(const std::string& check, absl::string_view kind) {
  return check == kind ? "" : absl::StrCat("name: ", trace::SpecScalar(check), ", ");
}

// agent_sequence or phase_transitions as the run had it: `items` are names
// as the report shows them; unnamed ones ("(none)") cannot be stated and
// are left out, which only a subsequence comparison allows (as spec_gen
// does). nullopt when a name was shortened.
std::optional<std::string> NamesItem(const std::string& check, absl::string_view kind,
                                     absl::string_view field, std::vector<std::string> items,
                                     std::string match, bool collapsed) {
  std::vector<std::string> shown;
  for (const std::string& item : items) {
    if (item == "(none)") {
      match = "subsequence";
      continue;
    }
    if (RE2::PartialMatch(item, *kShortened)) return std::nullopt;
    shown.push_back(trace::SpecScalar(item));
  }
  return absl::StrCat("{", NameField(check, kind), kind, ": {", field, ": [",
                      absl::StrJoin(shown, ", "), "]", MatchField(match),
                      collapsed ? ", collapse_repeats: true" : "", "}}");
}

// A tool call as the report shows it: NAME, or NAME(ARGUMENTS) with the
// arguments' JSON text (shortened when long).
struct ShownCall {
  std::string name;
  // The arguments, when shown whole and a JSON object.
  std::optional<nlohmann::json> arguments;
};

std::optional<ShownCall> ParseCall(const std::string& item) {
  if (RE2::PartialMatch(item, *kShortenedName)) return std::nullopt;
  ShownCall call;
  const size_t open = item.find('(');
  if (open == std::string::npos || item.back() != ')') {
    call.name = item;
    return call;
  }
  call.name = item.substr(0, open);
  const std::string text = item.substr(open + 1, item.size() - open - 2);
  if (!RE2::PartialMatch(text, *kShortened)) {
    nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object()) call.arguments = std::move(parsed);
  }
  return call;
}

// tool_calls as the run had it, keeping of each call the arguments the
// failed item checked for calls of that tool (their values as the run had
// them); a call whose arguments the report shortened keeps its name only,
// which matches any arguments.
std::optional<std::string> ToolCallsItem(const std::string& check, const std::string& agent,
                                         const std::string& match,
                                         const std::vector<std::string>& expected,
                                         const std::vector<std::string>& actual) {
  std::map<std::string, std::set<std::string>> checked;  // tool -> argument names
  for (const std::string& item : expected) {
    std::optional<ShownCall> call = ParseCall(item);
    if (!call.has_value() || !call->arguments.has_value()) continue;
    for (auto it = call->arguments->begin(); it != call->arguments->end(); ++it) {
      checked[call->name].insert(it.key());
    }
  }
  std::vector<std::string> calls;
  for (const std::string& item : actual) {
    std::optional<ShownCall> call = ParseCall(item);
    if (!call.has_value() || call->name.empty()) return std::nullopt;
    nlohmann::json kept = nlohmann::json::object();
    if (call->arguments.has_value()) {
      for (const std::string& key : checked[call->name]) {
        auto it = call->arguments->find(key);
        if (it != call->arguments->end()) kept[key] = *it;
      }
    }
    calls.push_back(kept.empty() ? trace::SpecScalar(call->name)
                                 : absl::StrCat("{name: ", trace::SpecScalar(call->name),
                                                ", arguments: ", trace::SpecFlow(kept), "}"));
  }
  return absl::StrCat("{", NameField(check, "tool_calls"), "tool_calls: {",
                      agent.empty() ? "" : absl::StrCat("agent: ", trace::SpecScalar(agent), ", "),
                      "calls: [", absl::StrJoin(calls, ", "), "]", MatchField(match), "}}");
}

// The item that states what the run did in place of a failed sequence
// check, checked to read back; nullopt when the report does not show
// enough of the run to write it.
std::optional<std::string> Replacement(const std::string& check, absl::string_view kind,
                                       const std::string& explanation) {
  const std::string first_line(explanation.substr(0, explanation.find('\n')));
  std::string expected_list;
  std::string actual_list;
  if (!RE2::PartialMatch(first_line, *kExpected, &expected_list) ||
      !RE2::PartialMatch(first_line, *kRunHad, &actual_list)) {
    return std::nullopt;
  }
  std::optional<std::vector<std::string>> expected = SplitList(expected_list);
  std::optional<std::vector<std::string>> actual = SplitList(actual_list);
  if (!actual.has_value()) return std::nullopt;
  std::optional<std::string> item;
  std::string match;
  std::string collapsed;
  std::string agent;
  if (kind == "agent_sequence" && RE2::PartialMatch(first_line, *kAgentLabel, &match, &collapsed)) {
    item = NamesItem(check, kind, "agents", *actual, match, !collapsed.empty());
  } else if (kind == "phase_transitions" && RE2::PartialMatch(first_line, *kPhaseLabel, &match)) {
    item = NamesItem(check, kind, "phases", *actual, match, false);
  } else if (kind == "tool_calls" && RE2::PartialMatch(first_line, *kToolLabel, &agent, &match)) {
    if (RE2::PartialMatch(agent, *kShortened) || agent == "(none)") return std::nullopt;
    item = ToolCallsItem(check, agent, match, expected.value_or(std::vector<std::string>()),
                         *actual);
  }
  if (!item.has_value()) return std::nullopt;
  // Spec text that does not read back would only mislead.
  const validation::Report report = trace::ValidateSpec(
      absl::StrCat("schema: understudy.spec/v1\nassertions:\n  - ", *item, "\n"), "replacement");
  if (!report.ok()) return std::nullopt;
  return item;
}

// What one failure message says besides its checks.
struct MessageFacts {
  // The session replayed (NAME, without a version), when the message names it.
  std::string session;
  // The run, when the message names it.
  std::string run;
  // A finding of the message is a drift or a failed command: the checks
  // that follow may fail only because of it.
  bool upstream_failure = false;
};

std::string Quoted(absl::string_view s) { return absl::StrCat("`", s, "`"); }

Finding FromCheck(absl::string_view test, const FailedCheck& failed, const MessageFacts& facts) {
  Finding f;
  f.test = std::string(test);
  f.check = failed.name;
  f.explanation = failed.explanation;
  f.kind = "expectation";
  const std::string kind = KindOf(failed.explanation);
  const std::string first_line(failed.explanation.substr(0, failed.explanation.find('\n')));
  std::string actual;
  if (RE2::PartialMatch(first_line, *kRunHad, &actual)) f.actual = actual;
  const std::string record_command = absl::StrCat(
      "understudy record --mode new --session ", facts.session.empty() ? "SESSION" : facts.session,
      " --upstream PROVIDER=URL -- COMMAND");
  const std::string regenerate =
      facts.run.empty() ? std::string("generate_test_spec on the run")
                        : absl::StrCat("generate_test_spec {run: ", facts.run, "}");
  const std::string first =
      "the failure above (the recording drifted, or the command failed) comes first: this check "
      "may fail only because of it. Fix that and run the test again; ";

  if (kind == "no_misses") {
    f.kind = "drift";
    f.actual = ContinuationLines(failed.explanation);
    f.action = FixAction::kRecord;
    f.suggestion = absl::StrCat(
        "the recording drifted: the system sent requests the session does not hold (each miss "
        "names the fields that differ from the closest recorded request). If the change is "
        "intended, record the session again (",
        record_command, ") and write the spec anew from the new recording; otherwise fix the "
        "system under test");
  } else if (kind == "all_consumed") {
    f.kind = "drift";
    static const LazyRE2 kUnused = {R"(never used: (.*)$)"};
    RE2::PartialMatch(first_line, *kUnused, &f.actual);
    f.action = FixAction::kRecord;
    f.suggestion = absl::StrCat(
        "the recording drifted: recorded exchanges were never used, so the system made fewer "
        "calls than when it was recorded. If that is intended, record again (",
        record_command, ") and write the spec anew from the new recording");
  } else if (facts.upstream_failure) {
    f.suggestion = absl::StrCat(first, "if it still fails, see the explanation");
  } else if (kind == "agent_sequence" || kind == "phase_transitions" || kind == "tool_calls") {
    std::optional<std::string> item = Replacement(f.check, kind, failed.explanation);
    if (item.has_value()) {
      f.action = FixAction::kReplace;
      f.replacement = *item;
      f.suggestion = absl::StrCat(
          "if the new behaviour is intended, replace the item ", Quoted(f.check),
          " with what the run did: ", Quoted(f.replacement),
          " (or loosen it with match: subsequence / prefix); otherwise fix the system under test");
    } else {
      f.suggestion = absl::StrCat(
          "if the new behaviour is intended, write the ", kind,
          " check anew from what the run did (the report shows only part of it: ", regenerate,
          " writes it whole); otherwise fix the system under test");
    }
  } else if (kind == "feedback_propagated") {
    std::string from;
    std::string to;
    static const LazyRE2 kPair = {R"(to go from (.+?) to (.+?)(?:, but|: ))"};
    const bool named = RE2::PartialMatch(first_line, *kPair, &from, &to);
    f.action = FixAction::kRemove;
    f.suggestion = absl::StrCat(
        "if the new behaviour is intended, remove the item ", Quoted(f.check), ": ",
        named ? absl::StrCat("the feedback no longer goes from ", from, " to ", to)
              : std::string("the feedback no longer travels"),
        " in this run (", regenerate,
        " finds the feedback that does); otherwise make sure the receiving agent is given the "
        "other's answer");
  } else if (kind == "count") {
    static const LazyRE2 kHad = {R"(, but (none|\d+)\b)"};
    std::string had;
    if (RE2::PartialMatch(first_line, *kHad, &had)) f.actual = had == "none" ? "0" : had;
    f.suggestion =
        f.actual.empty()
            ? std::string("change the expected count to what the run had (see the explanation), "
                          "or fix the system under test")
            : absl::StrCat("if the new behaviour is intended, change the item's comparison to "
                           "what the run had: ",
                           Quoted(absl::StrCat("eq: ", f.actual)),
                           "; otherwise fix the system under test");
  } else {
    f.suggestion =
        "change the expectation of this check to what the run did (see the explanation), or fix "
        "the system under test";
  }
  return f;
}

}  // namespace

absl::string_view FixActionName(FixAction action) {
  switch (action) {
    case FixAction::kReplace:
      return "replace";
    case FixAction::kRemove:
      return "remove";
    case FixAction::kRecord:
      return "record";
    case FixAction::kNone:
      break;
  }
  return "none";
}

std::vector<Finding> AnalyzeMessage(absl::string_view test, absl::string_view message) {
  std::vector<Finding> findings;
  const std::string text(message);
  MessageFacts facts;
  // The session and the run, when the message names them ("run R of
  // session S fails ...", "(run R)", a miss's "session \"S@2\"").
  static const LazyRE2 kRunOfSession = {R"(\brun (\S+) of session (\S+) fails)"};
  static const LazyRE2 kRunAlone = {R"(\(run ([^\s)]+)\))"};
  static const LazyRE2 kMissSession = {R"re(session \\?"([^"@\\]+)@\d+\\?")re"};
  if (!RE2::PartialMatch(text, *kRunOfSession, &facts.run, &facts.session)) {
    RE2::PartialMatch(text, *kRunAlone, &facts.run);
    RE2::PartialMatch(text, *kMissSession, &facts.session);
  }

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
    facts.upstream_failure = true;
  }
  std::vector<FailedCheck> checks;
  for (FailedCheck& check : FailedChecks(message)) {
    // The combined verdict of a spec ("FAIL spec: spec: 1 passed, 2 failed
    // of 3 checks") heads the lines of its checks.
    if (absl::StartsWith(check.explanation, "spec: ")) continue;
    const std::string kind = KindOf(check.explanation);
    if (kind == "no_misses" || kind == "all_consumed") facts.upstream_failure = true;
    checks.push_back(std::move(check));
  }
  for (const FailedCheck& check : checks) findings.push_back(FromCheck(test, check, facts));
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
                    {"actual", validation::SanitizeUtf8(f.actual)},
                    {"action", std::string(FixActionName(f.action))},
                    {"replacement", validation::SanitizeUtf8(f.replacement)}});
  }
  return {{"ok", findings.empty()}, {"findings", std::move(list)}};
}

}  // namespace testgen
}  // namespace understudy
