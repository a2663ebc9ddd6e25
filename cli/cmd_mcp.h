// `understudy mcp-proxy` (stand in for a stdio MCP server, relaying to
// understudy: cli/mcp_proxy.h) and `understudy mcp` (understudy's own tools
// over stdio: cli/mcp_serve.h).
#ifndef UNDERSTUDY_CLI_CMD_MCP_H_
#define UNDERSTUDY_CLI_CMD_MCP_H_

#include <string>

#include "CLI/CLI.hpp"
#include "cli/cmd_common.h"
#include "cli/mcp_proxy.h"
#include "cli/mcp_serve.h"

namespace understudy {
namespace cli {

// mcp-proxy's flags.
struct McpProxyCommandFlags {
  McpProxyOptions proxy;
  std::string token;
  std::string token_file;
};

// `mcp-proxy`: its flags, bound to `flags`.
void AddMcpProxyFlags(CLI::App* cmd, McpProxyCommandFlags* flags);
// Runs `mcp-proxy` once parsed: 2 when no server command follows -- or the
// token cannot be read; else RunMcpProxy's exit code.
int RunMcpProxyCommand(McpProxyCommandFlags* flags, const CommandAfterSeparator& after);

// `mcp`: its flags, bound to `flags`.
void AddMcpServeFlags(CLI::App* cmd, McpServeFlags* flags);
// Runs `mcp` once parsed; `version` is understudy's, for serverInfo.
int RunMcpServeCommand(const McpServeFlags& flags, const std::string& version);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_CMD_MCP_H_
