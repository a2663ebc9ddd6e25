#include "capture/validate.h"

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace capture {
namespace {

using ::testing::HasSubstr;

TEST(ValidateTest, EmptyMessagesNameTheField) {
  v1::CompletionRequest r;
  EXPECT_THAT(ValidateRequest(r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("messages: must not be empty")));
}

TEST(ValidateTest, UnknownRoleNamesItsIndexAndValue) {
  v1::CompletionRequest r;
  r.add_messages()->set_role("user");
  r.add_messages()->set_role("wizard");
  EXPECT_THAT(ValidateRequest(r, "x."),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("x.messages[1].role: expected system, developer, user, assistant "
                                 "or tool, got \"wizard\"")));
}

TEST(ValidateTest, StreamedExchangeWithoutChunksIsRefused) {
  v1::Exchange ex;
  ex.mutable_request()->add_messages()->set_role("user");
  ex.set_streamed(true);
  EXPECT_THAT(ValidateExchange(ex, "exchanges[0]."),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exchanges[0].chunks")));
  ex.add_chunks()->set_content("hi");
  EXPECT_THAT(ValidateExchange(ex, ""), IsOk());
}

}  // namespace
}  // namespace capture
}  // namespace understudy
