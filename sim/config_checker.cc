#include "sim/config_checker.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/duration.h"

namespace understudy {
namespace sim {

using validation::DescribeNode;

bool SimChecker::Duration(const YAML::Node& n, const std::string& path, absl::Duration* out) {
  if (!n.IsScalar() || n.Scalar().empty()) {
    Error(n, path,
          absl::StrCat(DurationExpected(PlainNumber::kMilliseconds), ", got ", DescribeNode(n)));
    return false;
  }
  absl::StatusOr<absl::Duration> d = ParseDuration(n.Scalar(), PlainNumber::kMilliseconds);
  if (!d.ok()) {
    Error(n, path, std::string(d.status().message()));
    return false;
  }
  *out = *d;
  return true;
}

void SimChecker::Outputs(const YAML::Node& n, const std::string& path,
                         std::map<std::string, std::string>* out) {
  for (const auto& [key, value] : Entries(n, path)) {
    const std::string p = validation::KeyPath(path, key.Scalar());
    if (key.Scalar().empty()) {
      Error(key, p, "must not be empty");
      continue;
    }
    std::string v;
    if (String(value, p, &v)) (*out)[key.Scalar()] = v;
  }
}

bool SimChecker::ExitCode(const YAML::Node& n, const std::string& path, int* out,
                          std::string suggestion) {
  int64_t v = 0;
  if (!Int(n, path, &v, 0)) return false;
  if (v > 255) {
    Error(n, path, absl::StrCat("must be at most 255 (an exit status), got ", v),
          std::move(suggestion));
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

std::shared_ptr<Behaviour> SimChecker::PlainComplete(const std::string& path) const {
  auto b = std::make_shared<Behaviour>();
  b->path = path;
  b->completion = out_->completion;
  return b;
}

bool TakesField(absl::Span<const ActionInfo> table, ActionKind kind, absl::string_view key) {
  for (const ActionInfo& a : table) {
    if (a.kind != kind) continue;
    for (const char* f : a.fields) {
      if (key == f) return true;
    }
  }
  return false;
}

std::string NamesTaking(absl::Span<const ActionInfo> table, absl::string_view key,
                        absl::string_view word) {
  std::vector<std::string> names;
  for (const ActionInfo& a : table) {
    if (TakesField(table, a.kind, key)) names.push_back(a.name);
  }
  return absl::StrCat(word, names.size() == 1 ? " " : "s ", absl::StrJoin(names, ", "));
}

}  // namespace sim
}  // namespace understudy
