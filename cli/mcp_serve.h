// `understudy mcp`: understudy's own MCP server over stdio, for the agent
// configs that spawn their servers (docs/agents.md). One JSON-RPC message per
// line on stdin, one response per line on stdout; logs on stderr only.
//
// The tools read sessions and traces from a running server (`--addr`), or
// else from the database (`--db`): the command then starts a server of its
// own on free loopback ports, which is also what run_tests replays against.
// Without a database the trace tools answer an error and the document tools
// still work; the database is never created.
#ifndef UNDERSTUDY_CLI_MCP_SERVE_H_
#define UNDERSTUDY_CLI_MCP_SERVE_H_

#include <string>

namespace understudy {
namespace cli {

struct McpServeFlags {
  std::string db = "understudy.db";
  // A running understudy's gRPC address (host:port); "" to serve `db` here.
  std::string addr;
  // With addr: that server's HTTP address (host:port), which generated
  // tests need for their base URLs; "" when it has none.
  std::string http;
  // The folder the tools may read and write files in; "" for the current
  // directory.
  std::string root;
  // Tool calls that run at once (run_tests can take minutes).
  int threads = 4;
};

// Serves until stdin ends, then waits for the calls in progress. Returns 0;
// 2 when the root is missing or not a folder; 3 when the server for `db`
// cannot start.
int McpServe(const McpServeFlags& flags, const std::string& version);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_MCP_SERVE_H_
