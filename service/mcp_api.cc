#include "service/mcp_api.h"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/http_status.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "provider/derived_id.h"
#include "provider/jsonrpc.h"
#include "provider/mcp.h"
#include "provider/sse.h"
#include "service/jsonrpc_http.h"
#include "validation/utf8.h"

namespace understudy {
namespace service {

namespace jsonrpc = provider::jsonrpc;
namespace mcp = provider::mcp;
using provider::Json;

namespace {

constexpr size_t kMaxSessions = 10000;
constexpr size_t kMaxProxyUpstreams = 64;

// Loopback only: a request header must never make the server call another
// machine.
bool IsLoopbackUrl(absl::string_view url) {
  for (absl::string_view prefix : {"http://127.0.0.1:", "http://[::1]:", "http://localhost:"}) {
    if (absl::StartsWith(url, prefix)) return true;
  }
  return false;
}

// Client headers passed to the upstream: the MCP ones and credentials, not
// understudy's or the session id (the upstream has its own).
upstream::UpstreamHttpHeaders ForwardHeaders(const HttpRequest& request) {
  upstream::UpstreamHttpHeaders out =
      ForwardedHeaders(request, {"accept", "content-type", "mcp-session-id"});
  out.emplace_back("content-type", kJsonType);
  out.emplace_back("accept", "application/json, text/event-stream");
  return out;
}

// The headers an answer in session `session_id` carries.
HttpHeaders SessionHeaders(const std::string& session_id) {
  if (session_id.empty()) return {};
  return {{"mcp-session-id", session_id}};
}

}  // namespace

struct McpApi::Session {
  std::string run;
  std::string name;
  absl::Mutex mu;
  // The upstream's own session id, once it gave one.
  std::string upstream_id ABSL_GUARDED_BY(mu);
  // The client's initialize, to open an upstream session when the
  // initialize itself was answered from the recording (new mode). Kept in
  // memory only.
  std::string initialize_body ABSL_GUARDED_BY(mu);
  bool upstream_initialized ABSL_GUARDED_BY(mu) = false;
};

// A decided request waiting for its answer.
struct McpApi::Pending {
  engine::CallInfo call;
  std::string name;
  HttpRequest request;
  jsonrpc::Message message;
  std::string stored_body;
  engine::Decision decision;
  std::shared_ptr<Session> session;
  // The session id the answer carries (a new one for initialize).
  std::string session_id;
  bool event_stream = false;
};

McpApi::McpApi(McpApiOptions options) : options_(std::move(options)) {
  if (options_.env == nullptr) options_.env = Env::Default();
  if (options_.redactor == nullptr) options_.redactor = &default_redactor_;
}

McpApi::~McpApi() = default;

std::string McpApi::ErrorBody(absl::string_view message) {
  return jsonrpc::ErrorResponse(Json(), jsonrpc::kInvalidRequest, message);
}

std::shared_ptr<McpApi::Session> McpApi::FindSession(absl::string_view id) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

std::string McpApi::NewSession(const std::string& run, const std::string& name,
                               std::string initialize_body) {
  absl::MutexLock lock(&mu_);
  const std::string key = absl::StrCat(run, "\x1f", name);
  const int64_t n = ++session_counts_[key];
  std::string id = provider::DerivedId("mcp-", absl::StrCat(key, "\x1f", n));
  if (sessions_.size() >= kMaxSessions) sessions_.erase(sessions_.begin());
  auto session = std::make_shared<Session>();
  session->run = run;
  session->name = name;
  {
    absl::MutexLock session_lock(&session->mu);
    session->initialize_body = std::move(initialize_body);
  }
  sessions_[id] = std::move(session);
  return id;
}

absl::StatusOr<McpUpstream> McpApi::UpstreamFor(const std::string& name,
                                                const HttpRequest& request) {
  const absl::string_view named = request.Header("x-understudy-mcp-upstream");
  if (!named.empty() && named != "lazy") {
    if (!IsLoopbackUrl(named)) {
      return absl::InvalidArgumentError(
          "X-Understudy-Mcp-Upstream: only a loopback http:// URL (127.0.0.1, [::1], "
          "localhost) may be named");
    }
    US_ASSIGN_OR_RETURN(auto split, SplitUpstreamUrl(named, "X-Understudy-Mcp-Upstream"));
    absl::MutexLock lock(&mu_);
    auto it = proxy_upstreams_.find(split.first);
    if (it == proxy_upstreams_.end()) {
      if (proxy_upstreams_.size() >= kMaxProxyUpstreams) {
        return absl::ResourceExhaustedError(
            absl::StrCat("more than ", kMaxProxyUpstreams, " mcp-proxy upstreams at once"));
      }
      upstream::HttpUpstream::Options http_options;
      http_options.base_url = split.first;
      http_options.flag = "X-Understudy-Mcp-Upstream";
      US_ASSIGN_OR_RETURN(std::unique_ptr<upstream::HttpUpstream> made,
                          upstream::HttpUpstream::Create(http_options));
      it = proxy_upstreams_.emplace(split.first, std::move(made)).first;
    }
    return McpUpstream{it->second.get(), split.second};
  }
  auto it = options_.upstreams.find(name);
  if (it == options_.upstreams.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no upstream for MCP server \"", name, "\" to forward to: start the server with "
        "--mcp-upstream ", name, "=URL, or run the server's command through "
        "`understudy mcp-proxy --name ", name, " -- COMMAND`"));
  }
  return it->second;
}

void McpApi::EndSession(const std::string& name, const HttpRequest& request,
                        const std::string& session_header, HttpResponder& out) {
  std::shared_ptr<Session> session = FindSession(session_header);
  if (session == nullptr) {
    return RespondJson(out, 404, ErrorBody(absl::StrCat("unknown Mcp-Session-Id \"",
                                                        absl::CHexEscape(session_header.substr(0, 100)), "\"")));
  }
  std::string upstream_id;
  {
    absl::MutexLock lock(&session->mu);
    upstream_id = session->upstream_id;
  }
  {
    absl::MutexLock lock(&mu_);
    sessions_.erase(session_header);
  }
  if (!upstream_id.empty()) {
    absl::StatusOr<McpUpstream> upstream = UpstreamFor(name, request);
    if (upstream.ok()) {
      // Fire and forget: the upstream ends its session on its own time.
      upstream::UpstreamHttpRequest del;
      del.method = "DELETE";
      del.path = upstream->path;
      del.headers = {{"mcp-session-id", upstream_id}};
      upstream->http->Send(std::move(del), std::make_shared<IgnoreAnswer>());
    }
  }
  return out.Respond(200, {}, "");
}

void McpApi::PassOn(const std::string& name, const HttpRequest& request, const Pending& pending) {
  absl::StatusOr<McpUpstream> upstream = UpstreamFor(name, request);
  std::string upstream_id;
  if (pending.session != nullptr) {
    absl::MutexLock lock(&pending.session->mu);
    upstream_id = pending.session->upstream_id;
    if (pending.message.method == "notifications/initialized") {
      pending.session->upstream_initialized = !upstream_id.empty();
    }
  }
  if (upstream.ok()) {
    upstream::UpstreamHttpRequest note;
    note.path = upstream->path;
    note.headers = ForwardHeaders(request);
    if (!upstream_id.empty()) note.headers.emplace_back("mcp-session-id", upstream_id);
    note.body = request.body;
    upstream->http->Send(std::move(note), std::make_shared<IgnoreAnswer>());
  }
}

void McpApi::Handle(engine::CallInfo call, std::string name, HttpRequest request,
                    std::shared_ptr<HttpResponder> out) {
  if (name.empty() || absl::StrContains(name, '/') || !validation::IsValidUtf8(name) ||
      name.size() > 256) {
    return RespondJson(*out, 404,
                       ErrorBody("path: expected /mcp/{name} with a server name of 1 to 256 "
                                 "UTF-8 characters and no '/'"));
  }
  if (!validation::IsValidUtf8(call.run) || !validation::IsValidUtf8(call.agent)) {
    return RespondJson(*out, 400, ErrorBody("run or agent name is not valid UTF-8"));
  }
  const std::string session_header(request.Header("mcp-session-id"));
  if (request.method == "GET") {
    return out->Respond(405, {{"allow", "POST, DELETE"}, {"content-type", kJsonType}},
                        ErrorBody("understudy offers no server-initiated stream (GET); use POST"));
  }
  if (request.method == "DELETE") return EndSession(name, request, session_header, *out);
  if (request.method != "POST") {
    return out->Respond(405, {{"allow", "POST, DELETE"}, {"content-type", kJsonType}},
                        ErrorBody("method not allowed: use POST or DELETE"));
  }
  const std::string content_type = absl::AsciiStrToLower(request.Header("content-type"));
  if (!absl::StartsWith(content_type, kJsonType)) {
    return RespondJson(*out, 415,
                       ErrorBody(absl::StrCat("content-type: expected application/json, got \"",
                                              absl::CHexEscape(content_type.substr(0, 100)), "\"")));
  }

  auto pending = std::make_shared<Pending>();
  pending->stored_body = options_.redactor->RedactBody(request.body);
  absl::StatusOr<jsonrpc::Message> parsed = jsonrpc::ParseMessage(pending->stored_body);
  if (!parsed.ok()) {
    return RespondJson(*out, 400,
                       jsonrpc::ErrorResponse(Json(), jsonrpc::ErrorCodeFor(parsed.status()),
                                          parsed.status().message()));
  }
  pending->message = *std::move(parsed);
  const jsonrpc::Message& message = pending->message;
  const bool initialize =
      message.kind == jsonrpc::Message::Kind::kRequest && message.method == "initialize";
  if (!session_header.empty() && !initialize) {
    pending->session = FindSession(session_header);
    if (pending->session == nullptr) {
      return RespondJson(*out, 404,
                         jsonrpc::ErrorResponse(message.id, jsonrpc::kInvalidRequest,
                                            absl::StrCat("unknown Mcp-Session-Id \"",
                                                         absl::CHexEscape(session_header.substr(0, 100)),
                                                         "\": initialize a new session")));
    }
    pending->session_id = session_header;
  }

  absl::StatusOr<std::pair<v1::RunMode, std::string>> mode = options_.engine->ActiveRunMode(call);
  if (!mode.ok()) {
    // The request names no run, an unknown one or one that has ended: the
    // client's mistake, answered with the HTTP status the model routes give
    // it (404 for an unknown run) and a JSON-RPC error of the same kind as
    // an unknown session's.
    return RespondJson(*out, HttpStatusFor(mode.status().code()),
                       JsonRpcErrorFor(message.id, jsonrpc::kInvalidRequest, mode.status()));
  }
  const bool may_forward = mode->first != v1::RUN_MODE_REPLAY;
  if (may_forward && request.Header("x-understudy-mcp-upstream") == "lazy") {
    // The proxy starts the real server now, and sends the message again.
    return RespondJson(*out, 409, mcp::ProxySignalBody(mcp::ProxySignal::kStartUpstream));
  }

  if (message.kind != jsonrpc::Message::Kind::kRequest) {
    // Notifications and the client's responses: passed on when forwarding.
    if (may_forward) PassOn(name, request, *pending);
    HttpHeaders headers;
    if (!pending->session_id.empty()) headers.emplace_back("mcp-session-id", pending->session_id);
    return out->Respond(202, std::move(headers), "");
  }
  if (message.method == "ping") {
    return RespondJson(*out, 200, jsonrpc::ResultResponse(message.id, "{}"), SessionHeaders(pending->session_id));
  }

  call.run = mode->second;
  absl::StatusOr<engine::Decision> decided =
      options_.engine->Decide(call, mcp::CanonicalRequest(name, message), /*streamed=*/false);
  if (!decided.ok()) {
    return RespondJson(*out, 200, JsonRpcErrorFor(message.id, decided.status()), SessionHeaders(pending->session_id));
  }
  if (initialize) {
    pending->session_id = NewSession(call.run, name, request.body);
    pending->session = FindSession(pending->session_id);
  }
  pending->decision = *std::move(decided);
  pending->call = std::move(call);
  pending->name = std::move(name);
  pending->event_stream = AcceptsEventStream(request);
  pending->request = std::move(request);
  if (pending->decision.delay <= absl::ZeroDuration()) return Answer(std::move(pending), out);
  options_.env->ScheduleAfter(pending->decision.delay,
                              [this, pending, out] { Answer(pending, out); });
}

void McpApi::Answer(std::shared_ptr<Pending> pending, std::shared_ptr<HttpResponder> out) {
  engine::Decision& decision = pending->decision;
  const Json& id = pending->message.id;
  const std::string& session_id = pending->session_id;
  if (const auto* error = decision.As<engine::ScriptedError>()) {
    return RespondJson(*out, 200, JsonRpcErrorFor(id, error->status), SessionHeaders(session_id));
  }
  if (const auto* miss = decision.As<engine::MissAfterDelay>()) {
    return RespondJson(*out, 200, JsonRpcErrorFor(id, miss->status), SessionHeaders(session_id));
  }
  if (const auto* held = decision.As<engine::HangUntilReleased>()) {
    std::shared_ptr<engine::Hang> hang = held->hang;
    out->OnCancel([hang] { hang->Release(absl::CancelledError("the client went away")); });
    hang->Wait([out, id, session_id](absl::Status status) {
      RespondJson(*out, 200, JsonRpcErrorFor(id, status), SessionHeaders(session_id));
    });
    return;
  }
  if (const auto* reply = decision.As<engine::ReplyFromExchange>()) {
    const v1::Exchange& ex = *reply->exchange;
    if (ex.has_native() && ex.native().provider() == "mcp") {
      const v1::NativeExchange& native = ex.native();
      const Json token = mcp::ProgressTokenOf(pending->message);
      if (native.chunks_size() == 0) {
        return RespondJson(*out, 200, mcp::WithIds(native.response_body(), id, token), SessionHeaders(session_id));
      }
      if (!pending->event_stream) {
        // The response alone, for a client that takes no stream.
        return RespondJson(*out, 200,
                           mcp::WithIds(native.chunks(native.chunks_size() - 1).data(), id, token), SessionHeaders(session_id));
      }
      HttpHeaders headers = {{"content-type", kEventStreamType}, {"cache-control", "no-cache"}};
      if (!session_id.empty()) headers.emplace_back("mcp-session-id", session_id);
      out->StartStream(200, std::move(headers));
      out->WriteFrom(std::make_shared<RecordedEvents>(
          reply->keepalive, native,
          [id, token](absl::string_view data) { return mcp::WithIds(data, id, token); }, "message",
          options_.env->Now(), decision.speed));
      return out->End();
    }
    if (ex.has_error()) {
      const int code = ex.error().code() < 0 ? ex.error().code() : jsonrpc::kInternalError;
      return RespondJson(*out, 200, jsonrpc::ErrorResponse(id, code, ex.error().message()), SessionHeaders(session_id));
    }
    return RespondJson(*out, 200, jsonrpc::ResultResponse(id, ex.response().message().content()), SessionHeaders(session_id));
  }
  auto* forward = decision.As<engine::ForwardUpstream>();
  if (forward == nullptr) {
    return RespondJson(*out, 200,
                       JsonRpcErrorFor(id, absl::InternalError("nothing answers this request")), SessionHeaders(session_id));
  }
  absl::StatusOr<McpUpstream> upstream = UpstreamFor(pending->name, pending->request);
  if (!upstream.ok()) {
    // Dropping the ticket records nothing.
    forward->ticket.reset();
    return RespondJson(*out, 200, JsonRpcErrorFor(id, upstream.status()), SessionHeaders(session_id));
  }
  Forward(std::move(pending), *upstream, std::move(out));
}

namespace {

// Opens the upstream session a new-mode request needs when its initialize
// was answered from the recording: sends the client's initialize, then
// notifications/initialized, then `next`.
class UpstreamInit : public upstream::UpstreamHttpObserver {
 public:
  UpstreamInit(std::shared_ptr<McpApi::Session> session, McpUpstream upstream,
               upstream::UpstreamHttpHeaders headers, std::function<void(absl::Status)> next)
      : session_(std::move(session)),
        upstream_(std::move(upstream)),
        headers_(std::move(headers)),
        next_(std::move(next)) {}
  void OnHead(int status, upstream::UpstreamHttpHeaders headers) override {
    status_ = status;
    for (const auto& [name, value] : headers) {
      if (name == "mcp-session-id") id_ = value;
    }
  }
  void OnData(absl::string_view) override {}
  void OnDone(absl::Status status) override {
    if (status.ok() && status_ != 200) {
      status = absl::UnavailableError(
          absl::StrCat("opening a session on the MCP server: HTTP ", status_));
    }
    if (status.ok()) {
      {
        absl::MutexLock lock(&session_->mu);
        session_->upstream_id = id_;
        session_->upstream_initialized = true;
      }
      upstream::UpstreamHttpRequest note;
      note.path = upstream_.path;
      note.headers = headers_;
      if (!id_.empty()) note.headers.emplace_back("mcp-session-id", id_);
      note.body = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";
      upstream_.http->Send(std::move(note), std::make_shared<IgnoreAnswer>());
    }
    next_(status);
  }

 private:
  std::shared_ptr<McpApi::Session> session_;
  McpUpstream upstream_;
  upstream::UpstreamHttpHeaders headers_;
  std::function<void(absl::Status)> next_;
  int status_ = 0;
  std::string id_;
};

}  // namespace

void McpApi::Forward(std::shared_ptr<Pending> pending, McpUpstream upstream,
                     std::shared_ptr<HttpResponder> out) {
  std::string upstream_id;
  std::string initialize_body;
  const bool initialize = pending->message.method == "initialize";
  if (pending->session != nullptr && !initialize) {
    absl::MutexLock lock(&pending->session->mu);
    upstream_id = pending->session->upstream_id;
    if (!pending->session->upstream_initialized && upstream_id.empty()) {
      initialize_body = pending->session->initialize_body;
    }
  }
  upstream::UpstreamHttpHeaders headers = ForwardHeaders(pending->request);
  auto send = [pending, upstream, headers, out, env = options_.env,
               engine = options_.engine](absl::Status opened) {
    const Json& id = pending->message.id;
    if (!opened.ok()) {
      engine->FinishForward(std::move(pending->decision.As<engine::ForwardUpstream>()->ticket),
                            v1::Exchange(), opened, [](absl::Status) {});
      return RespondJson(*out, 200, JsonRpcErrorFor(id, opened), SessionHeaders(pending->session_id));
    }
    upstream::UpstreamHttpRequest forward;
    forward.path = upstream.path;
    forward.headers = headers;
    if (pending->session != nullptr) {
      absl::MutexLock lock(&pending->session->mu);
      if (!pending->session->upstream_id.empty()) {
        forward.headers.emplace_back("mcp-session-id", pending->session->upstream_id);
      }
    }
    forward.body = pending->request.body;
    JsonRpcRelayOptions relay_options;
    relay_options.provider = "mcp";
    relay_options.native_path = absl::StrCat("/mcp/", pending->name);
    relay_options.label = absl::StrCat("MCP server \"", pending->name, "\"");
    relay_options.id = pending->message.id;
    relay_options.stored_body = pending->stored_body;
    relay_options.client_takes_stream = pending->event_stream;
    relay_options.answer_headers = SessionHeaders(pending->session_id);
    relay_options.events = StreamEvents::kNotificationsThenResponse;
    relay_options.sse_event = "message";
    relay_options.role = "tool";
    if (std::shared_ptr<Session> session = pending->session; session != nullptr) {
      relay_options.on_upstream_header = [session](const std::string& name,
                                                   const std::string& value) {
        if (name != "mcp-session-id") return;
        absl::MutexLock lock(&session->mu);
        session->upstream_id = value;
      };
    }
    auto relay = std::make_shared<JsonRpcRelay>(
        std::move(relay_options),
        std::move(pending->decision.As<engine::ForwardUpstream>()->ticket), engine, out, env);
    std::shared_ptr<upstream::UpstreamHttpCall> transfer =
        upstream.http->Send(std::move(forward), relay);
    out->OnCancel([transfer] { transfer->Cancel(); });
  };
  if (initialize_body.empty()) return send(absl::OkStatus());
  upstream::UpstreamHttpRequest init;
  init.path = upstream.path;
  init.headers = headers;
  init.body = std::move(initialize_body);
  upstream.http->Send(std::move(init),
                      std::make_shared<UpstreamInit>(pending->session, upstream, headers, send));
}

}  // namespace service
}  // namespace understudy
