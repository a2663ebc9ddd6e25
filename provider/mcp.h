// The Model Context Protocol's JSON-RPC messages (docs/mcp.md; the envelope
// is provider/jsonrpc.h's) translated
// to and from understudy's canonical requests. Pure functions of their
// arguments: JSON text in, protos and JSON text out; no HTTP, no I/O.
//
// An MCP request is a canonical request whose operation is "mcp:" + the
// method, whose model is the MCP server's name, and whose extra is the
// request's params without `_meta` (progress tokens and other per-call
// metadata never change the answer):
//
//   {"jsonrpc":"2.0","id":3,"method":"tools/call",
//    "params":{"name":"read","arguments":{"path":"a"},"_meta":{"progressToken":3}}}
//     -> operation "mcp:tools/call", model "fs",
//        extra {"name":"read","arguments":{"path":"a"}}
//
// Its answer is the JSON text of the response's `result` (as the canonical
// message's content), or its `error` (code and message).
//
// Replay sends the recorded messages again with the caller's ids: WithIds
// rewrites the response's `id` and a progress notification's
// `progressToken`, leaving every other byte as recorded.
#ifndef UNDERSTUDY_PROVIDER_MCP_H_
#define UNDERSTUDY_PROVIDER_MCP_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "provider/json_util.h"
#include "provider/jsonrpc.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace provider {
namespace mcp {

// The canonical operation's prefix.
inline constexpr char kOperationPrefix[] = "mcp:";

// The token that ties progress to a request: a request's
// params._meta.progressToken, a `notifications/progress`'s
// params.progressToken; null for any other message or when absent.
Json ProgressTokenOf(const jsonrpc::Message& message);

// The canonical request of a request or notification sent to `server`.
v1::CompletionRequest CanonicalRequest(absl::string_view server, const jsonrpc::Message& message);

// `message_json` (one recorded JSON-RPC message) with its response `id`
// replaced by `id`, and a `notifications/progress` message's
// params.progressToken replaced by `progress_token` (when not null);
// unchanged bytes when there is nothing to replace or nothing differs.
// Text that is not a JSON object is returned as is.
std::string WithIds(absl::string_view message_json, const Json& id, const Json& progress_token);

// What understudy's MCP route asks of mcp-proxy, outside JSON-RPC: an HTTP
// 409 whose JSON body's "understudy" field names the request.
enum class ProxySignal {
  kNone,
  // Start the lazily started MCP server and send the message again to it
  // ({"understudy":"start_upstream"}).
  kStartUpstream,
};

// The body that carries `signal` (not kNone).
std::string ProxySignalBody(ProxySignal signal);

// The signal `body` carries: kNone for any body that is not a JSON object
// naming a known one.
ProxySignal ProxySignalOf(absl::string_view body);

}  // namespace mcp
}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_MCP_H_
