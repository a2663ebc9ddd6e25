// Reading a spec document: validation that reports every problem at once,
// and the parsed items it yields (spec_internal.h). Evaluation is spec.cc.
#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "trace/render.h"
#include "trace/spec.h"
#include "trace/spec_internal.h"
#include "validation/json_bounds.h"
#include "validation/suggest.h"
#include "validation/yaml_checker.h"
#include "yaml-cpp/yaml.h"

namespace understudy {
namespace trace {
namespace spec_internal {

std::string Join(const std::string& path, absl::string_view key) {
  return validation::JoinPath(path, key);
}

namespace {

constexpr Keys kTopKeys = {"schema", "session", "description", "assertions"};
constexpr Keys kCheckKeys = {
    "agent_sequence", "phase_transitions", "tool_calls",  "feedback_propagated",
    "count",          "no_misses",         "all_consumed"};
constexpr Keys kSelectItemKeys = {"name", "select", "position", "expect"};
constexpr Keys kSelectKeys = {
    "kind", "agent", "tool", "phase", "attributes", "attribute_patterns", "min_seq", "max_seq"};
constexpr Keys kExpectKeys = {"count", "attributes"};
constexpr Keys kAttributeOps = {"equals", "matches", "json_subset"};
constexpr Keys kAgentSequenceKeys = {"agents", "match", "collapse_repeats"};
constexpr Keys kPhaseTransitionsKeys = {"phases", "match"};
constexpr Keys kToolCallsKeys = {"agent", "calls", "match"};
constexpr Keys kCallKeys = {"name", "arguments"};
constexpr Keys kFeedbackKeys = {"from", "to", "keyword"};
constexpr Keys kMatchValues = {"exact", "subsequence", "prefix"};
constexpr Keys kPositionValues = {"first", "last", "all"};

// ---------------------------------------------------------------------------
// Validation: every problem at once, each with its path, position and a
// suggestion when one is close (validation/yaml_checker.h).

using validation::DescribeNode;
using validation::Names;
using validation::Problem;
using validation::Suggest;

std::string At(const std::string& path, size_t i) { return validation::JoinPath(path, i); }
// Map keys that are data (attribute names) rather than fields.
std::string Key(const std::string& path, const std::string& key) {
  return validation::KeyPath(path, key);
}
nlohmann::json ToJson(const YAML::Node& n) { return validation::YamlToJson(n); }

class Checker : public validation::YamlChecker {
 public:
  explicit Checker(validation::Report* report) : YamlChecker(report) {}

  bool True(const YAML::Node& n, const std::string& path, absl::string_view why) {
    if (n.IsScalar()) {
      const std::string s = absl::AsciiStrToLower(n.Scalar());
      if (s == "true") return true;
      if (s == "false") {
        Error(n, path, absl::StrCat("must be true (", why, ")"),
              absl::StrCat("write ", validation::ExampleAt(path, "true"),
                           ", or leave the item out"));
        return false;
      }
    }
    Error(n, path, absl::StrCat("expected true, got ", DescribeNode(n)),
          absl::StrCat("write ", validation::ExampleAt(path, "true")));
    return false;
  }

  std::shared_ptr<const RE2> Regex(const YAML::Node& n, const std::string& path) {
    return YamlChecker::Regex(n, path);
  }

  bool StringList(const YAML::Node& n, const std::string& path, std::vector<std::string>* out) {
    return YamlChecker::StringList(n, path, out, /*non_empty=*/true);
  }

  // A scalar that must be one of `values`.
  bool Choice(const YAML::Node& n, const std::string& path, Keys values, std::string* out) {
    return YamlChecker::Choice(n, path, Names(values), out);
  }

  bool Match(const YAML::Node& n, const std::string& path, v1::SequenceMatch* out) {
    std::string s;
    if (!Choice(n, path, kMatchValues, &s)) return false;
    *out = MatchFromName(s).value_or(v1::SEQUENCE_MATCH_EXACT);  // Choice checked the word
    return true;
  }

  // Exactly one `op: n` among the keys of mapping `n` (op one of kOps, n >= 0).
  bool Comparison(const YAML::Node& n, const std::string& path, v1::Comparison* op,
                  int64_t* value) {
    std::vector<std::string> found;
    const std::vector<std::string> ops = Names(kOps);
    bool ok = true;
    for (size_t i = 0; i < ops.size(); ++i) {
      const YAML::Node v = n[ops[i]];
      if (!v.IsDefined()) continue;
      found.push_back(ops[i]);
      *op = kOpValues[i];
      if (!Int(v, Join(path, ops[i]), value, 0)) ok = false;
    }
    if (found.empty()) {
      Error(n, path, absl::StrCat("missing a comparison: one of ", absl::StrJoin(ops, ", ")),
            absl::StrCat("e.g. ", validation::ExampleAt(path, "{ge: 1}")));
      return false;
    }
    if (found.size() > 1) {
      Error(KeyNode(n, found[1]), Join(path, found[1]),
            absl::StrCat("one comparison only; this one already has ", found[0]),
            absl::StrCat("keep one of ", found[0], " and ", found[1],
                         "; two comparisons take two items"));
      return false;
    }
    return ok;
  }

  void Document(const YAML::Node& root, std::vector<Item>* items) {
    if (!root.IsMap()) {
      Error(root, "",
            absl::StrCat("expected a mapping with an `assertions` list, got ", DescribeNode(root)));
      return;
    }
    Map(root, "", Names(kTopKeys));
    std::string schema;
    if (root["schema"].IsDefined() && String(root["schema"], "schema", &schema) &&
        std::find(std::begin(kSpecSchemas), std::end(kSpecSchemas), schema) ==
            std::end(kSpecSchemas)) {
      Error(root["schema"], "schema",
            absl::StrCat("unknown schema \"", schema, "\"; this build reads ",
                         absl::StrJoin(kSpecSchemas, ", ")),
            absl::StrCat("use schema: ", kSpecSchema));
    }
    for (const char* key : {"session", "description"}) {
      std::string ignored;
      if (root[key].IsDefined()) String(root[key], key, &ignored);
    }
    const YAML::Node list = root["assertions"];
    if (!list.IsDefined()) {
      Error(root, "", "missing required field \"assertions\"");
      return;
    }
    if (!list.IsSequence()) {
      Error(list, "assertions", absl::StrCat("expected a list, got ", DescribeNode(list)),
            "write a list of items, each on a line starting with `- `, e.g. `- no_misses: true`");
      return;
    }
    if (list.size() == 0) {
      Error(list, "assertions", "no assertions; add at least one");
      return;
    }
    for (size_t i = 0; i < list.size(); ++i) {
      Item item;
      item.path = At("assertions", i);
      if (ItemNode(list[i], item.path, &item)) items->push_back(std::move(item));
    }
  }

  bool ItemNode(const YAML::Node& n, const std::string& path, Item* item) {
    const size_t before = problem_count();
    if (!Map(n, path, Names(kSelectItemKeys, kCheckKeys))) return false;
    const bool unknown_fields = problem_count() > before;
    std::string name;
    if (n["name"].IsDefined()) NonEmptyString(n["name"], Join(path, "name"), &name);
    std::vector<std::string> checks;
    for (const char* key : kCheckKeys) {
      if (n[key].IsDefined()) checks.push_back(key);
    }
    const bool has_select = n["select"].IsDefined();
    if (checks.empty() && !has_select) {
      // A misspelled check (reported above) is the likelier story.
      if (unknown_fields) return false;
      Error(n, path,
            absl::StrCat("no check: give select (with expect), or one of ",
                         absl::StrJoin(Names(kCheckKeys), ", ")));
      return false;
    }
    if (has_select && !checks.empty()) {
      Error(n[checks[0]], Join(path, checks[0]),
            "an item holds one check; this one already has select (make it its own item)");
      return false;
    }
    if (checks.size() > 1) {
      Error(n[checks[1]], Join(path, checks[1]),
            absl::StrCat("an item holds one check; this one already has ", checks[0],
                         " (make it its own item)"));
      return false;
    }
    if (!has_select) {
      for (const char* key : {"position", "expect"}) {
        if (n[key].IsDefined()) {
          Error(n[key], Join(path, key),
                absl::StrCat("only with select; ", checks[0], " takes its settings inside it"));
        }
      }
      v1::Assertion a;
      a.set_name(name);
      Builtin(n[checks[0]], Join(path, checks[0]), checks[0], &a);
      item->builtin = std::move(a);
    } else {
      SelectCheck c;
      c.name = name;
      SelectItem(n, path, &c);
      item->select = std::move(c);
    }
    return problem_count() == before;
  }

  void Builtin(const YAML::Node& n, const std::string& path, const std::string& kind,
               v1::Assertion* a) {
    if (kind == "agent_sequence") {
      v1::AgentSequenceAssertion* s = a->mutable_agent_sequence();
      std::vector<std::string> agents;
      if (n.IsSequence()) {
        StringList(n, path, &agents);
      } else if (Map(n, path, Names(kAgentSequenceKeys))) {
        if (Required(n, path, "agents")) StringList(n["agents"], Join(path, "agents"), &agents);
        v1::SequenceMatch m = v1::SEQUENCE_MATCH_EXACT;
        if (n["match"].IsDefined() && Match(n["match"], Join(path, "match"), &m)) s->set_match(m);
        bool collapse = false;
        if (n["collapse_repeats"].IsDefined() &&
            Bool(n["collapse_repeats"], Join(path, "collapse_repeats"), &collapse)) {
          s->set_collapse_repeats(collapse);
        }
      }
      for (std::string& agent : agents) s->add_agents(std::move(agent));
    } else if (kind == "phase_transitions") {
      v1::PhaseTransitionsAssertion* s = a->mutable_phase_transitions();
      std::vector<std::string> phases;
      if (n.IsSequence()) {
        StringList(n, path, &phases);
      } else if (Map(n, path, Names(kPhaseTransitionsKeys))) {
        if (Required(n, path, "phases")) StringList(n["phases"], Join(path, "phases"), &phases);
        v1::SequenceMatch m = v1::SEQUENCE_MATCH_EXACT;
        if (n["match"].IsDefined() && Match(n["match"], Join(path, "match"), &m)) s->set_match(m);
      }
      for (std::string& phase : phases) s->add_phases(std::move(phase));
    } else if (kind == "tool_calls") {
      v1::ToolCallsAssertion* s = a->mutable_tool_calls();
      if (!Map(n, path, Names(kToolCallsKeys))) return;
      std::string agent;
      if (n["agent"].IsDefined() && NonEmptyString(n["agent"], Join(path, "agent"), &agent)) {
        s->set_agent(agent);
      }
      v1::SequenceMatch m = v1::SEQUENCE_MATCH_EXACT;
      if (n["match"].IsDefined() && Match(n["match"], Join(path, "match"), &m)) s->set_match(m);
      if (!Required(n, path, "calls")) return;
      const YAML::Node calls = n["calls"];
      const std::string calls_path = Join(path, "calls");
      if (!calls.IsSequence()) {
        Error(calls, calls_path,
              absl::StrCat("expected a list of calls, got ", DescribeNode(calls)),
              "write a list of tool names or {name, arguments} mappings, e.g. `calls: [read_file, "
              "{name: write_file, arguments: {path: a.py}}]`");
        return;
      }
      for (size_t i = 0; i < calls.size(); ++i) ExpectedCall(calls[i], At(calls_path, i), s);
    } else if (kind == "feedback_propagated") {
      v1::FeedbackPropagatedAssertion* s = a->mutable_feedback_propagated();
      if (!Map(n, path, Names(kFeedbackKeys))) return;
      std::string value;
      if (Required(n, path, "from") && NonEmptyString(n["from"], Join(path, "from"), &value)) {
        s->set_from(value);
      }
      if (Required(n, path, "to") && NonEmptyString(n["to"], Join(path, "to"), &value)) {
        s->set_to(value);
      }
      if (Required(n, path, "keyword") &&
          NonEmptyString(n["keyword"], Join(path, "keyword"), &value)) {
        s->set_keyword(value);
      }
    } else if (kind == "count") {
      v1::CountAssertion* s = a->mutable_count();
      if (!Map(n, path, Names({"select"}, kOps))) return;
      if (n["select"].IsDefined()) Select(n["select"], Join(path, "select"), s->mutable_filter());
      v1::Comparison op = v1::COMPARISON_EQ;
      int64_t value = 0;
      if (Comparison(n, path, &op, &value)) {
        s->set_comparison(op);
        s->set_n(value);
      }
    } else if (kind == "no_misses") {
      if (True(n, path, "false checks nothing; to require misses, count kind: miss")) {
        a->set_no_misses(true);
      }
    } else if (kind == "all_consumed") {
      if (True(n, path, "false checks nothing")) a->set_all_consumed(true);
    }
  }

  bool Required(const YAML::Node& m, const std::string& path, const char* key) {
    return Require(m, path, key);
  }

  void ExpectedCall(const YAML::Node& n, const std::string& path, v1::ToolCallsAssertion* out) {
    v1::ExpectedToolCall* call = out->add_calls();
    if (n.IsScalar()) {
      std::string name;
      if (NonEmptyString(n, path, &name)) call->set_name(name);
      return;
    }
    if (!Map(n, path, Names(kCallKeys))) return;
    std::string name;
    if (Required(n, path, "name") && NonEmptyString(n["name"], Join(path, "name"), &name)) {
      call->set_name(name);
    }
    const YAML::Node args = n["arguments"];
    if (!args.IsDefined() || args.IsNull()) return;
    const std::string args_path = Join(path, "arguments");
    if (args.IsMap()) {
      call->set_arguments(ToJson(args).dump());
    } else if (args.IsScalar()) {
      absl::StatusOr<nlohmann::json> parsed =
          validation::ParseJson<nlohmann::json>(args.Scalar(), "text");
      if (!parsed.ok() && validation::JsonErrorOf(parsed.status()) != validation::JsonError::kSyntax) {
        Error(args, args_path, std::string(parsed.status().message()));  // too deep
        return;
      }
      if (!parsed.ok() || !parsed->is_object()) {
        Error(args, args_path,
              absl::StrCat("expected a mapping or a JSON object's text, got ", DescribeNode(args)),
              "write the arguments to check as a mapping, e.g. `arguments: {path: a.py}`");
        return;
      }
      call->set_arguments(parsed->dump());
    } else {
      Error(args, args_path, absl::StrCat("expected a mapping, got ", DescribeNode(args)),
            "write the arguments to check as a mapping, e.g. `arguments: {path: a.py}`");
    }
  }

  void Select(const YAML::Node& n, const std::string& path, v1::EventFilter* f) {
    if (!Map(n, path, Names(kSelectKeys))) return;
    const YAML::Node kind = n["kind"];
    if (kind.IsDefined()) {
      std::vector<std::string> kinds;
      if (kind.IsSequence()) {
        StringList(kind, Join(path, "kind"), &kinds);
      } else {
        std::string k;
        if (NonEmptyString(kind, Join(path, "kind"), &k)) kinds.push_back(k);
      }
      for (std::string& k : kinds) f->add_kinds(std::move(k));
    }
    std::string value;
    if (n["agent"].IsDefined() && NonEmptyString(n["agent"], Join(path, "agent"), &value)) {
      f->set_agent(value);
    }
    if (n["tool"].IsDefined() && NonEmptyString(n["tool"], Join(path, "tool"), &value)) {
      f->set_tool(value);
    }
    if (n["phase"].IsDefined() && NonEmptyString(n["phase"], Join(path, "phase"), &value)) {
      f->set_phase(value);
    }
    if (n["attributes"].IsDefined()) {
      const std::string at = Join(path, "attributes");
      for (const auto& [key, v] : Entries(n["attributes"], at)) {
        if (String(v, Key(at, key.Scalar()), &value)) {
          (*f->mutable_attributes())[key.Scalar()] = value;
        }
      }
    }
    if (n["attribute_patterns"].IsDefined()) {
      const std::string at = Join(path, "attribute_patterns");
      for (const auto& [key, v] : Entries(n["attribute_patterns"], at)) {
        if (Regex(v, Key(at, key.Scalar())) != nullptr) {
          (*f->mutable_attribute_patterns())[key.Scalar()] = v.Scalar();
        }
      }
    }
    int64_t seq = 0;
    if (n["min_seq"].IsDefined() && Int(n["min_seq"], Join(path, "min_seq"), &seq, 1)) {
      f->set_min_seq(seq);
    }
    if (n["max_seq"].IsDefined() && Int(n["max_seq"], Join(path, "max_seq"), &seq, 1)) {
      f->set_max_seq(seq);
    }
    if (f->min_seq() > 0 && f->max_seq() > 0 && f->min_seq() > f->max_seq()) {
      Error(n["min_seq"], Join(path, "min_seq"),
            absl::StrCat(f->min_seq(), " is greater than max_seq ", f->max_seq(),
                         "; nothing could match"));
    }
  }

  void SelectItem(const YAML::Node& n, const std::string& path, SelectCheck* c) {
    Select(n["select"], Join(path, "select"), &c->select);
    const YAML::Node position = n["position"];
    if (position.IsDefined()) SelectPosition(position, Join(path, "position"), &c->position);
    const YAML::Node expect = n["expect"];
    if (!expect.IsDefined()) return;
    const std::string at = Join(path, "expect");
    const size_t before = problem_count();
    if (!Map(expect, at, Names(kExpectKeys))) return;
    if (!expect["count"].IsDefined() && !expect["attributes"].IsDefined()) {
      if (problem_count() > before) return;  // a misspelling, reported
      Error(expect, at, "expected count, attributes or both",
            "e.g. `expect: {count: {ge: 1}}` or `expect: {attributes: {gen_ai.tool.name: "
            "write_file}}`");
      return;
    }
    const YAML::Node count = expect["count"];
    if (count.IsDefined()) ExpectCount(count, Join(at, "count"), c);
    if (expect["attributes"].IsDefined()) {
      ExpectAttributes(expect["attributes"], Join(at, "attributes"), &c->attributes);
    }
  }

  // `position`: first, last, all or an index.
  void SelectPosition(const YAML::Node& position, const std::string& at, Position* out) {
    int64_t index = 0;
    if (position.IsScalar() && absl::SimpleAtoi(position.Scalar(), &index)) {
      if (index < 0) {
        Error(position, at,
              absl::StrCat("must be at least 0 (0 is the first event), got ", index));
      } else {
        out->kind = Position::Kind::kIndex;
        out->index = index;
      }
    } else {
      std::vector<std::string> names = Names(kPositionValues);
      if (position.IsScalar() &&
          std::find(names.begin(), names.end(), position.Scalar()) != names.end()) {
        const std::string& s = position.Scalar();
        out->kind = s == "first"  ? Position::Kind::kFirst
                    : s == "last" ? Position::Kind::kLast
                                  : Position::Kind::kAll;
      } else {
        Error(position, at,
              absl::StrCat("expected first, last, all or an index (0 is the first event), got ",
                           DescribeNode(position)),
              position.IsScalar() ? Suggest(position.Scalar(), names) : "");
      }
    }
  }

  // `expect.count`: an integer (eq), or one comparison such as {ge: 1}.
  void ExpectCount(const YAML::Node& count, const std::string& count_path, SelectCheck* c) {
    if (count.IsScalar()) {
      if (Int(count, count_path, &c->n, 0)) {
        c->has_count = true;
        c->op = v1::COMPARISON_EQ;
      }
    } else if (count.IsMap()) {
      if (Map(count, count_path, Names(kOps)) && Comparison(count, count_path, &c->op, &c->n)) {
        c->has_count = true;
      }
    } else {
      Error(count, count_path,
            absl::StrCat("expected an integer or a comparison such as {ge: 1}, got ",
                         DescribeNode(count)),
            "write `count: 2` (exactly), or one comparison: `count: {ge: 1}` (one of eq, ne, "
            "lt, le, gt, ge)");
    }
  }

  // `expect.attributes`: what must hold of each attribute, in key order.
  void ExpectAttributes(const YAML::Node& n, const std::string& attrs_path,
                        std::vector<AttributeExpectation>* out) {
    for (const auto& [key, v] : Entries(n, attrs_path)) {
      AttributeExpectation e;
      e.key = key.Scalar();
      if (AttributeNode(v, Key(attrs_path, e.key), &e)) out->push_back(std::move(e));
    }
    // Checked (and reported) in key order, as the canonical JSON form
    // (ParseSpec) keeps them.
    std::stable_sort(out->begin(), out->end(),
                     [](const AttributeExpectation& a, const AttributeExpectation& b) {
                       return a.key < b.key;
                     });
  }

  // One attribute's expectation: a string (equals) or one of {equals: ...},
  // {matches: ...}, {json_subset: ...}. False when it has a problem
  // (reported).
  bool AttributeNode(const YAML::Node& v, const std::string& key_path, AttributeExpectation* e) {
    if (v.IsScalar()) {
      e->op = AttributeExpectation::Op::kEquals;
      e->text = v.Scalar();
    } else if (v.IsMap()) {
      const size_t before_ops = problem_count();
      if (!Map(v, key_path, Names(kAttributeOps))) return false;
      std::vector<std::string> ops;
      for (const char* op : kAttributeOps) {
        if (v[op].IsDefined()) ops.push_back(op);
      }
      if (ops.empty() && problem_count() > before_ops) return false;  // reported
      if (ops.size() != 1) {
        Error(v, key_path,
              ops.empty() ? "expected one of equals, matches, json_subset"
                          : absl::StrCat("one of equals, matches, json_subset only; got ",
                                         absl::StrJoin(ops, " and ")),
              absl::StrCat("write one, e.g. ", validation::ExampleAt(key_path, "{matches: \"^a\"}")));
        return false;
      }
      const YAML::Node value = v[ops[0]];
      const std::string value_path = Join(key_path, ops[0]);
      if (ops[0] == "equals") {
        e->op = AttributeExpectation::Op::kEquals;
        if (!String(value, value_path, &e->text)) return false;
      } else if (ops[0] == "matches") {
        e->op = AttributeExpectation::Op::kMatches;
        e->re = Regex(value, value_path);
        if (e->re == nullptr) return false;
        e->text = value.Scalar();
      } else {
        e->op = AttributeExpectation::Op::kJsonSubset;
        if (!value.IsDefined() || value.IsNull()) {
          Error(v, value_path, "expected a JSON value (usually a mapping)",
                "e.g. `json_subset: {path: a.py}`");
          return false;
        }
        e->json = ToJson(value);
      }
    } else {
      Error(v, key_path,
            absl::StrCat("expected a string or one of {equals: ...}, {matches: ...}, "
                         "{json_subset: ...}, got ",
                         DescribeNode(v)),
            absl::StrCat("write the value as text (", validation::ExampleAt(key_path, "\"text\""),
                         ") or one of the mappings (",
                         validation::ExampleAt(key_path, "{matches: \"^a\"}"), ")"));
      return false;
    }
    return true;
  }
};

}  // namespace

// Validates `text` into `report`, adding the parsed items to `items` (all of
// them only when the report is ok()).
void Check(absl::string_view text, absl::string_view source, validation::Report* out,
           std::vector<Item>* items) {
  validation::Report& report = *out;
  report.source = std::string(source);
  validation::YamlLimits limits;
  limits.what = "spec";
  limits.max_bytes = kMaxSpecBytes;
  limits.max_depth = kMaxSpecNesting;
  limits.max_nodes = kMaxSpecNodes;
  limits.empty_message = "empty spec; expected a mapping with an `assertions` list";
  std::optional<YAML::Node> root = validation::LoadYamlDocument(text, limits, &report);
  if (!root.has_value()) return;

  Checker check(&report);
  try {
    check.Document(*root, items);
  } catch (const YAML::Exception& e) {
    // Not expected: every access checks types first. Reported, not thrown,
    // so that a validator bug never takes a server down.
    check.Error(YAML::Node(), "", absl::StrCat("internal error reading the spec: ", e.msg));
  }
  report.SortByPosition();
}

absl::StatusOr<std::vector<Item>> Parse(absl::string_view text, absl::string_view source) {
  validation::Report report;
  std::vector<Item> items;
  Check(text, source, &report, &items);
  // Any problem fails the document: the spec checker reports no warnings.
  if (!report.problems.empty()) {
    return absl::InvalidArgumentError(validation::FormatReport(report));
  }
  return items;
}

}  // namespace spec_internal
}  // namespace trace
}  // namespace understudy
