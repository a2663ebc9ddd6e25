#include "cli/mcp_serve.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/fd_io.h"
#include "base/files.h"
#include "base/log.h"
#include "base/worker_pool.h"
#include "cli/command_base.h"
#include "cli/mcp_stdio.h"
#include "grpcpp/grpcpp.h"
#include "mcpserver/protocol.h"
#include "mcpserver/tools.h"
#include "provider/jsonrpc.h"
#include "service/server.h"

namespace understudy {
namespace cli {

int McpServe(const McpServeFlags& flags, const std::string& version) {
  ::signal(SIGPIPE, SIG_IGN);
  mcpserver::ToolsOptions options;
  options.binary = SelfExecutablePath();
  char root[PATH_MAX];
  const std::string wanted_root = flags.root.empty() ? "." : flags.root;
  // A bad --root is a usage error (exit 2), as a --scenario-dir that is not
  // a directory is for serve.
  struct stat st;
  if (::realpath(wanted_root.c_str(), root) == nullptr) {
    std::cerr << "understudy: --root " << wanted_root << ": " << ErrnoText(errno) << std::endl;
    return 2;
  }
  if (::stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
    std::cerr << "understudy: --root " << wanted_root
              << ": not a directory (the folder the tools may read and write in)" << std::endl;
    return 2;
  }
  options.root = root;

  std::unique_ptr<service::Server> server;
  if (!flags.addr.empty()) {
    options.channel = grpc::CreateChannel(flags.addr, grpc::InsecureChannelCredentials());
    options.grpc_address = flags.addr;
    options.http_address = flags.http;
  } else if (::access(flags.db.c_str(), F_OK) != 0) {
    Log(LogLevel::kWarning, "mcp: no database; the trace tools are unavailable",
        {{"db", flags.db}});
  } else {
    service::ServerOptions server_options;
    server_options.db_path = flags.db;
    server_options.listen = "127.0.0.1:0";
    server_options.http_listen = "127.0.0.1:0";
    absl::StatusOr<std::unique_ptr<service::Server>> started = service::Server::Start(server_options);
    if (!started.ok()) return Fail(started.status());
    server = std::move(*started);
    options.channel =
        grpc::CreateChannel(server->grpc_address(), grpc::InsecureChannelCredentials());
    options.grpc_address = server->grpc_address();
    options.http_address = server->http_address();
    options.db = flags.db;
  }

  const mcpserver::Tools tools(std::move(options));
  const mcpserver::Protocol protocol(&tools, version);
  absl::Mutex out_mu;
  bool out_broken = false;
  auto reply = [&](const std::string& text) {
    if (text.empty()) return;
    absl::MutexLock lock(&out_mu);
    if (out_broken) return;
    out_broken = !WriteFully(STDOUT_FILENO, {text, "\n"}, -1).ok();
  };

  WorkerPool pool(flags.threads);
  LineSplitter splitter;
  std::vector<LineSplitter::Line> lines;
  char buf[65536];
  bool done = false;
  while (!done) {
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      splitter.Finish(&lines);
      done = true;
    } else {
      splitter.Feed(absl::string_view(buf, static_cast<size_t>(n)), &lines);
    }
    for (LineSplitter::Line& line : lines) {
      if (line.too_long) {
        reply(provider::jsonrpc::ErrorResponse(
            provider::Json(), provider::jsonrpc::kInvalidRequest,
            absl::StrCat("message longer than ", kMaxMcpMessageBytes, " bytes; dropped")));
        continue;
      }
      if (line.text.find_first_not_of(" \t\r") == std::string::npos) continue;
      if (!mcpserver::Protocol::IsRequest(line.text)) {
        reply(protocol.Handle(line.text));
        continue;
      }
      auto text = std::make_shared<std::string>(std::move(line.text));
      pool.Submit([&protocol, &reply, text] { reply(protocol.Handle(*text)); });
    }
    lines.clear();
  }
  pool.WaitIdle(absl::InfiniteFuture());
  pool.Close();
  if (server != nullptr) (void)server->Shutdown();
  return 0;
}

}  // namespace cli
}  // namespace understudy
