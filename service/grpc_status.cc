#include "service/grpc_status.h"

#include <string>

namespace understudy {
namespace service {
namespace {

constexpr size_t kMaxMessageBytes = 4096;
constexpr char kCutNote[] = "\n… (cut; the whole text is in the run's trace and EndRun summary)";

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  std::string message(status.message());
  if (message.size() > kMaxMessageBytes) {
    size_t cut = kMaxMessageBytes;
    while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
    message.resize(cut);
    message += kCutNote;
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), message);
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

}  // namespace service
}  // namespace understudy
