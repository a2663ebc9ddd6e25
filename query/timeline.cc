#include "query/timeline.h"

#include <cstdint>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "trace/vocabulary.h"
#include "validation/json_bounds.h"

namespace understudy {
namespace query {
namespace {

// Names (agents, tools, rules, kinds, attribute keys) are identifiers, not
// prose: cut only when absurdly long.
constexpr int kNameWidth = 64;
// Tool arguments nested deeper than this render as "…".
constexpr int kMaxJsonDepth = 8;
constexpr char kEllipsis[] = "…";
constexpr char32_t kReplacement = 0xFFFD;

// ---- Text ---------------------------------------------------------------

// The code point at s[*i], advancing *i past it; U+FFFD (advancing one byte)
// for anything that is not well-formed UTF-8 (overlong forms, surrogates and
// values past U+10FFFF included).
char32_t NextCodePoint(absl::string_view s, size_t* i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(*i);
  if (b0 < 0x80) {
    ++*i;
    return b0;
  }
  int length = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    length = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    length = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    length = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    ++*i;
    return kReplacement;
  }
  if (*i + length > s.size()) {
    ++*i;
    return kReplacement;
  }
  for (int k = 1; k < length; ++k) {
    const unsigned char b = byte(*i + k);
    if ((b & 0xC0) != 0x80) {
      ++*i;
      return kReplacement;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++*i;
    return kReplacement;
  }
  *i += length;
  return cp;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool IsSpace(char32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\f' || cp == '\v';
}

// C0 and C1 controls and DEL: what a terminal might act on.
bool IsControl(char32_t cp) { return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F); }

// `text` made safe for one terminal line: whitespace runs collapsed to one
// space and trimmed, controls and bad UTF-8 as U+FFFD, at most `width` code
// points (the last one "…" when cut). `width` <= 0: never cut.
std::string Clean(absl::string_view text, int width) {
  std::vector<char32_t> kept;
  const size_t limit = width > 0 ? static_cast<size_t>(width) : SIZE_MAX;
  bool space = false;
  bool cut = false;
  for (size_t i = 0; i < text.size();) {
    char32_t cp = NextCodePoint(text, &i);
    if (IsSpace(cp)) {
      space = !kept.empty();
      continue;
    }
    if (IsControl(cp)) cp = kReplacement;
    if (space) kept.push_back(' ');
    space = false;
    kept.push_back(cp);
    if (kept.size() > limit) {
      cut = true;
      break;
    }
  }
  if (cut) {
    kept.resize(limit - 1);
    while (!kept.empty() && kept.back() == ' ') kept.pop_back();
  }
  std::string out;
  out.reserve(kept.size() + 3);
  for (char32_t cp : kept) AppendUtf8(cp, &out);
  if (cut) out += kEllipsis;
  return out;
}

// Clean text in double quotes, with `"` and `\` escaped.
std::string Quote(absl::string_view text, int width) {
  std::string out = "\"";
  for (char c : Clean(text, width)) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string Name(absl::string_view name) { return Clean(name, kNameWidth); }

// Plain when it reads unambiguously after `=`, else quoted.
std::string Value(absl::string_view value, int width) {
  bool plain = !value.empty();
  for (char c : value) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u <= ' ' || c == '"' || c == '\\' || c == '=' || u == 0x7F) plain = false;
  }
  return plain ? Clean(value, width) : Quote(value, width);
}

// ---- Colors -------------------------------------------------------------

class Painter {
 public:
  explicit Painter(bool on) : on_(on) {}

  // `text` wrapped in SGR `code` and a reset; unchanged when colors are off.
  std::string Paint(absl::string_view code, absl::string_view text) const {
    if (!on_ || text.empty()) return std::string(text);
    return absl::StrCat("\x1b[", code, "m", text, "\x1b[0m");
  }
  std::string Seq(int64_t seq) const { return Paint("2", absl::StrCat("#", seq)); }
  std::string Dim(absl::string_view text) const { return Paint("2", text); }
  std::string Bold(absl::string_view text) const { return Paint("1", text); }
  std::string Red(absl::string_view text) const { return Paint("31", text); }
  std::string Phase(absl::string_view phase) const {
    return Paint("36", phase.empty() ? "∅" : Name(phase));
  }
  // The agent's name (or "-") in its color: FNV-1a of the name picks one of
  // eight that are neither red (errors) nor cyan (phases). FNV, not
  // std::hash, so the color is the same on every machine and build.
  std::string Agent(absl::string_view agent) const {
    if (agent.empty()) return "-";
    static constexpr const char* kPalette[] = {"32", "33", "34", "35", "92", "93", "94", "95"};
    uint32_t hash = 2166136261u;
    for (char c : agent) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 16777619u;
    }
    return Paint(kPalette[hash % 8], Name(agent));
  }

 private:
  const bool on_;
};

// ---- Pieces -------------------------------------------------------------

const std::string& Attr(const v1::TraceEvent& e, const std::string& key) {
  static const std::string* const kEmpty = new std::string();
  auto it = e.attributes().find(key);
  return it == e.attributes().end() ? *kEmpty : it->second;
}

std::string AgentOf(const v1::TraceEvent& e) {
  return e.agent().empty() ? Attr(e, trace::attr::kGenAiAgentName) : e.agent();
}

// " (phase: X)" when `phase` is set.
std::string PhaseNote(absl::string_view phase, const Painter& p) {
  return phase.empty() ? "" : absl::StrCat(" (phase: ", p.Phase(phase), ")");
}

// "✗ CODE[: message]", red.
std::string ErrorText(absl::string_view code, absl::string_view message, int width,
                      const Painter& p) {
  std::string text = absl::StrCat("✗ ", Name(code));
  if (!message.empty()) absl::StrAppend(&text, ": ", Clean(message, width));
  return p.Red(text);
}

void RenderJson(const nlohmann::ordered_json& j, int depth, int width, std::string* out) {
  if (out->size() > static_cast<size_t>(width) * 4) return;  // will be cut anyway
  if (j.is_string()) {
    absl::StrAppend(out, Quote(j.get_ref<const std::string&>(), width));
    return;
  }
  if (!j.is_object() && !j.is_array()) {
    absl::StrAppend(out, j.dump());
    return;
  }
  const bool object = j.is_object();
  out->push_back(object ? '{' : '[');
  if (depth >= kMaxJsonDepth && !j.empty()) {
    absl::StrAppend(out, kEllipsis);
  } else {
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) absl::StrAppend(out, ", ");
      first = false;
      if (object) {
        const std::string& key = it.key();
        bool bare = !key.empty();
        for (char c : key) {
          bare = bare && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.');
        }
        absl::StrAppend(out, bare ? key : Quote(key, kNameWidth), ": ");
      }
      RenderJson(*it, depth + 1, width, out);
    }
  }
  out->push_back(object ? '}' : ']');
}

// Tool-call arguments as `{key: value}` (strings quoted), cut at `width`;
// text that is not JSON, quoted; "" for none.
std::string Arguments(absl::string_view arguments, int width) {
  if (arguments.empty()) return "";
  nlohmann::ordered_json parsed =
      validation::ParseJsonOrDiscarded<nlohmann::ordered_json>(arguments);
  if (parsed.is_discarded()) return Quote(arguments, width);
  std::string rendered;
  RenderJson(parsed, 0, width, &rendered);
  return Clean(rendered, width);
}

// An answer's text, quoted; content that is a JSON object (a routing
// decision, structured output) rendered like tool arguments instead, which
// reads better than its escaped quotes.
std::string Content(absl::string_view content, int width) {
  absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(content);
  if (!trimmed.empty() && trimmed.front() == '{') {
    nlohmann::ordered_json parsed =
        validation::ParseJsonOrDiscarded<nlohmann::ordered_json>(trimmed);
    if (parsed.is_object()) {
      std::string rendered;
      RenderJson(parsed, 0, width, &rendered);
      return Clean(rendered, width);
    }
  }
  return Quote(content, width);
}

// ---- Events -------------------------------------------------------------

std::string RunStarted(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  std::vector<std::string> parts;
  std::string first = Name(Attr(e, trace::attr::kRunMode));
  const std::string& session = Attr(e, trace::attr::kSessionName);
  if (!session.empty()) {
    const std::string& version = Attr(e, trace::attr::kSessionVersion);
    absl::StrAppend(&first, first.empty() ? "" : " ", Name(session), version.empty() ? "" : "@",
                    Name(version));
  }
  if (!first.empty()) parts.push_back(first);
  const std::string& requested = Attr(e, trace::attr::kRunRequestedMode);
  if (!requested.empty()) parts.push_back(absl::StrCat("requested ", Name(requested)));
  const std::string& scenario = Attr(e, trace::attr::kScenarioName);
  if (!scenario.empty()) parts.push_back(absl::StrCat("scenario ", Clean(scenario, o.width)));
  if (Attr(e, trace::attr::kRunStrict) == "false" && Attr(e, trace::attr::kRunMode) == "replay") {
    parts.push_back("not strict");
  }
  std::string line = p.Bold("run started");
  if (!parts.empty()) absl::StrAppend(&line, " (", absl::StrJoin(parts, ", "), ")");
  return line;
}

std::string RunEnded(const v1::TraceEvent& e, const Painter& p) {
  auto count = [&](const char* key) {
    int64_t n = 0;
    const std::string& text = Attr(e, key);
    return absl::SimpleAtoi(text, &n) ? n : int64_t{0};
  };
  std::vector<std::string> parts = {absl::StrCat("served ", count(trace::attr::kRunServed))};
  if (count(trace::attr::kRunRecorded) > 0) {
    parts.push_back(absl::StrCat("recorded ", count(trace::attr::kRunRecorded)));
  }
  const int64_t misses = count(trace::attr::kRunMisses);
  const std::string missed = absl::StrCat("misses ", misses);
  parts.push_back(misses > 0 ? p.Red(missed) : missed);
  parts.push_back(absl::StrCat("unconsumed ", count(trace::attr::kRunUnconsumed)));
  std::string line = absl::StrCat(p.Bold("run ended"), ": ", absl::StrJoin(parts, ", "));
  const std::string& failures = Attr(e, trace::attr::kRunFailures);
  if (!failures.empty()) {
    std::vector<std::string> each;
    for (absl::string_view f : absl::StrSplit(failures, '\n', absl::SkipWhitespace())) {
      each.push_back(Clean(f, 0));
    }
    absl::StrAppend(&line, " ", p.Red(absl::StrCat("✗ failed: ", absl::StrJoin(each, "; "))));
  }
  return line;
}

// "[source rule #seq]", dim; "" when the event names no source.
std::string Source(const v1::TraceEvent& e, const Painter& p) {
  std::vector<std::string> parts;
  for (const char* key : {trace::attr::kAnswerSource, trace::attr::kRuleName}) {
    if (!Attr(e, key).empty()) parts.push_back(Name(Attr(e, key)));
  }
  const std::string& seq = Attr(e, trace::attr::kExchangeSeq);
  if (!seq.empty()) parts.push_back(absl::StrCat("#", Name(seq)));
  if (parts.empty()) return "";
  return p.Dim(absl::StrCat("[", absl::StrJoin(parts, " "), "]"));
}

std::string Exchange(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  std::string line =
      absl::StrCat(p.Agent(AgentOf(e)), PhaseNote(Attr(e, trace::attr::kPhase), p), " ← ");
  const std::string source = Source(e, p);
  const std::string after_source = source.empty() ? "" : absl::StrCat(" ", source);
  const std::string& error = Attr(e, trace::attr::kErrorType);
  if (!error.empty()) {
    absl::StrAppend(&line, p.Red(absl::StrCat("✗ ", Name(error))), after_source);
    const std::string& message = Attr(e, trace::attr::kError);
    if (!message.empty()) absl::StrAppend(&line, ": ", p.Red(Clean(message, o.width)));
    return line;
  }
  if (!e.has_response()) {
    const std::string& action = Attr(e, trace::attr::kAction);
    absl::StrAppend(&line, action.empty() ? "no answer" : Name(action), after_source);
    return line;
  }
  const v1::Message& answer = e.response().message();
  // An MCP request's answer names the server and the method.
  const std::string& method = Attr(e, trace::attr::kMcpMethod);
  if (!method.empty()) {
    absl::StrAppend(&line, Attr(e, trace::attr::kMcpServer), " ", method, after_source, ": ",
                    Content(answer.content(), o.width));
    return line;
  }
  absl::StrAppend(&line, "answer", after_source, ": ");
  if (answer.content().empty() && answer.tool_calls_size() > 0) {
    const int n = answer.tool_calls_size();
    absl::StrAppend(&line, "(", n, n == 1 ? " tool call)" : " tool calls)");
  } else {
    absl::StrAppend(&line, Content(answer.content(), o.width));
  }
  return line;
}

// A tool's name, after its MCP server's when it has one (`search.query`).
std::string ToolName(const v1::TraceEvent& e) {
  const std::string& tool = Attr(e, trace::attr::kGenAiToolName);
  const std::string& server = Attr(e, trace::attr::kMcpServer);
  const std::string name = tool.empty() ? "?" : Name(tool);
  return server.empty() ? name : absl::StrCat(Name(server), ".", name);
}

std::string ToolCall(const v1::TraceEvent& e, const TimelineOptions& o) {
  std::string line = absl::StrCat("   → tool ", ToolName(e));
  const std::string args = Arguments(Attr(e, trace::attr::kGenAiToolCallArguments), o.width);
  if (!args.empty()) absl::StrAppend(&line, " ", args);
  return line;
}

std::string ToolResult(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  std::string line = absl::StrCat("   ← result ", ToolName(e));
  const std::string args = Arguments(Attr(e, trace::attr::kGenAiToolCallArguments), o.width);
  if (!args.empty()) absl::StrAppend(&line, " ", args);
  const std::string& error = Attr(e, trace::attr::kErrorType);
  if (!error.empty()) {
    absl::StrAppend(&line, " ", ErrorText(error, Attr(e, trace::attr::kError), o.width, p));
    return line;
  }
  auto result = e.attributes().find(trace::attr::kGenAiToolCallResult);
  if (result == e.attributes().end()) return line;
  // An MCP result is JSON: shown as the other JSON answers are.
  absl::StrAppend(&line, ": ",
                  Attr(e, trace::attr::kMcpServer).empty() ? Quote(result->second, o.width)
                                                           : Content(result->second, o.width));
  return line;
}

std::string Routing(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  const std::string& routing_phase = Attr(e, trace::attr::kRoutingPhase);
  std::vector<std::string> agents;
  for (absl::string_view a :
       absl::StrSplit(Attr(e, trace::attr::kRoutingAgents), ',', absl::SkipWhitespace())) {
    agents.push_back(p.Agent(absl::StripAsciiWhitespace(a)));
  }
  std::string line = absl::StrCat(
      p.Agent(AgentOf(e)),
      PhaseNote(routing_phase.empty() ? Attr(e, trace::attr::kPhase) : routing_phase, p),
      " → route [", absl::StrJoin(agents, ", "), "]");
  const std::string& reason = Attr(e, trace::attr::kRoutingReason);
  if (!reason.empty()) absl::StrAppend(&line, ": ", Quote(reason, o.width));
  return line;
}

std::string PhaseTransition(const v1::TraceEvent& e, const Painter& p) {
  return absl::StrCat("phase ", p.Phase(Attr(e, trace::attr::kPhaseFrom)), " → ",
                      p.Phase(Attr(e, trace::attr::kPhaseTo)));
}

std::string Miss(const v1::TraceEvent& e, const Painter& p) {
  std::vector<absl::string_view> lines =
      absl::StrSplit(Attr(e, trace::attr::kMissReport), '\n', absl::SkipWhitespace());
  std::string line = absl::StrCat(p.Red("miss"), " ", p.Agent(AgentOf(e)));
  if (lines.empty()) return line;
  absl::StrAppend(&line, ": ", p.Red(Clean(lines[0], 0)));
  if (lines.size() > 1) {
    absl::StrAppend(
        &line, " ",
        p.Dim(absl::StrCat("(+", lines.size() - 1, lines.size() == 2 ? " line)" : " lines)")));
  }
  return line;
}

std::string UiCall(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  const std::string& kind = Attr(e, trace::attr::kUiKind);
  std::string line = absl::StrCat(p.Agent(AgentOf(e)), " → ui ", kind.empty() ? "?" : Name(kind),
                                  ": ", Quote(Attr(e, trace::attr::kUiPrompt), o.width));
  const std::string& error = Attr(e, trace::attr::kErrorType);
  if (!error.empty()) {
    absl::StrAppend(&line, " ", ErrorText(error, Attr(e, trace::attr::kError), o.width, p));
    return line;
  }
  auto answer = e.attributes().find(trace::attr::kUiAnswer);
  if (answer != e.attributes().end()) absl::StrAppend(&line, " ← ", Quote(answer->second, o.width));
  return line;
}

std::string AgentExecution(const v1::TraceEvent& e, const Painter& p) {
  std::string line =
      absl::StrCat(p.Agent(AgentOf(e)), PhaseNote(Attr(e, trace::attr::kPhase), p), " ▶ turn");
  const std::string& iteration = Attr(e, trace::attr::kAgentIteration);
  if (!iteration.empty()) absl::StrAppend(&line, " ", Name(iteration));
  const std::string& previous = Attr(e, trace::attr::kPreviousAgent);
  if (!previous.empty()) absl::StrAppend(&line, " (after ", p.Agent(previous), ")");
  return line;
}

// ---- The simulated terminal agent (trace/vocabulary.h) -------------

namespace sim_attr = trace::sim_attr;
namespace sim_event = trace::sim_event;

// The attribute's text when it is a whole number, else -1.
int64_t Number(const v1::TraceEvent& e, const char* key) {
  int64_t n = 0;
  return absl::SimpleAtoi(Attr(e, key), &n) ? n : -1;
}

// "coder ▶ sim started (session 3f2a…, resumed, model opus, skipping permissions)".
std::string SimStarted(const v1::TraceEvent& e, const Painter& p) {
  std::vector<std::string> parts;
  const std::string& session = Attr(e, sim_attr::kSessionId);
  if (!session.empty()) parts.push_back(absl::StrCat("session ", Name(session)));
  if (Attr(e, sim_attr::kResumed) == "true") parts.push_back("resumed");
  const std::string& model = Attr(e, sim_attr::kModel);
  if (!model.empty() && model != "default") parts.push_back(absl::StrCat("model ", Name(model)));
  if (Attr(e, sim_attr::kSkipPermissions) == "true") parts.push_back("skipping permissions");
  std::string line = absl::StrCat(p.Agent(AgentOf(e)), " ▶ sim started");
  if (!parts.empty()) absl::StrAppend(&line, " (", absl::StrJoin(parts, ", "), ")");
  return line;
}

// "coder WORKING → IDLE (completed)"; a crash in red.
std::string SimState(const v1::TraceEvent& e, const Painter& p) {
  const std::string& to = Attr(e, sim_attr::kState);
  const std::string& from = Attr(e, sim_attr::kStateFrom);
  std::string change = from.empty() || from == "NONE" ? Name(to)
                                                      : absl::StrCat(Name(from), " → ", Name(to));
  if (to == "CRASHED") change = p.Red(change);
  std::string line = absl::StrCat(p.Agent(AgentOf(e)), " ", change);
  const std::string& reason = Attr(e, sim_attr::kReason);
  if (!reason.empty()) absl::StrAppend(&line, " ", p.Dim(absl::StrCat("(", Clean(reason, 0), ")")));
  return line;
}

// `coder ← prompt "deploy to prod" [behaviour deploy]`.
std::string SimPrompt(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  std::vector<std::string> source;
  const std::string& behaviour = Attr(e, sim_attr::kBehaviour);
  if (!behaviour.empty()) source.push_back(absl::StrCat("behaviour ", Name(behaviour)));
  if (Attr(e, sim_attr::kModel) == "true") source.push_back("model");
  std::string line = absl::StrCat(p.Agent(AgentOf(e)), " ← prompt ",
                                  Quote(Attr(e, sim_attr::kPrompt), o.width));
  if (!source.empty()) {
    absl::StrAppend(&line, " ", p.Dim(absl::StrCat("[", absl::StrJoin(source, ", "), "]")));
  }
  return line;
}

// `coder → tool Bash {command: "ls"}`, as the sim ran it.
std::string SimToolCall(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  std::string line = absl::StrCat(p.Agent(AgentOf(e)), " → tool ", ToolName(e));
  const std::string args = Arguments(Attr(e, trace::attr::kGenAiToolCallArguments), o.width);
  if (!args.empty()) absl::StrAppend(&line, " ", args);
  return line;
}

// `coder ← result Bash: "a.txt"`, or `✗ blocked by hook: REASON` in red.
std::string SimToolResult(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  std::string line = absl::StrCat(p.Agent(AgentOf(e)), " ← result ", ToolName(e));
  if (Attr(e, sim_attr::kBlocked) == "true") {
    std::string blocked = "✗ blocked by hook";
    const std::string& reason = Attr(e, sim_attr::kReason);
    if (!reason.empty()) absl::StrAppend(&blocked, ": ", Clean(reason, o.width));
    absl::StrAppend(&line, " ", p.Red(blocked));
    return line;
  }
  absl::StrAppend(&line, ": ", Quote(Attr(e, trace::attr::kGenAiToolCallResult), o.width));
  return line;
}

// `coder ? "Which database?" [postgres, sqlite]`.
std::string SimQuestion(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  std::string line = absl::StrCat(p.Agent(AgentOf(e)), " ? ",
                                  Quote(Attr(e, sim_attr::kQuestion), o.width));
  const nlohmann::json options =
      validation::ParseJsonOrDiscarded<nlohmann::json>(Attr(e, sim_attr::kOptions));
  if (options.is_array() && !options.empty()) {
    std::vector<std::string> each;
    for (const nlohmann::json& option : options) {
      each.push_back(option.is_string() ? Clean(option.get<std::string>(), o.width)
                                        : Clean(option.dump(), o.width));
    }
    absl::StrAppend(&line, " ", Clean(absl::StrCat("[", absl::StrJoin(each, ", "), "]"), o.width));
  }
  return line;
}

// `coder ← answer "1" (option 1)`.
std::string SimAnswer(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  std::string line = absl::StrCat(p.Agent(AgentOf(e)), " ← answer ",
                                  Quote(Attr(e, sim_attr::kAnswer), o.width));
  const int64_t option = Number(e, sim_attr::kOption);
  if (option > 0) absl::StrAppend(&line, " ", p.Dim(absl::StrCat("(option ", option, ")")));
  return line;
}

// `coder ■ completion ok {status: "ok"}`, or `✗ failed (exit 1, attempt 2)`
// in red; the command itself is dim.
std::string SimCompletion(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  const std::string& outcome = Attr(e, sim_attr::kOutcome);
  std::string line = absl::StrCat(p.Agent(AgentOf(e)), " ■ completion ");
  if (outcome == "ok") {
    absl::StrAppend(&line, "ok");
  } else {
    std::string failed = absl::StrCat("✗ ", outcome.empty() ? "?" : Name(outcome));
    std::vector<std::string> detail;
    const int64_t code = Number(e, sim_attr::kExitCode);
    if (code >= 0) detail.push_back(absl::StrCat("exit ", code));
    const int64_t attempt = Number(e, sim_attr::kAttempt);
    if (attempt > 1) detail.push_back(absl::StrCat("attempt ", attempt));
    if (!detail.empty()) absl::StrAppend(&failed, " (", absl::StrJoin(detail, ", "), ")");
    absl::StrAppend(&line, p.Red(failed));
  }
  const std::string outputs = Arguments(Attr(e, sim_attr::kOutputs), o.width);
  if (!outputs.empty() && outputs != "{}") absl::StrAppend(&line, " ", outputs);
  const nlohmann::json argv =
      validation::ParseJsonOrDiscarded<nlohmann::json>(Attr(e, sim_attr::kCommand));
  if (argv.is_array() && !argv.empty()) {
    std::vector<std::string> words;
    for (const nlohmann::json& word : argv) {
      words.push_back(word.is_string() ? word.get<std::string>() : word.dump());
    }
    absl::StrAppend(&line, " ", p.Dim(Clean(absl::StrJoin(words, " "), o.width)));
  }
  return line;
}

// `coder ✗ "Error: the build is broken"`, red.
std::string SimError(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  return absl::StrCat(p.Agent(AgentOf(e)), " ",
                      p.Red(absl::StrCat("✗ ", Quote(Attr(e, sim_attr::kMessage), o.width))));
}

// `coder hook Stop: ok (12 ms) ./on-stop.sh`; any outcome but ok in red.
std::string SimHook(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  const std::string& outcome = Attr(e, sim_attr::kHookOutcome);
  std::string result = outcome.empty() ? "?" : Name(outcome);
  const int64_t code = Number(e, sim_attr::kHookExitCode);
  if (outcome != "ok" && code >= 0) absl::StrAppend(&result, " (exit ", code, ")");
  std::string line = absl::StrCat(p.Agent(AgentOf(e)), " hook ",
                                  Name(Attr(e, sim_attr::kHookEvent)), ": ",
                                  outcome == "ok" ? result : p.Red(result));
  const int64_t ms = Number(e, sim_attr::kHookDurationMs);
  if (ms >= 0) absl::StrAppend(&line, " ", p.Dim(absl::StrCat(ms, " ms")));
  const std::string& command = Attr(e, sim_attr::kHookCommand);
  if (!command.empty()) absl::StrAppend(&line, " ", p.Dim(Clean(command, o.width)));
  return line;
}

// custom.* and kinds this binary does not know: the kind, the agent, and
// every attribute but the agent's name, sorted by key.
std::string Generic(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  std::string line = e.kind().empty() ? "?" : Name(e.kind());
  const std::string agent = AgentOf(e);
  if (!agent.empty()) absl::StrAppend(&line, " ", p.Agent(agent));
  const std::map<std::string, std::string> sorted(e.attributes().begin(), e.attributes().end());
  for (const auto& [key, value] : sorted) {
    if (key == trace::attr::kGenAiAgentName) continue;
    absl::StrAppend(&line, " ", Name(key), "=", Value(value, o.width));
  }
  return line;
}

std::string FormatEvent(const v1::TraceEvent& e, const TimelineOptions& o, const Painter& p) {
  const std::string& kind = e.kind();
  // Tool calls and results belong to the exchange above them: indented,
  // without a seq of their own.
  if (kind == trace::event::kToolCall) return ToolCall(e, o);
  if (kind == trace::event::kToolResult) return ToolResult(e, o, p);
  std::string body;
  if (kind == trace::event::kRunStarted) {
    body = RunStarted(e, o, p);
  } else if (kind == trace::event::kRunEnded) {
    body = RunEnded(e, p);
  } else if (kind == trace::event::kExchange) {
    body = Exchange(e, o, p);
  } else if (kind == trace::event::kRoutingDecision) {
    body = Routing(e, o, p);
  } else if (kind == trace::event::kPhaseTransition) {
    body = PhaseTransition(e, p);
  } else if (kind == trace::event::kMiss) {
    body = Miss(e, p);
  } else if (kind == trace::event::kUiCall) {
    body = UiCall(e, o, p);
  } else if (kind == trace::event::kWorkflowEnd) {
    body = absl::StrCat(p.Agent(AgentOf(e)), " ■ workflow end");
  } else if (kind == trace::event::kAgentExecution) {
    body = AgentExecution(e, p);
  } else if (kind == sim_event::kStarted) {
    body = SimStarted(e, p);
  } else if (kind == sim_event::kState) {
    body = SimState(e, p);
  } else if (kind == sim_event::kPrompt) {
    body = SimPrompt(e, o, p);
  } else if (kind == sim_event::kToolCall) {
    body = SimToolCall(e, o, p);
  } else if (kind == sim_event::kToolResult) {
    body = SimToolResult(e, o, p);
  } else if (kind == sim_event::kQuestion) {
    body = SimQuestion(e, o, p);
  } else if (kind == sim_event::kAnswer) {
    body = SimAnswer(e, o, p);
  } else if (kind == sim_event::kCompletion) {
    body = SimCompletion(e, o, p);
  } else if (kind == sim_event::kError) {
    body = SimError(e, o, p);
  } else if (kind == sim_event::kHook) {
    body = SimHook(e, o, p);
  } else {
    body = Generic(e, o, p);
  }
  return absl::StrCat(p.Seq(e.seq()), " ", body);
}

// Where an upstream answer's exchange line goes. The engine traces what an
// answer caused (tool_call, routing_decision, phase_transition,
// workflow_end, in that order) when the answer arrives, but the exchange
// itself only once it is stored, so for upstream answers the effects come
// first. Returns the position in `shown` (the events drawn so far) to insert
// the exchange at: before the trailing effects that this answer can have
// caused — same agent; no more tool calls than it has, with its call ids;
// routing and phase only from JSON-object content or tool calls; a workflow
// end only from tool calls. Other answers go last.
size_t AnswerPosition(const v1::TraceEvent& e, const std::vector<const v1::TraceEvent*>& shown) {
  size_t at = shown.size();
  if (Attr(e, trace::attr::kAnswerSource) != "upstream" || !e.has_response()) return at;
  const v1::Message& answer = e.response().message();
  const int calls = answer.tool_calls_size();
  const absl::string_view content = absl::StripLeadingAsciiWhitespace(answer.content());
  const bool json = !content.empty() && content.front() == '{';
  const std::string agent = AgentOf(e);
  auto previous = [&](const char* kind) {
    return at > 0 && shown[at - 1]->kind() == kind && AgentOf(*shown[at - 1]) == agent;
  };
  if (calls > 0 && previous(trace::event::kWorkflowEnd)) --at;
  if ((calls > 0 || json) && previous(trace::event::kPhaseTransition)) --at;
  if (json && previous(trace::event::kRoutingDecision)) --at;
  for (int taken = 0; taken < calls && previous(trace::event::kToolCall); ++taken) {
    const std::string& id = Attr(*shown[at - 1], trace::attr::kGenAiToolCallId);
    bool ours = id.empty();
    for (const v1::ToolCall& c : answer.tool_calls()) ours = ours || c.id() == id;
    if (!ours) break;
    --at;
  }
  return at;
}

const char* StateName(v1::SessionState state) {
  switch (state) {
    case v1::SESSION_STATE_OPEN:
      return "open";
    case v1::SESSION_STATE_CLOSED:
      return "closed";
    default:
      return "unknown state";
  }
}

std::string FormatExchange(const v1::Exchange& x, const TimelineOptions& o, const Painter& p) {
  const v1::Message* asked = nullptr;
  for (const v1::Message& m : x.request().messages()) {
    if (m.role() == "user") asked = &m;
  }
  if (asked == nullptr && x.request().messages_size() > 0) {
    asked = &x.request().messages(x.request().messages_size() - 1);
  }
  std::string line = absl::StrCat(p.Seq(x.seq()), " ", p.Agent(x.agent()), " → ",
                                  Quote(asked == nullptr ? "" : asked->content(), o.width), " ← ");
  if (x.has_error()) {
    const std::string code =
        absl::StatusCodeToString(static_cast<absl::StatusCode>(x.error().code()));
    absl::StrAppend(&line, ErrorText(code, x.error().message(), o.width, p));
    return line;
  }
  const v1::Message& answer = x.response().message();
  std::vector<std::string> calls;
  for (const v1::ToolCall& c : answer.tool_calls()) {
    std::string call = c.name().empty() ? "?" : Name(c.name());
    const std::string args = Arguments(c.arguments(), o.width);
    if (!args.empty()) absl::StrAppend(&call, " ", args);
    calls.push_back(std::move(call));
  }
  if (!answer.content().empty() || calls.empty()) {
    absl::StrAppend(&line, Content(answer.content(), o.width), calls.empty() ? "" : " ");
  }
  if (!calls.empty()) absl::StrAppend(&line, "[", absl::StrJoin(calls, ", "), "]");
  return line;
}

}  // namespace

bool ShouldColor(ColorMode mode, bool stdout_is_tty, const char* no_color) {
  switch (mode) {
    case ColorMode::kAlways:
      return true;
    case ColorMode::kNever:
      return false;
    case ColorMode::kAuto:
      break;
  }
  return stdout_is_tty && (no_color == nullptr || no_color[0] == '\0');
}

std::vector<std::string> FormatTimeline(const std::vector<v1::TraceEvent>& events,
                                        const TimelineOptions& options) {
  TimelineOptions o = options;
  if (o.width < 1) o.width = 1;
  const Painter painter(o.color);
  std::vector<const v1::TraceEvent*> shown;
  shown.reserve(events.size());
  for (const v1::TraceEvent& e : events) {
    shown.insert(shown.begin() + AnswerPosition(e, shown), &e);
  }
  std::vector<std::string> lines;
  lines.reserve(events.size());
  for (const v1::TraceEvent* e : shown) lines.push_back(FormatEvent(*e, o, painter));
  return lines;
}

bool IsAnswerEffect(const v1::TraceEvent& event) {
  const std::string& kind = event.kind();
  return kind == trace::event::kToolCall || kind == trace::event::kRoutingDecision || kind == trace::event::kPhaseTransition ||
         kind == trace::event::kWorkflowEnd;
}

std::vector<std::string> FormatSessionTimeline(const v1::Session& session,
                                               const std::vector<v1::Exchange>& exchanges,
                                               const TimelineOptions& options) {
  TimelineOptions o = options;
  if (o.width < 1) o.width = 1;
  const Painter p(o.color);
  std::vector<std::string> lines;
  lines.reserve(exchanges.size() + 1);
  std::string header =
      absl::StrCat(p.Bold(absl::StrCat(Name(session.name()), "@", session.version())), ": ",
                   StateName(session.state()), ", ", session.exchange_count(),
                   session.exchange_count() == 1 ? " exchange" : " exchanges");
  if (session.agents_size() > 0) {
    std::vector<std::string> agents;
    for (const std::string& a : session.agents()) agents.push_back(p.Agent(a));
    absl::StrAppend(&header, ", agents ", absl::StrJoin(agents, ", "));
  }
  lines.push_back(std::move(header));
  for (const v1::Exchange& x : exchanges) lines.push_back(FormatExchange(x, o, p));
  return lines;
}

}  // namespace query
}  // namespace understudy
