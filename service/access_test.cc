#include "service/access.h"

#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace service {
namespace {

using ::testing::HasSubstr;

HttpRequest Request(std::string method, std::string target, std::string host = "127.0.0.1:7141") {
  HttpRequest request;
  request.method = std::move(method);
  request.target = std::move(target);
  request.headers.emplace_back("host", std::move(host));
  return request;
}

TEST(CheckNotProxiedTest, LetsOrdinaryRequestsIn) {
  EXPECT_THAT(CheckNotProxied(Request("POST", "/v1/chat/completions")), IsOk());
  EXPECT_THAT(CheckNotProxied(Request("POST", "/run/r1/messages?x=1")), IsOk());
  EXPECT_THAT(CheckNotProxied(Request("OPTIONS", "*")), IsOk());
}

TEST(CheckNotProxiedTest, RefusesATunnelNamingWhereItWanted) {
  absl::Status s = CheckNotProxied(Request("CONNECT", "generativelanguage.googleapis.com:443",
                                           "generativelanguage.googleapis.com:443"));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(s.message(),
              HasSubstr("refused a connection to generativelanguage.googleapis.com:443"));
  EXPECT_THAT(s.message(), HasSubstr("not a proxy"));
}

TEST(CheckNotProxiedTest, RefusesAbsoluteFormTargetsWithTheirDefaultPort) {
  EXPECT_THAT(CheckNotProxied(Request("POST", "http://api.openai.com/v1/responses")).message(),
              HasSubstr("connection to api.openai.com:80:"));
  EXPECT_THAT(CheckNotProxied(Request("POST", "https://api.anthropic.com/v1/messages")).message(),
              HasSubstr("connection to api.anthropic.com:443:"));
  EXPECT_THAT(CheckNotProxied(Request("GET", "http://example.com:8080?q")).message(),
              HasSubstr("connection to example.com:8080:"));
  EXPECT_THAT(CheckNotProxied(Request("GET", "http://[::1]/x")).message(),
              HasSubstr("connection to [::1]:80:"));
}

TEST(CheckNotProxiedTest, QuotesOnlyPrintableBytes) {
  absl::Status s = CheckNotProxied(Request("CONNECT", std::string("evil\r\nhost\x01:1")));
  EXPECT_THAT(s.message(), HasSubstr("connection to evil??host?:1:"));
}

TEST(CheckHostTest, AProxiedRequestIsRefusedForWhatItIsNotForItsHost) {
  absl::Status s = CheckHost({"127.0.0.1", "localhost"},
                             Request("CONNECT", "api.openai.com:443", "api.openai.com:443"));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(s.message(), HasSubstr("refused a connection to api.openai.com:443"));
  EXPECT_THAT(
      CheckHost({"127.0.0.1"}, Request("POST", "/v1/messages", "evil.example:7141")).message(),
      HasSubstr("Host \"evil.example:7141\" is not a name this server answers to"));
  EXPECT_THAT(CheckHost({"127.0.0.1"}, Request("POST", "/v1/messages")), IsOk());
}

}  // namespace
}  // namespace service
}  // namespace understudy
