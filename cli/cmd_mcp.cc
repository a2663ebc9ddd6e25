#include "cli/cmd_mcp.h"

#include <unistd.h>

#include <iostream>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cli/ancestor_env.h"

namespace understudy {
namespace cli {

void AddMcpProxyFlags(CLI::App* cmd, McpProxyCommandFlags* flags) {
  McpProxyOptions& mcp = flags->proxy;
  cmd->add_option("--name", mcp.name, "The MCP server's name (recordings are kept by it)")
      ->required();
  cmd->add_option("--http", mcp.http, "understudy's HTTP address (http://HOST:PORT)")
      ->envname("UNDERSTUDY_HTTP");
  cmd->add_option("--run", mcp.run, "Run to record into or replay from (default: the server's)")
      ->envname("UNDERSTUDY_RUN");
  cmd->add_option("--agent", mcp.agent, "Agent name sent with every message")
      ->envname("UNDERSTUDY_AGENT");
  cmd->add_option("--auth-token-file", flags->token_file,
                  "File (mode 600) holding the server's token (docs/security.md)")
      ->envname("UNDERSTUDY_AUTH_TOKEN_FILE");
  cmd->add_option("--auth-token", flags->token,
                  "The token itself (visible in the process list: prefer --auth-token-file)")
      ->envname("UNDERSTUDY_AUTH_TOKEN");
  cmd->footer(
      "Reads newline-delimited JSON-RPC on stdin, POSTs each message to\n"
      "{http}/run/{run}/mcp/{name} and writes the answers on stdout, one message per line.\n"
      "When the run records (or passes through) and understudy asks for the real server, the\n"
      "command after -- is started (stdin/stdout piped, stderr inherited); in replay it never is.\n"
      "Exit: 0 when stdin ends (or on SIGINT/SIGTERM), 2 usage, 3 stdin or stdout failed.\n"
      "Example, in an agent's MCP config (`understudy record|replay -- CMD` sets UNDERSTUDY_HTTP\n"
      "and UNDERSTUDY_RUN for the agent):\n"
      "  {\"command\":\"understudy\",\"args\":[\"mcp-proxy\",\"--name\",\"fs\",\"--\",\"npx\",\n"
      "   \"@modelcontextprotocol/server-filesystem\",\"/tmp\"]}\n"
      "Or by hand:\n"
      "  understudy mcp-proxy --http http://127.0.0.1:7141 --run my-run --name fs -- \\\n"
      "    npx @modelcontextprotocol/server-filesystem /tmp");
}

int RunMcpProxyCommand(McpProxyCommandFlags* flags, const CommandAfterSeparator& after) {
  McpProxyOptions& mcp = flags->proxy;
  if (!after.given || after.words.empty()) {
    std::cerr << "understudy: give the MCP server's command after --, e.g. understudy mcp-proxy "
                 "--name fs -- npx @modelcontextprotocol/server-filesystem /tmp (see `understudy "
                 "mcp-proxy --help`)"
              << std::endl;
    return 2;
  }
  mcp.command = after.words;
  absl::StatusOr<std::string> token = ResolveClientToken(flags->token, flags->token_file);
  if (!token.ok()) {
    std::cerr << "understudy: " << token.status().message() << std::endl;
    return 2;
  }
  mcp.auth_token = *token;
  if (mcp.http.empty()) {
    // MCP clients start stdio servers with a filtered environment; the
    // agent that started this proxy has the variables record|replay set.
    if (std::optional<std::string> http = AncestorEnv("UNDERSTUDY_HTTP", getpid())) {
      mcp.http = *http;
      if (mcp.run.empty()) mcp.run = AncestorEnv("UNDERSTUDY_RUN", getpid()).value_or("");
    }
  }
  return RunMcpProxy(mcp);
}

void AddMcpServeFlags(CLI::App* cmd, McpServeFlags* flags) {
  cmd->add_option("--db", flags->db, "SQLite file to read (never created)")
      ->envname("UNDERSTUDY_DB");
  cmd->add_option("--addr", flags->addr,
                  "Read a running server (gRPC HOST:PORT) instead of the database")
      ->envname("UNDERSTUDY_ADDR");
  cmd->add_option("--server-http", flags->http,
                  "With --addr: that server's HTTP address (HOST:PORT), for run_tests")
      ->envname("UNDERSTUDY_SERVER_HTTP");
  cmd->add_option("--root", flags->root,
                  "Folder the tools may read and write files in (default: the current "
                  "directory)");
  cmd->footer(
      "One JSON-RPC message per line on stdin and stdout (MCP's stdio transport); logs on stderr.\n"
      "The same tools are served over Streamable HTTP at /mcp by `understudy serve`.\n"
      "Exit: 0 when stdin ends, 2 usage (--root missing or not a folder), 3 the database's server\n"
      "cannot start.\n"
      "In an agent's MCP config (docs/agents.md):\n"
      "  {\"mcpServers\": {\"understudy\": {\"command\": \"understudy\",\n"
      "     \"args\": [\"mcp\", \"--db\", \"golden.db\"]}}}");
}

int RunMcpServeCommand(const McpServeFlags& flags, const std::string& version) {
  return McpServe(flags, version);
}

}  // namespace cli
}  // namespace understudy
