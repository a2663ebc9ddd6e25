// The trace-reading core over a real store (no engine: the stored run
// records): queries with filters and paging, cursors, run lookup and its
// errors, assertions. The timeline has its own suite (timeline_test.cc).
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "query/assert.h"
#include "query/events.h"
#include "query/runs.h"
#include "store/store.h"
#include "store/test_util.h"

namespace understudy {
namespace query {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Session "golden" (two versions) and "unused"; run r1 (golden@1, ended,
// 30 events: kinds cycle exchange, tool_call, tool_result; agents a and b
// alternate), r2 (golden@2, active, 3 events), solo (no session).
class QueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.path = dir_.File("understudy.db");
    absl::StatusOr<std::unique_ptr<store::Store>> opened = store::Store::Open(options);
    ASSERT_THAT(opened, IsOk());
    store_ = *std::move(opened);
    ASSERT_THAT(store_->CreateSessionVersion("golden"), IsOk());
    ASSERT_THAT(store_->CreateSessionVersion("golden"), IsOk());
    ASSERT_THAT(store_->CreateSessionVersion("unused"), IsOk());
    AddRun("r1", "golden", 1, 100, v1::RUN_STATE_ENDED, 30);
    AddRun("r2", "golden", 2, 200, v1::RUN_STATE_ACTIVE, 3);
    AddRun("solo", "", 0, 300, v1::RUN_STATE_ACTIVE, 1);
    ASSERT_THAT(store_->Flush(), IsOk());
  }

  void AddRun(const std::string& id, const std::string& session, int64_t version, int64_t started,
              v1::RunState state, int events) {
    v1::Run run;
    run.set_id(id);
    run.set_session(session);
    run.set_session_version(version);
    run.set_mode(v1::RUN_MODE_REPLAY);
    run.set_state(state);
    run.set_started_at_micros(started);
    ASSERT_THAT(store_->SaveRun(run), IsOk());
    std::vector<v1::TraceEvent> trace;
    static const char* const kKinds[] = {"exchange", "tool_call", "tool_result"};
    for (int i = 1; i <= events; ++i) {
      v1::TraceEvent& e = trace.emplace_back();
      e.set_run(id);
      e.set_seq(i);
      e.set_kind(kKinds[(i - 1) % 3]);
      e.set_agent(i % 2 == 1 ? "a" : "b");
      (*e.mutable_attributes())["gen_ai.agent.name"] = e.agent();
      if (e.kind() == "tool_call") (*e.mutable_attributes())["gen_ai.tool.name"] = "search";
    }
    store_->AppendEvents(std::move(trace));
  }

  Source source() { return Source{store_.get(), nullptr}; }

  static std::vector<int64_t> Seqs(const v1::QueryResponse& response) {
    std::vector<int64_t> seqs;
    EXPECT_THAT(ForEachQueriedEvent(response,
                                    [&](v1::TraceEvent& e) {
                                      seqs.push_back(e.seq());
                                      return absl::OkStatus();
                                    }),
                IsOk());
    return seqs;
  }

  store::ScopedTempDir dir_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(QueryTest, KindsGoToTheStoreAndComeBackUnparsed) {
  v1::QueryRequest request;
  request.set_run("r1");
  request.add_kinds("tool_call");
  request.set_limit(4);
  absl::StatusOr<v1::QueryResponse> page = Query(source(), request);
  ASSERT_THAT(page, IsOk());
  // Stored bytes, not parsed events: ForEachQueriedEvent reads them.
  EXPECT_EQ(page->events_size(), 0);
  EXPECT_THAT(Seqs(*page), ElementsAre(2, 5, 8, 11));
  EXPECT_EQ(page->next_after_seq(), 11);
  EXPECT_EQ(page->next_page_token(), "r1/11");
}

TEST_F(QueryTest, AgentFilterParsesAndMatches) {
  v1::QueryRequest request;
  request.set_run("r1");
  request.set_agent("b");
  request.add_kinds("exchange");
  absl::StatusOr<v1::QueryResponse> page = Query(source(), request);
  ASSERT_THAT(page, IsOk());
  EXPECT_THAT(Seqs(*page), ElementsAre(4, 10, 16, 22, 28));
  EXPECT_TRUE(page->next_page_token().empty());
  EXPECT_EQ(page->next_after_seq(), 0);
}

TEST_F(QueryTest, PagesCoverTheRunOnceInOrder) {
  for (const bool parsed : {false, true}) {
    v1::QueryRequest request;
    request.set_run("r1");
    request.set_limit(7);
    if (parsed) request.mutable_filter()->set_agent("a");
    std::vector<int64_t> all;
    int pages = 0;
    while (true) {
      absl::StatusOr<v1::QueryResponse> page = Query(source(), request);
      ASSERT_THAT(page, IsOk());
      ++pages;
      for (int64_t seq : Seqs(*page)) all.push_back(seq);
      if (page->next_page_token().empty()) break;
      request.set_page_token(page->next_page_token());
    }
    std::vector<int64_t> expected;
    for (int64_t seq = 1; seq <= 30; ++seq) {
      if (!parsed || seq % 2 == 1) expected.push_back(seq);
    }
    EXPECT_EQ(all, expected) << (parsed ? "parsed" : "raw");
    EXPECT_EQ(pages, parsed ? 3 : 5) << (parsed ? "parsed" : "raw");
  }
}

TEST_F(QueryTest, SessionQueriesSpanItsRunsWithCursorsAcrossThem) {
  v1::QueryRequest request;
  request.set_session("golden");
  request.add_kinds("exchange");
  request.set_limit(10);
  absl::StatusOr<v1::QueryResponse> first = Query(source(), request);
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(first->next_page_token(), "r1/28");
  // A session's page carries no next_after_seq: it spans runs.
  EXPECT_EQ(first->next_after_seq(), 0);
  request.set_page_token(first->next_page_token());
  absl::StatusOr<v1::QueryResponse> second = Query(source(), request);
  ASSERT_THAT(second, IsOk());
  std::vector<std::string> runs;
  ASSERT_THAT(ForEachQueriedEvent(*second,
                                  [&](v1::TraceEvent& e) {
                                    runs.push_back(absl::StrCat(e.run(), "/", e.seq()));
                                    return absl::OkStatus();
                                  }),
              IsOk());
  EXPECT_THAT(runs, ElementsAre("r2/1"));
  EXPECT_TRUE(second->next_page_token().empty());
}

TEST_F(QueryTest, BadRequestsNameTheField) {
  v1::QueryRequest request;
  request.set_run("r1");
  request.set_limit(10001);
  EXPECT_THAT(Query(source(), request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("limit")));
  request.set_limit(0);
  request.set_page_token("elsewhere/3");
  EXPECT_THAT(Query(source(), request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("page_token")));
  request.clear_page_token();
  request.set_session("golden");
  EXPECT_THAT(Query(source(), request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("give exactly one")));
  v1::QueryRequest twice;
  twice.set_run("r1");
  twice.add_kinds("exchange");
  twice.mutable_filter()->add_kinds("miss");
  EXPECT_THAT(Query(source(), twice),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("give the kinds once")));
}

TEST_F(QueryTest, UnknownRunsAndSessionsAreNotFound) {
  v1::QueryRequest request;
  request.set_run("nope");
  EXPECT_THAT(Query(source(), request), StatusIs(absl::StatusCode::kNotFound));
  v1::QueryRequest session;
  session.set_session("missing");
  EXPECT_THAT(Query(source(), session),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("unknown session \"missing\"")));
  // A known session no run used has no events.
  session.set_session("unused");
  absl::StatusOr<v1::QueryResponse> none = Query(source(), session);
  ASSERT_THAT(none, IsOk());
  EXPECT_THAT(Seqs(*none), IsEmpty());
}

TEST_F(QueryTest, QueryEachStopsWhenAsked) {
  v1::QueryRequest request;
  request.set_session("golden");
  std::vector<int64_t> seen;
  ASSERT_THAT(QueryEach(source(), request,
                        [&](v1::TraceEvent& e) {
                          seen.push_back(e.seq());
                          return seen.size() < 3;
                        }),
              IsOk());
  EXPECT_THAT(seen, ElementsAre(1, 2, 3));
}

TEST_F(QueryTest, ReadRunEventsReadsEveryPage) {
  absl::StatusOr<std::vector<v1::TraceEvent>> events = ReadRunEvents(*store_, "r1");
  ASSERT_THAT(events, IsOk());
  ASSERT_EQ(events->size(), 30u);
  EXPECT_EQ(events->back().seq(), 30);
  std::vector<size_t> sizes;
  store::EventQuery small;
  small.run = "r1";
  small.limit = 8;
  ASSERT_THAT(ForEachPage(*store_, small,
                          [&](std::vector<v1::TraceEvent>& page, bool) {
                            sizes.push_back(page.size());
                            return true;
                          }),
              IsOk());
  EXPECT_THAT(sizes, ElementsAre(8, 8, 8, 6));
}

TEST_F(QueryTest, ForEachMatchingHonoursBoundsAndFilter) {
  v1::EventFilter f;
  f.add_kinds("tool_result");
  f.set_max_seq(20);
  absl::StatusOr<trace::EventFilter> filter = trace::EventFilter::Create(f, "filter");
  ASSERT_THAT(filter, IsOk());
  std::vector<int64_t> seqs;
  ASSERT_THAT(ForEachMatching(*store_, "r1", 3, 18, *filter,
                              [&](v1::TraceEvent& e) {
                                seqs.push_back(e.seq());
                                return true;
                              }),
              IsOk());
  EXPECT_THAT(seqs, ElementsAre(6, 9, 12, 15));
}

TEST_F(QueryTest, RunLookup) {
  EXPECT_THAT(GetRun(source(), ""), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(GetRun(source(), "nope"), StatusIs(absl::StatusCode::kNotFound));
  absl::StatusOr<v1::Run> r1 = GetRun(source(), "r1");
  ASSERT_THAT(r1, IsOk());
  EXPECT_EQ(r1->session(), "golden");

  absl::StatusOr<v1::Run> latest = ResolveRunRef(*store_, "golden");
  ASSERT_THAT(latest, IsOk());
  EXPECT_EQ(latest->id(), "r2");
  absl::StatusOr<v1::Run> v1run = ResolveRunRef(*store_, "golden@1");
  ASSERT_THAT(v1run, IsOk());
  EXPECT_EQ(v1run->id(), "r1");
  EXPECT_THAT(ResolveRunRef(*store_, ""), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ResolveRunRef(*store_, "nothing"),
              StatusIs(absl::StatusCode::kNotFound, "no run or session \"nothing\""));
  EXPECT_THAT(ResolveRunRef(*store_, "unused"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("has no runs")));
  EXPECT_THAT(RunsOfSession(*store_, "missing", 0), StatusIs(absl::StatusCode::kNotFound));
  absl::StatusOr<std::vector<v1::Run>> none = RunsOfSession(*store_, "unused", 0);
  ASSERT_THAT(none, IsOk());
  EXPECT_THAT(*none, IsEmpty());
}

TEST_F(QueryTest, SessionLookup) {
  absl::StatusOr<v1::ListSessionsResponse> listed = ListSessions(*store_, "gold");
  ASSERT_THAT(listed, IsOk());
  EXPECT_EQ(listed->sessions_size(), 2);
  absl::StatusOr<v1::GetSessionResponse> got = GetSession(*store_, "golden", 1, true);
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(got->session().version(), 1);
  EXPECT_THAT(GetSession(*store_, "golden", 9, false), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(QueryTest, DescribeRunSaysWhereItStands) {
  EXPECT_EQ(DescribeRun(source(), "r2"),
            "run \"r2\" is active with 3 events; the last is #3 tool_result a");
}

google::protobuf::RepeatedPtrField<v1::Assertion> CountOf(const std::string& kind, int64_t n) {
  google::protobuf::RepeatedPtrField<v1::Assertion> assertions;
  v1::Assertion* a = assertions.Add();
  a->mutable_count()->mutable_filter()->add_kinds(kind);
  a->mutable_count()->set_comparison(v1::COMPARISON_EQ);
  a->mutable_count()->set_n(n);
  return assertions;
}

TEST_F(QueryTest, AssertReadsOnlyWhatTheChecksNeed) {
  absl::StatusOr<v1::AssertResponse> pass = AssertRun(source(), "r1", CountOf("tool_call", 10));
  ASSERT_THAT(pass, IsOk());
  EXPECT_TRUE(pass->passed());
  absl::StatusOr<v1::AssertResponse> fail = AssertRun(source(), "r1", CountOf("exchange", 3));
  ASSERT_THAT(fail, IsOk());
  EXPECT_FALSE(fail->passed());
  ASSERT_EQ(fail->results_size(), 1);
  EXPECT_FALSE(fail->results(0).explanation().empty());
}

TEST_F(QueryTest, AssertErrors) {
  EXPECT_THAT(AssertRun(source(), "", CountOf("exchange", 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, "run: required"));
  EXPECT_THAT(AssertRun(source(), "r1", {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least one")));
  EXPECT_THAT(AssertRun(source(), "nope", CountOf("exchange", 1)),
              StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace query
}  // namespace understudy
