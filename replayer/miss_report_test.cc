#include "replayer/miss_report.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "recorder/canonical.h"

namespace understudy {
namespace replayer {
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
  return recorder::CanonicalJson(r);
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
  const std::vector<uint32_t>* found = index->Find(recorder::CanonicalText(r));
  ASSERT_NE(found, nullptr);
  EXPECT_THAT(*found, ::testing::ElementsAre(0u, 2u));
  m->set_content("gamma");
  EXPECT_EQ(index->Find(recorder::CanonicalText(r)), nullptr);
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

TEST(FindClosestTest, UnconsumedOnlySkipsUsedRecordings) {
  auto index = Index();
  std::vector<uint8_t> consumed = {1, 0, 1};
  EXPECT_EQ(FindClosest(*index, consumed, "a", Got("alpha"), /*unconsumed_only=*/true), 1u);
  std::vector<uint8_t> all = {1, 1, 1};
  EXPECT_EQ(FindClosest(*index, all, "a", Got("alpha"), /*unconsumed_only=*/true), 3u);
}

}  // namespace
}  // namespace replayer
}  // namespace understudy
