#include "service/http_api.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "base/http_status.h"
#include "base/scheduler.h"
#include "base/log.h"
#include "nlohmann/json.hpp"
#include "provider/anthropic.h"
#include "provider/openai.h"
#include "provider/sse.h"
#include "recorder/stream.h"
#include "validation/json_bounds.h"
#include "validation/utf8.h"

namespace understudy {
namespace service {
namespace {

enum class Api { kOpenAI, kAnthropic };

constexpr char kJson[] = "application/json";
constexpr char kEventStream[] = "text/event-stream; charset=utf-8";

const char* ProviderName(Api api) { return api == Api::kOpenAI ? "openai" : "anthropic"; }

// A request's route, once the /run/{run}[/agent/{agent}] prefix is off.
struct Route {
  std::string run;
  std::string agent;
  std::string path;  // e.g. "/v1/chat/completions", no query
};

// Splits the optional prefix off `target`. False for a malformed prefix.
bool ParseRoute(absl::string_view target, Route* route) {
  size_t q = target.find('?');
  absl::string_view path = target.substr(0, q);
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
    return true;
  }
  route->path = std::string(path);
  return true;
}

std::string ErrorBodyFor(Api api, const absl::Status& status, absl::string_view code) {
  if (api == Api::kAnthropic) {
    return provider::anthropic::ErrorBody(status.message(),
                                          provider::anthropic::ErrorType(status.code()));
  }
  return provider::openai::ErrorBody(status.message(), provider::openai::ErrorType(status.code()),
                                     code);
}

// The stable code a test can check, by what went wrong.
std::string ErrorCodeFor(const absl::Status& status) {
  if (status.GetPayload(replayer::kMissPayloadUrl).has_value()) return "understudy_no_recording";
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return "invalid_request";
    case absl::StatusCode::kNotFound:
      return "understudy_not_found";
    case absl::StatusCode::kFailedPrecondition:
      return "understudy_failed_precondition";
    case absl::StatusCode::kUnavailable:
      return "understudy_upstream_unavailable";
    default:
      return "";
  }
}

void RespondError(Api api, const absl::Status& status, HttpResponder& out) {
  HttpHeaders headers = {{"content-type", kJson}};
  if (status.GetPayload(replayer::kMissPayloadUrl).has_value()) {
    headers.emplace_back("x-understudy-error", "no_recording");
  }
  out.Respond(HttpStatusFor(status.code()), std::move(headers),
              ErrorBodyFor(api, status, ErrorCodeFor(status)));
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

// Response headers recorded and replayed: what SDKs read besides the body
// (request ids for support tickets, rate-limit state, retry hints). Framing
// headers are the server's; anything else (cookies, account ids) stays out.
bool IsReplayedHeader(absl::string_view name) {
  return name == "x-request-id" || name == "request-id" || name == "retry-after" ||
         name == "retry-after-ms" || name == "openai-processing-ms" ||
         name == "openai-version" || absl::StartsWith(name, "x-ratelimit-") ||
         absl::StartsWith(name, "anthropic-ratelimit-");
}

absl::Time NotBefore(absl::Time start, int64_t offset_micros, double speed) {
  if (speed <= 0) return absl::InfinitePast();
  return start + absl::Microseconds(static_cast<int64_t>(static_cast<double>(offset_micros) / speed));
}

// Answers from a recorded (or scripted) exchange, in the caller's shape.
// `disconnect_after` >= 0 drops the connection after that many stream
// events (a whole response is never sent).
// `keepalive` holds `ex` alive: recorded stream events are sent from it
// without a copy.
void RenderRecorded(Api api, const v1::Exchange& ex, std::shared_ptr<const void> keepalive,
                    bool stream, bool include_usage, double speed, absl::Time start,
                    int64_t disconnect_after, HttpResponder& out) {
  if (disconnect_after == 0 || (disconnect_after > 0 && !stream)) return out.Abort();
  const auto finish = [&] {
    if (disconnect_after >= 0) {
      out.Abort();
    } else {
      out.End();
    }
  };
  const size_t limit = disconnect_after < 0 ? SIZE_MAX : static_cast<size_t>(disconnect_after);
  const v1::NativeExchange& native = ex.native();
  const bool same_api = ex.has_native() && native.provider() == ProviderName(api);
  const std::string content_type =
      native.content_type().empty() ? std::string(kJson) : native.content_type();
  HttpHeaders headers = {{"content-type", content_type}};
  for (const v1::NativeHeader& h : native.headers()) headers.emplace_back(h.name(), h.value());
  // The recorded bytes, when the recording was made over this API and in
  // this form (streamed or not).
  if (same_api && stream && native.chunks_size() > 0) {
    out.StartStream(native.status() == 0 ? 200 : native.status(), std::move(headers));
    const size_t n = std::min(limit, static_cast<size_t>(native.chunks_size()));
    // Every event handed over at once (one HTTP chunk each), paced by its
    // recorded offset when a speed is set, straight from the recording: a
    // client that reads slowly costs no copy of it.
    std::vector<HttpSlice> slices;
    slices.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const v1::NativeChunk& chunk = native.chunks(static_cast<int>(i));
      slices.push_back({chunk.data(), NotBefore(start, chunk.offset_micros(), speed)});
    }
    out.WriteShared(std::move(keepalive), std::move(slices));
    return finish();
  }
  if (same_api && native.chunks_size() == 0 && (!stream || native.status() >= 300)) {
    out.Respond(native.status() == 0 ? 200 : native.status(), std::move(headers),
                native.response_body());
    return;
  }
  // Rendered from the canonical exchange.
  if (ex.has_error()) {
    RespondError(api, absl::Status(static_cast<absl::StatusCode>(ex.error().code()),
                                   ex.error().message()),
                 out);
    return;
  }
  // `created` is the recording's (scripted answers, built at request time,
  // have none: 0), so that every replay sends the same bytes.
  const int64_t created = ex.recorded_at_micros() / 1000000;
  if (!stream) {
    std::string body;
    if (api == Api::kOpenAI) {
      body = provider::openai::RenderResponse(ex.response(), created);
    } else {
      absl::StatusOr<std::string> rendered = provider::anthropic::RenderResponse(ex.response());
      if (!rendered.ok()) return RespondError(api, rendered.status(), out);
      body = std::move(*rendered);
    }
    out.Respond(200, {{"content-type", kJson}}, std::move(body));
    return;
  }
  google::protobuf::RepeatedPtrField<v1::CompletionChunk> chunks = ex.chunks();
  if (chunks.empty()) *chunks.Add() = recorder::ChunkFromResponse(ex.response());
  // A streaming caller answered from a whole recorded body of this API: the
  // stream says what the body said (created, service tier, fingerprint).
  const provider::openai::StreamMeta meta =
      same_api && native.status() < 300
          ? provider::openai::StreamMetaFromBody(native.response_body(), created)
          : provider::openai::StreamMeta{created, "", ""};
  std::vector<std::string> events =
      api == Api::kOpenAI ? provider::openai::RenderStream(chunks, include_usage, meta)
                          : provider::anthropic::RenderStream(chunks);
  out.StartStream(200, {{"content-type", kEventStream}});
  // Rendered events follow the chunks one to one only for OpenAI; pace by
  // chunk where that holds, else send as they are. Sent from one rendered
  // copy, shared with the connection.
  const bool one_to_one = api == Api::kOpenAI;
  if (events.size() > limit) events.resize(limit);
  auto rendered = std::make_shared<const std::vector<std::string>>(std::move(events));
  std::vector<HttpSlice> slices;
  slices.reserve(rendered->size());
  for (size_t i = 0; i < rendered->size(); ++i) {
    absl::Time when = absl::InfinitePast();
    if (speed > 0 && one_to_one && i < static_cast<size_t>(chunks.size())) {
      when = NotBefore(start, chunks[static_cast<int>(i)].offset_micros(), speed);
    }
    slices.push_back({(*rendered)[i], when});
  }
  out.WriteShared(std::move(rendered), std::move(slices));
  finish();
}

// Relays one forwarded request's response to the client as it arrives and
// builds the exchange to record. Upstream callbacks come from one thread at
// a time; the responder may be used from any thread.
class Relay final : public recorder::UpstreamHttpObserver {
 public:
  Relay(Api api, bool stream, replayer::Engine* engine,
        std::unique_ptr<replayer::ForwardTicket> ticket, std::shared_ptr<HttpResponder> out,
        Clock* clock)
      : api_(api),
        stream_(stream),
        engine_(engine),
        ticket_(std::move(ticket)),
        out_(std::move(out)),
        clock_(clock) {}

  v1::NativeExchange* native() { return exchange_.mutable_native(); }

  void OnHead(int status, recorder::UpstreamHttpHeaders headers) override {
    status_ = status;
    for (auto& [name, value] : headers) {
      if (name == "content-type") {
        content_type_ = value;
      } else if (IsReplayedHeader(name)) {
        v1::NativeHeader* h = native()->add_headers();
        h->set_name(name);
        h->set_value(validation::SanitizeUtf8(value));  // stored: must be UTF-8
        relayed_.emplace_back(std::move(name), std::move(value));
      }
    }
    native()->set_status(status);
    native()->set_content_type(content_type_);
    HttpHeaders out_headers = {{"content-type", content_type_}};
    out_headers.insert(out_headers.end(), relayed_.begin(), relayed_.end());
    streaming_ = stream_ && status >= 200 && status < 300 &&
                 absl::StartsWith(absl::AsciiStrToLower(content_type_), "text/event-stream");
    if (streaming_) out_->StartStream(status, std::move(out_headers));
  }

  void OnData(absl::string_view bytes) override {
    if (!streaming_) {
      if (body_.size() + bytes.size() > kMaxBody) {
        failure_ = absl::ResourceExhaustedError("upstream response over 64 MiB");
        return;
      }
      body_.append(bytes.data(), bytes.size());
      return;
    }
    absl::StatusOr<std::vector<provider::SseEvent>> events = parser_.Feed(bytes);
    if (!events.ok()) {
      failure_ = events.status();
      return;
    }
    for (provider::SseEvent& e : *events) Event(std::move(e));
  }

  void OnDone(absl::Status transport) override {
    if (streaming_ && transport.ok()) {
      absl::StatusOr<std::vector<provider::SseEvent>> rest = parser_.Finish();
      if (rest.ok()) {
        for (provider::SseEvent& e : *rest) Event(std::move(e));
      }
    }
    if (transport.ok() && !failure_.ok()) transport = failure_;
    absl::Status status = transport;
    if (transport.ok()) {
      if (streaming_) {
        *exchange_.mutable_response() = recorder::AssembleResponse(exchange_.chunks());
        if (!stream_error_.ok()) status = stream_error_;
      } else {
        native()->set_response_body(body_);
        status = ResponseStatus();
      }
    }
    std::unique_ptr<replayer::ForwardTicket> ticket = std::move(ticket_);
    if (!transport.ok()) {
      // An outage or a client that went away: nothing is recorded.
      Log(LogLevel::kWarning, "upstream_failed",
          {{"provider", ProviderName(api_)}, {"status", transport.ToString()}});
      if (streaming_) {
        // What arrived goes out, then the connection drops as upstream's did.
        if (!held_.empty()) out_->Write(std::move(held_));
        out_->Abort();
      } else {
        absl::Status shown(transport.code(),
                           absl::StrCat("upstream ", ProviderName(api_), ": ", transport.message()));
        RespondError(api_, shown, *out_);
      }
      engine_->FinishForward(std::move(ticket), std::move(exchange_), transport,
                             [](absl::Status) {});
      return;
    }
    std::shared_ptr<HttpResponder> out = out_;
    const bool streaming = streaming_;
    const int http_status = status_;
    HttpHeaders headers = {{"content-type", content_type_}};
    headers.insert(headers.end(), relayed_.begin(), relayed_.end());
    std::string body = body_;
    std::string held = std::move(held_);
    Api api = api_;
    engine_->FinishForward(
        std::move(ticket), std::move(exchange_), status,
        [out, streaming, http_status, headers = std::move(headers), body = std::move(body), api,
         status, held = std::move(held)](absl::Status committed) mutable {
          // The answer ends only once it is recorded. `committed` is the
          // upstream's own status unless recording failed.
          const bool recording_failed = committed != status;
          if (streaming) {
            if (recording_failed) {
              out->Abort();
            } else {
              if (!held.empty()) out->Write(std::move(held));
              out->End();
            }
            return;
          }
          if (recording_failed) return RespondError(api, committed, *out);
          out->Respond(http_status, std::move(headers), std::move(body));
        });
  }

 private:
  static constexpr size_t kMaxBody = 64 << 20;

  void Event(provider::SseEvent e) {
    const int64_t offset = absl::ToInt64Microseconds(clock_->Now() - ticket_start());
    v1::NativeChunk* chunk = native()->add_chunks();
    chunk->set_data(e.raw);
    chunk->set_offset_micros(offset);
    // The latest event is held back until the next one arrives, and the last
    // one until the exchange is committed (OnDone): a client that has the
    // whole answer knows it is recorded.
    if (!held_.empty()) out_->Write(std::move(held_));
    held_ = e.raw;
    absl::StatusOr<std::optional<v1::CompletionChunk>> decoded =
        api_ == Api::kOpenAI ? openai_.Decode(e) : anthropic_.Decode(e);
    if (!decoded.ok()) {
      // An error event in the stream: kept natively, recorded as the error.
      if (stream_error_.ok()) stream_error_ = decoded.status();
      return;
    }
    if (decoded->has_value()) {
      v1::CompletionChunk* c = exchange_.add_chunks();
      *c = std::move(**decoded);
      c->set_offset_micros(offset);
    }
  }

  absl::Time ticket_start() const { return ticket_ != nullptr ? ticket_->start() : start_; }

  // The status a whole (not streamed) response stands for, and its
  // canonical form.
  absl::Status ResponseStatus() {
    if (status_ >= 200 && status_ < 300) {
      absl::StatusOr<v1::CompletionResponse> r = api_ == Api::kOpenAI
                                                     ? provider::openai::ParseResponse(body_)
                                                     : provider::anthropic::ParseResponse(body_);
      if (r.ok()) {
        *exchange_.mutable_response() = std::move(*r);
      } else {
        Log(LogLevel::kWarning, "upstream_response_not_understood",
            {{"provider", ProviderName(api_)}, {"status", r.status().ToString()}});
      }
      return absl::OkStatus();
    }
    std::string message = absl::StrCat("upstream answered HTTP ", status_);
    nlohmann::json j = validation::ParseJsonOrDiscarded<nlohmann::json>(body_);
    if (!j.is_discarded() && j.is_object() && j.contains("error") && j["error"].is_object() &&
        j["error"].contains("message") && j["error"]["message"].is_string()) {
      message = j["error"]["message"].get<std::string>();
    }
    return absl::Status(StatusCodeForHttp(status_), message);
  }

  const Api api_;
  const bool stream_;
  replayer::Engine* const engine_;
  std::unique_ptr<replayer::ForwardTicket> ticket_;
  std::shared_ptr<HttpResponder> out_;
  Clock* const clock_;
  absl::Time start_ = absl::Now();

  int status_ = 0;
  std::string content_type_;
  HttpHeaders relayed_;
  bool streaming_ = false;
  std::string body_;
  // The latest SSE event, not yet sent (see Event).
  std::string held_;
  provider::SseParser parser_;
  provider::openai::StreamDecoder openai_;
  provider::anthropic::StreamDecoder anthropic_;
  v1::Exchange exchange_;
  absl::Status failure_;
  absl::Status stream_error_;
};

}  // namespace

HttpApi::HttpApi(HttpApiOptions options) : options_(std::move(options)) {
  if (options_.clock == nullptr) options_.clock = Clock::Real();
  if (options_.redactor == nullptr) options_.redactor = &default_redactor_;
}

std::string HttpApi::ServerErrorBody(int status, absl::string_view message) {
  return provider::openai::ErrorBody(message, status == 413 ? "invalid_request_error"
                                                            : "invalid_request_error",
                                     status == 413 ? "body_too_large" : "bad_request");
}

void HttpApi::Handle(HttpRequest request, std::shared_ptr<HttpResponder> out) {
  Route route;
  if (!ParseRoute(request.target, &route)) {
    return RespondError(Api::kOpenAI,
                        absl::InvalidArgumentError(absl::StrCat(
                            "path: expected /run/{run}[/agent/{agent}]/v1/..., got \"",
                            absl::CHexEscape(request.target.substr(0, 200)), "\"")),
                        *out);
  }
  const bool anthropic_client = !request.Header("anthropic-version").empty();
  const bool provider_route = route.path == "/v1/chat/completions" ||
                              route.path == "/v1/messages" || route.path == "/v1/models";
  if (absl::Status access = CheckHttpAccess(options_.access, provider_route, &request);
      !access.ok()) {
    return RespondError(anthropic_client || route.path == "/v1/messages" ? Api::kAnthropic
                                                                        : Api::kOpenAI,
                        access, *out);
  }
  Api api;
  if (route.path == "/v1/chat/completions") {
    api = Api::kOpenAI;
  } else if (route.path == "/v1/messages") {
    api = Api::kAnthropic;
  } else if (route.path == "/v1/models") {
    if (request.method != "GET") {
      return out->Respond(405, {{"content-type", kJson}, {"allow", "GET"}},
                          provider::openai::ErrorBody("method not allowed: use GET",
                                                      "invalid_request_error", "method_not_allowed"));
    }
    // The models this run's recording answers as, in the caller's shape.
    replayer::CallInfo call;
    call.run = !route.run.empty() ? route.run : std::string(request.Header("x-understudy-run"));
    if (absl::Status names = CheckNames(call); !names.ok()) {
      return RespondError(anthropic_client ? Api::kAnthropic : Api::kOpenAI, names, *out);
    }
    absl::StatusOr<std::vector<std::string>> models = options_.engine->RunModels(call);
    if (call.run.empty() && absl::IsInvalidArgument(models.status())) {
      // No run named and no default run: SDKs list models at start-up, before
      // any run exists; they get a valid, empty list.
      models = std::vector<std::string>();
    }
    if (!models.ok()) {
      return RespondError(anthropic_client ? Api::kAnthropic : Api::kOpenAI, models.status(), *out);
    }
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
      list["first_id"] = models->empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(models->front());
      list["last_id"] = models->empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(models->back());
    } else {
      list["object"] = "list";
      list["data"] = data;
    }
    return out->Respond(200, {{"content-type", kJson}}, list.dump());
  } else {
    return RespondError(anthropic_client ? Api::kAnthropic : Api::kOpenAI,
                        absl::NotFoundError(absl::StrCat(
                            "no route for ", request.method, " ", route.path,
                            "; understudy serves POST /v1/chat/completions, POST /v1/messages "
                            "and GET /v1/models")),
                        *out);
  }
  if (request.method != "POST") {
    return out->Respond(405, {{"content-type", kJson}, {"allow", "POST"}},
                        ErrorBodyFor(api, absl::InvalidArgumentError("method not allowed: use POST"),
                                     "method_not_allowed"));
  }
  absl::string_view content_type = request.Header("content-type");
  if (!absl::StartsWith(absl::AsciiStrToLower(content_type), "application/json")) {
    return out->Respond(
        415, {{"content-type", kJson}},
        ErrorBodyFor(api,
                     absl::InvalidArgumentError(absl::StrCat(
                         "content-type: expected application/json, got \"",
                         absl::CHexEscape(content_type.substr(0, 100)), "\"")),
                     "unsupported_media_type"));
  }

  // Secrets in configured body fields never reach matching or the store;
  // the upstream gets the body as sent.
  std::string stored_body = options_.redactor->RedactBody(request.body);
  absl::StatusOr<provider::ParsedRequest> parsed =
      api == Api::kOpenAI ? provider::openai::ParseRequest(stored_body)
                          : provider::anthropic::ParseRequest(stored_body);
  if (!parsed.ok()) return RespondError(api, parsed.status(), *out);

  replayer::CallInfo call;
  call.run = !route.run.empty() ? route.run : std::string(request.Header("x-understudy-run"));
  call.agent = !route.agent.empty() ? route.agent : std::string(request.Header("x-understudy-agent"));
  if (absl::Status names = CheckNames(call); !names.ok()) return RespondError(api, names, *out);
  absl::StatusOr<replayer::Decision> decided =
      options_.engine->Decide(call, parsed->canonical, parsed->stream);
  if (!decided.ok()) return RespondError(api, decided.status(), *out);
  auto decision = std::make_shared<replayer::Decision>(*std::move(decided));
  auto answer = [this, api, decision, out,
                 parsed = std::make_shared<provider::ParsedRequest>(*std::move(parsed)),
                 path = std::move(route.path), stored_body = std::move(stored_body),
                 request = std::make_shared<HttpRequest>(std::move(request))]() mutable {
    Answer(static_cast<int>(api), *decision, *parsed, path, std::move(stored_body), std::move(*request), out);
  };
  if (decision->delay <= absl::ZeroDuration()) return answer();
  // A scripted delay: the answer (or the forwarding) starts afterwards.
  Scheduler::Shared()->RunAt(absl::Now() + decision->delay, std::move(answer));
}

void HttpApi::Answer(int api_index, replayer::Decision& decision,
                     const provider::ParsedRequest& parsed, const std::string& path,
                     std::string stored_body, HttpRequest request,
                     std::shared_ptr<HttpResponder> out) {
  const Api api = static_cast<Api>(api_index);
  if (decision.error.has_value() && decision.http_status == 0) {
    // A miss after a scripted delay.
    return RespondError(api, *decision.error, *out);
  }
  if (decision.error.has_value()) {
    // A scripted error: the HTTP status and body a provider would send.
    const absl::Status shown(StatusCodeForHttp(decision.http_status),
                             decision.error->message());
    HttpHeaders headers = {{"content-type", kJson}};
    if (decision.retry_after_seconds >= 0) {
      headers.emplace_back("retry-after",
                           absl::StrCat(static_cast<int64_t>(std::ceil(decision.retry_after_seconds))));
      headers.emplace_back("retry-after-ms", absl::StrCat(static_cast<int64_t>(
                                                 std::llround(decision.retry_after_seconds * 1000))));
    }
    return out->Respond(decision.http_status, std::move(headers),
                        ErrorBodyFor(api, shown.ok() ? absl::UnknownError(shown.message()) : shown,
                                     /*code=*/""));
  }
  if (decision.hang != nullptr) {
    std::shared_ptr<replayer::Hang> hang = decision.hang;
    out->OnCancel([hang] { hang->Release(absl::CancelledError("the client went away")); });
    hang->Wait([api, out](absl::Status status) { RespondError(api, status, *out); });
    return;
  }
  if (decision.recorded != nullptr) {
    // `decision` (and its keepalive) lives until the answer is queued; the
    // responder copies what it sends.
    return RenderRecorded(api, *decision.recorded, decision.keepalive, parsed.stream,
                          parsed.include_usage, decision.speed, options_.clock->Now(),
                          decision.disconnect_after, *out);
  }
  if (decision.disconnect_after >= 0) return out->Abort();

  recorder::UpstreamHttpInterface* upstream =
      api == Api::kOpenAI ? options_.openai_upstream : options_.anthropic_upstream;
  if (upstream == nullptr) {
    return RespondError(
        api,
        absl::FailedPreconditionError(absl::StrCat(
            "no ", ProviderName(api), " upstream to forward to: start the server with --upstream ",
            ProviderName(api), "=URL")),
        *out);
  }
  auto relay = std::make_shared<Relay>(api, parsed.stream, options_.engine,
                                       std::move(decision.forward), out, options_.clock);
  v1::NativeExchange* native = relay->native();
  native->set_provider(ProviderName(api));
  native->set_path(path);
  native->set_request_body(std::move(stored_body));

  recorder::UpstreamHttpRequest forward;
  forward.method = "POST";
  forward.path = path;
  forward.headers = ForwardHeaders(request);
  forward.body = std::move(request.body);
  std::shared_ptr<recorder::UpstreamHttpCall> transfer = upstream->Send(std::move(forward), relay);
  // A client that goes away cancels the upstream call; nothing is recorded.
  out->OnCancel([transfer]() { transfer->Cancel(); });
}

}  // namespace service
}  // namespace understudy
