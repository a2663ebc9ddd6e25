// Reading a YAML (or JSON: JSON is YAML) document that people write by hand
// and hostile callers send, and checking it against a schema with every
// problem reported at once. The scenario validator (scenario/scenario.h) and
// the assertion-spec validator (trace/spec.h) each keep only their own
// schema on top of this.
//
//   validation::Report report{"review.yaml"};
//   validation::YamlLimits limits{"scenario", 4 << 20, 64, 1000000,
//                                 "empty document; expected a mapping"};
//   std::optional<YAML::Node> root = validation::LoadYamlDocument(text, limits, &report);
//   if (!root) return report;            // one problem says why
//   MyChecker check(&report);            // : public validation::YamlChecker
//   check.Map(*root, "", {"schema", "rules"});
//
// LoadYamlDocument bounds hostile input before anything recurses over it:
// size, nesting depth (yaml-cpp's own guard and ours), node count with
// aliases expanded ("billion laughs"), and UTF-8 in the text and again in
// every decoded scalar (yaml-cpp 0.7 refuses escapes that name surrogates or
// code points past U+10FFFF; the second check keeps that true whatever the
// library version). After it has
// accepted a document, every recursive walk over it is bounded by
// limits.max_depth.
#ifndef UNDERSTUDY_VALIDATION_YAML_CHECKER_H_
#define UNDERSTUDY_VALIDATION_YAML_CHECKER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "validation/problems.h"
#include "yaml-cpp/yaml.h"

namespace understudy {
namespace validation {

struct YamlLimits {
  // What the document is, in messages: "scenario", "spec".
  const char* what = "document";
  size_t max_bytes = 1 << 20;
  // Mappings and sequences nested deeper than this are refused.
  int max_depth = 64;
  // Nodes visited with aliases expanded.
  size_t max_nodes = 200000;
  // The message for a document with nothing in it (only comments, say).
  std::string empty_message = "empty document";
};

// Parses `text` as exactly one YAML document within `limits`. On any
// failure adds exactly one error to `report` (with the position when known)
// and returns nullopt:
//   "<what> is N bytes, more than the M allowed; refused"
//   "invalid UTF-8 (byte 0xC3 is not followed by a continuation byte)..."
//   "YAML syntax error: ..."
//   "the text holds N YAML documents; a <what> is exactly one"
//   "nesting deeper than N levels"
//   "document has more than N nodes once aliases are expanded"
//   limits.empty_message
std::optional<YAML::Node> LoadYamlDocument(absl::string_view text, const YamlLimits& limits,
                                           Report* report);

// "null", "a list", "a mapping", or the scalar quoted (cut to 40 bytes).
std::string DescribeNode(const YAML::Node& n);

// How `value` is written at `path`, quoted as code for a suggestion:
// "`times: 1`" for "rules[0].times", "`7`" for a list element
// ("agents[2]") or a data key ("attributes[\"k\"]").
std::string ExampleAt(absl::string_view path, absl::string_view value);

// A YAML value as JSON: plain scalars take the JSON type they look like
// (true, 12, 1.5, null), quoted ones stay strings. Recursion is bounded by
// the depth LoadYamlDocument accepted.
nlohmann::json YamlToJson(const YAML::Node& n);

// The checks every schema is built from. Each adds a problem to the report
// (with the node's position and a suggestion: the form the value takes,
// or the allowed values) and returns false when the value is not what was
// asked for; the out-parameter is set only on success.
class YamlChecker {
 public:
  // `report` is not owned and must outlive the checker.
  explicit YamlChecker(Report* report) : report_(report) {}
  virtual ~YamlChecker() = default;

  void Error(const YAML::Node& at, const std::string& path, std::string message,
             std::string suggestion = "");
  void Warning(const YAML::Node& at, const std::string& path, std::string message,
               std::string suggestion = "");

  // True when `n` is a mapping (reported otherwise). Reports keys that are
  // not in `names` (with a suggestion, else the list of names, else
  // `no_fields` when there are none), keys that are not strings and
  // repeated keys.
  bool Map(const YAML::Node& n, const std::string& path, const std::vector<std::string>& names,
           absl::string_view no_fields = "this takes no fields");
  // The string-keyed entries of a mapping whose keys are data; reports a
  // non-mapping, non-string keys and repeated keys.
  std::vector<std::pair<YAML::Node, YAML::Node>> Entries(const YAML::Node& n,
                                                         const std::string& path);
  // True when mapping `m` has `key`; reports its absence at `m`.
  bool Require(const YAML::Node& m, const std::string& path, const char* key);

  bool String(const YAML::Node& n, const std::string& path, std::string* out);
  bool NonEmptyString(const YAML::Node& n, const std::string& path, std::string* out);
  // An integer >= min.
  bool Int(const YAML::Node& n, const std::string& path, int64_t* out, int64_t min);
  // A number >= 0.
  bool NonNegativeNumber(const YAML::Node& n, const std::string& path, double* out);
  bool Bool(const YAML::Node& n, const std::string& path, bool* out);
  // A list of strings (each non-empty when `non_empty`).
  bool StringList(const YAML::Node& n, const std::string& path, std::vector<std::string>* out,
                  bool non_empty = false);
  // A scalar that is one of `values`.
  bool Choice(const YAML::Node& n, const std::string& path, const std::vector<std::string>& values,
              std::string* out);
  // An RE2 pattern, compiled; null (reported) when it does not compile.
  std::shared_ptr<const RE2> Regex(const YAML::Node& n, const std::string& path,
                                   std::string* text = nullptr);

  // The key node of `key` in mapping `m` (for positions), or `m` itself.
  static YAML::Node KeyNode(const YAML::Node& m, const std::string& key);

  Report* report() { return report_; }
  size_t problem_count() const { return report_->problems.size(); }

 private:
  void Add(Problem::Severity severity, const YAML::Node& at, const std::string& path,
           std::string message, std::string suggestion);

  Report* report_;
};

// The names of an initializer list of field names, for YamlChecker::Map.
std::vector<std::string> Names(std::initializer_list<const char*> a,
                               std::initializer_list<const char*> b = {});

}  // namespace validation
}  // namespace understudy

#endif  // UNDERSTUDY_VALIDATION_YAML_CHECKER_H_
