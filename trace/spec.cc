// Select items' canonical form and evaluation, and the spec API
// (trace/spec.h); reading a document is spec_check.cc.
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
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "trace/filter.h"
#include "trace/json_subset.h"
#include "trace/render.h"
#include "trace/spec_internal.h"
#include "validation/json_bounds.h"
#include "validation/yaml_checker.h"

namespace understudy {
namespace trace {
namespace {

using spec_internal::AttributeExpectation;
using spec_internal::Check;
using spec_internal::Item;
using spec_internal::Join;
using spec_internal::kOps;
using spec_internal::kOpValues;
using spec_internal::Parse;
using spec_internal::Position;
using spec_internal::SelectCheck;
using validation::Names;

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

// The events a select item's `position` picks among those its selector
// matched (as indices into them), and how to name them.
struct Targets {
  std::vector<size_t> indices;
  std::string which;    // "the first (#4)"; "" when there is none
  std::string missing;  // why there is nothing to check
};

Targets PickTargets(const Position& position, const std::vector<int64_t>& seqs) {
  Targets t;
  const size_t count = seqs.size();
  switch (position.kind) {
    case Position::Kind::kAll:
      for (size_t i = 0; i < count; ++i) t.indices.push_back(i);
      t.which = count == 1 ? absl::StrCat("it (#", seqs[0], ")")
                           : absl::StrCat("all ", count, " of them");
      t.missing = "there is no event to check";
      break;
    case Position::Kind::kFirst:
      if (count > 0) t.indices.push_back(0);
      t.which = count > 0 ? absl::StrCat("the first (#", seqs[0], ")") : "";
      t.missing = "there is no first event to check";
      break;
    case Position::Kind::kLast:
      if (count > 0) t.indices.push_back(count - 1);
      t.which = count > 0 ? absl::StrCat("the last (#", seqs[count - 1], ")") : "";
      t.missing = "there is no last event to check";
      break;
    case Position::Kind::kIndex:
      if (static_cast<size_t>(position.index) < count) {
        t.indices.push_back(static_cast<size_t>(position.index));
        t.which = absl::StrCat("the one at index ", position.index, " (#", seqs[position.index],
                               ")");
      }
      t.missing =
          absl::StrCat("there is no event at index ", position.index, " (0 is the first)");
      break;
  }
  return t;
}

// What `position` picks, as the expected text names it.
std::string TargetName(const Position& position) {
  return position.kind == Position::Kind::kAll     ? "each event"
         : position.kind == Position::Kind::kFirst ? "the first event"
         : position.kind == Position::Kind::kLast
             ? "the last event"
             : absl::StrCat("the event at index ", position.index);
}

// Checks c's attributes on each of `targets` (indices into `matched`):
// sets r's divergence index to the first that fails, adds the seq of each
// that fails to `failed_seqs`, and says why of the first five in `failures`.
void CheckTargets(const SelectCheck& c, const std::vector<const v1::TraceEvent*>& matched,
                  const std::vector<int64_t>& seqs, const std::vector<size_t>& targets,
                  v1::AssertionResult* r, std::vector<std::string>* failures,
                  std::vector<int64_t>* failed_seqs) {
  for (size_t t : targets) {
    std::vector<std::string> why;
    for (const AttributeExpectation& e : c.attributes) {
      std::string f = Failure(e, *matched[t]);
      if (!f.empty()) why.push_back(std::move(f));
    }
    if (why.empty()) continue;
    if (r->divergence_index() < 0) r->set_divergence_index(static_cast<int64_t>(t));
    failed_seqs->push_back(seqs[t]);
    if (failures->size() < 5) {
      failures->push_back(absl::StrCat("event #", seqs[t], ": ", absl::StrJoin(why, "; ")));
    }
  }
}

// c's attributes as `shown` has them, e.g. `path = "a.py", mode missing`.
std::string AttributeValues(const SelectCheck& c, const v1::TraceEvent& shown) {
  std::vector<std::string> values;
  for (const AttributeExpectation& e : c.attributes) {
    auto it = shown.attributes().find(e.key);
    values.push_back(it == shown.attributes().end()
                         ? absl::StrCat(e.key, " missing")
                         : absl::StrCat(e.key, " = ", Quote(it->second)));
  }
  return absl::StrJoin(values, ", ");
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
    const size_t count = matched.size();
    const Targets picked = PickTargets(c.position, seqs);
    expected.push_back(absl::StrCat(TargetName(c.position), ": ", absl::StrJoin(wanted, ", ")));
    if (picked.indices.empty()) {
      r.set_passed(false);
      absl::StrAppend(&text, "; ", picked.missing, " for ", absl::StrJoin(wanted, ", "));
    } else {
      std::vector<std::string> failures;
      std::vector<int64_t> failed_seqs;
      CheckTargets(c, matched, seqs, picked.indices, &r, &failures, &failed_seqs);
      // The actual values on the first target that failed (or the first).
      const v1::TraceEvent& shown =
          *matched[r.divergence_index() >= 0 ? r.divergence_index() : picked.indices[0]];
      absl::StrAppend(&actual, "; #", shown.seq(), ": ", AttributeValues(c, shown));
      if (failures.empty()) {
        absl::StrAppend(&text, "; ", picked.which,
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
          absl::StrAppend(&text, "; ", picked.which,
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
