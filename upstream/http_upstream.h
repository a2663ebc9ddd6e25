// The provider HTTP APIs that record and passthrough runs forward to: sends
// a provider-native request (OpenAI, Anthropic, …) to the configured upstream
// and hands the response back piece by piece, as it arrives, so that streams
// reach the agent unbuffered while they are recorded.
//
// Usage:
//   HttpUpstream::Options options;
//   options.base_url = "https://api.openai.com";
//   options.flag = "--upstream openai";  // for error messages
//   US_ASSIGN_OR_RETURN(std::unique_ptr<HttpUpstream> upstream,
//                       HttpUpstream::Create(options));
//
//   UpstreamHttpRequest request;
//   request.path = "/v1/chat/completions";
//   request.headers = {{"authorization", "Bearer …"},
//                      {"content-type", "application/json"}};
//   request.body = R"({"model":"gpt-4o","stream":true,…})";
//   request.deadline = Env::Default()->Now() + absl::Minutes(10);
//   std::shared_ptr<UpstreamHttpCall> call =
//       upstream->Send(std::move(request), observer);
//   …
//   call->Cancel();  // e.g. when the agent hung up
//
// The observer sees OnHead, then OnData for each piece of the body, then
// OnDone exactly once — all from the client's one worker thread.
//
// Credentials (Authorization, x-api-key, …) travel in the request's headers;
// this client never logs, stores or echoes headers, and error messages name
// only the method and the URL without its query (which may carry a key).
#ifndef UNDERSTUDY_UPSTREAM_HTTP_UPSTREAM_H_
#define UNDERSTUDY_UPSTREAM_HTTP_UPSTREAM_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/env.h"

namespace understudy {
namespace upstream {

// Header fields in order; repeated names are kept as separate entries.
using UpstreamHttpHeaders = std::vector<std::pair<std::string, std::string>>;

// One request to forward.
struct UpstreamHttpRequest {
  // An HTTP method token ("POST", "GET", …).
  std::string method = "POST";
  // Path and query as the agent sent them, starting with '/'. Appended to
  // the base URL's path: base `http://h:9000/proxy` + `/v1/chat/completions`
  // is `http://h:9000/proxy/v1/chat/completions`. Sent as is (no dot-segment
  // squashing, no re-escaping).
  std::string path;
  // Sent as given, in order, names as given. The caller decides which of the
  // agent's headers pass through; credentials among them are sent and never
  // logged. The client owns the message framing, so it drops any of Host,
  // Content-Length, Transfer-Encoding, Connection, Keep-Alive,
  // Proxy-Connection, TE, Trailer, Upgrade, Expect and Accept-Encoding given
  // here, and sends `Accept-Encoding: identity` (the recording must hold the
  // bytes the SDK would parse, not a compressed form). It adds no header of
  // its own besides Host, Content-Length and Accept-Encoding (no default
  // Accept, Content-Type, User-Agent or Expect).
  UpstreamHttpHeaders headers;
  // Sent with Content-Length when non-empty, or when the method is not GET
  // or HEAD.
  std::string body;
  // The whole exchange (connect, send, receive the last byte) must end by
  // then, or it ends with DEADLINE_EXCEEDED.
  absl::Time deadline = absl::InfiniteFuture();
};

// Receives one response. Every method runs on the client's worker thread,
// never two at once, and must return promptly without blocking: every
// transfer of the client waits while one runs. Methods may call Send and
// Cancel (those only queue work for the worker).
class UpstreamHttpObserver {
 public:
  virtual ~UpstreamHttpObserver() = default;

  // The final response head (1xx interim responses are skipped): the HTTP
  // status, whatever it is (a 429 or 500 is a normal response), and the
  // header fields with lower-cased names and trimmed values, in order, as
  // the upstream sent them (including its framing headers, e.g.
  // `transfer-encoding: chunked`; the body passed to OnData is already
  // de-chunked). At most once, before any OnData.
  virtual void OnHead(int status, UpstreamHttpHeaders headers) = 0;

  // The next piece of the body, exactly as it was read from the network (a
  // stream's pieces follow the upstream's writes as closely as the network
  // kept them apart). `bytes` is valid only during the call.
  virtual void OnData(absl::string_view bytes) = 0;

  // Last call, exactly once. OK: the whole response was received (OnHead
  // was called). Otherwise, with the cause in the message:
  //   UNAVAILABLE        the upstream could not be reached (connection
  //                      refused, DNS, TLS) or broke off mid-response;
  //   DEADLINE_EXCEEDED  the request's deadline or Options::total_timeout
  //                      passed;
  //   CANCELLED          UpstreamHttpCall::Cancel, or the client was
  //                      destroyed;
  //   RESOURCE_EXHAUSTED the body exceeded Options::max_response_bytes;
  //   INVALID_ARGUMENT   the request was malformed (bad method or path, a
  //                      header with CR, LF or NUL).
  // OnHead and OnData may have run before a failure.
  virtual void OnDone(absl::Status status) = 0;
};

// A request in progress. Thread-safe. Dropping the last reference neither
// cancels the transfer nor affects the observer.
class UpstreamHttpCall {
 public:
  virtual ~UpstreamHttpCall() = default;

  // Aborts the transfer promptly and closes its connection: the observer's
  // OnDone(CANCELLED) follows (and nothing else, apart from a callback that
  // was already running). A no-op once OnDone has begun, and after the client
  // is gone. Never blocks; may be called from any thread, observers included.
  virtual void Cancel() = 0;
};

// What the record engine depends on, so that its tests use a fake.
class UpstreamHttpInterface {
 public:
  virtual ~UpstreamHttpInterface() = default;

  // Starts forwarding `request`; returns at once and never calls `observer`
  // itself: the outcome, failures to start included, reaches `observer` as
  // described on UpstreamHttpObserver, which is kept alive until its OnDone
  // returns. `observer` must not be null. Thread-safe.
  virtual std::shared_ptr<UpstreamHttpCall> Send(
      UpstreamHttpRequest request, std::shared_ptr<UpstreamHttpObserver> observer) = 0;
};

// UpstreamHttpInterface over HTTP/1.1 (libcurl): one worker thread drives
// every transfer of the client; connections to the upstream are kept alive
// and reused. Send and UpstreamHttpCall::Cancel are thread-safe.
//
// Destruction cancels every transfer in flight (each observer gets its
// OnDone(CANCELLED)) and joins the worker. It must not run on the worker
// thread (from an observer), nor concurrently with Send.
class HttpUpstream final : public UpstreamHttpInterface {
 public:
  struct Options {
    // `http://host[:port][/path]` or `https://…`. A path is a prefix for
    // every request's path; a trailing '/' is ignored.
    std::string base_url;
    // How the URL was configured, for error messages: with
    // "--upstream openai" they read `--upstream openai=ftp://x: …`.
    std::string flag = "--upstream";
    // Time to establish a connection (TCP, and TLS for https).
    absl::Duration connect_timeout = absl::Seconds(10);
    // Ceiling on a whole exchange, on top of each request's deadline.
    absl::Duration total_timeout = absl::InfiniteDuration();
    // Connections open to the upstream at once (and kept alive for reuse).
    // Transfers beyond it wait for a free connection, deadlines running.
    int max_concurrent_transfers = 256;
    // A response (head and body) longer than this ends the transfer with
    // RESOURCE_EXHAUSTED: a recording is held in memory.
    size_t max_response_bytes = size_t{64} << 20;
    // PEM file of CA certificates for https; empty for the system's.
    std::string ca_file;
    // Called on the worker thread just before a request is sent, with the
    // URL it goes to: may add or replace headers (AWS's SigV4 signature,
    // which must be computed for the upstream's host and path, not the
    // agent's). A failure ends that transfer with its status, before
    // anything is sent. Empty: requests go as given.
    std::function<absl::Status(absl::string_view url, UpstreamHttpRequest* request)> sign;
    // What a request's deadline is read against. Not owned. curl's own
    // timeouts run on real time, so this stays the real Env outside tests.
    Env* env = Env::Default();
  };

  // INVALID_ARGUMENT, naming the flag and its value, for a base URL that is
  // not http:// or https:// with a host, or that has a query or fragment,
  // or for non-positive limits. A URL carrying user:password@ is refused
  // without echoing it (credentials come from the agent's headers).
  // INTERNAL when libcurl cannot be initialized. Does not connect: an
  // unreachable upstream fails each Send with UNAVAILABLE.
  static absl::StatusOr<std::unique_ptr<HttpUpstream>> Create(Options options);

  ~HttpUpstream() override;
  HttpUpstream(const HttpUpstream&) = delete;
  HttpUpstream& operator=(const HttpUpstream&) = delete;

  std::shared_ptr<UpstreamHttpCall> Send(UpstreamHttpRequest request,
                                         std::shared_ptr<UpstreamHttpObserver> observer) override;

  // The base URL requests go to, without a trailing '/'.
  const std::string& base_url() const;

  // Implementation detail (defined in the .cc): the state shared with the
  // worker thread and with outstanding calls.
  struct Core;

 private:
  explicit HttpUpstream(std::shared_ptr<Core> core);

  const std::shared_ptr<Core> core_;
  std::thread worker_;
};

}  // namespace upstream
}  // namespace understudy

#endif  // UNDERSTUDY_UPSTREAM_HTTP_UPSTREAM_H_
