#include "cli/mcp_bridge.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/env.h"
#include "base/fd_io.h"
#include "base/log.h"
#include "base/subprocess.h"
#include "cli/mcp_stdio.h"
#include "provider/jsonrpc.h"
#include "provider/mcp.h"
#include "service/http_server.h"
#include "validation/json_bounds.h"
#include "validation/utf8.h"

namespace understudy {
namespace cli {
namespace {

namespace jsonrpc = provider::jsonrpc;
namespace mcp = provider::mcp;
using Json = provider::Json;

// The id of the initialize the bridge sends for the agent (see
// StdioBridgeOptions::init_state); not a number, so it cannot clash with the
// ids agents count up from.
constexpr char kInitId[] = "\"understudy-init\"";

}  // namespace

class StdioBridge::Impl {
 public:
  Impl(StdioBridgeOptions options, std::unique_ptr<ChildProcess> child)
      : options_(std::move(options)),
        command_(ShellQuoted(options_.command)),
        child_(std::move(child)) {}

  ~Impl() { Shutdown(absl::Seconds(2)); }

  absl::Status Listen() {
    service::HttpServerOptions http;
    http.listen = "127.0.0.1:0";
    http.threads = 1;
    http.max_body_bytes = kMaxMcpMessageBytes;
    absl::StatusOr<std::unique_ptr<service::HttpServer>> server = service::HttpServer::Start(
        http, [this](service::HttpRequest request, std::shared_ptr<service::HttpResponder> out) {
          Handle(std::move(request), std::move(out));
        });
    if (!server.ok()) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen for the MCP server: ", server.status().message()));
    }
    server_ = std::move(*server);
    writer_ = std::thread([this] { WriterLoop(); });
    reader_ = std::thread([this] { ReaderLoop(); });
    return absl::OkStatus();
  }

  int port() const { return server_->port(); }
  pid_t pid() const { return child_->pid(); }

  void Shutdown(absl::Duration grace) {
    if (shut_down_) return;
    shut_down_ = true;
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    writer_wake_.Wake();
    if (writer_.joinable()) writer_.join();
    FailPending("understudy mcp-proxy: shutting down");
    // The reader keeps draining the child's stdout while it ends, so that a
    // child writing on its way out is not stuck on a full pipe.
    const std::optional<int> status = child_->Terminate(grace);
    reader_wake_.Wake();
    if (reader_.joinable()) reader_.join();
    Log(LogLevel::kInfo, "mcp_server_stopped",
        {{"command", command_},
         {"how", status.has_value() ? ChildProcess::DescribeExit(*status) : "did not end"}});
    if (server_ != nullptr) server_->Shutdown(Env::Default()->Now() + absl::Seconds(1));
  }

 private:
  // A message for the child, in arrival order.
  struct Outgoing {
    std::string text;
    std::string method;
    std::string id;  // For a request; "" otherwise.
  };
  // A request waiting for the child's response.
  struct Pending {
    std::shared_ptr<service::HttpResponder> out;
    Json id;                     // As the request gave it.
    std::string progress_token;  // JSON text; "" for none.
    uint64_t seq = 0;
    bool streaming = false;  // The 200 head is sent.
  };

  void Handle(service::HttpRequest request, std::shared_ptr<service::HttpResponder> out) {
    if (request.method == "DELETE") {
      out->Respond(200, {}, "");
      return;
    }
    if (request.method != "POST") {
      out->Respond(405, {{"allow", "POST, DELETE"}}, "");
      return;
    }
    absl::StatusOr<jsonrpc::Message> m = jsonrpc::ParseMessage(request.body, "message");
    absl::StatusOr<std::string> line =
        m.ok() ? ToOneLine(std::move(request.body)) : absl::StatusOr<std::string>(m.status());
    if (!line.ok()) {
      out->Respond(
          400, {{"content-type", "application/json"}},
          jsonrpc::ErrorResponse(nullptr, jsonrpc::ErrorCodeFor(line.status()),
                             absl::StrCat("understudy mcp-proxy: ", line.status().message())));
      return;
    }
    const bool request_kind = m->kind == jsonrpc::Message::Kind::kRequest;
    const std::string id = jsonrpc::IdText(*m);
    uint64_t seq = 0;
    std::string refusal;
    int refusal_status = 0;
    {
      absl::MutexLock lock(&mu_);
      if (!dead_.empty()) {
        refusal_status = 502;
        refusal = dead_;
      } else if (stopping_) {
        refusal_status = 503;
        refusal = "understudy mcp-proxy: shutting down";
      } else if (request_kind && pending_.count(id) != 0) {
        refusal_status = 400;
        refusal = absl::StrCat("understudy mcp-proxy: request id ", id, " is already pending");
      } else {
        if (request_kind) {
          seq = ++next_seq_;
          const Json token = mcp::ProgressTokenOf(*m);
          pending_[id] =
              Pending{out, m->id, token.is_null() ? "" : provider::DumpJson(token), seq, false};
        }
        queue_.push_back(Outgoing{std::move(*line), m->method, id});
      }
    }
    if (refusal_status != 0) {
      out->Respond(
          refusal_status, {{"content-type", "application/json"}},
          jsonrpc::ErrorResponse(request_kind ? m->id : Json(nullptr), jsonrpc::kInternalError, refusal));
      return;
    }
    if (!request_kind) {
      out->Respond(202, {}, "");
      return;
    }
    // Outside the lock: runs at once when the caller has already gone.
    out->OnCancel([this, id, seq] {
      absl::MutexLock lock(&mu_);
      const auto it = pending_.find(id);
      if (it != pending_.end() && it->second.seq == seq) pending_.erase(it);
    });
  }

  bool WriterHasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !dead_.empty() || !replies_.empty() || !queue_.empty();
  }

  // Writes `text` and a newline to the child's stdin.
  absl::Status WriteToChild(absl::string_view text) {
    absl::Status s = WriteFully(child_->stdin_fd(), {text, "\n"}, writer_wake_.read_fd());
    if (!s.ok() && !absl::IsCancelled(s)) {
      Log(LogLevel::kWarning, "mcp_server_write_failed",
          {{"command", command_}, {"error", std::string(s.message())}});
    }
    return s;
  }

  void WriterLoop() {
    bool primed = false;
    for (;;) {
      Outgoing item;
      std::string reply;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &Impl::WriterHasWork));
        if (stopping_ || !dead_.empty()) return;
        if (!replies_.empty()) {
          reply = std::move(replies_.front());
          replies_.pop_front();
        } else {
          item = std::move(queue_.front());
          queue_.pop_front();
        }
      }
      if (!reply.empty()) {
        if (absl::IsCancelled(WriteToChild(reply))) return;
        continue;
      }
      if (!primed) {
        primed = true;
        if (item.method != "initialize" && !Prime(item.method)) {
          if (!item.id.empty()) FailOne(item.id, DeadOr("the MCP server did not initialize"));
          continue;
        }
      }
      absl::Status s = WriteToChild(item.text);
      if (absl::IsCancelled(s)) return;
      if (!s.ok() && !item.id.empty()) {
        FailOne(item.id, absl::StrCat("understudy mcp-proxy: cannot write to the MCP server `",
                                      command_, "`: ", s.message()));
      }
    }
  }

  // Why the child takes no more messages, or `fallback` while it runs.
  std::string DeadOr(absl::string_view fallback) {
    absl::MutexLock lock(&mu_);
    return dead_.empty() ? absl::StrCat("understudy mcp-proxy: ", fallback) : dead_;
  }

  bool InitDone() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return init_answered_ || stopping_ || !dead_.empty() || !replies_.empty();
  }

  // Replays the agent's initialize to a child whose first message is
  // something else (StdioBridgeOptions::init_state). False when the child
  // died or the bridge stopped meanwhile.
  bool Prime(const std::string& first_method) {
    if (!options_.init_state) return true;
    const McpInitState state = options_.init_state();
    if (state.initialize.empty()) return true;
    Json init = validation::ParseJsonOrDiscarded<Json>(state.initialize);
    if (!init.is_object()) return true;
    init["id"] = Json::parse(kInitId);
    {
      absl::MutexLock lock(&mu_);
      awaiting_init_ = true;
    }
    if (!WriteToChild(init.dump()).ok()) return false;
    for (;;) {
      std::string reply;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &Impl::InitDone));
        if (replies_.empty()) break;
        reply = std::move(replies_.front());
        replies_.pop_front();
      }
      if (!WriteToChild(reply).ok()) return false;
    }
    {
      absl::MutexLock lock(&mu_);
      if (!init_answered_) return false;
    }
    if (state.initialized_sent && first_method != "notifications/initialized") {
      if (!WriteToChild(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").ok()) {
        return false;
      }
    }
    Log(LogLevel::kInfo, "mcp_server_initialized",
        {{"command", command_}, {"first", first_method}});
    return true;
  }

  void ReaderLoop() {
    LineSplitter splitter(kMaxMcpMessageBytes);
    std::vector<LineSplitter::Line> lines;
    std::vector<char> buffer(64 << 10);
    bool eof = false;
    bool exited = false;
    bool woken = false;
    while (!eof && !exited && !woken) {
      pollfd fds[3] = {{child_->stdout_fd(), POLLIN, 0},
                       {reader_wake_.read_fd(), POLLIN, 0},
                       {child_->exit_fd(), POLLIN, 0}};
      const int ready = ::poll(fds, 3, child_->exit_fd() >= 0 ? -1 : 100);
      if (ready < 0 && errno != EINTR) break;
      woken = (fds[1].revents & POLLIN) != 0;
      exited = child_->exit_fd() >= 0 ? (fds[2].revents & POLLIN) != 0
                                      : child_->WaitFor(absl::ZeroDuration()).has_value();
      // Whatever the child wrote before it exited is still to be read.
      for (;;) {
        const ssize_t n = ::read(child_->stdout_fd(), buffer.data(), buffer.size());
        if (n > 0) {
          splitter.Feed(absl::string_view(buffer.data(), static_cast<size_t>(n)), &lines);
          for (LineSplitter::Line& line : lines) ChildLine(std::move(line));
          lines.clear();
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) eof = true;
        break;
      }
    }
    splitter.Finish(&lines);
    for (LineSplitter::Line& line : lines) ChildLine(std::move(line));
    // A child that closed its stdout is given a moment to exit, so that
    // the message says how it ended.
    const std::optional<int> status =
        child_->WaitFor(exited || woken ? absl::ZeroDuration() : absl::Seconds(2));
    const std::string how =
        status.has_value() ? ChildProcess::DescribeExit(*status) : "closed its stdout";
    std::string reason =
        absl::StrCat("understudy mcp-proxy: the MCP server ", how, " (`", command_, "`)");
    size_t failed = 0;
    bool stopping = false;
    {
      absl::MutexLock lock(&mu_);
      if (dead_.empty()) dead_ = reason;
      stopping = stopping_;
      failed = pending_.size();
    }
    FailPending(reason);
    Log(stopping ? LogLevel::kDebug : LogLevel::kWarning, "mcp_server_exited",
        {{"command", command_}, {"how", how}, {"pending", absl::StrCat(failed)}});
  }

  // One line the child wrote.
  void ChildLine(LineSplitter::Line line) {
    if (line.too_long) {
      Log(LogLevel::kWarning, "mcp_server_output_dropped",
          {{"command", command_}, {"reason", "a line longer than 16 MiB"}});
      return;
    }
    if (absl::StripAsciiWhitespace(line.text).empty()) return;
    absl::StatusOr<jsonrpc::Message> m = jsonrpc::ParseMessage(line.text, "message");
    if (!m.ok()) {
      Log(LogLevel::kWarning, "mcp_server_output_dropped",
          {{"command", command_},
           {"reason", std::string(m.status().message())},
           {"line", validation::Shorten(validation::SanitizeUtf8(line.text), 200)}});
      return;
    }
    switch (m->kind) {
      case jsonrpc::Message::Kind::kRequest: {
        Log(LogLevel::kWarning, "mcp_server_request_refused",
            {{"command", command_},
             {"method", m->method},
             {"reason", "understudy mcp-proxy does not relay server-to-client requests"}});
        absl::MutexLock lock(&mu_);
        replies_.push_back(
            jsonrpc::ErrorResponse(m->id, jsonrpc::kMethodNotFound,
                               "understudy mcp-proxy does not relay server-to-client requests"));
        return;
      }
      case jsonrpc::Message::Kind::kResponse: {
        absl::MutexLock lock(&mu_);
        const std::string id = jsonrpc::IdText(*m);
        if (id == kInitId && awaiting_init_) {
          awaiting_init_ = false;
          init_answered_ = true;
          return;
        }
        const auto it = pending_.find(id);
        if (it == pending_.end()) {
          Log(LogLevel::kDebug, "mcp_server_response_dropped", {{"command", command_}, {"id", id}});
          return;
        }
        SendEvent(it->second, line.text);
        it->second.out->End();
        pending_.erase(it);
        return;
      }
      case jsonrpc::Message::Kind::kNotification: {
        absl::MutexLock lock(&mu_);
        const Json token_json = mcp::ProgressTokenOf(*m);
        const std::string token = token_json.is_null() ? "" : provider::DumpJson(token_json);
        Pending* target = nullptr;
        for (auto& [id, pending] : pending_) {
          if (!token.empty()) {
            if (pending.progress_token == token) target = &pending;
          } else if (target == nullptr || pending.seq < target->seq) {
            target = &pending;
          }
        }
        if (target == nullptr) {
          Log(LogLevel::kDebug, "mcp_server_notification_dropped",
              {{"command", command_}, {"method", m->method}});
          return;
        }
        SendEvent(*target, line.text);
        return;
      }
    }
  }

  static void SendEvent(Pending& pending, absl::string_view text) {
    if (!pending.streaming) {
      pending.out->StartStream(
          200, {{"content-type", "text/event-stream"}, {"cache-control", "no-cache"}});
      pending.streaming = true;
    }
    pending.out->Write(absl::StrCat("event: message\ndata: ", text, "\n\n"));
  }

  // Answers every pending request with `reason`: 502, or a broken-off
  // stream when its head is already sent.
  void FailPending(const std::string& reason) {
    std::map<std::string, Pending> failed;
    {
      absl::MutexLock lock(&mu_);
      failed.swap(pending_);
    }
    for (auto& [id, pending] : failed) Fail(pending, reason);
  }

  void FailOne(const std::string& id, const std::string& reason) {
    Pending pending;
    {
      absl::MutexLock lock(&mu_);
      const auto it = pending_.find(id);
      if (it == pending_.end()) return;
      pending = std::move(it->second);
      pending_.erase(it);
    }
    Fail(pending, reason);
  }

  static void Fail(Pending& pending, const std::string& reason) {
    if (pending.streaming) {
      pending.out->Abort();
      return;
    }
    pending.out->Respond(502, {{"content-type", "application/json"}},
                         jsonrpc::ErrorResponse(pending.id, jsonrpc::kInternalError, reason));
  }

  const StdioBridgeOptions options_;
  const std::string command_;  // For messages.
  const std::unique_ptr<ChildProcess> child_;
  std::unique_ptr<service::HttpServer> server_;
  WakePipe writer_wake_;  // Stops the writer (Shutdown).
  WakePipe reader_wake_;  // Stops the reader (Shutdown, once the child is ended).
  std::thread writer_;
  std::thread reader_;
  bool shut_down_ = false;  // Shutdown's own; not concurrent with itself.

  absl::Mutex mu_;
  std::map<std::string, Pending> pending_ ABSL_GUARDED_BY(mu_);  // By id (JSON text).
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Outgoing> queue_ ABSL_GUARDED_BY(mu_);
  // Answers to the child's own requests: written before anything queued.
  std::deque<std::string> replies_ ABSL_GUARDED_BY(mu_);
  bool awaiting_init_ ABSL_GUARDED_BY(mu_) = false;
  bool init_answered_ ABSL_GUARDED_BY(mu_) = false;
  // Why the child takes no more messages (a whole error message); "".
  std::string dead_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

absl::StatusOr<std::unique_ptr<StdioBridge>> StdioBridge::Start(StdioBridgeOptions options) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Spawn(options.command);
  if (!child.ok()) return child.status();
  const pid_t pid = (*child)->pid();
  const std::string command = ShellQuoted(options.command);
  auto impl = std::make_unique<Impl>(std::move(options), std::move(*child));
  absl::Status listening = impl->Listen();
  if (!listening.ok()) return listening;
  auto bridge = std::unique_ptr<StdioBridge>(new StdioBridge(std::move(impl)));
  Log(LogLevel::kInfo, "mcp_server_started",
      {{"command", command}, {"pid", absl::StrCat(pid)}, {"url", bridge->url()}});
  return bridge;
}

StdioBridge::StdioBridge(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)), url_(absl::StrCat("http://127.0.0.1:", impl_->port(), "/mcp")) {}

StdioBridge::~StdioBridge() { impl_->Shutdown(absl::Seconds(2)); }

pid_t StdioBridge::pid() const { return impl_->pid(); }

void StdioBridge::Shutdown(absl::Duration grace) { impl_->Shutdown(grace); }

}  // namespace cli
}  // namespace understudy
