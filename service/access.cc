#include "service/access.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/log.h"
#include "base/status_macros.h"

namespace understudy {
namespace service {
namespace {

constexpr char kTokenHeader[] = "x-understudy-token";

// At most 200 bytes of `text`, printable ASCII (anything else as '?'): it
// is quoted back to the caller and into the log.
std::string Printable(absl::string_view text) {
  std::string out(text.substr(0, 200));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return out;
}

// A request that wanted to go through this listener to `destination`.
absl::Status Refused(absl::string_view destination) {
  const std::string shown = Printable(destination);
  Log(LogLevel::kWarning, "egress_refused",
      {{"destination", shown},
       {"why",
        "a client used understudy as its proxy; it is not one, and a replay never "
        "reaches a provider: give the SDK understudy's base URL (docs/http.md)"}});
  return absl::PermissionDeniedError(absl::StrCat(
      "understudy refused a connection to ", shown,
      ": it is not a proxy. `understudy replay` points HTTPS_PROXY and HTTP_PROXY here so that "
      "no request reaches a real provider; give the SDK understudy's base URL instead (see "
      "docs/http.md, \"Per SDK\")"));
}

class Processor final : public grpc::AuthMetadataProcessor {
 public:
  explicit Processor(AccessToken token) : token_(std::move(token)) {}

  // A string compare: run on the transport thread.
  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext*,
                       OutputMetadata* consumed, OutputMetadata*) override {
    if (!token_.enabled()) return grpc::Status::OK;
    auto authorization = metadata.find("authorization");
    if (authorization != metadata.end()) {
      const absl::string_view value(authorization->second.data(), authorization->second.size());
      if (token_.MatchesBearer(value)) {
        // Consumed: handlers (and so the upstream) never see it.
        consumed->emplace("authorization", std::string(value));
        return grpc::Status::OK;
      }
    }
    auto token = metadata.find("understudy-token");
    if (token != metadata.end() &&
        token_.Matches(absl::string_view(token->second.data(), token->second.size()))) {
      consumed->emplace("understudy-token", std::string(token->second.data(), token->second.size()));
      return grpc::Status::OK;
    }
    return grpc::Status(
        grpc::StatusCode::UNAUTHENTICATED,
        "this server needs its access token: send metadata `authorization: Bearer TOKEN` (or "
        "`understudy-token: TOKEN`)");
  }

 private:
  const AccessToken token_;
};

// Removes the first header named `name` from `request`.
void Remove(HttpRequest* request, absl::string_view name) {
  auto it = std::find_if(request->headers.begin(), request->headers.end(),
                         [&](const auto& h) { return h.first == name; });
  if (it != request->headers.end()) request->headers.erase(it);
}

}  // namespace

absl::StatusOr<AccessToken> AccessToken::Create(std::string token) {
  if (token.size() < kMinTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--auth-token: ", token.size(), " characters; use at least ", kMinTokenBytes,
        " (e.g. `openssl rand -hex 32`)"));
  }
  for (char c : token) {
    if (c <= 0x20 || c >= 0x7f) {
      return absl::InvalidArgumentError(
          "--auth-token: only printable ASCII without spaces (it travels in headers)");
    }
  }
  return AccessToken(std::move(token));
}

absl::StatusOr<AccessToken> AccessToken::FromFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--auth-token-file ", path, ": no such file"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-token-file ", path, ": not a regular file"));
  }
  if ((st.st_mode & 0077) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--auth-token-file %s: readable by others (mode %03o); chmod 600 it",
                        path, st.st_mode & 0777));
  }
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return absl::InvalidArgumentError(absl::StrCat("--auth-token-file ", path, ": empty"));
  }
  absl::StatusOr<AccessToken> token =
      Create(std::string(absl::StripTrailingAsciiWhitespace(line)));
  if (!token.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--auth-token-file ", path, ": ",
        absl::StripPrefix(token.status().message(), "--auth-token: ")));
  }
  return token;
}

bool AccessToken::Matches(absl::string_view presented) const {
  if (token_.empty() || presented.size() != token_.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < token_.size(); ++i) {
    diff |= static_cast<unsigned char>(token_[i] ^ presented[i]);
  }
  return diff == 0;
}

bool AccessToken::MatchesBearer(absl::string_view authorization) const {
  authorization = absl::StripAsciiWhitespace(authorization);
  if (authorization.size() < 7 || !absl::StartsWithIgnoreCase(authorization, "bearer ")) {
    return false;
  }
  return Matches(absl::StripLeadingAsciiWhitespace(authorization.substr(7)));
}

absl::Status CheckHttpAccess(const AccessToken& token, bool provider_route,
                             HttpRequest* request) {
  if (!token.enabled()) return absl::OkStatus();
  if (token.Matches(request->Header(kTokenHeader))) {
    Remove(request, kTokenHeader);
    return absl::OkStatus();
  }
  if (token.MatchesBearer(request->Header("authorization"))) {
    Remove(request, "authorization");
    return absl::OkStatus();
  }
  if (provider_route) {
    for (const char* header : {"x-api-key", "api-key", "x-goog-api-key"}) {
      if (token.Matches(request->Header(header))) {
        Remove(request, header);
        return absl::OkStatus();
      }
    }
  }
  return absl::UnauthenticatedError(
      provider_route
          ? "this server needs its access token: use it as the API key (Authorization: Bearer, "
            "x-api-key or api-key), or send it in X-Understudy-Token to keep a real key for the "
            "upstream"
          : "this server needs its access token: send Authorization: Bearer TOKEN");
}

std::shared_ptr<grpc::AuthMetadataProcessor> MakeGrpcAccessProcessor(AccessToken token) {
  return std::make_shared<Processor>(std::move(token));
}

bool IsLoopbackHost(absl::string_view host) {
  if (absl::EqualsIgnoreCase(host, "localhost")) return true;
  if (host == "::1" || host == "[::1]") return true;
  return absl::StartsWith(host, "127.");
}

std::string HostOf(absl::string_view address) {
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    return std::string(address.substr(1, close == absl::string_view::npos ? address.size() : close - 1));
  }
  const size_t colon = address.rfind(':');
  // More than one colon and no brackets: a bare IPv6 address, no port.
  if (colon != absl::string_view::npos && address.find(':') == colon) {
    return std::string(address.substr(0, colon));
  }
  return std::string(address);
}

std::vector<std::string> AllowedHosts(absl::string_view bound_host,
                                      const std::vector<std::string>& extra) {
  if (std::find(extra.begin(), extra.end(), "*") != extra.end()) return {};
  const std::string host = absl::AsciiStrToLower(HostOf(bound_host));
  const bool wildcard = host.empty() || host == "0.0.0.0" || host == "::";
  if (wildcard && extra.empty()) return {};
  std::vector<std::string> out;
  for (const std::string& e : extra) out.push_back(absl::AsciiStrToLower(e));
  if (IsLoopbackHost(host) || wildcard) {
    for (const char* name : {"localhost", "127.0.0.1", "::1"}) out.push_back(name);
  }
  if (!wildcard) out.push_back(host);
  return out;
}

absl::Status CheckNotProxied(const HttpRequest& request) {
  absl::string_view destination;
  if (request.method == "CONNECT") {
    destination = request.target;  // authority form: host:port
  } else {
    absl::string_view target = request.target;
    absl::string_view default_port;
    if (absl::ConsumePrefix(&target, "http://")) {
      default_port = "80";
    } else if (absl::ConsumePrefix(&target, "https://")) {
      default_port = "443";
    } else {
      return absl::OkStatus();  // origin form: /path
    }
    destination = target.substr(0, target.find_first_of("/?#"));
    if (destination.find(':') == absl::string_view::npos || absl::EndsWith(destination, "]")) {
      return Refused(absl::StrCat(destination, ":", default_port));
    }
  }
  return Refused(destination);
}

absl::Status CheckHost(const std::vector<std::string>& allowed, const HttpRequest& request) {
  US_RETURN_IF_ERROR(CheckNotProxied(request));
  if (allowed.empty()) return absl::OkStatus();
  const absl::string_view header = request.Header("host");
  if (header.empty()) return absl::OkStatus();
  const std::string name = absl::AsciiStrToLower(HostOf(header));
  if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat("Host \"", Printable(header.substr(0, 100)),
                   "\" is not a name this server answers to (", absl::StrJoin(allowed, ", "),
                   "); add it with --allow-host (this check stops DNS rebinding)"));
}

}  // namespace service
}  // namespace understudy
