#include "cli/wrap.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstring>
#include <iostream>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "cli/command_base.h"
#include "cli/wrap_env.h"
#include "engine/engine.h"
#include "provider/a2a.h"
#include "provider/mcp.h"

namespace understudy {
namespace cli {

bool ReplaysOnly(const std::string& mode) { return mode == "none" || mode == "replay"; }

bool RunWasUsed(const v1::RunSummary& summary) {
  const v1::Run& run = summary.run();
  return run.served() > 0 || run.recorded() > 0 || run.misses() > 0 ||
         !summary.failures().empty() || run.state() == v1::RUN_STATE_FAILED;
}

namespace {

// What a summary line says an exchange was: "mcp SERVER METHOD [TOOL]" for
// an MCP exchange, "a2a AGENT METHOD" for an A2A one, else the operation
// (when not a completion) and the model; then the agent, when there is one.
std::string Describe(const v1::ExchangeRef& r) {
  std::string out;
  if (absl::StartsWith(r.operation(), provider::mcp::kOperationPrefix) ||
      absl::StartsWith(r.operation(), provider::a2a::kOperationPrefix)) {
    // "mcp:tools/call" -> "mcp SERVER tools/call".
    const size_t colon = r.operation().find(':');
    out = absl::StrCat(r.operation().substr(0, colon), " ", r.model(), " ",
                       r.operation().substr(colon + 1));
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

}  // namespace cli
}  // namespace understudy
