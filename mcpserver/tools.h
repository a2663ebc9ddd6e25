// understudy's own tools for coding agents (docs/agents.md), as an MCP
// server offers them: each with a name, a description, an inputSchema and an
// outputSchema, called with JSON arguments and answering a structured result.
//
//   ToolsOptions options;
//   options.channel = grpc::CreateChannel(addr, grpc::InsecureChannelCredentials());
//   options.root = "/home/me/project";          // files only under here
//   Tools tools(std::move(options));
//   nlohmann::json list = tools.List();          // tools/list's "tools"
//   absl::StatusOr<ToolResult> r = tools.Call("show_run", {{"run", "r1"}});
//
// The tools read sessions and traces through a running understudy's gRPC
// services (Sessions, Runs, Traces), so they see exactly what any client
// sees, live runs included; the document tools (validate_*, generate_*,
// get_schema) work without one.
//
// Errors: a name that is no tool is NOT_FOUND (the MCP server answers it as
// a protocol error, -32602). Everything else that goes wrong is a result
// with is_error set and a message naming the argument: arguments that do
// not match the inputSchema, a run or session that does not exist, a path
// outside the allowed folder, a document too large. A document that does not
// validate is not an error: validate_* answer {valid: false, errors: [...]}.
#ifndef UNDERSTUDY_MCPSERVER_TOOLS_H_
#define UNDERSTUDY_MCPSERVER_TOOLS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace mcpserver {

struct ToolsOptions {
  // The understudy server the trace tools read; null makes them answer an
  // error saying so (the document tools still work).
  std::shared_ptr<grpc::Channel> channel;
  // Its gRPC and HTTP addresses (host:port), given to the tests run_tests
  // runs as UNDERSTUDY_ADDR and UNDERSTUDY_HTTP; "" when unknown.
  std::string grpc_address;
  std::string http_address;
  // The database generated tests replay from by default; "" for none.
  std::string db;
  // Files are read and written only under this folder (after symlinks and
  // ".." are resolved). Relative paths in arguments are relative to it.
  std::string root;
  // The understudy binary generated tests start (UNDERSTUDY_BIN).
  std::string binary;
  // Each RPC to the server.
  absl::Duration call_timeout = absl::Seconds(30);
  // The longest run_tests may run a test file (its own timeout_seconds
  // argument may only lower it).
  absl::Duration max_test_time = absl::Seconds(600);
};

// What a tool call answers: `structured` (the structuredContent, an object
// matching the tool's outputSchema, unless is_error) and `text` (the
// content: the structured result as JSON text, or for show_run the
// timeline, or the error message).
struct ToolResult {
  nlohmann::json structured = nlohmann::json::object();
  std::string text;
  bool is_error = false;
};

// The largest document (scenario, spec, test code, results) a tool takes.
inline constexpr size_t kMaxDocumentBytes = 4 << 20;

class Tools {
 public:
  explicit Tools(ToolsOptions options);
  ~Tools();

  // The tools, as tools/list's `tools` array: name, title, description,
  // inputSchema, outputSchema, annotations. The same bytes every call.
  const nlohmann::json& List() const;

  // Calls tool `name` with `arguments` (an object; null reads as {}).
  // NOT_FOUND "unknown tool \"x\" (did you mean ...); the tools are: ..." for
  // a name that is no tool. Thread-safe; blocks for as long as the tool runs
  // (run_tests: up to max_test_time).
  absl::StatusOr<ToolResult> Call(absl::string_view name, const nlohmann::json& arguments) const;

  const ToolsOptions& options() const { return options_; }

 private:
  ToolsOptions options_;
  nlohmann::json list_;
};

}  // namespace mcpserver
}  // namespace understudy

#endif  // UNDERSTUDY_MCPSERVER_TOOLS_H_
