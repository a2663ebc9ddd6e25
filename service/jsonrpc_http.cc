#include "service/jsonrpc_http.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace understudy {
namespace service {

namespace jsonrpc = provider::jsonrpc;
using provider::Json;

namespace {

bool IsMiss(const absl::Status& status) {
  return absl::IsNotFound(status) && status.GetPayload(engine::kMissPayloadUrl).has_value();
}

}  // namespace

std::string JsonRpcErrorFor(const Json& id, int code, const absl::Status& status) {
  const std::string data =
      IsMiss(status)
          ? std::string(R"({"understudy":"no_recording"})")
          : absl::StrCat(R"({"understudy":")", absl::StatusCodeToString(status.code()), R"("})");
  return jsonrpc::ErrorResponse(id, code, status.message(), data);
}

std::string JsonRpcErrorFor(const Json& id, const absl::Status& status) {
  int code = jsonrpc::kInternalError;
  if (IsMiss(status)) {
    code = jsonrpc::kNoRecording;
  } else if (absl::IsInvalidArgument(status)) {
    code = jsonrpc::kInvalidParams;
  }
  return JsonRpcErrorFor(id, code, status);
}

void RespondJson(HttpResponder& out, int status, std::string body, HttpHeaders headers) {
  headers.insert(headers.begin(), {"content-type", kJsonType});
  out.Respond(status, std::move(headers), std::move(body));
}

bool AcceptsEventStream(const HttpRequest& request) {
  return absl::StrContains(absl::AsciiStrToLower(request.Header("accept")), kEventStreamType);
}

std::string SseFrame(absl::string_view event, absl::string_view data) {
  if (event.empty()) return absl::StrCat("data: ", data, "\n\n");
  return absl::StrCat("event: ", event, "\ndata: ", data, "\n\n");
}

upstream::UpstreamHttpHeaders ForwardedHeaders(const HttpRequest& request,
                                               std::initializer_list<absl::string_view> also_dropped) {
  upstream::UpstreamHttpHeaders out;
  for (const auto& [name, value] : request.headers) {
    if (name == "host" || name == "connection" || name == "content-length" ||
        name == "transfer-encoding" || name == "keep-alive" || name == "te" ||
        name == "trailer" || name == "upgrade" || name == "expect" ||
        name == "accept-encoding" || absl::StartsWith(name, "proxy-") ||
        absl::StartsWith(name, "x-understudy-")) {
      continue;
    }
    bool dropped = false;
    for (absl::string_view d : also_dropped) dropped |= name == d;
    if (!dropped) out.emplace_back(name, value);
  }
  return out;
}

absl::StatusOr<std::pair<std::string, std::string>> SplitUpstreamUrl(absl::string_view url,
                                                                     absl::string_view flag) {
  for (size_t i = 0; i < url.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(url[i]);
    if (c <= 0x20 || c >= 0x7f) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, " \"", absl::CHexEscape(url.substr(0, 200)), "\": byte ", i + 1,
          " is not allowed in a URL (spaces, control characters and non-ASCII are "
          "percent-encoded: %20, %C3%BF)"));
    }
  }
  absl::string_view rest = url;
  for (absl::string_view scheme : {"http://", "https://"}) {
    if (absl::StartsWith(rest, scheme)) {
      const size_t slash = rest.find('/', scheme.size());
      if (slash == absl::string_view::npos) {
        if (rest.size() == scheme.size()) break;
        return std::make_pair(std::string(rest), std::string("/"));
      }
      if (slash == scheme.size()) break;
      return std::make_pair(std::string(rest.substr(0, slash)), std::string(rest.substr(slash)));
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      flag, " \"", absl::CHexEscape(url.substr(0, 200)),
      "\": expected http://HOST[:PORT][/PATH] or https://…"));
}

RecordedEvents::RecordedEvents(std::shared_ptr<const void> keepalive,
                               const v1::NativeExchange& native,
                               std::function<std::string(absl::string_view)> rewrite,
                               std::string event, absl::Time start, double speed)
    : keepalive_(std::move(keepalive)),
      native_(native),
      rewrite_(std::move(rewrite)),
      event_(std::move(event)),
      start_(start),
      speed_(speed) {}

std::optional<HttpPiece> RecordedEvents::Next() {
  if (next_ >= native_.chunks_size()) return std::nullopt;
  const v1::NativeChunk& chunk = native_.chunks(next_++);
  const absl::Time at = speed_ > 0 ? start_ + absl::Microseconds(chunk.offset_micros() / speed_)
                                   : absl::InfinitePast();
  return HttpPiece{rewrite_ ? SseFrame(event_, rewrite_(chunk.data())) : SseFrame(event_, chunk.data()),
                   at};
}

JsonRpcRelay::JsonRpcRelay(JsonRpcRelayOptions options,
                           std::unique_ptr<engine::ForwardTicket> ticket, engine::Engine* engine,
                           std::shared_ptr<HttpResponder> out, Env* env)
    : options_(std::move(options)),
      ticket_(std::move(ticket)),
      engine_(engine),
      out_(std::move(out)),
      env_(env),
      start_(env_->Now()) {
  native_.set_provider(options_.provider);
  native_.set_path(options_.native_path);
  native_.set_request_body(options_.stored_body);
}

void JsonRpcRelay::OnHead(int status, upstream::UpstreamHttpHeaders headers) {
  status_ = status;
  std::string content_type;
  for (const auto& [name, value] : headers) {
    if (name == "content-type") content_type = absl::AsciiStrToLower(value);
    if (options_.on_upstream_header) options_.on_upstream_header(name, value);
  }
  native_.set_status(status);
  stream_ = status == 200 && absl::StartsWith(content_type, kEventStreamType);
  native_.set_content_type(stream_ ? kEventStreamType : kJsonType);
  if (stream_ && options_.client_takes_stream) {
    HttpHeaders out_headers = {{"content-type", kEventStreamType}, {"cache-control", "no-cache"}};
    for (const auto& header : options_.answer_headers) out_headers.push_back(header);
    out_->StartStream(200, std::move(out_headers));
    started_ = true;
  }
}

void JsonRpcRelay::OnData(absl::string_view bytes) {
  if (!stream_) {
    body_.append(bytes.data(), bytes.size());
    return;
  }
  absl::StatusOr<std::vector<provider::SseEvent>> events = parser_.Feed(bytes);
  if (!events.ok()) {
    failure_ = events.status();
    return;
  }
  for (provider::SseEvent& e : *events) OnMessage(std::move(e.data));
}

void JsonRpcRelay::OnMessage(std::string data) {
  v1::NativeChunk chunk;
  chunk.set_offset_micros(absl::ToInt64Microseconds(env_->Now() - start_));
  absl::StatusOr<jsonrpc::Message> parsed = jsonrpc::ParseMessage(data, "upstream event");
  const bool is_response = parsed.ok() && parsed->kind == jsonrpc::Message::Kind::kResponse &&
                           parsed->id == options_.id;
  if (options_.events == StreamEvents::kNotificationsThenResponse) {
    if (is_response) {
      response_ = *std::move(parsed);
      response_text_ = data;
    } else if (started_) {
      // Notifications reach the client as they come; the response waits
      // for the recording's commit.
      out_->Write(SseFrame(options_.sse_event, data));
    }
  } else if (is_response) {
    outcomes_.push_back(jsonrpc::OutcomeOf(*parsed));
    if (held_.has_value() && started_) out_->Write(SseFrame(options_.sse_event, *held_));
    held_ = data;
  } else if (started_) {
    out_->Write(SseFrame(options_.sse_event, data));
  }
  chunk.set_data(std::move(data));
  chunks_.push_back(std::move(chunk));
}

absl::Status JsonRpcRelay::Outcome(absl::Status status, v1::Exchange* exchange,
                                   std::string* final_message) {
  if (status.ok() && !failure_.ok()) status = failure_;
  if (status.ok() && status_ != 200) {
    // An error body in JSON-RPC's shape (mcp-proxy's, when the server's
    // process died) says it best.
    std::string said = absl::CHexEscape(absl::string_view(body_).substr(0, 300));
    absl::StatusOr<jsonrpc::Message> error = jsonrpc::ParseMessage(body_, "upstream body");
    if (error.ok() && error->kind == jsonrpc::Message::Kind::kResponse) {
      const jsonrpc::Outcome outcome = jsonrpc::OutcomeOf(*error);
      if (outcome.is_error) said = outcome.message;
    }
    return absl::UnavailableError(
        absl::StrCat(options_.label, " answered HTTP ", status_, ": ", said));
  }
  if (!status.ok()) {
    if (absl::IsCancelled(status)) return status;
    return absl::Status(status.code(), absl::StrCat(options_.label, " failed mid-call: ",
                                                    status.message()));
  }
  if (!stream_) {
    absl::StatusOr<jsonrpc::Message> parsed = jsonrpc::ParseMessage(body_, "upstream body");
    if (parsed.ok() && parsed->kind == jsonrpc::Message::Kind::kResponse) {
      outcomes_ = {jsonrpc::OutcomeOf(*parsed)};
      response_ = *std::move(parsed);
      response_text_ = body_;
      held_ = body_;
    }
  }
  jsonrpc::Outcome outcome;
  if (options_.events == StreamEvents::kNotificationsThenResponse || !stream_) {
    if (!response_.has_value()) {
      return absl::UnavailableError(
          absl::StrCat(options_.label, " ended its answer without a response"));
    }
    outcome = jsonrpc::OutcomeOf(*response_);
    *final_message = response_text_;
  } else {
    if (outcomes_.empty()) {
      return absl::UnavailableError(
          absl::StrCat(options_.label, " ended its stream without an event"));
    }
    std::vector<absl::string_view> results;
    for (const jsonrpc::Outcome& o : outcomes_) {
      if (o.is_error) {
        outcome = o;
        break;
      }
      results.push_back(o.result_json);
    }
    if (!outcome.is_error) outcome.result_json = absl::StrCat("[", absl::StrJoin(results, ","), "]");
    *final_message = *held_;
  }
  if (outcome.is_error) {
    exchange->mutable_error()->set_code(outcome.code);
    exchange->mutable_error()->set_message(outcome.message);
  } else if (options_.canonical_answer) {
    *exchange->mutable_response() = options_.canonical_answer(outcome.result_json);
  } else {
    v1::Message* message = exchange->mutable_response()->mutable_message();
    message->set_role(options_.role);
    message->set_content(std::move(outcome.result_json));
  }
  if (stream_) {
    for (v1::NativeChunk& chunk : chunks_) *native_.add_chunks() = std::move(chunk);
  } else {
    native_.set_response_body(body_);
  }
  *exchange->mutable_native() = std::move(native_);
  return absl::OkStatus();
}

void JsonRpcRelay::OnDone(absl::Status status) {
  if (status.ok() && stream_) {
    absl::StatusOr<std::vector<provider::SseEvent>> rest = parser_.Finish();
    if (rest.ok()) {
      for (provider::SseEvent& e : *rest) OnMessage(std::move(e.data));
    }
  }
  v1::Exchange exchange;
  std::string final_message;
  const absl::Status outcome = Outcome(std::move(status), &exchange, &final_message);
  if (!outcome.ok()) {
    // Nothing partial is stored (a transport failure is never recorded).
    engine_->FinishForward(std::move(ticket_), v1::Exchange(), outcome, [](absl::Status) {});
    Finish(JsonRpcErrorFor(options_.id, outcome));
    return;
  }
  auto self = shared_from_this();
  engine_->FinishForward(std::move(ticket_), std::move(exchange), absl::OkStatus(),
                         [self, final_message = std::move(final_message)](absl::Status done) {
                           if (!done.ok()) {
                             self->Finish(JsonRpcErrorFor(self->options_.id, done));
                             return;
                           }
                           self->Finish(final_message);
                         });
}

void JsonRpcRelay::Finish(const std::string& message) {
  if (started_) {
    out_->Write(SseFrame(options_.sse_event, message));
    out_->End();
    return;
  }
  RespondJson(*out_, 200, message, options_.answer_headers);
}

}  // namespace service
}  // namespace understudy
