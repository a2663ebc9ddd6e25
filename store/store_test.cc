#include "store/store.h"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "base/env.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/schema.h"
#include "store/sqlite.h"
#include "store/test_util.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

v1::Exchange MakeExchange(const std::string& agent, const std::string& content) {
  v1::Exchange exchange;
  exchange.set_agent(agent);
  exchange.mutable_request()->set_model("gpt-test");
  v1::Message* message = exchange.mutable_request()->add_messages();
  message->set_role("user");
  message->set_content(content);
  exchange.mutable_response()->mutable_message()->set_role("assistant");
  exchange.mutable_response()->mutable_message()->set_content("re: " + content);
  return exchange;
}

v1::TraceEvent MakeEvent(const std::string& run, int64_t seq, const std::string& kind,
                         const std::string& agent) {
  v1::TraceEvent event;
  event.set_run(run);
  event.set_seq(seq);
  event.set_kind(kind);
  event.set_agent(agent);
  event.set_time_micros(1000 * seq);
  (*event.mutable_attributes())["gen_ai.agent.name"] = agent;
  return event;
}

// Builds an EventQuery for `run`, one filter at a time.
class Q {
 public:
  explicit Q(std::string run) { query_.run = std::move(run); }
  Q& Kinds(std::vector<std::string> kinds) {
    query_.kinds = std::move(kinds);
    return *this;
  }
  Q& Agent(std::string agent) {
    query_.agent = std::move(agent);
    return *this;
  }
  Q& After(int64_t after_seq) {
    query_.after_seq = after_seq;
    return *this;
  }
  Q& Limit(int limit) {
    query_.limit = limit;
    return *this;
  }
  operator EventQuery() const { return query_; }  // NOLINT: a builder.

 private:
  EventQuery query_;
};

std::vector<int64_t> Seqs(const std::vector<v1::TraceEvent>& events) {
  std::vector<int64_t> seqs;
  for (const v1::TraceEvent& event : events) seqs.push_back(event.seq());
  return seqs;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  StoreOptions Options() {
    StoreOptions options;
    options.path = dir_.File("understudy.db");
    options.clock = &clock_;
    options.reader_connections = 2;
    return options;
  }

  void Reopen() {
    store_.reset();
    auto store = Store::Open(Options());
    ASSERT_THAT(store, IsOk());
    store_ = std::move(store).value();
  }

  // Creates `name` and appends exchanges from these agents.
  v1::Session Record(const std::string& name, const std::vector<std::string>& agents) {
    auto session = store_->CreateSessionVersion(name);
    EXPECT_THAT(session, IsOk());
    std::vector<v1::Exchange> exchanges;
    for (size_t i = 0; i < agents.size(); ++i) {
      exchanges.push_back(MakeExchange(agents[i], absl::StrCat("message ", i + 1)));
    }
    EXPECT_THAT(store_->AppendExchangesAndWait(name, session->version(), exchanges), IsOk());
    return *session;
  }

  ScopedTempDir dir_;
  FakeEnv clock_;
  std::unique_ptr<Store> store_;
};

// --- Sessions ------------------------------------------------------------------

TEST_F(StoreTest, CreateSessionVersionIncreasesTheVersion) {
  auto first = store_->CreateSessionVersion("golden");
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(first->name(), "golden");
  EXPECT_EQ(first->version(), 1);
  EXPECT_EQ(first->state(), v1::SESSION_STATE_OPEN);
  EXPECT_EQ(first->exchange_count(), 0);
  EXPECT_EQ(first->created_at_micros(), clock_.NowMicros());

  clock_.Advance(absl::Seconds(1));
  auto second = store_->CreateSessionVersion("golden");
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(second->version(), 2);
  EXPECT_EQ(second->created_at_micros(), first->created_at_micros() + 1000000);

  auto other = store_->CreateSessionVersion("other");
  ASSERT_THAT(other, IsOk());
  EXPECT_EQ(other->version(), 1);
}

TEST_F(StoreTest, CreateSessionVersionRejectsInvalidNames) {
  const std::string too_long(257, 'a');
  for (const std::string& name :
       {std::string(), too_long, std::string("a\nb"), std::string("tab\there"),
        std::string("nul\0x", 5), std::string("del\x7F"), std::string("c1\xC2\x85"),
        std::string("golden@2"), std::string("bad\xFFutf8"), std::string("\xC0\xAF")}) {
    EXPECT_THAT(store_->CreateSessionVersion(name),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("session name")))
        << testing::PrintToString(name);
  }
  EXPECT_THAT(store_->CreateSessionVersion(std::string(256, 'a')), IsOk());
  EXPECT_THAT(store_->CreateSessionVersion("team/planner caf\xC3\xA9 \xF0\x9F\x8E\xAD"), IsOk());
  EXPECT_THAT(store_->ListSessions(""), IsOkAndHolds(testing::SizeIs(2)));
}

TEST_F(StoreTest, AppendAssignsConsecutiveSeqsAcrossCalls) {
  auto session = store_->CreateSessionVersion("golden");
  ASSERT_THAT(session, IsOk());
  v1::Exchange stale = MakeExchange("planner", "one");
  stale.set_seq(99);  // Overwritten.
  auto first = store_->AppendExchangesAndWait("golden", 1, {stale, MakeExchange("a", "two")});
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(first->version, 1);
  EXPECT_EQ(first->first_seq, 1);
  EXPECT_EQ(first->last_seq, 2);
  auto second = store_->AppendExchangesAndWait(
      "golden", 1, {MakeExchange("b", "3"), MakeExchange("c", "4"), MakeExchange("d", "5")});
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(second->first_seq, 3);
  EXPECT_EQ(second->last_seq, 5);

  auto exchanges = store_->LoadExchanges("golden", 1);
  ASSERT_THAT(exchanges, IsOk());
  ASSERT_EQ(exchanges->size(), 5u);
  for (size_t i = 0; i < exchanges->size(); ++i) {
    EXPECT_EQ((*exchanges)[i].seq(), static_cast<int64_t>(i) + 1);
  }
  EXPECT_EQ((*exchanges)[0].request().messages(0).content(), "one");
  EXPECT_EQ((*exchanges)[4].agent(), "d");
  EXPECT_THAT(store_->GetSession("golden", 1),
              IsOkAndHolds(testing::Property(&v1::Session::exchange_count, 5)));
}

TEST_F(StoreTest, AppendToVersionZeroAppendsToTheLatest) {
  ASSERT_THAT(store_->CreateSessionVersion("golden"), IsOk());
  ASSERT_THAT(store_->CreateSessionVersion("golden"), IsOk());
  auto result = store_->AppendExchangesAndWait("golden", 0, {MakeExchange("a", "x")});
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->version, 2);
  EXPECT_EQ(result->first_seq, 1);
}

TEST_F(StoreTest, EmptyAppendCommitsNothingAndReportsNoSeqs) {
  ASSERT_THAT(store_->CreateSessionVersion("golden"), IsOk());
  auto result = store_->AppendExchangesAndWait("golden", 1, {});
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->version, 1);
  EXPECT_EQ(result->first_seq, 0);
  EXPECT_EQ(result->last_seq, 0);
}

TEST_F(StoreTest, AppendToClosedSessionFailsWithFailedPrecondition) {
  Record("golden", {"a"});
  ASSERT_THAT(store_->CloseSession("golden", 1), IsOk());
  EXPECT_THAT(store_->AppendExchangesAndWait("golden", 1, {MakeExchange("a", "late")}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("golden@1"), HasSubstr("closed"))));
  EXPECT_THAT(store_->LoadExchanges("golden", 1), IsOkAndHolds(testing::SizeIs(1)));
}

TEST_F(StoreTest, AppendToUnknownSessionFailsWithNotFound) {
  EXPECT_THAT(store_->AppendExchangesAndWait("nope", 3, {MakeExchange("a", "x")}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"nope@3\"")));
  ASSERT_THAT(store_->CreateSessionVersion("golden"), IsOk());
  EXPECT_THAT(store_->AppendExchangesAndWait("golden", 2, {MakeExchange("a", "x")}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"golden@2\"")));
}

TEST_F(StoreTest, AsyncAppendCallbackRunsOnceAfterTheCommit) {
  ASSERT_THAT(store_->CreateSessionVersion("golden"), IsOk());
  absl::Notification done;
  absl::StatusOr<AppendResult> result;
  int calls = 0;
  store_->AppendExchanges("golden", 1, {MakeExchange("a", "x"), MakeExchange("a", "y")},
                          [&](absl::StatusOr<AppendResult> r) {
                            ++calls;
                            result = std::move(r);
                            done.Notify();
                          });
  done.WaitForNotification();
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->last_seq, 2);
  // Committed: visible to a reader connection once the callback has run.
  EXPECT_THAT(store_->LoadExchanges("golden", 1), IsOkAndHolds(testing::SizeIs(2)));
  ASSERT_THAT(store_->Flush(), IsOk());
  EXPECT_EQ(calls, 1);
}

TEST_F(StoreTest, AsyncAppendReportsErrorsToTheCallback) {
  absl::Notification done;
  absl::StatusOr<AppendResult> result;
  store_->AppendExchanges("missing", 1, {MakeExchange("a", "x")},
                          [&](absl::StatusOr<AppendResult> r) {
                            result = std::move(r);
                            done.Notify();
                          });
  done.WaitForNotification();
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(StoreTest, ConcurrentAppendsGetDisjointConsecutiveSeqs) {
  ASSERT_THAT(store_->CreateSessionVersion("golden"), IsOk());
  constexpr int kThreads = 6;
  constexpr int kCalls = 20;
  absl::Mutex mu;
  std::vector<AppendResult> results;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        auto r = store_->AppendExchangesAndWait(
            "golden", 1,
            {MakeExchange(absl::StrCat("agent", t), "x"), MakeExchange("shared", "y")});
        ASSERT_THAT(r, IsOk());
        absl::MutexLock lock(&mu);
        results.push_back(*r);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::set<int64_t> firsts;
  for (const AppendResult& r : results) {
    EXPECT_EQ(r.last_seq, r.first_seq + 1);
    EXPECT_EQ(r.first_seq % 2, 1);
    firsts.insert(r.first_seq);
  }
  EXPECT_EQ(firsts.size(), static_cast<size_t>(kThreads * kCalls));
  auto session = store_->GetSession("golden", 1);
  ASSERT_THAT(session, IsOk());
  EXPECT_EQ(session->exchange_count(), 2 * kThreads * kCalls);
  EXPECT_EQ(session->agents_size(), kThreads + 1);
}

TEST_F(StoreTest, SessionAgentsAreDistinctInOrderOfFirstAppearance) {
  Record("golden", {"reviewer", "planner", "", "reviewer", "executor", "planner"});
  auto session = store_->GetSession("golden", 1);
  ASSERT_THAT(session, IsOk());
  EXPECT_EQ(session->exchange_count(), 6);
  EXPECT_THAT(session->agents(), ElementsAre("reviewer", "planner", "executor"));
}

TEST_F(StoreTest, GetSessionVersionZeroIsTheLatestWhateverItsState) {
  Record("golden", {"a"});
  Record("golden", {"b", "c"});
  ASSERT_THAT(store_->CloseSession("golden", 2), IsOk());
  auto latest = store_->GetSession("golden", 0);
  ASSERT_THAT(latest, IsOk());
  EXPECT_EQ(latest->version(), 2);
  EXPECT_EQ(latest->state(), v1::SESSION_STATE_CLOSED);
  EXPECT_EQ(latest->exchange_count(), 2);
  auto first = store_->GetSession("golden", 1);
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(first->state(), v1::SESSION_STATE_OPEN);
}

TEST_F(StoreTest, UnknownSessionIsNotFoundNamingIt) {
  EXPECT_THAT(store_->GetSession("nope", 0),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("session \"nope\" not found")));
  Record("golden", {"a"});
  EXPECT_THAT(store_->GetSession("golden", 7),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"golden@7\"")));
  EXPECT_THAT(store_->LoadExchanges("golden", 7), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(store_->ExportSession("golden", 7), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(store_->CloseSession("golden", 7), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(StoreTest, OpenSessionForAppendReusesTheLatestOpenVersion) {
  auto created = store_->OpenSessionForAppend("golden");
  ASSERT_THAT(created, IsOk());
  EXPECT_EQ(created->version(), 1);
  ASSERT_THAT(store_->AppendExchangesAndWait("golden", 1, {MakeExchange("a", "x")}), IsOk());

  auto again = store_->OpenSessionForAppend("golden");
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->version(), 1);
  EXPECT_EQ(again->exchange_count(), 1);
  EXPECT_THAT(again->agents(), ElementsAre("a"));

  ASSERT_THAT(store_->CloseSession("golden", 1), IsOk());
  auto fresh = store_->OpenSessionForAppend("golden");
  ASSERT_THAT(fresh, IsOk());
  EXPECT_EQ(fresh->version(), 2);
  EXPECT_EQ(fresh->state(), v1::SESSION_STATE_OPEN);
  EXPECT_THAT(store_->OpenSessionForAppend("bad@name"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(StoreTest, AppendToOpenSessionCreatesOrReusesTheOpenVersionInOneCommit) {
  auto first = store_->AppendToOpenSessionAndWait(
      "golden", {MakeExchange("a", "one"), MakeExchange("b", "two")});
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(first->version, 1);
  EXPECT_EQ(first->first_seq, 1);
  EXPECT_EQ(first->last_seq, 2);
  auto second = store_->AppendToOpenSessionAndWait("golden", {MakeExchange("a", "three")});
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(second->version, 1);
  EXPECT_EQ(second->first_seq, 3);
  EXPECT_EQ(second->last_seq, 3);
  auto loaded = store_->LoadExchanges("golden", 1);
  ASSERT_THAT(loaded, IsOk());
  ASSERT_EQ(loaded->size(), 3u);
  EXPECT_EQ((*loaded)[2].seq(), 3);
  EXPECT_EQ((*loaded)[2].agent(), "a");

  // A closed version is never appended to: the next call opens version 2.
  ASSERT_THAT(store_->CloseSession("golden", 1), IsOk());
  auto fresh = store_->AppendToOpenSessionAndWait("golden", {MakeExchange("c", "four")});
  ASSERT_THAT(fresh, IsOk());
  EXPECT_EQ(fresh->version, 2);
  EXPECT_EQ(fresh->first_seq, 1);
  EXPECT_THAT(store_->AppendToOpenSessionAndWait("bad@name", {MakeExchange("a", "x")}),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(StoreTest, CloseSessionIsIdempotent) {
  Record("golden", {"a"});
  ASSERT_THAT(store_->CloseSession("golden", 1), IsOk());
  ASSERT_THAT(store_->CloseSession("golden", 1), IsOk());
  EXPECT_THAT(store_->GetSession("golden", 1),
              IsOkAndHolds(testing::Property(&v1::Session::state, v1::SESSION_STATE_CLOSED)));
}

TEST_F(StoreTest, DeleteOneVersionRemovesItAndItsExchanges) {
  Record("golden", {"a", "b"});
  Record("golden", {"c"});
  EXPECT_THAT(store_->DeleteSession("golden", 1), IsOkAndHolds(1));
  EXPECT_THAT(store_->GetSession("golden", 1), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(store_->GetSession("golden", 2), IsOk());
  EXPECT_THAT(store_->DeleteSession("golden", 1), StatusIs(absl::StatusCode::kNotFound));

  // The exchanges went with it (ON DELETE CASCADE).
  auto db = sql::Database::Open(Options().path, sql::DatabaseOptions());
  ASSERT_THAT(db, IsOk());
  auto count = (*db)->Prepare("SELECT count(*) FROM exchanges");
  ASSERT_THAT(count, IsOk());
  ASSERT_THAT(count->Step(), IsOkAndHolds(true));
  EXPECT_EQ(count->ColumnInt64(0), 1);
}

TEST_F(StoreTest, DeleteVersionZeroRemovesEveryVersion) {
  Record("golden", {"a"});
  Record("golden", {"b"});
  Record("golden", {"c"});
  Record("golden-two", {"d"});
  EXPECT_THAT(store_->DeleteSession("golden", 0), IsOkAndHolds(3));
  EXPECT_THAT(store_->GetSession("golden", 0), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(store_->GetSession("golden-two", 0), IsOk());
  EXPECT_THAT(store_->DeleteSession("golden", 0),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"golden\"")));
}

TEST_F(StoreTest, ListSessionsOrdersByNameThenVersionAndFiltersByPrefix) {
  Record("b", {"x"});
  Record("a_1", {"x"});
  Record("a", {"x"});
  Record("b", {"y"});
  Record("a%2", {"x"});
  Record("ab", {"x"});
  auto all = store_->ListSessions("");
  ASSERT_THAT(all, IsOk());
  std::vector<std::string> labels;
  for (const v1::Session& s : *all) labels.push_back(absl::StrCat(s.name(), "@", s.version()));
  EXPECT_THAT(labels, ElementsAre("a@1", "a%2@1", "a_1@1", "ab@1", "b@1", "b@2"));
  EXPECT_THAT((*all)[5].agents(), ElementsAre("y"));

  // '%' and '_' are plain characters, not LIKE wildcards.
  auto underscore = store_->ListSessions("a_");
  ASSERT_THAT(underscore, IsOk());
  ASSERT_EQ(underscore->size(), 1u);
  EXPECT_EQ((*underscore)[0].name(), "a_1");
  EXPECT_THAT(store_->ListSessions("a"), IsOkAndHolds(testing::SizeIs(4)));
  EXPECT_THAT(store_->ListSessions("zzz"), IsOkAndHolds(IsEmpty()));
}

TEST_F(StoreTest, SessionsSurviveReopening) {
  Record("golden", {"a", "b"});
  Reopen();
  auto session = store_->GetSession("golden", 1);
  ASSERT_THAT(session, IsOk());
  EXPECT_EQ(session->exchange_count(), 2);
  EXPECT_THAT(store_->LoadExchanges("golden", 1), IsOkAndHolds(testing::SizeIs(2)));
}

// --- Export / import -------------------------------------------------------------

TEST_F(StoreTest, ExportImportExportIsByteIdentical) {
  Record("golden", {"planner", "executor", "planner"});
  auto exported = store_->ExportSession("golden", 0);
  ASSERT_THAT(exported, IsOk());
  ASSERT_THAT(store_->DeleteSession("golden", 0), IsOk());

  clock_.Advance(absl::Hours(1));  // The import keeps the header's time.
  auto imported = store_->ImportSession(*exported, "");
  ASSERT_THAT(imported, IsOk());
  EXPECT_EQ(imported->name(), "golden");
  EXPECT_EQ(imported->version(), 1);
  EXPECT_EQ(imported->state(), v1::SESSION_STATE_CLOSED);
  EXPECT_EQ(imported->exchange_count(), 3);
  EXPECT_THAT(imported->agents(), ElementsAre("planner", "executor"));
  EXPECT_THAT(store_->ExportSession("golden", 1), IsOkAndHolds(*exported));
}

TEST_F(StoreTest, ImportMakesANewClosedVersion) {
  Record("golden", {"a"});
  auto exported = store_->ExportSession("golden", 1);
  ASSERT_THAT(exported, IsOk());
  auto imported = store_->ImportSession(*exported, "");
  ASSERT_THAT(imported, IsOk());
  EXPECT_EQ(imported->version(), 2);
  EXPECT_EQ(imported->state(), v1::SESSION_STATE_CLOSED);
  EXPECT_THAT(store_->AppendExchangesAndWait("golden", 2, {MakeExchange("a", "x")}),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(StoreTest, ImportUnderAnotherName) {
  Record("golden", {"a", "b"});
  auto exported = store_->ExportSession("golden", 1);
  ASSERT_THAT(exported, IsOk());
  auto imported = store_->ImportSession(*exported, "copy");
  ASSERT_THAT(imported, IsOk());
  EXPECT_EQ(imported->name(), "copy");
  EXPECT_EQ(imported->version(), 1);
  EXPECT_THAT(store_->LoadExchanges("copy", 1), IsOkAndHolds(testing::SizeIs(2)));
  EXPECT_THAT(store_->ImportSession(*exported, "bad@name"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name override")));
}

TEST_F(StoreTest, FailedImportStoresNothing) {
  Record("golden", {"a", "b", "c"});
  auto exported = store_->ExportSession("golden", 1);
  ASSERT_THAT(exported, IsOk());
  // Corrupt the last line: the first exchanges are fine, yet none is stored.
  std::string broken = exported->substr(0, exported->size() - 10) + "\n";
  EXPECT_THAT(store_->ImportSession(broken, "imported"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 4: invalid JSON")));
  EXPECT_THAT(store_->GetSession("imported", 0), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(store_->ImportSession("", ""), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(store_->ListSessions(""), IsOkAndHolds(testing::SizeIs(1)));
}

TEST_F(StoreTest, ImportWithAnInvalidHeaderNameFails) {
  const std::string jsonl =
      R"({"header":{"format":"understudy.session/v1","name":"a@b","exchange_count":"0"}})"
      "\n";
  EXPECT_THAT(store_->ImportSession(jsonl, ""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1: header name")));
  EXPECT_THAT(store_->ImportSession(jsonl, "fine"), IsOk());
}

// --- Runs --------------------------------------------------------------------

TEST_F(StoreTest, SaveRunThenGetRunAndReplaceIt) {
  v1::Run run;
  run.set_id("run-1");
  run.set_session("golden");
  run.set_session_version(2);
  run.set_mode(v1::RUN_MODE_REPLAY);
  run.set_state(v1::RUN_STATE_ACTIVE);
  ASSERT_THAT(store_->SaveRun(run), IsOk());
  auto got = store_->GetRun("run-1");
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(got->SerializeAsString(), run.SerializeAsString());

  run.set_served(5);
  ASSERT_THAT(store_->SaveRun(run), IsOk());
  EXPECT_THAT(store_->GetRun("run-1"), IsOkAndHolds(testing::Property(&v1::Run::served, 5)));
  EXPECT_THAT(store_->GetRun("run-2"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("run \"run-2\"")));
  EXPECT_THAT(store_->SaveRun(v1::Run()), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(StoreTest, RunSummaryIsNotFoundUntilSaved) {
  v1::Run run;
  run.set_id("run-1");
  run.set_state(v1::RUN_STATE_ACTIVE);
  ASSERT_THAT(store_->SaveRun(run), IsOk());
  EXPECT_THAT(store_->GetRunSummary("run-1"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("has not ended")));
  EXPECT_THAT(store_->GetRunSummary("nope"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("not found")));

  v1::RunSummary summary;
  run.set_state(v1::RUN_STATE_ENDED);
  run.set_misses(1);
  *summary.mutable_run() = run;
  summary.add_misses()->set_text("messages[2].content: recorded \"a\" got \"b\"");
  summary.add_unconsumed()->set_seq(4);
  ASSERT_THAT(store_->SaveRunSummary(summary), IsOk());

  auto got = store_->GetRunSummary("run-1");
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(got->SerializeAsString(), summary.SerializeAsString());
  // The run record follows the summary's.
  EXPECT_THAT(store_->GetRun("run-1"),
              IsOkAndHolds(testing::Property(&v1::Run::state, v1::RUN_STATE_ENDED)));
  // Saving the run again keeps its summary.
  ASSERT_THAT(store_->SaveRun(run), IsOk());
  EXPECT_THAT(store_->GetRunSummary("run-1"), IsOk());
}

// --- Trace -------------------------------------------------------------------

class StoreTraceTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    // run-1: 1 run_started, 2 exchange(planner), 3 exchange(executor),
    // 4 miss(executor), 5 exchange(planner), 6 run_ended. run-2: one event.
    store_->AppendEvents({MakeEvent("run-1", 1, "run_started", ""),
                          MakeEvent("run-1", 2, "exchange", "planner"),
                          MakeEvent("run-1", 3, "exchange", "executor")});
    store_->AppendEvents({MakeEvent("run-2", 1, "exchange", "planner")});
    store_->AppendEvents({MakeEvent("run-1", 4, "miss", "executor"),
                          MakeEvent("run-1", 5, "exchange", "planner"),
                          MakeEvent("run-1", 6, "run_ended", "")});
    ASSERT_THAT(store_->Flush(), IsOk());
  }

  EventPage Query(EventQuery query) {
    auto page = store_->QueryEvents(query);
    EXPECT_THAT(page, IsOk());
    return page.ok() ? *page : EventPage();
  }
};

TEST_F(StoreTraceTest, FlushedEventsComeBackInSeqOrderWithTheirBodies) {
  EventPage page = Query(Q("run-1"));
  EXPECT_THAT(Seqs(page.events), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_EQ(page.next_after_seq, 0);
  EXPECT_EQ(page.events[1].attributes().at("gen_ai.agent.name"), "planner");
  EXPECT_EQ(page.events[1].time_micros(), 2000);
  EXPECT_THAT(Seqs(Query(Q("run-2")).events), ElementsAre(1));
  EXPECT_THAT(Query(Q("run-3")).events, IsEmpty());
}

TEST_F(StoreTraceTest, ScanEventsGivesEveryMatchingRowInOrderAndStopsWhenAsked) {
  std::vector<int64_t> seqs;
  std::vector<std::string> agents, kinds;
  EventQuery query = Q("run-1").Kinds({"exchange", "miss"});
  query.limit = 1;  // ignored: a scan reads them all
  ASSERT_THAT(store_->ScanEvents(query, Store::Bodies::kAll,
                                 [&](const StoredEvent& row) {
                                   v1::TraceEvent e;
                                   EXPECT_TRUE(e.ParseFromArray(row.body.data(),
                                                                static_cast<int>(row.body.size())));
                                   EXPECT_EQ(e.seq(), row.seq);
                                   EXPECT_EQ(e.kind(), row.kind);
                                   EXPECT_EQ(e.agent(), row.agent);
                                   seqs.push_back(row.seq);
                                   agents.emplace_back(row.agent);
                                   kinds.emplace_back(row.kind);
                                   return true;
                                 }),
              IsOk());
  EXPECT_THAT(seqs, ElementsAre(2, 3, 4, 5));
  EXPECT_THAT(agents, ElementsAre("planner", "executor", "executor", "planner"));
  EXPECT_THAT(kinds, ElementsAre("exchange", "exchange", "miss", "exchange"));
  int calls = 0;
  ASSERT_THAT(store_->ScanEvents(Q("run-1"), Store::Bodies::kAll,
                                 [&](const StoredEvent&) { return ++calls < 2; }),
              IsOk());
  EXPECT_EQ(calls, 2);
  EXPECT_THAT(store_->ScanEvents(Q(""), Store::Bodies::kAll, [](const StoredEvent&) { return true; }),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(StoreTraceTest, ScanEventsWithoutBodiesKeepsThemOnlyForEventsWithoutAnAgent) {
  std::vector<std::string> seen;
  ASSERT_THAT(store_->ScanEvents(Q("run-1"), Store::Bodies::kWhenNoAgent,
                                 [&](const StoredEvent& row) {
                                   if (row.agent.empty()) {
                                     v1::TraceEvent e;
                                     EXPECT_TRUE(e.ParseFromArray(
                                         row.body.data(), static_cast<int>(row.body.size())));
                                     EXPECT_EQ(e.seq(), row.seq);
                                   } else {
                                     EXPECT_THAT(row.body, IsEmpty());
                                   }
                                   seen.push_back(absl::StrCat(row.seq, ":", row.kind, ":",
                                                               row.agent, row.body.empty() ? "" : "+"));
                                   return true;
                                 }),
              IsOk());
  EXPECT_THAT(seen, ElementsAre("1:run_started:+", "2:exchange:planner", "3:exchange:executor",
                                "4:miss:executor", "5:exchange:planner", "6:run_ended:+"));
  seen.clear();
  ASSERT_THAT(store_->ScanEvents(Q("run-1").Kinds({"exchange"}), Store::Bodies::kWhenNoAgent,
                                 [&](const StoredEvent& row) {
                                   seen.push_back(absl::StrCat(row.seq, ":", row.agent));
                                   return true;
                                 }),
              IsOk());
  EXPECT_THAT(seen, ElementsAre("2:planner", "3:executor", "5:planner"));

  // Several scans run in order, each by its own range.
  seen.clear();
  std::vector<Store::EventScan> scans(2);
  scans[0].query = Q("run-1").Kinds({"miss"});
  scans[1].query = Q("run-1").Kinds({"exchange"});
  scans[1].bodies = Store::Bodies::kWhenNoAgent;
  ASSERT_THAT(store_->ScanEvents(scans,
                                 [&](const StoredEvent& row) {
                                   seen.push_back(absl::StrCat(row.seq, row.body.empty() ? "" : "+"));
                                   return true;
                                 }),
              IsOk());
  EXPECT_THAT(seen, ElementsAre("4+", "2", "3", "5"));
  scans[1].query.run = "";
  EXPECT_THAT(store_->ScanEvents(scans, [](const StoredEvent&) { return true; }),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(StoreTraceTest, QueryFiltersByKind) {
  EXPECT_THAT(Seqs(Query(Q("run-1").Kinds({"exchange"})).events), ElementsAre(2, 3, 5));
  EXPECT_THAT(Seqs(Query(Q("run-1").Kinds({"miss", "run_ended"})).events), ElementsAre(4, 6));
  EXPECT_THAT(Query(Q("run-1").Kinds({"tool_call"})).events, IsEmpty());
}

TEST_F(StoreTraceTest, QueryFiltersByAgentAndKindTogether) {
  EXPECT_THAT(Seqs(Query(Q("run-1").Agent("executor")).events), ElementsAre(3, 4));
  EXPECT_THAT(Seqs(Query(Q("run-1").Kinds({"exchange"}).Agent("planner")).events),
              ElementsAre(2, 5));
}

TEST_F(StoreTraceTest, QueryPagesWithAfterSeqAndLimit) {
  EventPage first = Query(Q("run-1").Limit(4));
  EXPECT_THAT(Seqs(first.events), ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(first.next_after_seq, 4);
  EventPage second = Query(Q("run-1").After(first.next_after_seq).Limit(4));
  EXPECT_THAT(Seqs(second.events), ElementsAre(5, 6));
  EXPECT_EQ(second.next_after_seq, 0);

  // A page that ends exactly at the last event says there is no more.
  EventPage exact = Query(Q("run-1").After(3).Limit(3));
  EXPECT_THAT(Seqs(exact.events), ElementsAre(4, 5, 6));
  EXPECT_EQ(exact.next_after_seq, 0);

  EventPage filtered = Query(Q("run-1").Kinds({"exchange"}).Limit(2));
  EXPECT_THAT(Seqs(filtered.events), ElementsAre(2, 3));
  EXPECT_EQ(filtered.next_after_seq, 3);
  EXPECT_THAT(Seqs(Query(Q("run-1").Kinds({"exchange"}).After(3).Limit(2)).events), ElementsAre(5));
}

TEST_F(StoreTraceTest, NonPositiveLimitMeansTheDefault) {
  EXPECT_THAT(Seqs(Query(Q("run-1").Limit(0)).events), testing::SizeIs(6));
  EXPECT_THAT(Seqs(Query(Q("run-1").Limit(-5)).events), testing::SizeIs(6));
  EXPECT_THAT(store_->QueryEvents(Q("")), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(StoreTraceTest, DuplicateEventIsReportedByFlushAndDoesNotLoseItsNeighbours) {
  store_->AppendEvents({MakeEvent("run-1", 7, "custom", ""), MakeEvent("run-1", 2, "custom", "dup"),
                        MakeEvent("run-1", 8, "custom", "")});
  EXPECT_THAT(store_->Flush(),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       AllOf(HasSubstr("run \"run-1\", seq 2"), HasSubstr("UNIQUE"))));
  EXPECT_THAT(store_->Flush(), IsOk());  // Reported once.
  EXPECT_THAT(Seqs(Query(Q("run-1").After(6)).events), ElementsAre(7, 8));
  EXPECT_EQ(Query(Q("run-1").Agent("planner")).events.size(), 2u);
}

TEST_F(StoreTraceTest, AnEventWithInvalidUtf8IsReadBackRepairedNotDataLoss) {
  // What a store written before entry points checked UTF-8 can hold.
  v1::TraceEvent bad = MakeEvent("run-1", 7, "custom", "planner");
  (*bad.mutable_attributes())["note"] = "caf\xE9";
  store_->AppendEvents({bad, MakeEvent("run-1", 8, "custom", "")});
  ASSERT_THAT(store_->Flush(), IsOk());
  EventPage page = Query(Q("run-1").After(6));
  EXPECT_THAT(Seqs(page.events), ElementsAre(7, 8));
  ASSERT_EQ(page.events.size(), 2u);
  EXPECT_EQ(page.events[0].attributes().at("note"), "caf\xEF\xBF\xBD");
}

TEST_F(StoreTraceTest, EventsWithoutRunOrSeqAreRejectedAtFlush) {
  store_->AppendEvents({MakeEvent("", 1, "custom", "")});
  EXPECT_THAT(store_->Flush(), StatusIs(absl::StatusCode::kInvalidArgument));
  store_->AppendEvents({MakeEvent("run-9", 0, "custom", "")});
  EXPECT_THAT(store_->Flush(), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(StoreMigrationTest, AVersion1TraceIsReadableThroughTheKindIndex) {
  ScopedTempDir dir;
  StoreOptions options;
  options.path = dir.File("understudy.db");
  {
    // A store as version 1 left it, with one event.
    auto db = sql::Database::Open(options.path, sql::DatabaseOptions());
    ASSERT_THAT(db, IsOk());
    ASSERT_THAT(Migrate(**db, {Migrations()[0]}), IsOk());
    auto insert = (*db)->Prepare("INSERT INTO events (run, seq, kind, agent, body) VALUES "
                                 "('run-1', 1, 'exchange', 'planner', ?)");
    ASSERT_THAT(insert, IsOk());
    ASSERT_THAT(insert->BindBlob(1, MakeEvent("run-1", 1, "exchange", "planner").SerializeAsString()),
                IsOk());
    ASSERT_THAT(insert->Run(), IsOk());
  }
  auto store = Store::Open(options);
  ASSERT_THAT(store, IsOk());
  std::vector<std::string> seen;
  ASSERT_THAT((*store)->ScanEvents(Q("run-1").Kinds({"exchange"}), Store::Bodies::kWhenNoAgent,
                                   [&](const StoredEvent& row) {
                                     seen.push_back(absl::StrCat(row.seq, ":", row.agent, ":",
                                                                 row.body.size()));
                                     return true;
                                   }),
              IsOk());
  EXPECT_THAT(seen, ElementsAre("1:planner:0"));
  auto db = sql::Database::Open(options.path, sql::DatabaseOptions());
  ASSERT_THAT(db, IsOk());
  EXPECT_THAT(SchemaVersion(**db), IsOkAndHolds(CurrentSchemaVersion()));
  // The kind index carries the agent and the tool, so a header scan needs
  // no table row.
  auto columns =
      (*db)->Prepare("SELECT group_concat(name) FROM pragma_index_info('trace_events_by_kind')");
  ASSERT_THAT(columns, IsOk());
  ASSERT_THAT(columns->Step(), IsOkAndHolds(true));
  EXPECT_EQ(columns->ColumnText(0), "kind,key,agent,tool");
}

// --- Snapshots (StoreOptions::snapshot_of) -----------------------------------

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::set<std::string> FilesIn(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

class StoreSnapshotTest : public StoreTest {
 protected:
  // A recording with a session and an ended run, closed: a committed golden.db.
  void SetUp() override {
    StoreTest::SetUp();
    Record("golden", {"planner", "coder"});
    v1::Run run;
    run.set_id("recorded-run");
    run.set_state(v1::RUN_STATE_ENDED);
    ASSERT_THAT(store_->SaveRun(run), IsOk());
    store_->AppendEvents({MakeEvent("recorded-run", 1, "exchange", "planner")});
    ASSERT_THAT(store_->Flush(), IsOk());
    store_.reset();
    golden_ = Options().path;
  }

  StoreOptions SnapshotOptions(const std::string& name) {
    StoreOptions options = Options();
    options.path = dir_.File(name);
    options.snapshot_of = golden_;
    return options;
  }

  std::string golden_;
};

TEST_F(StoreSnapshotTest, ReadsTheRecordingAndWritesOnlyTheCopy) {
  const std::string before = FileBytes(golden_);
  {
    auto copy = Store::Open(SnapshotOptions("replay.db"));
    ASSERT_THAT(copy, IsOk());
    // Everything the recording holds...
    EXPECT_THAT((*copy)->LoadExchanges("golden", 0), IsOkAndHolds(testing::SizeIs(2)));
    EXPECT_THAT((*copy)->GetRun("recorded-run"), IsOk());
    // ...and whatever the replay writes, there only.
    v1::Run run;
    run.set_id("replay-run");
    run.set_state(v1::RUN_STATE_ACTIVE);
    ASSERT_THAT((*copy)->SaveRun(run), IsOk());
    (*copy)->AppendEvents({MakeEvent("replay-run", 1, "exchange", "planner")});
    ASSERT_THAT((*copy)->Flush(), IsOk());
    ASSERT_THAT((*copy)->CreateSessionVersion("golden"), IsOk());
    EXPECT_THAT((*copy)->CountEvents("replay-run"), IsOkAndHolds(1));
  }
  EXPECT_EQ(FileBytes(golden_), before) << "the recording's bytes changed";
  EXPECT_EQ(FilesIn(dir_.path()), (std::set<std::string>{"understudy.db", "replay.db"}));
  auto golden = Store::Open(Options());
  ASSERT_THAT(golden, IsOk());
  EXPECT_THAT((*golden)->GetRun("replay-run"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT((*golden)->GetSession("golden", 0),
              IsOkAndHolds(testing::Property(&v1::Session::version, 1)));
}

TEST_F(StoreSnapshotTest, CopiesWhatAnotherProcessCommittedWhileItStillWrites) {
  // The recording is open in a writer that has committed more (into its
  // -wal file, not yet checkpointed).
  Reopen();
  Record("later", {"reviewer"});
  const std::set<std::string> files = FilesIn(dir_.path());
  ASSERT_TRUE(files.count("understudy.db-wal")) << "the writer's WAL should hold the commit";
  auto copy = Store::Open(SnapshotOptions("replay.db"));
  ASSERT_THAT(copy, IsOk());
  EXPECT_THAT((*copy)->LoadExchanges("later", 0), IsOkAndHolds(testing::SizeIs(1)));
  EXPECT_THAT(store_->GetSession("later", 0), IsOk()) << "the writer goes on";
}

TEST_F(StoreSnapshotTest, AnOlderRecordingIsMigratedInTheCopyOnly) {
  const std::string old_path = dir_.File("old.db");
  {
    auto db = sql::Database::Open(old_path, sql::DatabaseOptions());
    ASSERT_THAT(db, IsOk());
    ASSERT_THAT(Migrate(**db, {Migrations()[0]}), IsOk());
  }
  const std::string before = FileBytes(old_path);
  StoreOptions options = SnapshotOptions("replay.db");
  options.snapshot_of = old_path;
  ASSERT_THAT(Store::Open(options), IsOk());
  EXPECT_EQ(FileBytes(old_path), before);
  auto old_db = sql::Database::Open(old_path, sql::DatabaseOptions());
  ASSERT_THAT(old_db, IsOk());
  EXPECT_THAT(SchemaVersion(**old_db), IsOkAndHolds(1));
}

TEST_F(StoreSnapshotTest, ReplacesAnEarlierCopy) {
  {
    auto copy = Store::Open(SnapshotOptions("replay.db"));
    ASSERT_THAT(copy, IsOk());
    v1::Run run;
    run.set_id("first-replay");
    ASSERT_THAT((*copy)->SaveRun(run), IsOk());
  }
  auto again = Store::Open(SnapshotOptions("replay.db"));
  ASSERT_THAT(again, IsOk());
  EXPECT_THAT((*again)->GetRun("first-replay"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT((*again)->GetRun("recorded-run"), IsOk());
}

TEST_F(StoreSnapshotTest, RefusesToReplaceAFileThatIsNotAStore) {
  const std::string path = dir_.File("notes.db");
  {
    auto db = sql::Database::Open(path, sql::DatabaseOptions());
    ASSERT_THAT(db, IsOk());
    ASSERT_THAT((*db)->Execute("CREATE TABLE notes (text TEXT)"), IsOk());
  }
  const std::string before = FileBytes(path);
  EXPECT_THAT(Store::Open(SnapshotOptions("notes.db")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(path), HasSubstr("it is not replaced"))));
  EXPECT_EQ(FileBytes(path), before);
}

TEST_F(StoreSnapshotTest, RefusesTheRecordingItselfAndAMissingOne) {
  const std::string before = FileBytes(golden_);
  StoreOptions same = Options();
  same.snapshot_of = golden_;
  EXPECT_THAT(Store::Open(same), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("is the database it is a snapshot of")));
  EXPECT_EQ(FileBytes(golden_), before);
  StoreOptions missing = SnapshotOptions("replay.db");
  missing.snapshot_of = dir_.File("nope.db");
  EXPECT_THAT(Store::Open(missing),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("nope.db")));
  EXPECT_FALSE(std::filesystem::exists(dir_.File("nope.db")));
}

TEST(StoreBackPressureTest, TinyEventQueueLosesNothing) {
  ScopedTempDir dir;
  StoreOptions options;
  options.path = dir.File("understudy.db");
  options.max_pending_events = 3;
  auto store = Store::Open(options);
  ASSERT_THAT(store, IsOk());
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::string run = absl::StrCat("run-", t);
      for (int seq = 1; seq <= kPerThread; seq += 2) {
        (*store)->AppendEvents(
            {MakeEvent(run, seq, "exchange", "a"), MakeEvent(run, seq + 1, "exchange", "b")});
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_THAT((*store)->Flush(), IsOk());
  for (int t = 0; t < kThreads; ++t) {
    auto page = (*store)->QueryEvents(Q(absl::StrCat("run-", t)).Limit(1000));
    ASSERT_THAT(page, IsOk());
    ASSERT_EQ(page->events.size(), static_cast<size_t>(kPerThread));
    for (int i = 0; i < kPerThread; ++i) EXPECT_EQ(page->events[i].seq(), i + 1);
  }
}

TEST(StoreBackPressureTest, DestroyingTheStoreCommitsQueuedEvents) {
  ScopedTempDir dir;
  StoreOptions options;
  options.path = dir.File("understudy.db");
  {
    auto store = Store::Open(options);
    ASSERT_THAT(store, IsOk());
    for (int seq = 1; seq <= 200; ++seq) {
      (*store)->AppendEvents({MakeEvent("run", seq, "exchange", "")});
    }
  }  // No Flush.
  auto store = Store::Open(options);
  ASSERT_THAT(store, IsOk());
  auto page = (*store)->QueryEvents(Q("run"));
  ASSERT_THAT(page, IsOk());
  EXPECT_EQ(page->events.size(), 200u);
}

// --- Opening -----------------------------------------------------------------

TEST(StoreOpenTest, NewerSchemaFailsWithFailedPrecondition) {
  ScopedTempDir dir;
  StoreOptions options;
  options.path = dir.File("understudy.db");
  {
    auto db = sql::Database::Open(options.path, sql::DatabaseOptions());
    ASSERT_THAT(db, IsOk());
    ASSERT_THAT((*db)->Execute("PRAGMA user_version=1000"), IsOk());
  }
  EXPECT_THAT(Store::Open(options),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("schema version 1000")));
}

TEST(StoreOpenTest, NonSqliteFileFailsWithInvalidArgument) {
  ScopedTempDir dir;
  StoreOptions options;
  options.path = dir.File("understudy.db");
  {
    std::ofstream out(options.path);
    out << "{\"header\": \"this is a JSONL file, not a database\"}\n";
    for (int i = 0; i < 50; ++i) out << "{\"exchange\": {}}\n";
  }
  EXPECT_THAT(Store::Open(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("file is not a database")));
}

TEST(StoreOpenTest, UnopenablePathFailsWithUnavailable) {
  ScopedTempDir dir;
  StoreOptions options;
  options.path = dir.File("missing-dir/understudy.db");
  EXPECT_THAT(Store::Open(options), StatusIs(absl::StatusCode::kUnavailable));
}

TEST(StoreOpenTest, InvalidOptionsFailWithInvalidArgument) {
  ScopedTempDir dir;
  StoreOptions options;
  options.path = dir.File("understudy.db");
  options.reader_connections = 0;
  EXPECT_THAT(Store::Open(options), StatusIs(absl::StatusCode::kInvalidArgument));
  options.reader_connections = 1;
  options.path = ":memory:";
  EXPECT_THAT(Store::Open(options), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(StoreOpenTest, ReadersShareAFewConnections) {
  ScopedTempDir dir;
  StoreOptions options;
  options.path = dir.File("understudy.db");
  options.reader_connections = 1;
  auto store = Store::Open(options);
  ASSERT_THAT(store, IsOk());
  ASSERT_THAT((*store)->CreateSessionVersion("golden"), IsOk());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if ((*store)->GetSession("golden", 0).ok()) ++ok;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), 200);
}

// --- Durability --------------------------------------------------------------

// The child process appends, reports the acknowledgement through a pipe and
// waits to be killed; what it acknowledged must be in the file afterwards.
TEST(StoreDurabilityTest, AcknowledgedAppendSurvivesKill9) {
  ScopedTempDir dir;
  StoreOptions options;
  options.path = dir.File("understudy.db");
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fds[0]);
    auto store = Store::Open(options);
    if (!store.ok()) _exit(2);
    if (!(*store)->CreateSessionVersion("golden").ok()) _exit(3);
    std::vector<v1::Exchange> exchanges;
    for (int i = 0; i < 10; ++i) exchanges.push_back(MakeExchange("a", absl::StrCat(i)));
    if (!(*store)->AppendExchangesAndWait("golden", 1, exchanges).ok()) _exit(4);
    char acked = 'y';
    if (write(pipe_fds[1], &acked, 1) != 1) _exit(5);
    // Keep writing (unacknowledged) until killed.
    for (;;)
      (*store)->AppendExchangesAndWait("golden", 1, {MakeExchange("b", "more")}).IgnoreError();
  }
  close(pipe_fds[1]);
  char acked = 0;
  ASSERT_EQ(read(pipe_fds[0], &acked, 1), 1);
  close(pipe_fds[0]);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));

  auto store = Store::Open(options);
  ASSERT_THAT(store, IsOk());
  auto exchanges = (*store)->LoadExchanges("golden", 1);
  ASSERT_THAT(exchanges, IsOk());
  ASSERT_GE(exchanges->size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ((*exchanges)[i].request().messages(0).content(), absl::StrCat(i));
  }
  auto session = (*store)->GetSession("golden", 1);
  ASSERT_THAT(session, IsOk());
  EXPECT_EQ(session->exchange_count(), static_cast<int64_t>(exchanges->size()));
}

}  // namespace
}  // namespace store
}  // namespace understudy
