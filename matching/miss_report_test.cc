#include "matching/miss_report.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "provider/canonical.h"

namespace understudy {
namespace matching {
namespace {

using ::testing::HasSubstr;

v1::Exchange Recorded(int64_t seq, const std::string& agent, const std::string& text) {
  v1::Exchange e;
  e.set_seq(seq);
  e.set_agent(agent);
  auto* m = e.mutable_request()->add_messages();
  m->set_role("user");
  m->set_content(text);
  return e;
}

std::shared_ptr<const SessionIndex> Index() {
  v1::Session s;
  s.set_name("golden");
  s.set_version(2);
  return SessionIndex::Build(s, {Recorded(1, "a", "alpha"), Recorded(2, "b", "beta"),
                                 Recorded(3, "a", "alpha")});
}

nlohmann::json Got(const std::string& text) {
  v1::CompletionRequest r;
  auto* m = r.add_messages();
  m->set_role("user");
  m->set_content(text);
  return provider::CanonicalJson(r);
}

TEST(SessionIndexTest, FindExactAgreesWithTheCanonicalPathOrDefersToIt) {
  auto index = Index();
  auto request = [](const std::string& text) {
    v1::CompletionRequest r;
    auto* m = r.add_messages();
    m->set_role("user");
    m->set_content(text);
    return r;
  };
  // Byte for byte a recorded request: the same positions as Find.
  const std::vector<uint32_t>* exact = index->FindExact(request("alpha"));
  ASSERT_NE(exact, nullptr);
  EXPECT_EQ(exact, index->Find(SessionIndex::TextOf(index->CanonicalOf(request("alpha")))));
  EXPECT_THAT(*exact, ::testing::ElementsAre(0, 2));
  // Unknown, or carrying routing fields: no answer from the fast path.
  EXPECT_EQ(index->FindExact(request("gamma")), nullptr);
  v1::CompletionRequest routed = request("alpha");
  routed.set_run("run-1");
  EXPECT_EQ(index->FindExact(routed), nullptr);
  // A field the canonical form ignores (an empty params message) changes the
  // bytes but not the canonical text: the canonical path still finds it.
  v1::CompletionRequest with_params = request("beta");
  with_params.mutable_params();
  EXPECT_EQ(index->FindExact(with_params), nullptr);
  ASSERT_NE(index->Find(SessionIndex::TextOf(index->CanonicalOf(with_params))), nullptr);
}

TEST(SessionIndexTest, FindsIdenticalRequestsInSeqOrder) {
  auto index = Index();
  v1::CompletionRequest r;
  auto* m = r.add_messages();
  m->set_role("user");
  m->set_content("alpha");
  const std::vector<uint32_t>* found = index->Find(provider::CanonicalText(r));
  ASSERT_NE(found, nullptr);
  EXPECT_THAT(*found, ::testing::ElementsAre(0u, 2u));
  m->set_content("gamma");
  EXPECT_EQ(index->Find(provider::CanonicalText(r)), nullptr);
}

TEST(MissReportTest, ClosestPrefersSameAgentThenUnconsumedThenLowestSeq) {
  auto index = Index();
  std::vector<uint8_t> consumed = {1, 0, 0};
  // "alphx" differs from seq 1 and 3 by one field each; seq 1 is consumed.
  v1::MissReport r = BuildMissReport(*index, consumed, "a", Got("alphx"));
  EXPECT_EQ(r.closest_seq(), 3);
  EXPECT_FALSE(r.consumed_only());
  ASSERT_EQ(r.diffs_size(), 1);
  EXPECT_EQ(r.diffs(0).path(), "messages[0].content");
  EXPECT_EQ(r.diffs(0).recorded(), "\"alpha\"");
  EXPECT_EQ(r.diffs(0).got(), "\"alphx\"");
  EXPECT_THAT(r.text(), HasSubstr("session \"golden@2\""));
  EXPECT_THAT(r.text(), HasSubstr("closest is exchange #3 (agent \"a\"), 1 field differs:"));
}

TEST(MissReportTest, ConsumedIdenticalRecordingIsReportedAsSuch) {
  auto index = Index();
  std::vector<uint8_t> consumed = {1, 0, 1};
  v1::MissReport r = BuildMissReport(*index, consumed, "a", Got("alpha"));
  EXPECT_TRUE(r.consumed_only());
  EXPECT_EQ(r.closest_seq(), 1);
  EXPECT_THAT(r.text(), HasSubstr("already used it"));
}

// A tool loop's second request: the user's question, the model's calls
// (with `ids`) and their results, answering `ids` in the same order.
v1::CompletionRequest SecondStep(const std::vector<std::string>& ids) {
  v1::CompletionRequest r;
  v1::Message* user = r.add_messages();
  user->set_role("user");
  user->set_content("weather in Paris and Oslo?");
  v1::Message* calls = r.add_messages();
  calls->set_role("assistant");
  for (const std::string& id : ids) {
    v1::ToolCall* c = calls->add_tool_calls();
    c->set_id(id);
    c->set_name("get_weather");
  }
  calls->set_extra(R"({"parts":[{"functionCall":{"id":")" + ids[0] + R"("}}]})");
  for (const std::string& id : ids) {
    v1::Message* result = r.add_messages();
    result->set_role("tool");
    result->set_tool_call_id(id);
    result->set_content("sunny");
  }
  return r;
}

// The exchange that answered the first step with calls carrying `ids`, and
// the one that answered `second`.
std::vector<v1::Exchange> Loop(const std::vector<std::string>& answer_ids,
                               v1::CompletionRequest second) {
  v1::Exchange first = Recorded(1, "", "weather in Paris and Oslo?");
  for (const std::string& id : answer_ids) {
    first.mutable_response()->mutable_message()->add_tool_calls()->set_id(id);
  }
  v1::Exchange next;
  next.set_seq(2);
  *next.mutable_request() = std::move(second);
  return {first, next};
}

std::shared_ptr<const SessionIndex> LoopIndex(std::vector<v1::Exchange> exchanges,
                                              bool exact_ids = false) {
  v1::Session s;
  s.set_name("loop");
  s.set_version(1);
  std::shared_ptr<const MatchNormalizer> normalizer;
  if (exact_ids) normalizer = *MatchNormalizer::Create({}, {}, /*exact_tool_call_ids=*/true);
  return SessionIndex::Build(s, std::move(exchanges), normalizer);
}

const std::vector<uint32_t>* FindCanonical(const SessionIndex& index,
                                           const v1::CompletionRequest& request) {
  return index.Find(SessionIndex::TextOf(index.CanonicalOf(request)));
}

TEST(SessionIndexTest, ToolCallIdsTheClientMadeUpMatchByPosition) {
  // Gemini gave no ids; the SDK made up its own, other ones in the replay.
  auto index = LoopIndex(Loop({"", ""}, SecondStep({"rec-A", "rec-B"})));
  const std::vector<uint32_t>* found = FindCanonical(*index, SecondStep({"live-1", "live-2"}));
  ASSERT_NE(found, nullptr);
  EXPECT_THAT(*found, ::testing::ElementsAre(1));
  // Everywhere the id occurs (the provider's own copy of the parts too).
  EXPECT_EQ(index->canonical(1)["messages"][1]["extra"]["parts"][0]["functionCall"]["id"],
            "<client tool call id 1>");
  EXPECT_EQ(index->canonical(1)["messages"][3]["tool_call_id"], "<client tool call id 2>");
  // By position: results answering the calls the other way round differ.
  v1::CompletionRequest swapped = SecondStep({"live-1", "live-2"});
  swapped.mutable_messages(2)->set_tool_call_id("live-2");
  swapped.mutable_messages(3)->set_tool_call_id("live-1");
  EXPECT_EQ(FindCanonical(*index, swapped), nullptr);
}

TEST(SessionIndexTest, ToolCallIdsTheModelGaveMatchExactly) {
  auto index = LoopIndex(Loop({"call_1", "call_2"}, SecondStep({"call_1", "call_2"})));
  ASSERT_NE(FindCanonical(*index, SecondStep({"call_1", "call_2"})), nullptr);
  EXPECT_EQ(FindCanonical(*index, SecondStep({"call_1", "call_9"})), nullptr);
  EXPECT_EQ(FindCanonical(*index, SecondStep({"call_2", "call_1"})), nullptr);
}

TEST(SessionIndexTest, ExactToolCallIdsMatchMadeUpIdsAsTheyAre) {
  auto index = LoopIndex(Loop({"", ""}, SecondStep({"rec-A", "rec-B"})), /*exact_ids=*/true);
  EXPECT_EQ(FindCanonical(*index, SecondStep({"live-1", "live-2"})), nullptr);
  ASSERT_NE(FindCanonical(*index, SecondStep({"rec-A", "rec-B"})), nullptr);
  std::vector<uint8_t> consumed = {1, 0};
  v1::MissReport r =
      BuildMissReport(*index, consumed, "", index->CanonicalOf(SecondStep({"live-1", "live-2"})));
  EXPECT_EQ(r.closest_seq(), 2);
  EXPECT_THAT(r.text(), HasSubstr("messages[2].tool_call_id: recorded \"rec-A\" got \"live-1\""));
}

TEST(MissReportTest, EmptySessionSaysSo) {
  v1::Session s;
  s.set_name("empty");
  s.set_version(1);
  auto index = SessionIndex::Build(s, {});
  v1::MissReport r = BuildMissReport(*index, {}, "a", Got("x"));
  EXPECT_EQ(r.closest_seq(), 0);
  EXPECT_THAT(r.text(), HasSubstr("the session has no exchanges"));
}

TEST(MissReportTest, SameInputsGiveTheSameText) {
  auto index = Index();
  std::vector<uint8_t> consumed = {0, 0, 0};
  EXPECT_EQ(BuildMissReport(*index, consumed, "b", Got("alpha")).SerializeAsString(),
            BuildMissReport(*index, consumed, "b", Got("alpha")).SerializeAsString());
}

// A tool loop's second step whose tool call ids differ from the
// recording's, with the first step already served: the closest is the
// recorded second step (ids differ) rather than the used first step (which
// lacks two whole messages), and the report names the id fields.
TEST(MissReportTest, NamesTheDifferingIdsRatherThanAUsedShorterRecording) {
  auto step = [](int64_t seq, const std::string& id, bool with_call) {
    v1::Exchange e = Recorded(seq, "", "weather in Paris?");
    if (with_call) {
      v1::Message* call = e.mutable_request()->add_messages();
      call->set_role("assistant");
      v1::ToolCall* c = call->add_tool_calls();
      c->set_id(id);
      c->set_name("get_weather");
      c->set_arguments(R"({"city":"Paris"})");
      // The provider's own copy of the parts (Gemini's thoughtSignature
      // keeps them), holding the id once more.
      call->set_extra(R"({"parts":[{"functionCall":{"id":")" + id +
                      R"(","name":"get_weather"},"thoughtSignature":"c2ln"}]})");
      v1::Message* result = e.mutable_request()->add_messages();
      result->set_role("tool");
      result->set_tool_call_id(id);
      result->set_content(R"({"weather":"sunny"})");
    }
    return e;
  };
  v1::Session s;
  s.set_name("loop");
  s.set_version(1);
  auto exact = MatchNormalizer::Create({}, {}, /*exact_tool_call_ids=*/true);
  ASSERT_TRUE(exact.ok());
  auto index = SessionIndex::Build(s, {step(1, "", false), step(2, "recorded-id", true)}, *exact);
  v1::Exchange live = step(0, "live-id", true);
  v1::MissReport r = BuildMissReport(*index, {1, 0}, "", index->CanonicalOf(live.request()));
  EXPECT_EQ(r.closest_seq(), 2);
  EXPECT_FALSE(r.consumed_only());
  EXPECT_THAT(r.text(), HasSubstr("closest is exchange #2 (agent \"\"), 3 fields differ:"));
  EXPECT_THAT(r.text(),
              HasSubstr("messages[1].tool_calls[0].id: recorded \"recorded-id\" got \"live-id\""));
  EXPECT_THAT(r.text(),
              HasSubstr("messages[2].tool_call_id: recorded \"recorded-id\" got \"live-id\""));
  EXPECT_THAT(r.text(), ::testing::Not(HasSubstr("(absent)")));
}

TEST(FindClosestTest, UnconsumedOnlySkipsUsedRecordings) {
  auto index = Index();
  std::vector<uint8_t> consumed = {1, 0, 1};
  EXPECT_EQ(FindClosest(*index, consumed, "a", Got("alpha"), /*unconsumed_only=*/true), 1u);
  std::vector<uint8_t> all = {1, 1, 1};
  EXPECT_EQ(FindClosest(*index, all, "a", Got("alpha"), /*unconsumed_only=*/true), 3u);
}

}  // namespace
}  // namespace matching
}  // namespace understudy
