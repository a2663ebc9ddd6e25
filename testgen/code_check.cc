#include "testgen/code_check.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "validation/utf8.h"

namespace understudy {
namespace testgen {
namespace {

using validation::Problem;
using validation::Report;

constexpr int kMaxSyntaxErrors = 20;

void Add(Report* report, Problem::Severity severity, std::string path, std::string message,
         std::string suggestion, int line, int column = 0) {
  Problem p;
  p.severity = severity;
  p.path = std::move(path);
  p.message = std::move(message);
  p.suggestion = std::move(suggestion);
  p.line = line;
  p.column = column;
  report->problems.push_back(std::move(p));
}

void Error(Report* report, std::string path, std::string message, std::string suggestion,
           int line, int column = 0) {
  Add(report, Problem::Severity::kError, std::move(path), std::move(message),
      std::move(suggestion), line, column);
}

// A tool could not give a verdict: say which and why.
void ToolProblem(Report* report, absl::string_view tool, absl::string_view why) {
  Error(report, "syntax", absl::StrCat("cannot check: ", tool, " ", why),
        absl::StrCat("install ", tool, " or point understudy at it"), 0);
}

// --- Syntax ----------------------------------------------------------------

// Prints {"line", "column", "message", "text"} and exits 1 on a SyntaxError.
constexpr char kPythonCompile[] = R"(import json, sys
try:
    compile(open(sys.argv[1], "rb").read(), sys.argv[2], "exec")
except SyntaxError as e:
    print(json.dumps({"line": e.lineno or 0, "column": e.offset or 0, "message": e.msg,
                      "text": (e.text or "").strip()}))
    sys.exit(1)
)";

void PythonSyntax(const ScratchDir& dir, absl::string_view text, absl::string_view source,
                  const Toolchain& toolchain, Report* report) {
  absl::StatusOr<std::string> file = dir.Write("check.py", text);
  if (!file.ok()) return ToolProblem(report, toolchain.python, file.status().message());
  RunOptions run;
  run.timeout = toolchain.check_timeout;
  absl::StatusOr<CommandResult> result =
      RunCommand({toolchain.python, "-c", kPythonCompile, *file, std::string(source)}, run);
  if (!result.ok()) return ToolProblem(report, toolchain.python, result.status().message());
  if (result->ok()) return;
  nlohmann::json found = nlohmann::json::parse(result->output, nullptr, false);
  if (!found.is_object()) {
    return ToolProblem(report, toolchain.python,
                       absl::StrCat(result->Describe(), ": ",
                                    validation::Shorten(result->output, 300)));
  }
  const std::string message = found.value("message", "invalid syntax");
  const std::string line_text = found.value("text", "");
  Error(report, "syntax", message,
        line_text.empty() ? "fix the Python syntax at this position"
                          : absl::StrCat("fix the Python syntax here: ",
                                         validation::Shorten(line_text, 80)),
        found.value("line", 0), found.value("column", 0));
}

void NodeSyntax(const ScratchDir& dir, absl::string_view text, const Toolchain& toolchain,
                Report* report) {
  // .mjs: the generated files are ES modules (import, top-level await).
  absl::StatusOr<std::string> file = dir.Write("check.mjs", text);
  if (!file.ok()) return ToolProblem(report, toolchain.node, file.status().message());
  RunOptions run;
  run.timeout = toolchain.check_timeout;
  run.spawn.merge_stderr = true;
  absl::StatusOr<CommandResult> result = RunCommand({toolchain.node, "--check", *file}, run);
  if (!result.ok()) return ToolProblem(report, toolchain.node, result.status().message());
  if (result->ok()) return;
  // FILE:LINE
  // <the line>
  //     ^^^
  // <blank>
  // SyntaxError: Unexpected token '}'
  std::vector<std::string> lines = absl::StrSplit(result->output, '\n');
  int line = 0;
  int column = 0;
  std::string message;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (line == 0 && absl::StartsWith(l, *file + ":")) {
      absl::SimpleAtoi(l.substr(file->size() + 1), &line);
      if (i + 2 < lines.size()) {
        const size_t caret = lines[i + 2].find('^');
        if (caret != std::string::npos) column = static_cast<int>(caret) + 1;
      }
    }
    if (message.empty() && RE2::PartialMatch(l, R"(^\w*Error: )")) message = l;
  }
  if (message.empty()) {
    return ToolProblem(report, toolchain.node,
                       absl::StrCat(result->Describe(), ": ",
                                    validation::Shorten(result->output, 300)));
  }
  Error(report, "syntax", message, "fix the JavaScript syntax at this position", line, column);
}

void CppSyntax(const ScratchDir& dir, absl::string_view text, absl::string_view source,
               const Toolchain& toolchain, Report* report) {
  if (!toolchain.has_gtest()) {
    Error(report, "syntax", kNoGtestToolchain, "", 0);
    return;
  }
  absl::StatusOr<std::string> file = dir.Write("check_test.cc", text);
  if (!file.ok()) return ToolProblem(report, toolchain.cxx, file.status().message());
  std::vector<std::string> argv = {toolchain.cxx, "-fsyntax-only"};
  argv.insert(argv.end(), toolchain.gtest_cflags.begin(), toolchain.gtest_cflags.end());
  argv.push_back(*file);
  RunOptions run;
  run.timeout = toolchain.check_timeout;
  run.spawn.merge_stderr = true;
  absl::StatusOr<CommandResult> result = RunCommand(argv, run);
  if (!result.ok()) return ToolProblem(report, toolchain.cxx, result.status().message());
  if (result->ok()) return;
  // FILE:LINE:COL: error: MESSAGE
  const RE2 error_line(absl::StrCat("^", RE2::QuoteMeta(*file), R"(:(\d+):(\d+): (?:fatal )?error: (.*)$)"));
  int found = 0;
  for (const std::string& l : std::vector<std::string>(absl::StrSplit(result->output, '\n'))) {
    int line = 0;
    int column = 0;
    std::string message;
    if (!RE2::FullMatch(l, error_line, &line, &column, &message)) continue;
    if (++found > kMaxSyntaxErrors) break;
    std::string suggestion = "fix the C++ at this position";
    if (absl::StrContains(message, "No such file or directory")) {
      suggestion =
          "include the helper as \"clients/cpp/understudy_testing.h\" and only headers of "
          "GoogleTest, gRPC and Abseil";
    }
    Error(report, "syntax", absl::StrReplaceAll(message, {{*file, std::string(source)}}),
          suggestion, line, column);
  }
  if (found == 0) {
    ToolProblem(report, toolchain.cxx,
                absl::StrCat(result->Describe(), ": ",
                             validation::Shorten(
                                 absl::StrReplaceAll(result->output, {{*file, std::string(source)}}),
                                 400)));
  }
}

// --- Structure -------------------------------------------------------------

// The 1-based line of the first match of `pattern` (multi-line mode), 0
// when none.
int LineOf(absl::string_view text, const std::string& pattern) {
  RE2 re(absl::StrCat("(?m)", pattern));
  re2::StringPiece match;
  if (!RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), re, &match)) {
    // PartialMatch with a capture needs a group; fall back to a search.
    return 0;
  }
  const size_t offset = static_cast<size_t>(match.data() - text.data());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
}

struct Expectation {
  std::string path;      // "structure.test"
  std::string pattern;   // one capture group: where it is
  std::string message;   // when it is missing
  std::string suggestion;
  bool warning = false;
};

std::vector<Expectation> Expectations(Framework framework) {
  switch (framework) {
    case Framework::kPytest:
      return {
          {"structure.helper",
           R"(^\s*((?:from\s+understudy_testing\b|import\s+understudy_testing\b)))",
           "the understudy helper is not imported",
           "add `from understudy_testing import Client, Server` (clients/python)"},
          {"structure.test", R"(^\s*((?:async\s+)?def\s+test\w*\s*\())",
           "no test function: pytest collects functions whose name starts with test",
           "define `def test_replay_satisfies_spec(...):`"},
          {"structure.spec", R"((\.assert_spec\s*\(|\bA\.spec\s*\())",
           "the spec is never checked",
           "call run.assert_spec(SPEC_PATH) after the command has run and the run ended"},
          {"structure.replay", R"((mode\s*=\s*["']replay["']))",
           "no replay run is started", "start one with client.open_run(mode=\"replay\", session=...)",
           true},
      };
    case Framework::kNode:
      return {
          {"structure.helper",
           R"(((?:from|import)\s*\(?\s*['"](?:@understudy/client|[^'"]*clients/node(?:/index\.js)?)['"]|UNDERSTUDY_NODE_CLIENT))",
           "the understudy helper is not imported",
           "import { startServer, connect } from '@understudy/client' (clients/node/index.js)"},
          {"structure.runner", R"((from\s+['"]node:test['"]))", "node:test is not imported",
           "add `import { test, before, after } from 'node:test';`"},
          {"structure.test", R"((\b(?:test|it)\s*\(\s*['"`]))", "no test block",
           "add `test('replay satisfies the spec', async () => { ... });`"},
          {"structure.spec", R"((\bassertSpec\s*\(|\bassertions\.spec\s*\())",
           "the spec is never checked",
           "call await client.assertSpec(runId, readFileSync(SPEC_PATH, 'utf8')) after the run "
           "ended"},
          {"structure.replay", R"((mode\s*:\s*['"]replay['"]))", "no replay run is started",
           "start one with client.startRun({ mode: 'replay', session: SESSION })", true},
      };
    case Framework::kGtest:
      return {
          {"structure.helper", R"((#\s*include\s*[<"](?:[^>"]*/)?understudy_testing\.h[>"]))",
           "the understudy helper is not included",
           "add #include \"clients/cpp/understudy_testing.h\""},
          {"structure.test", R"(^\s*((?:TEST|TEST_F|TEST_P)\s*\())", "no TEST",
           "add TEST(ReplayTest, SatisfiesSpec) { ... }"},
          {"structure.spec", R"((\bSatisfiesSpec\s*\(|\bSpec\s*\())", "the spec is never checked",
           "add EXPECT_THAT(run->trace(), understudy::test::SatisfiesSpec(spec_text));"},
          {"structure.replay", R"((\bReplay\s*\())", "no replay run is started",
           "start one with ScopedRun::Start(channel, understudy::test::Replay(kSession))", true},
      };
  }
  return {};
}

void Structure(absl::string_view text, Framework framework, Report* report) {
  for (const Expectation& e : Expectations(framework)) {
    if (LineOf(text, e.pattern) > 0) continue;
    Add(report, e.warning ? Problem::Severity::kWarning : Problem::Severity::kError, e.path,
        e.message, e.suggestion, 1, 1);
  }
}

}  // namespace

validation::Report CheckTestCode(absl::string_view text, Framework framework,
                                 absl::string_view source, const Toolchain& toolchain) {
  Report report;
  report.source = std::string(source.empty() ? "test" : source);
  if (text.size() > kMaxTestCodeBytes) {
    Error(&report, "", absl::StrCat("the file is ", text.size(), " bytes; at most ",
                                    kMaxTestCodeBytes, " are checked"),
          "", 0);
    return report;
  }
  if (absl::StripAsciiWhitespace(text).empty()) {
    Error(&report, "", "the file is empty", "generate one with generate_tests_from_spec", 0);
    return report;
  }
  if (std::optional<size_t> bad = validation::FindInvalidUtf8(text)) {
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + *bad, '\n'));
    Error(&report, "", "not valid UTF-8", "save the file as UTF-8", line);
    return report;
  }
  absl::StatusOr<std::unique_ptr<ScratchDir>> dir = ScratchDir::Create("understudy-testgen");
  if (!dir.ok()) {
    Error(&report, "syntax", std::string(dir.status().message()), "", 0);
  } else {
    switch (framework) {
      case Framework::kPytest:
        PythonSyntax(**dir, text, report.source, toolchain, &report);
        break;
      case Framework::kNode:
        NodeSyntax(**dir, text, toolchain, &report);
        break;
      case Framework::kGtest:
        CppSyntax(**dir, text, report.source, toolchain, &report);
        break;
    }
  }
  Structure(text, framework, &report);
  report.SortByPosition();
  return report;
}

}  // namespace testgen
}  // namespace understudy
