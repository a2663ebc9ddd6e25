#include "testgen/spec_gen.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "trace/assertions.h"
#include "trace/render.h"
#include "trace/spec.h"
#include "trace/spec_writer.h"
#include "trace/vocabulary.h"
#include "validation/json_bounds.h"

namespace understudy {
namespace testgen {
namespace {

// Answer text read for keywords, per content or arguments string: feedback
// worth checking is said early, and the cost stays linear in the run.
constexpr size_t kMaxAnswerBytes = 4096;
// Keywords tried per (answer, receiving agent) before giving up on it.
constexpr int kMaxKeywordTries = 64;
// Argument values nested deeper than this are left out (kAll), so that a
// spec stays within trace::kMaxSpecNesting.
constexpr int kMaxArgumentDepth = 32;
// Flow lists longer than this many bytes are written one item per line.
constexpr size_t kMaxFlowBytes = 100;

int Depth(const nlohmann::json& v) {
  int deepest = 0;
  if (v.is_structured()) {
    for (const nlohmann::json& item : v) deepest = std::max(deepest, Depth(item));
    return deepest + 1;
  }
  return 0;
}

// A one-line comment: line breaks and other controls become spaces.
std::string CommentText(absl::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
  }
  return out;
}

// ---------------------------------------------------------------------------
// The document.

class Writer {
 public:
  // A note under the header comment.
  void Note(absl::string_view text) { notes_.push_back(absl::StrCat("# ", CommentText(text))); }

  // Starts an item named `name`; `body` is the check's key line(s), each
  // indented by four spaces already.
  void Item(absl::string_view name, absl::string_view body) {
    absl::StrAppend(&items_, "  - name: ", trace::SpecScalar(name), "\n", body);
    ++count_;
  }

  int count() const { return count_; }
  const std::vector<std::string>& notes() const { return notes_; }
  const std::string& items() const { return items_; }

 private:
  std::vector<std::string> notes_;
  std::string items_;
  int count_ = 0;
};


// `key: [a, b]` at `indent`, or one `- item` per line when that is long.
std::string ListField(absl::string_view indent, absl::string_view key,
                      const std::vector<std::string>& items) {
  std::vector<std::string> shown;
  for (const std::string& s : items) shown.push_back(trace::SpecScalar(s));
  const std::string flow = absl::StrCat("[", absl::StrJoin(shown, ", "), "]");
  if (flow.size() <= kMaxFlowBytes) return absl::StrCat(indent, key, ": ", flow, "\n");
  std::string out = absl::StrCat(indent, key, ":\n");
  for (const std::string& s : shown) absl::StrAppend(&out, indent, "  - ", s, "\n");
  return out;
}

// The `match:` line, left out for exact (the default).
std::string MatchLine(absl::string_view indent, v1::SequenceMatch m) {
  if (m == v1::SEQUENCE_MATCH_EXACT) return "";
  return absl::StrCat(indent, "match: ", trace::MatchName(m), "\n");
}

// ---------------------------------------------------------------------------
// The run.

const std::string& Attr(const v1::TraceEvent& e, const std::string& name) {
  static const std::string* const kEmpty = new std::string();
  auto it = e.attributes().find(name);
  return it == e.attributes().end() ? *kEmpty : it->second;
}

// As the checks read it: the event's agent field, else gen_ai.agent.name.
const std::string& AgentOf(const v1::TraceEvent& e) {
  return e.agent().empty() ? Attr(e, trace::attr::kGenAiAgentName) : e.agent();
}

std::vector<const v1::TraceEvent*> Ordered(const RunData& run) {
  std::vector<const v1::TraceEvent*> events;
  events.reserve(run.events.size());
  for (const v1::TraceEvent& e : run.events) events.push_back(&e);
  std::stable_sort(events.begin(), events.end(),
                   [](const v1::TraceEvent* a, const v1::TraceEvent* b) {
                     return a->seq() < b->seq();
                   });
  return events;
}

// Items a spec cannot state (an empty agent or phase): left out, which
// only a subsequence comparison allows.
v1::SequenceMatch DropEmpty(std::vector<std::string>* items, v1::SequenceMatch match,
                            absl::string_view what, Writer* w) {
  const size_t before = items->size();
  items->erase(std::remove(items->begin(), items->end(), std::string()), items->end());
  if (items->size() == before) return match;
  w->Note(absl::StrCat(what, ": ", before - items->size(), " of ", before,
                       " items have no name and are left out, so they compare as a subsequence"));
  return v1::SEQUENCE_MATCH_SUBSEQUENCE;
}

void AgentSequence(const std::vector<const v1::TraceEvent*>& events, const SpecOptions& options,
                   Writer* w) {
  std::vector<std::string> agents;
  for (const v1::TraceEvent* e : events) {
    if (e->kind() != trace::event::kExchange) continue;
    const std::string& agent = AgentOf(*e);
    if (options.collapse_repeats && !agents.empty() && agents.back() == agent) continue;
    agents.push_back(agent);
  }
  const v1::SequenceMatch match = DropEmpty(&agents, options.match, "agent_sequence", w);
  if (agents.empty()) return;
  std::string body = "    agent_sequence:\n";
  absl::StrAppend(&body, ListField("      ", "agents", agents), MatchLine("      ", match));
  if (options.collapse_repeats) absl::StrAppend(&body, "      collapse_repeats: true\n");
  w->Item("agents in order", body);
}

void PhaseTransitions(const std::vector<const v1::TraceEvent*>& events,
                      const SpecOptions& options, Writer* w) {
  std::vector<std::string> phases;
  for (const v1::TraceEvent* e : events) {
    if (e->kind() == trace::event::kPhaseTransition) phases.push_back(Attr(*e, trace::attr::kPhaseTo));
  }
  const v1::SequenceMatch match = DropEmpty(&phases, options.match, "phase_transitions", w);
  if (phases.empty()) return;
  std::string body = "    phase_transitions:\n";
  absl::StrAppend(&body, ListField("      ", "phases", phases), MatchLine("      ", match));
  w->Item("phases in order", body);
}

// The arguments of a call that its expectation keeps (see SpecOptions); an
// empty object for none.
nlohmann::json KeptArguments(const std::string& text, const SpecOptions& options) {
  nlohmann::json kept = nlohmann::json::object();
  if (options.arguments == SpecOptions::Arguments::kNone || text.empty()) return kept;
  nlohmann::json args = validation::ParseJsonOrDiscarded<nlohmann::json>(text);
  if (!args.is_object()) return kept;
  for (auto it = args.begin(); it != args.end(); ++it) {
    const nlohmann::json& v = it.value();
    bool keep;
    if (options.arguments == SpecOptions::Arguments::kAll) {
      keep = true;
    } else if (!options.keep_arguments.empty()) {
      keep = std::find(options.keep_arguments.begin(), options.keep_arguments.end(), it.key()) !=
             options.keep_arguments.end();
    } else {
      keep = v.is_number() || v.is_boolean() ||
             (v.is_string() && v.get_ref<const std::string&>().size() <= kMaxKeyArgumentBytes);
    }
    if (keep && Depth(v) <= kMaxArgumentDepth) kept[it.key()] = v;
  }
  return kept;
}

struct ToolCall {
  std::string agent;
  std::string name;
  std::string arguments;
};

void ToolCallsOf(const std::string& agent, const std::vector<const ToolCall*>& calls,
                 const SpecOptions& options, Writer* w) {
  std::vector<std::string> lines;
  size_t unnamed = 0;
  for (const ToolCall* c : calls) {
    if (c->name.empty()) {
      ++unnamed;
      continue;
    }
    const nlohmann::json kept = KeptArguments(c->arguments, options);
    lines.push_back(kept.empty() ? trace::SpecScalar(c->name)
                                 : absl::StrCat("{name: ", trace::SpecScalar(c->name),
                                                ", arguments: ", trace::SpecFlow(kept), "}"));
  }
  v1::SequenceMatch match = options.match;
  const std::string whose = agent.empty() ? "tool calls" : absl::StrCat("tool calls of ", agent);
  if (unnamed > 0) {
    w->Note(absl::StrCat(whose, ": ", unnamed, " of ", calls.size(),
                         " calls have no tool name and are left out, so they compare as a "
                         "subsequence"));
    match = v1::SEQUENCE_MATCH_SUBSEQUENCE;
  }
  if (lines.empty()) return;
  std::string body = "    tool_calls:\n";
  if (!agent.empty()) absl::StrAppend(&body, "      agent: ", trace::SpecScalar(agent), "\n");
  absl::StrAppend(&body, MatchLine("      ", match), "      calls:\n");
  for (const std::string& line : lines) absl::StrAppend(&body, "        - ", line, "\n");
  w->Item(whose, body);
}

void ToolCalls(const std::vector<const v1::TraceEvent*>& events, const SpecOptions& options,
               Writer* w) {
  std::vector<ToolCall> calls;
  bool all_named = true;
  for (const v1::TraceEvent* e : events) {
    if (e->kind() != trace::event::kToolCall) continue;
    calls.push_back({AgentOf(*e), Attr(*e, trace::attr::kGenAiToolName),
                     Attr(*e, trace::attr::kGenAiToolCallArguments)});
    all_named = all_named && !calls.back().agent.empty();
  }
  if (calls.empty()) return;
  if (!all_named) {
    // One check over every call: a per-agent check cannot name these.
    std::vector<const ToolCall*> every;
    for (const ToolCall& c : calls) every.push_back(&c);
    ToolCallsOf("", every, options, w);
    return;
  }
  std::vector<std::string> agents;  // in order of first call
  std::map<std::string, std::vector<const ToolCall*>> by_agent;
  for (const ToolCall& c : calls) {
    std::vector<const ToolCall*>& mine = by_agent[c.agent];
    if (mine.empty()) agents.push_back(c.agent);
    mine.push_back(&c);
  }
  for (const std::string& agent : agents) ToolCallsOf(agent, by_agent[agent], options, w);
}

void NoMisses(const std::vector<const v1::TraceEvent*>& events, Writer* w) {
  std::vector<std::string> misses;
  for (const v1::TraceEvent* e : events) {
    if (e->kind() == trace::event::kMiss) misses.push_back(absl::StrCat("#", e->seq()));
  }
  if (misses.empty()) {
    w->Item("no misses", "    no_misses: true\n");
    return;
  }
  w->Note(absl::StrCat("no_misses left out: the run had ", misses.size(),
                       misses.size() == 1 ? " miss (" : " misses (", absl::StrJoin(misses, ", "),
                       ")"));
}

// ---------------------------------------------------------------------------
// Feedback.

// A word of a text: a run of non-space bytes without the ASCII punctuation
// around it ("login():" -> "login").
struct Word {
  size_t begin = 0;
  size_t end = 0;
};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::vector<Word> Words(absl::string_view text) {
  std::vector<Word> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    size_t begin = i;
    while (i < text.size() && !IsSpace(text[i])) ++i;
    size_t end = i;
    while (begin < end && absl::ascii_ispunct(text[begin])) ++begin;
    while (end > begin && absl::ascii_ispunct(text[end - 1])) --end;
    if (begin < end) words.push_back({begin, end});
  }
  return words;
}

struct Exchange {
  int64_t seq = 0;
  std::string agent;
  std::vector<absl::string_view> answer_content;    // the content, if any
  std::vector<absl::string_view> answer_arguments;  // each tool call's
  std::vector<absl::string_view> request;           // contents and arguments
};

// What trace/assertions_checks.cc's feedback check reads of an exchange event.
Exchange ExchangeOf(const v1::TraceEvent& e) {
  Exchange x;
  x.seq = e.seq();
  x.agent = AgentOf(e);
  const v1::Message& answer = e.response().message();
  if (!answer.content().empty()) x.answer_content.push_back(answer.content());
  for (const v1::ToolCall& c : answer.tool_calls()) {
    if (!c.arguments().empty()) x.answer_arguments.push_back(c.arguments());
  }
  for (const v1::Message& m : e.request().messages()) {
    if (!m.content().empty()) x.request.push_back(m.content());
    for (const v1::ToolCall& c : m.tool_calls()) {
      if (!c.arguments().empty()) x.request.push_back(c.arguments());
    }
  }
  return x;
}

bool RequestHas(const Exchange& x, absl::string_view keyword) {
  for (absl::string_view text : x.request) {
    if (absl::StrContains(text, keyword)) return true;
  }
  return false;
}

class FeedbackFinder {
 public:
  explicit FeedbackFinder(std::vector<Exchange> exchanges) : exchanges_(std::move(exchanges)) {
    for (const Exchange& x : exchanges_) {
      if (!x.agent.empty() &&
          std::find(agents_.begin(), agents_.end(), x.agent) == agents_.end()) {
        agents_.push_back(x.agent);
      }
      for (absl::string_view text : x.request) {
        for (const Word& word : Words(text)) {
          const absl::string_view s = text.substr(word.begin, word.end - word.begin);
          int64_t& last = last_seq_[x.agent][s];
          last = std::max(last, x.seq);
          auto [it, added] = first_seq_.emplace(s, x.seq);
          if (!added) it->second = std::min(it->second, x.seq);
        }
      }
    }
  }

  // Appends one feedback_propagated item per pair of agents whose feedback
  // went from one to the other, in order of the answer, then of the agents'
  // first exchanges.
  void Write(Writer* w) const {
    std::set<std::pair<std::string, std::string>> done;
    for (const Exchange& a : exchanges_) {
      if (a.agent.empty()) continue;
      for (const std::string& to : agents_) {
        if (to == a.agent || done.count({a.agent, to}) > 0) continue;
        std::string keyword = Keyword(a, to);
        if (keyword.empty()) continue;
        done.insert({a.agent, to});
        w->Item(absl::StrCat(a.agent, "'s feedback reaches ", to),
                absl::StrCat("    feedback_propagated: {from: ", trace::SpecScalar(a.agent), ", to: ", trace::SpecScalar(to),
                             ", keyword: ", trace::SpecQuoted(keyword), "}\n"));
      }
    }
  }

 private:
  // The keyword of answer `a` that reached a later request of `to` (see
  // the header), or "" when none did.
  std::string Keyword(const Exchange& a, const std::string& to) const {
    auto index = last_seq_.find(to);
    if (index == last_seq_.end()) return "";
    for (const auto* texts : {&a.answer_content, &a.answer_arguments}) {
      std::string found = KeywordIn(*texts, a.seq, to, index->second);
      if (!found.empty()) return found;
    }
    return "";
  }

  std::string KeywordIn(const std::vector<absl::string_view>& texts, int64_t said,
                        const std::string& to,
                        const absl::flat_hash_map<absl::string_view, int64_t>& to_words) const {
    struct Candidate {
      size_t bytes;
      size_t text;
      size_t first;  // words[first..last] of texts[text]
      size_t last;
    };
    std::vector<Candidate> candidates;
    std::vector<std::vector<Word>> words;
    for (size_t t = 0; t < texts.size(); ++t) {
      const absl::string_view text = texts[t].substr(0, kMaxAnswerBytes);
      words.push_back(Words(text));
      const std::vector<Word>& ws = words.back();
      // Passages of words that all occur in a request of `to` after the
      // answer (a cheap necessary condition), on one line, short enough.
      auto reached = [&](const Word& word) {
        auto it = to_words.find(text.substr(word.begin, word.end - word.begin));
        return it != to_words.end() && it->second > said;
      };
      for (size_t i = 0; i < ws.size(); ++i) {
        for (size_t j = i; j < ws.size() && reached(ws[j]); ++j) {
          if (j > i && text.substr(ws[j - 1].end, ws[j].begin - ws[j - 1].end).find('\n') !=
                           absl::string_view::npos) {
            break;
          }
          const size_t bytes = ws[j].end - ws[i].begin;
          if (bytes > kMaxKeywordBytes) break;
          if (bytes >= kMinKeywordBytes) candidates.push_back({bytes, t, i, j});
        }
      }
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& x, const Candidate& y) { return x.bytes > y.bytes; });
    int tries = 0;
    for (const Candidate& c : candidates) {
      if (++tries > kMaxKeywordTries) break;
      const std::vector<Word>& ws = words[c.text];
      const absl::string_view keyword =
          texts[c.text].substr(ws[c.first].begin, ws[c.last].end - ws[c.first].begin);
      if (Reaches(keyword, said, to) && New(keyword, ws, c, texts[c.text], said)) {
        return std::string(keyword);
      }
    }
    return "";
  }

  // Whether a request of `to` after `said` carries `keyword`.
  bool Reaches(absl::string_view keyword, int64_t said, const std::string& to) const {
    for (const Exchange& x : exchanges_) {
      if (x.seq > said && x.agent == to && RequestHas(x, keyword)) return true;
    }
    return false;
  }

  // Whether no request up to `said` carries `keyword`. A word inside the
  // passage (with spaces on both sides) that no such request has proves it
  // without reading them.
  template <typename C>
  bool New(absl::string_view keyword, const std::vector<Word>& ws, const C& c,
           absl::string_view text, int64_t said) const {
    for (size_t k = c.first + 1; k < c.last; ++k) {
      auto it = first_seq_.find(text.substr(ws[k].begin, ws[k].end - ws[k].begin));
      if (it == first_seq_.end() || it->second > said) return true;
    }
    for (const Exchange& x : exchanges_) {
      if (x.seq <= said && RequestHas(x, keyword)) return false;
    }
    return true;
  }

  std::vector<Exchange> exchanges_;
  std::vector<std::string> agents_;  // named agents, in order of first exchange
  // Per agent: each word of its requests -> the last seq whose request has it.
  absl::flat_hash_map<std::string, absl::flat_hash_map<absl::string_view, int64_t>> last_seq_;
  // Each word of any request -> the first seq whose request has it.
  absl::flat_hash_map<absl::string_view, int64_t> first_seq_;
};

void Feedback(const std::vector<const v1::TraceEvent*>& events, Writer* w) {
  std::vector<Exchange> exchanges;
  for (const v1::TraceEvent* e : events) {
    if (e->kind() == trace::event::kExchange) exchanges.push_back(ExchangeOf(*e));
  }
  FeedbackFinder(std::move(exchanges)).Write(w);
}

absl::Status CheckOptions(const SpecOptions& options) {
  if (!v1::SequenceMatch_IsValid(options.match)) {
    return absl::InvalidArgumentError(
        absl::StrCat("match: unknown SequenceMatch value ", static_cast<int>(options.match),
                     "; expected exact, prefix or subsequence"));
  }
  if (!options.keep_arguments.empty() && options.arguments != SpecOptions::Arguments::kKey) {
    return absl::InvalidArgumentError(
        "keep_arguments: names the arguments to keep, which only the key-arguments mode does; "
        "leave it empty with all or none");
  }
  for (const std::string& name : options.keep_arguments) {
    if (name.empty()) return absl::InvalidArgumentError("keep_arguments: an empty name");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GeneratedSpec> GenerateSpec(const RunData& run, const SpecOptions& options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  const std::vector<const v1::TraceEvent*> events = Ordered(run);
  Writer w;
  if (options.agent_sequence) AgentSequence(events, options, &w);
  if (options.tool_calls) ToolCalls(events, options, &w);
  if (options.phases) PhaseTransitions(events, options, &w);
  if (options.feedback) Feedback(events, &w);
  if (options.no_misses) NoMisses(events, &w);

  const std::string where =
      run.session.empty()
          ? absl::StrCat("run ", run.run)
          : absl::StrCat("run ", run.run, " (session ", run.session,
                         run.session_version > 0 ? absl::StrCat("@", run.session_version) : "",
                         ")");
  if (w.count() == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        CommentText(where), " gives nothing to check with these options: ", events.size(),
        " events, without exchanges, tool calls, phase transitions or feedback that reached "
        "another agent, and not free of misses"));
  }

  GeneratedSpec spec;
  spec.run = run.run;
  spec.session = run.session;
  spec.checks = w.count();
  spec.yaml = absl::StrCat("# understudy spec of ", CommentText(where), ": ", w.count(),
                           w.count() == 1 ? " check\n" : " checks\n");
  for (const std::string& note : w.notes()) absl::StrAppend(&spec.yaml, note, "\n");
  absl::StrAppend(&spec.yaml, "schema: understudy.spec/v1\n");
  if (!run.session.empty()) absl::StrAppend(&spec.yaml, "session: ", trace::SpecScalar(run.session), "\n");
  absl::StrAppend(&spec.yaml, "assertions:\n", w.items());
  if (spec.yaml.size() > trace::kMaxSpecBytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the spec of ", CommentText(where), " would be ", spec.yaml.size(),
        " bytes, more than the ", trace::kMaxSpecBytes,
        " a spec may have; keep fewer arguments (none), collapse repeated agents, or leave "
        "checks out"));
  }
  // What the header promises, checked: a spec that fails on its own run
  // would only mislead.
  absl::StatusOr<std::vector<v1::AssertionResult>> results = trace::EvaluateSpec(
      spec.yaml, "generated spec", trace::TraceView{&run.events, nullptr});
  if (!results.ok()) {
    return absl::InternalError(
        absl::StrCat("the generated spec does not read back: ", results.status().message()));
  }
  for (const v1::AssertionResult& r : *results) {
    if (!r.passed()) {
      return absl::InternalError(absl::StrCat(
          "the generated spec fails on the run it came from: ", trace::ReportLine(r)));
    }
  }
  return spec;
}

absl::StatusOr<v1::SequenceMatch> ParseMatch(absl::string_view text) {
  if (std::optional<v1::SequenceMatch> m = trace::MatchFromName(text)) return *m;
  return absl::InvalidArgumentError(absl::StrCat(
      "match: expected exact, prefix or subsequence, got \"", absl::CHexEscape(text), "\""));
}

absl::StatusOr<SpecOptions::Arguments> ParseArguments(absl::string_view text) {
  if (text == "key") return SpecOptions::Arguments::kKey;
  if (text == "all") return SpecOptions::Arguments::kAll;
  if (text == "none") return SpecOptions::Arguments::kNone;
  return absl::InvalidArgumentError(absl::StrCat(
      "arguments: expected key, all or none, got \"", absl::CHexEscape(text), "\""));
}

}  // namespace testgen
}  // namespace understudy
