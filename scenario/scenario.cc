// The scenario loader's entry points (the contract is scenario.h): parsing
// and validating a document, reading a scenario file, and finding a pack or
// file by name. What a document may hold is checked by the Checker
// (scenario_checker.h: check_document.cc and check_rules.cc).
#include "scenario/scenario.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scenario/scenario_checker.h"
#include "validation/yaml_checker.h"
#include "yaml-cpp/yaml.h"

#ifndef UNDERSTUDY_SCENARIO_DIR
#define UNDERSTUDY_SCENARIO_DIR "scenarios"
#endif

namespace understudy {
namespace scenario {
namespace {

ValidationReport Parse(absl::string_view text, absl::string_view source, Scenario* out) {
  ValidationReport report;
  report.source = std::string(source);
  out->source = std::string(source);
  internal::Checker check(&report);
  const YAML::Node none;
  validation::YamlLimits limits;
  limits.what = "scenario";
  limits.max_bytes = kMaxScenarioBytes;
  limits.max_depth = kMaxNestingDepth;
  limits.max_nodes = kMaxNodes;
  limits.empty_message =
      absl::StrCat("empty document; expected a mapping starting with schema: ", kScenarioSchema);
  std::optional<YAML::Node> root = validation::LoadYamlDocument(text, limits, &report);
  if (!root.has_value()) return report;
  try {
    check.Document(*root, out);
  } catch (const YAML::Exception& e) {
    // Not expected: every access above checks types first. Reported rather
    // than thrown so that a validator bug never takes a server down.
    check.Error(none, "", absl::StrCat("internal error reading the document: ", e.msg));
  }
  report.SortByPosition();
  if (report.ok()) {
    auto normalizer = matching::MatchNormalizer::Create(out->matching.ignore_paths,
                                              out->matching.normalizers);
    if (normalizer.ok()) {
      out->matching.normalizer = *std::move(normalizer);
    } else {
      check.Error(none, "matching", std::string(normalizer.status().message()));
    }
  }
  return report;
}

}  // namespace

const char* Action::kind_name() const {
  static constexpr const char* kNames[] = {"respond",    "error",
                                           "delay",      "hang",
                                           "disconnect", "fail_then_succeed",
                                           "sequence",   "from_session"};
  return kNames[value.index()];
}

ValidationReport ValidateScenario(absl::string_view text, absl::string_view source) {
  Scenario ignored;
  return Parse(text, source, &ignored);
}

absl::StatusOr<Scenario> LoadScenario(absl::string_view text, absl::string_view source) {
  Scenario scenario;
  ValidationReport report = Parse(text, source, &scenario);
  if (!report.ok()) return absl::InvalidArgumentError(FormatReport(report));
  return scenario;
}

absl::StatusOr<std::string> ReadScenarioFile(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) {
    return absl::NotFoundError(absl::StrCat("no such scenario file: ", path));
  }
  if (std::filesystem::is_directory(status)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is a directory, not a scenario file"));
  }
  if (!std::filesystem::is_regular_file(status)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not a regular file (a device, FIFO or socket)"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  std::string text(kMaxScenarioBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

std::vector<std::string> ScenarioSearchPath() {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  const char* env = std::getenv("UNDERSTUDY_SCENARIOS");
  if (env != nullptr && *env != '\0') dirs.push_back(env);
  // An installed program (PREFIX/bin/understudy) has its packs in
  // PREFIX/share/understudy/scenarios, wherever PREFIX is: /usr for the
  // .deb, any folder it was unpacked into. A program in its build tree has
  // none there and reads the source tree's, compiled in.
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path installed = exe.parent_path().parent_path() / "share" / "understudy" / "scenarios";
  if (!ec && fs::is_directory(installed, ec)) {
    dirs.push_back(installed.string());
  } else {
    dirs.push_back(UNDERSTUDY_SCENARIO_DIR);
  }
  return dirs;
}

namespace {

bool LooksLikePath(const std::string& name_or_path) {
  return absl::StrContains(name_or_path, '/') || absl::EndsWith(name_or_path, ".yaml") ||
         absl::EndsWith(name_or_path, ".yml") || absl::EndsWith(name_or_path, ".json");
}

// `path` resolved as `files` allows. Messages name the path as given and
// never what the file holds.
absl::StatusOr<std::string> AllowedPath(const std::string& path, const ScenarioFiles& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (files.any_path) {
    if (fs::is_regular_file(path, ec)) return path;
    if (fs::exists(path, ec)) {
      return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file"));
    }
    return absl::NotFoundError(absl::StrCat("no such scenario file: ", path));
  }
  const std::string how =
      "send the document as scenario_text, or name a pack (see `understudy validate`)";
  if (files.dir.empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "\"", path, "\" is a file path, and this server reads no scenario files for its callers "
        "(start it with --scenario-dir DIR to allow a directory); ", how));
  }
  const fs::path dir = fs::canonical(files.dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("--scenario-dir ", files.dir, ": ", ec.message()));
  const fs::path candidate = fs::path(path).is_absolute() ? fs::path(path) : dir / path;
  const fs::path real = fs::canonical(candidate, ec);
  if (!ec) {
    const fs::path inside = real.lexically_relative(dir);
    if (inside.empty() || *inside.begin() == "..") ec = std::make_error_code(std::errc::permission_denied);
  }
  if (ec == std::errc::permission_denied) {
    return absl::PermissionDeniedError(absl::StrCat(
        "\"", path, "\" is outside the directory this server reads scenarios from (--scenario-dir); ",
        how));
  }
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("no scenario file \"", path, "\" in the server's --scenario-dir"));
  }
  if (!fs::is_regular_file(real, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", path, "\" is not a regular file"));
  }
  return real.string();
}

}  // namespace

absl::StatusOr<std::string> ResolveScenario(const std::string& name_or_path,
                                            const ScenarioFiles& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (LooksLikePath(name_or_path)) return AllowedPath(name_or_path, files);
  std::set<std::string> available;
  for (const std::string& dir : ScenarioSearchPath()) {
    for (const char* ext : {".yaml", ".yml", ".json"}) {
      fs::path candidate = fs::path(dir) / (name_or_path + ext);
      if (!name_or_path.empty() && fs::is_regular_file(candidate, ec)) return candidate.string();
    }
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      if (p.extension() == ".yaml" || p.extension() == ".yml" || p.extension() == ".json") {
        available.insert(p.stem().string());
      }
    }
  }
  if (!name_or_path.empty() && files.any_path && fs::is_regular_file(name_or_path, ec)) {
    return name_or_path;
  }
  if (!name_or_path.empty() && !files.any_path && !files.dir.empty()) {
    absl::StatusOr<std::string> in_dir = AllowedPath(name_or_path, files);
    if (in_dir.ok()) return in_dir;
  }
  std::string message = absl::StrCat(
      "no scenario pack or file named \"", name_or_path, "\" (packs: ",
      available.empty() ? "none found" : absl::StrJoin(available, ", "));
  // Where the server looked is the operator's business, not a caller's.
  if (files.any_path) absl::StrAppend(&message, "; searched ", absl::StrJoin(ScenarioSearchPath(), ", "));
  absl::StrAppend(&message, ")");
  return absl::NotFoundError(message);
}

}  // namespace scenario
}  // namespace understudy
