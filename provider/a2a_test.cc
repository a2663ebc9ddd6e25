#include "provider/a2a.h"

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace provider {
namespace a2a {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

jsonrpc::Message Request(absl::string_view text) {
  absl::StatusOr<jsonrpc::Message> m = jsonrpc::ParseMessage(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : jsonrpc::Message();
}

TEST(A2aCall, BothVersionsOfEachMethod) {
  EXPECT_EQ(ClassifyMethod("SendMessage").method, Method::kSend);
  EXPECT_EQ(ClassifyMethod("SendMessage").version, Version::kV1);
  EXPECT_EQ(ClassifyMethod("message/send").method, Method::kSend);
  EXPECT_EQ(ClassifyMethod("message/send").version, Version::kV03);
  EXPECT_EQ(ClassifyMethod("SendStreamingMessage").method, Method::kStream);
  EXPECT_EQ(ClassifyMethod("message/stream").method, Method::kStream);
  EXPECT_EQ(ClassifyMethod("GetTask").method, Method::kGetTask);
  EXPECT_EQ(ClassifyMethod("tasks/cancel").method, Method::kCancelTask);
  EXPECT_EQ(ClassifyMethod("tasks/pushNotificationConfig/set").method, Method::kOther);
}

TEST(A2aCanonical, TheClientsMessageIdNeverDecidesAMatch) {
  const jsonrpc::Message a = Request(
      R"({"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"0b1","role":"ROLE_USER","parts":[{"text":"find"},{"text":"sources"}]}}})");
  const jsonrpc::Message b = Request(
      R"({"jsonrpc":"2.0","id":9,"method":"SendMessage","params":{"message":{"messageId":"77f","role":"ROLE_USER","parts":[{"text":"find"},{"text":"sources"}]}}})");
  absl::StatusOr<Call> call = ReadCall(a);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->text, "find\nsources");
  EXPECT_EQ(call->message_id, "0b1");
  const v1::CompletionRequest ca = CanonicalRequest("researcher", a);
  const v1::CompletionRequest cb = CanonicalRequest("researcher", b);
  EXPECT_EQ(ca.SerializeAsString(), cb.SerializeAsString());
  EXPECT_EQ(ca.operation(), "a2a:SendMessage");
  EXPECT_EQ(ca.model(), "researcher");
  EXPECT_EQ(ca.extra(), R"({"message":{"role":"ROLE_USER","parts":[{"text":"find"},{"text":"sources"}]}})");
  EXPECT_EQ(ca.messages_size(), 0);
  EXPECT_TRUE(IsA2aRequest(ca));
  const Call back = CallOf(ca);
  EXPECT_EQ(back.method, Method::kSend);
  EXPECT_EQ(back.text, "find\nsources");
}

TEST(A2aCanonical, ContextAndTaskIdsAreKept) {
  const jsonrpc::Message m = Request(
      R"({"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"x","contextId":"c1","taskId":"t1","role":"user","parts":[{"kind":"text","text":"go on"}]}}})");
  const v1::CompletionRequest c = CanonicalRequest("writer", m);
  const Call back = CallOf(c);
  EXPECT_EQ(back.version, Version::kV03);
  EXPECT_EQ(back.context_id, "c1");
  EXPECT_EQ(back.task_id, "t1");
  const jsonrpc::Message get =
      Request(R"({"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"t9"}})");
  EXPECT_EQ(CallOf(CanonicalRequest("writer", get)).task_id, "t9");
}

TEST(A2aCall, MalformedParamsNameTheField) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {R"({"jsonrpc":"2.0","id":1,"method":"SendMessage","params":[1]})", "params: expected an object"},
      {R"({"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}})", "params.message: missing"},
      {R"({"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":"hi"}})",
       "params.message: expected an object"},
      {R"({"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"parts":{}}}})",
       "params.message.parts: expected an array"},
      {R"({"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"text":"a"},{"text":3}]}}})",
       "params.message.parts[1].text: expected a string"},
      {R"({"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":5,"parts":[]}}})",
       "params.message.messageId: expected a string"},
      {R"({"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"historyLength":2}})", "params.id: missing"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Call> call = ReadCall(Request(c.text));
    EXPECT_FALSE(call.ok()) << c.text;
    EXPECT_THAT(call.status().message(), HasSubstr(c.says)) << c.text;
  }
}

TEST(A2aResult, TextAndStateOfEachShape) {
  EXPECT_EQ(ResultText(R"({"message":{"role":"ROLE_AGENT","parts":[{"text":"hi"}]}})"), "hi");
  EXPECT_EQ(ResultText(R"({"kind":"message","role":"agent","parts":[{"kind":"text","text":"hi"}]})"), "hi");
  const char* task =
      R"({"task":{"id":"t","status":{"state":"TASK_STATE_INPUT_REQUIRED","message":{"parts":[{"text":"which?"}]}},"artifacts":[{"parts":[{"text":"draft"}]}]}})";
  EXPECT_EQ(ResultText(task), "which?\ndraft");
  EXPECT_EQ(ResultState(task), "input-required");
  EXPECT_EQ(ResultState(R"({"kind":"task","id":"t","status":{"state":"completed"}})"), "completed");
  const char* stream =
      R"([{"kind":"task","id":"t","status":{"state":"submitted"}},{"kind":"artifact-update","artifact":{"parts":[{"kind":"text","text":"a"}]}},{"kind":"status-update","status":{"state":"completed","message":{"parts":[{"kind":"text","text":"b"}]}},"final":true}])";
  EXPECT_EQ(ResultText(stream), "a\nb");
  EXPECT_EQ(ResultState(stream), "completed");
  EXPECT_EQ(ResultText("not json"), "");
  EXPECT_EQ(ResultState(R"({"message":{}})"), "");
}

TEST(A2aReplay, ForCallerRewritesTheIdAndTheEchoedMessageId) {
  const std::string recorded =
      R"({"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","history":[{"messageId":"old-uuid","parts":[{"text":"old-uuid is mine"}]}]}}})";
  EXPECT_EQ(ForCaller(recorded, Json(1), Json(1), {{"old-uuid", "old-uuid"}}), recorded);
  EXPECT_EQ(ForCaller(recorded, Json(1), Json(7), {{"other", "x"}, {"old-uuid", "new-uuid"}}),
            R"({"jsonrpc":"2.0","id":7,"result":{"task":{"id":"t","history":[{"messageId":"new-uuid","parts":[{"text":"old-uuid is mine"}]}]}}})");
  EXPECT_EQ(ForCaller("not json", Json(1), Json(2), {}), "not json");
}

TEST(A2aScripted, AnswersInTheCallersVersionWithIdsFromTheSeed) {
  Call v1;
  v1.version = Version::kV1;
  v1.method = Method::kSend;
  const std::string a = ScriptedResult(v1, "done", false, "seed");
  EXPECT_EQ(a, ScriptedResult(v1, "done", false, "seed"));
  EXPECT_NE(a, ScriptedResult(v1, "done", false, "other"));
  EXPECT_EQ(ResultText(a), "done");
  EXPECT_THAT(a, HasSubstr(R"("role":"ROLE_AGENT")"));
  Call v03 = v1;
  v03.version = Version::kV03;
  v03.context_id = "c1";
  const std::string failed = ScriptedResult(v03, "down", true, "seed");
  EXPECT_THAT(failed, HasSubstr(R"("kind":"task")"));
  EXPECT_THAT(failed, HasSubstr(R"("contextId":"c1")"));
  EXPECT_EQ(ResultState(failed), "failed");
  EXPECT_EQ(ResultText(failed), "down");
  EXPECT_EQ(ResultState(ScriptedResult(v1, "down", true, "seed")), "failed");
}

TEST(A2aCard, EveryInterfaceUrlPointsAtUnderstudy) {
  absl::StatusOr<std::string> card = CardForUrl(
      R"({"name":"r","url":"http://10.0.0.1/a2a","supportedInterfaces":[{"url":"http://10.0.0.1/a2a","protocolBinding":"JSONRPC"}],"additionalInterfaces":[{"url":"http://10.0.0.1/x","transport":"JSONRPC"}],"skills":[]})",
      "http://127.0.0.1:9/a2a/r");
  ASSERT_TRUE(card.ok()) << card.status();
  EXPECT_THAT(*card, Not(HasSubstr("10.0.0.1")));
  EXPECT_THAT(*card, HasSubstr(R"("url":"http://127.0.0.1:9/a2a/r")"));
  EXPECT_FALSE(CardForUrl("[1]", "u").ok());
  EXPECT_FALSE(CardForUrl("{", "u").ok());
  absl::StatusOr<std::string> scripted = CardForUrl(ScriptedCard("writer"), "http://h/a2a/writer");
  ASSERT_TRUE(scripted.ok());
  EXPECT_THAT(*scripted, HasSubstr(R"("name":"writer")"));
  EXPECT_THAT(*scripted, HasSubstr(R"("url":"http://h/a2a/writer")"));
}

}  // namespace
}  // namespace a2a
}  // namespace provider
}  // namespace understudy
