#include "validation/problems.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace understudy {
namespace validation {

std::string JoinPath(absl::string_view parent, absl::string_view key) {
  return parent.empty() ? std::string(key) : absl::StrCat(parent, ".", key);
}

std::string JoinPath(absl::string_view parent, size_t index) {
  return absl::StrCat(parent, "[", index, "]");
}

std::string KeyPath(absl::string_view parent, absl::string_view key) {
  std::string shown(key.substr(0, 200));
  if (shown.size() < key.size()) shown += "...";
  return absl::StrCat(parent, "[", nlohmann::json(shown).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "]");
}

int Report::errors() const {
  return static_cast<int>(std::count_if(problems.begin(), problems.end(), [](const Problem& p) {
    return p.severity == Problem::Severity::kError;
  }));
}

int Report::warnings() const { return static_cast<int>(problems.size()) - errors(); }

void Report::SortByPosition() {
  std::stable_sort(problems.begin(), problems.end(), [](const Problem& a, const Problem& b) {
    return std::make_pair(a.line, a.column) < std::make_pair(b.line, b.column);
  });
}

std::string FormatProblem(const Report& report, const Problem& problem) {
  std::string out = report.source;
  if (problem.line > 0) absl::StrAppend(&out, ":", problem.line, ":", problem.column);
  absl::StrAppend(&out, ": ", problem.severity == Problem::Severity::kError ? "error" : "warning",
                  ": ");
  if (!problem.path.empty()) absl::StrAppend(&out, problem.path, ": ");
  absl::StrAppend(&out, problem.message);
  if (!problem.suggestion.empty()) absl::StrAppend(&out, " (", problem.suggestion, ")");
  return out;
}

std::string FormatReport(const Report& report) {
  std::vector<std::string> lines;
  lines.reserve(report.problems.size());
  for (const Problem& p : report.problems) lines.push_back(FormatProblem(report, p));
  return absl::StrJoin(lines, "\n");
}

nlohmann::json ReportToJson(const Report& report) {
  nlohmann::json problems = nlohmann::json::array();
  for (const Problem& p : report.problems) {
    problems.push_back({{"severity", p.severity == Problem::Severity::kError ? "error" : "warning"},
                        {"path", p.path},
                        {"message", p.message},
                        {"suggestion", p.suggestion},
                        {"line", p.line},
                        {"column", p.column}});
  }
  return {{"file", report.source},
          {"errors", report.errors()},
          {"warnings", report.warnings()},
          {"problems", std::move(problems)}};
}

}  // namespace validation
}  // namespace understudy
