#include "provider/jsonrpc.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace provider {
namespace jsonrpc {
namespace {

using ::testing::HasSubstr;

TEST(JsonRpcParse, RequestNotificationResponse) {
  auto request = ParseMessage(
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read","arguments":{"p":1},"_meta":{"progressToken":7}}})");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->kind, Message::Kind::kRequest);
  EXPECT_EQ(request->id, Json(7));
  EXPECT_EQ(request->method, "tools/call");

  auto note = ParseMessage(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  ASSERT_TRUE(note.ok()) << note.status();
  EXPECT_EQ(note->kind, Message::Kind::kNotification);

  auto response = ParseMessage(R"({"jsonrpc":"2.0","id":"a","result":{"x":1}})");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->kind, Message::Kind::kResponse);
  EXPECT_EQ(OutcomeOf(*response).result_json, R"({"x":1})");

  auto unread = ParseMessage(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}})");
  ASSERT_TRUE(unread.ok()) << unread.status();
  EXPECT_TRUE(unread->id.is_null());
  EXPECT_FALSE(ParseMessage(R"({"jsonrpc":"2.0","id":null,"method":"ping"})").ok());

  auto error = ParseMessage(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}})");
  ASSERT_TRUE(error.ok()) << error.status();
  Outcome outcome = OutcomeOf(*error);
  EXPECT_TRUE(outcome.is_error);
  EXPECT_EQ(outcome.code, -32602);
  EXPECT_EQ(outcome.message, "bad");
}

TEST(JsonRpcParse, RefusesWhatIsNotOneMessage) {
  struct Case {
    const char* text;
    const char* says;
    int code;
  } cases[] = {
      {"{", "invalid JSON", kParseError},
      {R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", "batch", kInvalidRequest},
      {"3", "expected a JSON-RPC message", kInvalidRequest},
      {R"({"id":1,"method":"ping"})", "jsonrpc: missing", kInvalidRequest},
      {R"({"jsonrpc":"1.0","id":1,"method":"ping"})", "jsonrpc: expected \"2.0\"", kInvalidRequest},
      {R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", "id: expected a string or an integer",
       kInvalidRequest},
      {R"({"jsonrpc":"2.0","id":1,"method":4})", "method: expected a string", kInvalidRequest},
      {R"({"jsonrpc":"2.0","id":1,"method":"x","params":3})", "params: expected an object",
       kInvalidRequest},
      {R"({"jsonrpc":"2.0","id":1})", "exactly one of", kInvalidRequest},
      {R"({"jsonrpc":"2.0"})", "neither a request", kInvalidRequest},
  };
  for (const Case& c : cases) {
    auto parsed = ParseMessage(c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.says)) << c.text;
    EXPECT_EQ(ErrorCodeFor(parsed.status()), c.code) << c.text;
  }
}


TEST(JsonRpcIds, OnlyAResponsesDifferingIdIsReplaced) {
  Json response = Json::parse(R"({"jsonrpc":"2.0","id":1,"result":{}})");
  EXPECT_TRUE(ReplaceResponseId(response, Json("caller")));
  EXPECT_EQ(response["id"], Json("caller"));
  EXPECT_FALSE(ReplaceResponseId(response, Json("caller")));
  Json request = Json::parse(R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  EXPECT_FALSE(ReplaceResponseId(request, Json(2)));
  EXPECT_EQ(request["id"], Json(1));
}

}  // namespace
}  // namespace jsonrpc
}  // namespace provider
}  // namespace understudy
