#include "service/ui_api.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/env.h"
#include "base/status_macros.h"
#include "engine/engine.h"
#include "nlohmann/json.hpp"
#include "query/assert.h"
#include "query/events.h"
#include "query/runs.h"
#include "service/ui_assets.h"
#include "service/ui_json.h"
#include "trace/spec.h"
#include "validation/utf8.h"

namespace understudy {
namespace service {

namespace {

constexpr absl::string_view kApiPrefix = "/api/v1";
constexpr absl::string_view kUiPrefix = "/ui";
constexpr int kMaxEventsLimit = 10000;
constexpr int kDefaultEventsLimit = 1000;
constexpr int kDefaultRunsLimit = 200;
constexpr int kMaxRunsLimit = 100000;
constexpr char kRoutes[] =
    "the API serves GET /api/v1/sessions, GET /api/v1/sessions/{name}, GET /api/v1/runs, "
    "GET /api/v1/runs/{id}, GET /api/v1/runs/{id}/events, GET /api/v1/runs/{id}/watch and "
    "POST /api/v1/runs/{id}/assert (docs/ui.md)";

void MethodNotAllowed(HttpResponder& out, absl::string_view method, absl::string_view path,
                      absl::string_view allowed) {
  HttpHeaders headers = UiJsonHeaders();
  headers.emplace_back("allow", std::string(allowed));
  out.Respond(405, std::move(headers),
              UiErrorJson("METHOD_NOT_ALLOWED",
                          absl::StrCat("method ", method.substr(0, 20), " is not allowed on ",
                                       path.substr(0, 200), ": use ", allowed)));
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `text` with %XX sequences (and, in query values, '+') decoded; `what`
// names it in errors. The result must be UTF-8: names reach JSON.
absl::StatusOr<std::string> Decode(absl::string_view text, bool plus_is_space,
                                   absl::string_view what) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      const int hi = i + 1 < text.size() ? HexDigit(text[i + 1]) : -1;
      const int lo = i + 2 < text.size() ? HexDigit(text[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": \"", absl::CHexEscape(text.substr(0, 200)),
                         "\" has a '%' not followed by two hex digits"));
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  if (!validation::IsValidUtf8(out)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": \"",
                                                   absl::CHexEscape(text.substr(0, 200)),
                                                   "\" decodes to bytes that are not UTF-8"));
  }
  return out;
}

using Params = absl::flat_hash_map<std::string, std::string>;

// The query's parameters, each one of `allowed`; INVALID_ARGUMENT naming an
// unknown or badly encoded one.
absl::StatusOr<Params> ParseQuery(absl::string_view query,
                                  std::initializer_list<absl::string_view> allowed) {
  Params params;
  if (query.empty()) return params;
  for (absl::string_view pair : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    const size_t eq = pair.find('=');
    absl::StatusOr<std::string> name = Decode(pair.substr(0, eq), true, "query");
    if (!name.ok()) return name.status();
    if (std::find(allowed.begin(), allowed.end(), *name) == allowed.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown parameter \"", absl::CHexEscape(name->substr(0, 100)), "\"",
          allowed.size() == 0 ? "; this route takes none"
                              : absl::StrCat("; this route takes ", absl::StrJoin(allowed, ", "))));
    }
    absl::StatusOr<std::string> value = Decode(
        eq == absl::string_view::npos ? absl::string_view() : pair.substr(eq + 1), true, *name);
    if (!value.ok()) return value.status();
    params[*name] = *std::move(value);
  }
  return params;
}

// Parameter `name` as an integer in [min, max], `fallback` when absent;
// INVALID_ARGUMENT naming it otherwise.
absl::StatusOr<int64_t> IntParam(const Params& params, absl::string_view name, int64_t fallback,
                                 int64_t min, int64_t max) {
  auto it = params.find(name);
  if (it == params.end()) return fallback;
  int64_t value = 0;
  if (!absl::SimpleAtoi(it->second, &value) || value < min || value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": expected an integer from ", min,
                     max == INT64_MAX ? std::string(" up") : absl::StrCat(" to ", max), ", got \"",
                     absl::CHexEscape(absl::string_view(it->second).substr(0, 100)), "\""));
  }
  return value;
}

std::string ParamOr(const Params& params, absl::string_view name) {
  auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

// An API request's Origin, when it sends one, must be the listener's own:
// no other web page may read the API or drive it (a cross-site form may
// POST without asking).
absl::Status CheckOrigin(const HttpRequest& request) {
  const absl::string_view origin = request.Header("origin");
  if (origin.empty()) return absl::OkStatus();
  const absl::string_view host = request.Header("host");
  if (!host.empty() &&
      (origin == absl::StrCat("http://", host) || origin == absl::StrCat("https://", host))) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("Origin \"", absl::CHexEscape(origin.substr(0, 200)),
                   "\" is not this server's own (http://", absl::CHexEscape(host.substr(0, 200)),
                   "): only the page the server itself serves may use its API"));
}

// The response with every event parsed (see ForEachQueriedEvent).
absl::StatusOr<v1::QueryResponse> Materialized(const v1::QueryResponse& response) {
  v1::QueryResponse parsed;
  parsed.set_next_after_seq(response.next_after_seq());
  parsed.set_next_page_token(response.next_page_token());
  US_RETURN_IF_ERROR(query::ForEachQueriedEvent(response, [&parsed](v1::TraceEvent& e) {
    *parsed.add_events() = std::move(e);
    return absl::OkStatus();
  }));
  return parsed;
}

UiWatchOptions WatchOptions(const UiApiOptions& api, CallTracker* tracker, WorkerPool* pool) {
  UiWatchOptions options = api.watch;
  options.engine = api.engine;
  options.store = api.store;
  options.tracker = tracker;
  options.pool = pool;
  // Room in the pool's queue beyond the API requests' for one task per watch.
  options.max_queued = api.max_waiting + api.watch.max_watches;
  return options;
}

}  // namespace

UiApi::UiApi(UiApiOptions options)
    : options_(std::move(options)),
      // The pool is built last, but watches use it only once one starts.
      watches_(WatchOptions(options_, &tracker_, &pool_)),
      pool_(options_.threads) {}

UiApi::~UiApi() { Shutdown(); }

bool UiApi::Serves(absl::string_view target) {
  const absl::string_view path = target.substr(0, target.find('?'));
  for (absl::string_view prefix : {kUiPrefix, kApiPrefix}) {
    if (absl::StartsWith(path, prefix) &&
        (path.size() == prefix.size() || path[prefix.size()] == '/')) {
      return true;
    }
  }
  return false;
}

std::string UiApi::ErrorBody(const absl::Status& status) { return UiErrorBody(status); }

void UiApi::RespondOff(HttpResponder& out) {
  RespondUiError(
      out, absl::NotFoundError("the web UI and its API are off on this server (serve --ui=false)"));
}

void UiApi::Handle(HttpRequest request, std::shared_ptr<HttpResponder> out) {
  if (absl::Status access = CheckHttpAccess(options_.access, false, &request); !access.ok()) {
    return RespondUiError(*out, access);
  }
  const absl::string_view path =
      absl::string_view(request.target).substr(0, request.target.find('?'));
  if (absl::StartsWith(path, kApiPrefix)) return ServeApi(std::move(request), std::move(out));
  absl::string_view file = path.substr(kUiPrefix.size());
  if (!file.empty()) file.remove_prefix(1);  // the '/'
  ServeAsset(request, file.empty() ? "index.html" : file, *out);
}

void UiApi::ServeAsset(const HttpRequest& request, absl::string_view path, HttpResponder& out) {
  if (request.method != "GET" && request.method != "HEAD") {
    return MethodNotAllowed(out, request.method, request.target, "GET, HEAD");
  }
  const UiAsset* asset = FindUiAsset(path);
  if (asset == nullptr) {
    return RespondUiError(
        out, absl::NotFoundError(absl::StrCat("no file /ui/", absl::CHexEscape(path.substr(0, 200)),
                                              " in the web UI; the page is at /ui/")));
  }
  out.Respond(200,
              {{"content-type", std::string(asset->content_type)},
               {"cache-control", "no-cache"},
               {"content-security-policy", kUiContentSecurityPolicy},
               {"x-content-type-options", "nosniff"},
               {"x-frame-options", "DENY"},
               {"referrer-policy", "no-referrer"}},
              std::string(asset->bytes));
}

void UiApi::Submit(std::shared_ptr<HttpResponder> out, std::function<void()> task) {
  if (!pool_.TrySubmit(std::move(task), options_.max_waiting)) {
    bool stopping;
    {
      absl::MutexLock lock(&mu_);
      stopping = stopping_;
    }
    RespondUiError(*out,
                   absl::UnavailableError(
                       stopping ? "the server is shutting down"
                                : absl::StrCat("busy: ", options_.threads + options_.max_waiting,
                                               " API requests are in progress; try again")));
  }
}

void UiApi::ServeApi(HttpRequest request, std::shared_ptr<HttpResponder> out) {
  if (absl::Status origin = CheckOrigin(request); !origin.ok()) return RespondUiError(*out, origin);
  const size_t q = request.target.find('?');
  const absl::string_view path = absl::string_view(request.target).substr(0, q);
  const absl::string_view query = q == std::string::npos
                                      ? absl::string_view()
                                      : absl::string_view(request.target).substr(q + 1);
  std::vector<std::string> parts;
  const absl::string_view rest = path.substr(kApiPrefix.size());
  if (rest.size() > 1) {
    for (absl::string_view raw : absl::StrSplit(rest.substr(1), '/')) {
      absl::StatusOr<std::string> part = Decode(raw, false, "path");
      if (!part.ok()) return RespondUiError(*out, part.status());
      parts.push_back(*std::move(part));
    }
  }
  auto no_route = [&] {
    RespondUiError(
        *out, absl::NotFoundError(absl::StrCat("no route for ", request.method.substr(0, 20), " ",
                                               path.substr(0, 200), "; ", kRoutes)));
  };
  for (const std::string& part : parts) {
    if (part.empty()) return no_route();
  }
  const std::string& method = request.method;
  auto only = [&](absl::string_view allowed) {
    if (method == allowed) return true;
    MethodNotAllowed(*out, method, path, allowed);
    return false;
  };
  if (parts.size() == 1 && parts[0] == "sessions") {
    if (!only("GET")) return;
    absl::StatusOr<Params> params = ParseQuery(query, {});
    if (!params.ok()) return RespondUiError(*out, params.status());
    return Submit(out, [this, out] { ListSessions(*out); });
  }
  if (parts.size() == 2 && parts[0] == "sessions") {
    if (!only("GET")) return;
    absl::StatusOr<Params> params = ParseQuery(query, {"version"});
    if (!params.ok()) return RespondUiError(*out, params.status());
    absl::StatusOr<int64_t> version = IntParam(*params, "version", 0, 0, INT64_MAX);
    if (!version.ok()) return RespondUiError(*out, version.status());
    return Submit(
        out, [this, out, name = parts[1], version = *version] { GetSession(name, version, *out); });
  }
  if (parts.size() == 1 && parts[0] == "runs") {
    if (!only("GET")) return;
    absl::StatusOr<Params> params = ParseQuery(query, {"session", "limit"});
    if (!params.ok()) return RespondUiError(*out, params.status());
    absl::StatusOr<int64_t> limit = IntParam(*params, "limit", kDefaultRunsLimit, 1, kMaxRunsLimit);
    if (!limit.ok()) return RespondUiError(*out, limit.status());
    return Submit(out, [this, out, session = ParamOr(*params, "session"), limit = *limit] {
      ListRuns(session, limit, *out);
    });
  }
  if (parts.empty() || parts[0] != "runs" || parts.size() > 3) return no_route();
  const std::string run = parts[1];
  if (parts.size() == 2) {
    if (!only("GET")) return;
    absl::StatusOr<Params> params = ParseQuery(query, {});
    if (!params.ok()) return RespondUiError(*out, params.status());
    return Submit(out, [this, out, run] { GetRun(run, *out); });
  }
  if (parts[2] == "events") {
    if (!only("GET")) return;
    absl::StatusOr<Params> params = ParseQuery(query, {"after_seq", "limit", "kinds"});
    if (!params.ok()) return RespondUiError(*out, params.status());
    absl::StatusOr<int64_t> after = IntParam(*params, "after_seq", 0, 0, INT64_MAX);
    if (!after.ok()) return RespondUiError(*out, after.status());
    absl::StatusOr<int64_t> limit =
        IntParam(*params, "limit", kDefaultEventsLimit, 1, kMaxEventsLimit);
    if (!limit.ok()) return RespondUiError(*out, limit.status());
    return Submit(
        out, [this, out, run, after = *after, limit = *limit, kinds = ParamOr(*params, "kinds")] {
          QueryEvents(run, after, limit, kinds, *out);
        });
  }
  if (parts[2] == "watch") {
    if (!only("GET")) return;
    absl::StatusOr<Params> params = ParseQuery(query, {"after_seq"});
    if (!params.ok()) return RespondUiError(*out, params.status());
    absl::StatusOr<int64_t> after = IntParam(*params, "after_seq", 0, 0, INT64_MAX);
    if (!after.ok()) return RespondUiError(*out, after.status());
    // An EventSource that reconnects says where it stopped.
    const absl::string_view last_id = request.Header("last-event-id");
    if (!last_id.empty()) {
      int64_t resumed = 0;
      if (!absl::SimpleAtoi(last_id, &resumed) || resumed < 0) {
        return RespondUiError(
            *out, absl::InvalidArgumentError(
                      absl::StrCat("Last-Event-ID: expected a seq (an integer from 0 up), got \"",
                                   absl::CHexEscape(last_id.substr(0, 100)), "\"")));
      }
      *after = std::max(*after, resumed);
    }
    if (absl::Status room = watches_.CheckRoom(); !room.ok()) return RespondUiError(*out, room);
    return Submit(out, [this, out, run, after = *after] { watches_.Start(run, after, out); });
  }
  if (parts[2] == "assert") {
    if (!only("POST")) return;
    absl::StatusOr<Params> params = ParseQuery(query, {});
    if (!params.ok()) return RespondUiError(*out, params.status());
    if (request.body.size() > trace::kMaxSpecBytes) {
      return RespondUiError(*out,
                            absl::ResourceExhaustedError(absl::StrCat(
                                "body: the spec is ", request.body.size(), " bytes; at most ",
                                trace::kMaxSpecBytes, " are read (split it into smaller specs)")),
                            413);
    }
    return Submit(out,
                  [this, out, run, spec = std::move(request.body)] { AssertRun(run, spec, *out); });
  }
  no_route();
}

absl::Status UiApi::Admit(TrackedCall& call) const {
  if (call.admitted()) return absl::OkStatus();
  return absl::UnavailableError("the server is shutting down");
}

void UiApi::ListSessions(HttpResponder& out) {
  if (out.cancelled()) return;
  TrackedCall call(&tracker_);
  if (absl::Status s = Admit(call); !s.ok()) return RespondUiError(out, s);
  absl::StatusOr<v1::ListSessionsResponse> response = query::ListSessions(*options_.store, "");
  if (!response.ok()) return RespondUiError(out, response.status());
  RespondUiMessage(out, *response);
}

void UiApi::GetSession(const std::string& name, int64_t version, HttpResponder& out) {
  if (out.cancelled()) return;
  TrackedCall call(&tracker_);
  if (absl::Status s = Admit(call); !s.ok()) return RespondUiError(out, s);
  absl::StatusOr<v1::GetSessionResponse> response =
      query::GetSession(*options_.store, name, version, /*include_exchanges=*/true);
  if (absl::IsNotFound(response.status())) {
    return RespondUiError(
        out, absl::NotFoundError(
                 version == 0
                     ? absl::StrCat("session \"", name, "\" not found")
                     : absl::StrCat("session \"", name, "\" version ", version, " not found")));
  }
  if (!response.ok()) return RespondUiError(out, response.status());
  RespondUiMessage(out, *response);
}

void UiApi::ListRuns(const std::string& session, int64_t limit, HttpResponder& out) {
  if (out.cancelled()) return;
  absl::StatusOr<std::vector<v1::Run>> runs;
  if (session.empty()) {
    runs = options_.store->ListRuns();
  } else {
    absl::StatusOr<std::pair<std::string, int64_t>> ref = engine::ParseSessionRef(session);
    if (!ref.ok()) {
      return RespondUiError(
          out, absl::InvalidArgumentError(absl::StrCat("session: ", ref.status().message())));
    }
    runs = query::RunsOfSession(*options_.store, ref->first, ref->second);
    if (absl::IsNotFound(runs.status())) {
      return RespondUiError(
          out, absl::NotFoundError(absl::StrCat("session \"", session, "\" not found")));
    }
  }
  if (!runs.ok()) return RespondUiError(out, runs.status());
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  // Newest first.
  int64_t listed = 0;
  for (auto it = runs->rbegin(); it != runs->rend() && listed < limit; ++it, ++listed) {
    v1::Run run = *it;
    if (run.state() == v1::RUN_STATE_ACTIVE) {
      // The stored record of an active run lags; the engine has its counts.
      absl::StatusOr<v1::Run> live = options_.engine->GetRun(run.id());
      if (live.ok()) run = *std::move(live);
    }
    absl::StatusOr<std::string> json = UiMessageJson(run);
    if (!json.ok()) return RespondUiError(out, json.status());
    list.push_back(nlohmann::ordered_json::parse(*json));
  }
  nlohmann::ordered_json body;
  body["runs"] = std::move(list);
  RespondUiJson(out, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void UiApi::GetRun(const std::string& run, HttpResponder& out) {
  if (out.cancelled()) return;
  TrackedCall call(&tracker_);
  if (absl::Status s = Admit(call); !s.ok()) return RespondUiError(out, s);
  absl::StatusOr<v1::Run> response = query::GetRun(source(), run);
  if (!response.ok()) return RespondUiError(out, UiRunStatus(response.status(), run));
  RespondUiMessage(out, *response);
}

void UiApi::QueryEvents(const std::string& run, int64_t after_seq, int64_t limit,
                        const std::string& kinds, HttpResponder& out) {
  if (out.cancelled()) return;
  TrackedCall call(&tracker_);
  if (absl::Status s = Admit(call); !s.ok()) return RespondUiError(out, s);
  v1::QueryRequest request;
  request.set_run(run);
  request.set_after_seq(after_seq);
  request.set_limit(static_cast<int32_t>(limit));
  for (absl::string_view kind : absl::StrSplit(kinds, ',', absl::SkipWhitespace())) {
    request.add_kinds(std::string(absl::StripAsciiWhitespace(kind)));
  }
  absl::StatusOr<v1::QueryResponse> response = query::Query(source(), request);
  if (!response.ok()) return RespondUiError(out, UiRunStatus(response.status(), run));
  absl::StatusOr<v1::QueryResponse> events = Materialized(*response);
  if (!events.ok()) return RespondUiError(out, events.status());
  RespondUiMessage(out, *events);
}

void UiApi::AssertRun(const std::string& run, const std::string& spec, HttpResponder& out) {
  if (out.cancelled()) return;
  absl::StatusOr<std::vector<v1::Assertion>> assertions = trace::ParseSpec(spec, "spec");
  if (!assertions.ok()) return RespondUiError(out, assertions.status());
  if (assertions->empty()) {
    return RespondUiError(
        out, absl::InvalidArgumentError("spec: no assertions; list them under `assertions:`"));
  }
  TrackedCall call(&tracker_);
  if (absl::Status s = Admit(call); !s.ok()) return RespondUiError(out, s);
  google::protobuf::RepeatedPtrField<v1::Assertion> checks;
  for (v1::Assertion& a : *assertions) *checks.Add() = std::move(a);
  absl::StatusOr<v1::AssertResponse> response = query::AssertRun(source(), run, checks);
  if (!response.ok()) return RespondUiError(out, UiRunStatus(response.status(), run));
  RespondUiMessage(out, *response);
}

void UiApi::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  // New watches are refused from now on (503), open ones end.
  watches_.Shutdown();
  // New service calls are refused from now on; new requests get 503.
  tracker_.Drain(Env::Default()->Now());
  pool_.Interrupt();
  pool_.Close();
}

}  // namespace service
}  // namespace understudy
