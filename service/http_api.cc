#include "service/http_api.h"

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/http_status.h"
#include "base/log.h"
#include "nlohmann/json.hpp"
#include "provider/openai.h"
#include "provider/responses.h"
#include "service/http_relay.h"
#include "service/http_render.h"
#include "service/http_wire.h"
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

// The Anthropic SDKs disagree on where /v1 goes: @anthropic-ai/sdk and
// `anthropic` append /v1/messages to ANTHROPIC_BASE_URL, @ai-sdk/anthropic
// expects /v1 inside it and appends /messages. Both name one API, so the
// same base URL (`/run/{run}`, as `record|replay -- CMD` sets it) serves
// both; what is recorded and forwarded is always /v1/messages.
void NormalizeApiPath(std::string* path) {
  if (*path == "/messages") *path = "/v1/messages";
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

// The value of query parameter `name` ("" when absent). Values are compared
// as sent; none of the parameters read here needs percent-decoding.
absl::string_view QueryParam(absl::string_view query, absl::string_view name) {
  for (absl::string_view pair : absl::StrSplit(query, '&')) {
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) {
      return eq == absl::string_view::npos ? absl::string_view() : pair.substr(eq + 1);
    }
  }
  return {};
}

constexpr absl::string_view kGeminiPrefixes[] = {"/v1beta/models/", "/v1/models/"};

// Gemini's `/{version}/models/{model}:{method}`; false for other paths.
// `method` is what follows the last ':'.
bool ParseGeminiPath(absl::string_view path, std::string* model, std::string* method) {
  for (absl::string_view prefix : kGeminiPrefixes) {
    if (!absl::StartsWith(path, prefix)) continue;
    absl::string_view rest = path.substr(prefix.size());
    const size_t colon = rest.rfind(':');
    if (colon == absl::string_view::npos) return false;
    *model = std::string(rest.substr(0, colon));
    *method = std::string(rest.substr(colon + 1));
    return true;
  }
  return false;
}

// Run ids and agent names reach the trace, and through it every client that
// reads it: proto3 strings must be UTF-8, and a URL or header may hold any
// bytes.
absl::Status CheckNames(const replayer::CallInfo& call) {
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
HttpHeaders ForwardHeaders(const HttpRequest& request) {
  HttpHeaders out;
  for (const auto& [name, value] : request.headers) {
    if (name == "host" || name == "connection" || name == "content-length" ||
        name == "transfer-encoding" || name == "keep-alive" || name == "te" ||
        name == "trailer" || name == "upgrade" || name == "expect" ||
        name == "accept-encoding" || absl::StartsWith(name, "proxy-") ||
        absl::StartsWith(name, "x-understudy-")) {
      continue;
    }
    out.emplace_back(name, value);
  }
  return out;
}

replayer::CallInfo CallFor(const Route& route, const HttpRequest& request) {
  replayer::CallInfo call;
  call.run = !route.run.empty() ? route.run : std::string(request.Header("x-understudy-run"));
  call.agent =
      !route.agent.empty() ? route.agent : std::string(request.Header("x-understudy-agent"));
  return call;
}

void MethodNotAllowed(WireApi api, absl::string_view allowed, HttpResponder& out) {
  out.Respond(405, {{"content-type", kJsonContentType}, {"allow", std::string(allowed)}},
              ErrorBody(api,
                        absl::InvalidArgumentError(
                            absl::StrCat("method not allowed: use ", allowed)),
                        "method_not_allowed"));
}

constexpr char kRoutes[] =
    "understudy serves POST /v1/chat/completions, POST /v1/responses, GET /v1/responses/{id}, "
    "POST /v1/embeddings, POST /v1/messages (also /messages), "
    "POST /v1beta/models/{model}:generateContent, "
    "POST /v1beta/models/{model}:streamGenerateContent, GET /v1/models and POST /mcp/{name}";

}  // namespace

// A decided request waiting for its answer (after any scripted delay).
struct HttpApi::Pending {
  WireCall wire;
  replayer::CallInfo call;
  replayer::Decision decision;
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
  std::string model;
  std::string method;
  WireApi api = WireApi::kChatCompletions;
  if (ParseRoute(target, &route) &&
      (route.path == "/mcp" || absl::StartsWith(route.path, "/mcp/"))) {
    return McpApi::ErrorBody(message);
  }
  if (ParseRoute(target, &route)) {
    if (route.path == "/v1/messages") api = WireApi::kMessages;
    if (ParseGeminiPath(route.path, &model, &method)) api = WireApi::kGemini;
  }
  const absl::Status error(StatusCodeForHttp(status), message);
  if (api != WireApi::kChatCompletions) return ErrorBody(api, error, "");
  return provider::openai::ErrorBody(message, "invalid_request_error",
                                     status == 413 ? "body_too_large" : "bad_request");
}

void HttpApi::ListModels(const replayer::CallInfo& call, bool anthropic_client,
                         HttpResponder& out) {
  const WireApi api = anthropic_client ? WireApi::kMessages : WireApi::kChatCompletions;
  absl::StatusOr<std::vector<std::string>> models = options_.engine->RunModels(call);
  if (call.run.empty() && absl::IsInvalidArgument(models.status())) {
    // No run named and no default run: SDKs list models at start-up, before
    // any run exists; they get a valid, empty list.
    models = std::vector<std::string>();
  }
  if (!models.ok()) return RespondError(api, models.status(), out);
  nlohmann::ordered_json list;
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (const std::string& m : *models) {
    if (anthropic_client) {
      data.push_back({{"type", "model"}, {"id", m}, {"display_name", m},
                      {"created_at", "1970-01-01T00:00:00Z"}});
    } else {
      data.push_back({{"id", m}, {"object", "model"}, {"created", 0}, {"owned_by", "understudy"}});
    }
  }
  if (anthropic_client) {
    list["data"] = data;
    list["has_more"] = false;
    list["first_id"] =
        models->empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(models->front());
    list["last_id"] =
        models->empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(models->back());
  } else {
    list["object"] = "list";
    list["data"] = data;
  }
  out.Respond(200, {{"content-type", kJsonContentType}}, list.dump());
}

void HttpApi::GetResponse(const replayer::CallInfo& call, absl::string_view id,
                          HttpResponder& out) {
  absl::StatusOr<std::string> body = options_.engine->ResponseBody(call, id);
  if (!body.ok()) return RespondError(WireApi::kResponses, body.status(), out);
  out.Respond(200, {{"content-type", kJsonContentType}}, *std::move(body));
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
  // A listener that checks Host has refused these already (CheckHost).
  if (absl::Status proxied = CheckNotProxied(request); !proxied.ok()) {
    return RespondError(WireApi::kChatCompletions, proxied, *out);
  }
  if (UiApi::Serves(request.target)) {
    if (options_.ui == nullptr) return UiApi::RespondOff(*out);
    return options_.ui->Handle(std::move(request), std::move(out));
  }
  Route route;
  const bool anthropic_client = !request.Header("anthropic-version").empty();
  if (!ParseRoute(request.target, &route)) {
    return RespondError(WireApi::kChatCompletions,
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
  if (absl::StartsWith(route.path, "/mcp/") && options_.mcp != nullptr) {
    if (absl::Status access = CheckHttpAccess(options_.access, true, &request); !access.ok()) {
      return out->Respond(HttpStatusFor(access.code()),
                          {{"content-type", kJsonContentType}},
                          McpApi::ErrorBody(access.message()));
    }
    replayer::CallInfo call = CallFor(route, request);
    std::string name = route.path.substr(sizeof("/mcp/") - 1);
    return options_.mcp->Handle(std::move(call), std::move(name), std::move(request),
                                std::move(out));
  }
  // Which API the path names.
  WireCall wire;
  std::optional<WireApi> api;
  std::string gemini_method;
  std::string response_id;  // GET /v1/responses/{id}
  bool list_models = false;
  if (route.path == "/v1/chat/completions") {
    api = WireApi::kChatCompletions;
  } else if (route.path == "/v1/messages") {
    api = WireApi::kMessages;
  } else if (route.path == "/v1/responses") {
    api = WireApi::kResponses;
  } else if (absl::StartsWith(route.path, "/v1/responses/")) {
    api = WireApi::kResponses;
    response_id = route.path.substr(sizeof("/v1/responses/") - 1);
  } else if (route.path == "/v1/embeddings") {
    api = WireApi::kEmbeddings;
  } else if (route.path == "/v1/models") {
    list_models = true;
  } else if (ParseGeminiPath(route.path, &wire.model, &gemini_method)) {
    api = WireApi::kGemini;
  }
  const WireApi shape = api.has_value()
                            ? *api
                            : (anthropic_client ? WireApi::kMessages : WireApi::kChatCompletions);
  if (absl::Status access =
          CheckHttpAccess(options_.access, api.has_value() || list_models, &request);
      !access.ok()) {
    return RespondError(shape, access, *out);
  }
  replayer::CallInfo call = CallFor(route, request);
  if (list_models) {
    if (request.method != "GET") return MethodNotAllowed(shape, "GET", *out);
    if (absl::Status names = CheckNames(call); !names.ok()) {
      return RespondError(shape, names, *out);
    }
    return ListModels(call, anthropic_client, *out);
  }
  if (!api.has_value()) {
    return RespondError(shape,
                        absl::NotFoundError(absl::StrCat("no route for ", request.method, " ",
                                                         route.path, "; ", kRoutes)),
                        *out);
  }
  wire.api = *api;
  if (!response_id.empty() || route.path == "/v1/responses/") {
    if (request.method != "GET") return MethodNotAllowed(shape, "GET", *out);
    if (response_id.empty() || absl::StrContains(response_id, '/')) {
      return RespondError(shape,
                          absl::NotFoundError(absl::StrCat("no route for GET ", route.path,
                                                           "; expected /v1/responses/{id}")),
                          *out);
    }
    if (absl::Status names = CheckNames(call); !names.ok()) {
      return RespondError(shape, names, *out);
    }
    return GetResponse(call, response_id, *out);
  }
  if (wire.api == WireApi::kGemini) {
    if (gemini_method == "streamGenerateContent") {
      wire.gemini_stream = true;
      wire.gemini_sse = QueryParam(route.query, "alt") == "sse";
    } else if (gemini_method != "generateContent") {
      return RespondError(
          shape,
          absl::NotFoundError(absl::StrCat(
              "no route for ", request.method, " ", route.path, ": understudy serves the Gemini "
              "methods generateContent and streamGenerateContent, not \"",
              absl::CHexEscape(gemini_method.substr(0, 100)), "\"")),
          *out);
    }
    if (absl::StartsWith(wire.model, "models/")) wire.model = wire.model.substr(7);
    if (wire.model.empty() || !validation::IsValidUtf8(wire.model)) {
      return RespondError(shape,
                          absl::InvalidArgumentError(
                              "path: the model name in /v1beta/models/{model}:method is empty or "
                              "not valid UTF-8"),
                          *out);
    }
  }
  if (request.method != "POST") return MethodNotAllowed(shape, "POST", *out);
  absl::string_view content_type = request.Header("content-type");
  if (!absl::StartsWith(absl::AsciiStrToLower(content_type), "application/json")) {
    return out->Respond(
        415, {{"content-type", kJsonContentType}},
        ErrorBody(shape,
                  absl::InvalidArgumentError(
                      absl::StrCat("content-type: expected application/json, got \"",
                                   absl::CHexEscape(content_type.substr(0, 100)), "\"")),
                  "unsupported_media_type"));
  }
  if (absl::Status names = CheckNames(call); !names.ok()) return RespondError(shape, names, *out);
  call.attributes = CallAttributes(wire.api);

  // Secrets in configured body fields never reach matching or the store;
  // the upstream gets the body as sent.
  auto pending = std::make_shared<Pending>();
  pending->stored_body = options_.redactor->RedactBody(request.body);
  absl::StatusOr<provider::ParsedRequest> parsed = ParseRequest(wire, pending->stored_body);
  if (!parsed.ok()) return RespondError(shape, parsed.status(), *out);
  pending->parsed = *std::move(parsed);

  if (wire.api == WireApi::kResponses) {
    google::protobuf::RepeatedPtrField<v1::Message>* messages =
        pending->parsed.canonical.mutable_messages();
    // An item sent back by reference reads as the item, when this run
    // issued it; otherwise it is matched as sent.
    for (const provider::ParsedRequest::ItemReference& ref : pending->parsed.item_references) {
      absl::StatusOr<v1::Message> item =
          options_.engine->ResolveItem(call, ref.id, &provider::responses::OutputItems);
      if (item.ok()) {
        *messages->Mutable(ref.message) = *std::move(item);
      } else if (LogEnabled(LogLevel::kDebug)) {
        Log(LogLevel::kDebug, "item_reference_unresolved",
            {{"run", call.run}, {"item", ref.id}, {"status", item.status().ToString()}});
      }
    }
    // The conversation a previous response id names goes before this
    // request's own input, so that rules, agents and traces see all of it.
    const int lead = std::min(pending->parsed.leading_messages, messages->size());
    pending->turn_input.assign(messages->begin() + lead, messages->end());
    if (!pending->parsed.previous_response_id.empty()) {
      absl::StatusOr<std::vector<v1::Message>> before =
          options_.engine->ResolveResponse(call, pending->parsed.previous_response_id);
      if (!before.ok()) {
        absl::Status shown = before.status();
        if (absl::IsNotFound(shown)) {
          // OpenAI answers an unknown id with 400 and the parameter's name.
          shown = absl::InvalidArgumentError(
              absl::StrCat("previous_response_id: ", shown.message()));
        }
        return RespondError(shape, shown, *out);
      }
      google::protobuf::RepeatedPtrField<v1::Message> joined;
      joined.Reserve(messages->size() + static_cast<int>(before->size()));
      for (int i = 0; i < lead; ++i) *joined.Add() = std::move(messages->at(i));
      for (v1::Message& m : *before) *joined.Add() = std::move(m);
      for (int i = lead; i < messages->size(); ++i) *joined.Add() = std::move(messages->at(i));
      messages->Swap(&joined);
    }
  }

  absl::StatusOr<replayer::Decision> decided =
      options_.engine->Decide(call, pending->parsed.canonical, pending->parsed.stream);
  if (!decided.ok()) return RespondError(shape, decided.status(), *out);
  pending->decision = *std::move(decided);
  pending->wire = std::move(wire);
  pending->call = std::move(call);
  pending->route = std::move(route);
  pending->request = std::move(request);
  if (pending->decision.delay <= absl::ZeroDuration()) return Answer(std::move(pending), out);
  // A scripted delay: the answer (or the forwarding) starts afterwards.
  options_.env->ScheduleAfter(pending->decision.delay,
                              [this, pending, out] { Answer(pending, out); });
}

void HttpApi::Remember(const Pending& pending, const v1::Exchange& ex, std::string id,
                       std::function<std::string()> body, size_t body_bytes) {
  if (id.empty()) return;
  replayer::ChainLink link;
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
  const WireApi api = pending->wire.api;
  replayer::Decision& decision = pending->decision;
  if (const auto* miss = decision.As<replayer::MissAfterDelay>()) {
    return RespondError(api, miss->status, *out);
  }
  if (const auto* error = decision.As<replayer::ScriptedError>()) {
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
        ErrorBody(api, shown.ok() ? absl::UnknownError(shown.message()) : shown, /*code=*/""));
  }
  if (const auto* held = decision.As<replayer::HangUntilReleased>()) {
    std::shared_ptr<replayer::Hang> hang = held->hang;
    out->OnCancel([hang] { hang->Release(absl::CancelledError("the client went away")); });
    hang->Wait([api, out](absl::Status status) { RespondError(api, status, *out); });
    return;
  }
  if (const auto* reply = decision.As<replayer::ReplyFromExchange>()) {
    const v1::Exchange& ex = *reply->exchange;
    RenderContext context;
    context.parsed = &pending->parsed;
    context.call = &pending->wire;
    // `created` is the recording's (scripted answers, built at request time,
    // have none: 0), so that every replay sends the same bytes.
    context.created = ex.recorded_at_micros() / 1000000;
    if (api == WireApi::kResponses && !ex.has_error()) {
      // The id the caller gets: the recorded one (read into the canonical
      // answer when it was recorded), or one derived from the conversation
      // for an answer recorded another way or scripted. Kept before the
      // caller can continue from it; the object GET returns is made only
      // when asked, from what the run holds anyway.
      std::shared_ptr<const void> keep = reply->keepalive;
      std::function<std::string()> body;
      if (ex.has_native() && ex.native().provider() == NativeProvider(api)) {
        const v1::NativeExchange* native = &ex.native();
        body = [keep, native] { return RecordedResponseObject(*native); };
        context.response_id = absl::StartsWith(ex.response().id(), "resp")
                                  ? ex.response().id()
                                  : provider::responses::ResponseIdOf(body());
      }
      if (context.response_id.empty()) {
        context.response_id = ResponseIdFor(pending->parsed.canonical, ex);
        body = [keep, answer = &ex.response(), id = context.response_id,
                created = context.created, model = pending->parsed.canonical.model()] {
          RenderContext at_get;
          at_get.response_id = id;
          at_get.created = created;
          v1::CompletionResponse response = *answer;
          if (response.model().empty()) response.set_model(model);
          return RenderBody(WireApi::kResponses, response, at_get).value_or("");
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
  if (decision.As<replayer::DropConnection>() != nullptr) return out->Abort();

  recorder::UpstreamHttpInterface* upstream = api == WireApi::kMessages ? options_.anthropic_upstream
                                              : api == WireApi::kGemini ? options_.gemini_upstream
                                                                        : options_.openai_upstream;
  if (upstream == nullptr) {
    const std::string name(UpstreamName(api));
    return RespondError(
        api,
        absl::FailedPreconditionError(absl::StrCat(
            "no ", name, " upstream to forward to: start the server with --upstream ", name,
            "=URL")),
        *out);
  }
  Forward(std::move(pending), upstream, std::move(out));
}

void HttpApi::Forward(std::shared_ptr<Pending> pending, recorder::UpstreamHttpInterface* upstream,
                      std::shared_ptr<HttpResponder> out) {
  const WireApi api = pending->wire.api;
  std::function<void(const v1::Exchange&)> on_recorded;
  if (api == WireApi::kResponses) {
    on_recorded = [this, pending](const v1::Exchange& ex) {
      auto body = std::make_shared<const std::string>(RecordedResponseObject(ex.native()));
      std::string id = provider::responses::ResponseIdOf(*body);
      if (id.empty()) id = ex.response().id();
      Remember(*pending, ex, std::move(id), [body] { return *body; }, body->size());
    };
  }
  auto relay = std::make_shared<Relay>(api, pending->parsed.stream,
                                       pending->parsed.json_array_stream, options_.engine,
                                       std::move(pending->decision.As<replayer::ForwardUpstream>()->ticket),
                                       out, options_.env, std::move(on_recorded));
  v1::NativeExchange* native = relay->native();
  native->set_provider(std::string(NativeProvider(api)));
  // The path as recorded: no query, but for Gemini's stream form (never its
  // `key`, which is a credential).
  std::string recorded_path = pending->route.path;
  if (api == WireApi::kGemini && pending->wire.gemini_sse) absl::StrAppend(&recorded_path, "?alt=sse");
  native->set_path(std::move(recorded_path));
  native->set_request_body(std::move(pending->stored_body));

  recorder::UpstreamHttpRequest forward;
  forward.method = "POST";
  forward.path = pending->route.path;
  // Gemini's query (alt, and a key given there) goes upstream as sent.
  if (api == WireApi::kGemini && !pending->route.query.empty()) {
    absl::StrAppend(&forward.path, "?", pending->route.query);
  }
  forward.headers = ForwardHeaders(pending->request);
  forward.body = std::move(pending->request.body);
  std::shared_ptr<recorder::UpstreamHttpCall> transfer = upstream->Send(std::move(forward), relay);
  // A client that goes away cancels the upstream call; nothing is recorded.
  out->OnCancel([transfer]() { transfer->Cancel(); });
}

}  // namespace service
}  // namespace understudy
