// The one place where absl::Status becomes grpc::Status, and back.
#ifndef UNDERSTUDY_SERVICE_GRPC_STATUS_H_
#define UNDERSTUDY_SERVICE_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace understudy {
namespace service {

// Same code, same message. Messages travel in trailing metadata, which
// clients refuse past 8 KiB by default, so longer ones are cut at a
// character boundary with a note saying where the whole text is.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The reverse, for a service method called in-process (service/ui_api.h):
// same code, same message.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_GRPC_STATUS_H_
