#include "service/http_api.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/env.h"
#include "base/http_status.h"
#include "base/log.h"
#include "provider/codec.h"
#include "service/http_relay.h"
#include "service/jsonrpc_http.h"
#include "service/http_render.h"
#include "validation/utf8.h"

namespace understudy {
namespace service {
namespace {

// A request's route, once the /run/{run}[/agent/{agent}] prefix is off.
struct Route {
  std::string run;
  std::string agent;
  std::string path;   // e.g. "/v1/chat/completions", no query
  std::string query;  // after '?', "" when none
};

// A request path under the name its API records and forwards it by.
void NormalizeApiPath(std::string* path) {
  *path = provider::CodecRegistry::Builtin().NormalizePath(*path);
}

// Splits the optional prefix off `target`. False for a malformed prefix.
bool ParseRoute(absl::string_view target, Route* route) {
  size_t q = target.find('?');
  absl::string_view path = target.substr(0, q);
  if (q != absl::string_view::npos) route->query = std::string(target.substr(q + 1));
  if (absl::StartsWith(path, "/run/")) {
    std::vector<absl::string_view> parts = absl::StrSplit(path.substr(1), '/');
    // run, {run}, [agent, {agent},] rest...
    if (parts.size() < 2 || parts[1].empty()) return false;
    route->run = std::string(parts[1]);
    size_t rest = 2;
    if (parts.size() >= 4 && parts[2] == "agent") {
      if (parts[3].empty()) return false;
      route->agent = std::string(parts[3]);
      rest = 4;
    }
    route->path.clear();
    for (size_t i = rest; i < parts.size(); ++i) absl::StrAppend(&route->path, "/", parts[i]);
    if (route->path.empty()) route->path = "/";
    NormalizeApiPath(&route->path);
    return true;
  }
  route->path = std::string(path);
  NormalizeApiPath(&route->path);
  return true;
}

// Run ids and agent names reach the trace, and through it every client that
// reads it: proto3 strings must be UTF-8, and a URL or header may hold any
// bytes.
absl::Status CheckNames(const engine::CallInfo& call) {
  if (!validation::IsValidUtf8(call.run)) {
    return absl::InvalidArgumentError(
        "run: the run id (in the URL or X-Understudy-Run) is not valid UTF-8");
  }
  if (!validation::IsValidUtf8(call.agent)) {
    return absl::InvalidArgumentError(
        "agent: the agent name (in the URL or X-Understudy-Agent) is not valid UTF-8");
  }
  return absl::OkStatus();
}

// Client headers that are passed to the upstream: everything but
// hop-by-hop headers, understudy's own, and encodings we could not store
// as the SDK would read them.
engine::CallInfo CallFor(const Route& route, const HttpRequest& request) {
  engine::CallInfo call;
  call.run = !route.run.empty() ? route.run : std::string(request.Header("x-understudy-run"));
  call.agent =
      !route.agent.empty() ? route.agent : std::string(request.Header("x-understudy-agent"));
  return call;
}

void MethodNotAllowed(const provider::Codec& api, absl::string_view allowed, HttpResponder& out) {
  out.Respond(405, {{"content-type", kJsonContentType}, {"allow", std::string(allowed)}},
              api.ErrorBody(absl::InvalidArgumentError(
                                absl::StrCat("method not allowed: use ", allowed)),
                            "method_not_allowed"));
}

// What a 404 lists: every API's routes, then the listener's own.
std::string Routes() {
  return absl::StrCat("understudy serves ",
                      absl::StrJoin(provider::CodecRegistry::Builtin().Routes(), ", "),
                      ", GET /v1/models, POST /mcp/{name}, POST /a2a/{name} and GET "
                      "/a2a/{name}/.well-known/agent-card.json");
}

}  // namespace

// A decided request waiting for its answer (after any scripted delay).
struct HttpApi::Pending {
  // The API the route names, and what the route says.
  const provider::Codec* codec = nullptr;
  provider::CallRoute wire;
  engine::CallInfo call;
  engine::Decision decision;
  provider::ParsedRequest parsed;
  Route route;
  std::string stored_body;
  HttpRequest request;
  // Responses: the messages of this request's own input (not the resolved
  // conversation before them), for the chain.
  std::vector<v1::Message> turn_input;
};

HttpApi::HttpApi(HttpApiOptions options) : options_(std::move(options)) {
  if (options_.env == nullptr) options_.env = Env::Default();
  if (options_.redactor == nullptr) options_.redactor = &default_redactor_;
}

std::string HttpApi::ServerErrorBody(int status, absl::string_view message,
                                     absl::string_view target) {
  if (UiApi::Serves(target)) {
    return UiApi::ErrorBody(absl::Status(StatusCodeForHttp(status), message));
  }
  Route route;
  if (ParseRoute(target, &route) &&
      (route.path == "/mcp" || absl::StartsWith(route.path, "/mcp/"))) {
    return McpApi::ErrorBody(message);
  }
  if (ParseRoute(target, &route) && absl::StartsWith(route.path, "/a2a/")) {
    return A2aApi::ErrorBody(message);
  }
  const provider::CodecRegistry& codecs = provider::CodecRegistry::Builtin();
  const provider::Codec* api = ParseRoute(target, &route) ? codecs.ForPath(route.path, route.query) : nullptr;
  return (api != nullptr ? *api : codecs.Default()).RequestErrorBody(status, message);
}

void HttpApi::ListModels(const engine::CallInfo& call, const provider::Codec& client,
                         HttpResponder& out) {
  absl::StatusOr<std::vector<std::string>> models = options_.engine->RunModels(call);
  if (call.run.empty() && absl::IsInvalidArgument(models.status())) {
    // No run named and no default run: SDKs list models at start-up, before
    // any run exists; they get a valid, empty list.
    models = std::vector<std::string>();
  }
  if (!models.ok()) return RespondError(client, models.status(), out);
  absl::StatusOr<std::string> list = client.ModelList(*models);
  if (!list.ok()) return RespondError(client, list.status(), out);
  out.Respond(200, {{"content-type", kJsonContentType}}, *std::move(list));
}

void HttpApi::GetResponse(const provider::Codec& api, const engine::CallInfo& call,
                          absl::string_view method, const provider::CallRoute& wire,
                          HttpResponder& out) {
  if (method != "GET") return MethodNotAllowed(api, "GET", out);
  const provider::StoredResponses* stored = api.stored();
  if (stored == nullptr || wire.resource_id.empty() || absl::StrContains(wire.resource_id, '/')) {
    return RespondError(
        api,
        absl::NotFoundError(absl::StrCat("no route for GET ", wire.path, "; expected ",
                                         stored != nullptr ? stored->fetch_route() : "")),
        out);
  }
  if (absl::Status names = CheckNames(call); !names.ok()) return RespondError(api, names, out);
  absl::StatusOr<std::string> body = options_.engine->ResponseBody(call, wire.resource_id);
  if (!body.ok()) return RespondError(api, body.status(), out);
  out.Respond(200, {{"content-type", kJsonContentType}}, *std::move(body));
}

void HttpApi::ServeMetrics(HttpRequest& request, HttpResponder& out) {
  const auto text = [&out](int status, absl::string_view message) {
    out.Respond(status, {{"content-type", "text/plain; charset=utf-8"}}, absl::StrCat(message, "\n"));
  };
  if (absl::Status access = CheckHttpAccess(options_.access, true, &request); !access.ok()) {
    return text(HttpStatusFor(access.code()), access.message());
  }
  if (options_.metrics == nullptr) return text(404, "metrics are not served here");
  if (request.method != "GET" && request.method != "HEAD") {
    return out.Respond(405, {{"allow", "GET"}, {"content-type", "text/plain; charset=utf-8"}},
                       "method not allowed: GET /metrics\n");
  }
  out.Respond(200, {{"content-type", metrics::Metrics::kContentType}},
              options_.metrics->Exposition());
}

void HandlerSlot::Set(HttpHandler handler) {
  auto h = std::make_shared<const HttpHandler>(std::move(handler));
  absl::MutexLock lock(&mu_);
  handler_ = std::move(h);
}

bool HandlerSlot::Call(HttpRequest& request, std::shared_ptr<HttpResponder>& out) {
  std::shared_ptr<const HttpHandler> h;
  {
    absl::MutexLock lock(&mu_);
    h = handler_;
  }
  if (h == nullptr) return false;
  (*h)(std::move(request), std::move(out));
  return true;
}

void HttpApi::Handle(HttpRequest request, std::shared_ptr<HttpResponder> out) {
  const provider::CodecRegistry& codecs = provider::CodecRegistry::Builtin();
  // A listener that checks Host has refused these already (CheckHost).
  if (absl::Status proxied = CheckNotProxied(request); !proxied.ok()) {
    return RespondError(codecs.Default(), proxied, *out);
  }
  if (UiApi::Serves(request.target)) {
    if (options_.ui == nullptr) return UiApi::RespondOff(*out);
    return options_.ui->Handle(std::move(request), std::move(out));
  }
  if (request.target == "/metrics" || absl::StartsWith(request.target, "/metrics?")) {
    return ServeMetrics(request, *out);
  }
  Route route;
  // The API a request no route names is answered in: the one whose client
  // header it carries.
  const provider::Codec& client =
      codecs.ForClient([&request](absl::string_view name) { return request.Header(name); });
  if (!ParseRoute(request.target, &route)) {
    return RespondError(codecs.Default(),
                        absl::InvalidArgumentError(absl::StrCat(
                            "path: expected /run/{run}[/agent/{agent}]/v1/..., got \"",
                            absl::CHexEscape(request.target.substr(0, 200)), "\"")),
                        *out);
  }
  if (route.path == "/mcp" && route.run.empty()) {
    if (absl::Status access = CheckHttpAccess(options_.access, true, &request); !access.ok()) {
      return out->Respond(HttpStatusFor(access.code()), {{"content-type", kJsonContentType}},
                          McpApi::ErrorBody(access.message()));
    }
    if (options_.own_mcp == nullptr || !options_.own_mcp->Call(request, out)) {
      return out->Respond(404, {{"content-type", kJsonContentType}},
                          McpApi::ErrorBody("understudy's MCP tools are not served here"));
    }
    return;
  }
  // The JSON-RPC servers: MCP tool servers and A2A agents, each under its
  // prefix, its errors in JSON-RPC's shape.
  for (const auto& [prefix, label] : {std::pair<absl::string_view, absl::string_view>{"/mcp/", "mcp"},
                                      {"/a2a/", "a2a"}}) {
    const bool mcp = label == "mcp";
    if (!absl::StartsWith(route.path, prefix) ||
        (mcp ? options_.mcp == nullptr : options_.a2a == nullptr)) {
      continue;
    }
    if (absl::Status access = CheckHttpAccess(options_.access, true, &request); !access.ok()) {
      return out->Respond(HttpStatusFor(access.code()), {{"content-type", kJsonContentType}},
                          mcp ? McpApi::ErrorBody(access.message())
                              : A2aApi::ErrorBody(access.message()));
    }
    engine::CallInfo call = CallFor(route, request);
    call.api = label;
    out->SetLabel(label);
    std::string rest = route.path.substr(prefix.size());
    if (mcp) {
      return options_.mcp->Handle(std::move(call), std::move(rest), std::move(request),
                                  std::move(out));
    }
    return options_.a2a->Handle(std::move(call), std::move(rest), std::move(request),
                                std::move(out));
  }
  // Which API the path names.
  const provider::Codec* api = codecs.ForPath(route.path, route.query);
  const bool list_models = route.path == "/v1/models";
  const provider::Codec& shape = api != nullptr ? *api : client;
  if (absl::Status access =
          CheckHttpAccess(options_.access, api != nullptr || list_models, &request);
      !access.ok()) {
    return RespondError(shape, access, *out);
  }
  engine::CallInfo call = CallFor(route, request);
  if (api != nullptr) {
    call.api = api->name();
    out->SetLabel(call.api);
  }
  if (list_models) {
    if (request.method != "GET") return MethodNotAllowed(shape, "GET", *out);
    if (absl::Status names = CheckNames(call); !names.ok()) {
      return RespondError(shape, names, *out);
    }
    return ListModels(call, client, *out);
  }
  if (api == nullptr) {
    return RespondError(shape,
                        absl::NotFoundError(absl::StrCat("no route for ", request.method, " ",
                                                         route.path, "; ", Routes())),
                        *out);
  }
  absl::StatusOr<provider::CallRoute> wire = api->Route(request.method, route.path, route.query);
  if (!wire.ok()) return RespondError(shape, wire.status(), *out);
  if (wire->kind == provider::CallRoute::Kind::kFetch) {
    return GetResponse(*api, call, request.method, *wire, *out);
  }
  if (wire->kind == provider::CallRoute::Kind::kListModels) {
    if (request.method != "GET") return MethodNotAllowed(shape, "GET", *out);
    if (absl::Status names = CheckNames(call); !names.ok()) {
      return RespondError(shape, names, *out);
    }
    return ListModels(call, *api, *out);
  }
  if (request.method != "POST") return MethodNotAllowed(shape, "POST", *out);
  absl::string_view content_type = request.Header("content-type");
  if (!api->AcceptsContentType(absl::AsciiStrToLower(content_type))) {
    return out->Respond(
        415, {{"content-type", kJsonContentType}},
        shape.ErrorBody(absl::InvalidArgumentError(
                            absl::StrCat("content-type: expected application/json, got \"",
                                         absl::CHexEscape(content_type.substr(0, 100)), "\"")),
                        "unsupported_media_type"));
  }
  if (absl::Status names = CheckNames(call); !names.ok()) return RespondError(shape, names, *out);
  call.attributes = api->CallAttributes();

  // Secrets in configured body fields never reach matching or the store;
  // the upstream gets the body as sent.
  auto pending = std::make_shared<Pending>();
  pending->stored_body = options_.redactor->RedactBody(request.body);
  absl::StatusOr<provider::ParsedRequest> parsed = api->ParseRequest(*wire, pending->stored_body);
  if (!parsed.ok()) return RespondError(shape, parsed.status(), *out);
  pending->parsed = *std::move(parsed);
  if (const provider::StoredResponses* stored = api->stored(); stored != nullptr) {
    if (absl::Status joined = JoinStored(*stored, call, *pending); !joined.ok()) {
      return RespondError(shape, joined, *out);
    }
  }

  absl::StatusOr<engine::Decision> decided =
      options_.engine->Decide(call, pending->parsed.canonical, pending->parsed.stream);
  if (!decided.ok()) return RespondError(shape, decided.status(), *out);
  pending->decision = *std::move(decided);
  pending->codec = api;
  pending->wire = *std::move(wire);
  pending->call = std::move(call);
  pending->route = std::move(route);
  pending->request = std::move(request);
  if (pending->decision.delay <= absl::ZeroDuration()) return Answer(std::move(pending), out);
  // A scripted delay: the answer (or the forwarding) starts afterwards.
  options_.env->ScheduleAfter(pending->decision.delay,
                              [this, pending, out] { Answer(pending, out); });
}

absl::Status HttpApi::JoinStored(const provider::StoredResponses& stored,
                                 const engine::CallInfo& call, Pending& pending) {
  google::protobuf::RepeatedPtrField<v1::Message>* messages =
      pending.parsed.canonical.mutable_messages();
  // An item sent back by reference reads as the item, when this run
  // issued it; otherwise it is matched as sent.
  for (const provider::ParsedRequest::ItemReference& ref : pending.parsed.item_references) {
    absl::StatusOr<v1::Message> item = options_.engine->ResolveItem(
        call, ref.id, [&stored](absl::string_view body) { return stored.OutputItems(body); });
    if (item.ok()) {
      *messages->Mutable(ref.message) = *std::move(item);
    } else if (LogEnabled(LogLevel::kDebug)) {
      Log(LogLevel::kDebug, "item_reference_unresolved",
          {{"run", call.run}, {"item", ref.id}, {"status", item.status().ToString()}});
    }
  }
  // The conversation a previous response id names goes before this
  // request's own input, so that rules, agents and traces see all of it.
  const int lead = std::min(pending.parsed.leading_messages, messages->size());
  pending.turn_input.assign(messages->begin() + lead, messages->end());
  if (pending.parsed.previous_response_id.empty()) return absl::OkStatus();
  absl::StatusOr<std::vector<v1::Message>> before =
      options_.engine->ResolveResponse(call, pending.parsed.previous_response_id);
  if (!before.ok()) {
    // OpenAI answers an unknown id with 400 and the parameter's name.
    if (!absl::IsNotFound(before.status())) return before.status();
    return absl::InvalidArgumentError(
        absl::StrCat("previous_response_id: ", before.status().message()));
  }
  google::protobuf::RepeatedPtrField<v1::Message> joined;
  joined.Reserve(messages->size() + static_cast<int>(before->size()));
  for (int i = 0; i < lead; ++i) *joined.Add() = std::move(messages->at(i));
  for (v1::Message& m : *before) *joined.Add() = std::move(m);
  for (int i = lead; i < messages->size(); ++i) *joined.Add() = std::move(messages->at(i));
  messages->Swap(&joined);
  return absl::OkStatus();
}

void HttpApi::Remember(const Pending& pending, const v1::Exchange& ex, std::string id,
                       std::function<std::string()> body, size_t body_bytes) {
  if (id.empty()) return;
  engine::ChainLink link;
  link.parent = pending.parsed.previous_response_id;
  link.turn.reserve(pending.turn_input.size() + 1);
  link.turn = pending.turn_input;
  v1::Message& answer = link.turn.emplace_back(ex.response().message());
  answer.set_role("assistant");
  link.body = std::move(body);
  link.body_bytes = body_bytes;
  if (absl::Status s =
          options_.engine->RememberResponse(pending.call, std::move(id), std::move(link));
      !s.ok()) {
    Log(LogLevel::kWarning, "response_not_kept", {{"status", s.ToString()}});
  }
}

void HttpApi::Answer(std::shared_ptr<Pending> pending, std::shared_ptr<HttpResponder> out) {
  const provider::Codec& api = *pending->codec;
  engine::Decision& decision = pending->decision;
  if (const auto* miss = decision.As<engine::MissAfterDelay>()) {
    return RespondError(api, miss->status, *out);
  }
  if (const auto* error = decision.As<engine::ScriptedError>()) {
    // A scripted error: the HTTP status and body a provider would send.
    const absl::Status shown(StatusCodeForHttp(error->http_status), error->status.message());
    HttpHeaders headers = {{"content-type", kJsonContentType}};
    if (error->retry_after_seconds >= 0) {
      headers.emplace_back("retry-after", absl::StrCat(static_cast<int64_t>(
                                              std::ceil(error->retry_after_seconds))));
      headers.emplace_back("retry-after-ms", absl::StrCat(static_cast<int64_t>(std::llround(
                                                 error->retry_after_seconds * 1000))));
    }
    return out->Respond(
        error->http_status, std::move(headers),
        api.ErrorBody(shown.ok() ? absl::UnknownError(shown.message()) : shown, /*code=*/""));
  }
  if (const auto* held = decision.As<engine::HangUntilReleased>()) {
    std::shared_ptr<engine::Hang> hang = held->hang;
    out->OnCancel([hang] { hang->Release(absl::CancelledError("the client went away")); });
    hang->Wait([codec = &api, out](absl::Status status) { RespondError(*codec, status, *out); });
    return;
  }
  if (const auto* reply = decision.As<engine::ReplyFromExchange>()) {
    const v1::Exchange& ex = *reply->exchange;
    provider::RenderContext context;
    context.parsed = &pending->parsed;
    context.call = &pending->wire;
    // `created` is the recording's (scripted answers, built at request time,
    // have none: 0), so that every replay sends the same bytes.
    context.created = ex.recorded_at_micros() / 1000000;
    if (const provider::StoredResponses* stored = api.stored();
        stored != nullptr && !ex.has_error()) {
      // The id the caller gets: the recorded one (read into the canonical
      // answer when it was recorded), or one derived from the conversation
      // for an answer recorded another way or scripted. Kept before the
      // caller can continue from it; the object GET returns is made only
      // when asked, from what the run holds anyway.
      std::shared_ptr<const void> keep = reply->keepalive;
      std::function<std::string()> body;
      if (ex.has_native() && ex.native().provider() == api.name()) {
        const v1::NativeExchange* native = &ex.native();
        body = [keep, stored, native] { return stored->RecordedObject(*native); };
        context.response_id =
            stored->IsOwnId(ex.response().id()) ? ex.response().id() : stored->IdOf(body());
      }
      if (context.response_id.empty()) {
        context.response_id = stored->IdFor(pending->parsed.canonical, ex);
        body = [keep, codec = &api, answer = &ex.response(), id = context.response_id,
                created = context.created, model = pending->parsed.canonical.model()] {
          provider::RenderContext at_get;
          at_get.response_id = id;
          at_get.created = created;
          v1::CompletionResponse response = *answer;
          if (response.model().empty()) response.set_model(model);
          return codec->RenderBody(response, at_get).value_or("");
        };
      }
      Remember(*pending, ex, context.response_id, std::move(body), 0);
    }
    // The answer is sent from `ex` as the client reads it: the keepalive
    // keeps it alive until then.
    return RenderRecorded(api, ex, reply->keepalive, context, pending->parsed.stream,
                          decision.speed, options_.env->Now(), decision.disconnect_after,
                          *out);
  }
  if (decision.As<engine::DropConnection>() != nullptr) return out->Abort();

  const std::string name(api.upstream());
  const auto found = options_.upstreams.find(name);
  upstream::UpstreamHttpInterface* upstream =
      found != options_.upstreams.end() ? found->second : nullptr;
  if (upstream == nullptr) {
    return RespondError(
        api,
        absl::FailedPreconditionError(absl::StrCat(
            "no ", name, " upstream to forward to: start the server with --upstream ", name,
            "=URL")),
        *out);
  }
  Forward(std::move(pending), upstream, std::move(out));
}

void HttpApi::Forward(std::shared_ptr<Pending> pending, upstream::UpstreamHttpInterface* upstream,
                      std::shared_ptr<HttpResponder> out) {
  const provider::Codec& api = *pending->codec;
  std::function<void(const v1::Exchange&)> on_recorded;
  if (const provider::StoredResponses* stored = api.stored(); stored != nullptr) {
    on_recorded = [this, pending, stored](const v1::Exchange& ex) {
      auto body = std::make_shared<const std::string>(stored->RecordedObject(ex.native()));
      std::string id = stored->IdOf(*body);
      if (id.empty()) id = ex.response().id();
      Remember(*pending, ex, std::move(id), [body] { return *body; }, body->size());
    };
  }
  auto relay = std::make_shared<Relay>(api, pending->parsed.stream,
                                       pending->parsed.stream_framing, options_.engine,
                                       std::move(pending->decision.As<engine::ForwardUpstream>()->ticket),
                                       out, options_.env, std::move(on_recorded));
  v1::NativeExchange* native = relay->native();
  native->set_provider(std::string(api.name()));
  // The path as recorded: never a credential the query may carry.
  native->set_path(api.RecordedPath(pending->wire));
  native->set_request_body(std::move(pending->stored_body));

  upstream::UpstreamHttpRequest forward;
  forward.method = "POST";
  forward.path = api.ForwardPath(pending->wire);
  forward.headers = ForwardedHeaders(pending->request);
  forward.body = std::move(pending->request.body);
  std::shared_ptr<upstream::UpstreamHttpCall> transfer = upstream->Send(std::move(forward), relay);
  // A client that goes away cancels the upstream call; nothing is recorded.
  out->OnCancel([transfer]() { transfer->Cancel(); });
}

}  // namespace service
}  // namespace understudy
