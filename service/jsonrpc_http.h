// What the HTTP routes of JSON-RPC servers share — MCP tool servers
// (service/mcp_api.h) and A2A agents (service/a2a_api.h): the errors a
// status becomes, the client headers passed on, a recorded SSE answer sent
// again, and the relay that passes an upstream's answer to the client as it
// arrives and records it.
#ifndef UNDERSTUDY_SERVICE_JSONRPC_HTTP_H_
#define UNDERSTUDY_SERVICE_JSONRPC_HTTP_H_

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/env.h"
#include "engine/engine.h"
#include "provider/json_util.h"
#include "provider/jsonrpc.h"
#include "provider/sse.h"
#include "service/http_server.h"
#include "upstream/http_upstream.h"

namespace understudy {
namespace service {

inline constexpr char kJsonType[] = "application/json";
inline constexpr char kEventStreamType[] = "text/event-stream";

// The JSON-RPC error response for a status the engine or an adapter gave:
// a replay miss is jsonrpc::kNoRecording with data {"understudy":
// "no_recording"}; INVALID_ARGUMENT kInvalidParams; anything else
// kInternalError; the data of those names the status code
// ({"understudy":"FAILED_PRECONDITION"}).
std::string JsonRpcErrorFor(const provider::Json& id, const absl::Status& status);
// The same with the code given (the data still names the status).
std::string JsonRpcErrorFor(const provider::Json& id, int code, const absl::Status& status);

// Answers with a JSON body and `headers` besides the content type.
void RespondJson(HttpResponder& out, int status, std::string body, HttpHeaders headers = {});

// Whether the client's Accept header takes an event stream.
bool AcceptsEventStream(const HttpRequest& request);

// One SSE event carrying `data` (one line of JSON): "event: NAME\n" first
// when `event` is not empty.
std::string SseFrame(absl::string_view event, absl::string_view data);

// The client's headers an upstream gets: all but hop-by-hop ones
// (connection, te, upgrade, …), host, content-length, accept-encoding,
// proxy-* and x-understudy-*, and those named in `also_dropped`
// (lower-case).
upstream::UpstreamHttpHeaders ForwardedHeaders(const HttpRequest& request,
                                               std::initializer_list<absl::string_view> also_dropped = {});

// Splits an upstream URL into the base HttpUpstream takes (scheme, host,
// port) and the endpoint's path ("/" when none). INVALID_ARGUMENT naming
// `flag` for a URL that is not http(s)://HOST[:PORT][/PATH], or that holds a
// byte no URL may (a space, a control character, non-ASCII), naming it.
absl::StatusOr<std::pair<std::string, std::string>> SplitUpstreamUrl(absl::string_view url,
                                                                     absl::string_view flag);

// Takes an upstream's answer and drops it: for messages sent fire and
// forget.
class IgnoreAnswer : public upstream::UpstreamHttpObserver {
 public:
  void OnHead(int, upstream::UpstreamHttpHeaders) override {}
  void OnData(absl::string_view) override {}
  void OnDone(absl::Status) override {}
};

// A recorded stream's events (`native`'s chunks) sent again, each through
// `rewrite` (the caller's ids; none when empty) and framed by
// SseFrame(`event`, …) as the client reads, paced by its recorded offset
// when `speed` > 0.
class RecordedEvents final : public HttpSource {
 public:
  // `native` lives as long as `keepalive`.
  RecordedEvents(std::shared_ptr<const void> keepalive, const v1::NativeExchange& native,
                 std::function<std::string(absl::string_view)> rewrite, std::string event,
                 absl::Time start, double speed);
  std::optional<HttpPiece> Next() override;

 private:
  const std::shared_ptr<const void> keepalive_;
  const v1::NativeExchange& native_;
  const std::function<std::string(absl::string_view)> rewrite_;
  const std::string event_;
  const absl::Time start_;
  const double speed_;
  int next_ = 0;
};

// How the events of an upstream's SSE answer answer the request.
enum class StreamEvents {
  // MCP: notifications, then the one response (the event whose id is the
  // request's). Notifications reach the client as they come; the response
  // waits for the recording's commit, and is the answer.
  kNotificationsThenResponse,
  // A2A: every event is a response to the request. Each reaches the client
  // once the next one arrived, the last after the recording's commit; the
  // answer is the array of their results (or the first error).
  kEveryEventResponds,
};

struct JsonRpcRelayOptions {
  // The recording's NativeExchange provider ("mcp", "a2a") and path.
  std::string provider;
  std::string native_path;
  // Names the upstream in errors: `MCP server "fs"`.
  std::string label;
  // The request's id, and its body as stored (redacted).
  provider::Json id;
  std::string stored_body;
  // Whether the client takes an event stream (else it gets the answer's
  // final message as JSON).
  bool client_takes_stream = false;
  // Headers the client's answer carries besides the content type.
  HttpHeaders answer_headers;
  StreamEvents events = StreamEvents::kNotificationsThenResponse;
  // The SSE event name the client's stream uses ("" for none).
  std::string sse_event;
  // The canonical answer of a result's JSON text (a stream's: the array of
  // its events' results); empty: the text itself as the content of a
  // message in `role`.
  std::function<v1::CompletionResponse(absl::string_view result_json)> canonical_answer;
  std::string role = "tool";
  // Called with each header of the upstream's answer, on the relay's
  // thread; may be empty.
  std::function<void(const std::string& name, const std::string& value)> on_upstream_header;
};

// Relays one forwarded request's answer to the client as it arrives and
// records it once complete (engine::Engine::FinishForward with `ticket`).
// Nothing partial is recorded: a transport failure, an HTTP error or an
// answer without a response answers the client with a JSON-RPC error.
class JsonRpcRelay : public upstream::UpstreamHttpObserver,
                     public std::enable_shared_from_this<JsonRpcRelay> {
 public:
  JsonRpcRelay(JsonRpcRelayOptions options, std::unique_ptr<engine::ForwardTicket> ticket,
               engine::Engine* engine, std::shared_ptr<HttpResponder> out, Env* env);

  void OnHead(int status, upstream::UpstreamHttpHeaders headers) override;
  void OnData(absl::string_view bytes) override;
  void OnDone(absl::Status status) override;

 private:
  void OnMessage(std::string data);
  // The upstream's failure, or OK with the answer in exchange's terms.
  absl::Status Outcome(absl::Status status, v1::Exchange* exchange, std::string* final_message);
  void Finish(const std::string& message);

  const JsonRpcRelayOptions options_;
  std::unique_ptr<engine::ForwardTicket> ticket_;
  engine::Engine* const engine_;
  const std::shared_ptr<HttpResponder> out_;
  Env* const env_;
  const absl::Time start_;
  v1::NativeExchange native_;
  int status_ = 0;
  bool stream_ = false;
  bool started_ = false;
  std::string body_;
  provider::SseParser parser_;
  std::vector<v1::NativeChunk> chunks_;
  // kNotificationsThenResponse: the response, once seen.
  std::optional<provider::jsonrpc::Message> response_;
  std::string response_text_;
  // kEveryEventResponds: each event's outcome, in order; the latest event
  // not yet sent to the client.
  std::vector<provider::jsonrpc::Outcome> outcomes_;
  std::optional<std::string> held_;
  absl::Status failure_;
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_JSONRPC_HTTP_H_
