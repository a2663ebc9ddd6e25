// Who is calling: the run and agent of a gRPC call.
#ifndef UNDERSTUDY_SERVICE_CALL_INFO_H_
#define UNDERSTUDY_SERVICE_CALL_INFO_H_

#include "engine/engine.h"
#include "grpcpp/server_context.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace service {

// Run and agent from the request's fields, else from metadata
// `understudy-run` / `understudy-agent`. Credentials (`authorization`,
// `x-api-key`, `api-key`) are carried for forwarding, never stored. The
// deadline is the call's.
engine::CallInfo CallInfoFrom(const grpc::ServerContextBase& context,
                                const v1::CompletionRequest& request);
// The same for calls whose request carries `run` and `agent` fields of its
// own (Tools, Ui); empty fields fall back to the metadata.
engine::CallInfo CallInfoFrom(const grpc::ServerContextBase& context, absl::string_view run,
                                absl::string_view agent);

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_CALL_INFO_H_
