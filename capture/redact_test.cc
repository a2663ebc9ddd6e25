#include "capture/redact.h"

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace capture {
namespace {

using ::testing::HasSubstr;

TEST(RedactTest, ConfiguredPathsAreReplacedAndTheRestKeptInOrder) {
  auto r = Redactor::Create({}, {"metadata.api_key", "messages[*].secret"});
  ASSERT_TRUE(r.ok()) << r.status();
  std::string out = r->RedactBody(
      R"({"z":1,"metadata":{"api_key":"sk-live-123","keep":"x"},"messages":[{"secret":"a"},{"b":2}]})");
  EXPECT_EQ(out,
            R"({"z":1,"metadata":{"api_key":"[REDACTED]","keep":"x"},"messages":[{"secret":"[REDACTED]"},{"b":2}]})");
  EXPECT_EQ(out.find("sk-live-123"), std::string::npos);
}

TEST(RedactTest, BodiesWithoutTheFieldsKeepTheirExactBytes) {
  auto r = Redactor::Create({}, {"metadata.api_key"});
  ASSERT_TRUE(r.ok());
  const std::string body = "{ \"model\" : \"m\",\n \"x\": 1.50 }";
  EXPECT_EQ(r->RedactBody(body), body);
  EXPECT_EQ(r->RedactBody("not json"), "not json");
}

TEST(RedactTest, SecretHeadersIncludeTheDefaultsAndConfiguredOnesInAnyCase) {
  auto r = Redactor::Create({"X-Gateway-Token"}, {});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->IsSecretHeader("Authorization"));
  EXPECT_TRUE(r->IsSecretHeader("x-api-key"));
  EXPECT_TRUE(r->IsSecretHeader("API-KEY"));
  EXPECT_TRUE(r->IsSecretHeader("x-gateway-token"));
  EXPECT_FALSE(r->IsSecretHeader("content-type"));
}

TEST(RedactTest, MalformedPathNamesTheFlag) {
  EXPECT_THAT(Redactor::Create({}, {"a[b]"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--redact-json-path \"a[b]\": expected [*] or [N]")));
}

}  // namespace
}  // namespace capture
}  // namespace understudy
