#include "upstream/http_upstream.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <utility>

#include "absl/base/call_once.h"
#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/memory/memory.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace understudy {
namespace upstream {
namespace http_upstream_internal {
class HttpTransfer;
}  // namespace http_upstream_internal
using http_upstream_internal::HttpTransfer;

// State shared by the client, its worker thread and every outstanding call:
// the queues through which other threads hand work to the worker. It
// outlives the client while calls (which may still be cancelled) hold it.
struct HttpUpstream::Core {
  Core(Options options_in, std::string base_url_in, CURLM* multi_in)
      : options(std::move(options_in)), base_url(std::move(base_url_in)), multi(multi_in) {}

  const Options options;
  const std::string base_url;
  // Used only by the worker, except curl_multi_wakeup, which may be called
  // from any thread while `closed` is false (under `mu`, so that the worker
  // cannot clean the handle up meanwhile).
  CURLM* const multi;

  absl::Mutex mu;
  // Transfers sent and not yet taken by the worker.
  std::vector<std::shared_ptr<HttpTransfer>> to_start ABSL_GUARDED_BY(mu);
  // Transfers whose Cancel ran, not yet taken by the worker.
  std::vector<std::shared_ptr<HttpTransfer>> to_cancel ABSL_GUARDED_BY(mu);
  // Set by the destructor: the worker cancels everything and exits.
  bool stopping ABSL_GUARDED_BY(mu) = false;
  // Set by the worker as it exits: `multi` is gone, nothing is taken any more.
  bool closed ABSL_GUARDED_BY(mu) = false;
};

namespace http_upstream_internal {

// One request and its response. Built on the sending thread, then touched
// only by the worker, except `cancel_requested` (any thread) and `core`.
class HttpTransfer final : public UpstreamHttpCall,
                           public std::enable_shared_from_this<HttpTransfer> {
 public:
  HttpTransfer(std::shared_ptr<HttpUpstream::Core> core_in, UpstreamHttpRequest request_in,
               std::shared_ptr<UpstreamHttpObserver> observer_in)
      : core(std::move(core_in)),
        request(std::move(request_in)),
        observer(std::move(observer_in)) {}

  void Cancel() override {
    if (cancel_requested.exchange(true)) return;
    absl::MutexLock lock(&core->mu);
    if (core->closed) return;
    core->to_cancel.push_back(shared_from_this());
    curl_multi_wakeup(core->multi);
  }

  const std::shared_ptr<HttpUpstream::Core> core;
  std::atomic<bool> cancel_requested{false};

  // Worker-only from here on.
  UpstreamHttpRequest request;
  std::shared_ptr<UpstreamHttpObserver> observer;  // Reset after OnDone.
  std::string url;
  CURL* easy = nullptr;
  curl_slist* header_list = nullptr;
  char error[CURL_ERROR_SIZE] = {0};
  UpstreamHttpHeaders head;  // The response head being read.
  bool head_delivered = false;
  size_t received_bytes = 0;  // Head and body, against max_response_bytes.
  bool too_large = false;
  bool finished = false;
};

}  // namespace http_upstream_internal

namespace {

// Request headers the client computes itself (framing, hop-by-hop, and
// Accept-Encoding, which must stay identity); the caller's are dropped.
constexpr absl::string_view kOwnHeaders[] = {
    "host",       "content-length",  "transfer-encoding",
    "connection", "keep-alive",      "proxy-connection",
    "te",         "trailer",         "upgrade",
    "expect",     "accept-encoding",
};

// How long the worker waits in curl_multi_poll when nothing is due; work
// from other threads wakes it at once, so this only bounds idle wake-ups.
constexpr int kIdlePollMs = 1000;

bool IsOwnHeader(absl::string_view lower_name) {
  return std::find(std::begin(kOwnHeaders), std::end(kOwnHeaders), lower_name) !=
         std::end(kOwnHeaders);
}

// RFC 9110 token characters (method and header names).
bool IsToken(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c))) continue;
    if (absl::string_view("!#$%&'*+-.^_`|~").find(c) == absl::string_view::npos) return false;
  }
  return true;
}

absl::Status InitCurlOnce() {
  static absl::once_flag once;
  static CURLcode result = CURLE_OK;
  absl::call_once(once, [] { result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (result != CURLE_OK) {
    return absl::InternalError(
        absl::StrCat("libcurl initialization failed: ", curl_easy_strerror(result)));
  }
  return absl::OkStatus();
}

// Checks the request before anything is sent; INVALID_ARGUMENT names the bad
// part (never a header's value, which may be a credential).
absl::Status ValidateRequest(const UpstreamHttpRequest& request) {
  if (!IsToken(request.method)) {
    return absl::InvalidArgumentError(
        absl::StrCat("upstream request: method \"", request.method, "\" is not an HTTP token"));
  }
  if (!absl::StartsWith(request.path, "/")) {
    return absl::InvalidArgumentError(
        absl::StrCat("upstream request: path \"", request.path, "\" must start with '/'"));
  }
  for (char c : request.path) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return absl::InvalidArgumentError(
          "upstream request: path contains a space or control character");
    }
  }
  for (size_t i = 0; i < request.headers.size(); ++i) {
    const auto& [name, value] = request.headers[i];
    if (!IsToken(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("upstream request: headers[", i, "]: name is not an HTTP token"));
    }
    if (value.find_first_of("\r\n\0", 0, 3) != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("upstream request: headers[", i, "] (", name,
                                                     "): value contains CR, LF or NUL"));
    }
  }
  return absl::OkStatus();
}

// The curl header list for `request`: the caller's headers minus the
// client's own, plus the client's, and "Name:" entries that stop curl from
// adding its defaults (Accept, Content-Type for a POST body, Expect).
curl_slist* BuildHeaderList(const UpstreamHttpRequest& request) {
  curl_slist* list = nullptr;
  bool has_accept = false;
  bool has_content_type = false;
  auto append = [&list](const std::string& line) {
    curl_slist* next = curl_slist_append(list, line.c_str());
    if (next != nullptr) list = next;
    return next != nullptr;
  };
  bool ok = true;
  for (const auto& [name, value] : request.headers) {
    std::string lower = absl::AsciiStrToLower(name);
    if (IsOwnHeader(lower)) continue;
    if (lower == "accept") has_accept = true;
    if (lower == "content-type") has_content_type = true;
    // "Name:" would tell curl to remove the header; "Name;" sends it empty.
    ok = ok && append(value.empty() ? absl::StrCat(name, ";") : absl::StrCat(name, ": ", value));
  }
  ok = ok && append("Accept-Encoding: identity");
  ok = ok && append("Expect:");
  if (!has_accept) ok = ok && append("Accept:");
  if (!has_content_type) ok = ok && append("Content-Type:");
  if (!ok) {
    curl_slist_free_all(list);
    return nullptr;
  }
  return list;
}

// Delivers the response head collected so far.
void DeliverHead(HttpTransfer* t) {
  long code = 0;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
  t->head_delivered = true;
  t->observer->OnHead(static_cast<int>(code), std::move(t->head));
  t->head.clear();
}

// CURLOPT_HEADERFUNCTION: one whole header line per call, status lines and
// the blank line ending each head included.
size_t OnHeaderLine(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<HttpTransfer*>(user);
  const size_t n = size * count;
  if (t->cancel_requested.load()) return 0;  // Aborts the transfer.
  if (t->head_delivered) return n;           // Trailers: not part of the head.
  if (n > t->core->options.max_response_bytes - t->received_bytes) {
    t->too_large = true;
    return 0;
  }
  t->received_bytes += n;
  absl::string_view line(data, n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (absl::StartsWith(line, "HTTP/")) {
    t->head.clear();  // A new head starts (after a 1xx one).
    return n;
  }
  if (line.empty()) {
    long code = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200) {
      DeliverHead(t);
    } else {
      t->head.clear();  // An interim response (100 Continue, 103, …).
    }
    return n;
  }
  if ((line.front() == ' ' || line.front() == '\t') && !t->head.empty()) {
    // Obsolete line folding: continues the previous value.
    absl::StrAppend(&t->head.back().second, " ", absl::StripAsciiWhitespace(line));
    return n;
  }
  size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return n;  // Not a field; curl would have failed.
  t->head.emplace_back(absl::AsciiStrToLower(line.substr(0, colon)),
                       std::string(absl::StripAsciiWhitespace(line.substr(colon + 1))));
  return n;
}

// CURLOPT_WRITEFUNCTION: the next piece of the (de-chunked) body.
size_t OnBodyData(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<HttpTransfer*>(user);
  const size_t n = size * count;
  if (t->cancel_requested.load()) return 0;  // Aborts the transfer.
  if (n > t->core->options.max_response_bytes - t->received_bytes) {
    t->too_large = true;
    return 0;
  }
  t->received_bytes += n;
  if (!t->head_delivered) DeliverHead(t);
  t->observer->OnData(absl::string_view(data, n));
  return n;
}

// Names the URL without its query: a query may carry a credential (Gemini's
// `key`), and errors reach logs and callers.
absl::Status Failure(absl::StatusCode code, const HttpTransfer& t, absl::string_view what) {
  const absl::string_view url = absl::string_view(t.url).substr(0, t.url.find('?'));
  return absl::Status(code, absl::StrCat("upstream ", t.request.method, " ", url, ": ", what));
}

// The outcome of a transfer curl reports done with `result`.
absl::Status StatusFor(const HttpTransfer& t, CURLcode result) {
  if (t.cancel_requested.load()) return Failure(absl::StatusCode::kCancelled, t, "cancelled");
  if (t.too_large) {
    return Failure(absl::StatusCode::kResourceExhausted, t,
                   absl::StrCat("response exceeds ", t.core->options.max_response_bytes,
                                " bytes (max_response_bytes)"));
  }
  if (result == CURLE_OK) return absl::OkStatus();
  std::string what = curl_easy_strerror(result);
  if (t.error[0] != '\0') absl::StrAppend(&what, " (", t.error, ")");
  switch (result) {
    case CURLE_OPERATION_TIMEDOUT:
      return Failure(absl::StatusCode::kDeadlineExceeded, t, what);
    case CURLE_OUT_OF_MEMORY:
      return Failure(absl::StatusCode::kResourceExhausted, t, what);
    case CURLE_URL_MALFORMAT:
      return Failure(absl::StatusCode::kInvalidArgument, t, what);
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_NOT_BUILT_IN:
    case CURLE_BAD_FUNCTION_ARGUMENT:
    case CURLE_UNKNOWN_OPTION:
      return Failure(absl::StatusCode::kInternal, t, what);
    default:
      // Connection refused or reset, DNS, TLS, a malformed or truncated
      // response: the upstream could not be (or stopped being) reached.
      return Failure(absl::StatusCode::kUnavailable, t, what);
  }
}

// The worker thread: owns the multi handle and every started transfer.
class Worker {
 public:
  explicit Worker(std::shared_ptr<HttpUpstream::Core> core) : core_(std::move(core)) {}

  void Run() {
    for (;;) {
      std::vector<std::shared_ptr<HttpTransfer>> to_start;
      std::vector<std::shared_ptr<HttpTransfer>> to_cancel;
      bool stopping;
      {
        absl::MutexLock lock(&core_->mu);
        to_start.swap(core_->to_start);
        to_cancel.swap(core_->to_cancel);
        stopping = core_->stopping;
      }
      if (stopping) {
        for (auto& t : to_start) Finish(t, ShutdownStatus(*t));
        Shutdown();
        return;
      }
      for (auto& t : to_start) Start(t);
      for (auto& t : to_cancel) {
        if (!t->finished) Finish(t, Failure(absl::StatusCode::kCancelled, *t, "cancelled"));
      }
      int running = 0;
      curl_multi_perform(core_->multi, &running);
      int queued = 0;
      while (CURLMsg* msg = curl_multi_info_read(core_->multi, &queued)) {
        if (msg->msg != CURLMSG_DONE) continue;
        auto it = active_.find(msg->easy_handle);
        if (it == active_.end()) continue;
        std::shared_ptr<HttpTransfer> t = it->second;
        // `msg` is invalid once the handle is removed.
        absl::Status status = StatusFor(*t, msg->data.result);
        // Keeps "OK means OnHead ran" even if curl never showed a blank line.
        if (status.ok() && !t->head_delivered) DeliverHead(t.get());
        Finish(t, std::move(status));
      }
      curl_multi_poll(core_->multi, nullptr, 0, kIdlePollMs, nullptr);
    }
  }

 private:
  static absl::Status ShutdownStatus(const HttpTransfer& t) {
    return Failure(absl::StatusCode::kCancelled, t, "cancelled: the upstream client shut down");
  }

  // Cancels everything, including transfers sent by observers while this
  // runs, then closes the core and frees the multi handle.
  void Shutdown() {
    while (!active_.empty()) {
      std::shared_ptr<HttpTransfer> t = active_.begin()->second;
      Finish(t, ShutdownStatus(*t));
    }
    for (;;) {
      std::vector<std::shared_ptr<HttpTransfer>> to_start;
      {
        absl::MutexLock lock(&core_->mu);
        to_start.swap(core_->to_start);
        core_->to_cancel.clear();
        if (to_start.empty()) {
          core_->closed = true;
          break;
        }
      }
      for (auto& t : to_start) Finish(t, ShutdownStatus(*t));
    }
    curl_multi_cleanup(core_->multi);
  }

  void Start(const std::shared_ptr<HttpTransfer>& t) {
    t->url = absl::StrCat(core_->base_url, t->request.path);
    if (t->cancel_requested.load()) {
      Finish(t, Failure(absl::StatusCode::kCancelled, *t, "cancelled"));
      return;
    }
    if (absl::Status s = ValidateRequest(t->request); !s.ok()) {
      Finish(t, s);
      return;
    }
    const HttpUpstream::Options& options = core_->options;
    if (options.sign) {
      if (absl::Status s = options.sign(t->url, &t->request); !s.ok()) {
        Finish(t, s);
        return;
      }
    }
    absl::Duration timeout = std::min(t->request.deadline - options.env->Now(), options.total_timeout);
    if (timeout <= absl::ZeroDuration()) {
      Finish(t, Failure(absl::StatusCode::kDeadlineExceeded, *t, "deadline passed before sending"));
      return;
    }
    t->header_list = BuildHeaderList(t->request);
    t->easy = curl_easy_init();
    if (t->easy == nullptr || t->header_list == nullptr) {
      Finish(t, Failure(absl::StatusCode::kResourceExhausted, *t, "out of memory"));
      return;
    }
    CURL* e = t->easy;
    curl_easy_setopt(e, CURLOPT_URL, t->url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    // A proxy from the environment (http_proxy, ...) applies to real
    // providers, never to upstreams on this machine.
    curl_easy_setopt(e, CURLOPT_NOPROXY, "localhost,127.0.0.1,::1");
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);  // Redirects are relayed.
    // The body as it came: de-chunked, never decompressed.
    curl_easy_setopt(e, CURLOPT_HTTP_TRANSFER_DECODING, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_CONTENT_DECODING, 0L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ToCurlMs(options.connect_timeout));
    if (timeout != absl::InfiniteDuration()) {
      curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ToCurlMs(timeout));
    }
    if (!options.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, options.ca_file.c_str());
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->header_list);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &OnHeaderLine);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnBodyData);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
    const std::string& method = t->request.method;
    const std::string& body = t->request.body;
    if (method == "GET" && body.empty()) {
      curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else if (method == "HEAD" && body.empty()) {
      curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else {
      // POSTFIELDS does not copy: `body` lives in the transfer until the
      // easy handle is freed.
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.data());
      if (method != "POST") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method.c_str());
    }
    if (CURLMcode rc = curl_multi_add_handle(core_->multi, e); rc != CURLM_OK) {
      Finish(t, Failure(absl::StatusCode::kInternal, *t, curl_multi_strerror(rc)));
      return;
    }
    active_[e] = t;
  }

  // Ends `t` with `status`: frees its curl resources, tells the observer and
  // lets go of it. Never called from inside a curl callback.
  void Finish(std::shared_ptr<HttpTransfer> t, absl::Status status) {
    if (t->finished) return;
    t->finished = true;
    if (t->easy != nullptr) {
      if (active_.erase(t->easy) > 0) curl_multi_remove_handle(core_->multi, t->easy);
      curl_easy_cleanup(t->easy);
      t->easy = nullptr;
    }
    curl_slist_free_all(t->header_list);
    t->header_list = nullptr;
    t->request.body = std::string();
    t->request.headers = UpstreamHttpHeaders();
    std::shared_ptr<UpstreamHttpObserver> observer = std::move(t->observer);
    t->observer = nullptr;
    observer->OnDone(std::move(status));
  }

  static long ToCurlMs(absl::Duration d) {
    int64_t ms = absl::ToInt64Milliseconds(absl::Ceil(d, absl::Milliseconds(1)));
    return static_cast<long>(std::clamp<int64_t>(ms, 1, LONG_MAX));
  }

  const std::shared_ptr<HttpUpstream::Core> core_;
  absl::flat_hash_map<CURL*, std::shared_ptr<HttpTransfer>> active_;
};

// The base URL checked and without its trailing '/', or INVALID_ARGUMENT.
absl::StatusOr<std::string> CheckBaseUrl(const HttpUpstream::Options& options) {
  const std::string& url = options.base_url;
  auto invalid = [&](absl::string_view why) {
    return absl::InvalidArgumentError(options.flag.empty()
                                          ? absl::StrCat("upstream URL \"", url, "\": ", why)
                                          : absl::StrCat(options.flag, "=", url, ": ", why));
  };
  std::string lower = absl::AsciiStrToLower(url);
  size_t scheme_end = lower.find("://");
  absl::string_view scheme =
      scheme_end == std::string::npos ? "" : absl::string_view(lower).substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return invalid("expected an http:// or https:// URL");
  }
  absl::string_view authority = absl::string_view(url).substr(scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (authority.find('@') != absl::string_view::npos) {
    // Not echoed: the URL carries a credential.
    return absl::InvalidArgumentError(
        absl::StrCat(options.flag.empty() ? "upstream URL" : options.flag,
                     ": the URL must not carry user:password@ (credentials come from the agent's "
                     "request headers)"));
  }
  CURLU* parsed = curl_url();
  if (parsed == nullptr) return absl::ResourceExhaustedError("out of memory");
  CURLUcode rc = curl_url_set(parsed, CURLUPART_URL, url.c_str(), 0);
  bool has_query = false;
  bool has_fragment = false;
  if (rc == CURLUE_OK) {
    char* part = nullptr;
    has_query = curl_url_get(parsed, CURLUPART_QUERY, &part, 0) == CURLUE_OK;
    curl_free(part);
    part = nullptr;
    has_fragment = curl_url_get(parsed, CURLUPART_FRAGMENT, &part, 0) == CURLUE_OK;
    curl_free(part);
  }
  curl_url_cleanup(parsed);
  if (rc != CURLUE_OK) {
    return invalid(absl::StrCat("expected an http:// or https:// URL with a host (",
                                curl_url_strerror(rc), ")"));
  }
  if (has_query || has_fragment || url.find_first_of("?#") != std::string::npos) {
    return invalid("the base URL must not have a query or fragment");
  }
  for (char c : url) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return invalid("the URL contains a space or control character");
  }
  std::string base = url;
  while (base.size() > scheme_end + 3 && base.back() == '/') base.pop_back();
  return base;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpUpstream>> HttpUpstream::Create(Options options) {
  if (absl::Status s = InitCurlOnce(); !s.ok()) return s;
  absl::StatusOr<std::string> base = CheckBaseUrl(options);
  if (!base.ok()) return base.status();
  if (options.connect_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("HttpUpstream: connect_timeout must be positive");
  }
  if (options.total_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("HttpUpstream: total_timeout must be positive");
  }
  if (options.max_concurrent_transfers <= 0) {
    return absl::InvalidArgumentError("HttpUpstream: max_concurrent_transfers must be positive");
  }
  if (options.max_response_bytes == 0) {
    return absl::InvalidArgumentError("HttpUpstream: max_response_bytes must be positive");
  }
  CURLM* multi = curl_multi_init();
  if (multi == nullptr) return absl::InternalError("HttpUpstream: curl_multi_init failed");
  const long max = options.max_concurrent_transfers;
  curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, max);
  curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, max);
  curl_multi_setopt(multi, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_NOTHING));
  return absl::WrapUnique(
      new HttpUpstream(std::make_shared<Core>(std::move(options), *std::move(base), multi)));
}

HttpUpstream::HttpUpstream(std::shared_ptr<Core> core) : core_(std::move(core)) {
  worker_ = std::thread([core = core_] { Worker(core).Run(); });
}

HttpUpstream::~HttpUpstream() {
  {
    absl::MutexLock lock(&core_->mu);
    core_->stopping = true;
    curl_multi_wakeup(core_->multi);
  }
  worker_.join();
}

const std::string& HttpUpstream::base_url() const { return core_->base_url; }

std::shared_ptr<UpstreamHttpCall> HttpUpstream::Send(
    UpstreamHttpRequest request, std::shared_ptr<UpstreamHttpObserver> observer) {
  auto transfer = std::make_shared<HttpTransfer>(core_, std::move(request), std::move(observer));
  {
    absl::MutexLock lock(&core_->mu);
    if (!core_->closed) {
      core_->to_start.push_back(transfer);
      curl_multi_wakeup(core_->multi);
      return transfer;
    }
  }
  // Only reachable against the contract (Send racing the destructor): there
  // is no worker left to call the observer from.
  transfer->observer->OnDone(
      Failure(absl::StatusCode::kCancelled, *transfer, "cancelled: the upstream client shut down"));
  transfer->observer = nullptr;
  return transfer;
}

}  // namespace upstream
}  // namespace understudy
