#include "cli/commands.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/duration.h"
#include "base/files.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "cli/runs.h"
#include "cli/wrap_env.h"
#include "grpcpp/grpcpp.h"
#include "mcpserver/http_endpoint.h"
#include "nlohmann/json.hpp"
#include "query/assert.h"
#include "query/events.h"
#include "replayer/engine.h"
#include "replayer/scenario.h"
#include "sim/config.h"
#include "store/store.h"
#include "trace/assertions.h"
#include "trace/proto_json.h"
#include "trace/spec.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace cli {
namespace {

using trace::ToJson;


const char* StateName(v1::SessionState s) {
  return s == v1::SESSION_STATE_OPEN ? "open" : s == v1::SESSION_STATE_CLOSED ? "closed" : "?";
}

std::string Quote(const std::string& s, size_t max = 60) {
  std::string cut = s.size() > max ? s.substr(0, max) + "…" : s;
  return nlohmann::json(cut).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

absl::StatusOr<std::unique_ptr<store::Store>> OpenStore(const DbFlags& db, bool create) {
  store::StoreOptions options;
  options.path = db.db;
  options.reader_connections = 1;
  options.create_if_missing = create;
  absl::StatusOr<std::unique_ptr<store::Store>> store = store::Store::Open(options);
  if (store.ok()) return store;
  std::string message(store.status().message());
  if (!absl::StrContains(message, db.db)) message = absl::StrCat(db.db, ": ", message);
  if (absl::IsUnavailable(store.status()) && ::access(db.db.c_str(), F_OK) != 0) {
    message = absl::StrCat("cannot open database ", db.db, ": no such file");
  }
  return absl::UnavailableError(message);
}

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

int Fail(const absl::Status& status) {
  std::cerr << "understudy: " << status.message() << std::endl;
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kOutOfRange:
      return 1;
    default:
      return 3;
  }
}

void ApplyTraceDb(const ServeFlags& flags, service::ServerOptions* options) {
  if (flags.trace_db.empty()) return;
  options->snapshot_of = options->db_path;
  options->db_path = flags.trace_db;
}

bool ReplaysOnly(const std::string& mode) { return mode == "none" || mode == "replay"; }

bool RunWasUsed(const v1::RunSummary& summary) {
  const v1::Run& run = summary.run();
  return run.served() > 0 || run.recorded() > 0 || run.misses() > 0 ||
         !summary.failures().empty() || run.state() == v1::RUN_STATE_FAILED;
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

namespace {

// What a summary line says an exchange was: "mcp SERVER METHOD [TOOL]" for
// an MCP exchange, else the operation (when not a completion) and the
// model; then the agent, when there is one.
std::string Describe(const v1::ExchangeRef& r) {
  std::string out;
  if (absl::StartsWith(r.operation(), replayer::kMcpOperationPrefix)) {
    out = absl::StrCat("mcp ", r.model(), " ",
                       absl::string_view(r.operation()).substr(sizeof(replayer::kMcpOperationPrefix) - 1));
    if (!r.tool().empty()) absl::StrAppend(&out, " ", r.tool());
  } else {
    out = absl::StrCat(r.operation().empty() ? "model" : r.operation(), " ", r.model());
  }
  if (!r.agent().empty()) absl::StrAppend(&out, " (agent ", r.agent(), ")");
  return out;
}

void PrintSummary(const v1::RunSummary& summary) {
  const v1::Run& run = summary.run();
  std::cerr << "understudy: run " << run.id() << " (" << run.session() << "@" << run.session_version()
            << "): served " << run.served() << ", recorded " << run.recorded() << ", misses "
            << run.misses() << ", unused recordings " << summary.unconsumed_size() << "\n";
  for (const v1::MissReport& m : summary.misses()) {
    std::cerr << "  miss: " << m.text() << "\n";
  }
  for (const v1::ExchangeRef& r : summary.recorded()) {
    std::cerr << "  recorded #" << r.seq() << " " << Describe(r) << "\n";
  }
  for (const v1::ExchangeRef& r : summary.unconsumed()) {
    std::cerr << "  unused #" << r.seq() << " " << Describe(r) << "\n";
  }
  for (const std::string& f : summary.failures()) std::cerr << "  failed: " << f << "\n";
}

}  // namespace

int Wrap(const ServeFlags& flags, const std::vector<std::string>& command) {
  if (command.empty()) {
    std::cerr << "understudy: give the command to run after --, e.g. "
                 "understudy replay --session golden -- npm test\n";
    return 2;
  }
  absl::StatusOr<WrapResult> result = RunWrapped(flags, command);
  if (!result.ok()) return FailWrapped(result.status());
  // The command passed but the scenario's script was not followed.
  if (result->exit_code == 0 && result->summary.run().state() == v1::RUN_STATE_FAILED) return 1;
  return result->exit_code;
}

int FailWrapped(const absl::Status& status) {
  return service::StartStageOf(status).has_value() ? FailStart(status) : Fail(status);
}

absl::StatusOr<WrapResult> RunWrapped(const ServeFlags& flags,
                                      const std::vector<std::string>& command,
                                      const WrapOptions& wrap) {
  if (command.empty()) return absl::InvalidArgumentError("no command to run");
  service::ServerOptions options = flags.server;
  // A replay leaves the recording as it was: it serves a copy, which holds
  // the runs and traces (--trace-db, else a scratch one).
  std::unique_ptr<ScratchDir> scratch;
  ServeFlags copied;
  const ServeFlags* effective = &flags;
  if (flags.trace_db.empty() && ReplaysOnly(flags.mode)) {
    std::string dir = wrap.trace_dir;
    if (dir.empty()) {
      absl::StatusOr<std::unique_ptr<ScratchDir>> made = ScratchDir::Create("understudy-replay");
      if (!made.ok()) return service::Tagged(made.status(), service::StartStage::kStore);
      scratch = *std::move(made);
      dir = scratch->path();
    }
    copied = flags;
    copied.trace_db = absl::StrCat(dir, "/trace.db");
    effective = &copied;
  }
  ApplyTraceDb(*effective, &options);
  absl::Status mode = ApplyMode(flags.mode, &options);
  if (mode.ok()) mode = ApplyTraceFlags(flags, &options);
  if (!mode.ok()) return service::Tagged(mode, service::StartStage::kOptions);
  options.listen = "127.0.0.1:0";
  options.http_listen = "127.0.0.1:0";
  options.upstreams_from_mcp_proxies = true;
  options.drain_timeout = absl::Seconds(flags.drain_timeout_seconds);
  options.request_timeout = absl::Seconds(flags.request_timeout_seconds);

  // Signals reach this thread through sigwait; the command gets them from
  // here. Blocked before any thread starts so that every thread inherits it.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  absl::StatusOr<std::unique_ptr<service::Server>> started = service::Server::Start(options);
  if (!started.ok()) {
    // A failure that names no stage is the store's (exit 3), as for serve.
    if (service::StartStageOf(started.status()).has_value()) return started.status();
    return service::Tagged(started.status(), service::StartStage::kStore);
  }
  std::unique_ptr<service::Server> server = *std::move(started);
  const std::string run = server->default_run();
  const std::string http = absl::StrCat("http://", server->http_address());
  std::vector<std::string> base;
  if (wrap.env.has_value()) {
    base = *wrap.env;
  } else {
    for (char** e = environ; *e != nullptr; ++e) base.emplace_back(*e);
  }
  std::vector<std::string> env =
      WithVariables(base, WrapperVariables(http, server->grpc_address(), run, flags.refuse_egress));
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = command;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!wrap.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, wrap.cwd.c_str());
  if (!wrap.stderr_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, wrap.stderr_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
  }
  pid_t pid = 0;
  int spawned = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (spawned != 0) {
    server->Shutdown().IgnoreError();
    std::string where = wrap.cwd.empty() ? "" : absl::StrCat(" in ", wrap.cwd);
    return absl::NotFoundError(
        absl::StrCat("cannot run ", command[0], where, ": ", std::strerror(spawned)));
  }
  Log(LogLevel::kInfo, "command_started", {{"pid", absl::StrCat(pid)}, {"run", run}});
  WrapResult result;
  while (true) {
    int received = 0;
    sigwait(&signals, &received);
    if (received == SIGINT || received == SIGTERM) {
      kill(pid, received);
      continue;
    }
    int status = 0;
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
  }
  absl::StatusOr<v1::RunSummary> summary = server->EndRun(run);
  absl::Status stopped = server->Shutdown();
  US_RETURN_IF_ERROR(summary.status());
  if (RunWasUsed(*summary)) PrintSummary(*summary);
  US_RETURN_IF_ERROR(stopped);
  result.summary = *std::move(summary);
  result.db = scratch != nullptr ? "" : options.db_path;
  return result;
}

int SessionsList(const DbFlags& db, const std::string& prefix) {
  auto store = OpenStore(db);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  auto sessions = (*store)->ListSessions(prefix);
  if (!sessions.ok()) return Fail(sessions.status());
  if (db.json) {
    for (const v1::Session& s : *sessions) std::cout << ToJson(s) << "\n";
    return 0;
  }
  if (sessions->empty()) {
    std::cerr << "no sessions in " << db.db << "\n";
    return 0;
  }
  std::printf("%-32s %7s %-7s %9s  %s\n", "NAME", "VERSION", "STATE", "EXCHANGES", "AGENTS");
  for (const v1::Session& s : *sessions) {
    std::printf("%-32s %7lld %-7s %9lld  %s\n", s.name().c_str(),
                static_cast<long long>(s.version()), StateName(s.state()),
                static_cast<long long>(s.exchange_count()),
                absl::StrJoin(s.agents(), ",").c_str());
  }
  return 0;
}

int SessionsShow(const DbFlags& db, const std::string& ref) {
  auto parsed = replayer::ParseSessionRef(ref);
  if (!parsed.ok()) return Fail(parsed.status());
  auto store = OpenStore(db);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  auto session = (*store)->GetSession(parsed->first, parsed->second);
  if (!session.ok()) return Fail(session.status());
  auto exchanges = (*store)->LoadExchanges(session->name(), session->version());
  if (!exchanges.ok()) return Fail(exchanges.status());
  if (db.json) {
    std::cout << ToJson(*session) << "\n";
    for (const v1::Exchange& e : *exchanges) std::cout << ToJson(e) << "\n";
    return 0;
  }
  std::cout << session->name() << "@" << session->version() << "  " << StateName(session->state())
            << "  " << session->exchange_count() << " exchanges  agents: "
            << absl::StrJoin(session->agents(), ", ") << "\n";
  for (const v1::Exchange& e : *exchanges) {
    const auto& messages = e.request().messages();
    std::string last = messages.empty() ? "" : messages[messages.size() - 1].content();
    // An MCP request: its method, and its params for what was asked.
    const bool mcp = absl::StartsWith(e.request().operation(), "mcp:");
    if (mcp) last = e.request().extra();
    std::cout << "#" << e.seq() << " " << (e.agent().empty() ? "-" : e.agent()) << "  "
              << e.request().model() << (mcp ? " " + e.request().operation() : "") << "  "
              << Quote(last) << " → ";
    if (e.has_error() && mcp) {
      std::cout << "JSON-RPC error " << e.error().code() << " " << Quote(e.error().message());
    } else if (e.has_error()) {
      std::cout << "error " << absl::StatusCodeToString(static_cast<absl::StatusCode>(e.error().code()));
    } else {
      std::cout << Quote(e.response().message().content());
      for (const v1::ToolCall& c : e.response().message().tool_calls()) {
        std::cout << " " << c.name() << Quote(c.arguments(), 40);
      }
      if (!e.response().finish_reason().empty()) std::cout << " (" << e.response().finish_reason() << ")";
    }
    if (e.streamed()) std::cout << " [" << e.chunks_size() << " chunks]";
    std::cout << "\n";
  }
  return 0;
}

int SessionsRemove(const DbFlags& db, const std::string& ref) {
  auto parsed = replayer::ParseSessionRef(ref);
  if (!parsed.ok()) return Fail(parsed.status());
  auto store = OpenStore(db);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  auto n = (*store)->DeleteSession(parsed->first, parsed->second);
  if (!n.ok()) return Fail(n.status());
  std::cerr << "deleted " << *n << (*n == 1 ? " version" : " versions") << " of "
            << parsed->first << "\n";
  return 0;
}

int Export(const DbFlags& db, const std::string& ref, const std::string& output) {
  auto parsed = replayer::ParseSessionRef(ref);
  if (!parsed.ok()) return Fail(parsed.status());
  auto store = OpenStore(db);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  auto jsonl = (*store)->ExportSession(parsed->first, parsed->second);
  if (!jsonl.ok()) return Fail(jsonl.status());
  if (output.empty() || output == "-") {
    std::cout.write(jsonl->data(), static_cast<std::streamsize>(jsonl->size()));
    std::cout.flush();
    return std::cout ? 0 : 3;
  }
  absl::Status s = WriteFileAtomically(output, *jsonl);
  return s.ok() ? 0 : Fail(s);
}

int Import(const DbFlags& db, const std::string& input, const std::string& name) {
  std::string content;
  if (input == "-") {
    content.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(input, std::ios::binary);
    if (!in) return Fail(absl::NotFoundError(absl::StrCat("cannot read ", input)));
    content.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto store = OpenStore(db, /*create=*/true);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  auto session = (*store)->ImportSession(content, name);
  if (!session.ok()) {
    return Fail(absl::Status(session.status().code(),
                             absl::StrCat(input, ": ", session.status().message())));
  }
  std::cout << session->name() << "@" << session->version() << " imported: "
            << session->exchange_count() << " exchanges\n";
  return 0;
}

int Trace(const DbFlags& db, const std::string& run, const std::vector<std::string>& kinds,
          const std::string& agent) {
  auto store = OpenStore(db);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  store::EventQuery selected;
  selected.run = run;
  selected.kinds = kinds;
  selected.agent = agent;
  if (!(*store)->GetRun(run).ok()) {
    return Fail(absl::NotFoundError(absl::StrCat("unknown run \"", run, "\" in ", db.db)));
  }
  absl::Status read = query::ForEachEvent(**store, std::move(selected), [&](v1::TraceEvent& e) {
    if (db.json) {
      std::cout << ToJson(e) << "\n";
      return true;
    }
    std::cout << "#" << e.seq() << " " << e.kind();
    if (!e.agent().empty()) std::cout << " " << e.agent();
    std::map<std::string, std::string> attrs(e.attributes().begin(), e.attributes().end());
    for (const auto& [k, v] : attrs) {
      if (k == "gen_ai.agent.name" || k == "understudy.miss.report") continue;
      std::cout << " " << k << "=" << (v.find(' ') == std::string::npos ? v : Quote(v, 200));
    }
    std::cout << "\n";
    auto report = attrs.find("understudy.miss.report");
    if (report != attrs.end()) std::cout << "    " << report->second << "\n";
    return true;
  });
  if (!read.ok()) return Fail(read);
  return 0;
}

int Show(const DbFlags& db, const std::string& ref, ColorMode color) {
  // A read-only command: do not leave an empty database behind a typo.
  if (::access(db.db.c_str(), F_OK) != 0) {
    std::cerr << "understudy: cannot open database " << db.db << ": " << std::strerror(errno)
              << std::endl;
    return 3;
  }
  auto store = OpenStore(db);
  if (!store.ok()) {
    std::cerr << "understudy: " << db.db << ": " << store.status().message() << std::endl;
    return 3;
  }
  query::TimelineOptions options;
  options.color = ShouldColor(color, ::isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR"));
  auto unknown = [&] {
    return Fail(
        absl::NotFoundError(absl::StrCat("unknown run or session \"", ref, "\" in ", db.db)));
  };
  auto failed = [](const absl::Status& status) {
    std::cerr << "understudy: " << status.message() << std::endl;
    return 3;
  };

  absl::StatusOr<v1::Run> run = (*store)->GetRun(ref);
  if (run.ok()) {
    store::EventQuery selected;
    selected.run = ref;
    selected.limit = query::kMaxPage;
    // Text: page by page, keeping back trailing answer effects for the page
    // that may hold their answer (see FormatTimeline).
    std::vector<v1::TraceEvent> pending;
    absl::Status read = query::ForEachPage(
        **store, std::move(selected), [&](std::vector<v1::TraceEvent>& page, bool last) {
          if (db.json) {
            for (const v1::TraceEvent& e : page) std::cout << ToJson(e) << "\n";
            return true;
          }
          for (v1::TraceEvent& e : page) pending.push_back(std::move(e));
          size_t keep = pending.size();
          while (!last && keep > 0 && query::IsAnswerEffect(pending[keep - 1])) --keep;
          std::vector<v1::TraceEvent> later(std::make_move_iterator(pending.begin() + keep),
                                            std::make_move_iterator(pending.end()));
          pending.resize(keep);
          for (const std::string& line : query::FormatTimeline(pending, options)) {
            std::cout << line << "\n";
          }
          pending = std::move(later);
          return true;
        });
    if (!read.ok()) return failed(read);
    std::cout.flush();
    return std::cout ? 0 : 3;
  }
  if (!absl::IsNotFound(run.status())) return failed(run.status());

  auto parsed = replayer::ParseSessionRef(ref);
  if (!parsed.ok()) return unknown();
  auto session = (*store)->GetSession(parsed->first, parsed->second);
  if (absl::IsNotFound(session.status())) return unknown();
  if (!session.ok()) return failed(session.status());
  auto exchanges = (*store)->LoadExchanges(session->name(), session->version());
  if (!exchanges.ok()) return failed(exchanges.status());
  if (db.json) {
    for (const v1::Exchange& e : *exchanges) std::cout << ToJson(e) << "\n";
  } else {
    for (const std::string& line : query::FormatSessionTimeline(*session, *exchanges, options)) {
      std::cout << line << "\n";
    }
  }
  std::cout.flush();
  return std::cout ? 0 : 3;
}

namespace {

std::string Plural(int n, const char* word) {
  return absl::StrCat(n, " ", word, n == 1 ? "" : "s");
}

}  // namespace

int Validate(const std::vector<std::string>& files, bool json) {
  int errors = 0;
  int warnings = 0;
  bool unreadable = false;
  nlohmann::json reports = nlohmann::json::array();
  for (const std::string& file : files) {
    absl::StatusOr<std::string> path = replayer::ResolveScenario(file);
    absl::StatusOr<std::string> text =
        path.ok() ? replayer::ReadScenarioFile(*path) : absl::StatusOr<std::string>(path.status());
    if (!text.ok()) {
      std::cerr << "understudy: " << text.status().message() << "\n";
      unreadable = true;
      continue;
    }
    // A sim config (`understudy sim --config`) is told apart by its
    // schema or its `behaviours`; anything else is judged as a scenario.
    replayer::ValidationReport report = sim::LooksLikeSimConfig(*text)
                                            ? sim::ValidateSimConfig(*text, *path)
                                            : replayer::ValidateScenario(*text, *path);
    errors += report.errors();
    warnings += report.warnings();
    if (json) {
      reports.push_back(replayer::ReportToJson(report));
    } else {
      for (const replayer::Problem& p : report.problems) {
        std::cout << replayer::FormatProblem(report, p) << "\n";
      }
    }
  }
  if (json) {
    nlohmann::json out = {{"files", std::move(reports)}, {"errors", errors}, {"warnings", warnings}};
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << Plural(errors, "error") << ", " << Plural(warnings, "warning") << " in "
              << Plural(static_cast<int>(files.size()), "file") << "\n";
  }
  std::cout.flush();
  if (unreadable) return 3;
  return errors > 0 ? 1 : 0;
}

namespace {

// Reads a spec file, bounded: a larger file is refused before parsing.
absl::StatusOr<std::string> ReadSpecFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::string text(trace::kMaxSpecBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > trace::kMaxSpecBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": larger than ", trace::kMaxSpecBytes, " bytes; split it into smaller specs"));
  }
  return text;
}

// The run's whole trace and its summary (none while the run is active),
// from the database.
absl::StatusOr<v1::AssertResponse> AssertFromStore(const DbFlags& db, const std::string& run,
                                                   const std::vector<v1::Assertion>& assertions) {
  if (::access(db.db.c_str(), F_OK) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot open database ", db.db, ": ", std::strerror(errno)));
  }
  US_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, OpenStore(db));
  if (!store->GetRun(run).ok()) {
    return absl::NotFoundError(absl::StrCat("unknown run \"", run, "\" in ", db.db));
  }
  google::protobuf::RepeatedPtrField<v1::Assertion> checks(assertions.begin(), assertions.end());
  return query::AssertRun(query::Source{store.get()}, run, checks);
}

// The same through a running server's Traces.Assert.
absl::StatusOr<v1::AssertResponse> AssertFromServer(const std::string& addr, const std::string& run,
                                                    const std::vector<v1::Assertion>& assertions) {
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(addr, grpc::InsecureChannelCredentials());
  std::unique_ptr<v1::Traces::Stub> traces = v1::Traces::NewStub(channel);
  v1::AssertRequest request;
  request.set_run(run);
  for (const v1::Assertion& a : assertions) *request.add_assertions() = a;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::AssertResponse response;
  grpc::Status status = traces->Assert(&context, request, &response);
  if (status.ok()) return response;
  const std::string message = absl::StrCat(addr, ": ", status.error_message());
  switch (status.error_code()) {
    case grpc::StatusCode::NOT_FOUND:
      return absl::NotFoundError(message);
    case grpc::StatusCode::INVALID_ARGUMENT:
      return absl::InvalidArgumentError(message);
    case grpc::StatusCode::FAILED_PRECONDITION:
      return absl::FailedPreconditionError(message);
    default:
      return absl::UnavailableError(message);
  }
}

}  // namespace

absl::StatusOr<std::vector<v1::Assertion>> LoadSpecs(const std::vector<std::string>& spec_files) {
  std::vector<v1::Assertion> assertions;
  bool invalid = false;
  for (const std::string& file : spec_files) {
    absl::StatusOr<std::string> text = ReadSpecFile(file);
    if (!text.ok()) {
      std::cerr << "understudy: " << text.status().message() << std::endl;
      if (!absl::IsInvalidArgument(text.status())) return text.status();
      invalid = true;
      continue;
    }
    absl::StatusOr<std::vector<v1::Assertion>> parsed = trace::ParseSpec(*text, file);
    if (!parsed.ok()) {
      std::cerr << parsed.status().message() << std::endl;
      invalid = true;
      continue;
    }
    for (v1::Assertion& a : *parsed) assertions.push_back(std::move(a));
  }
  if (invalid) return absl::InvalidArgumentError("invalid spec");
  if (assertions.empty()) {
    std::cerr << "understudy: " << absl::StrJoin(spec_files, ", ")
              << ": no assertions; list them under `assertions:`" << std::endl;
    return absl::InvalidArgumentError("no assertions");
  }
  return assertions;
}

int CheckRun(const DbFlags& db, const std::string& addr, const std::string& run,
             const std::vector<v1::Assertion>& assertions) {
  absl::StatusOr<v1::AssertResponse> verdict = addr.empty()
                                                   ? AssertFromStore(db, run, assertions)
                                                   : AssertFromServer(addr, run, assertions);
  if (!verdict.ok()) {
    std::cerr << "understudy: " << verdict.status().message() << std::endl;
    return absl::IsInvalidArgument(verdict.status()) ? 2 : 3;
  }
  if (db.json) {
    std::cout << ToJson(*verdict, /*all_fields=*/true) << "\n";
  } else {
    int passed = 0;
    for (const v1::AssertionResult& r : verdict->results()) {
      std::cout << trace::ReportLine(r) << "\n";
      passed += r.passed() ? 1 : 0;
    }
    std::cout << passed << " of " << Plural(verdict->results_size(), "check") << " passed\n";
  }
  return verdict->passed() ? 0 : 1;
}

int Assert(const DbFlags& db, const std::string& addr, const std::string& run,
           const std::vector<std::string>& spec_files) {
  absl::StatusOr<std::vector<v1::Assertion>> assertions = LoadSpecs(spec_files);
  if (!assertions.ok()) return absl::IsInvalidArgument(assertions.status()) ? 2 : 3;
  return CheckRun(db, addr, run, *assertions);
}

}  // namespace cli
}  // namespace understudy
