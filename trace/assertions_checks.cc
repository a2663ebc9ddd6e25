// The built-in checks (agent_sequence, phase_transitions, tool_calls,
// feedback_propagated, count, no_misses, all_consumed), each over a run's
// ordered events, and the sequence comparison three of them share.
// Dispatching to them, and what each reads, is assertions.cc.
#include <algorithm>
#include <functional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "trace/assertions.h"
#include "trace/assertions_internal.h"
#include "trace/filter.h"
#include "trace/json_subset.h"
#include "trace/render.h"
#include "trace/vocabulary.h"
#include "validation/json_bounds.h"

namespace understudy {
namespace trace {
namespace assertions_internal {

std::string Field(absl::string_view where, absl::string_view field) {
  return where.empty() ? std::string(field) : absl::StrCat(where, ".", field);
}

namespace {

const std::string& Attr(const v1::TraceEvent& e, const std::string& name) {
  static const std::string* const kEmpty = new std::string();
  auto it = e.attributes().find(name);
  return it == e.attributes().end() ? *kEmpty : it->second;
}

// The whole event behind `e`. ReadPlan makes sure a check only asks for
// the events it reads whole; an empty event stands in should one not be.
const v1::TraceEvent& Full(const EventRef& e) {
  static const v1::TraceEvent* const kEmpty = new v1::TraceEvent();
  return e.event != nullptr ? *e.event : *kEmpty;
}

// The agent an event belongs to: its own field, else gen_ai.agent.name.
absl::string_view AgentOf(const EventRef& e) {
  if (!e.agent.empty() || e.event == nullptr) return e.agent;
  return Attr(*e.event, trace::attr::kGenAiAgentName);
}

// How an item shows in a list: agents and phases bare, "(none)" for "".
std::string Bare(absl::string_view s) { return s.empty() ? "(none)" : Shorten(s, 80); }

// "[a, b]"; long lists keep their first kMaxListed items, so that the
// explanation of a long run stays readable (the divergence is named apart).
constexpr size_t kMaxListed = 40;
std::string List(const std::vector<std::string>& items) {
  if (items.size() <= kMaxListed) return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
  return absl::StrCat("[",
                      absl::StrJoin(items.begin(), items.begin() + kMaxListed, ", "), ", ... and ",
                      items.size() - kMaxListed, " more]");
}

// ---------------------------------------------------------------------------
// Sequence comparison, shared by agent_sequence, phase_transitions and
// tool_calls.

struct SequenceInput {
  // Starts the explanation: "agent_sequence (exact)".
  std::string label;
  v1::SequenceMatch match = v1::SEQUENCE_MATCH_EXACT;
  // As shown in lists.
  std::vector<std::string> expected;
  std::vector<std::string> actual;
  // The event behind each actual item.
  std::vector<int64_t> seqs;
  // Quote items when naming one ("executor" rather than executor).
  bool quote = true;
  // Whether expected[e] is satisfied by actual[a].
  std::function<bool(size_t e, size_t a)> matches;
  // Optional: why actual[a] is close to expected[e] but not it, or "" when
  // it is not close (a tool call of the right name with other arguments).
  std::function<std::string(size_t e, size_t a)> near_miss;
};

v1::AssertionResult CompareSequences(const SequenceInput& in) {
  v1::AssertionResult r;
  r.set_expected(List(in.expected));
  r.set_actual(List(in.actual));
  r.set_divergence_index(-1);
  auto item = [&](const std::string& s) { return in.quote ? Quote(s) : s; };
  auto event = [&](size_t a) { return absl::StrCat("event #", in.seqs[a]); };
  auto near_miss = [&](size_t e, size_t a) {
    return in.near_miss ? in.near_miss(e, a) : std::string();
  };
  const std::string head =
      absl::StrCat(in.label, ": expected ", r.expected(), " but the run had ", r.actual(), "; ");

  if (in.match == v1::SEQUENCE_MATCH_SUBSEQUENCE) {
    size_t a = 0;
    for (size_t e = 0; e < in.expected.size(); ++e) {
      const size_t start = a;
      while (a < in.actual.size() && !in.matches(e, a)) ++a;
      if (a < in.actual.size()) {
        r.add_event_seqs(in.seqs[a]);
        ++a;
        continue;
      }
      // Expected item e occurs nowhere after the previous match.
      r.set_passed(false);
      r.set_divergence_index(static_cast<int64_t>(e));
      std::string text = absl::StrCat(head, "the expected ", item(in.expected[e]), " (item ", e + 1,
                                      ") does not occur ");
      if (e == 0) {
        absl::StrAppend(&text, "at all");
      } else {
        absl::StrAppend(&text, "after ", item(in.actual[start - 1]), " (position ", start, ", ",
                        event(start - 1), ")");
      }
      for (size_t b = 0; b < start; ++b) {
        if (in.matches(e, b)) {
          absl::StrAppend(&text, "; it occurs only before that (position ", b + 1, ", ", event(b),
                          ")");
          break;
        }
      }
      for (size_t b = start; b < in.actual.size(); ++b) {
        std::string why = near_miss(e, b);
        if (!why.empty()) {
          absl::StrAppend(&text, start == 0 ? "; the closest is " : "; the closest after it is ",
                          item(in.actual[b]), " (", event(b), "): ", why);
          r.add_event_seqs(in.seqs[b]);
          break;
        }
      }
      r.set_explanation(std::move(text));
      return r;
    }
    r.set_passed(true);
    r.set_explanation(absl::StrCat(in.label, ": found ", r.expected(), " in that order in ",
                                   r.actual(), " (events ",
                                   SeqList({r.event_seqs().begin(), r.event_seqs().end()}), ")"));
    if (in.expected.empty()) {
      r.set_explanation(absl::StrCat(in.label, ": nothing was expected; the run had ", r.actual()));
    }
    return r;
  }

  // EXACT and PREFIX: position by position.
  const bool exact = in.match == v1::SEQUENCE_MATCH_EXACT;
  const size_t n = std::min(in.expected.size(), in.actual.size());
  for (size_t i = 0; i < n; ++i) {
    if (in.matches(i, i)) {
      r.add_event_seqs(in.seqs[i]);
      continue;
    }
    r.set_passed(false);
    r.set_divergence_index(static_cast<int64_t>(i));
    r.add_event_seqs(in.seqs[i]);
    std::string text =
        absl::StrCat(head, "they first differ at position ", i + 1, ": expected ",
                     item(in.expected[i]), ", got ", item(in.actual[i]), " (", event(i), ")");
    std::string why = near_miss(i, i);
    if (!why.empty()) absl::StrAppend(&text, ": ", why);
    r.set_explanation(std::move(text));
    return r;
  }
  if (in.actual.size() < in.expected.size()) {
    r.set_passed(false);
    r.set_divergence_index(static_cast<int64_t>(n));
    r.set_explanation(absl::StrCat(
        head, "they first differ at position ", n + 1, ": expected ", item(in.expected[n]),
        n == 0 ? ", but the run had none"
               : absl::StrCat(", but the run's sequence ended after ", Count(n, "item", "items"))));
    return r;
  }
  if (exact && in.actual.size() > in.expected.size()) {
    r.set_passed(false);
    r.set_divergence_index(static_cast<int64_t>(n));
    r.add_event_seqs(in.seqs[n]);
    r.set_explanation(absl::StrCat(head, "they first differ at position ", n + 1,
                                   ": expected the sequence to end, got ", item(in.actual[n]), " (",
                                   event(n), ")"));
    return r;
  }
  r.set_passed(true);
  std::string seqs =
      r.event_seqs().empty()
          ? std::string()
          : absl::StrCat(" (events ", SeqList({r.event_seqs().begin(), r.event_seqs().end()}), ")");
  if (exact) {
    r.set_explanation(absl::StrCat(in.label, ": the run had ", r.actual(), " as expected", seqs));
  } else {
    r.set_explanation(absl::StrCat(in.label, ": the run's ", r.actual(), " starts with ",
                                   r.expected(), " as expected", seqs));
  }
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------
// The checks.

namespace {

// An agent's turn for agent_sequence: a model exchange, or a prompt a
// simulated terminal agent took (`understudy sim`) without asking a model —
// a model-backed one (understudy.sim.model = "true") has its exchange.
bool IsAgentTurn(const EventRef& e) {
  if (e.kind == trace::event::kExchange) return true;
  return e.kind == sim_event::kPrompt && Attr(Full(e), sim_attr::kModel) != "true";
}

// A tool call: one a model asked for, or one a simulated agent made.
bool IsToolCall(const EventRef& e) {
  return e.kind == trace::event::kToolCall || e.kind == sim_event::kToolCall;
}

// The call id of a tool event ("" when it has none).
std::string CallId(const EventRef& e) { return Attr(Full(e), trace::attr::kGenAiToolCallId); }

}  // namespace

v1::AssertionResult AgentSequence(const v1::AgentSequenceAssertion& a, const Events& events) {
  SequenceInput in;
  in.label = absl::StrCat("agent_sequence (", MatchName(a.match()),
                          a.collapse_repeats() ? ", repeats collapsed" : "", ")");
  in.match = a.match();
  std::vector<std::string> expected(a.agents().begin(), a.agents().end());
  std::vector<absl::string_view> actual;
  // Calls over A2A not yet answered, by called agent: the called agent's
  // turn, its own exchanges meanwhile part of it (a replay, which answers
  // the call from the recording, has none, and the same sequence).
  absl::flat_hash_map<absl::string_view, int> open_calls;
  for (const EventRef& e : events) {
    absl::string_view agent;
    if (e.kind == trace::event::kAgentCall) {
      agent = Attr(Full(e), trace::attr::kA2aAgent);
      ++open_calls[agent];
    } else if (e.kind == trace::event::kAgentResult) {
      auto open = open_calls.find(Attr(Full(e), trace::attr::kA2aAgent));
      if (open != open_calls.end() && open->second > 0) --open->second;
      continue;
    } else if (IsAgentTurn(e)) {
      agent = AgentOf(e);
      auto open = open_calls.find(agent);
      if (open != open_calls.end() && open->second > 0) continue;
    } else {
      continue;
    }
    if (a.collapse_repeats() && !actual.empty() && actual.back() == agent) continue;
    actual.push_back(agent);
    in.seqs.push_back(e.seq);
  }
  for (const std::string& s : expected) in.expected.push_back(Bare(s));
  for (absl::string_view s : actual) in.actual.push_back(Bare(s));
  in.matches = [&](size_t e, size_t x) { return expected[e] == actual[x]; };
  return CompareSequences(in);
}

v1::AssertionResult PhaseTransitions(const v1::PhaseTransitionsAssertion& a, const Events& events) {
  SequenceInput in;
  in.label = absl::StrCat("phase_transitions (", MatchName(a.match()), ")");
  in.match = a.match();
  std::vector<std::string> expected(a.phases().begin(), a.phases().end());
  std::vector<std::string> actual;
  for (const EventRef& e : events) {
    if (e.kind != trace::event::kPhaseTransition) continue;
    actual.push_back(Attr(Full(e), trace::attr::kPhaseTo));
    in.seqs.push_back(e.seq);
  }
  for (const std::string& s : expected) in.expected.push_back(Bare(s));
  for (const std::string& s : actual) in.actual.push_back(Bare(s));
  in.matches = [&](size_t e, size_t x) { return expected[e] == actual[x]; };
  return CompareSequences(in);
}

namespace {

struct Call {
  std::string name;
  std::string arguments_text;
  // Parsed arguments; discarded (is_discarded()) when not JSON.
  nlohmann::json arguments;
};

std::string RenderCall(const std::string& name, const std::string& arguments_text,
                       const nlohmann::json& arguments) {
  if (arguments_text.empty()) return Bare(name);
  std::string args = arguments.is_discarded()
                         ? arguments_text
                         : arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return absl::StrCat(Bare(name), "(", Shorten(args, 100), ")");
}

// A call of the run as a report shows it: whole when it fits in
// kShownArguments bytes; else only the keys the expectations for its tool
// name (`named`) check, each shortened, and how many others there are — so
// that a long first argument (a file's content) never hides the one the
// test is about.
constexpr size_t kShownArguments = 100;

std::string RenderActualCall(const std::string& name, const std::string& arguments_text,
                             const nlohmann::json& arguments,
                             const std::vector<std::string>* named) {
  std::string whole = RenderCall(name, arguments_text, arguments);
  if (named == nullptr || named->empty() || !arguments.is_object() ||
      arguments_text.size() <= kShownArguments) {
    return whole;
  }
  const std::string dumped =
      arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (dumped.size() <= kShownArguments) return whole;
  std::vector<std::string> shown;
  for (const std::string& key : *named) {
    auto it = arguments.find(key);
    if (it == arguments.end()) continue;
    shown.push_back(absl::StrCat(
        nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), ":",
        Shorten(it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                kShownArguments)));
  }
  const size_t others = arguments.size() - shown.size();
  if (others > 0) {
    shown.push_back(absl::StrCat("... ", others, shown.empty() ? "" : " more",
                                 others == 1 ? " key" : " keys"));
  }
  return absl::StrCat(Bare(name), "({", absl::StrJoin(shown, ", "), "})");
}

}  // namespace

absl::StatusOr<v1::AssertionResult> ToolCalls(const v1::ToolCallsAssertion& a, const Events& events,
                                              absl::string_view where) {
  std::vector<Call> expected;
  for (int i = 0; i < a.calls_size(); ++i) {
    const v1::ExpectedToolCall& c = a.calls(i);
    const std::string path = absl::StrCat(Field(where, "calls"), "[", i, "]");
    if (c.name().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ".name: must not be empty"));
    }
    Call call{c.name(), c.arguments(), nlohmann::json::object()};
    if (!c.arguments().empty()) {
      // Too deep or not UTF-8: refused with the reason; anything else that
      // is not a JSON object, with what to give instead.
      US_RETURN_IF_ERROR(
          validation::CheckJsonText(c.arguments(), absl::StrCat(path, ".arguments")));
      call.arguments = validation::ParseJsonOrDiscarded<nlohmann::json>(c.arguments());
      if (!call.arguments.is_object()) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ".arguments: not a JSON object: ", Quote(c.arguments()),
            "; give a JSON object whose fields the call's arguments must contain, or \"\" for "
            "any arguments"));
      }
    }
    expected.push_back(std::move(call));
  }

  SequenceInput in;
  in.label = a.agent().empty()
                 ? absl::StrCat("tool_calls (", MatchName(a.match()), ")")
                 : absl::StrCat("tool_calls by ", Bare(a.agent()), " (", MatchName(a.match()), ")");
  in.match = a.match();
  in.quote = false;
  std::vector<Call> actual;
  // A model-backed simulated agent traces its model's tool calls again as
  // sim.tool_call, with the model's ids: each call counts once.
  absl::flat_hash_set<std::string> model_call_ids;
  for (const EventRef& e : events) {
    if (!IsToolCall(e)) continue;
    if (!a.agent().empty() && AgentOf(e) != a.agent()) continue;
    if (e.kind == trace::event::kToolCall) {
      if (std::string id = CallId(e); !id.empty()) model_call_ids.insert(std::move(id));
    } else if (model_call_ids.contains(CallId(e))) {
      continue;
    }
    Call call{Attr(Full(e), trace::attr::kGenAiToolName), Attr(Full(e), trace::attr::kGenAiToolCallArguments),
              nlohmann::json()};
    call.arguments = call.arguments_text.empty()
                         ? nlohmann::json::object()
                         : validation::ParseJsonOrDiscarded<nlohmann::json>(call.arguments_text);
    actual.push_back(std::move(call));
    in.seqs.push_back(e.seq);
  }
  // The keys each tool name's expectations check, each once.
  absl::flat_hash_map<std::string, std::vector<std::string>> named;
  for (const Call& c : expected) {
    std::vector<std::string>& keys = named[c.name];
    if (!c.arguments.is_object()) continue;
    for (const auto& [key, value] : c.arguments.items()) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    }
  }
  for (const Call& c : expected)
    in.expected.push_back(RenderCall(c.name, c.arguments_text, c.arguments));
  for (const Call& c : actual) {
    auto keys = named.find(c.name);
    in.actual.push_back(RenderActualCall(c.name, c.arguments_text, c.arguments,
                                         keys == named.end() ? nullptr : &keys->second));
  }
  // Why actual call x does not satisfy expected call e, or "" when it does.
  auto mismatch = [&](size_t e, size_t x) -> std::string {
    const Call& want = expected[e];
    const Call& got = actual[x];
    if (want.name != got.name) return absl::StrCat("a call of ", Bare(got.name));
    if (want.arguments_text.empty()) return "";
    if (got.arguments.is_discarded()) return "its arguments are not valid JSON";
    std::string difference;
    if (JsonSubset(want.arguments, got.arguments, &difference)) return "";
    return absl::StrCat("arguments differ ", difference);
  };
  in.matches = [&](size_t e, size_t x) { return mismatch(e, x).empty(); };
  in.near_miss = [&](size_t e, size_t x) -> std::string {
    if (expected[e].name != actual[x].name) return "";
    return mismatch(e, x);
  };
  return CompareSequences(in);
}

namespace {

bool ResponseHas(const v1::TraceEvent& e, const std::string& keyword) {
  const v1::Message& m = e.response().message();
  if (absl::StrContains(m.content(), keyword)) return true;
  for (const v1::ToolCall& c : m.tool_calls()) {
    if (absl::StrContains(c.arguments(), keyword)) return true;
  }
  return false;
}

bool RequestHas(const v1::TraceEvent& e, const std::string& keyword) {
  for (const v1::Message& m : e.request().messages()) {
    if (absl::StrContains(m.content(), keyword)) return true;
    for (const v1::ToolCall& c : m.tool_calls()) {
      if (absl::StrContains(c.arguments(), keyword)) return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<v1::AssertionResult> FeedbackPropagated(const v1::FeedbackPropagatedAssertion& a,
                                                       const Events& events,
                                                       absl::string_view where) {
  for (const auto& [field, value] : {std::pair<const char*, const std::string*>{"from", &a.from()},
                                     {"to", &a.to()},
                                     {"keyword", &a.keyword()}}) {
    if (value->empty()) {
      return absl::InvalidArgumentError(absl::StrCat(Field(where, field), ": must not be empty"));
    }
  }
  const std::string from = Bare(a.from()), to = Bare(a.to()), keyword = Quote(a.keyword());
  v1::AssertionResult r;
  r.set_divergence_index(-1);
  r.set_expected(
      absl::StrCat(keyword, " in an answer of ", from, ", then in a later request of ", to));
  std::vector<int64_t> had, lacked;
  std::vector<std::string> agents;  // with exchanges, in order of appearance
  for (const EventRef& e : events) {
    if (e.kind != trace::event::kExchange) continue;
    const absl::string_view agent = AgentOf(e);
    if (std::find(agents.begin(), agents.end(), agent) == agents.end()) agents.emplace_back(agent);
    if (agent != a.from()) continue;
    (ResponseHas(Full(e), a.keyword()) ? had : lacked).push_back(e.seq);
  }
  const std::string head =
      absl::StrCat("feedback_propagated: expected ", keyword, " to go from ", from, " to ", to);
  if (had.empty()) {
    r.set_passed(false);
    r.set_actual(absl::StrCat("no answer of ", from, " has it"));
    std::vector<std::string> shown;
    for (const std::string& agent : agents) shown.push_back(Bare(agent));
    if (lacked.empty()) {
      r.set_explanation(absl::StrCat(head, ", but ", from,
                                     " made no exchanges (agents with exchanges: ",
                                     shown.empty() ? "none" : absl::StrJoin(shown, ", "), ")"));
    } else {
      r.set_explanation(absl::StrCat(
          head, ", but no answer of ", from, " has it: ",
          lacked.size() == 1 ? "its only exchange"
                             : absl::StrCat("its ", lacked.size(), " exchanges"),
          " (", SeqList(lacked), ") ", lacked.size() == 1 ? "lacks it in its" : "lack it in their",
          " response content and tool call arguments"));
      r.mutable_event_seqs()->Add(lacked.begin(), lacked.end());
    }
    return r;
  }
  // The earliest answer with the keyword leaves the most later requests.
  const int64_t said = had.front();
  std::vector<int64_t> checked;
  for (const EventRef& e : events) {
    if (e.kind != trace::event::kExchange || e.seq <= said || AgentOf(e) != a.to()) continue;
    if (RequestHas(Full(e), a.keyword())) {
      r.set_passed(true);
      r.add_event_seqs(said);
      r.add_event_seqs(e.seq);
      r.set_actual(absl::StrCat("answer #", said, ", later request #", e.seq));
      r.set_explanation(absl::StrCat("feedback_propagated: ", from, "'s answer in exchange #", said,
                                     " has ", keyword, " and ", to,
                                     "'s later request in exchange #", e.seq, " carries it"));
      return r;
    }
    checked.push_back(e.seq);
  }
  r.set_passed(false);
  r.mutable_event_seqs()->Add(had.begin(), had.end());
  r.mutable_event_seqs()->Add(checked.begin(), checked.end());
  std::string answered = absl::StrCat(from, "'s ", had.size() == 1 ? "answer" : "answers",
                                      " in exchange", had.size() == 1 ? " " : "s ", SeqList(had),
                                      had.size() == 1 ? " has" : " have", " it");
  if (!lacked.empty()) {
    absl::StrAppend(&answered, " (", SeqList(lacked), lacked.size() == 1 ? " lacks" : " lack",
                    " it)");
  }
  if (checked.empty()) {
    r.set_actual(absl::StrCat("answer #", said, ", no later exchange of ", to));
    r.set_explanation(
        absl::StrCat(head, ": ", answered, ", but ", to, " made no exchange after #", said));
  } else {
    r.set_actual(absl::StrCat("answer #", said, ", no later request of ", to, " has it"));
    r.set_explanation(
        absl::StrCat(head, ": ", answered, ", but ",
                     checked.size() == 1
                         ? absl::StrCat(to, "'s only exchange after #", said, " (",
                                        SeqList(checked), ") does not carry it")
                         : absl::StrCat("none of ", to, "'s ", checked.size(), " exchanges after #",
                                        said, " (", SeqList(checked), ") carries it"),
                     " in any message of its request"));
  }
  return r;
}

absl::StatusOr<v1::AssertionResult> CountCheck(const v1::CountAssertion& a, const Events& events,
                                               absl::string_view where) {
  if (!v1::Comparison_IsValid(a.comparison())) {
    return absl::InvalidArgumentError(absl::StrCat(Field(where, "comparison"),
                                                   ": unknown Comparison value ",
                                                   static_cast<int>(a.comparison())));
  }
  US_ASSIGN_OR_RETURN(EventFilter filter, EventFilter::Create(a.filter(), Field(where, "filter")));
  // Only kinds and the seq range are read from events that are not whole
  // (ReadPlan reads every event a richer filter looks at whole).
  const v1::EventFilter& f = a.filter();
  auto header_matches = [&f](const EventRef& e) {
    if (!f.kinds().empty() && std::find(f.kinds().begin(), f.kinds().end(), e.kind) == f.kinds().end()) {
      return false;
    }
    return (f.min_seq() == 0 || e.seq >= f.min_seq()) && (f.max_seq() == 0 || e.seq <= f.max_seq());
  };
  std::vector<int64_t> seqs;
  for (const EventRef& e : events) {
    if (e.event != nullptr ? filter.Matches(*e.event) : header_matches(e)) seqs.push_back(e.seq);
  }
  const int64_t n = static_cast<int64_t>(seqs.size());
  v1::AssertionResult r;
  r.set_divergence_index(-1);
  r.set_passed(Compare(a.comparison(), n, a.n()));
  r.set_expected(absl::StrCat(ComparisonSymbol(a.comparison()), " ", a.n()));
  r.set_actual(absl::StrCat(n));
  r.mutable_event_seqs()->Add(seqs.begin(), seqs.end());
  const std::string head = absl::StrCat("count (", filter.Describe(), "): ");
  const std::string listed = seqs.empty() ? "" : absl::StrCat(" (", SeqList(seqs), ")");
  if (r.passed()) {
    r.set_explanation(absl::StrCat(head, Count(seqs.size(), "event", "events"), " matched", listed,
                                   ", as expected (", ComparisonWords(a.comparison(), a.n()), ")"));
  } else {
    r.set_explanation(absl::StrCat(head, "expected ", ComparisonWords(a.comparison(), a.n()),
                                   a.n() == 1 ? " event" : " events", " to match, but ",
                                   seqs.empty() ? "none did" : absl::StrCat(n, listed, " did")));
  }
  return r;
}

v1::AssertionResult NoMisses(const Events& events) {
  v1::AssertionResult r;
  r.set_divergence_index(-1);
  r.set_expected("0 misses");
  std::vector<std::string> misses;
  for (const EventRef& e : events) {
    if (e.kind != trace::event::kMiss) continue;
    r.add_event_seqs(e.seq);
    std::string line = absl::StrCat("event #", e.seq);
    if (!AgentOf(e).empty()) absl::StrAppend(&line, " (agent ", AgentOf(e), ")");
    const std::string& report = Attr(Full(e), trace::attr::kMissReport);
    if (!report.empty()) absl::StrAppend(&line, ": ", Shorten(report, 600));
    misses.push_back(std::move(line));
  }
  r.set_actual(Count(misses.size(), "miss", "misses"));
  r.set_passed(misses.empty());
  if (misses.empty()) {
    r.set_explanation("no_misses: the run had no misses");
  } else {
    r.set_explanation(absl::StrCat("no_misses: the run had ",
                                   Count(misses.size(), "miss", "misses"), ": ",
                                   absl::StrJoin(misses, "; ")));
  }
  return r;
}

absl::StatusOr<v1::AssertionResult> AllConsumed(const TraceView& view, absl::string_view where) {
  if (view.summary == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        where.empty() ? "" : absl::StrCat(where, ": "),
        "all_consumed: the run is still active; end it first (which recorded exchanges went "
        "unused is known only then)"));
  }
  v1::AssertionResult r;
  r.set_divergence_index(-1);
  r.set_expected("[]");
  std::vector<std::string> unused;
  for (const v1::ExchangeRef& ref : view.summary->unconsumed()) {
    unused.push_back(ref.agent().empty()
                         ? absl::StrCat("#", ref.seq())
                         : absl::StrCat("#", ref.seq(), " (agent ", ref.agent(), ")"));
  }
  r.set_actual(List(unused));
  r.set_passed(unused.empty());
  if (unused.empty()) {
    r.set_explanation("all_consumed: every recorded exchange was used");
  } else {
    r.set_explanation(absl::StrCat(
        "all_consumed: ", Count(unused.size(), "recorded exchange", "recorded exchanges"),
        " of the session ", unused.size() == 1 ? "was" : "were",
        " never used: ", absl::StrJoin(unused, ", ")));
  }
  return r;
}

}  // namespace assertions_internal
}  // namespace trace
}  // namespace understudy
