#include "trace/filter.h"

#include <algorithm>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "trace/vocabulary.h"

namespace understudy {
namespace trace {
namespace {

std::string Quoted(absl::string_view s) {
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Field(absl::string_view where, absl::string_view field) {
  return where.empty() ? std::string(field) : absl::StrCat(where, ".", field);
}

// A value as Describe shows it: bare when it reads unambiguously.
std::string Value(absl::string_view v) {
  if (v.empty() || v.find_first_of(" \t\n\"=~|") != absl::string_view::npos) return Quoted(v);
  return std::string(v);
}

const std::string* Attribute(const v1::TraceEvent& event, const std::string& name) {
  auto it = event.attributes().find(name);
  return it == event.attributes().end() ? nullptr : &it->second;
}

}  // namespace

absl::StatusOr<EventFilter> EventFilter::Create(const v1::EventFilter& filter,
                                                absl::string_view where) {
  for (int i = 0; i < filter.kinds_size(); ++i) {
    if (filter.kinds(i).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Field(where, "kinds"), "[", i, "]: must not be empty"));
    }
  }
  if (filter.min_seq() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(Field(where, "min_seq"), ": must not be negative, got ", filter.min_seq()));
  }
  if (filter.max_seq() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(Field(where, "max_seq"), ": must not be negative, got ", filter.max_seq()));
  }
  if (filter.max_seq() > 0 && filter.min_seq() > filter.max_seq()) {
    return absl::InvalidArgumentError(absl::StrCat(Field(where, "min_seq"), ": ", filter.min_seq(),
                                                   " is greater than max_seq ", filter.max_seq(),
                                                   "; nothing could match"));
  }
  EventFilter out;
  out.proto_ = filter;
  // Sorted, so that Describe and error messages are deterministic (protobuf
  // maps have no stable order).
  std::map<std::string, std::string> patterns(filter.attribute_patterns().begin(),
                                              filter.attribute_patterns().end());
  RE2::Options options;
  options.set_log_errors(false);
  for (const auto& [name, text] : patterns) {
    auto re = std::make_shared<const RE2>(re2::StringPiece(text.data(), text.size()), options);
    if (!re->ok()) {
      return absl::InvalidArgumentError(absl::StrCat(Field(where, "attribute_patterns"), "[",
                                                     Quoted(name),
                                                     "]: invalid RE2 pattern: ", re->error()));
    }
    out.patterns_.emplace_back(name, std::move(re));
  }
  return out;
}

bool EventFilter::Matches(const v1::TraceEvent& event) const {
  if (!proto_.kinds().empty() && std::find(proto_.kinds().begin(), proto_.kinds().end(),
                                           event.kind()) == proto_.kinds().end()) {
    return false;
  }
  if (proto_.min_seq() > 0 && event.seq() < proto_.min_seq()) return false;
  if (proto_.max_seq() > 0 && event.seq() > proto_.max_seq()) return false;
  if (!proto_.agent().empty() && event.agent() != proto_.agent()) {
    const std::string* name = Attribute(event, trace::attr::kGenAiAgentName);
    if (name == nullptr || *name != proto_.agent()) return false;
  }
  if (!proto_.tool().empty()) {
    const std::string* tool = Attribute(event, trace::attr::kGenAiToolName);
    if (tool == nullptr || *tool != proto_.tool()) return false;
  }
  if (!proto_.phase().empty()) {
    const std::string* phase = Attribute(event, trace::attr::kPhase);
    if (phase == nullptr || *phase != proto_.phase()) return false;
  }
  for (const auto& [name, value] : proto_.attributes()) {
    const std::string* got = Attribute(event, name);
    if (got == nullptr || *got != value) return false;
  }
  for (const auto& [name, re] : patterns_) {
    const std::string* got = Attribute(event, name);
    if (got == nullptr || !RE2::PartialMatch(re2::StringPiece(got->data(), got->size()), *re)) {
      return false;
    }
  }
  return true;
}

std::string EventFilter::Describe() const {
  std::vector<std::string> parts;
  if (!proto_.kinds().empty()) {
    std::vector<std::string> kinds;
    for (const std::string& k : proto_.kinds()) kinds.push_back(Value(k));
    parts.push_back(absl::StrCat("kind=", absl::StrJoin(kinds, "|")));
  }
  if (!proto_.agent().empty()) parts.push_back(absl::StrCat("agent=", Value(proto_.agent())));
  if (!proto_.tool().empty()) parts.push_back(absl::StrCat("tool=", Value(proto_.tool())));
  if (!proto_.phase().empty()) parts.push_back(absl::StrCat("phase=", Value(proto_.phase())));
  std::map<std::string, std::string> attributes(proto_.attributes().begin(),
                                                proto_.attributes().end());
  for (const auto& [name, value] : attributes) {
    parts.push_back(absl::StrCat(Value(name), "=", Value(value)));
  }
  for (const auto& [name, re] : patterns_) {
    parts.push_back(absl::StrCat(Value(name), "~/", re->pattern(), "/"));
  }
  if (proto_.min_seq() > 0 && proto_.max_seq() > 0) {
    parts.push_back(absl::StrCat("seq=", proto_.min_seq(), "..", proto_.max_seq()));
  } else if (proto_.min_seq() > 0) {
    parts.push_back(absl::StrCat("seq>=", proto_.min_seq()));
  } else if (proto_.max_seq() > 0) {
    parts.push_back(absl::StrCat("seq<=", proto_.max_seq()));
  }
  return parts.empty() ? "any event" : absl::StrJoin(parts, " ");
}

}  // namespace trace
}  // namespace understudy
