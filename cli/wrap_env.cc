#include "cli/wrap_env.h"

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "provider/codec.h"

namespace understudy {
namespace cli {

std::vector<std::pair<std::string, std::string>> WrapperVariables(absl::string_view http,
                                                                  absl::string_view grpc,
                                                                  absl::string_view run,
                                                                  bool refuse_egress) {
  const std::string prefix = absl::StrCat(http, "/run/", run);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, suffix] : provider::CodecRegistry::Builtin().BaseUrlVariables()) {
    out.emplace_back(name, absl::StrCat(prefix, suffix));
  }
  out.emplace_back("UNDERSTUDY_ADDR", std::string(grpc));
  out.emplace_back("UNDERSTUDY_HTTP", std::string(http));
  out.emplace_back("UNDERSTUDY_RUN", std::string(run));
  if (refuse_egress) {
    for (const char* name :
         {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"}) {
      out.emplace_back(name, std::string(http));
    }
    for (const char* name : {"NO_PROXY", "no_proxy"}) {
      out.emplace_back(name, "127.0.0.1,localhost,::1");
    }
    out.emplace_back("NODE_USE_ENV_PROXY", "1");
  }
  return out;
}

std::string WrapperVariablesHelp() {
  std::vector<std::string> names;
  for (const auto& [name, suffix] : provider::CodecRegistry::Builtin().BaseUrlVariables()) {
    names.push_back(name);
  }
  return absl::StrCat("Sets ", absl::StrJoin(names, ", "),
                      ", UNDERSTUDY_ADDR, UNDERSTUDY_HTTP and UNDERSTUDY_RUN for the command.");
}

std::vector<std::string> WithVariables(
    const std::vector<std::string>& base,
    const std::vector<std::pair<std::string, std::string>>& ours) {
  std::vector<std::string> env;
  env.reserve(base.size() + ours.size());
  for (const std::string& kv : base) {
    const absl::string_view name = absl::string_view(kv).substr(0, kv.find('='));
    if (absl::c_any_of(ours, [&](const auto& var) { return var.first == name; })) continue;
    env.push_back(kv);
  }
  for (const auto& [name, value] : ours) env.push_back(absl::StrCat(name, "=", value));
  return env;
}

}  // namespace cli
}  // namespace understudy
