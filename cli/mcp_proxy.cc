#include "cli/mcp_proxy.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/env.h"
#include "base/fd_io.h"
#include "base/log.h"
#include "base/worker_pool.h"
#include "cli/mcp_bridge.h"
#include "cli/mcp_stdio.h"
#include "provider/jsonrpc.h"
#include "provider/mcp.h"
#include "provider/sse.h"
#include "service/access.h"
#include "upstream/http_upstream.h"
#include "validation/json_bounds.h"
#include "validation/utf8.h"

namespace understudy {
namespace cli {
namespace {

namespace jsonrpc = provider::jsonrpc;
namespace mcp = provider::mcp;
using Json = provider::Json;

// At most this much of an error answer's body is kept (its first 200 bytes
// are quoted).
constexpr size_t kMaxErrorBodyBytes = 64 << 10;

bool IsEventStream(absl::string_view content_type) {
  return absl::StartsWithIgnoreCase(absl::StripLeadingAsciiWhitespace(content_type),
                                    "text/event-stream");
}

// One message from the agent: parsed (provider/mcp.h), and the line as the
// agent wrote it, which is what is relayed.
struct AgentMessage {
  jsonrpc::Message rpc;
  std::string id;  // jsonrpc::IdText(rpc): "" for a notification.
  std::string text;
};

}  // namespace

// ---------------------------------------------------------------------------
// Addresses and credentials

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
// The proxy

namespace {

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
  Impl(McpProxyOptions options, std::unique_ptr<upstream::HttpUpstream> http)
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
      FailLine(jsonrpc::kInvalidRequest, "understudy mcp-proxy: a message longer than 16 MiB");
      return;
    }
    if (absl::StripAsciiWhitespace(line.text).empty()) return;
    absl::StatusOr<jsonrpc::Message> parsed = jsonrpc::ParseMessage(line.text, "message");
    if (!parsed.ok()) {
      FailLine(jsonrpc::ErrorCodeFor(parsed.status()),
               absl::StrCat("understudy mcp-proxy: ", parsed.status().message()));
      return;
    }
    auto message = std::make_shared<AgentMessage>();
    message->id = jsonrpc::IdText(*parsed);
    message->rpc = std::move(*parsed);
    message->text = std::move(line.text);
    const AgentMessage& m = *message;
    {
      // Remembered in the order the agent sent them, for a server started
      // later (StdioBridgeOptions::init_state).
      absl::MutexLock lock(&mu_);
      if (m.rpc.method == "initialize") init_.initialize = m.text;
      if (m.rpc.method == "notifications/initialized") init_.initialized_sent = true;
    }
    if (m.rpc.method == "notifications/cancelled") CancelRequest(m);
    // Requests overlap; a notification (or response) is a barrier: what the
    // agent wrote after it is sent only once it has been accepted. Over
    // stdio the server reads messages in order, and order matters for
    // these: notifications/initialized must come before the requests that
    // follow it, notifications/cancelled after the request it cancels.
    const bool barrier = message->rpc.kind != jsonrpc::Message::Kind::kRequest;
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
  void CancelRequest(const AgentMessage& m) {
    if (!m.rpc.params.is_object()) return;
    const auto id = m.rpc.params.find("requestId");
    if (id == m.rpc.params.end()) return;
    const std::string id_text = provider::DumpJson(*id);
    std::shared_ptr<upstream::UpstreamHttpCall> handle;
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
  void Relay(const AgentMessage& m, uint64_t number) {
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
        mcp::ProxySignalOf(answer.body) == mcp::ProxySignal::kStartUpstream && upstream == "lazy") {
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

  void Conclude(const AgentMessage& m, const Answer& answer) {
    // A request the agent cancelled gets no answer (as the protocol says).
    if (answer.cancelled_by_agent) return;
    const bool request = m.rpc.kind == jsonrpc::Message::Kind::kRequest;
    if (!answer.transport.ok()) {
      if (!request || Answered(answer)) {
        Log(LogLevel::kWarning, "mcp_proxy_failed",
            {{"method", m.rpc.method}, {"error", std::string(answer.transport.message())}});
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
      if (m.rpc.method == "initialize") NoteInitialize(*line);
      WriteLine(*line);
      return;
    }
    if (answer.status >= 200 && answer.status < 300) {
      if (request) {
        Fail(m, absl::StrCat("understudy mcp-proxy: ", answer.status, " without a response"));
      }
      return;
    }
    if (request && answer.status >= 400 && answer.status < 500 && IsErrorFor(m, body)) {
      // understudy refused the request with a JSON-RPC error for it (an
      // unknown run, 404): passed on as it is, its code and message intact.
      absl::StatusOr<std::string> line = ToOneLine(std::string(body));
      if (line.ok()) {
        Log(LogLevel::kWarning, "mcp_proxy_failed",
            {{"method", m.rpc.method}, {"status", absl::StrCat(answer.status)}});
        WriteLine(*line);
        return;
      }
    }
    const std::string message =
        absl::StrCat("understudy mcp-proxy: ", answer.status, body.empty() ? "" : " ",
                     validation::Shorten(body, 200));
    if (request) {
      Fail(m, message);
    } else {
      Log(LogLevel::kWarning, "mcp_proxy_failed", {{"method", m.rpc.method}, {"error", message}});
    }
  }

  // Whether `body` is a JSON-RPC error response to request `m`.
  static bool IsErrorFor(const AgentMessage& m, absl::string_view body) {
    const absl::StatusOr<jsonrpc::Message> parsed = jsonrpc::ParseMessage(body, "answer");
    return parsed.ok() && parsed->kind == jsonrpc::Message::Kind::kResponse && parsed->id == m.rpc.id &&
           jsonrpc::OutcomeOf(*parsed).is_error;
  }

  // Whether the answer's last event is a JSON-RPC response.
  static bool Answered(const Answer& answer) {
    if (answer.events == 0) return false;
    const absl::StatusOr<jsonrpc::Message> last = jsonrpc::ParseMessage(answer.last_event, "answer");
    return last.ok() && last->kind == jsonrpc::Message::Kind::kResponse;
  }

  // Keeps the session id an answer carries (the one to an initialize
  // replaces any before), for the Mcp-Session-Id header of later requests.
  // Before the answer is written: the agent's next message may follow at
  // once.
  void NoteSession(const AgentMessage* m, const std::string& session_id) {
    if (m == nullptr || session_id.empty()) return;
    absl::MutexLock lock(&mu_);
    if (session_id_.empty() || m->rpc.method == "initialize") session_id_ = session_id;
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
  class Call final : public upstream::UpstreamHttpObserver {
   public:
    // `message` (null for a DELETE) must outlive the call.
    Call(Impl* proxy, const AgentMessage* message) : proxy_(proxy), message_(message) {}

    void OnHead(int status, upstream::UpstreamHttpHeaders headers) override {
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
        Events(sse_.Feed(bytes));
        return;
      }
      const size_t limit = answer_.status == 200 ? std::string::npos : kMaxErrorBodyBytes;
      if (answer_.body.size() < limit) {
        answer_.body.append(bytes.data(), std::min(bytes.size(), limit - answer_.body.size()));
      }
    }

    void OnDone(absl::Status status) override {
      if (answer_.streamed) Events(sse_.Finish());
      // A JSON answer is written from here rather than by the waiting
      // thread: one thread wake-up less on every call's path.
      if (status.ok() && answer_.status == 200 && !answer_.streamed && message_ != nullptr) {
        const absl::string_view body = absl::StripAsciiWhitespace(answer_.body);
        absl::StatusOr<std::string> line =
            body.empty() ? absl::InvalidArgumentError("empty") : ToOneLine(std::string(body));
        if (line.ok()) {
          if (message_->rpc.method == "initialize") proxy_->NoteInitialize(*line);
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
    // Writes each event's data. An event too big for the parser ends the
    // stream's events (the request then gets an error, not a partial line).
    void Events(absl::StatusOr<std::vector<provider::SseEvent>> events) {
      if (!events.ok()) {
        if (!sse_failed_) {
          sse_failed_ = true;
          Log(LogLevel::kWarning, "mcp_proxy_event_dropped",
              {{"reason", std::string(events.status().message())}});
        }
        return;
      }
      for (provider::SseEvent& event : *events) Event(std::move(event.data));
    }

    void Event(std::string data) {
      absl::StatusOr<std::string> line = ToOneLine(std::move(data));
      if (!line.ok()) {
        Log(LogLevel::kWarning, "mcp_proxy_event_dropped",
            {{"reason", std::string(line.status().message())}});
        return;
      }
      if (message_ != nullptr && message_->rpc.method == "initialize")
        proxy_->NoteInitialize(*line);
      if (answer_.events > 0 && IsResponse(*line)) proxy_->AwaitRead();
      proxy_->WriteLine(*line);
      ++answer_.events;
      answer_.last_event = std::move(*line);
    }

    static bool IsResponse(absl::string_view line) {
      const absl::StatusOr<jsonrpc::Message> parsed = jsonrpc::ParseMessage(line, "event");
      return parsed.ok() && parsed->kind == jsonrpc::Message::Kind::kResponse;
    }

    Impl* const proxy_;
    const AgentMessage* const message_;
    // An event holds one message, framed by its field names.
    provider::SseParser sse_{2 * kMaxMcpMessageBytes};
    bool sse_failed_ = false;
    Answer answer_;
    absl::Notification done_;
  };

  upstream::UpstreamHttpHeaders Headers() {
    upstream::UpstreamHttpHeaders headers;
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
  Answer Send(upstream::UpstreamHttpRequest request, const AgentMessage* message, bool first) {
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
    std::shared_ptr<upstream::UpstreamHttpCall> handle = http_->Send(std::move(request), call);
    {
      absl::MutexLock lock(&mu_);
      if (first) ++sent_;
      if (cancelling_) {
        handle->Cancel();
      } else {
        calls_[key] = handle;
        if (message != nullptr && message->rpc.kind == jsonrpc::Message::Kind::kRequest) {
          request_calls_[message->id] = key;
        }
      }
    }
    Answer answer = std::move(call->Wait());
    {
      absl::MutexLock lock(&mu_);
      calls_.erase(key);
      if (message != nullptr && message->rpc.kind == jsonrpc::Message::Kind::kRequest) {
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

  Answer Post(const AgentMessage& m, const std::string& upstream, bool first) {
    upstream::UpstreamHttpRequest request;
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
    if (!pool_.WaitIdle(Env::Default()->Now() + options_.drain_timeout)) {
      Log(LogLevel::kWarning, "mcp_proxy_drain_cut",
          {{"in_flight", absl::StrCat(pool_.in_flight())}});
      {
        absl::MutexLock lock(&mu_);
        cancelling_ = true;
        for (auto& [key, call] : calls_) call->Cancel();
      }
      if (!pool_.WaitIdle(Env::Default()->Now() + absl::Seconds(2))) {
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
      upstream::UpstreamHttpRequest request;
      request.method = "DELETE";
      request.path = path_;
      request.headers = Headers();
      request.deadline = Env::Default()->Now() + absl::Seconds(2);
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

  // Waits until the agent has read every line written so far, up to
  // read_wait, so that the next line reaches it in a read of its own. Not
  // under out_mu_: other answers' lines go on meanwhile.
  void AwaitRead() {
    const absl::Status read =
        WaitUntilRead(options_.output_fd, Env::Default()->Now() + options_.read_wait,
                      abandon_output_.read_fd());
    if (absl::IsDeadlineExceeded(read)) {
      Log(LogLevel::kDebug, "mcp_proxy_agent_slow", {{"waited", std::string(read.message())}});
    }
  }

  // Answers a request that got no answer; logs it either way.
  void Fail(const AgentMessage& m, const std::string& message) {
    Log(LogLevel::kWarning, "mcp_proxy_failed",
        {{"method", m.rpc.method}, {"id", m.id}, {"error", message}});
    if (m.rpc.kind == jsonrpc::Message::Kind::kRequest) {
      WriteLine(jsonrpc::ErrorResponse(m.rpc.id, jsonrpc::kInternalError, message));
    }
  }

  // Answers a line that is no message.
  void FailLine(int code, const std::string& message) {
    Log(LogLevel::kWarning, "mcp_proxy_bad_input",
        {{"code", absl::StrCat(code)}, {"error", message}});
    WriteLine(jsonrpc::ErrorResponse(nullptr, code, message));
  }

  enum class BridgeState { kNone, kStarting, kRunning, kFailed };

  const McpProxyOptions options_;
  const std::string path_;
  const std::unique_ptr<upstream::HttpUpstream> http_;
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
  std::map<uint64_t, std::shared_ptr<upstream::UpstreamHttpCall>> calls_ ABSL_GUARDED_BY(mu_);
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
  upstream::HttpUpstream::Options http;
  http.base_url =
      absl::StrContains(options.http, "://") ? options.http : absl::StrCat("http://", options.http);
  http.flag = "--http";
  http.max_concurrent_transfers = options.max_in_flight + 1;  // And the final DELETE.
  absl::StatusOr<std::unique_ptr<upstream::HttpUpstream>> client =
      upstream::HttpUpstream::Create(http);
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
