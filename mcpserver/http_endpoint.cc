#include "mcpserver/http_endpoint.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "provider/jsonrpc.h"

namespace understudy {
namespace mcpserver {

namespace {

// Tool calls that may wait for a thread; past them a request is answered 503.
constexpr int kMaxWaiting = 64;

// http(s)://127.0.0.1[:PORT], localhost or [::1]: a page served from this
// machine's loopback.
bool IsLoopbackOrigin(absl::string_view origin) {
  if (!absl::ConsumePrefix(&origin, "http://") && !absl::ConsumePrefix(&origin, "https://")) {
    return false;
  }
  for (absl::string_view host : {"127.0.0.1", "localhost", "[::1]"}) {
    if (absl::ConsumePrefix(&origin, host)) {
      if (origin.empty()) return true;
      if (!absl::ConsumePrefix(&origin, ":") || origin.empty()) return false;
      return origin.find_first_not_of("0123456789") == absl::string_view::npos;
    }
  }
  return false;
}

}  // namespace

HttpEndpoint::HttpEndpoint(ToolsOptions options, std::string version, int threads)
    : tools_(std::move(options)), protocol_(&tools_, std::move(version)), pool_(threads) {}

HttpEndpoint::~HttpEndpoint() { pool_.Close(); }

void HttpEndpoint::Handle(McpHttpRequest request, std::function<void(McpHttpResponse)> respond,
                          std::function<bool()> cancelled) {
  const std::vector<std::pair<std::string, std::string>> json_type = {
      {"Content-Type", "application/json"}};
  if (request.method != "POST") {
    McpHttpResponse response{405, json_type, ""};
    response.headers.push_back({"Allow", "POST"});
    response.body = provider::jsonrpc::ErrorResponse(
        provider::Json(), provider::jsonrpc::kInvalidRequest,
        "method not allowed: understudy's MCP endpoint takes POST only (no "
        "server-initiated stream, no session to delete)");
    return respond(std::move(response));
  }
  // Browsers may send a simple cross-site POST (text/plain, no preflight)
  // to a loopback port, and a page reached through DNS rebinding names its
  // own origin: refuse both, as MCP's transport rules ask, so that no web
  // page can call tools (run_tests runs commands).
  if (!absl::StartsWithIgnoreCase(request.content_type, "application/json")) {
    return respond({415, json_type,
                    provider::jsonrpc::ErrorResponse(provider::Json(), provider::jsonrpc::kInvalidRequest,
                                                 "Content-Type must be application/json")});
  }
  if (const absl::string_view origin = request.origin;
      !origin.empty() && !IsLoopbackOrigin(origin)) {
    return respond({403, json_type,
                    provider::jsonrpc::ErrorResponse(
                        provider::Json(), provider::jsonrpc::kInvalidRequest,
                        absl::StrCat("Origin ", absl::CHexEscape(origin.substr(0, 200)),
                                     " may not call understudy's tools (only loopback origins)"))});
  }
  if (!Protocol::IsRequest(request.body)) {
    // Notifications and responses need nothing from the tools.
    (void)protocol_.Handle(request.body);
    return respond({202, {}, ""});
  }
  auto body = std::make_shared<std::string>(std::move(request.body));
  auto reply = std::make_shared<std::function<void(McpHttpResponse)>>(std::move(respond));
  const bool queued = pool_.TrySubmit(
      [this, body, reply, cancelled, json_type] {
        if (cancelled != nullptr && cancelled()) return;
        (*reply)({200, json_type, protocol_.Handle(*body)});
      },
      kMaxWaiting);
  if (!queued) {
    (*reply)({503, json_type,
              provider::jsonrpc::ErrorResponse(provider::Json(), provider::jsonrpc::kInternalError,
                                           "too many tool calls in progress, or shutting "
                                           "down; try again")});
  }
}

}  // namespace mcpserver
}  // namespace understudy
