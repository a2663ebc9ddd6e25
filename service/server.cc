#include "service/server.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <system_error>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "base/env.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "capture/redact.h"
#include "engine/engine.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "metrics/metrics.h"
#include "provider/codec.h"
#include "service/a2a_api.h"
#include "service/access.h"
#include "service/admin_services.h"
#include "service/http_api.h"
#include "service/http_server.h"
#include "service/jsonrpc_http.h"
#include "service/model_service.h"
#include "service/traces_service.h"
#include "service/ui_api.h"
#include "store/retention.h"
#include "store/store.h"
#include "upstream/aws_sigv4.h"
#include "upstream/grpc_upstream.h"
#include "upstream/http_upstream.h"

namespace understudy {
namespace service {

// Declared in destruction order's reverse: the gRPC server goes first, the
// store last.
struct Server::Parts {
  // First, so that it outlives everything that counts in it (the store's
  // writer thread, the listeners, the engine).
  metrics::Metrics metrics;
  ServerOptions options;
  AccessToken access;
  std::string tls_cert_pem;
  std::string tls_key_pem;
  std::unique_ptr<store::Store> store;
  // After the store, which it uses; null without retention bounds.
  std::unique_ptr<store::Pruner> pruner;
  std::unique_ptr<upstream::GrpcUpstream> upstream;
  // The model APIs' upstreams, by upstream name (--upstream NAME=URL).
  std::map<std::string, std::unique_ptr<upstream::HttpUpstream>> model_upstreams;
  std::unique_ptr<capture::Redactor> redactor;
  std::unique_ptr<engine::Engine> engine;
  // Before http_api, which points at it; filled once both listeners are bound.
  HandlerSlot own_mcp;
  std::unique_ptr<HttpApi> http_api;
  std::map<std::string, std::unique_ptr<upstream::HttpUpstream>> mcp_upstreams;
  std::unique_ptr<McpApi> mcp_api;
  std::map<std::string, std::unique_ptr<upstream::HttpUpstream>> a2a_upstreams;
  std::unique_ptr<A2aApi> a2a_api;
  // After the store and engine, which it uses; before http_server, which
  // calls it. Null with --ui=false or no HTTP listener.
  std::unique_ptr<UiApi> ui_api;
  std::unique_ptr<HttpServer> http_server;
  std::string http_address;
  CallTracker tracker;
  std::unique_ptr<ModelService> model;
  std::unique_ptr<RunsService> runs;
  std::unique_ptr<RecorderService> recorder;
  std::unique_ptr<SessionsService> sessions;
  std::unique_ptr<TracesService> traces;
  std::unique_ptr<ToolsService> tools;
  std::unique_ptr<UiService> ui;
  std::unique_ptr<grpc::Server> grpc_server;
  std::string address;
  std::string default_run;

  absl::Mutex mu;
  bool shut_down ABSL_GUARDED_BY(mu) = false;
  absl::Status shutdown_status ABSL_GUARDED_BY(mu);
};

std::string UpstreamForms() {
  std::vector<std::string> forms = {"grpc://HOST:PORT"};
  for (const std::string& name : provider::CodecRegistry::Builtin().UpstreamNames()) {
    forms.push_back(absl::StrCat(name, "=URL"));
  }
  const std::string last = forms.back();
  forms.pop_back();
  return absl::StrCat(absl::StrJoin(forms, ", "), " or ", last);
}

namespace {

// The services the health service reports on by name.
constexpr const char* kServedServices[] = {
    "understudy.v1.Model",    "understudy.v1.Runs",   "understudy.v1.Recorder",
    "understudy.v1.Sessions", "understudy.v1.Traces", "understudy.v1.Tools",
    "understudy.v1.Ui"};

// "host:port" with a port in 0..65535 (gRPC would wrap 70000 to 4464).
absl::Status CheckListenAddress(absl::string_view flag, absl::string_view address) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " \"", address, "\": expected HOST:PORT with a port from 0 to 65535"));
  }
  return absl::OkStatus();
}

// The upstreams and the options of the engine that do not need the store.
absl::Status ConfigureEngine(const ServerOptions& options, Server::Parts* parts,
                             engine::EngineOptions* engine_options);

// The token, TLS material and the listeners' exposure (service/access.h).
absl::Status ConfigureAccess(const ServerOptions& options, Server::Parts* parts);

// The retention bounds and the pass interval: none negative, the interval
// positive.
absl::Status CheckRetention(const ServerOptions& options) {
  const store::RetentionOptions& retention = options.retention;
  if (retention.keep_runs.has_value() && *retention.keep_runs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--keep-runs: must be 0 or more, got ", *retention.keep_runs));
  }
  if (retention.keep_trace_for.has_value() && *retention.keep_trace_for < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("--keep-trace-for: must not be negative, got ",
                                                   absl::FormatDuration(*retention.keep_trace_for)));
  }
  if (options.prune_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("--prune-interval: must be positive, got ",
                                                   absl::FormatDuration(options.prune_interval)));
  }
  return absl::OkStatus();
}

// The contents of `path` (a PEM file), naming `flag` when it cannot be read.
absl::StatusOr<std::string> ReadPem(absl::string_view flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": cannot read it"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": not a PEM file"));
  }
  return text;
}

// The gRPC listener's credentials: TLS when configured; with a token, a
// processor that refuses calls without it (gRPC runs one only on secure
// credentials: local ones, loopback peers only, stand in for TLS there).
std::shared_ptr<grpc::ServerCredentials> GrpcCredentials(const Server::Parts& parts) {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  if (!parts.tls_cert_pem.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({parts.tls_key_pem, parts.tls_cert_pem});
    credentials = grpc::SslServerCredentials(ssl);
  } else if (parts.access.enabled()) {
    credentials = grpc::experimental::LocalServerCredentials(LOCAL_TCP);
  } else {
    return grpc::InsecureServerCredentials();
  }
  if (parts.access.enabled()) {
    credentials->SetAuthMetadataProcessor(MakeGrpcAccessProcessor(parts.access));
  }
  return credentials;
}

}  // namespace

absl::Status Tagged(absl::Status status, StartStage stage) {
  if (!status.ok()) status.SetPayload(kStartStagePayloadUrl, absl::Cord(StartStageName(stage)));
  return status;
}

absl::string_view StartStageName(StartStage stage) {
  switch (stage) {
    case StartStage::kOptions:
      return "options";
    case StartStage::kReferenced:
      return "referenced";
    case StartStage::kStore:
      return "store";
    case StartStage::kListen:
      return "listen";
  }
  return "options";
}

std::optional<StartStage> StartStageOf(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kStartStagePayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  for (StartStage stage : {StartStage::kOptions, StartStage::kReferenced, StartStage::kStore,
                           StartStage::kListen}) {
    if (*payload == StartStageName(stage)) return stage;
  }
  return std::nullopt;
}

namespace {

// Server::Start's steps, in the order it takes them. Each fills its part of
// `parts`; errors carry their StartStage. A step that fails once the gRPC
// server is listening shuts it down before it returns; the rest of `parts`
// is released with it.

// Checks every option that needs neither the store nor a listener: the
// addresses, access (ConfigureAccess) and retention (kOptions), then the
// upstreams and the engine's options (ConfigureEngine, its own stages).
absl::Status CheckOptions(const ServerOptions& options, Server::Parts* parts,
                          engine::EngineOptions* engine_options) {
  US_RETURN_IF_ERROR(Tagged(CheckListenAddress("--listen", options.listen), StartStage::kOptions));
  if (!options.http_listen.empty()) {
    US_RETURN_IF_ERROR(
        Tagged(CheckListenAddress("--http", options.http_listen), StartStage::kOptions));
  }
  US_RETURN_IF_ERROR(Tagged(ConfigureAccess(options, parts), StartStage::kOptions));
  US_RETURN_IF_ERROR(Tagged(CheckRetention(options), StartStage::kOptions));
  return ConfigureEngine(options, parts, engine_options);
}

// Opens the store (its errors kStore) and starts the engine on it (with
// `engine_options`, to which it adds the store and the name errors give it;
// Engine::Create's errors as they are).
absl::Status OpenStoreAndEngine(const ServerOptions& options, Server::Parts* parts,
                                engine::EngineOptions* engine_options) {
  store::StoreOptions store_options;
  store_options.path = options.db_path;
  store_options.snapshot_of = options.snapshot_of;
  metrics::Metrics* metrics = options.metrics ? &parts->metrics : nullptr;
  if (metrics != nullptr) {
    store_options.on_write_batch = [metrics](absl::Duration took) {
      metrics->ObserveStoreWrite(took);
    };
  }
  absl::StatusOr<std::unique_ptr<store::Store>> store = store::Store::Open(store_options);
  if (!store.ok()) return Tagged(store.status(), StartStage::kStore);
  parts->store = *std::move(store);
  engine_options->store = parts->store.get();
  engine_options->store_name = options.snapshot_of.empty() ? options.db_path : options.snapshot_of;
  engine_options->metrics = metrics;
  US_ASSIGN_OR_RETURN(parts->engine, engine::Engine::Create(*engine_options));
  parts->metrics.SetGaugeReader(
      [engine = parts->engine.get(), store = parts->store.get()] {
        return metrics::GaugeReadings{engine->ActiveRunCount(), store->PendingWrites()};
      });
  return absl::OkStatus();
}

// The gRPC services, on the engine and store.
void MakeServices(const ServerOptions& options, Server::Parts* parts) {
  CallTracker* tracker = &parts->tracker;
  parts->model = std::make_unique<ModelService>(parts->engine.get(), tracker,
                                                options.metrics ? &parts->metrics : nullptr);
  parts->runs = std::make_unique<RunsService>(parts->engine.get(), tracker);
  parts->recorder = std::make_unique<RecorderService>(parts->store.get(),
                                                      options.max_record_exchanges, tracker);
  parts->sessions = std::make_unique<SessionsService>(parts->store.get(), tracker);
  parts->traces =
      std::make_unique<TracesService>(parts->engine.get(), parts->store.get(), tracker);
  parts->tools = std::make_unique<ToolsService>(parts->engine.get(), tracker);
  parts->ui = std::make_unique<UiService>(parts->engine.get(), tracker);
}

// Starts the gRPC server with the services, health and reflection on
// options.listen, and sets parts->address to the address bound.
// UNAVAILABLE (kListen) when it cannot listen.
absl::Status StartGrpc(const ServerOptions& options, Server::Parts* parts) {
  grpc::EnableDefaultHealthCheckService(true);
  // gRPC's built-in health service carries no descriptor of its own: the one
  // compiled from proto/grpc/health/v1/health.proto is referenced here so
  // that it is linked in and reflection (grpcurl, grpcui) can describe it.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.listen, GrpcCredentials(*parts), &port);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  // gRPC sets SO_REUSEPORT by default, which lets a second server bind the
  // same address and silently take half of the connections: refuse instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(parts->model.get());
  builder.RegisterService(parts->runs.get());
  builder.RegisterService(parts->recorder.get());
  builder.RegisterService(parts->sessions.get());
  builder.RegisterService(parts->traces.get());
  builder.RegisterService(parts->tools.get());
  builder.RegisterService(parts->ui.get());
  parts->grpc_server = builder.BuildAndStart();
  if (parts->grpc_server == nullptr || port == 0) {
    return Tagged(absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen,
                                                      " (in use, or not a local address?)")),
                  StartStage::kListen);
  }
  size_t colon = options.listen.rfind(':');
  parts->address = absl::StrCat(options.listen.substr(0, colon), ":", port);
  // Health by service name too, for clients that check the service they use
  // (grpc-health-probe -service understudy.v1.Model); "" is the server.
  if (grpc::HealthCheckServiceInterface* health = parts->grpc_server->GetHealthCheckService()) {
    for (const char* service : kServedServices) health->SetServingStatus(service, true);
  }
  return absl::OkStatus();
}

// The upstreams `specs` name (each NAME=URL, from `flag`; NAME is `what`),
// made into `out` by name. INVALID_ARGUMENT naming the flag for a spec
// that is not NAME=URL, a NAME with '/', a NAME given twice or a URL that
// is not http(s)://HOST[:PORT][/PATH].
absl::Status MakeNamedUpstreams(const std::vector<std::string>& specs, absl::string_view flag,
                                absl::string_view what,
                                std::map<std::string, std::unique_ptr<upstream::HttpUpstream>>* out) {
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    const std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
    if (name.empty() || name.find('/') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(flag, " \"", absl::CHexEscape(spec.substr(0, 200)),
                                                     "\": expected NAME=URL, NAME ", what, " (no '/')"));
    }
    if (out->count(name) > 0) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": more than one ", name, "="));
    }
    const std::string named_flag = absl::StrCat(flag, " ", name);
    US_ASSIGN_OR_RETURN(auto split, SplitUpstreamUrl(spec.substr(eq + 1), named_flag));
    upstream::HttpUpstream::Options http_options;
    http_options.base_url = split.first;
    http_options.flag = named_flag;
    US_ASSIGN_OR_RETURN((*out)[name], upstream::HttpUpstream::Create(http_options));
  }
  return absl::OkStatus();
}

// What the HTTP listener serves: the MCP API (parts->mcp_api), the UI's
// API when options.ui (parts->ui_api), and the provider API over them all
// (parts->http_api).
void MakeHttpApi(const ServerOptions& options, Server::Parts* parts) {
  HttpApiOptions api_options;
  api_options.engine = parts->engine.get();
  for (const auto& [name, upstream] : parts->model_upstreams) {
    api_options.upstreams[name] = upstream.get();
  }
  api_options.redactor = parts->redactor.get();
  api_options.access = parts->access;
  if (options.metrics) api_options.metrics = &parts->metrics;
  McpApiOptions mcp_options;
  mcp_options.engine = parts->engine.get();
  mcp_options.redactor = parts->redactor.get();
  for (const std::string& spec : options.mcp_upstreams) {
    const size_t eq = spec.find('=');
    const std::string name = spec.substr(0, eq);
    absl::StatusOr<std::pair<std::string, std::string>> split =
        SplitUpstreamUrl(spec.substr(eq + 1), absl::StrCat("--mcp-upstream ", name));
    upstream::HttpUpstream* http = parts->mcp_upstreams.at(name).get();
    mcp_options.upstreams[name] = McpUpstream{http, split.ok() ? split->second : "/"};
  }
  parts->mcp_api = std::make_unique<McpApi>(mcp_options);
  api_options.mcp = parts->mcp_api.get();
  A2aApiOptions a2a_options;
  a2a_options.engine = parts->engine.get();
  a2a_options.redactor = parts->redactor.get();
  a2a_options.tls = !options.tls_cert.empty();
  for (const std::string& spec : options.a2a_upstreams) {
    const size_t eq = spec.find('=');
    const std::string name = spec.substr(0, eq);
    absl::StatusOr<std::pair<std::string, std::string>> split =
        SplitUpstreamUrl(spec.substr(eq + 1), absl::StrCat("--a2a-upstream ", name));
    A2aUpstream& upstream = a2a_options.upstreams[name];
    upstream.http = parts->a2a_upstreams.at(name).get();
    upstream.path = split.ok() ? split->second : "/";
  }
  parts->a2a_api = std::make_unique<A2aApi>(a2a_options);
  api_options.a2a = parts->a2a_api.get();
  if (options.own_mcp != nullptr) api_options.own_mcp = &parts->own_mcp;
  if (options.ui) {
    UiApiOptions ui_options;
    ui_options.engine = parts->engine.get();
    ui_options.store = parts->store.get();
    ui_options.access = parts->access;
    parts->ui_api = std::make_unique<UiApi>(ui_options);
    api_options.ui = parts->ui_api.get();
  }
  parts->http_api = std::make_unique<HttpApi>(api_options);
}

// Starts the HTTP listener on options.http_listen with parts->http_api,
// sets parts->http_address, then makes understudy's own MCP tools from both
// addresses (options.own_mcp). The listener's error (kListen, naming
// --http) after shutting the gRPC server down.
absl::Status StartHttp(const ServerOptions& options, Server::Parts* parts) {
  HttpServerOptions http_options;
  http_options.listen = options.http_listen;
  http_options.max_body_bytes = options.max_body_bytes;
  http_options.request_timeout = options.request_timeout;
  http_options.error_body = &HttpApi::ServerErrorBody;
  if (options.metrics) {
    http_options.on_answered = [metrics = &parts->metrics](absl::string_view api,
                                                          absl::Duration elapsed) {
      metrics->ObserveRequest(api, elapsed);
    };
  }
  http_options.tls_cert_pem = parts->tls_cert_pem;
  http_options.tls_key_pem = parts->tls_key_pem;
  std::vector<std::string> hosts = AllowedHosts(options.http_listen, options.allow_hosts);
  if (!hosts.empty()) {
    http_options.check_host = [hosts](const HttpRequest& request) {
      return CheckHost(hosts, request);
    };
  }
  HttpApi* api = parts->http_api.get();
  absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Start(
      http_options, [api](HttpRequest request, std::shared_ptr<HttpResponder> out) {
        api->Handle(std::move(request), std::move(out));
      });
  if (!http.ok()) {
    parts->grpc_server->Shutdown();
    return Tagged(absl::Status(http.status().code(), absl::StrCat("--http ", options.http_listen,
                                                                  ": ", http.status().message())),
                  StartStage::kListen);
  }
  parts->http_server = std::move(*http);
  parts->http_address = parts->http_server->address();
  if (options.own_mcp != nullptr) {
    parts->own_mcp.Set(options.own_mcp(parts->address, parts->http_address));
  }
  return absl::OkStatus();
}

// Starts the default run (options.default_mode and the rest) and makes it
// the run of calls that name none. Its StartRun error, prefixed "default
// run: " (kReferenced for NOT_FOUND, else kOptions), after shutting the
// gRPC server down.
absl::Status StartDefaultRun(const ServerOptions& options, Server::Parts* parts) {
  v1::StartRunRequest request;
  request.set_mode(options.default_mode);
  request.set_session(options.default_session);
  request.set_strict(options.default_strict);
  request.set_repeat(options.default_repeat);
  absl::StatusOr<v1::Run> run = parts->engine->StartRun(request);
  if (!run.ok()) {
    parts->grpc_server->Shutdown();
    return Tagged(absl::Status(run.status().code(),
                               absl::StrCat("default run: ", run.status().message())),
                  absl::IsNotFound(run.status()) ? StartStage::kReferenced
                                                 : StartStage::kOptions);
  }
  parts->default_run = run->id();
  // Calls naming no run go to it from now on.
  parts->engine->SetDefaultRun(run->id());
  return absl::OkStatus();
}

// Starts the retention pruner on the store (options.retention, every
// options.prune_interval) and logs its bounds.
void StartPruner(const ServerOptions& options, Server::Parts* parts) {
  store::PrunerOptions pruner_options;
  pruner_options.retention = options.retention;
  pruner_options.interval = options.prune_interval;
  parts->pruner = store::Pruner::Start(parts->store.get(), pruner_options);
  const store::RetentionOptions& bounds = options.retention;
  Log(LogLevel::kInfo, "retention",
      {{"keep_runs",
        bounds.keep_runs.has_value() ? absl::StrCat(*bounds.keep_runs) : "unbounded"},
       {"keep_trace_for", bounds.keep_trace_for.has_value()
                              ? absl::FormatDuration(*bounds.keep_trace_for)
                              : "unbounded"},
       {"interval", absl::FormatDuration(options.prune_interval)}});
}

// Logs what the started server serves, and where.
void LogServing(const ServerOptions& options, const Server::Parts& parts) {
  Log(LogLevel::kInfo, "serving",
      {{"grpc", parts.address}, {"http", parts.http_address.empty() ? "none" : parts.http_address},
       {"db", options.db_path},
       {"snapshot_of", options.snapshot_of.empty() ? "none" : options.snapshot_of},
       {"upstreams", options.upstreams.empty() ? "none" : absl::StrJoin(options.upstreams, ",")},
       {"mcp_upstreams",
        options.mcp_upstreams.empty() ? "none" : absl::StrJoin(options.mcp_upstreams, ",")},
       {"a2a_upstreams",
        options.a2a_upstreams.empty() ? "none" : absl::StrJoin(options.a2a_upstreams, ",")},
       {"ui", parts.ui_api == nullptr
                  ? "off"
                  : absl::StrCat(parts.tls_cert_pem.empty() ? "http://" : "https://",
                                 parts.http_address, "/ui/")},
       {"default_run", parts.default_run}});
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options) {
  auto parts = std::make_unique<Parts>();
  parts->options = options;

  // Options first, so that a bad flag never touches the database.
  engine::EngineOptions engine_options;
  US_RETURN_IF_ERROR(CheckOptions(options, parts.get(), &engine_options));
  US_RETURN_IF_ERROR(OpenStoreAndEngine(options, parts.get(), &engine_options));
  MakeServices(options, parts.get());
  US_RETURN_IF_ERROR(StartGrpc(options, parts.get()));
  if (!options.http_listen.empty()) {
    MakeHttpApi(options, parts.get());
    US_RETURN_IF_ERROR(StartHttp(options, parts.get()));
  }
  if (options.default_mode != v1::RUN_MODE_UNSPECIFIED) {
    US_RETURN_IF_ERROR(StartDefaultRun(options, parts.get()));
  }
  if (options.retention.enabled()) StartPruner(options, parts.get());
  LogServing(options, *parts);
  return std::unique_ptr<Server>(new Server(std::move(parts)));
}

namespace {

absl::Status ConfigureAccess(const ServerOptions& options, Server::Parts* parts) {
  if (!options.auth_token.empty() && !options.auth_token_file.empty()) {
    return absl::InvalidArgumentError("--auth-token, --auth-token-file: give at most one");
  }
  if (!options.auth_token.empty()) {
    US_ASSIGN_OR_RETURN(parts->access, AccessToken::Create(options.auth_token));
  } else if (!options.auth_token_file.empty()) {
    US_ASSIGN_OR_RETURN(parts->access, AccessToken::FromFile(options.auth_token_file));
  }
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert, --tls-key: give both or neither");
  }
  if (!options.tls_cert.empty()) {
    US_ASSIGN_OR_RETURN(parts->tls_cert_pem, ReadPem("--tls-cert", options.tls_cert));
    US_ASSIGN_OR_RETURN(parts->tls_key_pem, ReadPem("--tls-key", options.tls_key));
  }
  const bool tls = !parts->tls_cert_pem.empty();
  // A listener other machines can reach needs a token, and a token crossing
  // a network needs TLS (else anyone on the path reads it).
  for (const auto& [flag, address] :
       {std::pair<const char*, std::string>{"--listen", options.listen},
        std::pair<const char*, std::string>{"--http", options.http_listen}}) {
    if (address.empty() || IsLoopbackHost(HostOf(address))) continue;
    if (!parts->access.enabled() && !options.allow_unauthenticated) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, " ", address,
          " is reachable from other machines: give --auth-token-file FILE (and TLS), or "
          "--allow-unauthenticated to serve anyone who can reach it"));
    }
    if (parts->access.enabled() && !tls) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, " ", address,
          ": a token sent in the clear to another machine can be read on the way; give "
          "--tls-cert and --tls-key"));
    }
  }
  return absl::OkStatus();
}

// The signing hook of upstream `name` when an API forwarding to it signs
// with AWS's SigV4 (Codec::aws_signing_name), else none. Credentials are
// read from the environment now; when they are missing, each forwarded
// request fails saying so (a replay never forwards, and needs none).
std::function<absl::Status(absl::string_view, upstream::UpstreamHttpRequest*)> AwsSigningFor(
    const std::string& name, const std::string& base_url) {
  for (const provider::Codec* codec : provider::CodecRegistry::Builtin().All()) {
    if (codec->upstream() != name || codec->aws_signing_name().empty()) continue;
    auto signer = std::make_shared<absl::StatusOr<upstream::AwsSigner>>(
        upstream::AwsSigner::FromEnvironment(codec->aws_signing_name(), base_url, ::getenv));
    return [signer](absl::string_view url, upstream::UpstreamHttpRequest* request) {
      if (!signer->ok()) return signer->status();
      (*signer)->Sign(request->method, url, &request->headers, request->body,
                      Env::Default()->Now());
      return absl::OkStatus();
    };
  }
  return nullptr;
}

absl::Status ConfigureEngine(const ServerOptions& options, Server::Parts* parts,
                             engine::EngineOptions* engine_options) {
  auto bad = [](absl::Status status) { return Tagged(std::move(status), StartStage::kOptions); };
  for (const std::string& upstream : options.upstreams) {
    if (absl::StartsWith(upstream, "grpc://")) {
      if (parts->upstream != nullptr) {
        return bad(absl::InvalidArgumentError("--upstream: more than one grpc:// upstream"));
      }
      absl::StatusOr<std::unique_ptr<upstream::GrpcUpstream>> grpc_upstream =
          upstream::GrpcUpstream::Create(upstream);
      if (!grpc_upstream.ok()) return bad(grpc_upstream.status());
      parts->upstream = *std::move(grpc_upstream);
      engine_options->upstream = parts->upstream.get();
      continue;
    }
    size_t eq = upstream.find('=');
    std::string name = upstream.substr(0, eq == std::string::npos ? 0 : eq);
    const std::vector<std::string> known = provider::CodecRegistry::Builtin().UpstreamNames();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return bad(absl::InvalidArgumentError(
          absl::StrCat("--upstream \"", upstream, "\": expected ", UpstreamForms())));
    }
    std::unique_ptr<upstream::HttpUpstream>* slot = &parts->model_upstreams[name];
    if (*slot != nullptr) {
      return bad(absl::InvalidArgumentError(absl::StrCat("--upstream: more than one ", name, "=")));
    }
    upstream::HttpUpstream::Options http_options;
    http_options.base_url = upstream.substr(eq + 1);
    http_options.flag = absl::StrCat("--upstream ", name);
    http_options.sign = AwsSigningFor(name, http_options.base_url);
    absl::StatusOr<std::unique_ptr<upstream::HttpUpstream>> http_upstream =
        upstream::HttpUpstream::Create(http_options);
    if (!http_upstream.ok()) return bad(http_upstream.status());
    *slot = *std::move(http_upstream);
  }
  if (absl::Status made = MakeNamedUpstreams(options.mcp_upstreams, "--mcp-upstream",
                                             "the MCP server's name", &parts->mcp_upstreams);
      !made.ok()) {
    return bad(made);
  }
  if (absl::Status made = MakeNamedUpstreams(options.a2a_upstreams, "--a2a-upstream",
                                             "the A2A agent's name", &parts->a2a_upstreams);
      !made.ok()) {
    return bad(made);
  }
  engine_options->has_upstream = options.upstreams_from_mcp_proxies ||
                                 !parts->mcp_upstreams.empty() || !parts->a2a_upstreams.empty() ||
                                 parts->upstream != nullptr ||
                                 !parts->model_upstreams.empty();
  if (options.speed < 0) {
    return bad(absl::InvalidArgumentError("--speed: must be 0 (as fast as possible) or more"));
  }
  engine_options->speed = options.speed;
  if (options.default_trace_level != v1::TRACE_LEVEL_FULL &&
      options.default_trace_level != v1::TRACE_LEVEL_SUMMARY &&
      options.default_trace_level != v1::TRACE_LEVEL_OFF) {
    return bad(absl::InvalidArgumentError(
        absl::StrCat("--trace-level: ", options.default_trace_level,
                     " is not a trace level (full, summary, off)")));
  }
  engine_options->default_trace_level = options.default_trace_level;
  if (!options.ignore_paths.empty() || !options.normalizers.empty() ||
      options.exact_tool_call_ids) {
    absl::StatusOr<std::shared_ptr<const matching::MatchNormalizer>> normalizer =
        matching::MatchNormalizer::Create(options.ignore_paths, options.normalizers,
                                          options.exact_tool_call_ids);
    if (!normalizer.ok()) return bad(normalizer.status());
    engine_options->normalizer = *std::move(normalizer);
  }
  absl::StatusOr<capture::Redactor> redactor =
      capture::Redactor::Create(options.redact_headers, options.redact_json_paths);
  if (!redactor.ok()) return bad(redactor.status());
  parts->redactor = std::make_unique<capture::Redactor>(*std::move(redactor));
  if (!options.scenario_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(options.scenario_dir, ec)) {
      return bad(absl::InvalidArgumentError(
          absl::StrCat("--scenario-dir ", options.scenario_dir, ": not a directory")));
    }
    engine_options->scenario_dir = options.scenario_dir;
  }
  if (!options.scenario.empty()) {
    absl::StatusOr<std::shared_ptr<const scenario::Script>> script =
        scenario::Script::Load(options.scenario, "");
    if (!script.ok()) {
      // An invalid document is the validator's verdict; a missing pack or
      // file is a bad flag value.
      return Tagged(absl::Status(script.status().code(),
                                 absl::StrCat("--scenario: ", script.status().message())),
                    absl::IsInvalidArgument(script.status()) ? StartStage::kReferenced
                                                             : StartStage::kOptions);
    }
    engine_options->scenario = *std::move(script);
  }
  return absl::OkStatus();
}

}  // namespace

Server::Server(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

Server::~Server() { Shutdown().IgnoreError(); }

const std::string& Server::grpc_address() const { return parts_->address; }
const std::string& Server::default_run() const { return parts_->default_run; }
const std::string& Server::http_address() const { return parts_->http_address; }

absl::StatusOr<v1::RunSummary> Server::EndRun(const std::string& run_id) {
  return parts_->engine->EndRun(run_id);
}

absl::Status Server::Shutdown() {
  absl::MutexLock lock(&parts_->mu);
  if (parts_->shut_down) return parts_->shutdown_status;
  parts_->shut_down = true;
  Log(LogLevel::kInfo, "shutting_down", {{"drain_timeout", absl::FormatDuration(parts_->options.drain_timeout)}});
  // A pass in progress finishes first: its deletes are one transaction each.
  if (parts_->pruner != nullptr) parts_->pruner->Stop();
  // Refuse new calls and wait for the ones in flight. gRPC's own graceful
  // shutdown would also wait for idle client connections to go away, which
  // clients that keep their channels open never do before the deadline.
  if (grpc::HealthCheckServiceInterface* health = parts_->grpc_server->GetHealthCheckService()) {
    health->Shutdown();
  }
  // Calls held by `hang` actions would otherwise hold the drain open.
  parts_->engine->ReleaseHangs();
  const absl::Time deadline = Env::Default()->Now() + parts_->options.drain_timeout;
  // Its watches would otherwise hold the listener's drain open until the
  // deadline.
  if (parts_->ui_api != nullptr) parts_->ui_api->Shutdown();
  if (parts_->http_server != nullptr) parts_->http_server->Shutdown(deadline);
  const bool drained = parts_->tracker.Drain(deadline);
  if (!drained) Log(LogLevel::kWarning, "drain_timeout", {{"action", "cancelling calls still in flight"}});
  parts_->grpc_server->Shutdown(absl::ToChronoTime(Env::Default()->Now()));
  parts_->grpc_server->Wait();
  absl::Status status = parts_->engine->EndAllRuns();
  absl::Status flushed = parts_->store->Flush();
  if (status.ok()) status = flushed;
  parts_->shutdown_status = status;
  Log(status.ok() ? LogLevel::kInfo : LogLevel::kError, "stopped",
      {{"status", status.ok() ? "ok" : status.ToString()}});
  return status;
}

}  // namespace service
}  // namespace understudy
