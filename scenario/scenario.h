// Scenario files: what a run is scripted with (schema understudy.scenario/v1).
//
// A scenario is a YAML or JSON document (JSON is YAML, one parser reads
// both) holding rules (trigger → action), a default action, a playbook,
// agent and workflow extractors, matching options and tool/UI mocks. See
// docs/scenarios.md for every field.
//
//   absl::StatusOr<std::string> path = ResolveScenario("rate-limit");
//   absl::StatusOr<std::string> text = ReadScenarioFile(*path);
//   absl::StatusOr<Scenario> s = LoadScenario(*text, *path);
//   // or, to show every problem with its position:
//   ValidationReport report = ValidateScenario(*text, *path);
//   for (const Problem& p : report.problems) std::cerr << FormatProblem(report, p) << "\n";
//
// Loading validates everything at once and compiles every pattern (RE2,
// linear time) exactly once: the Scenario holds the compiled RE2 objects, so
// request-time code never compiles or fails on a pattern. Hostile input is
// bounded: at most kMaxScenarioBytes, kMaxNestingDepth levels of nesting and
// kMaxNodes nodes after alias expansion; past those, a report, never a crash.
//
// This file is the document model only: evaluating rules against requests
// and performing actions are the engine's job.
#ifndef UNDERSTUDY_SCENARIO_SCENARIO_H_
#define UNDERSTUDY_SCENARIO_SCENARIO_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "matching/normalize.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "validation/problems.h"

namespace understudy {
namespace scenario {

inline constexpr absl::string_view kScenarioSchema = "understudy.scenario/v1";
// Larger documents are refused before parsing.
inline constexpr size_t kMaxScenarioBytes = 4 << 20;
// Mappings and sequences nested deeper than this are refused.
inline constexpr int kMaxNestingDepth = 64;
// Nodes visited (aliases expanded) before a document is refused: stops
// "billion laughs" documents built from YAML anchors.
inline constexpr size_t kMaxNodes = 1000000;
// `sequence` and `fail_then_succeed.then` may nest actions this deep.
inline constexpr int kMaxActionDepth = 8;

// A pattern as written and its compiled form (never null in a loaded
// Scenario). RE2 is thread-safe for matching, so one object serves every run.
struct Pattern {
  std::string text;
  std::shared_ptr<const RE2> re;
};

struct AgentDef {
  std::string name;
  Pattern system_prompt;  // the first agent whose pattern matches wins
};

struct Extractors {
  // The phase is this argument of a call to this tool, e.g. continue(phase).
  struct Phase {
    std::string tool;
    std::string argument;
  };
  // Routing decisions from JSON content: {agents, phase, reason}.
  struct Routing {
    std::string agents_field;
    std::string phase_field;
    std::string reason_field;
  };
  // A call to this tool ends the workflow.
  struct End {
    std::string tool;
  };
  std::optional<Phase> phase;
  std::optional<Routing> routing;
  std::optional<End> end;
};

struct MatchingOptions {
  std::vector<std::string> ignore_paths;
  std::vector<std::string> normalizers;
  std::optional<bool> strict;  // unset: the server's default
  // Compiled from the two lists; never null in a loaded Scenario.
  std::shared_ptr<const matching::MatchNormalizer> normalizer;
};

// `iteration: 3` is {min 3, max 3}; `{min: 2}` has no upper bound.
struct IterationRange {
  int64_t min = 1;
  std::optional<int64_t> max;
};

// Conditions of a rule; every one that is set must hold.
//
// Rules come in three kinds, by the conditions they set:
//  - a *tool rule* has `tool` or `tool_arguments`: it answers MCP
//    `tools/call` requests only (RuleSet::SelectTool);
//  - an *A2A rule* has `a2a`: it answers only calls from one agent to another
//    through understudy (A2A, `/a2a/{callee}`; RuleSet::SelectA2a);
//  - a *model rule* has none of them: it answers model requests only
//    (RuleSet::Select).
// A rule with both `a2a` and `tool`/`tool_arguments` is refused at load.
// Tool and A2A rules also read agent, previous_agent, phase, iteration and
// previous_tool_calls (as of the calling agent's latest model turn). The
// conditions on a model request's messages and offer never hold for them
// (the validator warns): for a tool call system_prompt, user_message,
// message_contains, model, has_tool_result and tool_available; for an A2A
// call system_prompt, model, has_tool_result and tool_available, while
// user_message and message_contains are searched in the call's message text.
struct When {
  // The called tool's name, matched in full (RE2::FullMatch): `read_file` is
  // exactly that name, `read_.*` or `a|b` a family. Compiled as written,
  // unanchored, like every Pattern; the anchoring is the matcher's.
  std::optional<Pattern> tool;
  // A JSON object contained in the call's arguments
  // (validation/json_subset.h): `{path: a.txt}` holds for
  // `{"path": "a.txt", "mode": "r"}`.
  std::optional<nlohmann::json> tool_arguments;
  // The called agent's name (the {callee} of `/a2a/{callee}`), matched in
  // full like `tool`: `writer` is exactly that agent, `writer|editor` either.
  std::optional<Pattern> a2a;
  std::optional<Pattern> system_prompt;
  std::optional<Pattern> user_message;     // the last user message (A2A: the message text)
  std::optional<Pattern> message_contains;  // any message (A2A: the message text)
  std::optional<std::string> agent;
  std::optional<std::string> previous_agent;
  std::optional<std::string> phase;
  std::optional<std::string> model;
  std::optional<IterationRange> iteration;  // this agent's count in the run, 1-based
  std::vector<std::string> previous_tool_calls;
  std::optional<bool> has_tool_result;
  std::optional<std::string> tool_available;

  // Whether this is a tool rule (see above).
  bool is_tool_rule() const { return tool.has_value() || tool_arguments.has_value(); }
  // Whether this is an A2A rule (see above).
  bool is_a2a_rule() const { return a2a.has_value(); }
};

struct ToolCallSpec {
  std::string name;
  nlohmann::json arguments = nlohmann::json::object();  // an object or a string
};

struct Usage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
};

// A model answer; in a tool rule a tool result: `content` is its text
// content and `structured` its structuredContent (tool_calls,
// finish_reason and usage are the model's and are refused or ignored there);
// in an A2A rule a message from the called agent whose text is `content`
// (every other field is refused there).
struct RespondAction {
  std::string content;
  std::vector<ToolCallSpec> tool_calls;  // never in a tool or A2A rule
  std::string finish_reason;  // "" = chosen by the renderer; never in an A2A rule
  std::optional<Usage> usage;  // never in an A2A rule
  // A JSON object; only in tool rules.
  std::optional<nlohmann::json> structured;
};

// Outside tool and A2A rules, at least one of grpc_code and http_status is
// set. In a tool or A2A rule no code is needed: with jsonrpc_code the answer
// is a JSON-RPC error; without it, in a tool rule a tool error result
// ({content: [{type: text, text: message}], isError: true}), in an A2A rule
// a task in state failed whose status message is `message`. grpc_code,
// http_status and retry_after_seconds do not apply to tool or A2A calls (the
// validator warns).
struct ErrorAction {
  std::optional<absl::StatusCode> grpc_code;
  std::optional<int> http_status;  // 100..599
  // Any integer (JSON-RPC reserves -32768..-32000 for itself, but servers
  // send any); only in tool and A2A rules.
  std::optional<int> jsonrpc_code;
  std::string message;
  std::optional<double> retry_after_seconds;  // >= 0
};

struct DelayAction {
  int64_t ms = 0;  // >= 0; then the next answer source answers
};

struct HangAction {};

struct DisconnectAction {
  int64_t after_chunks = 0;  // 0: before any chunk
};

struct Action;

struct FailThenSucceedAction {
  int64_t failures = 1;  // >= 1
  ErrorAction error;
  std::shared_ptr<const Action> then;  // never null in a loaded Scenario
};

struct SequenceAction {
  std::vector<Action> steps;  // one per use; never empty
};

struct FromSessionAction {
  std::string session;        // NAME or NAME@VERSION
  std::optional<int64_t> seq;  // unset: the next unconsumed exchange
};

struct Action {
  using Value = std::variant<RespondAction, ErrorAction, DelayAction, HangAction,
                             DisconnectAction, FailThenSucceedAction, SequenceAction,
                             FromSessionAction>;
  Value value;

  // The field name that introduced the action: "respond", "error", ...
  const char* kind_name() const;
};

struct Rule {
  std::string name;
  int64_t priority = 0;         // higher first; ties in file order
  std::optional<int64_t> times;  // uses before exhausted; unset: unlimited
  When when;
  Action action;
  size_t index = 0;  // position in the file, for tie-breaks
};

struct PlaybookStep {
  enum class Kind { kCall, kSay };
  Kind kind = Kind::kSay;
  std::string tool;                             // kCall
  nlohmann::json args = nlohmann::json::object();  // kCall; may hold {{capture}}
  std::string text;                             // kSay
};

struct Capture {
  std::string name;
  std::string from_tool_result;  // tool name
  Pattern regex;                 // group 1 if any, else the whole match
};

struct PlaybookTurn {
  std::optional<Pattern> when;  // on the user's text; unset: any
  std::vector<PlaybookStep> actions;
  std::vector<Capture> captures;
};

struct MockTool {
  enum class Kind { kText, kTemplate, kResult };
  Kind kind = Kind::kText;
  std::string text;     // kText, kTemplate
  nlohmann::json result;  // kResult
};

struct MockUi {
  bool confirm = true;
  int64_t select = 0;
  std::string input;
  std::string editor;
};

struct Scenario {
  std::string source;  // file name or label, for messages
  std::string name;
  std::string description;
  std::vector<AgentDef> agents;
  Extractors extractors;
  MatchingOptions matching;
  std::vector<Rule> rules;  // file order
  std::optional<Action> default_action;
  std::vector<PlaybookTurn> playbook;
  std::map<std::string, MockTool> mock_tools;
  MockUi mock_ui;
};

// Validation reports are the shared ones (validation/problems.h).
using Problem = validation::Problem;
using ValidationReport = validation::Report;
using validation::FormatProblem;
using validation::FormatReport;
using validation::ReportToJson;

// Checks `text` against the schema and reports every problem at once.
// `source` names the document in messages. Never fails: unreadable YAML,
// oversized and hostile documents are problems too.
ValidationReport ValidateScenario(absl::string_view text, absl::string_view source);

// Parses and validates `text`. INVALID_ARGUMENT whose message is the
// formatted report (FormatReport) when the document has any error; warnings
// alone do not fail. The result owns everything it refers to.
absl::StatusOr<Scenario> LoadScenario(absl::string_view text, absl::string_view source);

// Reads a scenario file, at most kMaxScenarioBytes + 1 bytes of it (enough
// for ValidateScenario to refuse an oversized one). NOT_FOUND when it does
// not exist, INVALID_ARGUMENT when it is not a regular file (a directory, a
// FIFO that would block), UNAVAILABLE when it cannot be read.
absl::StatusOr<std::string> ReadScenarioFile(const std::string& path);

// The directories searched for named packs, in order: $UNDERSTUDY_SCENARIOS
// (when set), then the packs shipped with the project: those installed
// beside the program (PREFIX/share/understudy/scenarios for
// PREFIX/bin/understudy) when there are any, else the source tree's
// (compiled in as UNDERSTUDY_SCENARIO_DIR).
std::vector<std::string> ScenarioSearchPath();

// Which scenario files a caller may have read. The command line (serve
// --scenario, validate) is the operator's own and reads any path; a remote
// caller (StartRun.scenario) names packs, and files only under a directory
// the operator allowed (serve --scenario-dir), so that a request can never
// make the server read (and quote back) a file of its choosing.
struct ScenarioFiles {
  // Any path the process can read.
  bool any_path = false;
  // Otherwise: files under this directory only, after symlinks and ".."
  // are resolved ("" for none).
  std::string dir;

  static ScenarioFiles Any() { return {true, ""}; }
  static ScenarioFiles Under(std::string dir) { return {false, std::move(dir)}; }
};

// Maps a pack name ("rate-limit") or a file path to a readable file path.
// Anything containing '/' or ending in .yaml, .yml or .json is a path;
// anything else is looked up as NAME.yaml, NAME.yml, NAME.json in
// ScenarioSearchPath(), and failing that tried as a path. A path is
// resolved as `files` allows: any path, or relative to (or absolute
// within) `files.dir`. NOT_FOUND naming the packs available when there is
// no such pack or file; PERMISSION_DENIED for a path `files` does not
// allow, saying how to send the scenario instead; INVALID_ARGUMENT for a
// path that is not a regular file. Messages never quote file contents.
absl::StatusOr<std::string> ResolveScenario(const std::string& name_or_path,
                                            const ScenarioFiles& files = ScenarioFiles::Any());

}  // namespace scenario
}  // namespace understudy

#endif  // UNDERSTUDY_SCENARIO_SCENARIO_H_
