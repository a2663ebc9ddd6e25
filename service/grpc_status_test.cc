#include "service/grpc_status.h"

#include <string>

#include "gtest/gtest.h"

namespace understudy {
namespace service {
namespace {

TEST(GrpcStatusTest, KeepsCodeAndMessage) {
  grpc::Status s = ToGrpcStatus(absl::NotFoundError("no such run"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "no such run");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST(GrpcStatusTest, LongMessagesAreCutWithANote) {
  grpc::Status s = ToGrpcStatus(absl::NotFoundError(std::string(20000, 'x')));
  EXPECT_LT(s.error_message().size(), 4300u);
  EXPECT_NE(s.error_message().find("cut;"), std::string::npos);
}

TEST(GrpcStatusTest, FromGrpcStatusKeepsCodeAndMessage) {
  absl::Status s = FromGrpcStatus(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "ended"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "ended");
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  EXPECT_EQ(FromGrpcStatus(ToGrpcStatus(absl::NotFoundError("x"))), absl::NotFoundError("x"));
}

}  // namespace
}  // namespace service
}  // namespace understudy
