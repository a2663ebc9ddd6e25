#include <cmath>
#include "validation/yaml_checker.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "validation/suggest.h"
#include "validation/utf8.h"
#include "yaml-cpp/depthguard.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/parser.h"

namespace understudy {
namespace validation {
namespace {

// Messages may quote the document (yaml-cpp's quote a byte of it: "unknown
// escape character: \xF0"); reports are printed as JSON and sent in
// protobuf strings, so they are made valid UTF-8 here.
Problem At(const YAML::Mark& mark, std::string message) {
  Problem p;
  p.message = SanitizeUtf8(message);
  if (!mark.is_null()) {
    p.line = mark.line + 1;
    p.column = mark.column + 1;
  }
  return p;
}

// Bounds nesting, alias-expanded size and scalars' UTF-8 before anything
// else recurses over the document. Returns the offending node's mark through
// `where` and a message, or "" when the document is within bounds.
std::string CheckNode(const YAML::Node& n, int depth, const YamlLimits& limits, size_t* count,
                      YAML::Mark* where) {
  if (++*count > limits.max_nodes) {
    *where = n.Mark();
    return absl::StrCat("document has more than ", limits.max_nodes,
                        " nodes once aliases are expanded");
  }
  if (n.IsScalar()) {
    if (std::optional<size_t> bad = FindInvalidUtf8(n.Scalar())) {
      *where = n.Mark();
      return absl::StrCat("invalid UTF-8 in this value (byte ", *bad,
                          " of it); a \\u escape may not name half of a surrogate pair");
    }
    return "";
  }
  if (!n.IsMap() && !n.IsSequence()) return "";
  if (depth >= limits.max_depth) {
    *where = n.Mark();
    return absl::StrCat("nesting deeper than ", limits.max_depth, " levels");
  }
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string problem;
    if (n.IsMap()) {
      problem = CheckNode(it->first, depth + 1, limits, count, where);
      if (problem.empty()) problem = CheckNode(it->second, depth + 1, limits, count, where);
    } else {
      problem = CheckNode(*it, depth + 1, limits, count, where);
    }
    if (!problem.empty()) return problem;
  }
  return "";
}

// Counts parser events, and gives up past a bound no real document reaches:
// yaml-cpp 0.7 never returns from some inputs (a document whose first token
// is ',', e.g. the text ","), its parser emitting the same event forever.
class Progress final : public YAML::EventHandler {
 public:
  struct Stalled {
    YAML::Mark mark;
  };
  explicit Progress(size_t bound) : bound_(bound) {}
  void OnDocumentStart(const YAML::Mark& mark) override { Count(mark); }
  void OnDocumentEnd() override { Count(last_); }
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Count(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Count(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Count(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Count(mark);
  }
  void OnSequenceEnd() override { Count(last_); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Count(mark);
  }
  void OnMapEnd() override { Count(last_); }

 private:
  void Count(const YAML::Mark& mark) {
    last_ = mark;
    if (++events_ > bound_) throw Stalled{mark};
  }
  const size_t bound_;
  size_t events_ = 0;
  YAML::Mark last_ = YAML::Mark::null_mark();
};

std::string Quote(absl::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false,
                                             nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::optional<YAML::Node> LoadYamlDocument(absl::string_view text, const YamlLimits& limits,
                                           Report* report) {
  auto fail = [&](const YAML::Mark& mark, std::string message) -> std::optional<YAML::Node> {
    report->problems.push_back(At(mark, std::move(message)));
    return std::nullopt;
  };
  if (text.size() > limits.max_bytes) {
    return fail(YAML::Mark::null_mark(),
                absl::StrCat(limits.what, " is ", text.size(), " bytes, more than the ",
                             limits.max_bytes, " allowed; refused"));
  }
  if (std::optional<size_t> bad = FindInvalidUtf8(text)) {
    const TextPosition pos = PositionOf(text, *bad);
    char byte[8];
    std::snprintf(byte, sizeof(byte), "0x%02X", static_cast<unsigned char>(text[*bad]));
    YAML::Mark mark;
    mark.line = pos.line - 1;
    mark.column = pos.column - 1;
    return fail(mark, absl::StrCat("invalid UTF-8 (byte ", byte, " at offset ", *bad, "); save the ",
                                   limits.what, " as UTF-8"));
  }
  const std::string owned(text);
  {
    // A first pass that cannot hang (see Progress): a document yields a few
    // events per byte at most.
    std::istringstream stream(owned);
    YAML::Parser parser(stream);
    Progress progress(4 * text.size() + 64);
    try {
      while (parser.HandleNextDocument(progress)) {
      }
    } catch (const Progress::Stalled& stalled) {
      return fail(stalled.mark,
                  "YAML syntax error: the parser makes no progress here (a document cannot "
                  "start with ',')");
    } catch (const YAML::Exception&) {
      // Reported by the load below, which fails the same way.
    }
  }
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(owned);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own guard (2000 levels) fires before our walk could.
    return fail(e.mark, absl::StrCat("nesting deeper than ", limits.max_depth, " levels"));
  } catch (const YAML::ParserException& e) {
    return fail(e.mark, absl::StrCat("YAML syntax error: ", e.msg));
  } catch (const YAML::Exception& e) {
    return fail(e.mark, absl::StrCat("cannot read YAML: ", e.msg));
  }
  if (documents.empty() || documents[0].IsNull()) {
    YAML::Mark start;  // 1:1
    return fail(start, limits.empty_message);
  }
  if (documents.size() > 1) {
    return fail(documents[1].Mark(), absl::StrCat("the text holds ", documents.size(),
                                                  " YAML documents; a ", limits.what,
                                                  " is exactly one"));
  }
  size_t count = 0;
  YAML::Mark where = YAML::Mark::null_mark();
  std::string bound = CheckNode(documents[0], 0, limits, &count, &where);
  if (!bound.empty()) return fail(where, std::move(bound));
  return documents[0];
}

std::string DescribeNode(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      return Quote(Shorten(n.Scalar(), 40));
    default:
      return "nothing";
  }
}

nlohmann::json YamlToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (auto it = n.begin(); it != n.end(); ++it) {
        out[it->first.IsScalar() ? it->first.Scalar() : ""] = YamlToJson(it->second);
      }
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const YAML::Node& child : n) out.push_back(YamlToJson(child));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return s;
      if (s == "null" || s == "~" || s == "Null" || s == "NULL") return nullptr;
      if (s == "true" || s == "True" || s == "TRUE") return true;
      if (s == "false" || s == "False" || s == "FALSE") return false;
      int64_t i;
      if (absl::SimpleAtoi(s, &i)) return i;
      double d;
      if (!s.empty() && (absl::ascii_isdigit(s[0]) || s[0] == '-' || s[0] == '.') &&
          absl::SimpleAtod(s, &d)) {
        return d;
      }
      return s;
    }
    default:
      return nullptr;
  }
}

std::string ExampleAt(absl::string_view path, absl::string_view value) {
  const size_t dot = path.rfind('.');
  const absl::string_view key = dot == absl::string_view::npos ? path : path.substr(dot + 1);
  if (key.empty() || absl::StrContains(key, '[')) return absl::StrCat("`", value, "`");
  return absl::StrCat("`", key, ": ", value, "`");
}

namespace {

// The suggestion for a value that is not an integer: the integer it
// spells when it is a whole number in another form ("3.0"), else the form.
std::string IntSuggestion(const YAML::Node& n, const std::string& path, int64_t min) {
  double d = 0;
  // Only a finite value inside int64's range may be converted: casting
  // 1e300, inf or nan is undefined.
  if (n.IsScalar() && absl::SimpleAtod(n.Scalar(), &d) && std::isfinite(d) &&
      d >= -9.2e18 && d <= 9.2e18 && d == std::trunc(d) && static_cast<int64_t>(d) >= min) {
    return absl::StrCat("write it as an integer: ", ExampleAt(path, absl::StrCat(static_cast<int64_t>(d))));
  }
  return absl::StrCat(min < 0 ? std::string("write an integer")
                              : absl::StrCat("write an integer of at least ", min),
                      ", e.g. ", ExampleAt(path, absl::StrCat(std::max<int64_t>(min, 1))));
}

}  // namespace

void YamlChecker::Add(Problem::Severity severity, const YAML::Node& at, const std::string& path,
                      std::string message, std::string suggestion) {
  Problem p = At(at.IsDefined() ? at.Mark() : YAML::Mark::null_mark(), std::move(message));
  p.severity = severity;
  p.path = SanitizeUtf8(path);
  p.suggestion = SanitizeUtf8(suggestion);
  report_->problems.push_back(std::move(p));
}

void YamlChecker::Error(const YAML::Node& at, const std::string& path, std::string message,
                        std::string suggestion) {
  Add(Problem::Severity::kError, at, path, std::move(message), std::move(suggestion));
}

void YamlChecker::Warning(const YAML::Node& at, const std::string& path, std::string message,
                          std::string suggestion) {
  Add(Problem::Severity::kWarning, at, path, std::move(message), std::move(suggestion));
}

bool YamlChecker::Map(const YAML::Node& n, const std::string& path,
                      const std::vector<std::string>& names, absl::string_view no_fields) {
  if (!n.IsMap()) {
    Error(n, path, absl::StrCat("expected a mapping, got ", DescribeNode(n)),
          names.empty() ? std::string("write a mapping: {}")
                        : absl::StrCat("write a mapping of its fields, e.g. ",
                                       ExampleAt(path, absl::StrCat("{", names[0], ": ...}")),
                                       "; its fields: ", absl::StrJoin(names, ", ")));
    return false;
  }
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar()) {
      Error(it->first, path, "field names must be strings",
            "write the field's name as a plain word");
      continue;
    }
    const std::string key = it->first.Scalar();
    if (!seen.insert(key).second) {
      Error(it->first, JoinPath(path, key), "duplicate field", "keep one of the two");
    } else if (std::find(names.begin(), names.end(), key) == names.end()) {
      std::string suggestion = Suggest(key, names);
      if (suggestion.empty()) {
        suggestion = names.empty() ? std::string(no_fields)
                                   : absl::StrCat("expected one of: ", absl::StrJoin(names, ", "));
      }
      Error(it->first, JoinPath(path, key), "unknown field", std::move(suggestion));
    }
  }
  return true;
}

std::vector<std::pair<YAML::Node, YAML::Node>> YamlChecker::Entries(const YAML::Node& n,
                                                                    const std::string& path) {
  std::vector<std::pair<YAML::Node, YAML::Node>> out;
  if (!n.IsMap()) {
    Error(n, path, absl::StrCat("expected a mapping, got ", DescribeNode(n)),
          absl::StrCat("write a mapping of keys to values, e.g. ", ExampleAt(path, "{key: value}")));
    return out;
  }
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar()) {
      Error(it->first, path, "keys must be strings", "write each key as a string");
    } else if (!seen.insert(it->first.Scalar()).second) {
      Error(it->first, KeyPath(path, it->first.Scalar()), "duplicate key", "keep one of the two");
    } else {
      out.emplace_back(it->first, it->second);
    }
  }
  return out;
}

bool YamlChecker::Require(const YAML::Node& m, const std::string& path, const char* key) {
  if (m[key].IsDefined()) return true;
  Error(m, path, absl::StrCat("missing required field \"", key, "\""),
        absl::StrCat("add ", ExampleAt(JoinPath(path, key), "...")));
  return false;
}

bool YamlChecker::String(const YAML::Node& n, const std::string& path, std::string* out) {
  if (!n.IsScalar()) {
    Error(n, path, absl::StrCat("expected a string, got ", DescribeNode(n)),
          absl::StrCat("write one text value, e.g. ", ExampleAt(path, "\"text\"")));
    return false;
  }
  *out = n.Scalar();
  return true;
}

bool YamlChecker::NonEmptyString(const YAML::Node& n, const std::string& path, std::string* out) {
  std::string s;
  if (!String(n, path, &s)) return false;
  if (s.empty()) {
    Error(n, path, "must not be empty", "give it a value, or leave the field out");
    return false;
  }
  *out = std::move(s);
  return true;
}

bool YamlChecker::Int(const YAML::Node& n, const std::string& path, int64_t* out, int64_t min) {
  int64_t v = 0;
  if (!n.IsScalar() || !absl::SimpleAtoi(n.Scalar(), &v)) {
    Error(n, path, absl::StrCat("expected an integer, got ", DescribeNode(n)),
          IntSuggestion(n, path, min));
    return false;
  }
  if (v < min) {
    Error(n, path, absl::StrCat("must be at least ", min, ", got ", v),
          absl::StrCat("use ", min, " or more, e.g. ", ExampleAt(path, absl::StrCat(min))));
    return false;
  }
  *out = v;
  return true;
}

bool YamlChecker::NonNegativeNumber(const YAML::Node& n, const std::string& path, double* out) {
  double v = 0;
  if (!n.IsScalar() || n.Scalar().empty() ||
      !(absl::ascii_isdigit(n.Scalar()[0]) || n.Scalar()[0] == '-' || n.Scalar()[0] == '.') ||
      !absl::SimpleAtod(n.Scalar(), &v)) {
    Error(n, path, absl::StrCat("expected a number, got ", DescribeNode(n)),
          absl::StrCat("write a number, e.g. ",
                       ExampleAt(path, "1.5")));
    return false;
  }
  if (v < 0) {
    Error(n, path, absl::StrCat("must not be negative, got ", n.Scalar()),
          absl::StrCat("use 0 or more, e.g. ", ExampleAt(path, "0")));
    return false;
  }
  *out = v;
  return true;
}

bool YamlChecker::Bool(const YAML::Node& n, const std::string& path, bool* out) {
  if (n.IsScalar()) {
    const std::string s = absl::AsciiStrToLower(n.Scalar());
    if (s == "true" || s == "false") {
      *out = s == "true";
      return true;
    }
  }
  Error(n, path, absl::StrCat("expected true or false, got ", DescribeNode(n)),
        absl::StrCat("write ", ExampleAt(path, "true"), " or ", ExampleAt(path, "false")));
  return false;
}

bool YamlChecker::StringList(const YAML::Node& n, const std::string& path,
                             std::vector<std::string>* out, bool non_empty) {
  if (!n.IsSequence()) {
    Error(n, path, absl::StrCat("expected a list of strings, got ", DescribeNode(n)),
          absl::StrCat("write a list, e.g. ", ExampleAt(path, "[a, b]")));
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < n.size(); ++i) {
    std::string s;
    const bool good = non_empty ? NonEmptyString(n[i], JoinPath(path, i), &s)
                                : String(n[i], JoinPath(path, i), &s);
    if (good) {
      out->push_back(std::move(s));
    } else {
      ok = false;
    }
  }
  return ok;
}

bool YamlChecker::Choice(const YAML::Node& n, const std::string& path,
                         const std::vector<std::string>& values, std::string* out) {
  if (n.IsScalar() && std::find(values.begin(), values.end(), n.Scalar()) != values.end()) {
    *out = n.Scalar();
    return true;
  }
  Error(n, path,
        absl::StrCat("expected one of ", absl::StrJoin(values, ", "), ", got ", DescribeNode(n)),
        [&] {
          std::string suggestion = n.IsScalar() ? Suggest(n.Scalar(), values) : "";
          if (suggestion.empty() && !values.empty()) {
            suggestion = absl::StrCat("write one of them, e.g. ", ExampleAt(path, values[0]));
          }
          return suggestion;
        }());
  return false;
}

std::shared_ptr<const RE2> YamlChecker::Regex(const YAML::Node& n, const std::string& path,
                                              std::string* text) {
  std::string pattern;
  if (!String(n, path, &pattern)) return nullptr;
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_shared<const RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok()) {
    Error(n, path, absl::StrCat("invalid regex: ", re->error()),
          "RE2 syntax; a backslash before a character meant literally: \\( \\. \\*");
    return nullptr;
  }
  if (text != nullptr) *text = std::move(pattern);
  return re;
}

YAML::Node YamlChecker::KeyNode(const YAML::Node& m, const std::string& key) {
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == key) return it->first;
  }
  return m;
}

std::vector<std::string> Names(std::initializer_list<const char*> a,
                               std::initializer_list<const char*> b) {
  std::vector<std::string> out(a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

}  // namespace validation
}  // namespace understudy
