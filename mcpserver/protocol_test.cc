#include "mcpserver/protocol.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace mcpserver {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json Call(const Protocol& p, const json& message) {
  std::string reply = p.Handle(message.dump());
  return reply.empty() ? json() : json::parse(reply);
}

json Request(const std::string& method, json params = json::object(), int id = 1) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

class ProtocolTest : public ::testing::Test {
 protected:
  Tools tools_{ToolsOptions{}};
  Protocol protocol_{&tools_, "9.9.9"};
};

TEST_F(ProtocolTest, InitializeNegotiatesTheVersion) {
  json r = Call(protocol_, Request("initialize", {{"protocolVersion", "2025-03-26"}}));
  EXPECT_EQ(r["id"], 1);
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-03-26");
  EXPECT_EQ(r["result"]["serverInfo"]["version"], "9.9.9");
  EXPECT_TRUE(r["result"]["capabilities"].contains("tools"));
  r = Call(protocol_, Request("initialize", {{"protocolVersion", "1999-01-01"}}));
  EXPECT_EQ(r["result"]["protocolVersion"], kProtocolVersions[0]);
}

TEST_F(ProtocolTest, ListsEveryToolWithBothSchemas) {
  json r = Call(protocol_, Request("tools/list"));
  const json& tools = r["result"]["tools"];
  ASSERT_TRUE(tools.is_array());
  std::vector<std::string> names;
  for (const json& t : tools) {
    names.push_back(t["name"]);
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t["name"];
    EXPECT_EQ(t["outputSchema"]["type"], "object") << t["name"];
    EXPECT_FALSE(t["description"].get<std::string>().empty()) << t["name"];
  }
  for (const char* want : {"list_sessions", "show_run", "query_trace", "assert_run",
                           "validate_scenario", "validate_test_spec", "get_schema",
                           "generate_test_spec"}) {
    EXPECT_THAT(names, ::testing::Contains(want));
  }
  // The same bytes every time.
  EXPECT_EQ(protocol_.Handle(Request("tools/list").dump()),
            protocol_.Handle(Request("tools/list").dump()));
}

TEST_F(ProtocolTest, ValidatorAnswersEveryProblemAsAResult) {
  json r = Call(protocol_, Request("tools/call",
                                   {{"name", "validate_scenario"},
                                    {"arguments", {{"document", "schema: understudy.scenario/v1\nrules:\n  - whn: {agent: a}\n"}}}}));
  const json& result = r["result"];
  EXPECT_FALSE(result["isError"].get<bool>());
  EXPECT_FALSE(result["structuredContent"]["valid"].get<bool>());
  const json& errors = result["structuredContent"]["errors"];
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0]["path"], "rules[0].whn");
  EXPECT_EQ(errors[0]["line"], 3);
  EXPECT_THAT(errors[0]["suggestion"].get<std::string>(), HasSubstr("when"));
  EXPECT_EQ(json::parse(result["content"][0]["text"].get<std::string>()),
            result["structuredContent"]);
}

TEST_F(ProtocolTest, BadArgumentsAreToolErrors) {
  json r = Call(protocol_, Request("tools/call", {{"name", "validate_test_spec"},
                                                  {"arguments", {{"document", 7}}}}));
  EXPECT_TRUE(r["result"]["isError"].get<bool>());
  EXPECT_THAT(r["result"]["content"][0]["text"].get<std::string>(),
              HasSubstr("arguments.document: expected a string or an object, got 7"));
  EXPECT_FALSE(r["result"].contains("structuredContent"));
  // A trace tool without a server says how to give it one.
  r = Call(protocol_, Request("tools/call", {{"name", "show_run"}, {"arguments", {{"run", "r1"}}}}));
  EXPECT_TRUE(r["result"]["isError"].get<bool>());
  EXPECT_THAT(r["result"]["content"][0]["text"].get<std::string>(), HasSubstr("--db or --addr"));
}

TEST_F(ProtocolTest, ProtocolErrors) {
  json r = Call(protocol_, Request("tools/call", {{"name", "show_rnu"}}));
  EXPECT_EQ(r["error"]["code"], -32602);
  EXPECT_THAT(r["error"]["message"].get<std::string>(), HasSubstr("did you mean \"show_run\""));
  r = Call(protocol_, Request("tools/call", {{"arguments", json::object()}}));
  EXPECT_EQ(r["error"]["code"], -32602);
  r = Call(protocol_, Request("resources/list"));
  EXPECT_EQ(r["error"]["code"], -32601);
  r = json::parse(protocol_.Handle("{not json"));
  EXPECT_EQ(r["error"]["code"], -32700);
  EXPECT_TRUE(r["id"].is_null());
  r = json::parse(protocol_.Handle("[]"));
  EXPECT_EQ(r["error"]["code"], -32600);
  // Notifications and responses answer nothing.
  EXPECT_EQ(protocol_.Handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"), "");
  EXPECT_EQ(protocol_.Handle(R"({"jsonrpc":"2.0","id":4,"result":{}})"), "");
  EXPECT_FALSE(Protocol::IsRequest(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  EXPECT_TRUE(Protocol::IsRequest("{not json"));
}

TEST_F(ProtocolTest, HostileDocumentsAreBounded) {
  // 100k nested arrays as a document: the validator refuses it, nothing recurses.
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  json r = Call(protocol_, Request("tools/call", {{"name", "validate_test_spec"},
                                                  {"arguments", {{"document", deep}}}}));
  EXPECT_FALSE(r["result"]["isError"].get<bool>());
  EXPECT_FALSE(r["result"]["structuredContent"]["valid"].get<bool>());
  // Larger than any document a tool takes.
  r = Call(protocol_, Request("tools/call",
                              {{"name", "validate_scenario"},
                               {"arguments", {{"document", std::string(kMaxDocumentBytes + 1, 'a')}}}}));
  EXPECT_TRUE(r["result"]["isError"].get<bool>());
  EXPECT_THAT(r["result"]["content"][0]["text"].get<std::string>(), HasSubstr("more than the"));
  // Invalid UTF-8 in a message is not JSON.
  r = json::parse(protocol_.Handle("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}"));
  EXPECT_TRUE(r.contains("error"));
}

}  // namespace
}  // namespace mcpserver
}  // namespace understudy
