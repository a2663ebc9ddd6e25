// Checking a tool call's arguments against the tool's inputSchema, so that a
// wrong argument is a tool error naming the argument ("arguments.run: expected
// a string, got 42") rather than a failure somewhere inside the tool.
//
// The schemas are the ones understudy writes for its own tools, so only the
// JSON Schema keywords they use are understood: type (a name or a list of
// names), properties, required, additionalProperties (false), items, enum,
// minimum, maximum, minLength, maxLength, minItems, maxItems, description
// (ignored). Anything else
// in a schema is ignored; a schema's correctness is pinned by the tests that
// list the tools through the official MCP client, which validates them.
#ifndef UNDERSTUDY_MCPSERVER_ARGUMENTS_H_
#define UNDERSTUDY_MCPSERVER_ARGUMENTS_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace understudy {
namespace mcpserver {

// Every way `value` fails `schema`, one message each, in document order:
// "arguments.kinds[2]: expected a string, got 7",
// "arguments: unknown argument \"rnu\" (did you mean \"run\"?)",
// "arguments: missing required argument \"framework\"". `path` names the
// value in messages. Empty when it conforms. Nesting is bounded by the
// schema's own depth (the value is walked only where the schema goes).
std::vector<std::string> CheckArguments(const nlohmann::json& schema, const nlohmann::json& value,
                                        const std::string& path = "arguments");

}  // namespace mcpserver
}  // namespace understudy

#endif  // UNDERSTUDY_MCPSERVER_ARGUMENTS_H_
