#include "trace/spec.h"

#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "trace/filter.h"
#include "trace/json_subset.h"
#include "trace/render.h"
#include "validation/json_bounds.h"
#include "validation/suggest.h"
#include "validation/yaml_checker.h"
#include "yaml-cpp/yaml.h"

namespace understudy {
namespace trace {
namespace {

using Keys = std::initializer_list<const char*>;

constexpr Keys kTopKeys = {"schema", "session", "description", "assertions"};
constexpr Keys kCheckKeys = {
    "agent_sequence", "phase_transitions", "tool_calls",  "feedback_propagated",
    "count",          "no_misses",         "all_consumed"};
constexpr Keys kSelectItemKeys = {"name", "select", "position", "expect"};
constexpr Keys kSelectKeys = {
    "kind", "agent", "tool", "phase", "attributes", "attribute_patterns", "min_seq", "max_seq"};
constexpr Keys kExpectKeys = {"count", "attributes"};
constexpr Keys kOps = {"eq", "ne", "lt", "le", "gt", "ge"};
constexpr v1::Comparison kOpValues[] = {v1::COMPARISON_EQ, v1::COMPARISON_NE, v1::COMPARISON_LT,
                                        v1::COMPARISON_LE, v1::COMPARISON_GT, v1::COMPARISON_GE};
constexpr Keys kAttributeOps = {"equals", "matches", "json_subset"};
constexpr Keys kAgentSequenceKeys = {"agents", "match", "collapse_repeats"};
constexpr Keys kPhaseTransitionsKeys = {"phases", "match"};
constexpr Keys kToolCallsKeys = {"agent", "calls", "match"};
constexpr Keys kCallKeys = {"name", "arguments"};
constexpr Keys kFeedbackKeys = {"from", "to", "keyword"};
constexpr Keys kMatchValues = {"exact", "subsequence", "prefix"};
constexpr Keys kPositionValues = {"first", "last", "all"};

// ---------------------------------------------------------------------------
// The parsed form of a select item.

struct AttributeExpectation {
  enum class Op { kEquals, kMatches, kJsonSubset };
  std::string key;
  Op op = Op::kEquals;
  std::string text;               // kEquals: the value; kMatches: the pattern
  nlohmann::json json;            // kJsonSubset
  std::shared_ptr<const RE2> re;  // kMatches; never null then
};

struct Position {
  enum class Kind { kAll, kFirst, kLast, kIndex };
  Kind kind = Kind::kAll;
  int64_t index = 0;
};

struct SelectCheck {
  std::string name;
  v1::EventFilter select;
  Position position;
  bool has_count = false;
  v1::Comparison op = v1::COMPARISON_GE;
  int64_t n = 1;
  std::vector<AttributeExpectation> attributes;  // document order
};

struct Item {
  std::string path;  // "assertions[3]"
  // Exactly one of the two.
  std::optional<v1::Assertion> builtin;
  std::optional<SelectCheck> select;
};

// ---------------------------------------------------------------------------
// Validation: every problem at once, each with its path, position and a
// suggestion when one is close (validation/yaml_checker.h).

using validation::DescribeNode;
using validation::Names;
using validation::Problem;
using validation::Suggest;

std::string Join(const std::string& path, absl::string_view key) {
  return validation::JoinPath(path, key);
}
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
    if (position.IsDefined()) {
      const std::string at = Join(path, "position");
      int64_t index = 0;
      if (position.IsScalar() && absl::SimpleAtoi(position.Scalar(), &index)) {
        if (index < 0) {
          Error(position, at,
                absl::StrCat("must be at least 0 (0 is the first event), got ", index));
        } else {
          c->position.kind = Position::Kind::kIndex;
          c->position.index = index;
        }
      } else {
        std::vector<std::string> names = Names(kPositionValues);
        if (position.IsScalar() &&
            std::find(names.begin(), names.end(), position.Scalar()) != names.end()) {
          const std::string& s = position.Scalar();
          c->position.kind = s == "first"  ? Position::Kind::kFirst
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
    if (count.IsDefined()) {
      const std::string count_path = Join(at, "count");
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
    if (expect["attributes"].IsDefined()) {
      const std::string attrs_path = Join(at, "attributes");
      for (const auto& [key, v] : Entries(expect["attributes"], attrs_path)) {
        AttributeExpectation e;
        e.key = key.Scalar();
        const std::string key_path = Key(attrs_path, e.key);
        if (v.IsScalar()) {
          e.op = AttributeExpectation::Op::kEquals;
          e.text = v.Scalar();
        } else if (v.IsMap()) {
          const size_t before_ops = problem_count();
          if (!Map(v, key_path, Names(kAttributeOps))) continue;
          std::vector<std::string> ops;
          for (const char* op : kAttributeOps) {
            if (v[op].IsDefined()) ops.push_back(op);
          }
          if (ops.empty() && problem_count() > before_ops) continue;  // reported
          if (ops.size() != 1) {
            Error(v, key_path,
                  ops.empty() ? "expected one of equals, matches, json_subset"
                              : absl::StrCat("one of equals, matches, json_subset only; got ",
                                             absl::StrJoin(ops, " and ")),
                  absl::StrCat("write one, e.g. ", validation::ExampleAt(key_path, "{matches: \"^a\"}")));
            continue;
          }
          const YAML::Node value = v[ops[0]];
          const std::string value_path = Join(key_path, ops[0]);
          if (ops[0] == "equals") {
            e.op = AttributeExpectation::Op::kEquals;
            if (!String(value, value_path, &e.text)) continue;
          } else if (ops[0] == "matches") {
            e.op = AttributeExpectation::Op::kMatches;
            e.re = Regex(value, value_path);
            if (e.re == nullptr) continue;
            e.text = value.Scalar();
          } else {
            e.op = AttributeExpectation::Op::kJsonSubset;
            if (!value.IsDefined() || value.IsNull()) {
              Error(v, value_path, "expected a JSON value (usually a mapping)",
                    "e.g. `json_subset: {path: a.py}`");
              continue;
            }
            e.json = ToJson(value);
          }
        } else {
          Error(v, key_path,
                absl::StrCat("expected a string or one of {equals: ...}, {matches: ...}, "
                             "{json_subset: ...}, got ",
                             DescribeNode(v)),
                absl::StrCat("write the value as text (", validation::ExampleAt(key_path, "\"text\""),
                             ") or one of the mappings (",
                             validation::ExampleAt(key_path, "{matches: \"^a\"}"), ")"));
          continue;
        }
        c->attributes.push_back(std::move(e));
      }
      // Checked (and reported) in key order, as the canonical JSON form
      // (ParseSpec) keeps them.
      std::stable_sort(c->attributes.begin(), c->attributes.end(),
                       [](const AttributeExpectation& a, const AttributeExpectation& b) {
                         return a.key < b.key;
                       });
    }
  }
};

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

// ---------------------------------------------------------------------------
// Select items: canonical form and evaluation.

// The item as a one-item spec document that parses back to the same check.
std::string Canonical(const SelectCheck& c) {
  nlohmann::json select = nlohmann::json::object();
  const v1::EventFilter& f = c.select;
  if (!f.kinds().empty())
    select["kind"] = std::vector<std::string>(f.kinds().begin(), f.kinds().end());
  if (!f.agent().empty()) select["agent"] = f.agent();
  if (!f.tool().empty()) select["tool"] = f.tool();
  if (!f.phase().empty()) select["phase"] = f.phase();
  if (!f.attributes().empty()) {
    select["attributes"] =
        std::map<std::string, std::string>(f.attributes().begin(), f.attributes().end());
  }
  if (!f.attribute_patterns().empty()) {
    select["attribute_patterns"] = std::map<std::string, std::string>(
        f.attribute_patterns().begin(), f.attribute_patterns().end());
  }
  if (f.min_seq() > 0) select["min_seq"] = f.min_seq();
  if (f.max_seq() > 0) select["max_seq"] = f.max_seq();
  nlohmann::json item = nlohmann::json::object();
  if (!c.name.empty()) item["name"] = c.name;
  item["select"] = std::move(select);
  switch (c.position.kind) {
    case Position::Kind::kAll:
      break;
    case Position::Kind::kFirst:
      item["position"] = "first";
      break;
    case Position::Kind::kLast:
      item["position"] = "last";
      break;
    case Position::Kind::kIndex:
      item["position"] = c.position.index;
      break;
  }
  nlohmann::json expect = nlohmann::json::object();
  if (c.has_count) {
    const std::vector<std::string> ops = Names(kOps);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (kOpValues[i] == c.op) expect["count"] = {{ops[i], c.n}};
    }
  }
  nlohmann::json attributes = nlohmann::json::object();
  for (const AttributeExpectation& e : c.attributes) {
    switch (e.op) {
      case AttributeExpectation::Op::kEquals:
        attributes[e.key] = {{"equals", e.text}};
        break;
      case AttributeExpectation::Op::kMatches:
        attributes[e.key] = {{"matches", e.text}};
        break;
      case AttributeExpectation::Op::kJsonSubset:
        attributes[e.key] = {{"json_subset", e.json}};
        break;
    }
  }
  if (!attributes.empty()) expect["attributes"] = std::move(attributes);
  if (!expect.empty()) item["expect"] = std::move(expect);
  nlohmann::json doc = {{"assertions", nlohmann::json::array({std::move(item)})}};
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Describe(const AttributeExpectation& e) {
  switch (e.op) {
    case AttributeExpectation::Op::kEquals:
      return absl::StrCat(e.key, " = ", Quote(e.text));
    case AttributeExpectation::Op::kMatches:
      return absl::StrCat(e.key, " matching /", e.text, "/");
    case AttributeExpectation::Op::kJsonSubset:
      return absl::StrCat(e.key, " containing ", ShortJson(e.json));
  }
  return "";
}

// Why `event` fails `e`, or "" when it holds.
std::string Failure(const AttributeExpectation& e, const v1::TraceEvent& event) {
  auto it = event.attributes().find(e.key);
  if (it == event.attributes().end()) {
    switch (e.op) {
      case AttributeExpectation::Op::kEquals:
        return absl::StrCat(e.key, ": missing (expected ", Quote(e.text), ")");
      case AttributeExpectation::Op::kMatches:
        return absl::StrCat(e.key, ": missing (expected a match for /", e.text, "/)");
      case AttributeExpectation::Op::kJsonSubset:
        return absl::StrCat(e.key, ": missing (expected JSON containing ", ShortJson(e.json), ")");
    }
  }
  const std::string& got = it->second;
  switch (e.op) {
    case AttributeExpectation::Op::kEquals:
      if (got == e.text) return "";
      return absl::StrCat(e.key, ": expected ", Quote(e.text), ", got ", Quote(got));
    case AttributeExpectation::Op::kMatches:
      if (RE2::PartialMatch(re2::StringPiece(got.data(), got.size()), *e.re)) return "";
      return absl::StrCat(e.key, ": expected a match for /", e.text, "/, got ", Quote(got));
    case AttributeExpectation::Op::kJsonSubset: {
      nlohmann::json parsed = validation::ParseJsonOrDiscarded<nlohmann::json>(got);
      if (parsed.is_discarded()) {
        return absl::StrCat(e.key, ": expected JSON containing ", ShortJson(e.json), ", got ",
                            Quote(got),
                            validation::NestsWithin(got)
                                ? ", which is not JSON"
                                : absl::StrCat(", which nests deeper than ",
                                               validation::kMaxJsonDepth, " levels"));
      }
      std::string difference;
      if (JsonSubset(e.json, parsed, &difference)) return "";
      std::string out = absl::StrCat(e.key, ": expected JSON containing ", ShortJson(e.json),
                                     ", got ", ShortJson(parsed));
      if (absl::StartsWith(difference, "at ")) absl::StrAppend(&out, " (", difference, ")");
      return out;
    }
  }
  return "";
}

v1::AssertionResult EvaluateSelect(const SelectCheck& c, const EventFilter& filter,
                                   const std::vector<const v1::TraceEvent*>& events) {
  std::vector<const v1::TraceEvent*> matched;
  std::vector<int64_t> seqs;
  for (const v1::TraceEvent* e : events) {
    if (filter.Matches(*e)) {
      matched.push_back(e);
      seqs.push_back(e->seq());
    }
  }
  v1::AssertionResult r;
  r.set_name(c.name.empty() ? absl::StrCat("select ", filter.Describe()) : c.name);
  r.set_divergence_index(-1);
  r.mutable_event_seqs()->Add(seqs.begin(), seqs.end());
  r.set_passed(true);

  // Without expect: the selector must match something.
  const bool has_count = c.has_count || c.attributes.empty();
  const v1::Comparison op = c.has_count ? c.op : v1::COMPARISON_GE;
  const int64_t n = c.has_count ? c.n : 1;

  std::vector<std::string> expected;
  if (has_count) expected.push_back(absl::StrCat("count ", ComparisonSymbol(op), " ", n));
  std::vector<std::string> wanted;
  for (const AttributeExpectation& e : c.attributes) wanted.push_back(Describe(e));
  std::string actual = absl::StrCat("matched [", SeqList(seqs), "]");

  std::string text = absl::StrCat("select (", filter.Describe(), ") matched ");
  absl::StrAppend(&text, matched.empty() ? "no events"
                                         : absl::StrCat(Count(matched.size(), "event", "events"),
                                                        " (", SeqList(seqs), ")"));
  if (has_count) {
    if (Compare(op, static_cast<int64_t>(matched.size()), n)) {
      absl::StrAppend(&text, ", as expected (", ComparisonWords(op, n), ")");
    } else {
      r.set_passed(false);
      absl::StrAppend(&text, "; expected ", ComparisonWords(op, n));
    }
  }

  if (!c.attributes.empty()) {
    // The events `position` picks, and how to name them.
    std::vector<size_t> targets;
    std::string which;
    std::string missing;
    const size_t count = matched.size();
    switch (c.position.kind) {
      case Position::Kind::kAll:
        for (size_t i = 0; i < count; ++i) targets.push_back(i);
        which = count == 1 ? absl::StrCat("it (#", seqs[0], ")")
                           : absl::StrCat("all ", count, " of them");
        missing = "there is no event to check";
        break;
      case Position::Kind::kFirst:
        if (count > 0) targets.push_back(0);
        which = count > 0 ? absl::StrCat("the first (#", seqs[0], ")") : "";
        missing = "there is no first event to check";
        break;
      case Position::Kind::kLast:
        if (count > 0) targets.push_back(count - 1);
        which = count > 0 ? absl::StrCat("the last (#", seqs[count - 1], ")") : "";
        missing = "there is no last event to check";
        break;
      case Position::Kind::kIndex:
        if (static_cast<size_t>(c.position.index) < count) {
          targets.push_back(static_cast<size_t>(c.position.index));
          which = absl::StrCat("the one at index ", c.position.index, " (#", seqs[c.position.index],
                               ")");
        }
        missing =
            absl::StrCat("there is no event at index ", c.position.index, " (0 is the first)");
        break;
    }
    const std::string target_name = c.position.kind == Position::Kind::kAll     ? "each event"
                                    : c.position.kind == Position::Kind::kFirst ? "the first event"
                                    : c.position.kind == Position::Kind::kLast
                                        ? "the last event"
                                        : absl::StrCat("the event at index ", c.position.index);
    expected.push_back(absl::StrCat(target_name, ": ", absl::StrJoin(wanted, ", ")));
    if (targets.empty()) {
      r.set_passed(false);
      absl::StrAppend(&text, "; ", missing, " for ", absl::StrJoin(wanted, ", "));
    } else {
      std::vector<std::string> failures;
      std::vector<int64_t> failed_seqs;
      for (size_t t : targets) {
        std::vector<std::string> why;
        for (const AttributeExpectation& e : c.attributes) {
          std::string f = Failure(e, *matched[t]);
          if (!f.empty()) why.push_back(std::move(f));
        }
        if (why.empty()) continue;
        if (r.divergence_index() < 0) r.set_divergence_index(static_cast<int64_t>(t));
        failed_seqs.push_back(seqs[t]);
        if (failures.size() < 5) {
          failures.push_back(absl::StrCat("event #", seqs[t], ": ", absl::StrJoin(why, "; ")));
        }
      }
      // The actual values on the first target that failed (or the first).
      const v1::TraceEvent& shown =
          *matched[r.divergence_index() >= 0 ? r.divergence_index() : targets[0]];
      std::vector<std::string> values;
      for (const AttributeExpectation& e : c.attributes) {
        auto it = shown.attributes().find(e.key);
        values.push_back(it == shown.attributes().end()
                             ? absl::StrCat(e.key, " missing")
                             : absl::StrCat(e.key, " = ", Quote(it->second)));
      }
      absl::StrAppend(&actual, "; #", shown.seq(), ": ", absl::StrJoin(values, ", "));
      if (failures.empty()) {
        absl::StrAppend(&text, "; ", which,
                        c.position.kind == Position::Kind::kAll && count > 1 ? " have " : " has ",
                        absl::StrJoin(wanted, " and "));
      } else {
        r.set_passed(false);
        if (c.position.kind == Position::Kind::kAll && count > 1) {
          absl::StrAppend(&text, "; ", failed_seqs.size(), " of ", count, " (",
                          SeqList(failed_seqs), ") do not hold: ", absl::StrJoin(failures, "; "));
          if (failed_seqs.size() > failures.size()) {
            absl::StrAppend(&text, "; and ", failed_seqs.size() - failures.size(), " more");
          }
        } else {
          absl::StrAppend(&text, "; ", which,
                          " does not hold: ", failures[0].substr(failures[0].find(": ") + 2));
        }
      }
    }
  }
  r.set_expected(absl::StrJoin(expected, "; "));
  r.set_actual(std::move(actual));
  r.set_explanation(std::move(text));
  return r;
}

}  // namespace

validation::Report ValidateSpec(absl::string_view text, absl::string_view source) {
  validation::Report report;
  std::vector<Item> ignored;
  Check(text, source, &report, &ignored);
  return report;
}

absl::StatusOr<std::vector<v1::Assertion>> ParseSpec(absl::string_view text,
                                                     absl::string_view source) {
  absl::StatusOr<std::vector<Item>> items = Parse(text, source);
  if (!items.ok()) return items.status();
  std::vector<v1::Assertion> out;
  for (Item& item : *items) {
    if (item.builtin.has_value()) {
      out.push_back(std::move(*item.builtin));
    } else {
      v1::Assertion a;
      a.set_name(item.select->name);
      a.set_spec(Canonical(*item.select));
      out.push_back(std::move(a));
    }
  }
  return out;
}

absl::StatusOr<std::vector<v1::AssertionResult>> EvaluateSpec(absl::string_view text,
                                                              absl::string_view source,
                                                              const TraceView& view) {
  absl::StatusOr<std::vector<Item>> items = Parse(text, source);
  if (!items.ok()) return items.status();
  const std::vector<const v1::TraceEvent*> events = OrderedEvents(view);
  std::vector<v1::AssertionResult> results;
  for (const Item& item : *items) {
    if (item.builtin.has_value()) {
      absl::StatusOr<v1::AssertionResult> r = Evaluate(*item.builtin, view);
      if (!r.ok()) {
        return absl::Status(r.status().code(),
                            absl::StrCat(source, ": ", item.path, ": ", r.status().message()));
      }
      results.push_back(*std::move(r));
      continue;
    }
    absl::StatusOr<EventFilter> filter =
        EventFilter::Create(item.select->select, Join(item.path, "select"));
    if (!filter.ok()) {  // not expected: Parse checked the same things
      return absl::Status(filter.status().code(),
                          absl::StrCat(source, ": ", filter.status().message()));
    }
    results.push_back(EvaluateSelect(*item.select, *filter, events));
  }
  return results;
}

}  // namespace trace
}  // namespace understudy
