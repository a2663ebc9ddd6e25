#include "cli/serve.h"

#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/duration.h"
#include "base/files.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "cli/command_base.h"
#include "cli/runs.h"
#include "grpcpp/grpcpp.h"
#include "mcpserver/http_endpoint.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace cli {

std::function<service::HttpHandler(const std::string&, const std::string&)> OwnMcpEndpoint(
    const service::ServerOptions& server, const std::string& tools_root,
    const std::string& version) {
  if (!server.tls_cert.empty() || !server.auth_token.empty() || !server.auth_token_file.empty()) {
    return nullptr;
  }
  const std::string db = server.db_path;
  return [db, tools_root, version](const std::string& grpc_address, const std::string& http_address) {
    mcpserver::ToolsOptions options;
    options.channel = grpc::CreateChannel(grpc_address, grpc::InsecureChannelCredentials());
    options.grpc_address = grpc_address;
    options.http_address = http_address;
    options.db = db;
    options.root = tools_root;
    options.binary = SelfExecutablePath();
    auto endpoint = std::make_shared<mcpserver::HttpEndpoint>(std::move(options), version);
    // The listener's request and responder, adapted to the endpoint's.
    return [endpoint](service::HttpRequest request, std::shared_ptr<service::HttpResponder> out) {
      mcpserver::McpHttpRequest mcp{std::move(request.method),
                                    std::string(request.Header("content-type")),
                                    std::string(request.Header("origin")), std::move(request.body)};
      endpoint->Handle(
          std::move(mcp),
          [out](mcpserver::McpHttpResponse r) {
            out->Respond(r.status, std::move(r.headers), std::move(r.body));
          },
          [out] { return out->cancelled(); });
    };
  };
}

absl::Status ApplyMode(const std::string& mode, service::ServerOptions* options) {
  if (mode.empty()) return absl::OkStatus();
  if (mode == "record" || mode == "all") {
    options->default_mode = v1::RUN_MODE_RECORD;
  } else if (mode == "replay") {
    options->default_mode = v1::RUN_MODE_REPLAY;
  } else if (mode == "none") {
    options->default_mode = v1::RUN_MODE_REPLAY;
    options->default_strict = true;
  } else if (mode == "passthrough") {
    options->default_mode = v1::RUN_MODE_PASSTHROUGH;
  } else if (mode == "once") {
    options->default_mode = v1::RUN_MODE_ONCE;
  } else if (mode == "new") {
    options->default_mode = v1::RUN_MODE_NEW;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--mode \"", mode, "\": expected record, replay, passthrough, once, new, none or all"));
  }
  return absl::OkStatus();
}

absl::Status ApplyTraceFlags(const ServeFlags& flags, service::ServerOptions* options) {
  if (!flags.trace_level.empty()) {
    std::optional<v1::TraceLevel> level = ParseTraceLevel(flags.trace_level);
    if (!level.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--trace-level \"", flags.trace_level, "\": expected full, summary or off"));
    }
    options->default_trace_level = *level;
  }
  // A negative count other than "none" is refused by Server::Start.
  if (flags.keep_runs != -1) options->retention.keep_runs = flags.keep_runs;
  auto duration = [](absl::string_view flag,
                     const std::string& text) -> absl::StatusOr<absl::Duration> {
    absl::StatusOr<absl::Duration> d = ParseDuration(text);
    if (!d.ok()) return absl::InvalidArgumentError(absl::StrCat(flag, ": ", d.status().message()));
    return d;
  };
  if (!flags.keep_trace_for.empty()) {
    US_ASSIGN_OR_RETURN(options->retention.keep_trace_for,
                        duration("--keep-trace-for", flags.keep_trace_for));
  }
  if (!flags.prune_interval.empty()) {
    US_ASSIGN_OR_RETURN(options->prune_interval,
                        duration("--prune-interval", flags.prune_interval));
  }
  return absl::OkStatus();
}

int FailStart(const absl::Status& status) {
  std::cerr << "understudy: " << status.message() << std::endl;
  switch (service::StartStageOf(status).value_or(service::StartStage::kStore)) {
    case service::StartStage::kOptions:
      return 2;
    case service::StartStage::kReferenced:
      return 1;
    case service::StartStage::kStore:
    case service::StartStage::kListen:
      return 3;
  }
  return 3;
}

void ApplyTraceDb(const ServeFlags& flags, service::ServerOptions* options) {
  if (flags.trace_db.empty()) return;
  options->snapshot_of = options->db_path;
  options->db_path = flags.trace_db;
}

int Serve(const ServeFlags& flags) {
  service::ServerOptions options = flags.server;
  ApplyTraceDb(flags, &options);
  absl::Status mode = ApplyMode(flags.mode, &options);
  if (mode.ok()) mode = ApplyTraceFlags(flags, &options);
  if (!mode.ok()) return FailStart(service::Tagged(mode, service::StartStage::kOptions));
  options.drain_timeout = absl::Seconds(flags.drain_timeout_seconds);
  options.request_timeout = absl::Seconds(flags.request_timeout_seconds);
  options.own_mcp = OwnMcpEndpoint(options, flags.tools_root, flags.version);

  // Signals are taken by sigwait below; block them before any thread starts
  // so that every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  absl::StatusOr<std::unique_ptr<service::Server>> server = service::Server::Start(options);
  if (!server.ok()) return FailStart(server.status());
  std::string line = absl::StrCat("understudy serving grpc=", (*server)->grpc_address());
  if (!(*server)->http_address().empty()) absl::StrAppend(&line, " http=", (*server)->http_address());
  absl::StrAppend(&line, " db=", options.db_path);
  if (!(*server)->default_run().empty()) absl::StrAppend(&line, " run=", (*server)->default_run());
  // The ready file first: whoever sees the serving line may read it at once.
  if (!flags.ready_file.empty()) {
    nlohmann::ordered_json ready;
    ready["grpc"] = (*server)->grpc_address();
    ready["http"] = (*server)->http_address();
    ready["db"] = options.db_path;
    ready["run"] = (*server)->default_run();
    ready["pid"] = static_cast<int>(::getpid());
    absl::Status s = WriteFileAtomically(flags.ready_file, ready.dump() + "\n");
    if (!s.ok()) {
      (*server)->Shutdown().IgnoreError();
      return Fail(s);
    }
  }
  std::cout << line << std::endl;
  int received = 0;
  sigwait(&signals, &received);
  Log(LogLevel::kInfo, "signal", {{"signal", received == SIGINT ? "SIGINT" : "SIGTERM"}});
  absl::Status s = (*server)->Shutdown();
  if (!s.ok()) return Fail(s);
  return 0;
}

}  // namespace cli
}  // namespace understudy
