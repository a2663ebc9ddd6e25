// The web UI on the HTTP listener (docs/ui.md): the page, embedded in the
// binary (service/ui_assets.h), and the small JSON API it reads, which
// serves what the gRPC services serve.
//
//   GET  /ui, /ui/                     index.html
//   GET  /ui/{file}                    the page's other files (app.js, the
//                                      modules it imports, app.css)
//   GET  /api/v1/sessions              ListSessionsResponse (every version)
//   GET  /api/v1/sessions/{name}       GetSessionResponse with its exchanges;
//                                      ?version=N (default: the latest)
//   GET  /api/v1/runs                  {"runs": [Run...]}, newest first;
//                                      ?session=NAME[@N], ?limit=N (default 200)
//   GET  /api/v1/runs/{id}             Run
//   GET  /api/v1/runs/{id}/events      QueryResponse; ?after_seq=N,
//                                      ?limit=M (1..10000, default 1000),
//                                      ?kinds=a,b
//   GET  /api/v1/runs/{id}/watch       text/event-stream: `id: SEQ`,
//                                      `event: trace`, `data: TraceEvent`
//                                      per event after ?after_seq=N (or the
//                                      Last-Event-ID header), stored ones
//                                      first, then live ones; `event: end`
//                                      once the run has ended; a
//                                      `: keepalive` comment every 15 s
//                                      (service/ui_watch.h)
//   POST /api/v1/runs/{id}/assert      body: an assertion spec (YAML or
//                                      JSON, as `understudy assert` reads)
//                                      -> AssertResponse
//
// JSON is protobuf's JSON mapping of the gRPC messages (lowerCamelCase
// names, int64 as strings, enums by name, fields at their default value
// included), read through the trace-reading core the gRPC services use too
// (query/).
// Errors are {"error": {"code": "NOT_FOUND", "message": "run \"x\" not
// found"}} with 400 (a bad parameter, named), 403, 404, 405, 413, 503 (busy
// or shutting down) or 500. Path segments and query values are
// percent-decoded.
//
// Security: the routes obey the listener's access rules (the Host check,
// done by the listener; the token of service/access.h, checked here). An API
// request whose Origin header is present must come from the listener's own
// origin (no other web page may read or drive it). Page files carry a strict
// Content-Security-Policy (kUiContentSecurityPolicy).
//
// Threads: Handle never blocks the listener's thread. Page files are
// answered from memory; API requests go to the API's own bounded worker pool
// (the store is read there; when the pool is full the answer is 503). A
// watch holds no thread while it waits, and its memory is bounded
// (service/ui_watch.h).
#ifndef UNDERSTUDY_SERVICE_UI_API_H_
#define UNDERSTUDY_SERVICE_UI_API_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/worker_pool.h"
#include "engine/engine.h"
#include "query/source.h"
#include "service/access.h"
#include "service/call_tracker.h"
#include "service/http_server.h"
#include "service/ui_watch.h"
#include "store/store.h"

namespace understudy {
namespace service {

// Sent with every page file: nothing but the page's own files and the API
// may load, no inline script or style, no framing.
inline constexpr char kUiContentSecurityPolicy[] =
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

struct UiApiOptions {
  // Required. Not owned; must outlive the API.
  engine::Engine* engine = nullptr;
  store::Store* store = nullptr;
  // The token callers must present (service/access.h); none by default.
  AccessToken access;
  // Threads for API requests, and how many requests may wait for one
  // beyond them (503 past that).
  int threads = 4;
  int max_waiting = 64;
  // The watches' bounds and keepalive (service/ui_watch.h: max_watches,
  // 503 past it; backlog bytes per watch and in all; keepalive). Its
  // engine, store, tracker, pool and max_queued are set by UiApi.
  UiWatchOptions watch;
};

class UiApi {
 public:
  explicit UiApi(UiApiOptions options);
  // Shutdown.
  ~UiApi();
  UiApi(const UiApi&) = delete;
  UiApi& operator=(const UiApi&) = delete;

  // True for the targets this API answers: /ui, /ui/..., /api/v1 and
  // /api/v1/... (any query).
  static bool Serves(absl::string_view target);

  // Answers one request whose target Serves. Thread-safe; never blocks.
  void Handle(HttpRequest request, std::shared_ptr<HttpResponder> out);

  // The answer to such a request when the UI is off (serve --ui=false): 404.
  static void RespondOff(HttpResponder& out);

  // The error body: {"error": {"code": "NOT_FOUND", "message": ...}}.
  static std::string ErrorBody(const absl::Status& status);

  // Ends every watch (their streams end without an `end` event), refuses
  // new requests with 503 and waits for the requests in progress. For
  // server shutdown, before the listener drains. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void ServeAsset(const HttpRequest& request, absl::string_view path, HttpResponder& out);
  void ServeApi(HttpRequest request, std::shared_ptr<HttpResponder> out);
  // Runs `task` on the pool; answers 503 when it is full or stopping.
  void Submit(std::shared_ptr<HttpResponder> out, std::function<void()> task);

  // The routes, on the pool.
  void ListSessions(HttpResponder& out);
  void GetSession(const std::string& name, int64_t version, HttpResponder& out);
  void ListRuns(const std::string& session, int64_t limit, HttpResponder& out);
  void GetRun(const std::string& run, HttpResponder& out);
  void QueryEvents(const std::string& run, int64_t after_seq, int64_t limit,
                   const std::string& kinds, HttpResponder& out);
  void AssertRun(const std::string& run, const std::string& spec, HttpResponder& out);

  // OK when `call` was admitted; UNAVAILABLE once Shutdown began.
  absl::Status Admit(TrackedCall& call) const;
  query::Source source() const { return query::Source{options_.store, options_.engine}; }

  const UiApiOptions options_;
  // The reads in progress, counted so that Shutdown refuses new ones.
  CallTracker tracker_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // The /watch streams; they send on pool_.
  UiWatches watches_;

  // Last: closed (its tasks finished) before the rest goes.
  WorkerPool pool_;
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_UI_API_H_
