// What a validator found in a document: every problem at once, each with
// the path of the value, its position in the text and, when one is close,
// a suggestion. Scenario files, assertion specs and imports all report in
// this form, so a person (or an agent fixing a file in a loop) reads one
// format everywhere:
//
//   review.yaml:4:12: error: rules[0].when.agnet: unknown field (did you mean "agent"?)
#ifndef UNDERSTUDY_VALIDATION_PROBLEMS_H_
#define UNDERSTUDY_VALIDATION_PROBLEMS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace validation {

struct Problem {
  enum class Severity { kError, kWarning };
  Severity severity = Severity::kError;
  std::string path;        // "rules[3].when.agnet"; "" for the whole document
  std::string message;     // "unknown field"
  std::string suggestion;  // "did you mean \"agent\"?" or ""
  int line = 0;            // 1-based; 0 when unknown
  int column = 0;          // 1-based; 0 when unknown
};

struct Report {
  std::string source;  // the document's name in messages (a file, "spec")
  std::vector<Problem> problems;

  int errors() const;
  int warnings() const;
  bool ok() const { return errors() == 0; }
  // Orders problems by position, keeping document order among equals.
  void SortByPosition();
};

// Paths name a value the way a reader of the document points at it: object
// keys joined with ".", list positions in brackets, no leading "$".
// `parent.key`, or `key` at the root (empty parent).
std::string JoinPath(absl::string_view parent, absl::string_view key);
// `parent[index]`.
std::string JoinPath(absl::string_view parent, size_t index);
// `parent["key"]`: a mapping key that is data (an attribute name), not a
// field of the schema.
std::string KeyPath(absl::string_view parent, absl::string_view key);

// "SOURCE:LINE:COL: severity: path: message (suggestion)"; the position,
// path and suggestion are left out when unknown or empty.
std::string FormatProblem(const Report& report, const Problem& problem);
// One FormatProblem line per problem, "\n"-separated, no trailing newline.
std::string FormatReport(const Report& report);
// {"file", "errors", "warnings", "problems": [{severity, path, message,
// suggestion, line, column}]}.
nlohmann::json ReportToJson(const Report& report);

}  // namespace validation
}  // namespace understudy

#endif  // UNDERSTUDY_VALIDATION_PROBLEMS_H_
