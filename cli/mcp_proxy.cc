#include "cli/mcp_proxy.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/log.h"
#include "nlohmann/json.hpp"
#include "recorder/http_upstream.h"
#include "service/access.h"
#include "service/http_server.h"
#include "validation/json_bounds.h"
#include "validation/utf8.h"

extern char** environ;

namespace understudy {
namespace cli {
namespace {

using Json = nlohmann::json;

// Where a ParseMcpMessage failure keeps the JSON-RPC code to answer with.
constexpr char kJsonRpcCodeUrl[] = "understudy.dev/jsonrpc-code";
// The id of the initialize the bridge sends for the agent (see
// StdioBridgeOptions::init_state); not a number, so it cannot clash with the
// ids agents count up from.
constexpr char kInitId[] = "\"understudy-init\"";
// At most this much of an error answer's body is kept (its first 200 bytes
// are quoted).
constexpr size_t kMaxErrorBodyBytes = 64 << 10;

std::string ErrnoText(int error) { return std::strerror(error); }

absl::Status InvalidMessage(int code, absl::string_view message) {
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kJsonRpcCodeUrl, absl::Cord(absl::StrCat(code)));
  return status;
}

// poll()'s timeout for `d`: -1 for infinite, rounded up to whole ms.
int PollMs(absl::Duration d) {
  if (d == absl::InfiniteDuration()) return -1;
  if (d <= absl::ZeroDuration()) return 0;
  const int64_t ms = absl::ToInt64Milliseconds(d + absl::Microseconds(999));
  return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

// A self-pipe: Wake makes read_fd() readable for good, so that threads
// blocked in poll() on it return.
class WakePipe {
 public:
  WakePipe() {
    if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) fds_[0] = fds_[1] = -1;
  }
  ~WakePipe() {
    for (int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
  }
  WakePipe(const WakePipe&) = delete;
  WakePipe& operator=(const WakePipe&) = delete;

  int read_fd() const { return fds_[0]; }
  void Wake() {
    const char byte = 1;
    while (::write(fds_[1], &byte, 1) < 0 && errno == EINTR) {
    }
  }

 private:
  int fds_[2];
};

// Writes all of `pieces` to `fd` (blocking or not), giving up when `wake`
// becomes readable. At most PIPE_BUF bytes go in one write after poll()
// said the descriptor is writable, so that a blocking pipe never blocks the
// thread past a wake. UNAVAILABLE with the cause on failure, CANCELLED on a
// wake.
absl::Status WriteFully(int fd, std::vector<absl::string_view> pieces, int wake) {
  size_t i = 0;
  while (i < pieces.size()) {
    if (pieces[i].empty()) {
      ++i;
      continue;
    }
    pollfd fds[2] = {{fd, POLLOUT, 0}, {wake, POLLIN, 0}};
    const int ready = ::poll(fds, wake >= 0 ? 2 : 1, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(ErrnoText(errno));
    }
    if (wake >= 0 && (fds[1].revents & POLLIN) != 0) return absl::CancelledError("stopped");
    if ((fds[0].revents & (POLLERR | POLLNVAL)) != 0 && (fds[0].revents & POLLOUT) == 0) {
      return absl::UnavailableError("the other end is closed");
    }
    // Gather the pieces into one write of at most PIPE_BUF bytes.
    iovec iov[8];
    int n = 0;
    size_t budget = PIPE_BUF;
    for (size_t j = i; j < pieces.size() && n < 8 && budget > 0; ++j) {
      const size_t take = std::min(budget, pieces[j].size());
      iov[n].iov_base = const_cast<char*>(pieces[j].data());
      iov[n].iov_len = take;
      budget -= take;
      ++n;
    }
    const ssize_t written = ::writev(fd, iov, n);
    if (written < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return absl::UnavailableError(ErrnoText(errno));
    }
    size_t left = static_cast<size_t>(written);
    while (left > 0 && i < pieces.size()) {
      const size_t take = std::min(left, pieces[i].size());
      pieces[i].remove_prefix(take);
      left -= take;
      if (pieces[i].empty()) ++i;
    }
  }
  return absl::OkStatus();
}

std::string ShellQuoted(const std::vector<std::string>& argv) {
  std::vector<std::string> parts;
  for (const std::string& a : argv) {
    const bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
      return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
             std::strchr("@%+=:,./_-", c) != nullptr;
    });
    parts.push_back(plain ? a : absl::StrCat("'", absl::StrReplaceAll(a, {{"'", "'\\''"}}), "'"));
  }
  // Short enough to leave room, in a message cut at 200 bytes, for what
  // happened to it.
  return validation::Shorten(absl::StrJoin(parts, " "), 80);
}

bool IsEventStream(absl::string_view content_type) {
  return absl::StartsWithIgnoreCase(absl::StripLeadingAsciiWhitespace(content_type),
                                    "text/event-stream");
}

// True for a JSON-RPC response (id, and result or error; no method).
bool IsResponse(const Json& j) {
  return j.is_object() && j.contains("id") && !j.contains("method") &&
         (j.contains("result") || j.contains("error"));
}

}  // namespace

// ---------------------------------------------------------------------------
// Framing

LineSplitter::LineSplitter(size_t max_line_bytes) : max_(max_line_bytes) {}

void LineSplitter::Feed(absl::string_view data, std::vector<Line>* lines) {
  while (!data.empty()) {
    const size_t newline = data.find('\n');
    const absl::string_view piece = data.substr(0, newline);
    if (discarding_) {
      if (newline == absl::string_view::npos) return;
      lines->push_back(Line{"", true});
      discarding_ = false;
      data.remove_prefix(newline + 1);
      continue;
    }
    // One byte of slack for a '\r' that the '\n' may still follow.
    if (partial_.size() + piece.size() > max_ + 1) {
      partial_.clear();
      partial_.shrink_to_fit();
      if (newline == absl::string_view::npos) {
        discarding_ = true;
        return;
      }
      lines->push_back(Line{"", true});
      data.remove_prefix(newline + 1);
      continue;
    }
    partial_.append(piece.data(), piece.size());
    if (newline == absl::string_view::npos) return;
    data.remove_prefix(newline + 1);
    if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
    if (partial_.size() > max_) {
      lines->push_back(Line{"", true});
    } else {
      lines->push_back(Line{std::move(partial_), false});
    }
    partial_.clear();
  }
}

void LineSplitter::Finish(std::vector<Line>* lines) {
  if (discarding_) {
    lines->push_back(Line{"", true});
    discarding_ = false;
    return;
  }
  if (partial_.empty()) return;
  if (partial_.back() == '\r') partial_.pop_back();
  lines->push_back(partial_.size() > max_ ? Line{"", true} : Line{std::move(partial_), false});
  partial_.clear();
}

// ---------------------------------------------------------------------------
// Server-sent events

void SseParser::Feed(absl::string_view chunk, const EventFn& on_event) {
  while (!chunk.empty()) {
    if (after_cr_) {
      after_cr_ = false;
      if (chunk.front() == '\n') {
        chunk.remove_prefix(1);
        continue;
      }
    }
    const size_t end = chunk.find_first_of("\r\n");
    if (end == absl::string_view::npos) {
      line_.append(chunk.data(), chunk.size());
      return;
    }
    line_.append(chunk.data(), end);
    after_cr_ = chunk[end] == '\r';
    chunk.remove_prefix(end + 1);
    std::string line = std::move(line_);
    line_.clear();
    Line(line, on_event);
  }
}

void SseParser::Finish(const EventFn& on_event) {
  if (!line_.empty()) {
    std::string line = std::move(line_);
    line_.clear();
    Line(line, on_event);
  }
  after_cr_ = false;
  Line("", on_event);
}

void SseParser::Line(absl::string_view line, const EventFn& on_event) {
  if (line.empty()) {
    if (has_data_) {
      std::string data = std::move(data_);
      data_.clear();
      has_data_ = false;
      on_event(std::move(data));
    }
    return;
  }
  if (line.front() == ':') return;  // A comment (keep-alive).
  const size_t colon = line.find(':');
  const absl::string_view field = line.substr(0, colon);
  absl::string_view value;
  if (colon != absl::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field != "data") return;  // event, id, retry: nothing the proxy uses.
  if (has_data_) data_.push_back('\n');
  data_.append(value.data(), value.size());
  has_data_ = true;
}

// ---------------------------------------------------------------------------
// Messages

absl::StatusOr<McpMessage> ParseMcpMessage(absl::string_view text) {
  absl::StatusOr<Json> parsed = validation::ParseJson<Json>(text, "message");
  if (!parsed.ok()) return InvalidMessage(kJsonRpcParseError, parsed.status().message());
  const Json& j = *parsed;
  if (j.is_array()) {
    return InvalidMessage(kJsonRpcInvalidRequest,
                          "message: a JSON array (a batch); batches are not supported, send one "
                          "message per line");
  }
  if (!j.is_object()) {
    return InvalidMessage(kJsonRpcInvalidRequest,
                          absl::StrCat("message: expected a JSON-RPC object, got ", j.type_name()));
  }
  McpMessage m;
  m.text = std::string(text);
  const auto id = j.find("id");
  if (id != j.end() && !id->is_string() && !id->is_number() && !id->is_null()) {
    return InvalidMessage(kJsonRpcInvalidRequest, "message: id must be a string or a number");
  }
  const auto method = j.find("method");
  if (method != j.end()) {
    if (!method->is_string()) {
      return InvalidMessage(kJsonRpcInvalidRequest, "message: method must be a string");
    }
    m.method = method->get<std::string>();
    const auto params = j.find("params");
    const bool has_params = params != j.end() && params->is_object();
    if (id != j.end()) {
      m.kind = McpMessageKind::kRequest;
      m.id = id->dump();
      if (has_params) {
        const auto meta = params->find("_meta");
        if (meta != params->end() && meta->is_object()) {
          const auto token = meta->find("progressToken");
          if (token != meta->end()) m.progress_token = token->dump();
        }
      }
    } else {
      m.kind = McpMessageKind::kNotification;
      if (has_params && m.method == "notifications/progress") {
        const auto token = params->find("progressToken");
        if (token != params->end()) m.progress_token = token->dump();
      }
    }
    return m;
  }
  if (IsResponse(j)) {
    m.kind = McpMessageKind::kResponse;
    m.id = id->dump();
    return m;
  }
  return InvalidMessage(kJsonRpcInvalidRequest,
                        "message: neither a request (method and id), a notification (method) nor "
                        "a response (id, and result or error)");
}

int JsonRpcErrorCode(const absl::Status& status) {
  const absl::optional<absl::Cord> payload = status.GetPayload(kJsonRpcCodeUrl);
  int code = 0;
  if (payload.has_value() && absl::SimpleAtoi(std::string(*payload), &code)) return code;
  return kJsonRpcInternalError;
}

std::string JsonRpcErrorResponse(absl::string_view id_json, int code, absl::string_view message) {
  Json id = id_json.empty() ? Json(nullptr) : validation::ParseJsonOrDiscarded<Json>(id_json);
  if (id.is_discarded()) id = nullptr;
  nlohmann::ordered_json out;
  out["jsonrpc"] = "2.0";
  out["id"] = id;
  out["error"]["code"] = code;
  out["error"]["message"] = validation::SanitizeUtf8(message);
  return out.dump();
}

absl::StatusOr<std::string> ToOneLine(std::string text) {
  if (text.find_first_of("\r\n") == std::string::npos) return text;
  const nlohmann::ordered_json j = validation::ParseJsonOrDiscarded<nlohmann::ordered_json>(text);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat("a message with line breaks that is not JSON: ",
                                                   validation::Shorten(text, 200)));
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string McpEndpointPath(absl::string_view run, absl::string_view name) {
  auto encode = [](absl::string_view segment) {
    std::string out;
    for (unsigned char c : segment) {
      if (absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
        out.push_back(static_cast<char>(c));
      } else {
        static constexpr char kHex[] = "0123456789ABCDEF";
        out.push_back('%');
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
      }
    }
    return out;
  };
  if (run.empty()) return absl::StrCat("/mcp/", encode(name));
  return absl::StrCat("/run/", encode(run), "/mcp/", encode(name));
}

absl::StatusOr<std::string> ResolveClientToken(const std::string& token,
                                               const std::string& token_file) {
  if (!token.empty() && !token_file.empty()) {
    return absl::InvalidArgumentError("--auth-token, --auth-token-file: give at most one");
  }
  if (!token.empty()) {
    absl::StatusOr<service::AccessToken> checked = service::AccessToken::Create(token);
    if (!checked.ok()) return checked.status();
    return token;
  }
  if (token_file.empty()) return std::string();
  // The server's own rules (mode 600, length, characters), then the same
  // first line it would take. AccessToken keeps its token to itself, so the
  // line is read again here.
  absl::StatusOr<service::AccessToken> checked = service::AccessToken::FromFile(token_file);
  if (!checked.ok()) return checked.status();
  std::ifstream in(token_file);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return absl::InvalidArgumentError(absl::StrCat("--auth-token-file ", token_file, ": empty"));
  }
  return std::string(absl::StripTrailingAsciiWhitespace(line));
}

// ---------------------------------------------------------------------------
// The child process

namespace {
// The wait status recorded when the child was reaped by someone else
// (SIGCHLD ignored): how it ended is unknown.
constexpr int kUnknownExit = -1;
}  // namespace

ChildProcess::ChildProcess(pid_t pid, int stdin_fd, int stdout_fd, int pidfd)
    : pid_(pid), stdin_fd_(stdin_fd), stdout_fd_(stdout_fd), pidfd_(pidfd) {}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    const std::vector<std::string>& argv) {
  if (argv.empty()) return absl::InvalidArgumentError("no command to run");
  int in[2];   // The child's stdin: it reads in[0], we write in[1].
  int out[2];  // The child's stdout: it writes out[1], we read out[0].
  if (::pipe2(in, O_CLOEXEC) != 0) {
    return absl::UnavailableError(absl::StrCat("pipe: ", ErrnoText(errno)));
  }
  if (::pipe2(out, O_CLOEXEC) != 0) {
    const int error = errno;
    ::close(in[0]);
    ::close(in[1]);
    return absl::UnavailableError(absl::StrCat("pipe: ", ErrnoText(error)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on the new descriptors; everything else of
  // ours (sockets of the HTTP client and server, whoever opened them) is
  // closed in the child.
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  // This process ignores SIGPIPE and may block SIGINT/SIGTERM; an ignored
  // signal stays ignored across exec, so give the child the defaults.
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&defaults, s);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, cargv[0], &actions, &attr, cargv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(in[1]);
    ::close(out[0]);
    const std::string message =
        absl::StrCat("cannot run ", ShellQuoted(argv), ": ", ErrnoText(spawned));
    if (spawned == ENOENT) return absl::NotFoundError(message);
    if (spawned == EACCES || spawned == EPERM) return absl::PermissionDeniedError(message);
    return absl::UnavailableError(message);
  }
  ::fcntl(in[1], F_SETFL, ::fcntl(in[1], F_GETFL) | O_NONBLOCK);
  ::fcntl(out[0], F_SETFL, ::fcntl(out[0], F_GETFL) | O_NONBLOCK);
  // A descriptor that polls readable when the child exits (Linux 5.3+);
  // without it, WaitFor polls.
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) ::fcntl(pidfd, F_SETFD, FD_CLOEXEC);
  return std::unique_ptr<ChildProcess>(
      new ChildProcess(pid, in[1], out[0], pidfd < 0 ? -1 : pidfd));
}

ChildProcess::~ChildProcess() {
  if (!WaitFor(absl::ZeroDuration()).has_value()) {
    Signal(SIGKILL);
    WaitFor(absl::Seconds(5));
  }
  CloseStdin();
  ::close(stdout_fd_);
  if (pidfd_ >= 0) ::close(pidfd_);
}

void ChildProcess::CloseStdin() {
  absl::MutexLock lock(&mu_);
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  stdin_fd_ = -1;
}

std::optional<int> ChildProcess::WaitFor(absl::Duration timeout) {
  const absl::Time deadline =
      timeout == absl::InfiniteDuration() ? absl::InfiniteFuture() : absl::Now() + timeout;
  absl::Duration backoff = absl::Milliseconds(1);
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (wait_status_.has_value()) return wait_status_;
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        wait_status_ = status;
        return wait_status_;
      }
      if (r < 0 && errno == ECHILD) {
        wait_status_ = kUnknownExit;
        return wait_status_;
      }
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return std::nullopt;
    if (pidfd_ >= 0) {
      pollfd p = {pidfd_, POLLIN, 0};
      ::poll(&p, 1, PollMs(left));
    } else {
      absl::SleepFor(std::min(backoff, left));
      backoff = std::min(backoff * 2, absl::Milliseconds(50));
    }
  }
}

void ChildProcess::Signal(int signal) {
  absl::MutexLock lock(&mu_);
  // Once reaped, the pid (and the group id) may belong to someone else.
  if (wait_status_.has_value()) return;
  if (::kill(-pid_, signal) != 0) ::kill(pid_, signal);
}

std::optional<int> ChildProcess::Terminate(absl::Duration grace) {
  CloseStdin();
  if (std::optional<int> status = WaitFor(grace)) return status;
  Signal(SIGTERM);
  if (std::optional<int> status = WaitFor(grace)) return status;
  Signal(SIGKILL);
  return WaitFor(std::max(grace, absl::Seconds(1)));
}

std::string ChildProcess::DescribeExit(int wait_status) {
  if (wait_status == kUnknownExit) return "exited";
  if (WIFEXITED(wait_status)) return absl::StrCat("exited with status ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* name = ::strsignal(sig);
    return absl::StrCat("killed by signal ", sig,
                        name != nullptr ? absl::StrCat(" (", name, ")") : "");
  }
  return absl::StrCat("ended (wait status ", wait_status, ")");
}

// ---------------------------------------------------------------------------
// The bridge

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
    if (server_ != nullptr) server_->Shutdown(absl::Now() + absl::Seconds(1));
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
    std::string progress_token;
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
    absl::StatusOr<McpMessage> m = ParseMcpMessage(request.body);
    absl::StatusOr<std::string> line =
        m.ok() ? ToOneLine(std::move(m->text)) : absl::StatusOr<std::string>(m.status());
    if (!line.ok()) {
      out->Respond(
          400, {{"content-type", "application/json"}},
          JsonRpcErrorResponse("null", JsonRpcErrorCode(line.status()),
                               absl::StrCat("understudy mcp-proxy: ", line.status().message())));
      return;
    }
    const bool request_kind = m->kind == McpMessageKind::kRequest;
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
      } else if (request_kind && pending_.count(m->id) != 0) {
        refusal_status = 400;
        refusal = absl::StrCat("understudy mcp-proxy: request id ", m->id, " is already pending");
      } else {
        if (request_kind) {
          seq = ++next_seq_;
          pending_[m->id] = Pending{out, m->progress_token, seq, false};
        }
        queue_.push_back(Outgoing{std::move(*line), m->method, request_kind ? m->id : ""});
      }
    }
    if (refusal_status != 0) {
      out->Respond(
          refusal_status, {{"content-type", "application/json"}},
          JsonRpcErrorResponse(request_kind ? m->id : "null", kJsonRpcInternalError, refusal));
      return;
    }
    if (!request_kind) {
      out->Respond(202, {}, "");
      return;
    }
    // Outside the lock: runs at once when the caller has already gone.
    out->OnCancel([this, id = m->id, seq] {
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
    absl::StatusOr<McpMessage> m = ParseMcpMessage(line.text);
    if (!m.ok()) {
      Log(LogLevel::kWarning, "mcp_server_output_dropped",
          {{"command", command_},
           {"reason", std::string(m.status().message())},
           {"line", validation::Shorten(validation::SanitizeUtf8(line.text), 200)}});
      return;
    }
    switch (m->kind) {
      case McpMessageKind::kRequest: {
        Log(LogLevel::kWarning, "mcp_server_request_refused",
            {{"command", command_},
             {"method", m->method},
             {"reason", "understudy mcp-proxy does not relay server-to-client requests"}});
        absl::MutexLock lock(&mu_);
        replies_.push_back(
            JsonRpcErrorResponse(m->id, kJsonRpcMethodNotFound,
                                 "understudy mcp-proxy does not relay server-to-client requests"));
        return;
      }
      case McpMessageKind::kResponse: {
        absl::MutexLock lock(&mu_);
        if (m->id == kInitId && awaiting_init_) {
          awaiting_init_ = false;
          init_answered_ = true;
          return;
        }
        const auto it = pending_.find(m->id);
        if (it == pending_.end()) {
          Log(LogLevel::kDebug, "mcp_server_response_dropped",
              {{"command", command_}, {"id", m->id}});
          return;
        }
        SendEvent(it->second, m->text);
        it->second.out->End();
        pending_.erase(it);
        return;
      }
      case McpMessageKind::kNotification: {
        absl::MutexLock lock(&mu_);
        Pending* target = nullptr;
        for (auto& [id, pending] : pending_) {
          if (!m->progress_token.empty()) {
            if (pending.progress_token == m->progress_token) target = &pending;
          } else if (target == nullptr || pending.seq < target->seq) {
            target = &pending;
          }
        }
        if (target == nullptr) {
          Log(LogLevel::kDebug, "mcp_server_notification_dropped",
              {{"command", command_}, {"method", m->method}});
          return;
        }
        SendEvent(*target, m->text);
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
    for (auto& [id, pending] : failed) Fail(id, pending, reason);
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
    Fail(id, pending, reason);
  }

  static void Fail(const std::string& id, Pending& pending, const std::string& reason) {
    if (pending.streaming) {
      pending.out->Abort();
      return;
    }
    pending.out->Respond(502, {{"content-type", "application/json"}},
                         JsonRpcErrorResponse(id, kJsonRpcInternalError, reason));
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

// ---------------------------------------------------------------------------
// The proxy

namespace {

// Runs tasks on up to `max` threads, started as needed and kept. Submit
// waits while `max` tasks are submitted and not finished.
class WorkerPool {
 public:
  explicit WorkerPool(int max) : max_(max) {}
  ~WorkerPool() { Close(); }

  // False, without running `task`, once Interrupt or Close was called.
  bool Submit(std::function<void()> task) {
    absl::MutexLock lock(&mu_);
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return interrupted_ || in_flight_ < max_;
    };
    mu_.Await(absl::Condition(&room));
    if (interrupted_) return false;
    ++in_flight_;
    tasks_.push_back(std::move(task));
    if (idle_ == 0 && static_cast<int>(threads_.size()) < max_) {
      threads_.emplace_back([this] { Work(); });
    }
    return true;
  }

  // Makes a waiting Submit, and later ones, return false.
  void Interrupt() {
    absl::MutexLock lock(&mu_);
    interrupted_ = true;
  }

  // Makes a WaitIdle in progress, and later ones, return at once.
  void Hurry() {
    absl::MutexLock lock(&mu_);
    hurry_ = true;
  }

  // True once every submitted task has finished; false when `deadline`
  // passes first or Hurry was called.
  bool WaitIdle(absl::Time deadline) {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0 || hurry_; };
    mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
    return in_flight_ == 0;
  }

  int in_flight() {
    absl::MutexLock lock(&mu_);
    return in_flight_;
  }

  // Lets the threads finish what they run and joins them.
  void Close() {
    std::vector<std::thread> threads;
    {
      absl::MutexLock lock(&mu_);
      interrupted_ = true;
      closed_ = true;
      threads.swap(threads_);
    }
    for (std::thread& t : threads) t.join();
  }

 private:
  void Work() {
    absl::MutexLock lock(&mu_);
    for (;;) {
      ++idle_;
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || !tasks_.empty(); };
      mu_.Await(absl::Condition(&ready));
      --idle_;
      if (tasks_.empty()) return;  // Closed.
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      mu_.Unlock();
      task();
      task = nullptr;
      mu_.Lock();
      --in_flight_;
    }
  }

  const int max_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool interrupted_ ABSL_GUARDED_BY(mu_) = false;
  bool hurry_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// What came back for one POST.
struct Answer {
  // The agent cancelled the request (notifications/cancelled).
  bool cancelled_by_agent = false;
  absl::Status transport;  // OK when a whole HTTP response arrived.
  int status = 0;
  std::string session_id;  // Its Mcp-Session-Id, if any.
  bool streamed = false;   // A 200 event stream: its events are written already.
  int events = 0;          // Events written.
  std::string last_event;  // The last one (the response, when all went well).
  std::string body;        // Anything else (bounded, but for a 200 JSON answer).
  bool written = false;    // A 200 JSON answer, written already.
};

}  // namespace

class McpProxy::Impl {
 public:
  Impl(McpProxyOptions options, std::unique_ptr<recorder::HttpUpstream> http)
      : options_(std::move(options)),
        path_(McpEndpointPath(options_.run, options_.name)),
        http_(std::move(http)),
        pool_(options_.max_in_flight) {}

  ~Impl() { pool_.Close(); }

  absl::Status Run() {
    absl::Status result;
    LineSplitter splitter(kMaxMcpMessageBytes);
    std::vector<LineSplitter::Line> lines;
    std::vector<char> buffer(64 << 10);
    for (;;) {
      pollfd fds[2] = {{options_.input_fd, POLLIN, 0}, {stop_.read_fd(), POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        result = absl::UnavailableError(absl::StrCat("cannot read stdin: ", ErrnoText(errno)));
        break;
      }
      if ((fds[1].revents & POLLIN) != 0) break;
      const ssize_t n = ::read(options_.input_fd, buffer.data(), buffer.size());
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
        result = absl::UnavailableError(absl::StrCat("cannot read stdin: ", ErrnoText(errno)));
        break;
      }
      if (n == 0) {
        splitter.Finish(&lines);
      } else {
        splitter.Feed(absl::string_view(buffer.data(), static_cast<size_t>(n)), &lines);
      }
      for (LineSplitter::Line& line : lines) Dispatch(std::move(line));
      lines.clear();
      if (n == 0) break;
    }
    Finish();
    absl::MutexLock lock(&out_mu_);
    if (result.ok() && !output_error_.empty()) {
      result = absl::UnavailableError(absl::StrCat("cannot write to stdout: ", output_error_));
    }
    return result;
  }

  void Stop() {
    bool second = false;
    {
      absl::MutexLock lock(&mu_);
      second = ++stops_ >= 2;
    }
    stop_.Wake();
    pool_.Interrupt();
    if (second) pool_.Hurry();
  }

 private:
  // One line from the agent.
  void Dispatch(LineSplitter::Line line) {
    if (line.too_long) {
      FailLine(kJsonRpcInvalidRequest, "understudy mcp-proxy: a message longer than 16 MiB");
      return;
    }
    if (absl::StripAsciiWhitespace(line.text).empty()) return;
    absl::StatusOr<McpMessage> m = ParseMcpMessage(line.text);
    if (!m.ok()) {
      FailLine(JsonRpcErrorCode(m.status()),
               absl::StrCat("understudy mcp-proxy: ", m.status().message()));
      return;
    }
    {
      // Remembered in the order the agent sent them, for a server started
      // later (StdioBridgeOptions::init_state).
      absl::MutexLock lock(&mu_);
      if (m->method == "initialize") init_.initialize = m->text;
      if (m->method == "notifications/initialized") init_.initialized_sent = true;
    }
    if (m->method == "notifications/cancelled") CancelRequest(*m);
    // Requests overlap; a notification (or response) is a barrier: what the
    // agent wrote after it is sent only once it has been accepted. Over
    // stdio the server reads messages in order, and order matters for
    // these: notifications/initialized must come before the requests that
    // follow it, notifications/cancelled after the request it cancels.
    auto message = std::make_shared<McpMessage>(std::move(*m));
    const bool barrier = message->kind != McpMessageKind::kRequest;
    uint64_t number = 0;
    {
      absl::MutexLock lock(&mu_);
      number = ++dispatched_;
    }
    if (!pool_.Submit([this, message, number, barrier] {
          Relay(*message, barrier ? number : 0);
          if (barrier) {
            absl::MutexLock lock(&mu_);
            barrier_done_ = number;
          }
        })) {
      {
        absl::MutexLock lock(&mu_);
        ++sent_;
      }
      Fail(*message, "understudy mcp-proxy: shutting down");
      return;
    }
    if (barrier) {
      absl::MutexLock lock(&mu_);
      auto passed = [this, number]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return barrier_done_ == number || stops_ > 0;
      };
      mu_.Await(absl::Condition(&passed));
    }
  }

  // The agent gave up on a request (its timeout, say): its POST is
  // cancelled at once, so that the server releases what it held for it
  // (a `hang`) and nothing is written for it; the notification itself is
  // passed on as any other.
  void CancelRequest(const McpMessage& m) {
    const Json j = validation::ParseJsonOrDiscarded<Json>(m.text);
    if (!j.is_object() || !j.contains("params") || !j["params"].is_object()) return;
    const auto id = j["params"].find("requestId");
    if (id == j["params"].end()) return;
    const std::string id_text = id->dump();
    std::shared_ptr<recorder::UpstreamHttpCall> handle;
    {
      absl::MutexLock lock(&mu_);
      auto it = request_calls_.find(id_text);
      if (it == request_calls_.end()) return;
      auto call = calls_.find(it->second);
      if (call == calls_.end()) return;
      handle = call->second;
      cancelled_requests_.insert(id_text);
    }
    handle->Cancel();
  }

  // Sends one message and writes what comes back. A barrier (`number` of
  // a notification or response, else 0) is sent only after every message
  // dispatched before it.
  void Relay(const McpMessage& m, uint64_t number) {
    if (number != 0) {
      absl::MutexLock lock(&mu_);
      auto earlier_sent = [this, number]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return sent_ + 1 >= number || cancelling_;
      };
      mu_.Await(absl::Condition(&earlier_sent));
    }
    std::string upstream;
    {
      absl::MutexLock lock(&bridge_mu_);
      upstream = upstream_header_;
    }
    Answer answer = Post(m, upstream, /*first=*/true);
    if (answer.transport.ok() && answer.status == 409 &&
        absl::StrContains(answer.body, "start_upstream") && upstream == "lazy") {
      absl::StatusOr<std::string> url = EnsureBridge();
      if (!url.ok()) {
        Fail(m, absl::StrCat("understudy mcp-proxy: cannot start the MCP server: ",
                             url.status().message()));
        return;
      }
      answer = Post(m, *url, /*first=*/false);
    }
    Conclude(m, answer);
  }

  void Conclude(const McpMessage& m, const Answer& answer) {
    // A request the agent cancelled gets no answer (as the protocol says).
    if (answer.cancelled_by_agent) return;
    const bool request = m.kind == McpMessageKind::kRequest;
    if (!answer.transport.ok()) {
      if (!request || Answered(answer)) {
        Log(LogLevel::kWarning, "mcp_proxy_failed",
            {{"method", m.method}, {"error", std::string(answer.transport.message())}});
        return;
      }
      Fail(m, absl::StrCat("understudy mcp-proxy: ", answer.transport.message()));
      return;
    }
    if (answer.status == 200 && answer.written) return;
    if (answer.status == 200 && answer.streamed) {
      if (request && !Answered(answer)) {
        Fail(m, "understudy mcp-proxy: the event stream ended without a response");
      }
      return;
    }
    const absl::string_view body = absl::StripAsciiWhitespace(answer.body);
    if (answer.status == 200 && !body.empty()) {
      absl::StatusOr<std::string> line = ToOneLine(std::string(body));
      if (!line.ok()) {
        if (request) Fail(m, absl::StrCat("understudy mcp-proxy: ", line.status().message()));
        return;
      }
      if (m.method == "initialize") NoteInitialize(*line);
      WriteLine(*line);
      return;
    }
    if (answer.status >= 200 && answer.status < 300) {
      if (request) {
        Fail(m, absl::StrCat("understudy mcp-proxy: ", answer.status, " without a response"));
      }
      return;
    }
    const std::string message =
        absl::StrCat("understudy mcp-proxy: ", answer.status, body.empty() ? "" : " ",
                     validation::Shorten(body, 200));
    if (request) {
      Fail(m, message);
    } else {
      Log(LogLevel::kWarning, "mcp_proxy_failed", {{"method", m.method}, {"error", message}});
    }
  }

  // Whether the answer's last event is a JSON-RPC response.
  static bool Answered(const Answer& answer) {
    if (answer.events == 0) return false;
    return IsResponse(validation::ParseJsonOrDiscarded<Json>(answer.last_event));
  }

  // Keeps the session id an answer carries (the one to an initialize
  // replaces any before), for the Mcp-Session-Id header of later requests.
  // Before the answer is written: the agent's next message may follow at
  // once.
  void NoteSession(const McpMessage* m, const std::string& session_id) {
    if (m == nullptr || session_id.empty()) return;
    absl::MutexLock lock(&mu_);
    if (session_id_.empty() || m->method == "initialize") session_id_ = session_id;
  }

  // Keeps the protocol version the server agreed on, for the
  // MCP-Protocol-Version header of later requests (Streamable HTTP). Before
  // the answer is written, as NoteSession.
  void NoteInitialize(absl::string_view response) {
    const Json j = validation::ParseJsonOrDiscarded<Json>(response);
    if (!j.is_object()) return;
    const auto result = j.find("result");
    if (result == j.end() || !result->is_object()) return;
    const auto version = result->find("protocolVersion");
    if (version == result->end() || !version->is_string()) return;
    absl::MutexLock lock(&mu_);
    protocol_version_ = version->get<std::string>();
  }

  // Starts the real server, once; concurrent callers wait for the outcome.
  // Its URL, or why it could not start.
  absl::StatusOr<std::string> EnsureBridge() {
    absl::MutexLock lock(&bridge_mu_);
    if (bridge_state_ == BridgeState::kNone) {
      bridge_state_ = BridgeState::kStarting;
      StdioBridgeOptions options;
      options.command = options_.command;
      options.init_state = [this] {
        absl::MutexLock init_lock(&mu_);
        return init_;
      };
      bridge_mu_.Unlock();
      absl::StatusOr<std::unique_ptr<StdioBridge>> bridge = StdioBridge::Start(std::move(options));
      bridge_mu_.Lock();
      if (bridge.ok()) {
        bridge_ = std::move(*bridge);
        upstream_header_ = bridge_->url();
        bridge_state_ = BridgeState::kRunning;
      } else {
        bridge_status_ = bridge.status();
        bridge_state_ = BridgeState::kFailed;
        Log(LogLevel::kError, "mcp_server_start_failed",
            {{"error", std::string(bridge.status().message())}});
      }
    } else {
      auto started = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(bridge_mu_) {
        return bridge_state_ != BridgeState::kStarting;
      };
      bridge_mu_.Await(absl::Condition(&started));
    }
    if (bridge_state_ == BridgeState::kRunning) return bridge_->url();
    return bridge_status_;
  }

  // Observes one POST: writes a 200 event stream's events as they come,
  // keeps everything else for Conclude.
  class Call final : public recorder::UpstreamHttpObserver {
   public:
    // `message` (null for a DELETE) must outlive the call.
    Call(Impl* proxy, const McpMessage* message) : proxy_(proxy), message_(message) {}

    void OnHead(int status, recorder::UpstreamHttpHeaders headers) override {
      answer_.status = status;
      std::string content_type;
      for (auto& [name, value] : headers) {
        if (name == "content-type") content_type = value;
        if (name == "mcp-session-id") answer_.session_id = value;
      }
      answer_.streamed = status == 200 && IsEventStream(content_type);
      if (status == 200) proxy_->NoteSession(message_, answer_.session_id);
    }

    void OnData(absl::string_view bytes) override {
      if (answer_.streamed) {
        sse_.Feed(bytes, [this](std::string data) { Event(std::move(data)); });
        return;
      }
      const size_t limit = answer_.status == 200 ? std::string::npos : kMaxErrorBodyBytes;
      if (answer_.body.size() < limit) {
        answer_.body.append(bytes.data(), std::min(bytes.size(), limit - answer_.body.size()));
      }
    }

    void OnDone(absl::Status status) override {
      if (answer_.streamed) sse_.Finish([this](std::string data) { Event(std::move(data)); });
      // A JSON answer is written from here rather than by the waiting
      // thread: one thread wake-up less on every call's path.
      if (status.ok() && answer_.status == 200 && !answer_.streamed && message_ != nullptr) {
        const absl::string_view body = absl::StripAsciiWhitespace(answer_.body);
        absl::StatusOr<std::string> line =
            body.empty() ? absl::InvalidArgumentError("empty") : ToOneLine(std::string(body));
        if (line.ok()) {
          if (message_->method == "initialize") proxy_->NoteInitialize(*line);
          proxy_->WriteLine(*line);
          answer_.written = true;
        }
      }
      answer_.transport = std::move(status);
      done_.Notify();
    }

    // Valid once OnDone has run.
    Answer& Wait() {
      done_.WaitForNotification();
      return answer_;
    }

   private:
    void Event(std::string data) {
      absl::StatusOr<std::string> line = ToOneLine(std::move(data));
      if (!line.ok()) {
        Log(LogLevel::kWarning, "mcp_proxy_event_dropped",
            {{"reason", std::string(line.status().message())}});
        return;
      }
      if (message_ != nullptr && message_->method == "initialize") proxy_->NoteInitialize(*line);
      proxy_->WriteLine(*line);
      ++answer_.events;
      answer_.last_event = std::move(*line);
    }

    Impl* const proxy_;
    const McpMessage* const message_;
    SseParser sse_;
    Answer answer_;
    absl::Notification done_;
  };

  recorder::UpstreamHttpHeaders Headers() {
    recorder::UpstreamHttpHeaders headers;
    absl::MutexLock lock(&mu_);
    if (!session_id_.empty()) headers.emplace_back("mcp-session-id", session_id_);
    if (!protocol_version_.empty()) headers.emplace_back("mcp-protocol-version", protocol_version_);
    if (!options_.agent.empty()) headers.emplace_back("x-understudy-agent", options_.agent);
    if (!options_.auth_token.empty()) {
      headers.emplace_back("authorization", absl::StrCat("Bearer ", options_.auth_token));
    }
    return headers;
  }

  // Sends `request` (`message`, or null) and waits for its outcome
  // (cancelled by a hurried end). `first`: the message's first POST, which
  // counts as sent (sent_) once handed to the HTTP client.
  Answer Send(recorder::UpstreamHttpRequest request, const McpMessage* message, bool first) {
    auto call = std::make_shared<Call>(this, message);
    uint64_t key = 0;
    {
      absl::MutexLock lock(&mu_);
      if (cancelling_) {
        if (first) ++sent_;
        Answer answer;
        answer.transport = absl::CancelledError("shutting down before the answer came");
        return answer;
      }
      key = ++next_call_;
    }
    std::shared_ptr<recorder::UpstreamHttpCall> handle = http_->Send(std::move(request), call);
    {
      absl::MutexLock lock(&mu_);
      if (first) ++sent_;
      if (cancelling_) {
        handle->Cancel();
      } else {
        calls_[key] = handle;
        if (message != nullptr && message->kind == McpMessageKind::kRequest) {
          request_calls_[message->id] = key;
        }
      }
    }
    Answer answer = std::move(call->Wait());
    {
      absl::MutexLock lock(&mu_);
      calls_.erase(key);
      if (message != nullptr && message->kind == McpMessageKind::kRequest) {
        auto it = request_calls_.find(message->id);
        if (it != request_calls_.end() && it->second == key) request_calls_.erase(it);
        if (cancelled_requests_.erase(message->id) > 0) {
          answer.transport = absl::CancelledError("cancelled by the agent");
          answer.cancelled_by_agent = true;
          return answer;
        }
      }
      if (absl::IsCancelled(answer.transport)) {
        answer.transport = absl::CancelledError("shutting down before the answer came");
      }
    }
    return answer;
  }

  Answer Post(const McpMessage& m, const std::string& upstream, bool first) {
    recorder::UpstreamHttpRequest request;
    request.method = "POST";
    request.path = path_;
    request.headers = {{"content-type", "application/json"},
                       {"accept", "application/json, text/event-stream"}};
    for (auto& header : Headers()) request.headers.push_back(std::move(header));
    request.headers.emplace_back("x-understudy-mcp-upstream", upstream);
    request.body = m.text;
    return Send(std::move(request), &m, first);
  }

  // The end: drain, end the session, end the real server.
  void Finish() {
    pool_.Interrupt();
    if (!pool_.WaitIdle(absl::Now() + options_.drain_timeout)) {
      Log(LogLevel::kWarning, "mcp_proxy_drain_cut",
          {{"in_flight", absl::StrCat(pool_.in_flight())}});
      {
        absl::MutexLock lock(&mu_);
        cancelling_ = true;
        for (auto& [key, call] : calls_) call->Cancel();
      }
      if (!pool_.WaitIdle(absl::Now() + absl::Seconds(2))) {
        // Writers stuck on an agent that does not read stdout any more.
        abandon_output_.Wake();
      }
    }
    bool has_session = false;
    {
      absl::MutexLock lock(&mu_);
      has_session = !session_id_.empty() && !cancelling_;
    }
    if (has_session) {
      recorder::UpstreamHttpRequest request;
      request.method = "DELETE";
      request.path = path_;
      request.headers = Headers();
      request.deadline = absl::Now() + absl::Seconds(2);
      const Answer answer = Send(std::move(request), nullptr, /*first=*/false);
      if (!answer.transport.ok() || answer.status >= 300) {
        Log(LogLevel::kWarning, "mcp_proxy_session_end_failed",
            {{"status", absl::StrCat(answer.status)},
             {"error", std::string(answer.transport.message())}});
      }
    }
    std::unique_ptr<StdioBridge> bridge;
    {
      absl::MutexLock lock(&bridge_mu_);
      auto settled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(bridge_mu_) {
        return bridge_state_ != BridgeState::kStarting;
      };
      bridge_mu_.Await(absl::Condition(&settled));
      bridge = std::move(bridge_);
      bridge_state_ = BridgeState::kFailed;
      bridge_status_ = absl::UnavailableError("shutting down");
    }
    if (bridge != nullptr) bridge->Shutdown(options_.child_grace);
    pool_.Close();
  }

  // Writes one whole line to the agent. After a failure (the agent is
  // gone) nothing more is written and the proxy stops.
  void WriteLine(absl::string_view line) {
    absl::Status s;
    {
      absl::MutexLock lock(&out_mu_);
      if (!output_error_.empty()) return;
      s = WriteFully(options_.output_fd, {line, "\n"}, abandon_output_.read_fd());
      if (!s.ok()) output_error_ = std::string(s.message());
    }
    if (!s.ok()) {
      Log(LogLevel::kError, "mcp_proxy_output_failed", {{"error", std::string(s.message())}});
      Stop();
    }
  }

  // Answers a request that got no answer; logs it either way.
  void Fail(const McpMessage& m, const std::string& message) {
    Log(LogLevel::kWarning, "mcp_proxy_failed",
        {{"method", m.method}, {"id", m.id}, {"error", message}});
    if (m.kind == McpMessageKind::kRequest) {
      WriteLine(JsonRpcErrorResponse(m.id, kJsonRpcInternalError, message));
    }
  }

  // Answers a line that is no message.
  void FailLine(int code, const std::string& message) {
    Log(LogLevel::kWarning, "mcp_proxy_bad_input",
        {{"code", absl::StrCat(code)}, {"error", message}});
    WriteLine(JsonRpcErrorResponse("null", code, message));
  }

  enum class BridgeState { kNone, kStarting, kRunning, kFailed };

  const McpProxyOptions options_;
  const std::string path_;
  const std::unique_ptr<recorder::HttpUpstream> http_;
  WakePipe stop_;            // Stop: reading ends.
  WakePipe abandon_output_;  // The agent does not read: writes give up.

  absl::Mutex out_mu_;  // One line at a time.
  std::string output_error_ ABSL_GUARDED_BY(out_mu_);

  absl::Mutex mu_;
  std::string session_id_ ABSL_GUARDED_BY(mu_);
  std::string protocol_version_ ABSL_GUARDED_BY(mu_);
  McpInitState init_ ABSL_GUARDED_BY(mu_);
  int stops_ ABSL_GUARDED_BY(mu_) = 0;
  // Messages handed to the pool; those of them whose first POST is handed
  // to the HTTP client (which sends in that order); the number of the
  // last barrier (notification or response) relayed.
  uint64_t dispatched_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t sent_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t barrier_done_ ABSL_GUARDED_BY(mu_) = 0;
  bool cancelling_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_call_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::shared_ptr<recorder::UpstreamHttpCall>> calls_ ABSL_GUARDED_BY(mu_);
  // The calls of requests in flight, by the request's id (JSON text), and
  // the requests the agent cancelled (notifications/cancelled).
  std::map<std::string, uint64_t> request_calls_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> cancelled_requests_ ABSL_GUARDED_BY(mu_);

  absl::Mutex bridge_mu_ ABSL_ACQUIRED_AFTER(mu_);
  BridgeState bridge_state_ ABSL_GUARDED_BY(bridge_mu_) = BridgeState::kNone;
  std::unique_ptr<StdioBridge> bridge_ ABSL_GUARDED_BY(bridge_mu_);
  absl::Status bridge_status_ ABSL_GUARDED_BY(bridge_mu_);
  std::string upstream_header_ ABSL_GUARDED_BY(bridge_mu_) = "lazy";

  // Last: its threads run tasks that use everything above.
  WorkerPool pool_;
};

absl::StatusOr<std::unique_ptr<McpProxy>> McpProxy::Create(McpProxyOptions options) {
  if (options.name.empty()) {
    return absl::InvalidArgumentError("--name: give the MCP server's name, e.g. --name fs");
  }
  if (options.http.empty()) {
    return absl::InvalidArgumentError(
        "no understudy HTTP address: give --http URL or set UNDERSTUDY_HTTP");
  }
  if (options.command.empty()) {
    return absl::InvalidArgumentError(
        "give the MCP server's command after --, e.g. understudy mcp-proxy --name fs -- npx "
        "@modelcontextprotocol/server-filesystem /tmp");
  }
  if (options.max_in_flight < 1) {
    return absl::InvalidArgumentError("max_in_flight: at least 1");
  }
  recorder::HttpUpstream::Options http;
  http.base_url =
      absl::StrContains(options.http, "://") ? options.http : absl::StrCat("http://", options.http);
  http.flag = "--http";
  http.max_concurrent_transfers = options.max_in_flight + 1;  // And the final DELETE.
  absl::StatusOr<std::unique_ptr<recorder::HttpUpstream>> client =
      recorder::HttpUpstream::Create(http);
  if (!client.ok()) return client.status();
  return std::unique_ptr<McpProxy>(
      new McpProxy(std::make_unique<Impl>(std::move(options), std::move(*client))));
}

McpProxy::McpProxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
McpProxy::~McpProxy() = default;

absl::Status McpProxy::Run() { return impl_->Run(); }
void McpProxy::Stop() { impl_->Stop(); }

int RunMcpProxy(const McpProxyOptions& options) {
  // SIGINT and SIGTERM reach the waiter thread below through sigwait;
  // blocked before any thread starts, so that every thread inherits it.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  absl::StatusOr<std::unique_ptr<McpProxy>> proxy = McpProxy::Create(options);
  if (!proxy.ok()) {
    std::cerr << "understudy: " << proxy.status().message() << std::endl;
    return absl::IsInvalidArgument(proxy.status()) ? 2 : 3;
  }
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    for (;;) {
      int received = 0;
      sigwait(&signals, &received);
      if (done.load()) return;
      Log(LogLevel::kInfo, "signal", {{"signal", received == SIGINT ? "SIGINT" : "SIGTERM"}});
      (*proxy)->Stop();
    }
  });
  const absl::Status status = (*proxy)->Run();
  done.store(true);
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  if (!status.ok()) {
    std::cerr << "understudy: " << status.message() << std::endl;
    return 3;
  }
  return 0;
}

}  // namespace cli
}  // namespace understudy
