// The trace tables: compact events that refer to recorded exchanges read
// back as the events they stand for; filters; deleting a referenced session
// version; migrating a version-2 store.
#include "store/trace_table.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "store/schema.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store/test_util.h"
#include "store/trace_codec.h"
#include "trace/vocabulary.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::Exchange RecordedExchange() {
  v1::Exchange exchange;
  exchange.set_agent("planner");
  v1::CompletionRequest& request = *exchange.mutable_request();
  request.set_model("gpt-test");
  v1::Message* m = request.add_messages();
  m->set_role("user");
  m->set_content("plan the trip");
  v1::CompletionResponse& response = *exchange.mutable_response();
  response.set_id("resp-1");
  response.set_model("gpt-test-2024");
  response.set_finish_reason("tool_calls");
  response.mutable_usage()->set_input_tokens(12);
  response.mutable_usage()->set_output_tokens(34);
  response.mutable_message()->set_role("assistant");
  for (int i = 0; i < 2; ++i) {
    v1::ToolCall* call = response.mutable_message()->add_tool_calls();
    call->set_id(absl::StrCat("call-", i));
    call->set_name(i == 0 ? "search" : "book");
    call->set_arguments(absl::StrCat("{\"q\":", i, "}"));
  }
  return exchange;
}

// The event today's inline path builds for a replayed answer of `ex`.
v1::TraceEvent InlineExchangeEvent(const std::string& run, int64_t seq, const v1::Exchange& ex) {
  v1::TraceEvent event;
  event.set_run(run);
  event.set_seq(seq);
  event.set_kind("exchange");
  event.set_agent(ex.agent());
  event.set_time_micros(1000 + seq);
  auto& attrs = *event.mutable_attributes();
  AddRequestAttributes(ex.request(), &attrs);
  attrs["gen_ai.agent.name"] = ex.agent();
  attrs["understudy.answer.source"] = "recording";
  attrs["understudy.streamed"] = "false";
  AddAnswerAttributes(&ex.response(), "", ex.seq(), &attrs);
  *event.mutable_request() = ex.request();
  *event.mutable_response() = ex.response();
  return event;
}

TraceRecord CompactExchangeRecord(const std::string& run, int64_t seq, int64_t session_id,
                                  const v1::Exchange& ex) {
  TraceRecord record;
  record.event.set_run(run);
  record.event.set_seq(seq);
  record.event.set_kind("exchange");
  record.event.set_agent(ex.agent());
  record.event.set_time_micros(1000 + seq);
  record.ref.session_id = session_id;
  record.ref.seq = ex.seq();
  record.ref.derive = kDeriveAgentName | kDeriveRequest | kDeriveResponse |
                      kDeriveRequestAttributes | kDeriveAnswerAttributes |
                      kDeriveSourceRecording | kDeriveNotStreamed;
  return record;
}

TraceRecord CompactToolCallRecord(const std::string& run, int64_t seq, int64_t session_id,
                                  const v1::Exchange& ex, uint32_t index) {
  TraceRecord record;
  record.event.set_run(run);
  record.event.set_seq(seq);
  record.event.set_kind("tool_call");
  record.event.set_agent(ex.agent());
  record.event.set_time_micros(1000 + seq);
  record.ref.session_id = session_id;
  record.ref.seq = ex.seq();
  record.ref.derive = kDeriveAgentName | kDeriveToolCall | index << kToolIndexShift;
  record.tool = ex.response().message().tool_calls(static_cast<int>(index)).name();
  return record;
}

v1::TraceEvent InlineToolCallEvent(const std::string& run, int64_t seq, const v1::Exchange& ex,
                                   int index) {
  v1::TraceEvent event;
  event.set_run(run);
  event.set_seq(seq);
  event.set_kind("tool_call");
  event.set_agent(ex.agent());
  event.set_time_micros(1000 + seq);
  (*event.mutable_attributes())["gen_ai.agent.name"] = ex.agent();
  AddToolCallAttributes(ex.response().message().tool_calls(index), event.mutable_attributes());
  return event;
}

class TraceTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options;
    options.path = dir_.File("t.db");
    auto opened = Store::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = *std::move(opened);
    auto appended = store_->AppendToOpenSessionAndWait("golden", {RecordedExchange()});
    ASSERT_TRUE(appended.ok()) << appended.status();
    auto exchanges = store_->LoadExchanges("golden", 1);
    ASSERT_TRUE(exchanges.ok());
    exchange_ = (*exchanges)[0];
    auto row = store_->SessionRowId("golden", 1);
    ASSERT_TRUE(row.ok()) << row.status();
    session_row_ = *row;
  }

  std::vector<v1::TraceEvent> Query(EventQuery query) {
    query.limit = 10000;
    auto page = store_->QueryEvents(query);
    EXPECT_TRUE(page.ok()) << page.status();
    return page.ok() ? page->events : std::vector<v1::TraceEvent>{};
  }

  // Appends to run "r": a compact exchange event and its two tool calls,
  // then an inline custom event, `times` over.
  void AppendReplays(int times) {
    std::vector<TraceRecord> records;
    int64_t seq = 0;
    for (int i = 0; i < times; ++i) {
      records.push_back(CompactExchangeRecord("r", ++seq, session_row_, exchange_));
      records.push_back(CompactToolCallRecord("r", ++seq, session_row_, exchange_, 0));
      records.push_back(CompactToolCallRecord("r", ++seq, session_row_, exchange_, 1));
      v1::TraceEvent custom;
      custom.set_run("r");
      custom.set_seq(++seq);
      custom.set_kind("custom.note");
      custom.set_time_micros(1000 + seq);
      (*custom.mutable_attributes())["note"] = absl::StrCat("n", i);
      records.push_back(InlineRecord(std::move(custom)));
    }
    store_->AppendRecords(std::move(records));
    ASSERT_THAT(store_->Flush(), IsOk());
  }

  ScopedTempDir dir_;
  std::unique_ptr<Store> store_;
  v1::Exchange exchange_;
  int64_t session_row_ = 0;
};

TEST_F(TraceTableTest, CompactEventsReadBackAsTheInlineEvents) {
  AppendReplays(2);
  EventQuery query;
  query.run = "r";
  std::vector<v1::TraceEvent> events = Query(query);
  ASSERT_EQ(events.size(), 8u);
  EXPECT_TRUE(MessageDifferencer::Equals(events[0], InlineExchangeEvent("r", 1, exchange_)))
      << events[0].DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals(events[1], InlineToolCallEvent("r", 2, exchange_, 0)))
      << events[1].DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals(events[2], InlineToolCallEvent("r", 3, exchange_, 1)))
      << events[2].DebugString();
  EXPECT_EQ(events[3].kind(), "custom.note");
  EXPECT_EQ(events[3].attributes().at("note"), "n0");
  EXPECT_EQ(events[7].attributes().at("note"), "n1");
}

TEST_F(TraceTableTest, ExpandInMemoryAgreesWithTheStoredBytes) {
  TraceRecord record = CompactExchangeRecord("r", 1, session_row_, exchange_);
  v1::TraceEvent expanded;
  ASSERT_TRUE(Expand(record, &exchange_, &expanded));
  EXPECT_TRUE(MessageDifferencer::Equals(expanded, InlineExchangeEvent("r", 1, exchange_)));
  // A record that needs its exchange and has none is refused, as is a tool
  // call the answer does not have.
  EXPECT_FALSE(Expand(record, nullptr, &expanded));
  TraceRecord beyond = CompactToolCallRecord("r", 2, session_row_, exchange_, 1);
  beyond.ref.derive = kDeriveToolCall | 5u << kToolIndexShift;
  EXPECT_FALSE(Expand(beyond, &exchange_, &expanded));
}

TEST_F(TraceTableTest, StoredBytesAgreeWithTheInMemoryExpansion) {
  ExchangeParts parts;
  MakeExchangeParts(exchange_, &parts);
  std::vector<TraceRecord> records = {
      CompactExchangeRecord("r", 1, session_row_, exchange_),
      CompactToolCallRecord("r", 2, session_row_, exchange_, 0),
      CompactToolCallRecord("r", 3, session_row_, exchange_, 1)};
  records.push_back(CompactExchangeRecord("r", 4, session_row_, exchange_));
  records.back().ref.derive = kDeriveStreamed | kDeriveRepeat | kDeriveResponse |
                              kDeriveAnswerAttributes;
  (*records.back().event.mutable_attributes())["understudy.rule"] = "r1";
  *records.back().event.mutable_request() = exchange_.request();
  for (const TraceRecord& record : records) {
    v1::TraceEvent in_memory;
    ASSERT_TRUE(Expand(record, &exchange_, &in_memory));
    v1::TraceEvent compact = record.event;
    compact.clear_run();
    compact.clear_seq();
    compact.clear_kind();
    compact.clear_agent();
    std::string bytes;
    ASSERT_TRUE(ExpandedBytes(compact.SerializeAsString(), "r", record.event.seq(),
                              record.event.kind(), record.event.agent(), record.ref.derive,
                              record.ref.seq, &parts, &bytes));
    v1::TraceEvent from_bytes;
    ASSERT_TRUE(from_bytes.ParseFromString(bytes));
    EXPECT_TRUE(MessageDifferencer::Equals(from_bytes, in_memory))
        << from_bytes.DebugString() << "\nvs\n" << in_memory.DebugString();
  }
  // The wrong exchange for the row is refused, not misread.
  std::string bytes;
  EXPECT_FALSE(ExpandedBytes("", "r", 1, "exchange", "planner", kDeriveResponse, 7, &parts,
                             &bytes));
}

TEST_F(TraceTableTest, FiltersByKindAgentToolAndSeq) {
  AppendReplays(3);
  auto seqs = [](const std::vector<v1::TraceEvent>& events) {
    std::vector<int64_t> out;
    for (const v1::TraceEvent& e : events) out.push_back(e.seq());
    return out;
  };
  EventQuery q;
  q.run = "r";
  q.kinds = {"tool_call"};
  EXPECT_THAT(seqs(Query(q)), ElementsAre(2, 3, 6, 7, 10, 11));
  q.tool = "book";
  EXPECT_THAT(seqs(Query(q)), ElementsAre(3, 7, 11));
  q.kinds = {"custom.note", "exchange"};  // merged in seq order
  q.tool = "";
  EXPECT_THAT(seqs(Query(q)), ElementsAre(1, 4, 5, 8, 9, 12));
  q.kinds = {};
  q.agent = "planner";
  q.after_seq = 4;
  EXPECT_THAT(seqs(Query(q)), ElementsAre(5, 6, 7, 9, 10, 11));
  q.agent = "nobody";
  EXPECT_TRUE(Query(q).empty());
  q.agent = "";
  q.kinds = {"no_such_kind"};
  EXPECT_TRUE(Query(q).empty());
  EventQuery other;
  other.run = "unknown-run";
  EXPECT_TRUE(Query(other).empty());
  EXPECT_THAT(store_->CountEvents("r"), IsOkAndHolds(12));
}

TEST_F(TraceTableTest, PagesDoNotSkipOrRepeat) {
  AppendReplays(5);
  EventQuery q;
  q.run = "r";
  q.kinds = {"tool_call", "custom.note"};
  q.limit = 4;
  std::vector<int64_t> seen;
  for (int pages = 0; pages < 10; ++pages) {
    auto page = store_->QueryEvents(q);
    ASSERT_TRUE(page.ok());
    for (const v1::TraceEvent& e : page->events) seen.push_back(e.seq());
    if (page->next_after_seq == 0) break;
    q.after_seq = page->next_after_seq;
  }
  EXPECT_EQ(seen.size(), 15u);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_LT(seen[i - 1], seen[i]);
}

TEST_F(TraceTableTest, RunContextReadsBackAsTheAttributesItWas) {
  // The engine's context attributes go to integer columns when they read
  // back byte for byte; anything else stays in the body. Either way the
  // reader gets the attributes the writer gave.
  struct Case {
    std::map<std::string, std::string> context;
  };
  const std::vector<Case> cases = {
      {{{trace::attr::kIteration, "12"}, {trace::attr::kAgentIteration, "3"},
        {trace::attr::kPreviousAgent, "reviewer"}}},
      {{{trace::attr::kIteration, "1"}, {trace::attr::kAgentIteration, "1"}}},
      {{{trace::attr::kIteration, "007"}, {trace::attr::kAgentIteration, "+4"},
        {trace::attr::kPreviousAgent, ""}}},
      {{{trace::attr::kIteration, "-9223372036854775808"}, {trace::attr::kAgentIteration, " 5"},
        {trace::attr::kPreviousAgent, "\xc3\xa9t\xc3\xa9"}}},
      {{{trace::attr::kAgentIteration, "99999999999999999999"}}},
  };
  std::vector<TraceRecord> records;
  std::vector<v1::TraceEvent> expected;
  int64_t seq = 0;
  for (const Case& c : cases) {
    TraceRecord record = CompactExchangeRecord("r", ++seq, session_row_, exchange_);
    v1::TraceEvent want = InlineExchangeEvent("r", seq, exchange_);
    for (const auto& [key, value] : c.context) {
      (*record.event.mutable_attributes())[key] = value;
      (*want.mutable_attributes())[key] = value;
    }
    records.push_back(std::move(record));
    expected.push_back(std::move(want));
    v1::TraceEvent execution;
    execution.set_run("r");
    execution.set_seq(++seq);
    execution.set_kind("agent_execution");
    for (const auto& [key, value] : c.context) (*execution.mutable_attributes())[key] = value;
    expected.push_back(execution);
    records.push_back(InlineRecord(std::move(execution)));
  }
  store_->AppendRecords(std::move(records));
  ASSERT_THAT(store_->Flush(), IsOk());
  EventQuery query;
  query.run = "r";
  std::vector<v1::TraceEvent> events = Query(query);
  ASSERT_EQ(events.size(), expected.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(events[i], expected[i]))
        << "event " << i << ":\n" << events[i].DebugString() << "want:\n" << expected[i].DebugString();
  }
  // The first case's context is in columns, not in the body.
  auto db = sql::Database::Open(dir_.File("t.db"), sql::DatabaseOptions());
  ASSERT_TRUE(db.ok()) << db.status();
  auto s = (*db)->Prepare(
      "SELECT iter, agent_iter, length(body) < 40 FROM trace_events ORDER BY key LIMIT 1");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_THAT(s->Step(), IsOkAndHolds(true));
  EXPECT_EQ(s->ColumnInt64(0), 12);
  EXPECT_EQ(s->ColumnInt64(1), 3);
  EXPECT_EQ(s->ColumnInt64(2), 1);
}

TEST_F(TraceTableTest, HeaderOnlyScansGiveNoBodyToEventsWithAnAgent) {
  AppendReplays(1);
  EventQuery q;
  q.run = "r";
  std::vector<std::string> seen;
  ASSERT_THAT(store_->ScanEvents(q, Store::Bodies::kWhenNoAgent,
                                 [&](const StoredEvent& e) {
                                   seen.push_back(absl::StrCat(e.seq, ":", e.kind, ":", e.agent,
                                                               ":", e.body.empty() ? "-" : "body"));
                                   return true;
                                 }),
              IsOk());
  EXPECT_THAT(seen, ElementsAre("1:exchange:planner:-", "2:tool_call:planner:-",
                                "3:tool_call:planner:-", "4:custom.note::body"));
}

TEST_F(TraceTableTest, DeletingTheSessionKeepsTheEventsWhole) {
  AppendReplays(1);
  EventQuery q;
  q.run = "r";
  const std::vector<v1::TraceEvent> before = Query(q);
  ASSERT_EQ(before.size(), 4u);
  ASSERT_THAT(store_->DeleteSession("golden", 0), IsOkAndHolds(1));
  const std::vector<v1::TraceEvent> after = Query(q);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(before[i], after[i])) << after[i].DebugString();
  }
}

TEST_F(TraceTableTest, DeletingARunRemovesItsEventsOnly) {
  AppendReplays(1);
  std::vector<TraceRecord> other;
  other.push_back(CompactExchangeRecord("s", 1, session_row_, exchange_));
  store_->AppendRecords(std::move(other));
  ASSERT_THAT(store_->Flush(), IsOk());
  v1::Run run;
  run.set_id("r");
  ASSERT_THAT(store_->SaveRun(run), IsOk());
  ASSERT_THAT(store_->DeleteRuns({"r", "never"}), IsOkAndHolds(1));
  EXPECT_THAT(store_->CountEvents("r"), IsOkAndHolds(0));
  EXPECT_THAT(store_->CountEvents("s"), IsOkAndHolds(1));
  // A new run's events never land in the deleted run's number.
  AppendReplays(1);
  EXPECT_THAT(store_->CountEvents("r"), IsOkAndHolds(4));
  EXPECT_THAT(store_->CountEvents("s"), IsOkAndHolds(1));
}

TEST_F(TraceTableTest, RejectsSeqsOutsideTheKeyRange) {
  std::vector<v1::TraceEvent> events(1);
  events[0].set_run("r");
  events[0].set_seq(int64_t{1} << 32);
  events[0].set_kind("custom.x");
  store_->AppendEvents(std::move(events));
  absl::Status flushed = store_->Flush();
  EXPECT_EQ(flushed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(flushed.message(), HasSubstr("2^32"));
}

// A store written by schema version 2 (events with their run as text, whole
// bodies) opens, migrates, and reads back the same events.
TEST(TraceTableMigrationTest, VersionTwoEventsMoveOver) {
  ScopedTempDir dir;
  const std::string path = dir.File("old.db");
  {
    sql::DatabaseOptions options;
    auto db = sql::Database::Open(path, options);
    ASSERT_TRUE(db.ok()) << db.status();
    std::vector<Migration> two(Migrations().begin(), Migrations().begin() + 2);
    ASSERT_THAT(Migrate(**db, two), IsOk());
    auto insert = (*db)->Prepare("INSERT INTO events (run, seq, kind, agent, body) "
                                 "VALUES (?1, ?2, ?3, ?4, ?5)");
    ASSERT_TRUE(insert.ok());
    for (int i = 1; i <= 3; ++i) {
      v1::TraceEvent event;
      event.set_run(i == 3 ? "b" : "a");
      event.set_seq(i);
      event.set_kind(i == 2 ? "tool_call" : "exchange");
      event.set_agent("coder");
      (*event.mutable_attributes())["gen_ai.tool.name"] = "grep";
      ASSERT_THAT(insert->Reset(), IsOk());
      ASSERT_THAT(insert->BindText(1, event.run()), IsOk());
      ASSERT_THAT(insert->BindInt64(2, event.seq()), IsOk());
      ASSERT_THAT(insert->BindText(3, event.kind()), IsOk());
      ASSERT_THAT(insert->BindText(4, event.agent()), IsOk());
      ASSERT_THAT(insert->BindBlob(5, event.SerializeAsString()), IsOk());
      ASSERT_THAT(insert->Run(), IsOk());
    }
  }
  StoreOptions options;
  options.path = path;
  auto store = Store::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  EventQuery q;
  q.run = "a";
  q.kinds = {"tool_call"};
  q.tool = "grep";  // old rows have no tool column: found all the same
  auto page = (*store)->QueryEvents(q);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->events.size(), 1u);
  EXPECT_EQ(page->events[0].seq(), 2);
  EXPECT_EQ(page->events[0].agent(), "coder");
  EXPECT_THAT((*store)->CountEvents("a"), IsOkAndHolds(2));
  EXPECT_THAT((*store)->CountEvents("b"), IsOkAndHolds(1));
}

}  // namespace
}  // namespace store
}  // namespace understudy
