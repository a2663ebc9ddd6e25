#include "service/a2a_api.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/http_status.h"
#include "provider/a2a.h"
#include "provider/json_util.h"
#include "provider/jsonrpc.h"
#include "service/jsonrpc_http.h"
#include "validation/utf8.h"

namespace understudy {
namespace service {

namespace a2a = provider::a2a;
namespace jsonrpc = provider::jsonrpc;
using provider::Json;

namespace {

constexpr size_t kMaxRunsWithIds = 1024;
constexpr size_t kMaxIdsPerRun = 4096;

constexpr absl::string_view kCardNames[] = {".well-known/agent-card.json",
                                            ".well-known/agent.json"};

// Whether `host` (a Host header) can stand in a URL as it is.
bool IsPlainHost(absl::string_view host) {
  if (host.empty() || host.size() > 255) return false;
  for (char c : host) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != ':' && c != '-' && c != '[' && c != ']') {
      return false;
    }
  }
  return true;
}

// The client headers an A2A agent gets: its version and extensions,
// credentials; never understudy's.
upstream::UpstreamHttpHeaders ForwardHeaders(const HttpRequest& request, bool stream) {
  upstream::UpstreamHttpHeaders out = ForwardedHeaders(request, {"accept", "content-type"});
  out.emplace_back("content-type", kJsonType);
  out.emplace_back("accept", stream ? kEventStreamType : kJsonType);
  return out;
}

}  // namespace

// A decided request waiting for its answer.
struct A2aApi::Pending {
  engine::CallInfo call;
  std::string name;
  HttpRequest request;
  bool card = false;
  // Where the client reached this agent here (the card's URLs).
  std::string url;
  jsonrpc::Message message;
  a2a::Call a2a_call;
  std::string stored_body;
  engine::Decision decision;
  bool event_stream = false;
};

namespace {

// Takes a forwarded card fetch's answer; records and serves the card once
// it is whole.
class CardRelay : public upstream::UpstreamHttpObserver,
                  public std::enable_shared_from_this<CardRelay> {
 public:
  CardRelay(std::shared_ptr<A2aApi::Pending> pending, engine::Engine* engine,
            std::function<void(const A2aApi::Pending&, absl::string_view, HttpResponder&)> respond,
            std::shared_ptr<HttpResponder> out)
      : pending_(std::move(pending)), engine_(engine), respond_(std::move(respond)), out_(std::move(out)) {}

  void OnHead(int status, upstream::UpstreamHttpHeaders) override { status_ = status; }
  void OnData(absl::string_view bytes) override { body_.append(bytes.data(), bytes.size()); }
  void OnDone(absl::Status status) override {
    std::unique_ptr<engine::ForwardTicket> ticket =
        std::move(pending_->decision.As<engine::ForwardUpstream>()->ticket);
    const std::string label = absl::StrCat("A2A agent \"", pending_->name, "\"");
    if (status.ok() && status_ != 200) {
      status = absl::UnavailableError(absl::StrCat(
          label, " answered HTTP ", status_, " for its agent card: ",
          absl::CHexEscape(absl::string_view(body_).substr(0, 300))));
    } else if (status.ok()) {
      absl::StatusOr<std::string> checked = a2a::CardForUrl(body_, "");
      if (!checked.ok()) {
        status = absl::UnavailableError(
            absl::StrCat(label, "'s agent card is not a JSON object: ", checked.status().message()));
      }
    } else if (!absl::IsCancelled(status)) {
      status = absl::Status(status.code(), absl::StrCat(label, " failed mid-call: ", status.message()));
    }
    if (!status.ok()) {
      engine_->FinishForward(std::move(ticket), v1::Exchange(), status, [](absl::Status) {});
      return RespondJson(*out_, 502, jsonrpc::ErrorResponse(Json(), jsonrpc::kUpstreamError,
                                                            status.message()));
    }
    v1::Exchange exchange;
    exchange.mutable_response()->mutable_message()->set_role("assistant");
    exchange.mutable_response()->mutable_message()->set_content(body_);
    v1::NativeExchange* native = exchange.mutable_native();
    native->set_provider("a2a");
    native->set_path(absl::StrCat("/a2a/", pending_->name, "/.well-known/agent-card.json"));
    native->set_status(200);
    native->set_content_type(kJsonType);
    native->set_response_body(body_);
    auto self = shared_from_this();
    engine_->FinishForward(std::move(ticket), std::move(exchange), absl::OkStatus(),
                           [self](absl::Status done) {
                             if (!done.ok()) {
                               return RespondJson(*self->out_, HttpStatusFor(done.code()),
                                                  JsonRpcErrorFor(Json(), done));
                             }
                             self->respond_(*self->pending_, self->body_, *self->out_);
                           });
  }

 private:
  std::shared_ptr<A2aApi::Pending> pending_;
  engine::Engine* engine_;
  std::function<void(const A2aApi::Pending&, absl::string_view, HttpResponder&)> respond_;
  std::shared_ptr<HttpResponder> out_;
  int status_ = 0;
  std::string body_;
};

}  // namespace

A2aApi::A2aApi(A2aApiOptions options) : options_(std::move(options)) {
  if (options_.env == nullptr) options_.env = Env::Default();
  if (options_.redactor == nullptr) options_.redactor = &default_redactor_;
}

A2aApi::~A2aApi() = default;

std::vector<std::pair<std::string, std::string>> A2aApi::CallersMessageIds(
    const std::string& run, const std::string& recorded, const std::string& caller) {
  absl::MutexLock lock(&ids_mu_);
  auto it = message_ids_.find(run);
  if (!recorded.empty() && !caller.empty() && recorded != caller) {
    if (it == message_ids_.end()) {
      if (message_ids_.size() >= kMaxRunsWithIds) message_ids_.erase(message_ids_.begin());
      it = message_ids_.try_emplace(run).first;
    }
    if (it->second.size() < kMaxIdsPerRun) it->second.emplace_back(recorded, caller);
  }
  if (it == message_ids_.end()) return {};
  return it->second;
}

std::string A2aApi::ErrorBody(absl::string_view message) {
  return jsonrpc::ErrorResponse(Json(), jsonrpc::kInvalidRequest, message);
}

void A2aApi::Handle(engine::CallInfo call, std::string rest, HttpRequest request,
                    std::shared_ptr<HttpResponder> out) {
  const size_t slash = rest.find('/');
  std::string name = rest.substr(0, slash);
  const absl::string_view tail =
      slash == std::string::npos ? absl::string_view() : absl::string_view(rest).substr(slash + 1);
  bool card = false;
  for (absl::string_view card_name : kCardNames) card |= tail == card_name;
  if (name.empty() || !validation::IsValidUtf8(name) || name.size() > 256 ||
      (!tail.empty() && !card)) {
    return RespondJson(*out, 404,
                       ErrorBody("path: expected /a2a/{name} (JSON-RPC) or "
                                 "/a2a/{name}/.well-known/agent-card.json, with an agent name of 1 "
                                 "to 256 UTF-8 characters and no '/'"));
  }
  if (!validation::IsValidUtf8(call.run) || !validation::IsValidUtf8(call.agent)) {
    return RespondJson(*out, 400, ErrorBody("run or agent name is not valid UTF-8"));
  }
  auto pending = std::make_shared<Pending>();
  pending->card = card;
  v1::CompletionRequest canonical;
  if (card) {
    if (request.method != "GET") {
      return out->Respond(405, {{"allow", "GET"}, {"content-type", kJsonType}},
                          ErrorBody("method not allowed: GET the agent card"));
    }
    const absl::string_view host = request.Header("host");
    if (!IsPlainHost(host)) {
      return RespondJson(*out, 400,
                         ErrorBody("Host: expected HOST[:PORT] to point the agent card's URLs at"));
    }
    // The route as the client spelled it, up to the agent's name.
    const absl::string_view target = request.target;
    const size_t at = target.find(absl::StrCat("/a2a/", name, "/"));
    pending->url = absl::StrCat(options_.tls ? "https://" : "http://", host,
                                target.substr(0, at + sizeof("/a2a/") - 1 + name.size()));
    canonical = a2a::CardRequest(name);
  } else {
    if (request.method != "POST") {
      return out->Respond(
          405, {{"allow", "POST"}, {"content-type", kJsonType}},
          ErrorBody(absl::StrCat("method not allowed: POST JSON-RPC requests here; the agent card "
                                 "is at /a2a/",
                                 name, "/.well-known/agent-card.json")));
    }
    const std::string content_type = absl::AsciiStrToLower(request.Header("content-type"));
    if (!absl::StartsWith(content_type, kJsonType)) {
      return RespondJson(*out, 415,
                         ErrorBody(absl::StrCat("content-type: expected application/json, got \"",
                                                absl::CHexEscape(content_type.substr(0, 100)), "\"")));
    }
    pending->stored_body = options_.redactor->RedactBody(request.body);
    absl::StatusOr<jsonrpc::Message> parsed = jsonrpc::ParseMessage(pending->stored_body);
    if (!parsed.ok()) {
      return RespondJson(*out, 400,
                         jsonrpc::ErrorResponse(Json(), jsonrpc::ErrorCodeFor(parsed.status()),
                                                parsed.status().message()));
    }
    if (parsed->kind != jsonrpc::Message::Kind::kRequest) {
      return RespondJson(*out, 400,
                         jsonrpc::ErrorResponse(parsed->id, jsonrpc::kInvalidRequest,
                                                "body: an A2A agent takes JSON-RPC requests "
                                                "(with a method and an id) only"));
    }
    absl::StatusOr<a2a::Call> read = a2a::ReadCall(*parsed);
    if (!read.ok()) {
      return RespondJson(*out, 400,
                         jsonrpc::ErrorResponse(parsed->id, jsonrpc::kInvalidParams,
                                                read.status().message()));
    }
    pending->message = *std::move(parsed);
    pending->a2a_call = *std::move(read);
    canonical = a2a::CanonicalRequest(name, pending->message);
    pending->event_stream =
        pending->a2a_call.method == a2a::Method::kStream && AcceptsEventStream(request);
  }
  const Json& id = pending->message.id;

  absl::StatusOr<std::pair<v1::RunMode, std::string>> mode = options_.engine->ActiveRunMode(call);
  if (!mode.ok()) {
    // No run, an unknown one or one that has ended: the client's mistake,
    // with the HTTP status the model routes give it.
    return RespondJson(*out, HttpStatusFor(mode.status().code()),
                       JsonRpcErrorFor(id, jsonrpc::kInvalidRequest, mode.status()));
  }
  call.run = mode->second;
  absl::StatusOr<engine::Decision> decided =
      options_.engine->Decide(call, canonical, /*streamed=*/false);
  if (!decided.ok()) {
    return RespondJson(*out, card ? HttpStatusFor(decided.status().code()) : 200,
                       JsonRpcErrorFor(id, decided.status()));
  }
  pending->decision = *std::move(decided);
  pending->call = std::move(call);
  pending->name = std::move(name);
  pending->request = std::move(request);
  if (pending->decision.delay <= absl::ZeroDuration()) return Answer(std::move(pending), out);
  options_.env->ScheduleAfter(pending->decision.delay,
                              [this, pending, out] { Answer(pending, out); });
}

void A2aApi::RespondCard(const Pending& pending, absl::string_view card_json, HttpResponder& out) {
  absl::StatusOr<std::string> card = a2a::CardForUrl(card_json, pending.url);
  if (!card.ok()) {
    return RespondJson(out, 502, jsonrpc::ErrorResponse(Json(), jsonrpc::kUpstreamError,
                                                        card.status().message()));
  }
  RespondJson(out, 200, *std::move(card));
}

void A2aApi::Answer(std::shared_ptr<Pending> pending, std::shared_ptr<HttpResponder> out) {
  engine::Decision& decision = pending->decision;
  const Json& id = pending->message.id;
  // A card's errors are HTTP ones: the client fetches it as a document.
  const auto error = [&pending, &out, &id](const absl::Status& status) {
    RespondJson(*out, pending->card ? HttpStatusFor(status.code()) : 200,
                JsonRpcErrorFor(id, status));
  };
  if (const auto* scripted = decision.As<engine::ScriptedError>()) return error(scripted->status);
  if (const auto* miss = decision.As<engine::MissAfterDelay>()) return error(miss->status);
  if (const auto* held = decision.As<engine::HangUntilReleased>()) {
    std::shared_ptr<engine::Hang> hang = held->hang;
    out->OnCancel([hang] { hang->Release(absl::CancelledError("the client went away")); });
    hang->Wait([out, id](absl::Status status) { RespondJson(*out, 200, JsonRpcErrorFor(id, status)); });
    return;
  }
  if (const auto* reply = decision.As<engine::ReplyFromExchange>()) {
    const v1::Exchange& ex = *reply->exchange;
    // Recorded and scripted answers alike hold their bytes (a2a.h).
    if (!ex.has_native() || ex.native().provider() != "a2a") {
      if (ex.has_error()) {
        return RespondJson(*out, 200,
                           jsonrpc::ErrorResponse(id, ex.error().code() < 0 ? ex.error().code()
                                                                            : jsonrpc::kInternalError,
                                                  ex.error().message()));
      }
      return error(absl::InternalError(
          absl::StrCat("the answer to this A2A ", pending->card ? "card fetch" : "request",
                       " holds no A2A bytes (it was recorded over another API)")));
    }
    const v1::NativeExchange& recorded = ex.native();
    if (pending->card) return RespondCard(*pending, recorded.response_body(), *out);
    // The recorded request's id and messageId, which the answer carries.
    Json recorded_id;
    std::string recorded_message_id;
    if (absl::StatusOr<jsonrpc::Message> m = jsonrpc::ParseMessage(recorded.request_body());
        m.ok()) {
      recorded_id = m->id;
      if (absl::StatusOr<a2a::Call> c = a2a::ReadCall(*m); c.ok()) {
        recorded_message_id = c->message_id;
      }
    }
    std::vector<std::pair<std::string, std::string>> message_ids =
        CallersMessageIds(pending->call.run, recorded_message_id, pending->a2a_call.message_id);
    const bool rewrite = a2a::ChangesForCaller(recorded_id, id, message_ids);
    auto for_caller = [recorded_id, id, message_ids = std::move(message_ids),
                       rewrite](absl::string_view data) {
      return rewrite ? a2a::ForCaller(data, recorded_id, id, message_ids) : std::string(data);
    };
    if (recorded.chunks_size() == 0) {
      return RespondJson(*out, 200, for_caller(recorded.response_body()));
    }
    if (!pending->event_stream) {
      return RespondJson(*out, 200, for_caller(recorded.chunks(recorded.chunks_size() - 1).data()));
    }
    out->StartStream(200, {{"content-type", kEventStreamType}, {"cache-control", "no-cache"}});
    if (rewrite) {
      out->WriteFrom(std::make_shared<RecordedEvents>(reply->keepalive, recorded,
                                                      std::move(for_caller), "",
                                                      options_.env->Now(), decision.speed));
    } else {
      out->WriteFrom(std::make_shared<RecordedEvents>(reply->keepalive, recorded, nullptr, "",
                                                      options_.env->Now(), decision.speed));
    }
    return out->End();
  }
  auto* forward = decision.As<engine::ForwardUpstream>();
  if (forward == nullptr) return error(absl::InternalError("nothing answers this request"));
  Forward(std::move(pending), std::move(out));
}

void A2aApi::Forward(std::shared_ptr<Pending> pending, std::shared_ptr<HttpResponder> out) {
  auto it = options_.upstreams.find(pending->name);
  if (it == options_.upstreams.end()) {
    const absl::Status none = absl::FailedPreconditionError(absl::StrCat(
        "no upstream for A2A agent \"", pending->name,
        "\" to forward to: start the server with --a2a-upstream ", pending->name, "=URL"));
    // Dropping the ticket records nothing.
    pending->decision.As<engine::ForwardUpstream>()->ticket.reset();
    return RespondJson(*out, pending->card ? HttpStatusFor(none.code()) : 200,
                       JsonRpcErrorFor(pending->message.id, none));
  }
  const A2aUpstream& upstream = it->second;
  upstream::UpstreamHttpRequest forward;
  std::shared_ptr<upstream::UpstreamHttpObserver> observer;
  if (pending->card) {
    forward.method = "GET";
    forward.path = upstream.card_path;
    forward.headers = ForwardedHeaders(pending->request, {"accept"});
    forward.headers.emplace_back("accept", kJsonType);
    observer = std::make_shared<CardRelay>(
        pending, options_.engine,
        [this](const Pending& p, absl::string_view card, HttpResponder& o) { RespondCard(p, card, o); },
        out);
  } else {
    forward.path = upstream.path;
    forward.headers = ForwardHeaders(pending->request, pending->event_stream);
    forward.body = pending->request.body;
    JsonRpcRelayOptions relay;
    relay.provider = "a2a";
    relay.native_path = absl::StrCat("/a2a/", pending->name);
    relay.label = absl::StrCat("A2A agent \"", pending->name, "\"");
    relay.id = pending->message.id;
    relay.stored_body = pending->stored_body;
    relay.client_takes_stream = pending->event_stream;
    relay.events = StreamEvents::kEveryEventResponds;
    relay.canonical_answer = a2a::CanonicalAnswer;
    observer = std::make_shared<JsonRpcRelay>(
        std::move(relay), std::move(pending->decision.As<engine::ForwardUpstream>()->ticket),
        options_.engine, out, options_.env);
  }
  std::shared_ptr<upstream::UpstreamHttpCall> transfer =
      upstream.http->Send(std::move(forward), std::move(observer));
  // A client that goes away cancels the call; nothing is recorded.
  out->OnCancel([transfer] { transfer->Cancel(); });
}

}  // namespace service
}  // namespace understudy
