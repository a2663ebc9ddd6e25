// The tools that turn a run into a test: generate_test_spec,
// generate_tests_from_spec, validate_test_code, run_tests,
// analyze_test_results.
#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "mcpserver/arguments.h"
#include "mcpserver/tool_impl.h"
#include "testgen/analyze.h"
#include "testgen/code_check.h"
#include "testgen/run_source.h"
#include "testgen/spec_gen.h"
#include "testgen/test_gen.h"
#include "testgen/test_runner.h"
#include "testgen/toolchain.h"
#include "trace/spec.h"

namespace understudy {
namespace mcpserver {
namespace {

using nlohmann::json;

json FrameworkSchema() {
  return {{"type", "string"},
          {"enum", {"pytest", "node", "gtest"}},
          {"description", "pytest, node (node:test) or gtest (GoogleTest)"}};
}

json PathSchema(const char* description) {
  return {{"type", "string"}, {"minLength", 1}, {"maxLength", 4096}, {"description", description}};
}

// Writes `content` to the path argument `key` when it is given; the
// resolved path, or "" when not given.
absl::StatusOr<std::string> MaybeWrite(const ToolsOptions& options, const json& args,
                                       const char* key, const std::string& content) {
  const std::string path = Arg<std::string>(args, key, "");
  if (path.empty()) return std::string();
  US_ASSIGN_OR_RETURN(std::string resolved, ResolvePath(options, key, path, /*write=*/true));
  US_RETURN_IF_ERROR(WriteFileAtomically(resolved, content));
  return resolved;
}

// ---------------------------------------------------------------------------

absl::StatusOr<ToolResult> GenerateTestSpec(const ToolsOptions& options, const json& args) {
  if (options.channel == nullptr) {
    return absl::FailedPreconditionError(
        "no understudy server to read the run from (start `understudy mcp` with --db or --addr)");
  }
  testgen::SpecOptions spec_options;
  US_ASSIGN_OR_RETURN(spec_options.match,
                      testgen::ParseMatch(Arg<std::string>(args, "match", "exact")));
  US_ASSIGN_OR_RETURN(spec_options.arguments,
                      testgen::ParseArguments(Arg<std::string>(args, "arguments", "key")));
  spec_options.keep_arguments = Arg<std::vector<std::string>>(args, "keep_arguments", {});
  spec_options.collapse_repeats = Arg<bool>(args, "collapse_repeats", false);
  const json checks = Arg<json>(args, "checks", json::object());
  spec_options.agent_sequence = Arg<bool>(checks, "agent_sequence", true);
  spec_options.tool_calls = Arg<bool>(checks, "tool_calls", true);
  spec_options.phases = Arg<bool>(checks, "phases", true);
  spec_options.feedback = Arg<bool>(checks, "feedback", true);
  spec_options.no_misses = Arg<bool>(checks, "no_misses", true);
  US_ASSIGN_OR_RETURN(testgen::RunData run,
                      testgen::LoadRun(options.channel, args.at("run").get<std::string>(),
                                       options.call_timeout));
  US_ASSIGN_OR_RETURN(testgen::GeneratedSpec spec, testgen::GenerateSpec(run, spec_options));
  US_ASSIGN_OR_RETURN(std::string path, MaybeWrite(options, args, "output_path", spec.yaml));
  json out = {{"spec", spec.yaml}, {"checks", spec.checks}, {"run", spec.run},
              {"session", spec.session}};
  if (!path.empty()) out["path"] = path;
  return Structured(std::move(out));
}

ToolDef GenerateTestSpecDef() {
  json bool_schema = {{"type", "boolean"}};
  return {
      "generate_test_spec",
      "Generate an assertion spec from a run",
      "Writes an assertion spec that passes on the given run: the agents in order, each agent's "
      "tool calls with their key arguments, the phase transitions, feedback that reached another "
      "agent, and no misses. A later run that drifts fails it with an explanation. Choose "
      "`match` (exact, prefix, subsequence) and `arguments` (key, all, none, or keep_arguments) "
      "for how strict it is.",
      ObjectSchema(
          {{"run", {{"type", "string"}, {"minLength", 1}, {"maxLength", 1024},
                    {"description", "a run id, or a session NAME or NAME@VERSION for its latest run"}}},
           {"match", {{"type", "string"}, {"enum", {"exact", "prefix", "subsequence"}},
                      {"description", "how sequences compare (exact)"}}},
           {"arguments", {{"type", "string"}, {"enum", {"key", "all", "none"}},
                          {"description", "which tool-call arguments are checked (key: short "
                                          "scalar values such as paths and phases)"}}},
           {"keep_arguments", {{"type", "array"}, {"items", {{"type", "string"}, {"maxLength", 256}}},
                               {"maxItems", 100},
                               {"description", "check exactly these argument names"}}},
           {"collapse_repeats", {{"type", "boolean"},
                                 {"description", "an agent's consecutive turns count once"}}},
           {"checks", ObjectSchema({{"agent_sequence", bool_schema},
                                    {"tool_calls", bool_schema},
                                    {"phases", bool_schema},
                                    {"feedback", bool_schema},
                                    {"no_misses", bool_schema}})},
           {"output_path", PathSchema("also write the spec here (under the allowed folder)")}},
          {"run"}),
      ObjectSchema({{"spec", {{"type", "string"}, {"description", "the spec, YAML"}}},
                    {"checks", {{"type", "integer"}}},
                    {"run", {{"type", "string"}}},
                    {"session", {{"type", "string"}}},
                    {"path", {{"type", "string"}, {"description", "where it was written"}}}},
                   {"spec", "checks", "run", "session"}),
      false,
      &GenerateTestSpec};
}

// ---------------------------------------------------------------------------

absl::StatusOr<ToolResult> GenerateTestsFromSpec(const ToolsOptions& options, const json& args) {
  testgen::TestOptions test;
  US_ASSIGN_OR_RETURN(test.framework,
                      testgen::ParseFramework(args.at("framework").get<std::string>()));
  const bool inline_spec = args.contains("spec");
  US_ASSIGN_OR_RETURN(test.spec_path,
                      ResolvePath(options, "spec_path", args.at("spec_path").get<std::string>(),
                                  /*write=*/inline_spec));
  if (inline_spec) {
    US_ASSIGN_OR_RETURN(test.spec_text, DocumentArgument(args, "spec"));
    validation::Report report = trace::ValidateSpec(test.spec_text, "spec");
    if (!report.ok()) {
      report.SortByPosition();
      return absl::InvalidArgumentError(absl::StrCat(
          "arguments.spec: the spec does not validate (validate_test_spec shows every problem "
          "with its path):\n",
          validation::FormatReport(report)));
    }
  } else {
    US_ASSIGN_OR_RETURN(test.spec_text, ReadDocument(test.spec_path, "spec_path"));
  }
  test.session = Arg<std::string>(args, "session", "");
  test.command = args.at("command").get<std::vector<std::string>>();
  test.test_name = Arg<std::string>(args, "test_name", "");
  const std::string db = Arg<std::string>(args, "db", "");
  if (!db.empty()) {
    US_ASSIGN_OR_RETURN(test.db, ResolvePath(options, "db", db, /*write=*/false));
  } else {
    test.db = options.db;
  }
  // The test names the spec and the database relative to its own folder
  // (as `gen-test -o` does), so that it runs from another checkout: the
  // folder of output_path, else the allowed folder, where a test written
  // by the caller most likely goes.
  std::string path;
  if (args.contains("output_path")) {
    US_ASSIGN_OR_RETURN(path, ResolvePath(options, "output_path",
                                          args.at("output_path").get<std::string>(),
                                          /*write=*/true));
  }
  std::string folder;
  if (!path.empty()) {
    folder = std::filesystem::path(path).parent_path().string();
  } else {
    US_ASSIGN_OR_RETURN(folder, RootFolder(options, "spec_path"));
  }
  testgen::TestOptions relative = test;
  relative.spec_path = testgen::PathFromFolder(test.spec_path, folder);
  relative.db = testgen::PathFromFolder(test.db, folder);
  US_ASSIGN_OR_RETURN(std::string code, testgen::GenerateTest(relative));
  // The spec goes where the test will read it only once the test is sure.
  if (inline_spec) US_RETURN_IF_ERROR(WriteFileAtomically(test.spec_path, test.spec_text));
  if (!path.empty()) US_RETURN_IF_ERROR(WriteFileAtomically(path, code));
  json out = {{"code", code},
              {"framework", std::string(testgen::FrameworkName(test.framework))},
              {"spec_path", test.spec_path}};
  if (!path.empty()) out["path"] = path;
  return Structured(std::move(out));
}

ToolDef GenerateTestsFromSpecDef() {
  return {
      "generate_tests_from_spec",
      "Generate a test file from a spec",
      "Writes a pytest, node:test or GoogleTest file that starts a replay of the spec's session "
      "with understudy's client helpers, runs the command under test pointed at it "
      "(OPENAI_BASE_URL, ANTHROPIC_BASE_URL, UNDERSTUDY_ADDR, UNDERSTUDY_HTTP, UNDERSTUDY_RUN), and "
      "asserts the spec. Give the spec as `spec` (it is validated, then written to spec_path) or "
      "leave it at spec_path. Check the file with validate_test_code, run it with run_tests.",
      ObjectSchema(
          {{"framework", FrameworkSchema()},
           {"spec_path", PathSchema("the spec file the test reads (under the allowed folder)")},
           {"spec", {{"type", {"string", "object"}},
                     {"description", "the spec, written to spec_path; else spec_path is read"}}},
           {"session", {{"type", "string"}, {"maxLength", 1024},
                        {"description", "the session to replay (default: the spec's session:)"}}},
           {"command", {{"type", "array"}, {"items", {{"type", "string"}, {"maxLength", 65536}}},
                        {"minItems", 1}, {"maxItems", 1000},
                        {"description", "the system under test, argv (no shell)"}}},
           {"db", PathSchema("the golden database (default: the one this server reads)")},
           {"test_name", {{"type", "string"}, {"maxLength", 200}}},
           {"output_path", PathSchema("also write the test here (under the allowed folder)")}},
          {"framework", "spec_path", "command"}),
      ObjectSchema({{"code", {{"type", "string"}}},
                    {"framework", {{"type", "string"}}},
                    {"spec_path", {{"type", "string"}}},
                    {"path", {{"type", "string"}, {"description", "where the test was written"}}}},
                   {"code", "framework", "spec_path"}),
      false,
      &GenerateTestsFromSpec};
}

// ---------------------------------------------------------------------------

absl::StatusOr<ToolResult> ValidateTestCode(const ToolsOptions& options, const json& args) {
  US_ASSIGN_OR_RETURN(testgen::Framework framework,
                      testgen::ParseFramework(args.at("framework").get<std::string>()));
  const bool has_path = args.contains("path");
  if (has_path == args.contains("code")) {
    return absl::InvalidArgumentError("arguments: give exactly one of \"path\" and \"code\"");
  }
  std::string text;
  std::string source = "test";
  if (has_path) {
    US_ASSIGN_OR_RETURN(source,
                        ResolvePath(options, "path", args.at("path").get<std::string>(), false));
    US_ASSIGN_OR_RETURN(text, ReadDocument(source, "path"));
  } else {
    US_ASSIGN_OR_RETURN(text, DocumentArgument(args, "code"));
  }
  validation::Report report =
      testgen::CheckTestCode(text, framework, source, testgen::DefaultToolchain());
  report.SortByPosition();
  return Structured(ReportResult(report));
}

ToolDef ValidateTestCodeDef() {
  return {"validate_test_code",
          "Check a test file",
          "Checks a test file's syntax with the language's own tools (Python's compiler, node "
          "--check, the C++ compiler's -fsyntax-only against understudy's helper headers) and its "
          "structure (a test present, the understudy helper imported, the spec asserted): every "
          "problem with its line and a suggestion.",
          ObjectSchema({{"framework", FrameworkSchema()},
                        {"path", PathSchema("the test file (under the allowed folder)")},
                        {"code", {{"type", "string"}, {"description", "instead of path: the code"}}}},
                       {"framework"}),
          ReportSchema(),
          true,
          &ValidateTestCode};
}

// ---------------------------------------------------------------------------

json TestRunSchema() {
  json test = ObjectSchema({{"name", {{"type", "string"}}},
                            {"outcome", {{"type", "string"},
                                         {"enum", {"passed", "failed", "error", "skipped"}}}},
                            {"message", {{"type", "string"}}},
                            {"seconds", {{"type", "number"}}}},
                           {"name", "outcome", "message", "seconds"});
  return ObjectSchema({{"file", {{"type", "string"}}},
                       {"framework", {{"type", "string"}}},
                       {"ok", {{"type", "boolean"}, {"description", "every test passed"}}},
                       {"passed", {{"type", "integer"}}},
                       {"failed", {{"type", "integer"}}},
                       {"errors", {{"type", "integer"}}},
                       {"skipped", {{"type", "integer"}}},
                       {"seconds", {{"type", "number"}}},
                       {"exit", {{"type", "string"}}},
                       {"tests", {{"type", "array"}, {"items", test}}},
                       {"output", {{"type", "string"}, {"description", "the runner's last output"}}}},
                      {"file", "framework", "ok", "passed", "failed", "errors", "skipped",
                       "seconds", "exit", "tests", "output"});
}

absl::StatusOr<ToolResult> RunTestsTool(const ToolsOptions& options, const json& args) {
  US_ASSIGN_OR_RETURN(testgen::Framework framework,
                      testgen::ParseFramework(args.at("framework").get<std::string>()));
  US_ASSIGN_OR_RETURN(std::string path,
                      ResolvePath(options, "path", args.at("path").get<std::string>(), false));
  testgen::RunEnv env;
  if (!options.grpc_address.empty() && !options.http_address.empty()) {
    env.addr = options.grpc_address;
    env.http = absl::StrCat("http://", options.http_address);
  }
  env.db = options.db;
  env.binary = options.binary;
  env.timeout = options.max_test_time;
  if (args.contains("timeout_seconds")) {
    env.timeout = std::min(env.timeout, absl::Seconds(args.at("timeout_seconds").get<int64_t>()));
  }
  US_ASSIGN_OR_RETURN(testgen::TestRun run,
                      testgen::RunTests(path, framework, env, testgen::DefaultToolchain()));
  return Structured(testgen::ToJson(run));
}

ToolDef RunTestsDef() {
  return {"run_tests",
          "Run a test file",
          "Runs a test file (pytest, node:test or GoogleTest, compiled first) against this "
          "server's replays and returns each test's outcome and failure message. Pass the result "
          "to analyze_test_results to learn what to change.",
          ObjectSchema({{"framework", FrameworkSchema()},
                        {"path", PathSchema("the test file (under the allowed folder)")},
                        {"timeout_seconds", {{"type", "integer"}, {"minimum", 1},
                                             {"maximum", 3600},
                                             {"description", "stop the run after this long"}}}},
                       {"framework", "path"}),
          TestRunSchema(),
          false,
          &RunTestsTool};
}

// ---------------------------------------------------------------------------

absl::StatusOr<ToolResult> AnalyzeTestResults(const ToolsOptions&, const json& args) {
  json results = args.at("results");
  if (results.is_string()) {
    // The result as the JSON text run_tests answered (what an agent that
    // keeps only the text content hands back).
    US_ASSIGN_OR_RETURN(std::string text, DocumentArgument(args, "results"));
    results = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!results.is_object()) {
      return absl::InvalidArgumentError(
          "arguments.results: not the JSON object run_tests answered");
    }
  }
  // The text form skipped the schema check: check the part read here.
  const json schema = {{"type", "object"},
                       {"properties", {{"tests", {{"type", "array"},
                                                  {"items", {{"type", "object"}}}}}}},
                       {"required", {"tests"}}};
  if (std::vector<std::string> problems = CheckArguments(schema, results, "arguments.results");
      !problems.empty()) {
    return absl::InvalidArgumentError(problems.front());
  }
  testgen::TestRun run;
  run.file = Arg<std::string>(results, "file", "");
  for (const json& t : results.at("tests")) {
    testgen::TestResult r;
    if (!t.is_object()) continue;
    r.name = t.value("name", json("")).is_string() ? t.value("name", "") : "";
    const std::string outcome =
        t.value("outcome", json("")).is_string() ? t.value("outcome", "passed") : "passed";
    r.outcome = outcome == "failed"    ? testgen::Outcome::kFailed
                : outcome == "error"   ? testgen::Outcome::kError
                : outcome == "skipped" ? testgen::Outcome::kSkipped
                                       : testgen::Outcome::kPassed;
    r.message = t.value("message", json("")).is_string() ? t.value("message", "") : "";
    run.tests.push_back(std::move(r));
  }
  return Structured(testgen::ToJson(testgen::AnalyzeResults(run)));
}

ToolDef AnalyzeTestResultsDef() {
  json test = {{"type", "object"},
               {"properties", {{"name", {{"type", "string"}}},
                               {"outcome", {{"type", "string"},
                                            {"enum", {"passed", "failed", "error", "skipped"}}}},
                               {"message", {{"type", "string"}}}}},
               {"required", {"name", "outcome"}}};
  json finding = ObjectSchema(
      {{"test", {{"type", "string"}}},
       {"check", {{"type", "string"}, {"description", "the failed check, or command / test"}}},
       {"kind", {{"type", "string"}, {"enum", {"expectation", "drift", "command", "error"}}}},
       {"explanation", {{"type", "string"}}},
       {"suggestion", {{"type", "string"}, {"description", "what to change"}}},
       {"actual", {{"type", "string"}, {"description", "what the run did, when known"}}},
       {"action",
        {{"type", "string"},
         {"enum", {"none", "replace", "remove", "record"}},
         {"description",
          "replace: put `replacement` in place of the item named `check`; remove: drop that "
          "item; record: record the session again; none: fix the system or the test"}}},
       {"replacement",
        {{"type", "string"},
         {"description",
          "for replace: the new item as spec text (a YAML flow mapping to write after \"- \" "
          "under assertions:), keeping the item's name, agent and match"}}}},
      {"test", "check", "kind", "explanation", "suggestion", "actual", "action", "replacement"});
  return {"analyze_test_results",
          "Explain test failures",
          "For each failed test of a run_tests result: the failed check, its whole explanation "
          "and a suggested fix — for a changed sequence, the item that states what the run did "
          "as spec text to paste in place of the failed one (action replace, replacement), or, "
          "for misses and unused recordings, that the recording drifted from the system under "
          "test (re-record, or fix the change).",
          ObjectSchema({{"results",
                         {{"type", {"object", "string"}},
                          {"properties", {{"tests", {{"type", "array"}, {"items", test},
                                                     {"maxItems", 10000}}}}},
                          {"required", {"tests"}},
                          {"description", "the structured result of run_tests, or its JSON text"}}}},
                       {"results"}),
          ObjectSchema({{"ok", {{"type", "boolean"}}},
                        {"findings", {{"type", "array"}, {"items", finding}}}},
                       {"ok", "findings"}),
          true,
          &AnalyzeTestResults};
}

}  // namespace

std::vector<ToolDef> TestTools() {
  return {GenerateTestSpecDef(), GenerateTestsFromSpecDef(), ValidateTestCodeDef(), RunTestsDef(),
          AnalyzeTestResultsDef()};
}

}  // namespace mcpserver
}  // namespace understudy
