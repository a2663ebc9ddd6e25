// A2A agents over their JSON-RPC binding (docs/a2a.md): what an agent's A2A
// client talks to once the called agent's URL points here.
//
//   GET  /a2a/{name}/.well-known/agent-card.json   the agent's card (also
//                                    …/agent.json, v0.2's name), its
//                                    interface URLs pointing back here
//   POST /a2a/{name}                 one JSON-RPC request: SendMessage,
//                                    SendStreamingMessage (SSE), GetTask,
//                                    CancelTask, or their v0.3 names
//                                    (message/send, message/stream, …)
//
// (each also under /run/{run}[/agent/{agent}]: the agent in the path is the
// caller). Requests are decided by the engine like model requests
// (engine/engine.h, DecideA2a): replay answers with the recorded bytes, the
// caller's JSON-RPC id and its messageId where the answer echoes it; record
// and passthrough forward to the agent named by `--a2a-upstream NAME=URL`
// (JSON-RPC to URL, the card from URL's origin at
// /.well-known/agent-card.json), relay its answer as it arrives and record it
// once complete. Errors are JSON-RPC error responses; a replay miss has code
// -32001 and the miss report. A request for a run that is unknown, has ended
// or is not named is the client's mistake: HTTP 404, 412 or 400 as on the
// model routes, with a JSON-RPC error -32600.
#ifndef UNDERSTUDY_SERVICE_A2A_API_H_
#define UNDERSTUDY_SERVICE_A2A_API_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "base/env.h"
#include "capture/redact.h"
#include "engine/engine.h"
#include "service/http_server.h"
#include "upstream/http_upstream.h"

namespace understudy {
namespace service {

// An A2A agent's upstream: where it is reached, its JSON-RPC endpoint's
// path and its card's.
struct A2aUpstream {
  upstream::UpstreamHttpInterface* http = nullptr;  // not owned
  std::string path = "/";
  std::string card_path = "/.well-known/agent-card.json";
};

struct A2aApiOptions {
  // Required. Not owned; must outlive the API.
  engine::Engine* engine = nullptr;
  // By agent name (--a2a-upstream NAME=URL).
  std::map<std::string, A2aUpstream> upstreams;
  // What never reaches the store. Not owned; null means the defaults.
  const capture::Redactor* redactor = nullptr;
  // Whether the listener speaks TLS (the card's URLs are then https).
  bool tls = false;
  Env* env = Env::Default();
};

class A2aApi {
 public:
  explicit A2aApi(A2aApiOptions options);
  ~A2aApi();

  // Answers one request; `rest` is the route's path after "/a2a/" ("NAME"
  // or "NAME/.well-known/agent-card.json"). Thread-safe; never blocks.
  void Handle(engine::CallInfo call, std::string rest, HttpRequest request,
              std::shared_ptr<HttpResponder> out);

  // A JSON-RPC error body (id null) for the server's own errors.
  static std::string ErrorBody(absl::string_view message);

  struct Pending;

 private:
  void Answer(std::shared_ptr<Pending> pending, std::shared_ptr<HttpResponder> out);
  void Forward(std::shared_ptr<Pending> pending, std::shared_ptr<HttpResponder> out);
  // The card's answer to a card fetch: `card_json` with its URLs set to
  // where `pending`'s client reached understudy.
  void RespondCard(const Pending& pending, absl::string_view card_json, HttpResponder& out);

  // The pairs of messageIds (recorded, the caller's) run `run`'s replayed
  // answers put back: every earlier one of the run's, and (`recorded`,
  // `caller`) when they differ, noted first. A replayed task's history
  // echoes the messages sent in earlier calls (GetTask after SendMessage).
  // Bounded: the first 4096 pairs of each of the latest 1024 runs.
  std::vector<std::pair<std::string, std::string>> CallersMessageIds(const std::string& run,
                                                                     const std::string& recorded,
                                                                     const std::string& caller)
      ABSL_LOCKS_EXCLUDED(ids_mu_);

  A2aApiOptions options_;
  capture::Redactor default_redactor_;
  absl::Mutex ids_mu_;
  absl::flat_hash_map<std::string, std::vector<std::pair<std::string, std::string>>> message_ids_
      ABSL_GUARDED_BY(ids_mu_);
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_A2A_API_H_
