// JSON-RPC 2.0 messages (https://www.jsonrpc.org/specification), the
// envelope both MCP (provider/mcp.h) and A2A (provider/a2a.h) speak: one
// parser, the error and result responses, and the id a replay puts back.
// Pure functions of their arguments: JSON text in, JSON values and text
// out; no HTTP, no I/O.
//
//   absl::StatusOr<jsonrpc::Message> m = jsonrpc::ParseMessage(body);
//   if (!m.ok()) return jsonrpc::ErrorResponse(Json(), jsonrpc::ErrorCodeFor(m.status()),
//                                              m.status().message());
#ifndef UNDERSTUDY_PROVIDER_JSONRPC_H_
#define UNDERSTUDY_PROVIDER_JSONRPC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "provider/json_util.h"

namespace understudy {
namespace provider {
namespace jsonrpc {

// JSON-RPC 2.0's error codes, then understudy's own (in the range the
// specification leaves to servers).
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// Replay found nothing to answer with (the data carries the miss report).
inline constexpr int kNoRecording = -32001;
// The upstream server failed.
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
};

// Parses one JSON-RPC 2.0 message. INVALID_ARGUMENT naming what is wrong:
// not JSON (the message starts "body: invalid JSON at byte N"), a batch (an
// array: neither MCP since 2025-06-18 nor A2A takes them), not an object,
// `jsonrpc` not "2.0", an id that is not a string or an integer, a method
// that is not a string, params that are neither an object nor an array, or
// a response with neither or both of result and error. `where` names the
// text ("body", "line 3").
absl::StatusOr<Message> ParseMessage(absl::string_view text, absl::string_view where = "body");

// The JSON-RPC error code for a ParseMessage failure: kParseError for text
// that is not JSON, kInvalidRequest otherwise.
int ErrorCodeFor(const absl::Status& parse_error);

// The id as JSON text (`7`, `"a"`): a key that matches a response to its
// request whatever the id's type. "" for a notification, which has none.
std::string IdText(const Message& message);

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

// Whether the JSON object `value` is a response (it has no "method"); when
// it is and its "id" differs from `id`, sets it to `id` and returns true.
bool ReplaceResponseId(Json& value, const Json& id);

}  // namespace jsonrpc
}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_JSONRPC_H_
