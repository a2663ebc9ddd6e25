// The server: store, engine, upstream and the gRPC services, assembled.
#ifndef UNDERSTUDY_SERVICE_SERVER_H_
#define UNDERSTUDY_SERVICE_SERVER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "service/http_server.h"
#include "store/retention.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace service {

struct ServerOptions {
  // The SQLite file the server reads and writes.
  std::string db_path = "understudy.db";
  // When set, a recording to serve without writing it: db_path is made a
  // copy of this database at start (replacing an earlier copy), and every
  // run, trace and recording of the server goes to that copy
  // (store::StoreOptions::snapshot_of). Errors naming a missing session
  // name this file.
  std::string snapshot_of;
  // gRPC listen address; port 0 picks a free port (see grpc_address()).
  std::string listen = "127.0.0.1:7140";
  // Provider HTTP listener (the model APIs of provider/codecs.cc); "" for
  // none; port 0
  // picks a free port (see http_address()).
  std::string http_listen;
  // Upstream models for record/passthrough runs, each `grpc://HOST:PORT` or
  // `NAME=URL`, NAME a model API's upstream name (UpstreamForms()).
  std::vector<std::string> upstreams;
  // MCP tool servers for record/passthrough runs, each `NAME=URL` (a
  // Streamable HTTP endpoint; see docs/mcp.md).
  std::vector<std::string> mcp_upstreams;
  // A2A agents for record/passthrough runs, each `NAME=URL` (the agent's
  // JSON-RPC endpoint; see docs/a2a.md).
  std::vector<std::string> a2a_upstreams;
  // Whether record, passthrough, once and new runs may start with none of
  // the upstreams above: `record -- CMD` sets it, as the command's stdio MCP
  // servers run behind `understudy mcp-proxy`, which names its server with
  // each request. A model request in such a run is refused naming
  // --upstream. Otherwise such runs are refused at their start.
  bool upstreams_from_mcp_proxies = false;
  // Replay pace: 0 as fast as possible, else recorded offsets / speed.
  double speed = 0;
  // Matching: canonical paths to ignore and normalizers (see
  // matching/normalize.h).
  std::vector<std::string> ignore_paths;
  std::vector<std::string> normalizers;
  // Match tool call ids the client made up as they are, not by position
  // (matching::SessionIndex::CanonicalOf).
  bool exact_tool_call_ids = false;
  // Redaction beyond the defaults (see capture/redact.h).
  std::vector<std::string> redact_headers;
  std::vector<std::string> redact_json_paths;
  // Largest HTTP request body accepted (413 beyond).
  size_t max_body_bytes = 16 << 20;
  // An HTTP request must arrive whole within this long of its first byte
  // (408 beyond; slowloris).
  absl::Duration request_timeout = absl::Seconds(60);
  // A run started with the server, used by calls that name no run. Empty
  // mode: none.
  v1::RunMode default_mode = v1::RUN_MODE_UNSPECIFIED;
  std::string default_session;
  bool default_strict = true;
  // Default run: answer repeated requests again from their last recording
  // (StartRunRequest.repeat).
  bool default_repeat = false;
  // The scenario for runs that name none (a pack name or a file path); ""
  // for none. With one, the default run may replay without a session.
  std::string scenario;
  // The directory whose scenario files StartRun may name; "" for none
  // (callers then name packs or send scenario_text).
  std::string scenario_dir;
  // Largest message a client may send (and the server may be sent).
  int max_message_bytes = 16 << 20;
  // Exchanges one RecordExchanges call may carry.
  int max_record_exchanges = 100000;
  // How long Shutdown lets in-flight calls finish before cancelling them.
  absl::Duration drain_timeout = absl::Seconds(10);

  // What the trace of a run that asks for no level keeps
  // (StartRunRequest.trace_level; docs/assertions.md, "Trace levels"):
  // FULL, SUMMARY or OFF.
  v1::TraceLevel default_trace_level = v1::TRACE_LEVEL_FULL;
  // Bounds on the ended runs the store keeps (store/retention.h), applied
  // at start-up and then every `prune_interval` on a thread of its own; none
  // by default. Active runs are never pruned.
  store::RetentionOptions retention;
  absl::Duration prune_interval = absl::Seconds(60);

  // Access (service/access.h). The token every caller must present: given
  // directly, or (better: not in the process list) in a file; "" for none.
  std::string auth_token;
  std::string auth_token_file;
  // Serve callers on other machines without a token (a listener on a
  // non-loopback address is refused otherwise).
  bool allow_unauthenticated = false;
  // TLS for both listeners: PEM certificate chain and private key files.
  std::string tls_cert;
  std::string tls_key;
  // More names the HTTP listener answers to (Host), besides its address's;
  // "*" for any.
  std::vector<std::string> allow_hosts;

  // The web UI at /ui and its JSON API at /api/v1 on the HTTP listener
  // (service/ui_api.h, docs/ui.md); false: both are 404.
  bool ui = true;

  // Counting for Prometheus, served at /metrics (docs/metrics.md); false:
  // nothing is counted and /metrics is 404.
  bool metrics = true;

  // understudy's own MCP tools at /mcp on the HTTP listener
  // (mcpserver/http_endpoint.h), made once both listeners are bound, from
  // their addresses (host:port); null for none.
  std::function<HttpHandler(const std::string& grpc_address, const std::string& http_address)>
      own_mcp;
};

// The forms a --upstream value takes, as help and errors say them:
// "grpc://HOST:PORT, A=URL, B=URL or C=URL", one NAME=URL per upstream name
// of provider::CodecRegistry::Builtin(), in registration order.
std::string UpstreamForms();

// What a Server::Start error is about, so that a command line can tell a
// bad flag value from a database it cannot open.
enum class StartStage {
  kOptions,   // a bad option value (or a default run it cannot start)
  kReferenced,  // what an option names is invalid or missing: the --scenario
                // document (the validator's report), the default run's session
  kStore,     // the database cannot be opened or is not ours
  kListen,    // an address cannot be bound
};
// The payload (type URL) that carries it.
inline constexpr char kStartStagePayloadUrl[] = "type.understudy.dev/start-stage";
absl::string_view StartStageName(StartStage stage);
// `status` (unless OK) with `stage` attached.
absl::Status Tagged(absl::Status status, StartStage stage);
// The stage of a Server::Start error; nullopt for any other status.
std::optional<StartStage> StartStageOf(const absl::Status& status);

class Server {
 public:
  struct Parts;
  // Checks the options, opens the store, starts the engine and listens;
  // then starts the retention pruner when options.retention sets a bound.
  // Every error carries its StartStage: INVALID_ARGUMENT for a bad address,
  // upstream, matching, redaction, trace level or retention option, scenario
  // or default run (kOptions,
  // or kReferenced for an invalid scenario document); the store's errors
  // (kStore, see store::Store::Open); UNAVAILABLE when an address cannot be
  // bound (kListen). Options are checked before the database is touched.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options);

  // Shuts down if still running.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // host:port actually bound.
  const std::string& grpc_address() const;
  // host:port of the HTTP listener; "" when there is none.
  const std::string& http_address() const;
  // The default run's id ("" when none).
  const std::string& default_run() const;

  // Ends a run (see engine::Engine::EndRun) and returns its summary.
  absl::StatusOr<v1::RunSummary> EndRun(const std::string& run_id);

  // Stops the retention pruner and accepting calls, lets in-flight ones
  // finish for up to drain_timeout, ends the active runs (closing recorded
  // sessions), and commits the store. Idempotent; thread-safe.
  absl::Status Shutdown();

 private:
  explicit Server(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_SERVER_H_
