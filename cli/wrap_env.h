// The environment `understudy record|replay -- CMD` gives the command: the
// variables that point its SDKs at understudy, and, for a replay, the ones
// that keep whatever ignores them from reaching a real provider.
//
// The base URL variables are the ones the registered model APIs' SDKs read
// (provider::Codec::BaseUrlVariable; the list is in docs/http.md).
// GOOGLE_VERTEX_BASE_URL (@google/genai on Vertex AI) and
// OPENAI_WEBSOCKET_BASE_URL (@openai/agents' Responses over a WebSocket)
// name APIs understudy does not serve and are not set.
#ifndef UNDERSTUDY_CLI_WRAP_ENV_H_
#define UNDERSTUDY_CLI_WRAP_ENV_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace understudy {
namespace cli {

// The variables the wrapper sets, name and value, in a fixed order. `http`
// is the HTTP listener's URL (http://127.0.0.1:PORT), `grpc` the gRPC
// address, `run` the run id. With `refuse_egress`, also HTTPS_PROXY,
// HTTP_PROXY, ALL_PROXY (and their lower-case spellings, which curl and
// Python read first) = `http`, whose listener refuses to be a proxy
// (service::CheckNotProxied); NO_PROXY / no_proxy = the loopback names, so
// that the SDKs' own calls to understudy go direct; and NODE_USE_ENV_PROXY=1,
// without which Node's fetch (>= 22.21, 24.5) ignores the proxy variables.
std::vector<std::pair<std::string, std::string>> WrapperVariables(absl::string_view http,
                                                                  absl::string_view grpc,
                                                                  absl::string_view run,
                                                                  bool refuse_egress);

// "Sets NAME, NAME, ... for the command.": the variables WrapperVariables
// sets without `refuse_egress`, for the commands' help.
std::string WrapperVariablesHelp();

// `base` ("NAME=value" entries) without the variables of `ours`, then
// `ours`: whatever the caller's environment held under those names is
// replaced, everything else is kept in its order.
std::vector<std::string> WithVariables(
    const std::vector<std::string>& base,
    const std::vector<std::pair<std::string, std::string>>& ours);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_WRAP_ENV_H_
