// The Agent2Agent protocol's JSON-RPC binding (https://a2a-protocol.org;
// docs/a2a.md) translated to and from understudy's canonical requests. Both
// dialects clients speak are read: v1.0 (SendMessage, SendStreamingMessage,
// GetTask, CancelTask; roles "ROLE_USER", parts {"text": ...}; results
// {"message": ...} or {"task": ...}) and v0.3 (message/send, message/stream,
// tasks/get, tasks/cancel; roles "user", parts {"kind":"text","text":...};
// results {"kind":"message", ...}). Pure functions of their arguments: JSON
// text in, protos and JSON text out; no HTTP, no I/O. The JSON-RPC envelope
// is provider/jsonrpc.h's.
//
// An A2A request is a canonical request whose operation is "a2a:" + the
// method as sent, whose model is the called agent's name, and whose extra
// is the params without the message's client-invented messageId (a fresh
// UUID on every call, which must never decide a match):
//
//   {"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":
//    {"messageId":"0b1…","role":"ROLE_USER","parts":[{"text":"find sources"}]}}}
//     -> operation "a2a:SendMessage", model "researcher",
//        extra {"message":{"role":"ROLE_USER","parts":[{"text":"find sources"}]}}
//
// Its canonical answer (CanonicalAnswer) is the text the result carries and
// the state of its task; the recorded bytes are the exchange's native ones,
// and so are a scripted answer's (ScriptedExchange): every answer is
// replayed by putting the caller's ids in recorded bytes (ForCaller). A
// JSON-RPC error is the exchange's `error`.
#ifndef UNDERSTUDY_PROVIDER_A2A_H_
#define UNDERSTUDY_PROVIDER_A2A_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "provider/json_util.h"
#include "provider/jsonrpc.h"
#include "understudy/v1/completion.pb.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace provider {
namespace a2a {

// The canonical operation's prefix, and the operation of an agent card
// fetch (GET …/.well-known/agent-card.json).
inline constexpr char kOperationPrefix[] = "a2a:";
inline constexpr char kCardOperation[] = "a2a:agent-card";

// The protocol version a method name belongs to.
enum class Version { kV1, kV03 };

enum class Method {
  kSend,        // SendMessage, message/send
  kStream,      // SendStreamingMessage, message/stream
  kGetTask,     // GetTask, tasks/get
  kCancelTask,  // CancelTask, tasks/cancel
  kOther,       // anything else: relayed and replayed as it is
};

// What one request asks.
struct Call {
  Version version = Version::kV1;
  Method method = Method::kOther;
  // kSend and kStream: the message's text parts, joined by "\n".
  std::string text;
  // kSend and kStream: the message's own ids ("" when absent).
  std::string message_id;
  std::string context_id;
  std::string task_id;
};

// The version and method of a method name: names with a '/' are v0.3's.
Call ClassifyMethod(absl::string_view method);

// Reads a JSON-RPC request to an A2A agent. INVALID_ARGUMENT naming the
// field (as "params.message.parts[1].text") when a message method's params
// hold no message object, its parts are not an array of objects, a text
// part's text or an id is not a string; or when GetTask's or CancelTask's
// params name no task id (v1.0 `id`, v0.3 `id`).
absl::StatusOr<Call> ReadCall(const jsonrpc::Message& request);

// The canonical request of `request` sent to agent `agent`.
v1::CompletionRequest CanonicalRequest(absl::string_view agent, const jsonrpc::Message& request);

// The canonical request of a card fetch for agent `agent`.
v1::CompletionRequest CardRequest(absl::string_view agent);

// Whether a canonical request is an A2A one; and what it asks (ReadCall of
// its operation and extra: the message id is gone; ClassifyMethod's alone
// when it does not read).
bool IsA2aRequest(const v1::CompletionRequest& request);
Call CallOf(const v1::CompletionRequest& request);

// The text an answer carries (the JSON text of a result, or of an array of
// a stream's results): a message's text parts; a task's status message and
// its artifacts' text parts; a status update's message; an artifact
// update's parts; joined by "\n". "" when there is none or the text is not
// JSON.
std::string ResultText(absl::string_view result_json);

// The task state an answer ends in, lower-case and without v1.0's prefix
// ("completed", "failed", "input-required"); "" when it names none (a
// message).
std::string ResultState(absl::string_view result_json);

// A recorded JSON-RPC response (whole, or one event of a stream) to a
// request with id `recorded_id`, for a new caller: its `id` set to `id`
// (the text is parsed only when they differ), and each JSON string equal
// to the first of a pair of `message_ids` (a recorded request's messageId,
// echoed in a task's history) replaced by the second (the caller's for
// that request). The bytes as they are when nothing differs; text that is
// not a JSON object keeps its bytes but for the message ids.
std::string ForCaller(absl::string_view recorded, const Json& recorded_id, const Json& id,
                      const std::vector<std::pair<std::string, std::string>>& message_ids);

// The canonical answer of a result (the JSON text of a response's result,
// or of the array of a stream's results): ResultText as the message's
// content (role "assistant"), ResultState as the finish reason.
v1::CompletionResponse CanonicalAnswer(absl::string_view result_json);

// A scripted answer's result for `call`, in the caller's version: a message
// from the called agent saying `text`, or (`failed`) a task in state
// failed whose status message says it. The ids are derived from `seed`
// (the same seed, the same bytes), but for the call's own context and task
// ids, which are kept.
std::string ScriptedResult(const Call& call, absl::string_view text, bool failed,
                           absl::string_view seed);

// ScriptedResult's answer as a recording of it would hold it: its
// CanonicalAnswer, and a native exchange (provider "a2a") whose bytes are a
// JSON-RPC response with a null id (ForCaller gives it the caller's),
// whole, or for a kStream call the one event of a stream.
v1::Exchange ScriptedExchange(const Call& call, absl::string_view text, bool failed,
                              absl::string_view seed);

// The agent card `card_json` with each interface URL (v1.0
// supportedInterfaces[].url; v0.3 url and additionalInterfaces[].url) set to
// `url`, so that the client calls the agent through understudy.
// INVALID_ARGUMENT when the text is not a JSON object.
absl::StatusOr<std::string> CardForUrl(absl::string_view card_json, absl::string_view url);

// The card of an agent that exists only as scenario rules: its name, JSON-RPC
// interfaces for v1.0 and v0.3 (URLs empty, for CardForUrl), streaming; as
// an exchange, the card is the native response body and the content.
std::string ScriptedCard(absl::string_view agent);
v1::Exchange ScriptedCardExchange(absl::string_view agent);

// Whether ForCaller would change anything for these arguments.
bool ChangesForCaller(const Json& recorded_id, const Json& id,
                      const std::vector<std::pair<std::string, std::string>>& message_ids);

}  // namespace a2a
}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_A2A_H_
