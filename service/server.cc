#include "service/server.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "recorder/grpc_upstream.h"
#include "replayer/engine.h"
#include "service/admin_services.h"
#include "service/model_service.h"
#include "store/store.h"

namespace understudy {
namespace service {

// Declared in destruction order's reverse: the gRPC server goes first, the
// store last.
struct Server::Parts {
  ServerOptions options;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<recorder::GrpcUpstream> upstream;
  std::unique_ptr<replayer::Engine> engine;
  CallTracker tracker;
  std::unique_ptr<ModelService> model;
  std::unique_ptr<RunsService> runs;
  std::unique_ptr<RecorderService> recorder;
  std::unique_ptr<SessionsService> sessions;
  std::unique_ptr<TracesService> traces;
  std::unique_ptr<grpc::Server> grpc_server;
  std::string address;
  std::string default_run;

  absl::Mutex mu;
  bool shut_down ABSL_GUARDED_BY(mu) = false;
  absl::Status shutdown_status ABSL_GUARDED_BY(mu);
};

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options) {
  auto parts = std::make_unique<Parts>();
  parts->options = options;

  store::StoreOptions store_options;
  store_options.path = options.db_path;
  US_ASSIGN_OR_RETURN(parts->store, store::Store::Open(store_options));

  replayer::EngineOptions engine_options;
  engine_options.store = parts->store.get();
  if (!options.upstream.empty()) {
    US_ASSIGN_OR_RETURN(parts->upstream, recorder::GrpcUpstream::Create(options.upstream));
    engine_options.upstream = parts->upstream.get();
  }
  US_ASSIGN_OR_RETURN(parts->engine, replayer::Engine::Create(engine_options));

  CallTracker* tracker = &parts->tracker;
  parts->model = std::make_unique<ModelService>(parts->engine.get(), tracker);
  parts->runs = std::make_unique<RunsService>(parts->engine.get(), tracker);
  parts->recorder = std::make_unique<RecorderService>(parts->store.get(),
                                                      options.max_record_exchanges, tracker);
  parts->sessions = std::make_unique<SessionsService>(parts->store.get(), tracker);
  parts->traces =
      std::make_unique<TracesService>(parts->engine.get(), parts->store.get(), tracker);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(), &port);
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
  parts->grpc_server = builder.BuildAndStart();
  if (parts->grpc_server == nullptr || port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen, " (in use, or not a local address?)"));
  }
  size_t colon = options.listen.rfind(':');
  parts->address = absl::StrCat(options.listen.substr(0, colon), ":", port);

  if (options.default_mode != v1::RUN_MODE_UNSPECIFIED) {
    v1::StartRunRequest request;
    request.set_mode(options.default_mode);
    request.set_session(options.default_session);
    request.set_strict(options.default_strict);
    absl::StatusOr<v1::Run> run = parts->engine->StartRun(request);
    if (!run.ok()) {
      parts->grpc_server->Shutdown();
      return absl::Status(run.status().code(),
                          absl::StrCat("default run: ", run.status().message()));
    }
    parts->default_run = run->id();
    // Calls naming no run go to it from now on.
    parts->engine->SetDefaultRun(run->id());
  }
  Log(LogLevel::kInfo, "serving",
      {{"grpc", parts->address}, {"db", options.db_path},
       {"upstream", options.upstream.empty() ? "none" : options.upstream},
       {"default_run", parts->default_run}});
  return std::unique_ptr<Server>(new Server(std::move(parts)));
}

Server::Server(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

Server::~Server() { Shutdown().IgnoreError(); }

const std::string& Server::grpc_address() const { return parts_->address; }
const std::string& Server::default_run() const { return parts_->default_run; }

absl::Status Server::Shutdown() {
  absl::MutexLock lock(&parts_->mu);
  if (parts_->shut_down) return parts_->shutdown_status;
  parts_->shut_down = true;
  Log(LogLevel::kInfo, "shutting_down", {{"drain_timeout", absl::FormatDuration(parts_->options.drain_timeout)}});
  // Refuse new calls and wait for the ones in flight. gRPC's own graceful
  // shutdown would also wait for idle client connections to go away, which
  // clients that keep their channels open never do before the deadline.
  if (grpc::HealthCheckServiceInterface* health = parts_->grpc_server->GetHealthCheckService()) {
    health->Shutdown();
  }
  const bool drained =
      parts_->tracker.Drain(absl::Now() + parts_->options.drain_timeout);
  if (!drained) Log(LogLevel::kWarning, "drain_timeout", {{"action", "cancelling calls still in flight"}});
  parts_->grpc_server->Shutdown(absl::ToChronoTime(absl::Now()));
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
