// Internal to mcpserver: how each tool is defined and what the handlers
// share. Handlers live by purpose: trace_tools.cc (sessions and traces),
// document_tools.cc (validators and schemas), test_tools.cc (spec and test
// generation, checking, running, analysis).
#ifndef UNDERSTUDY_MCPSERVER_TOOL_IMPL_H_
#define UNDERSTUDY_MCPSERVER_TOOL_IMPL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "mcpserver/tools.h"
#include "nlohmann/json.hpp"
#include "validation/problems.h"

namespace understudy {
namespace mcpserver {

// A tool's handler: the arguments have already been checked against the
// input schema. A non-OK status becomes an is_error result with its message.
using Handler = absl::StatusOr<ToolResult> (*)(const ToolsOptions& options,
                                               const nlohmann::json& arguments);

struct ToolDef {
  std::string name;
  std::string title;
  std::string description;
  nlohmann::json input_schema;
  nlohmann::json output_schema;
  bool read_only = true;  // annotations.readOnlyHint
  Handler handler = nullptr;
};

std::vector<ToolDef> TraceTools();
std::vector<ToolDef> DocumentTools();
std::vector<ToolDef> TestTools();

// A successful result: `structured`, and its JSON text as the content.
ToolResult Structured(nlohmann::json structured);

// An object schema with these properties, `required` names, no others.
nlohmann::json ObjectSchema(nlohmann::json properties, std::vector<std::string> required = {});

// The argument `key` as document text: a string as it is, an object as its
// JSON text. INVALID_ARGUMENT "arguments.KEY: ..." when it is larger than
// kMaxDocumentBytes.
absl::StatusOr<std::string> DocumentArgument(const nlohmann::json& arguments, absl::string_view key);

// A validator's report as a tool result: {valid, errors: [{path, message,
// severity, line, column, suggestion}], suggestions: ["PATH: did you mean
// ...?"], report: the formatted lines}.
nlohmann::json ReportResult(const validation::Report& report);

// The schema of ReportResult's result.
nlohmann::json ReportSchema();

// An argument with a default: arguments[key] when present, else `fallback`.
template <typename T>
T Arg(const nlohmann::json& arguments, const char* key, T fallback) {
  auto it = arguments.find(key);
  return it == arguments.end() || it->is_null() ? fallback : it->get<T>();
}

// options.root with symlinks and ".." resolved; FAILED_PRECONDITION
// "arguments.KEY: no folder is allowed for files ..." when there is none.
absl::StatusOr<std::string> RootFolder(const ToolsOptions& options, absl::string_view key);

// Resolves a path argument under options.root: relative paths are relative
// to it; the result (after symlinks and "..") must lie within it. For
// `write`, the file may not exist yet but its folder must. INVALID_ARGUMENT
// "arguments.KEY: PATH is outside the allowed folder ROOT" and NOT_FOUND for
// a file that is not there (when reading).
absl::StatusOr<std::string> ResolvePath(const ToolsOptions& options, absl::string_view key,
                                        const std::string& path, bool write);

// Reads a file resolved by ResolvePath, at most kMaxDocumentBytes.
absl::StatusOr<std::string> ReadDocument(const std::string& path, absl::string_view key);

}  // namespace mcpserver
}  // namespace understudy

#endif  // UNDERSTUDY_MCPSERVER_TOOL_IMPL_H_
