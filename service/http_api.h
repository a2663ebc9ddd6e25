// The provider-compatible HTTP API: what an unmodified agent using a model
// vendor's official SDK talks to once its base URL points here.
//
//   the routes of every model API   provider::CodecRegistry::Builtin()
//                                   (provider/codecs.cc; docs/http.md)
//   GET  /v1/models             the models of the run's recording, in the
//                               shape of the API whose client asks
//   POST|DELETE /mcp/{name}     an MCP tool server (service/mcp_api.h)
//   POST /a2a/{name}, GET /a2a/{name}/.well-known/agent-card.json
//                               an A2A agent (service/a2a_api.h)
//   POST /mcp                   understudy's own tools for coding agents
//                               (mcpserver/http_endpoint.h; not under /run)
//   GET  /metrics               the Prometheus text exposition
//                               (metrics/metrics.h; not under /run)
//   GET  /ui, /api/v1/...       the web UI and its JSON API
//                               (service/ui_api.h; not under /run)
//
// Each path may be prefixed with /run/{run} and /run/{run}/agent/{agent},
// so a base URL can carry both; otherwise headers X-Understudy-Run and
// X-Understudy-Agent name them, and with neither the server's default run
// answers.
//
// Replay answers with the recorded bytes when the exchange was recorded over
// the same API (ids, `created`, chunk boundaries and event names included),
// paced by the recorded offsets when a speed is set; otherwise the canonical
// answer is rendered in the caller's shape. Record mode forwards the request
// to the upstream its API names (Codec::upstream), relays the response as it arrives, and
// records it once complete; a client that goes away mid-answer cancels the
// upstream call and nothing is recorded. Errors come in the provider's error
// shape; a replay miss has the stable code `understudy_no_recording`.
#ifndef UNDERSTUDY_SERVICE_HTTP_API_H_
#define UNDERSTUDY_SERVICE_HTTP_API_H_

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "base/env.h"
#include "capture/redact.h"
#include "engine/engine.h"
#include "metrics/metrics.h"
#include "provider/codec.h"
#include "provider/parsed_request.h"
#include "service/a2a_api.h"
#include "service/access.h"
#include "service/http_server.h"
#include "service/mcp_api.h"
#include "service/ui_api.h"
#include "upstream/http_upstream.h"

namespace understudy {
namespace service {

// A handler that is set once, after the listener has started (it may need
// the listener's own address). Thread-safe.
class HandlerSlot {
 public:
  void Set(HttpHandler handler) ABSL_LOCKS_EXCLUDED(mu_);
  // Passes the request to the handler; false (the request untouched) while
  // none is set.
  bool Call(HttpRequest& request, std::shared_ptr<HttpResponder>& out) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  std::shared_ptr<const HttpHandler> handler_ ABSL_GUARDED_BY(mu_);
};

struct HttpApiOptions {
  // Required. Not owned; must outlive the API.
  engine::Engine* engine = nullptr;
  // Upstreams for record and passthrough runs, by upstream name
  // (provider::Codec::upstream, `--upstream NAME=URL`); an API whose
  // upstream is missing is refused when a request must be forwarded. Not
  // owned.
  std::map<std::string, upstream::UpstreamHttpInterface*> upstreams;
  // What never reaches the store. Not owned; null means the defaults.
  const capture::Redactor* redactor = nullptr;
  Env* env = Env::Default();
  // The token callers must present (service/access.h); none by default.
  AccessToken access;
  // MCP servers under /mcp/{name} (service/mcp_api.h), or null. Not owned.
  McpApi* mcp = nullptr;
  // A2A agents under /a2a/{name} (service/a2a_api.h), or null. Not owned.
  A2aApi* a2a = nullptr;
  // What GET /metrics serves, or null (404). Not owned.
  metrics::Metrics* metrics = nullptr;
  // understudy's own MCP endpoint at /mcp, or null (404). Not owned.
  HandlerSlot* own_mcp = nullptr;
  // The web UI at /ui and /api/v1, or null (404: serve --ui=false). Not owned.
  UiApi* ui = nullptr;
};

class HttpApi {
 public:
  explicit HttpApi(HttpApiOptions options);

  // The HttpHandler: answers one request. Thread-safe; never blocks.
  void Handle(HttpRequest request, std::shared_ptr<HttpResponder> out);

  // The error body for the server's own errors (413, 400) to a request for
  // `target` ("" when unknown): the shape of the API the target names (or
  // the web UI's, or MCP's), else the default API's
  // (provider::Codec::RequestErrorBody).
  static std::string ServerErrorBody(int status, absl::string_view message,
                                     absl::string_view target);

 private:
  struct Pending;
  // Answers a decided request (after any scripted delay).
  void Answer(std::shared_ptr<Pending> pending, std::shared_ptr<HttpResponder> out);
  // Sends it upstream and relays the answer.
  void Forward(std::shared_ptr<Pending> pending, upstream::UpstreamHttpInterface* upstream,
               std::shared_ptr<HttpResponder> out);
  // For an API whose server keeps its answers (provider::StoredResponses):
  // puts the items a request refers to and the conversation its previous
  // response id names into its canonical request, and keeps its own input
  // for the chain. INVALID_ARGUMENT for an unknown previous response id.
  absl::Status JoinStored(const provider::StoredResponses& stored, const engine::CallInfo& call,
                          Pending& pending);
  // Keeps such an answer (`ex`, given as id `id` with `body`) for chains
  // and GET. `body` makes the object on demand; `body_bytes` is what it
  // holds.
  void Remember(const Pending& pending, const v1::Exchange& ex, std::string id,
                std::function<std::string()> body, size_t body_bytes);
  // A GET (`method`) of a kept answer over `api` (`wire`: a kFetch route,
  // StoredResponses::fetch_route): 405 for another method, 404 for a path
  // with no id or more than one segment after the route's prefix.
  void GetResponse(const provider::Codec& api, const engine::CallInfo& call,
                   absl::string_view method, const provider::CallRoute& wire,
                   HttpResponder& out);
  // GET /v1/models, in the shape of `client`'s API.
  // GET /metrics: the exposition of options_.metrics, behind the same
  // access check as the APIs; 404 without metrics.
  void ServeMetrics(HttpRequest& request, HttpResponder& out);
  void ListModels(const engine::CallInfo& call, const provider::Codec& client,
                  HttpResponder& out);

  HttpApiOptions options_;
  capture::Redactor default_redactor_;
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_HTTP_API_H_
