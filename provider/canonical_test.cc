#include "provider/canonical.h"

#include "gtest/gtest.h"

namespace understudy {
namespace provider {
namespace {

v1::CompletionRequest Request() {
  v1::CompletionRequest r;
  r.set_model("m1");
  auto* sys = r.add_messages();
  sys->set_role("system");
  sys->set_content("You are the executor.");
  auto* a = r.add_messages();
  a->set_role("assistant");
  auto* call = a->add_tool_calls();
  call->set_id("c1");
  call->set_name("continue");
  call->set_arguments(R"({"phase": "verification", "n": 1})");
  return r;
}

TEST(CanonicalTest, KeyOrderInsideToolArgumentsDoesNotMatter) {
  v1::CompletionRequest a = Request();
  v1::CompletionRequest b = Request();
  b.mutable_messages(1)->mutable_tool_calls(0)->set_arguments(R"({"n":1,"phase":"verification"})");
  EXPECT_EQ(CanonicalText(a), CanonicalText(b));
}

TEST(CanonicalTest, RoutingFieldsAreIgnored) {
  v1::CompletionRequest a = Request();
  v1::CompletionRequest b = Request();
  b.set_run("r1");
  b.set_agent("executor");
  EXPECT_EQ(CanonicalText(a), CanonicalText(b));
  EXPECT_TRUE(WithoutRouting(b).run().empty());
  EXPECT_TRUE(WithoutRouting(b).agent().empty());
}

TEST(CanonicalTest, ContentChangesTheText) {
  v1::CompletionRequest a = Request();
  v1::CompletionRequest b = Request();
  b.mutable_messages(0)->set_content("You are the reviewer.");
  EXPECT_NE(CanonicalText(a), CanonicalText(b));
}

TEST(CanonicalTest, MalformedArgumentsAreComparedAsText) {
  v1::CompletionRequest a = Request();
  a.mutable_messages(1)->mutable_tool_calls(0)->set_arguments("{not json");
  nlohmann::json j = CanonicalJson(a);
  EXPECT_EQ(j["messages"][1]["tool_calls"][0]["arguments"], "{not json");
}

TEST(CanonicalTest, SetParamsAppearUnsetDoNot) {
  v1::CompletionRequest a = Request();
  EXPECT_FALSE(CanonicalJson(a).contains("params"));
  a.mutable_params()->set_temperature(0);
  nlohmann::json j = CanonicalJson(a);
  ASSERT_TRUE(j.contains("params"));
  EXPECT_EQ(j["params"]["temperature"], 0.0);
  EXPECT_FALSE(j["params"].contains("top_p"));
}

TEST(CanonicalTest, TextIsCompactSortedJson) {
  v1::CompletionRequest r;
  r.set_model("m");
  auto* m = r.add_messages();
  m->set_role("user");
  m->set_content("hi");
  EXPECT_EQ(CanonicalText(r), R"({"messages":[{"content":"hi","role":"user"}],"model":"m"})");
}

TEST(CanonicalTest, ExtraIsPartOfTheTextParsedWithSortedKeys) {
  v1::CompletionRequest a = Request();
  a.set_extra(R"({"tool_choice":"auto","response_format":{"type":"json_object"}})");
  a.mutable_messages(0)->set_extra(R"({"role":"developer"})");
  v1::CompletionRequest b = Request();
  b.set_extra(R"({"response_format": {"type": "json_object"}, "tool_choice": "auto"})");
  b.mutable_messages(0)->set_extra(R"({"role": "developer"})");
  EXPECT_EQ(CanonicalText(a), CanonicalText(b));
  nlohmann::json j = CanonicalJson(a);
  EXPECT_EQ(j["extra"]["tool_choice"], "auto");
  EXPECT_EQ(j["messages"][0]["extra"]["role"], "developer");
}

TEST(CanonicalTest, DifferentExtraChangesTheText) {
  v1::CompletionRequest a = Request();
  a.set_extra(R"({"tool_choice":"auto"})");
  v1::CompletionRequest b = Request();
  b.set_extra(R"({"tool_choice":"required"})");
  EXPECT_NE(CanonicalText(a), CanonicalText(b));
  v1::CompletionRequest c = Request();
  c.mutable_messages(1)->set_extra(R"({"content":[{"type":"image_url"}]})");
  EXPECT_NE(CanonicalText(Request()), CanonicalText(c));
}

TEST(CanonicalTest, EmptyExtraIsLeftOut) {
  EXPECT_FALSE(CanonicalJson(Request()).contains("extra"));
  EXPECT_FALSE(CanonicalJson(Request())["messages"][0].contains("extra"));
}

TEST(CanonicalTest, DeeplyNestedArgumentsAreComparedAsTextWithoutCrashing) {
  v1::CompletionRequest a = Request();
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  a.mutable_messages(1)->mutable_tool_calls(0)->set_arguments(deep);
  a.set_extra(R"({"x":)" + deep + "}");
  nlohmann::json j = CanonicalJson(a);
  EXPECT_EQ(j["messages"][1]["tool_calls"][0]["arguments"], deep);
  EXPECT_TRUE(j["extra"].is_string());
  EXPECT_FALSE(CanonicalText(a).empty());
}

}  // namespace
}  // namespace provider
}  // namespace understudy
