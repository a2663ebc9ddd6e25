// The Model Context Protocol's JSON-RPC messages (docs/mcp.md) translated
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
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace provider {
namespace mcp {

// JSON-RPC 2.0 error codes, and understudy's own for a replay miss.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kNoRecording = -32001;
inline constexpr int kUpstreamError = -32002;

struct Message {
  enum class Kind { kRequest, kNotification, kResponse };
  Kind kind = Kind::kRequest;
  // Requests and responses: the id (a string or an integer).
  Json id;
  // Requests and notifications.
  std::string method;
  // The params (an object or an array), null when absent.
  Json params;
  // Responses: the result, or the error object.
  Json result;
  Json error;
  // params._meta.progressToken, null when absent.
  Json progress_token;
};

// Parses one JSON-RPC 2.0 message. INVALID_ARGUMENT naming what is wrong:
// not JSON (the message starts "body: invalid JSON at byte N"), a batch
// (an array: MCP 2025-06-18 removed batching), not an object, `jsonrpc`
// not "2.0", an id that is not a string or an integer, a method that is not
// a string, params that are neither an object nor an array, or a response
// with neither or both of result and error. `where` names the text ("body",
// "line 3").
absl::StatusOr<Message> ParseMessage(absl::string_view text, absl::string_view where = "body");

// The JSON-RPC error code for a ParseMessage failure: kParseError for text
// that is not JSON, kInvalidRequest otherwise.
int ErrorCodeFor(const absl::Status& parse_error);

// The id as JSON text (`7`, `"a"`): a key that matches a response to its
// request whatever the id's type. "" for a notification, which has none.
std::string IdText(const Message& message);

// The token that ties progress to a request: a request's
// params._meta.progressToken, a `notifications/progress`'s
// params.progressToken; null for any other message or when absent.
Json ProgressTokenOf(const Message& message);

// The canonical request of a request or notification sent to `server`.
v1::CompletionRequest CanonicalRequest(absl::string_view server, const Message& message);

// A response message: {"jsonrpc":"2.0","id":ID,"result":RESULT}, where
// `result_json` is JSON text (an empty text is {}).
std::string ResultResponse(const Json& id, absl::string_view result_json);

// {"jsonrpc":"2.0","id":ID,"error":{"code":CODE,"message":MESSAGE[,"data":DATA]}};
// `data` is JSON text or empty.
std::string ErrorResponse(const Json& id, int code, absl::string_view message,
                          absl::string_view data_json = "");

// A received response's outcome, for the canonical answer.
struct Outcome {
  // The JSON text of `result` (compact) when there was no error.
  std::string result_json;
  bool is_error = false;
  int code = 0;
  std::string message;
};
Outcome OutcomeOf(const Message& response);

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
