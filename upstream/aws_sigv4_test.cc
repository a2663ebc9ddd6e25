#include "upstream/aws_sigv4.h"

#include <map>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace upstream {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Headers = std::vector<std::pair<std::string, std::string>>;

constexpr char kSecret[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

absl::Time At(const char* rfc3339) {
  absl::Time t;
  std::string error;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &error)) << error;
  return t;
}

std::map<std::string, std::string> AsMap(const Headers& headers) {
  return std::map<std::string, std::string>(headers.begin(), headers.end());
}

// The expected values below are what the AWS SDK's own signer
// (@smithy/signature-v4, applyChecksum and uriEscapePath on) computes for
// the same request: a signature it accepts is one AWS accepts.
TEST(AwsSignerTest, SignsABedrockCallAsTheSdkDoes) {
  AwsSigner signer({"AKIDEXAMPLE", kSecret, "FwoGZXIvYXdzEXAMPLE"}, "us-east-1", "bedrock");
  // The SDK's own signature for understudy's address is replaced.
  Headers headers = {{"content-type", "application/json"},
                     {"authorization", "AWS4-HMAC-SHA256 Credential=old"},
                     {"X-Amz-Date", "20000101T000000Z"}};
  signer.Sign("POST",
              "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
              "anthropic.claude-3-haiku-20240307-v1%3A0/converse",
              &headers, R"({"messages":[{"role":"user","content":[{"text":"hi"}]}]})",
              At("2026-01-02T03:04:05Z"));
  const std::map<std::string, std::string> got = AsMap(headers);
  EXPECT_EQ(headers.size(), 5u);
  EXPECT_EQ(got.at("x-amz-date"), "20260102T030405Z");
  EXPECT_EQ(got.at("x-amz-security-token"), "FwoGZXIvYXdzEXAMPLE");
  EXPECT_EQ(got.at("x-amz-content-sha256"),
            "c3335e07d6e89650bf94cb98664be69f8774dbc3198df221f113db0a59ea14f0");
  EXPECT_EQ(got.at("authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260102/us-east-1/bedrock/aws4_request, "
            "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token, "
            "Signature=a83fd93a00c9e7de60c120ad88e253b9948bf6d00072da4ef3097786a1c09eac");
}

TEST(AwsSignerTest, SignsAQueryAndAPortWithLongTermKeys) {
  AwsSigner signer({"AKIDEXAMPLE", kSecret, ""}, "eu-west-1", "bedrock");
  Headers headers = {{"Content-Type", "application/json"}};
  signer.Sign("POST", "http://127.0.0.1:8080/model/m/invoke?b=2&a=x%20y", &headers, "{}",
              At("2026-11-29T12:00:00Z"));
  const std::map<std::string, std::string> got = AsMap(headers);
  EXPECT_EQ(got.count("x-amz-security-token"), 0u);
  EXPECT_EQ(got.at("authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261129/eu-west-1/bedrock/aws4_request, "
            "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, "
            "Signature=a4dbdc6e18db24e063000fd3d73a8e8e0d68a6e6c0fb972a8b705d6c4507f543");
}

TEST(AwsSignerTest, ReadsCredentialsAndRegionFromTheEnvironment) {
  std::map<std::string, std::string> env = {{"AWS_ACCESS_KEY_ID", "AKID"},
                                            {"AWS_SECRET_ACCESS_KEY", "SECRET-VALUE"},
                                            {"AWS_REGION", "ap-south-1"}};
  auto getenv = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  // The region of an AWS host wins over AWS_REGION.
  absl::StatusOr<AwsSigner> signer = AwsSigner::FromEnvironment(
      "bedrock", "https://bedrock-runtime.eu-central-1.amazonaws.com", getenv);
  ASSERT_THAT(signer, IsOk());
  Headers headers;
  signer->Sign("POST", "https://bedrock-runtime.eu-central-1.amazonaws.com/x", &headers, "",
               absl::UnixEpoch());
  EXPECT_THAT(AsMap(headers).at("authorization"), HasSubstr("/eu-central-1/bedrock/"));
  signer = AwsSigner::FromEnvironment("bedrock", "http://127.0.0.1:9000", getenv);
  ASSERT_THAT(signer, IsOk());
  headers.clear();
  signer->Sign("POST", "http://127.0.0.1:9000/x", &headers, "", absl::UnixEpoch());
  EXPECT_THAT(AsMap(headers).at("authorization"), HasSubstr("/ap-south-1/bedrock/"));

  env.erase("AWS_REGION");
  EXPECT_THAT(AwsSigner::FromEnvironment("bedrock", "http://127.0.0.1:9000", getenv).status(),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("AWS_REGION")));
  env.erase("AWS_SECRET_ACCESS_KEY");
  const absl::Status missing =
      AwsSigner::FromEnvironment("bedrock", "https://bedrock-runtime.eu-central-1.amazonaws.com",
                                 getenv)
          .status();
  EXPECT_THAT(missing, StatusIs(absl::StatusCode::kUnauthenticated,
                                HasSubstr("AWS_SECRET_ACCESS_KEY")));
  // Never a value.
  EXPECT_THAT(std::string(missing.message()), Not(HasSubstr("AKID")));
}

}  // namespace
}  // namespace upstream
}  // namespace understudy
