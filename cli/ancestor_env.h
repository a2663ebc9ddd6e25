// Variables of the processes that started this one, for a command whose
// own environment was filtered on the way.
//
// MCP clients start stdio servers with a curated environment: the official
// TypeScript SDK passes only HOME, LOGNAME, PATH, SHELL, TERM and USER (plus
// the config's `env`). `understudy mcp-proxy`, started that way under
// `understudy record|replay -- CMD`, would not see UNDERSTUDY_HTTP and
// UNDERSTUDY_RUN, which the agent's own process has. This finds them there.
#ifndef UNDERSTUDY_CLI_ANCESTOR_ENV_H_
#define UNDERSTUDY_CLI_ANCESTOR_ENV_H_

#include <optional>
#include <string>
#include <sys/types.h>

#include "absl/strings/string_view.h"

namespace understudy {
namespace cli {

// The value of `name` in the environment of the nearest ancestor of `pid`
// (its parent, then the parent's parent, ...; at most `max_depth` of them)
// that has it, read from /proc/PID/environ (the environment a process was
// started with). nullopt when none within reach has it, or /proc cannot be
// read (another user's process, no /proc). Never reads `pid`'s own.
std::optional<std::string> AncestorEnv(absl::string_view name, pid_t pid, int max_depth = 8);

// The parent of `pid` from /proc/PID/stat; nullopt when unknown.
std::optional<pid_t> ParentOf(pid_t pid);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_ANCESTOR_ENV_H_
