#include "mcpserver/tools.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "mcpserver/arguments.h"
#include "mcpserver/tool_impl.h"
#include "validation/suggest.h"

namespace understudy {
namespace mcpserver {

using nlohmann::json;

namespace {

const std::vector<ToolDef>& Registry() {
  static const std::vector<ToolDef>* const tools = [] {
    auto* all = new std::vector<ToolDef>();
    for (auto* group : {&TraceTools, &DocumentTools, &TestTools}) {
      for (ToolDef& def : group()) all->push_back(std::move(def));
    }
    return all;
  }();
  return *tools;
}

const ToolDef* Find(absl::string_view name) {
  for (const ToolDef& def : Registry()) {
    if (def.name == name) return &def;
  }
  return nullptr;
}

std::string Quoted(absl::string_view s) {
  return json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

Tools::Tools(ToolsOptions options) : options_(std::move(options)) {
  list_ = json::array();
  for (const ToolDef& def : Registry()) {
    json tool = json::object();
    tool["name"] = def.name;
    tool["title"] = def.title;
    tool["description"] = def.description;
    tool["inputSchema"] = def.input_schema;
    tool["outputSchema"] = def.output_schema;
    tool["annotations"] = {{"title", def.title},
                           {"readOnlyHint", def.read_only},
                           {"openWorldHint", false}};
    list_.push_back(std::move(tool));
  }
}

Tools::~Tools() = default;

const json& Tools::List() const { return list_; }

absl::StatusOr<ToolResult> Tools::Call(absl::string_view name, const json& arguments) const {
  const ToolDef* def = Find(name);
  if (def == nullptr) {
    std::vector<std::string> names;
    for (const ToolDef& d : Registry()) names.push_back(d.name);
    std::string hint = validation::Suggest(name, names);
    return absl::NotFoundError(absl::StrCat("unknown tool ", Quoted(name.substr(0, 80)),
                                            hint.empty() ? "" : absl::StrCat(" (", hint, ")"),
                                            "; the tools are: ", absl::StrJoin(names, ", ")));
  }
  const json args = arguments.is_null() ? json::object() : arguments;
  std::vector<std::string> problems = CheckArguments(def->input_schema, args);
  if (!problems.empty()) {
    ToolResult r;
    r.is_error = true;
    r.text = absl::StrCat(def->name, ": ", absl::StrJoin(problems, "; "));
    return r;
  }
  absl::StatusOr<ToolResult> result;
  try {
    result = def->handler(options_, args);
  } catch (const std::exception& e) {
    // Not expected (handlers check what they read); answered, not thrown, so
    // one bad call never takes the server down.
    result = absl::InternalError(absl::StrCat("internal error: ", e.what()));
  }
  if (!result.ok()) {
    ToolResult r;
    r.is_error = true;
    r.text = absl::StrCat(def->name, ": ", result.status().message());
    return r;
  }
  return result;
}

ToolResult Structured(json structured) {
  ToolResult r;
  r.text = structured.dump(-1, ' ', false, json::error_handler_t::replace);
  r.structured = std::move(structured);
  return r;
}

json ObjectSchema(json properties, std::vector<std::string> required) {
  json schema = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) schema["required"] = std::move(required);
  schema["additionalProperties"] = false;
  return schema;
}

absl::StatusOr<std::string> DocumentArgument(const json& arguments, absl::string_view key) {
  auto it = arguments.find(std::string(key));
  if (it == arguments.end()) {
    return absl::InvalidArgumentError(absl::StrCat("arguments: missing required argument ",
                                                   Quoted(key)));
  }
  std::string text = it->is_string() ? it->get<std::string>()
                                     : it->dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > kMaxDocumentBytes) {
    return absl::InvalidArgumentError(absl::StrCat("arguments.", key, ": ", text.size(),
                                                   " bytes, more than the ", kMaxDocumentBytes,
                                                   " allowed"));
  }
  return text;
}

json ReportResult(const validation::Report& report) {
  json errors = json::array();
  json suggestions = json::array();
  for (const validation::Problem& p : report.problems) {
    errors.push_back({{"path", p.path},
                      {"message", p.message},
                      {"severity", p.severity == validation::Problem::Severity::kError ? "error"
                                                                                        : "warning"},
                      {"line", p.line},
                      {"column", p.column},
                      {"suggestion", p.suggestion}});
    if (!p.suggestion.empty()) {
      suggestions.push_back(p.path.empty() ? p.suggestion : absl::StrCat(p.path, ": ", p.suggestion));
    }
  }
  return {{"valid", report.ok()},
          {"error_count", report.errors()},
          {"warning_count", report.warnings()},
          {"errors", std::move(errors)},
          {"suggestions", std::move(suggestions)},
          {"report", validation::FormatReport(report)}};
}

json ReportSchema() {
  json problem = ObjectSchema(
      {{"path", {{"type", "string"}, {"description", "where: rules[0].when.agent"}}},
       {"message", {{"type", "string"}}},
       {"severity", {{"type", "string"}, {"enum", {"error", "warning"}}}},
       {"line", {{"type", "integer"}, {"description", "1-based; 0 when unknown"}}},
       {"column", {{"type", "integer"}, {"description", "1-based; 0 when unknown"}}},
       {"suggestion", {{"type", "string"}, {"description", "did you mean ...; \"\" for none"}}}},
      {"path", "message", "severity", "line", "column", "suggestion"});
  return ObjectSchema(
      {{"valid", {{"type", "boolean"}, {"description", "no errors (warnings allowed)"}}},
       {"error_count", {{"type", "integer"}}},
       {"warning_count", {{"type", "integer"}}},
       {"errors", {{"type", "array"}, {"items", problem},
                   {"description", "every problem at once, errors and warnings, by position"}}},
       {"suggestions", {{"type", "array"}, {"items", {{"type", "string"}}}}},
       {"report", {{"type", "string"}, {"description", "the problems as `understudy validate` prints them"}}}},
      {"valid", "error_count", "warning_count", "errors", "suggestions", "report"});
}

absl::StatusOr<std::string> RootFolder(const ToolsOptions& options, absl::string_view key) {
  char root[PATH_MAX];
  if (options.root.empty() || ::realpath(options.root.c_str(), root) == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("arguments.", key,
                     ": no folder is allowed for files (understudy mcp --root, serve --tools-root)"));
  }
  return std::string(root);
}

absl::StatusOr<std::string> ResolvePath(const ToolsOptions& options, absl::string_view key,
                                        const std::string& path, bool write) {
  if (path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("arguments.", key, ": empty path"));
  }
  if (path.find('\0') != std::string::npos || path.size() > PATH_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("arguments.", key, ": not a usable path"));
  }
  US_ASSIGN_OR_RETURN(const std::string root, RootFolder(options, key));
  const std::string joined = path[0] == '/' ? path : absl::StrCat(root, "/", path);
  // The file, or for a write the folder it goes in, resolved.
  std::string target;
  char buf[PATH_MAX];
  if (::realpath(joined.c_str(), buf) != nullptr) {
    target = buf;
  } else if (write && errno == ENOENT) {
    const size_t slash = joined.rfind('/');
    const std::string dir = slash == 0 ? "/" : joined.substr(0, slash);
    const std::string base = joined.substr(slash + 1);
    if (base.empty() || base == "." || base == "..") {
      return absl::InvalidArgumentError(absl::StrCat("arguments.", key, ": ", Quoted(path),
                                                     " names a folder, not a file"));
    }
    if (::realpath(dir.c_str(), buf) == nullptr) {
      return absl::NotFoundError(absl::StrCat("arguments.", key, ": the folder of ", Quoted(path),
                                              " does not exist"));
    }
    target = absl::StrCat(buf, "/", base);
  } else {
    return absl::NotFoundError(
        absl::StrCat("arguments.", key, ": ", Quoted(path), ": ", std::strerror(errno)));
  }
  if (target != root && !absl::StartsWith(target, root == "/" ? "/" : root + "/")) {
    return absl::PermissionDeniedError(absl::StrCat("arguments.", key, ": ", Quoted(path),
                                                    " is outside the allowed folder ", root,
                                                    " (understudy mcp --root, serve --tools-root)"));
  }
  struct stat st;
  if (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("arguments.", key, ": ", Quoted(path), " is not a regular file"));
  }
  return target;
}

absl::StatusOr<std::string> ReadDocument(const std::string& path, absl::string_view key) {
  absl::StatusOr<std::string> text = ReadRegularFile(path, kMaxDocumentBytes);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("arguments.", key, ": ", text.status().message()));
  }
  return text;
}

}  // namespace mcpserver
}  // namespace understudy
