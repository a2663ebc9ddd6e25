#include "service/call_info.h"

#include <chrono>
#include <string>

#include "absl/time/time.h"

namespace understudy {
namespace service {

engine::CallInfo CallInfoFrom(const grpc::ServerContextBase& context,
                                const v1::CompletionRequest& request) {
  return CallInfoFrom(context, request.run(), request.agent());
}

engine::CallInfo CallInfoFrom(const grpc::ServerContextBase& context, absl::string_view run,
                                absl::string_view agent) {
  engine::CallInfo call;
  for (const auto& [key, value] : context.client_metadata()) {
    if (key == "understudy-run") {
      call.run.assign(value.data(), value.size());
    } else if (key == "understudy-agent") {
      call.agent.assign(value.data(), value.size());
    } else if (key == "authorization" || key == "x-api-key" || key == "api-key") {
      call.forward_headers.emplace_back(std::string(key.data(), key.size()),
                                        std::string(value.data(), value.size()));
    }
  }
  if (!run.empty()) call.run = std::string(run);
  if (!agent.empty()) call.agent = std::string(agent);
  auto deadline = context.deadline();
  if (deadline != std::chrono::system_clock::time_point::max()) {
    call.deadline = absl::FromChrono(deadline);
  }
  return call;
}

}  // namespace service
}  // namespace understudy
