// Who may use a server: the shared token every caller presents, and the
// names the HTTP listener answers to.
//
// A server started with a token (serve --auth-token / --auth-token-file)
// refuses every call that does not present it:
//   gRPC          metadata `authorization: Bearer TOKEN` (or `understudy-token:
//                 TOKEN`), on every service, health and reflection included;
//   HTTP          `Authorization: Bearer TOKEN` on every route; the provider
//                 routes (every model API route and /v1/models) also
//                 take it where their SDKs send the API key (`Authorization:
//                 Bearer`, `x-api-key`, `api-key`, `x-goog-api-key`), so an unmodified agent only
//                 swaps its key, or in `X-Understudy-Token`, so that a recording
//                 agent's real provider key still passes through untouched.
// A token presented in a key header is consumed there: it never reaches an
// upstream, a log or the store.
//
// The HTTP listener also checks `Host` against the names it answers to, so a
// web page cannot reach a loopback server through a DNS name it controls
// (DNS rebinding).
#ifndef UNDERSTUDY_SERVICE_ACCESS_H_
#define UNDERSTUDY_SERVICE_ACCESS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "service/http_server.h"

namespace understudy {
namespace service {

// The shortest token accepted: anything shorter can be guessed.
inline constexpr size_t kMinTokenBytes = 16;

class AccessToken {
 public:
  // No token: every call is let in.
  AccessToken() = default;
  // INVALID_ARGUMENT for a token shorter than kMinTokenBytes or holding
  // anything but printable ASCII (it travels in headers).
  static absl::StatusOr<AccessToken> Create(std::string token);
  // The token in `path`'s first line (trailing whitespace dropped). The file
  // must not be readable by others (INVALID_ARGUMENT naming its mode).
  static absl::StatusOr<AccessToken> FromFile(const std::string& path);

  bool enabled() const { return !token_.empty(); }
  // Constant-time comparison with the token.
  bool Matches(absl::string_view presented) const;
  // The token in `authorization: Bearer TOKEN` (case-insensitive scheme).
  bool MatchesBearer(absl::string_view authorization) const;

 private:
  explicit AccessToken(std::string token) : token_(std::move(token)) {}
  std::string token_;
};

// Checks an HTTP request against `token`. OK when the token is off or
// presented; the header that carried it is removed from `request` when it
// was a provider key header. UNAUTHENTICATED otherwise, saying where to put
// it. `provider_route` allows the provider key headers.
absl::Status CheckHttpAccess(const AccessToken& token, bool provider_route, HttpRequest* request);

// The gRPC side: refuses calls without the token with UNAUTHENTICATED and
// consumes `authorization` when it carried the token (so it is never
// forwarded upstream). For SSL or local (loopback) server credentials.
std::shared_ptr<grpc::AuthMetadataProcessor> MakeGrpcAccessProcessor(AccessToken token);

// True for loopback addresses: 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(absl::string_view host);
// The host part of "host:port" or "[v6]:port" (brackets removed).
std::string HostOf(absl::string_view address);

// The names a listener bound to `bound_host` answers to (Host header), plus
// `extra`. Empty means any ("*" in `extra`, or a wildcard bind without
// extras: such a server needs its token).
std::vector<std::string> AllowedHosts(absl::string_view bound_host,
                                      const std::vector<std::string>& extra);

// OK when the request's Host (its name, any port) is allowed; PERMISSION_DENIED
// naming it otherwise. A request without Host is let in (no browser sends
// one without it). A request sent as to a proxy gets CheckNotProxied's
// answer instead, which names where it wanted to go.
absl::Status CheckHost(const std::vector<std::string>& allowed, const HttpRequest& request);

// `understudy replay -- CMD` points the command's proxy variables
// (HTTPS_PROXY, ...) at the HTTP listener, so that a client that ignores its
// base URL cannot reach a real provider: this is where it ends up. OK for
// an ordinary request; for one sent as to a proxy (CONNECT host:port, or an
// absolute-form target http://host/...), PERMISSION_DENIED naming the host
// and port it wanted, and a warning `egress_refused` in the log naming
// them too: clients print little of a refused tunnel, and the log is what
// the user of the wrapper reads. Nothing is ever forwarded. Thread-safe.
absl::Status CheckNotProxied(const HttpRequest& request);

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_ACCESS_H_
