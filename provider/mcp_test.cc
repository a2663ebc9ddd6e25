#include "provider/mcp.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace provider {
namespace mcp {
namespace {

using ::testing::HasSubstr;
using jsonrpc::Message;
using jsonrpc::ErrorResponse;
using jsonrpc::IdText;
using jsonrpc::ParseMessage;
using jsonrpc::ResultResponse;

TEST(McpParse, DeepNestingIsAnErrorNotACrash) {
  std::string deep = R"({"jsonrpc":"2.0","id":1,"method":"x","params":{"a":)";
  deep += std::string(100000, '[') + std::string(100000, ']') + "}}";
  auto parsed = ParseMessage(deep);
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("nested deeper"));
}

TEST(McpIds, IdTextIsTheSameKeyForARequestAndItsResponse) {
  auto request = ParseMessage(R"({"jsonrpc":"2.0","id":"a","method":"ping"})");
  auto response = ParseMessage(R"({"jsonrpc":"2.0","id":"a","result":{}})");
  auto numbered = ParseMessage(R"({"jsonrpc":"2.0","id":7,"result":{}})");
  auto note = ParseMessage(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  ASSERT_TRUE(request.ok() && response.ok() && numbered.ok() && note.ok());
  EXPECT_EQ(IdText(*request), R"("a")");
  EXPECT_EQ(IdText(*response), IdText(*request));
  EXPECT_EQ(IdText(*numbered), "7");
  EXPECT_EQ(IdText(*note), "");
}

TEST(McpIds, ProgressTokenOfARequestAndOfItsProgressNotifications) {
  auto request = ParseMessage(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"t"}}})");
  auto progress = ParseMessage(
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}})");
  auto other = ParseMessage(
      R"({"jsonrpc":"2.0","method":"notifications/message","params":{"progressToken":"t"}})");
  auto plain = ParseMessage(R"({"jsonrpc":"2.0","id":2,"method":"ping"})");
  ASSERT_TRUE(request.ok() && progress.ok() && other.ok() && plain.ok());
  EXPECT_EQ(ProgressTokenOf(*request), Json("t"));
  EXPECT_EQ(ProgressTokenOf(*progress), Json("t"));
  EXPECT_TRUE(ProgressTokenOf(*other).is_null());
  EXPECT_TRUE(ProgressTokenOf(*plain).is_null());
}

TEST(McpCanonical, DropsMetaAndKeepsTheRest) {
  auto request = ParseMessage(
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read","arguments":{"p":1},"_meta":{"progressToken":7}}})");
  ASSERT_TRUE(request.ok());
  v1::CompletionRequest canonical = CanonicalRequest("fs", *request);
  EXPECT_EQ(canonical.operation(), "mcp:tools/call");
  EXPECT_EQ(canonical.model(), "fs");
  EXPECT_EQ(canonical.extra(), R"({"name":"read","arguments":{"p":1}})");

  auto bare = ParseMessage(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(CanonicalRequest("fs", *bare).extra(), "{}");
}

TEST(McpRender, ResponsesAndErrors) {
  EXPECT_EQ(ResultResponse(Json(3), R"({"a":1})"), R"({"jsonrpc":"2.0","id":3,"result":{"a":1}})");
  EXPECT_EQ(ResultResponse(Json("x"), ""), R"({"jsonrpc":"2.0","id":"x","result":{}})");
  EXPECT_EQ(ErrorResponse(Json(1), -32001, "no \"recording\""),
            R"({"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no \"recording\""}})");
  EXPECT_EQ(ErrorResponse(Json(nullptr), -32700, "bad", R"({"k":1})"),
            R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad","data":{"k":1}}})");
}

TEST(McpRender, WithIdsRewritesOnlyIds) {
  const std::string recorded = R"({"result":{"z":1,"a":2},"jsonrpc":"2.0","id":4})";
  // Same id: the very bytes.
  EXPECT_EQ(WithIds(recorded, Json(4), Json()), recorded);
  // Another id: only the id changes; key order is kept.
  EXPECT_EQ(WithIds(recorded, Json("q"), Json()), R"({"result":{"z":1,"a":2},"jsonrpc":"2.0","id":"q"})");
  const std::string progress =
      R"({"method":"notifications/progress","params":{"progressToken":4,"progress":1},"jsonrpc":"2.0"})";
  EXPECT_EQ(WithIds(progress, Json(9), Json(9)),
            R"({"method":"notifications/progress","params":{"progressToken":9,"progress":1},"jsonrpc":"2.0"})");
  EXPECT_EQ(WithIds(progress, Json(9), Json()), progress);
  EXPECT_EQ(WithIds("not json", Json(1), Json()), "not json");
}

TEST(McpProxySignal, StartUpstreamIsAFieldOfTheBody) {
  EXPECT_EQ(ProxySignalBody(ProxySignal::kStartUpstream), R"({"understudy":"start_upstream"})");
  EXPECT_EQ(ProxySignalOf(R"({"understudy":"start_upstream"})"), ProxySignal::kStartUpstream);
  EXPECT_EQ(ProxySignalOf(R"({ "understudy" : "start_upstream", "x": 1 })"),
            ProxySignal::kStartUpstream);
  // The words elsewhere are no signal.
  EXPECT_EQ(ProxySignalOf(R"({"error":"start_upstream"})"), ProxySignal::kNone);
  EXPECT_EQ(ProxySignalOf("start_upstream"), ProxySignal::kNone);
  EXPECT_EQ(ProxySignalOf(R"({"understudy":"other"})"), ProxySignal::kNone);
}

}  // namespace
}  // namespace mcp
}  // namespace provider
}  // namespace understudy
