#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "store/sqlite.h"
#include "store/test_util.h"

namespace understudy {
namespace engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

// A scripted upstream: answers each request with the text "<agent>:<n>"
// (n counts this agent's calls), or with the next queued error.
class FakeUpstream final : public upstream::ModelUpstream {
 public:
  void Complete(const upstream::UpstreamCall& call, const v1::CompletionRequest& request,
                std::function<void(absl::StatusOr<v1::CompletionResponse>)> done) override {
    absl::Status error = NextError();
    if (!error.ok()) return done(error);
    done(Answer(call, request));
  }

  void StreamComplete(const upstream::UpstreamCall& call, const v1::CompletionRequest& request,
                      std::function<void(const v1::CompletionChunk&)> on_chunk,
                      std::function<void(absl::Status)> on_done) override {
    absl::Status error = NextError();
    if (!error.ok()) return on_done(error);
    const int large = large_chunks_.exchange(0);
    if (large > 0) {
      // A long answer of 64 KiB chunks, honouring cancellation between them.
      for (int i = 0; i < large; ++i) {
        if (call.cancel != nullptr && call.cancel->cancelled()) {
          cancelled_streams_.fetch_add(1);
          return on_done(absl::CancelledError("cancelled by the caller"));
        }
        v1::CompletionChunk c;
        c.set_content(std::string(64 << 10, 'x'));
        on_chunk(c);
      }
      return on_done(absl::OkStatus());
    }
    v1::CompletionResponse r = Answer(call, request);
    const std::string& text = r.message().content();
    for (size_t i = 0; i < text.size(); i += 2) {
      v1::CompletionChunk c;
      c.set_id(r.id());
      c.set_content(text.substr(i, 2));
      on_chunk(c);
    }
    v1::CompletionChunk last;
    last.set_finish_reason("stop");
    on_chunk(last);
    on_done(absl::OkStatus());
  }

  // The next stream is `n` chunks of 64 KiB instead of the scripted answer.
  void StreamLarge(int n) { large_chunks_.store(n); }
  int cancelled_streams() const { return cancelled_streams_.load(); }

  void QueueError(absl::Status s) {
    absl::MutexLock lock(&mu_);
    errors_.push_back(std::move(s));
  }
  int calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  std::vector<std::string> headers_seen() {
    absl::MutexLock lock(&mu_);
    return headers_;
  }

 private:
  absl::Status NextError() {
    absl::MutexLock lock(&mu_);
    ++calls_;
    if (errors_.empty()) return absl::OkStatus();
    absl::Status s = errors_.front();
    errors_.erase(errors_.begin());
    return s;
  }

  v1::CompletionResponse Answer(const upstream::UpstreamCall& call,
                                const v1::CompletionRequest& request) {
    int n;
    {
      absl::MutexLock lock(&mu_);
      n = ++per_agent_[call.agent];
      for (const auto& [k, v] : call.headers) headers_.push_back(k + "=" + v);
    }
    v1::CompletionResponse r;
    r.set_id(absl::StrCat("resp-", call.agent, "-", n));
    r.set_model(request.model());
    r.mutable_message()->set_role("assistant");
    r.mutable_message()->set_content(absl::StrCat(call.agent, ":", n));
    r.set_finish_reason("stop");
    return r;
  }

  std::atomic<int> large_chunks_{0};
  std::atomic<int> cancelled_streams_{0};
  absl::Mutex mu_;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<absl::Status> errors_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> per_agent_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> headers_ ABSL_GUARDED_BY(mu_);
};

// Collects a stream.
class CollectingSink final : public ChunkSink {
 public:
  void OnChunk(ChunkPtr chunk, absl::Time not_before) override {
    chunks.push_back(*chunk);
    pointers.push_back(chunk);
    times.push_back(not_before);
  }
  std::vector<ChunkPtr> pointers;
  void OnFinish(absl::Status status) override { done.set_value(std::move(status)); }
  std::vector<v1::CompletionChunk> chunks;
  std::vector<absl::Time> times;
  std::promise<absl::Status> done;
};

// A caller that never reads: every chunk stays pending; or one that goes
// away after `gone_after` chunks.
class StalledSink final : public ChunkSink {
 public:
  explicit StalledSink(int gone_after = -1) : gone_after_(gone_after) {}
  void OnChunk(ChunkPtr chunk, absl::Time) override {
    pending_ += chunk->ByteSizeLong();
    ++count_;
  }
  void OnFinish(absl::Status status) override { done.set_value(std::move(status)); }
  bool cancelled() const override { return gone_after_ >= 0 && count_ >= gone_after_; }
  size_t pending_bytes() const override { return pending_; }
  int count() const { return count_; }
  std::promise<absl::Status> done;

 private:
  const int gone_after_;
  std::atomic<int> count_{0};
  std::atomic<size_t> pending_{0};
};

v1::CompletionRequest Ask(const std::string& text) {
  v1::CompletionRequest r;
  r.set_model("test-model");
  auto* sys = r.add_messages();
  sys->set_role("system");
  sys->set_content("You are careful.");
  auto* user = r.add_messages();
  user->set_role("user");
  user->set_content(text);
  return r;
}

CallInfo Call(const std::string& run, const std::string& agent) {
  CallInfo c;
  c.run = run;
  c.agent = agent;
  return c;
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions so;
    so.path = dir_.File("test.db");
    so.clock = &clock_;
    auto s = store::Store::Open(so);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    EngineOptions eo;
    eo.store = store_.get();
    eo.upstream = &upstream_;
    eo.env = EngineEnv();
    int next = 0;
    eo.new_run_id = [next]() mutable { return absl::StrCat("run-", ++next); };
    auto e = Engine::Create(std::move(eo));
    ASSERT_TRUE(e.ok()) << e.status();
    engine_ = std::move(*e);
  }

  absl::StatusOr<v1::CompletionResponse> Complete(const CallInfo& call,
                                                  const v1::CompletionRequest& request) {
    std::promise<absl::StatusOr<v1::CompletionResponse>> promise;
    auto future = promise.get_future();
    engine_->Complete(call, request, [&promise](absl::StatusOr<ResponsePtr> r) {
      if (r.ok()) {
        promise.set_value(**r);
      } else {
        promise.set_value(r.status());
      }
    });
    if (future.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      return absl::DeadlineExceededError("engine did not answer within 10 s");
    }
    return future.get();
  }

  std::pair<absl::Status, std::vector<v1::CompletionChunk>> Stream(
      const CallInfo& call, const v1::CompletionRequest& request) {
    auto sink = std::make_shared<CollectingSink>();
    auto future = sink->done.get_future();
    engine_->StreamComplete(call, request, sink);
    if (future.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      return {absl::DeadlineExceededError("stream did not finish within 10 s"), {}};
    }
    return {future.get(), sink->chunks};
  }

  v1::Run Start(v1::RunMode mode, const std::string& session, bool strict = true) {
    v1::StartRunRequest r;
    r.set_mode(mode);
    r.set_session(session);
    r.set_strict(strict);
    auto run = engine_->StartRun(r);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : v1::Run();
  }

  // Records: orchestrator asks "plan", executor asks "do" twice (the same
  // request), reviewer asks "check".
  void RecordGolden() {
    v1::Run run = Start(v1::RUN_MODE_RECORD, "golden");
    ASSERT_TRUE(Complete(Call(run.id(), "orchestrator"), Ask("plan")).ok());
    ASSERT_TRUE(Complete(Call(run.id(), "executor"), Ask("do")).ok());
    ASSERT_TRUE(Complete(Call(run.id(), "executor"), Ask("do")).ok());
    ASSERT_TRUE(Complete(Call(run.id(), "reviewer"), Ask("check")).ok());
    auto summary = engine_->EndRun(run.id());
    ASSERT_TRUE(summary.ok()) << summary.status();
    EXPECT_EQ(summary->run().recorded(), 4);
  }

  // The Env the engine runs on: the fake one, unless a fixture says.
  virtual Env* EngineEnv() { return &clock_; }

  std::vector<v1::TraceEvent> Events(const std::string& run) {
    EXPECT_THAT(store_->Flush(), IsOk());
    store::EventQuery q;
    q.run = run;
    auto page = store_->QueryEvents(q);
    EXPECT_TRUE(page.ok()) << page.status();
    return page.ok() ? page->events : std::vector<v1::TraceEvent>{};
  }

  store::ScopedTempDir dir_;
  FakeEnv clock_;
  FakeUpstream upstream_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Engine> engine_;
};

// Trace events of recorded and replayed answers refer to the recording in
// the store (store/trace_codec.h); a reader must see exactly the event a
// live subscriber saw, with the request and the answer, whether the request
// was the recorded bytes or only matched them, repeated or not, and after
// the session version itself is deleted.
TEST_F(EngineTest, EventsThatReferToTheRecordingReadBackWhole) {
  auto watch = [&](const std::string& run, std::vector<v1::TraceEvent>* seen) {
    auto sub = engine_->Subscribe(
        run, [seen](const v1::TraceEvent& e) { seen->push_back(e); }, nullptr);
    EXPECT_TRUE(sub.ok()) << sub.status();
    return sub.ok() ? std::move(*sub) : nullptr;
  };
  auto same = [&](const std::vector<v1::TraceEvent>& live, const std::string& run) {
    ASSERT_FALSE(live.empty());
    // The feed starts after run_started.
    std::vector<v1::TraceEvent> stored;
    for (v1::TraceEvent& e : Events(run)) {
      if (e.seq() >= live.front().seq()) stored.push_back(std::move(e));
    }
    ASSERT_EQ(stored.size(), live.size());
    for (size_t i = 0; i < stored.size(); ++i) {
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(stored[i], live[i]))
          << "event " << i << "\nstored: " << stored[i].DebugString()
          << "\nlive: " << live[i].DebugString();
    }
  };

  std::vector<v1::TraceEvent> recorded;
  v1::Run record = Start(v1::RUN_MODE_RECORD, "golden");
  auto record_sub = watch(record.id(), &recorded);
  ASSERT_TRUE(Complete(Call(record.id(), "executor"), Ask("do")).ok());
  ASSERT_TRUE(engine_->EndRun(record.id()).ok());
  record_sub.reset();
  same(recorded, record.id());
  const auto exchange = std::find_if(recorded.begin(), recorded.end(),
                                     [](const v1::TraceEvent& e) { return e.kind() == "exchange"; });
  ASSERT_NE(exchange, recorded.end());
  EXPECT_EQ(exchange->attributes().at("understudy.answer.source"), "upstream");
  EXPECT_EQ(exchange->response().message().content(), "executor:1");
  EXPECT_EQ(exchange->request().messages(1).content(), "do");

  v1::StartRunRequest r;
  r.set_mode(v1::RUN_MODE_REPLAY);
  r.set_session("golden");
  r.set_repeat(true);
  auto replay = engine_->StartRun(r);
  ASSERT_TRUE(replay.ok()) << replay.status();
  std::vector<v1::TraceEvent> replayed;
  auto replay_sub = watch(replay->id(), &replayed);
  // The recorded bytes; then a request that matches only canonically (the
  // model field through the routing path: an agent field set on the
  // request, which the recording never has); then a repeat.
  ASSERT_TRUE(Complete(Call(replay->id(), "executor"), Ask("do")).ok());
  v1::CompletionRequest routed = Ask("do");
  routed.set_agent("executor");
  ASSERT_TRUE(Complete(Call(replay->id(), "executor"), routed).ok());
  ASSERT_TRUE(engine_->EndRun(replay->id()).ok());
  replay_sub.reset();
  same(replayed, replay->id());
  int exchanges = 0;
  for (const v1::TraceEvent& e : replayed) {
    if (e.kind() != "exchange") continue;
    ++exchanges;
    EXPECT_EQ(e.response().message().content(), "executor:1");
    EXPECT_EQ(e.request().messages(1).content(), "do");
    EXPECT_TRUE(e.request().agent().empty());
    EXPECT_EQ(e.attributes().at("understudy.answer.source"), "recording");
    EXPECT_EQ(e.attributes().at("gen_ai.response.id"), "resp-executor-1");
    EXPECT_EQ(e.attributes().at("understudy.exchange.seq"), "1");
  }
  EXPECT_EQ(exchanges, 2);
  EXPECT_EQ(replayed.back().kind(), "run_ended");

  {
    // Stored as references: the two replayed answers and the recorded one.
    auto db = store::sql::Database::Open(dir_.File("test.db"), store::sql::DatabaseOptions());
    ASSERT_TRUE(db.ok()) << db.status();
    auto count = (*db)->Prepare(
        "SELECT count(*) FROM trace_events WHERE ref_session IS NOT NULL AND derive & 4");
    ASSERT_TRUE(count.ok()) << count.status();
    ASSERT_THAT(count->Step(), store::IsOkAndHolds(true));
    EXPECT_EQ(count->ColumnInt64(0), 3);
  }
  // The recording goes; its runs' events stay whole.
  ASSERT_THAT(store_->DeleteSession("golden", 0), IsOk());
  same(recorded, record.id());
  same(replayed, replay->id());
}

TEST_F(EngineTest, RecordAppendsEachExchangeAndEndRunClosesTheSession) {
  RecordGolden();
  auto session = store_->GetSession("golden", 0);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(session->version(), 1);
  EXPECT_EQ(session->state(), v1::SESSION_STATE_CLOSED);
  EXPECT_EQ(session->exchange_count(), 4);
  auto exchanges = store_->LoadExchanges("golden", 1);
  ASSERT_TRUE(exchanges.ok());
  ASSERT_THAT(*exchanges, SizeIs(4));
  EXPECT_EQ((*exchanges)[1].agent(), "executor");
  EXPECT_EQ((*exchanges)[1].response().message().content(), "executor:1");
  EXPECT_TRUE((*exchanges)[1].request().run().empty());
}

TEST_F(EngineTest, ARecordRunThatRecordedNothingLeavesNoVersionBehind) {
  RecordGolden();
  v1::Run empty = Start(v1::RUN_MODE_RECORD, "golden");
  EXPECT_EQ(empty.session_version(), 2);
  auto summary = engine_->EndRun(empty.id());
  ASSERT_THAT(summary, IsOk());
  EXPECT_EQ(summary->run().recorded(), 0);
  EXPECT_THAT(store_->GetSession("golden", 2), StatusIs(absl::StatusCode::kNotFound));
  // The replay of the latest version is the real recording.
  v1::Run replay = Start(v1::RUN_MODE_REPLAY, "golden");
  EXPECT_EQ(replay.session_version(), 1);
  EXPECT_THAT(Complete(Call(replay.id(), "orchestrator"), Ask("plan")), IsOk());
}

TEST_F(EngineTest, ReplayOfTheLatestVersionSkipsAnEmptyOneACrashLeftBehind) {
  RecordGolden();
  // What a record run killed before its first exchange leaves: version 2,
  // open and empty.
  ASSERT_THAT(store_->CreateSessionVersion("golden"), IsOk());
  v1::Run replay = Start(v1::RUN_MODE_REPLAY, "golden");
  EXPECT_EQ(replay.session_version(), 1);
  // Named explicitly, the empty version is used as asked.
  v1::Run explicit_run = Start(v1::RUN_MODE_REPLAY, "golden@2");
  EXPECT_EQ(explicit_run.session_version(), 2);
}

TEST_F(EngineTest, ARelayedStreamWhoseCallerStopsReadingIsCutAndNotRecorded) {
  upstream_.StreamLarge(1000);  // 64 MiB
  v1::Run run = Start(v1::RUN_MODE_RECORD, "cut");
  auto sink = std::make_shared<StalledSink>();
  auto done = sink->done.get_future();
  engine_->StreamComplete(Call(run.id(), "a"), Ask("long"), sink);
  ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_THAT(done.get(), StatusIs(absl::StatusCode::kResourceExhausted,
                                   HasSubstr("the client is not reading")));
  EXPECT_EQ(upstream_.cancelled_streams(), 1);
  // Cut just past the 8 MiB bound, not after 64 MiB.
  EXPECT_LT(sink->count(), 200);
  auto summary = engine_->EndRun(run.id());
  ASSERT_THAT(summary, IsOk());
  EXPECT_EQ(summary->run().recorded(), 0);
}

TEST_F(EngineTest, ACallerThatGoesAwayCancelsTheRelayedStreamAndNothingIsRecorded) {
  upstream_.StreamLarge(1000);
  v1::Run run = Start(v1::RUN_MODE_RECORD, "gone");
  auto sink = std::make_shared<StalledSink>(/*gone_after=*/3);
  auto done = sink->done.get_future();
  engine_->StreamComplete(Call(run.id(), "a"), Ask("long"), sink);
  ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_THAT(done.get(), StatusIs(absl::StatusCode::kCancelled));
  EXPECT_EQ(upstream_.cancelled_streams(), 1);
  EXPECT_LE(sink->count(), 4);
  auto summary = engine_->EndRun(run.id());
  ASSERT_THAT(summary, IsOk());
  EXPECT_EQ(summary->run().recorded(), 0);
}

TEST_F(EngineTest, StreamingCallersOfAWholeRecordedAnswerShareOneChunk) {
  RecordGolden();
  v1::Run a = Start(v1::RUN_MODE_REPLAY, "golden");
  v1::Run b = Start(v1::RUN_MODE_REPLAY, "golden");
  std::vector<ChunkPtr> seen;
  for (const v1::Run& run : {a, b}) {
    auto sink = std::make_shared<CollectingSink>();
    auto done = sink->done.get_future();
    engine_->StreamComplete(Call(run.id(), "reviewer"), Ask("check"), sink);
    ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    ASSERT_THAT(done.get(), IsOk());
    ASSERT_THAT(sink->pointers, SizeIs(1));
    EXPECT_EQ(sink->chunks[0].content(), "reviewer:1");
    seen.push_back(sink->pointers[0]);
  }
  // The same chunk object: no copy of the answer per streaming caller.
  EXPECT_EQ(seen[0].get(), seen[1].get());
}

TEST_F(EngineTest, ReplayAnswersIdenticalRequestsInRecordedOrderWithoutUpstream) {
  RecordGolden();
  const int calls = upstream_.calls();
  v1::Run run = Start(v1::RUN_MODE_REPLAY, "golden");
  EXPECT_EQ(Complete(Call(run.id(), "orchestrator"), Ask("plan"))->message().content(),
            "orchestrator:1");
  EXPECT_EQ(Complete(Call(run.id(), "executor"), Ask("do"))->message().content(), "executor:1");
  EXPECT_EQ(Complete(Call(run.id(), "executor"), Ask("do"))->message().content(), "executor:2");
  EXPECT_EQ(Complete(Call(run.id(), "reviewer"), Ask("check"))->id(), "resp-reviewer-1");
  EXPECT_EQ(upstream_.calls(), calls);
  auto summary = engine_->EndRun(run.id());
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->run().served(), 4);
  EXPECT_THAT(summary->misses(), IsEmpty());
  EXPECT_THAT(summary->unconsumed(), IsEmpty());
}

// What the adapter says of a call (the HTTP API it came over) reaches its
// exchange event, whether forwarded or replayed.
TEST_F(EngineTest, TheCallsOwnAttributesReachItsExchangeEvent) {
  CallInfo call = Call("", "executor");
  call.attributes = {{"openai.api.type", "responses"}};
  v1::Run record = Start(v1::RUN_MODE_RECORD, "golden");
  call.run = record.id();
  ASSERT_THAT(Complete(call, Ask("do")), IsOk());
  ASSERT_THAT(engine_->EndRun(record.id()), IsOk());
  v1::Run replay = Start(v1::RUN_MODE_REPLAY, "golden");
  call.run = replay.id();
  ASSERT_THAT(Complete(call, Ask("do")), IsOk());
  ASSERT_THAT(engine_->EndRun(replay.id()), IsOk());
  for (const std::string& run : {record.id(), replay.id()}) {
    int exchanges = 0;
    for (const v1::TraceEvent& e : Events(run)) {
      if (e.kind() != "exchange") continue;
      ++exchanges;
      EXPECT_EQ(e.attributes().at("openai.api.type"), "responses") << run;
      EXPECT_EQ(e.attributes().at("gen_ai.operation.name"), "chat") << run;
    }
    EXPECT_EQ(exchanges, 1) << run;
  }
}

TEST_F(EngineTest, StrictMissIsNotFoundNamingTheDifferingField) {
  RecordGolden();
  v1::Run run = Start(v1::RUN_MODE_REPLAY, "golden");
  auto r = Complete(Call(run.id(), "orchestrator"), Ask("plan differently"));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kNotFound,
                          HasSubstr("messages[1].content: recorded \"plan\" got \"plan differently\"")));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kNotFound, HasSubstr("closest is exchange #1")));
  absl::optional<absl::Cord> payload = r.status().GetPayload(kMissPayloadUrl);
  ASSERT_TRUE(payload.has_value());
  v1::MissReport carried;
  ASSERT_TRUE(carried.ParseFromString(std::string(*payload)));
  EXPECT_EQ(carried.closest_seq(), 1);
  EXPECT_FALSE(Complete(Call("no-such-run", "a"), Ask("x")).status().GetPayload(kMissPayloadUrl));
  auto summary = engine_->EndRun(run.id());
  ASSERT_TRUE(summary.ok());
  ASSERT_THAT(summary->misses(), SizeIs(1));
  EXPECT_EQ(summary->misses(0).closest_seq(), 1);
  ASSERT_THAT(summary->misses(0).diffs(), SizeIs(1));
  EXPECT_EQ(summary->misses(0).diffs(0).path(), "messages[1].content");
  EXPECT_THAT(summary->unconsumed(), SizeIs(4));
  std::vector<std::string> kinds;
  for (const auto& e : Events(run.id())) kinds.push_back(e.kind());
  EXPECT_THAT(kinds, ElementsAre("run_started", "agent_execution", "miss", "run_ended"));
}

TEST_F(EngineTest, RepeatedRequestBeyondTheRecordedCopiesReportsConsumedOnly) {
  RecordGolden();
  v1::Run run = Start(v1::RUN_MODE_REPLAY, "golden");
  ASSERT_TRUE(Complete(Call(run.id(), "reviewer"), Ask("check")).ok());
  auto again = Complete(Call(run.id(), "reviewer"), Ask("check"));
  EXPECT_THAT(again, StatusIs(absl::StatusCode::kNotFound,
                              HasSubstr("an identical recording, exchange #4, exists but this run "
                                        "already used it")));
}

TEST_F(EngineTest, RepeatAnswersAgainFromTheLastIdenticalRecordingOnceAllAreUsed) {
  RecordGolden();
  v1::StartRunRequest r;
  r.set_mode(v1::RUN_MODE_REPLAY);
  r.set_session("golden");
  r.set_repeat(true);
  auto run = engine_->StartRun(r);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->repeat());
  // The executor recorded "do" twice: both copies in order, then the last
  // again, as often as asked.
  std::vector<std::string> answers;
  for (int i = 0; i < 4; ++i) {
    auto a = Complete(Call(run->id(), "executor"), Ask("do"));
    ASSERT_TRUE(a.ok()) << a.status();
    answers.push_back(a->message().content());
  }
  EXPECT_THAT(answers, ElementsAre("executor:1", "executor:2", "executor:2", "executor:2"));
  // Still a miss when nothing identical was recorded, and still per agent.
  EXPECT_THAT(Complete(Call(run->id(), "executor"), Ask("never said")),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(Complete(Call(run->id(), "reviewer"), Ask("do")),
              StatusIs(absl::StatusCode::kNotFound));
  auto summary = engine_->EndRun(run->id());
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->run().served(), 4);
  std::vector<std::string> repeats;
  for (const auto& e : Events(run->id())) {
    if (e.kind() != "exchange") continue;
    auto it = e.attributes().find("understudy.answer.repeat");
    repeats.push_back(it == e.attributes().end() ? "-" : it->second);
  }
  EXPECT_THAT(repeats, ElementsAre("-", "-", "true", "true"));
  // Without repeat (the default) the third "do" is a miss.
  v1::Run plain = Start(v1::RUN_MODE_REPLAY, "golden");
  EXPECT_FALSE(plain.repeat());
}

TEST_F(EngineTest, AgentIsPartOfTheMatch) {
  RecordGolden();
  v1::Run run = Start(v1::RUN_MODE_REPLAY, "golden");
  auto r = Complete(Call(run.id(), "reviewer"), Ask("plan"));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kNotFound,
                          HasSubstr("agent: recorded \"orchestrator\" got \"reviewer\"")));
}

TEST_F(EngineTest, NonStrictMissAnswersFromTheClosestUnusedRecordingAndStillReportsIt) {
  RecordGolden();
  v1::Run run = Start(v1::RUN_MODE_REPLAY, "golden", /*strict=*/false);
  auto r = Complete(Call(run.id(), "reviewer"), Ask("check twice"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->message().content(), "reviewer:1");
  auto summary = engine_->EndRun(run.id());
  ASSERT_TRUE(summary.ok());
  ASSERT_THAT(summary->misses(), SizeIs(1));
  EXPECT_EQ(summary->misses(0).served_seq(), 4);
  EXPECT_EQ(summary->run().misses(), 1);
}

TEST_F(EngineTest, RecordedStreamReplaysChunkForChunkAndAsAWholeResponse) {
  v1::Run rec = Start(v1::RUN_MODE_RECORD, "streams");
  auto [status, live] = Stream(Call(rec.id(), "executor"), Ask("stream it"));
  ASSERT_THAT(status, IsOk());
  ASSERT_THAT(live, SizeIs(6));  // "executor:1" in 2-byte pieces + the final chunk
  ASSERT_TRUE(engine_->EndRun(rec.id()).ok());

  v1::Run rep = Start(v1::RUN_MODE_REPLAY, "streams");
  auto [status2, replayed] = Stream(Call(rep.id(), "executor"), Ask("stream it"));
  ASSERT_THAT(status2, IsOk());
  ASSERT_EQ(replayed.size(), live.size());
  for (size_t i = 0; i < live.size(); ++i) {
    EXPECT_EQ(replayed[i].content(), live[i].content()) << i;
    EXPECT_EQ(replayed[i].finish_reason(), live[i].finish_reason()) << i;
  }
  ASSERT_TRUE(engine_->EndRun(rep.id()).ok());

  v1::Run unary = Start(v1::RUN_MODE_REPLAY, "streams");
  auto whole = Complete(Call(unary.id(), "executor"), Ask("stream it"));
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->message().content(), "executor:1");
  EXPECT_EQ(whole->finish_reason(), "stop");
}

TEST_F(EngineTest, UnaryRecordingReplaysToAStreamingCallerAsOneChunk) {
  RecordGolden();
  v1::Run run = Start(v1::RUN_MODE_REPLAY, "golden");
  auto [status, chunks] = Stream(Call(run.id(), "orchestrator"), Ask("plan"));
  ASSERT_THAT(status, IsOk());
  ASSERT_THAT(chunks, SizeIs(1));
  EXPECT_EQ(chunks[0].content(), "orchestrator:1");
  EXPECT_EQ(chunks[0].finish_reason(), "stop");
}

TEST_F(EngineTest, UpstreamErrorsAreRecordedAndReplayedButOutagesAreNot) {
  upstream_.QueueError(absl::UnavailableError("connection refused"));
  upstream_.QueueError(absl::ResourceExhaustedError("rate limited"));
  v1::Run rec = Start(v1::RUN_MODE_RECORD, "errors");
  EXPECT_THAT(Complete(Call(rec.id(), "a"), Ask("x")), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(Complete(Call(rec.id(), "a"), Ask("x")),
              StatusIs(absl::StatusCode::kResourceExhausted, "rate limited"));
  EXPECT_TRUE(Complete(Call(rec.id(), "a"), Ask("x")).ok());
  auto summary = engine_->EndRun(rec.id());
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->run().recorded(), 2);

  v1::Run rep = Start(v1::RUN_MODE_REPLAY, "errors");
  EXPECT_THAT(Complete(Call(rep.id(), "a"), Ask("x")),
              StatusIs(absl::StatusCode::kResourceExhausted, "rate limited"));
  EXPECT_EQ(Complete(Call(rep.id(), "a"), Ask("x"))->message().content(), "a:1");
}

TEST_F(EngineTest, RefusedCredentialsAreNotRecorded) {
  upstream_.QueueError(absl::UnauthenticatedError("invalid api key"));
  v1::Run rec = Start(v1::RUN_MODE_RECORD, "auth");
  EXPECT_THAT(Complete(Call(rec.id(), "a"), Ask("x")),
              StatusIs(absl::StatusCode::kUnauthenticated));
  auto summary = engine_->EndRun(rec.id());
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->run().recorded(), 0);
}

TEST_F(EngineTest, RunModelsListsTheRecordingsModelsOnce) {
  RecordGolden();
  v1::Run run = Start(v1::RUN_MODE_REPLAY, "golden");
  auto models = engine_->RunModels(Call(run.id(), ""));
  ASSERT_TRUE(models.ok()) << models.status();
  EXPECT_THAT(*models, ElementsAre("test-model"));
}

TEST_F(EngineTest, CredentialsAreForwardedButNeverStored) {
  v1::Run rec = Start(v1::RUN_MODE_RECORD, "secret");
  CallInfo call = Call(rec.id(), "a");
  call.forward_headers.emplace_back("authorization", "Bearer sk-test-SECRET");
  ASSERT_TRUE(Complete(call, Ask("x")).ok());
  ASSERT_TRUE(engine_->EndRun(rec.id()).ok());
  EXPECT_THAT(upstream_.headers_seen(), ElementsAre("authorization=Bearer sk-test-SECRET"));
  auto exported = store_->ExportSession("secret", 0);
  ASSERT_TRUE(exported.ok());
  EXPECT_EQ(exported->find("sk-test-SECRET"), std::string::npos);
}

TEST_F(EngineTest, StartRunRefusesBadRequestsWithSpecificCodes) {
  v1::StartRunRequest r;
  EXPECT_THAT(engine_->StartRun(r), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mode")));
  r.set_mode(v1::RUN_MODE_REPLAY);
  EXPECT_THAT(engine_->StartRun(r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("session: required")));
  r.set_session("nope");
  EXPECT_THAT(engine_->StartRun(r), StatusIs(absl::StatusCode::kNotFound));
  r.set_session("nope@x");
  EXPECT_THAT(engine_->StartRun(r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad version")));
  r.set_session("nope");
  r.set_run_id("has space");
  EXPECT_THAT(engine_->StartRun(r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("run_id: character 4")));
  RecordGolden();
  r.set_session("golden");
  r.set_run_id("mine");
  ASSERT_TRUE(engine_->StartRun(r).ok());
  EXPECT_THAT(engine_->StartRun(r), StatusIs(absl::StatusCode::kAlreadyExists));
}

TEST_F(EngineTest, AnUnknownSessionIsNamedWithTheDatabaseAndWhatItHolds) {
  EngineOptions eo;
  eo.store = store_.get();
  eo.store_name = "golden.db";
  auto engine = Engine::Create(std::move(eo));
  ASSERT_TRUE(engine.ok()) << engine.status();
  v1::StartRunRequest r;
  r.set_mode(v1::RUN_MODE_REPLAY);
  r.set_session("golden");
  EXPECT_THAT((*engine)->StartRun(r),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("session \"golden\" not found in database golden.db (which "
                                 "holds no sessions)")));
  for (const char* name : {"a1", "a2", "a3", "a4", "a5", "a6", "a7"}) {
    ASSERT_TRUE(store_->CreateSessionVersion(name).ok());
  }
  ASSERT_TRUE(store_->CreateSessionVersion("a1").ok());  // a second version: one name
  EXPECT_THAT((*engine)->StartRun(r),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("in database golden.db (whose sessions are a1, a2, a3, a4, a5 "
                                 "and 2 more)")));
  r.set_session("a2@4");
  EXPECT_THAT((*engine)->StartRun(r),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("\"a2@4\" not found in database golden.db")));
  // Without a name, the message is the store's alone.
  r.set_session("golden");
  EXPECT_THAT(engine_->StartRun(r), StatusIs(absl::StatusCode::kNotFound,
                                             Not(HasSubstr("database"))));
}

TEST_F(EngineTest, RecordWithoutUpstreamIsAFailedPrecondition) {
  EngineOptions eo;
  eo.store = store_.get();
  auto engine = Engine::Create(std::move(eo));
  ASSERT_TRUE(engine.ok());
  v1::StartRunRequest r;
  r.set_mode(v1::RUN_MODE_RECORD);
  r.set_session("s");
  EXPECT_THAT((*engine)->StartRun(r),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--upstream")));
}

TEST_F(EngineTest, EndedRunRefusesRequestsAndEndRunAgainReturnsTheSameSummary) {
  RecordGolden();
  v1::Run run = Start(v1::RUN_MODE_REPLAY, "golden");
  ASSERT_TRUE(Complete(Call(run.id(), "orchestrator"), Ask("plan")).ok());
  auto first = engine_->EndRun(run.id());
  ASSERT_TRUE(first.ok());
  EXPECT_THAT(Complete(Call(run.id(), "executor"), Ask("do")),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("has ended")));
  auto second = engine_->EndRun(run.id());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->SerializeAsString(), first->SerializeAsString());
  EXPECT_THAT(engine_->EndRun("never-started"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(Complete(Call("never-started", "a"), Ask("x")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("unknown run")));
}

TEST_F(EngineTest, CallsNamingNoRunUseTheDefaultRunOrAreRefused) {
  RecordGolden();
  EXPECT_THAT(Complete(Call("", "orchestrator"), Ask("plan")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("understudy-run")));
  v1::Run run = Start(v1::RUN_MODE_REPLAY, "golden");
  engine_->SetDefaultRun(run.id());
  EXPECT_EQ(Complete(Call("", "orchestrator"), Ask("plan"))->message().content(),
            "orchestrator:1");
}

TEST_F(EngineTest, InvalidRequestNamesTheField) {
  RecordGolden();
  v1::Run run = Start(v1::RUN_MODE_REPLAY, "golden");
  v1::CompletionRequest bad = Ask("plan");
  bad.mutable_messages(1)->set_role("robot");
  EXPECT_THAT(Complete(Call(run.id(), "a"), bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("messages[1].role")));
}

TEST_F(EngineTest, TraceIsOrderedWithoutGapsUnderConcurrentRequests) {
  v1::Run rec = Start(v1::RUN_MODE_RECORD, "many");
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(Complete(Call(rec.id(), "a"), Ask(absl::StrCat("q", i))).ok());
  }
  ASSERT_TRUE(engine_->EndRun(rec.id()).ok());
  v1::Run run = Start(v1::RUN_MODE_REPLAY, "many");
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < 20; i += 4) {
        if (Complete(Call(run.id(), "a"), Ask(absl::StrCat("q", i))).ok()) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 20);
  ASSERT_TRUE(engine_->EndRun(run.id()).ok());
  std::vector<v1::TraceEvent> events = Events(run.id());
  // run_started, one agent_execution (one agent throughout), 20 exchanges,
  // run_ended.
  ASSERT_THAT(events, SizeIs(23));
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
  EXPECT_EQ(events.front().kind(), "run_started");
  EXPECT_EQ(events[1].kind(), "agent_execution");
  EXPECT_EQ(events.back().kind(), "run_ended");
  EXPECT_EQ(events[2].attributes().at("understudy.answer.source"), "recording");
}

TEST_F(EngineTest, ConcurrentRunsOnOneSessionDoNotSeeEachOthersConsumption) {
  RecordGolden();
  std::vector<v1::Run> runs;
  for (int i = 0; i < 8; ++i) runs.push_back(Start(v1::RUN_MODE_REPLAY, "golden"));
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (const v1::Run& run : runs) {
    threads.emplace_back([&, id = run.id()] {
      auto a = Complete(Call(id, "executor"), Ask("do"));
      auto b = Complete(Call(id, "executor"), Ask("do"));
      if (a.ok() && b.ok() && a->message().content() == "executor:1" &&
          b->message().content() == "executor:2") {
        ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);
}

TEST_F(EngineTest, OnceModeRecordsAnEmptySessionThenReplaysIt) {
  v1::Run first = Start(v1::RUN_MODE_ONCE, "fresh");
  EXPECT_EQ(first.mode(), v1::RUN_MODE_RECORD);
  ASSERT_TRUE(Complete(Call(first.id(), "a"), Ask("x")).ok());
  ASSERT_TRUE(engine_->EndRun(first.id()).ok());
  const int calls = upstream_.calls();
  v1::Run second = Start(v1::RUN_MODE_ONCE, "fresh");
  EXPECT_EQ(second.mode(), v1::RUN_MODE_REPLAY);
  EXPECT_EQ(Complete(Call(second.id(), "a"), Ask("x"))->message().content(), "a:1");
  EXPECT_EQ(upstream_.calls(), calls);
  EXPECT_THAT(Complete(Call(second.id(), "a"), Ask("y")), StatusIs(absl::StatusCode::kNotFound));
  std::vector<v1::TraceEvent> events = Events(second.id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].attributes().at("understudy.run.requested_mode"), "once");
}

TEST_F(EngineTest, NewModeReplaysWhatItHasAndRecordsMissesIntoANewVersion) {
  RecordGolden();
  const int calls = upstream_.calls();
  v1::Run run = Start(v1::RUN_MODE_NEW, "golden");
  EXPECT_EQ(Complete(Call(run.id(), "orchestrator"), Ask("plan"))->message().content(),
            "orchestrator:1");
  EXPECT_EQ(upstream_.calls(), calls);
  auto fresh = Complete(Call(run.id(), "orchestrator"), Ask("replan"));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(upstream_.calls(), calls + 1);
  auto summary = engine_->EndRun(run.id());
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->run().misses(), 1);
  ASSERT_THAT(summary->recorded(), SizeIs(1));
  EXPECT_EQ(summary->recorded(0).seq(), 5);
  EXPECT_EQ(summary->recorded(0).agent(), "orchestrator");

  auto v1 = store_->GetSession("golden", 1);
  auto v2 = store_->GetSession("golden", 2);
  ASSERT_TRUE(v1.ok() && v2.ok());
  EXPECT_EQ(v1->exchange_count(), 4);
  EXPECT_EQ(v2->exchange_count(), 5);
  EXPECT_EQ(v2->state(), v1::SESSION_STATE_CLOSED);

  // The new version replays both the old and the new answer.
  v1::Run replay = Start(v1::RUN_MODE_REPLAY, "golden");
  EXPECT_EQ(replay.session_version(), 2);
  EXPECT_TRUE(Complete(Call(replay.id(), "orchestrator"), Ask("plan")).ok());
  EXPECT_TRUE(Complete(Call(replay.id(), "orchestrator"), Ask("replan")).ok());
}

TEST_F(EngineTest, NewModeWithoutMissesMakesNoNewVersion) {
  RecordGolden();
  v1::Run run = Start(v1::RUN_MODE_NEW, "golden");
  ASSERT_TRUE(Complete(Call(run.id(), "reviewer"), Ask("check")).ok());
  ASSERT_TRUE(engine_->EndRun(run.id()).ok());
  EXPECT_THAT(store_->GetSession("golden", 2), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(EngineTest, ForwardedNativeExchangeIsStoredAsGiven) {
  v1::Run run = Start(v1::RUN_MODE_RECORD, "native");
  auto decision = engine_->Decide(Call(run.id(), "a"), Ask("hi"), /*streamed=*/true);
  ASSERT_TRUE(decision.ok()) << decision.status();
  ASSERT_NE(decision->As<ForwardUpstream>(), nullptr);
  EXPECT_EQ(decision->As<ReplyFromExchange>(), nullptr);
  v1::Exchange ex;
  ex.mutable_native()->set_provider("openai");
  ex.mutable_native()->set_status(200);
  auto* chunk = ex.mutable_native()->add_chunks();
  chunk->set_data("data: {\"x\":1}\n\n");
  chunk->set_offset_micros(1500);
  ex.mutable_response()->mutable_message()->set_content("hello");
  std::promise<absl::Status> committed;
  engine_->FinishForward(std::move(decision->As<ForwardUpstream>()->ticket), ex, absl::OkStatus(),
                         [&](absl::Status s) { committed.set_value(s); });
  ASSERT_THAT(committed.get_future().get(), IsOk());
  ASSERT_TRUE(engine_->EndRun(run.id()).ok());
  auto stored = store_->LoadExchanges("native", 1);
  ASSERT_TRUE(stored.ok());
  ASSERT_THAT(*stored, SizeIs(1));
  EXPECT_EQ((*stored)[0].native().chunks(0).data(), "data: {\"x\":1}\n\n");
  EXPECT_EQ((*stored)[0].native().chunks(0).offset_micros(), 1500);
  EXPECT_TRUE((*stored)[0].streamed());
  EXPECT_EQ((*stored)[0].agent(), "a");
  EXPECT_EQ((*stored)[0].request().messages(1).content(), "hi");
}

TEST_F(EngineTest, ADroppedTicketReleasesTheRunWithoutRecording) {
  v1::Run run = Start(v1::RUN_MODE_RECORD, "dropped");
  {
    auto decision = engine_->Decide(Call(run.id(), "a"), Ask("hi"), false);
    ASSERT_TRUE(decision.ok());
    ASSERT_NE(decision->As<ForwardUpstream>(), nullptr);
  }  // the caller went away
  const absl::Time start = absl::Now();
  auto summary = engine_->EndRun(run.id());  // would wait 30 s for a leaked call
  ASSERT_TRUE(summary.ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(summary->run().recorded(), 0);
}

TEST_F(EngineTest, PacedReplayDueTimesAreTheRecordedOffsetsDividedBySpeed) {
  auto session = store_->CreateSessionVersion("paced");
  ASSERT_TRUE(session.ok());
  v1::Exchange ex;
  ex.set_agent("a");
  *ex.mutable_request() = Ask("stream");
  ex.set_streamed(true);
  for (int64_t offset : {0, 1000, 500000}) {
    v1::CompletionChunk* chunk = ex.add_chunks();
    chunk->set_content("x");
    chunk->set_offset_micros(offset);
  }
  ASSERT_TRUE(store_->AppendExchangesAndWait("paced", session->version(), {ex}).ok());
  ASSERT_THAT(store_->CloseSession("paced", session->version()), IsOk());

  EngineOptions eo;
  eo.store = store_.get();
  eo.env = &clock_;
  eo.speed = 2;
  auto paced = Engine::Create(std::move(eo));
  ASSERT_TRUE(paced.ok());
  v1::StartRunRequest start;
  start.set_mode(v1::RUN_MODE_REPLAY);
  start.set_session("paced");
  auto run = (*paced)->StartRun(start);
  ASSERT_TRUE(run.ok()) << run.status();
  auto sink = std::make_shared<CollectingSink>();
  auto done = sink->done.get_future();
  const absl::Time now = clock_.Now();
  (*paced)->StreamComplete(Call(run->id(), "a"), Ask("stream"), sink);
  ASSERT_THAT(done.get(), IsOk());
  EXPECT_THAT(sink->times, ElementsAre(now, now + absl::Microseconds(500),
                                       now + absl::Milliseconds(250)));

  // Without a speed, nothing waits.
  auto unpaced_run = engine_->StartRun(start);
  ASSERT_TRUE(unpaced_run.ok());
  auto unpaced = std::make_shared<CollectingSink>();
  auto unpaced_done = unpaced->done.get_future();
  engine_->StreamComplete(Call(unpaced_run->id(), "a"), Ask("stream"), unpaced);
  ASSERT_THAT(unpaced_done.get(), IsOk());
  EXPECT_THAT(unpaced->times, ElementsAre(absl::InfinitePast(), absl::InfinitePast(),
                                          absl::InfinitePast()));
}

// ---- Scenarios: rules, defaults, playbooks and actions at request time.

class ScriptedEngineTest : public EngineTest {
 protected:
  // Starts a run scripted by `body` (YAML after the schema line).
  v1::Run StartScripted(v1::RunMode mode, const std::string& session, const std::string& body) {
    v1::StartRunRequest r;
    r.set_mode(mode);
    r.set_session(session);
    r.set_scenario_text(absl::StrCat("schema: understudy.scenario/v1\n", body));
    auto run = engine_->StartRun(r);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : v1::Run();
  }

  static std::string Attr(const v1::TraceEvent& e, const std::string& name) {
    auto it = e.attributes().find(name);
    return it == e.attributes().end() ? "" : it->second;
  }

  std::vector<v1::TraceEvent> OfKind(const std::string& run, const std::string& kind) {
    std::vector<v1::TraceEvent> out;
    for (v1::TraceEvent& e : Events(run)) {
      if (e.kind() == kind) out.push_back(std::move(e));
    }
    return out;
  }
};

TEST_F(ScriptedEngineTest, RulesComeBeforeTheRecordingAndRunOut) {
  RecordGolden();
  v1::Run run = StartScripted(v1::RUN_MODE_REPLAY, "golden", R"(
rules:
  - name: first-executor-call
    times: 1
    when: {agent: executor}
    respond: {content: "scripted"}
)");
  auto first = Complete(Call(run.id(), "executor"), Ask("do"));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->message().content(), "scripted");
  // The rule is used up: the recording answers the same request now.
  auto second = Complete(Call(run.id(), "executor"), Ask("do"));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->message().content(), "executor:1");

  auto summary = engine_->EndRun(run.id());
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->run().scenario(), "inline");
  EXPECT_EQ(summary->run().state(), v1::RUN_STATE_ENDED);
  std::vector<v1::TraceEvent> exchanges = OfKind(run.id(), "exchange");
  ASSERT_THAT(exchanges, SizeIs(2));
  EXPECT_EQ(Attr(exchanges[0], "understudy.answer.source"), "rule");
  EXPECT_EQ(Attr(exchanges[0], "understudy.rule.name"), "first-executor-call");
  EXPECT_EQ(Attr(exchanges[0], "understudy.action"), "respond");
  EXPECT_EQ(Attr(exchanges[1], "understudy.answer.source"), "recording");
  EXPECT_EQ(Attr(exchanges[1], "understudy.agent.iteration"), "2");
  EXPECT_EQ(Attr(exchanges[1], "understudy.previous_agent"), "executor");
}

TEST_F(ScriptedEngineTest, ReplayWithoutASessionUsesDefaultThenMisses) {
  v1::Run run = StartScripted(v1::RUN_MODE_REPLAY, "", R"(
default:
  sequence:
    - respond: {content: "one"}
    - respond: {content: "two"}
)");
  EXPECT_EQ(Complete(Call(run.id(), "a"), Ask("x"))->message().content(), "one");
  EXPECT_EQ(Complete(Call(run.id(), "b"), Ask("y"))->message().content(), "two");
  EXPECT_EQ(Complete(Call(run.id(), "a"), Ask("z"))->message().content(), "one");

  v1::Run bare = StartScripted(v1::RUN_MODE_REPLAY, "", "rules: []\n");
  auto miss = Complete(Call(bare.id(), "a"), Ask("x"));
  EXPECT_THAT(miss.status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(miss.status().message(), HasSubstr("no rule, playbook action or default"));
  EXPECT_TRUE(miss.status().GetPayload(kMissPayloadUrl).has_value());
  auto summary = engine_->EndRun(bare.id());
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->run().misses(), 1);
}

TEST_F(ScriptedEngineTest, ReplayWithoutSessionOrScenarioIsRefused) {
  v1::StartRunRequest r;
  r.set_mode(v1::RUN_MODE_REPLAY);
  EXPECT_THAT(engine_->StartRun(r).status(), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(ScriptedEngineTest, InvalidScenarioIsRefusedWithTheWholeReport) {
  v1::StartRunRequest r;
  r.set_mode(v1::RUN_MODE_REPLAY);
  r.set_scenario_text(
      "schema: understudy.scenario/v1\nrules:\n  - name: a\n    when: {agnet: x}\n"
      "    respond: {content: hi}\n  - name: b\n    times: 0\n    respond: {content: hi}\n");
  auto run = engine_->StartRun(r);
  ASSERT_THAT(run.status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(run.status().message(), HasSubstr("rules[0].when.agnet"));
  EXPECT_THAT(run.status().message(), HasSubstr("rules[1].times"));
  r.set_scenario_text("");
  r.set_scenario("no-such-pack");
  EXPECT_THAT(engine_->StartRun(r).status(), StatusIs(absl::StatusCode::kNotFound));
}

// A whole scenario on the fake Env: a delay before the default's answer,
// then a hang released at the call's deadline. Time moves only when the test
// advances it, and nothing waits on the real clock.
TEST_F(ScriptedEngineTest, DelayAndHangRunOnTheFakeEnvWithoutRealWaiting) {
  const absl::Time real_start = absl::Now();
  v1::Run run = StartScripted(v1::RUN_MODE_REPLAY, "", R"(
rules:
  - name: slow-first-token
    when: {iteration: 1}
    delay: {ms: 1500}
  - name: stall
    when: {iteration: 2}
    hang: {}
default:
  respond: {content: "Slow but fine."}
)");
  auto answer = [this](const CallInfo& call, const std::string& text) {
    auto promise = std::make_shared<std::promise<absl::StatusOr<std::string>>>();
    std::future<absl::StatusOr<std::string>> future = promise->get_future();
    engine_->Complete(call, Ask(text), [promise](absl::StatusOr<ResponsePtr> r) {
      if (r.ok()) {
        promise->set_value((*r)->message().content());
      } else {
        promise->set_value(r.status());
      }
    });
    return future;
  };
  auto ready = [](const std::future<absl::StatusOr<std::string>>& f) {
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  };

  std::future<absl::StatusOr<std::string>> slow = answer(Call(run.id(), "a"), "first");
  EXPECT_FALSE(ready(slow));
  clock_.Advance(absl::Milliseconds(1499));
  EXPECT_FALSE(ready(slow));
  clock_.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(ready(slow));
  EXPECT_THAT(slow.get(), store::IsOkAndHolds("Slow but fine."));

  CallInfo held = Call(run.id(), "a");
  held.deadline = clock_.Now() + absl::Seconds(30);
  std::future<absl::StatusOr<std::string>> stalled = answer(held, "second");
  clock_.Advance(absl::Seconds(29));
  EXPECT_FALSE(ready(stalled));
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(ready(stalled));
  EXPECT_THAT(stalled.get().status(), StatusIs(absl::StatusCode::kDeadlineExceeded));

  EXPECT_THAT(Complete(Call(run.id(), "a"), Ask("third")), IsOk());
  // 31.5 s of scripted time passed; far less real time did.
  EXPECT_LT(absl::Now() - real_start, absl::Seconds(30));
}

TEST_F(ScriptedEngineTest, ErrorActionAnswersBothShapes) {
  v1::Run run = StartScripted(v1::RUN_MODE_REPLAY, "", R"(
rules:
  - name: limited
    error: {http_status: 429, message: "slow down", retry_after_seconds: 1.5}
)");
  auto unary = Complete(Call(run.id(), "a"), Ask("x"));
  EXPECT_THAT(unary.status(), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(unary.status().message(), HasSubstr("slow down"));
  auto [status, chunks] = Stream(Call(run.id(), "a"), Ask("x"));
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(chunks, IsEmpty());

  auto decision = engine_->Decide(Call(run.id(), "a"), Ask("x"), false);
  ASSERT_TRUE(decision.ok());
  ASSERT_NE(decision->As<ScriptedError>(), nullptr);
  EXPECT_EQ(decision->As<ScriptedError>()->http_status, 429);
  EXPECT_DOUBLE_EQ(decision->As<ScriptedError>()->retry_after_seconds, 1.5);
}

TEST_F(ScriptedEngineTest, FailThenSucceedThenRecording) {
  RecordGolden();
  v1::Run run = StartScripted(v1::RUN_MODE_REPLAY, "golden", R"(
rules:
  - name: flaky
    times: 3
    when: {agent: orchestrator}
    fail_then_succeed:
      failures: 2
      error: {grpc_code: UNAVAILABLE}
      then: {respond: {content: "recovered"}}
)");
  EXPECT_THAT(Complete(Call(run.id(), "orchestrator"), Ask("plan")).status(),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(Complete(Call(run.id(), "orchestrator"), Ask("plan")).status(),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(Complete(Call(run.id(), "orchestrator"), Ask("plan"))->message().content(),
            "recovered");
  // `times: 3` is used up: the recording answers.
  EXPECT_EQ(Complete(Call(run.id(), "orchestrator"), Ask("plan"))->message().content(),
            "orchestrator:1");
}

TEST_F(ScriptedEngineTest, DisconnectCutsTheStreamAfterNChunks) {
  v1::Run run = StartScripted(v1::RUN_MODE_REPLAY, "", R"(
rules:
  - name: cut
    times: 1
    disconnect: {after_chunks: 2}
default:
  respond: {content: "a b c d e"}
)");
  auto [status, chunks] = Stream(Call(run.id(), "a"), Ask("x"));
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable));
  ASSERT_THAT(chunks, SizeIs(2));
  EXPECT_EQ(chunks[0].content(), "a ");
  EXPECT_EQ(chunks[1].content(), "b ");
  // Next call: whole.
  auto [ok, all] = Stream(Call(run.id(), "a"), Ask("x"));
  EXPECT_THAT(ok, IsOk());
  EXPECT_THAT(all, SizeIs(6));

  std::vector<v1::TraceEvent> exchanges = OfKind(run.id(), "exchange");
  ASSERT_THAT(exchanges, SizeIs(2));
  EXPECT_EQ(Attr(exchanges[0], "understudy.disconnect.after_chunks"), "2");
  EXPECT_EQ(Attr(exchanges[0], "understudy.answer.source"), "default");
  EXPECT_EQ(Attr(exchanges[0], "understudy.rule.name"), "cut");
}

TEST_F(ScriptedEngineTest, UnaryDisconnectFailsAtOnce) {
  v1::Run run = StartScripted(v1::RUN_MODE_REPLAY, "", R"(
rules:
  - {name: cut, times: 1, disconnect: {after_chunks: 3}}
default:
  respond: {content: "fine"}
)");
  auto cut = Complete(Call(run.id(), "a"), Ask("x"));
  EXPECT_THAT(cut.status(), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(cut.status().message(), HasSubstr("disconnect"));
  EXPECT_EQ(Complete(Call(run.id(), "a"), Ask("x"))->message().content(), "fine");
}

// Scenarios whose delays and deadlines run on the real Env's timers.
class RealTimeScriptedEngineTest : public ScriptedEngineTest {
 protected:
  Env* EngineEnv() override { return Env::Default(); }
};

TEST_F(RealTimeScriptedEngineTest, DelayThenTheNextSourceAnswers) {
  RecordGolden();
  v1::Run run = StartScripted(v1::RUN_MODE_REPLAY, "golden", R"(
rules:
  - name: slow
    delay: {ms: 30}
)");
  const absl::Time before = absl::Now();
  auto r = Complete(Call(run.id(), "reviewer"), Ask("check"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->message().content(), "reviewer:1");
  EXPECT_GE(absl::Now() - before, absl::Milliseconds(30));
  std::vector<v1::TraceEvent> exchanges = OfKind(run.id(), "exchange");
  ASSERT_THAT(exchanges, SizeIs(1));
  EXPECT_EQ(Attr(exchanges[0], "understudy.answer.source"), "recording");
  EXPECT_EQ(Attr(exchanges[0], "understudy.delay_ms"), "30");
}

TEST_F(RealTimeScriptedEngineTest, HangEndsAtTheDeadlineOrWhenTheRunEnds) {
  v1::Run run = StartScripted(v1::RUN_MODE_REPLAY, "", "rules:\n  - {name: stall, hang: {}}\n");
  CallInfo call = Call(run.id(), "a");
  call.deadline = absl::Now() + absl::Milliseconds(50);
  EXPECT_THAT(Complete(call, Ask("x")).status(), StatusIs(absl::StatusCode::kDeadlineExceeded));

  // Without a deadline: held until the run ends.
  auto sink = std::make_shared<CollectingSink>();
  auto done = sink->done.get_future();
  engine_->StreamComplete(Call(run.id(), "a"), Ask("x"), sink);
  EXPECT_EQ(done.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  ASSERT_TRUE(engine_->EndRun(run.id()).ok());
  ASSERT_EQ(done.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_THAT(done.get(), StatusIs(absl::StatusCode::kCancelled));
}

TEST_F(ScriptedEngineTest, FromSessionServesAnotherRecording) {
  RecordGolden();
  v1::Run run = StartScripted(v1::RUN_MODE_REPLAY, "", R"(
rules:
  - name: pinned
    when: {agent: pinned}
    from_session: {session: golden, seq: 4}
  - name: in-order
    from_session: {session: golden@1}
)");
  EXPECT_EQ(Complete(Call(run.id(), "pinned"), Ask("anything"))->message().content(), "reviewer:1");
  EXPECT_EQ(Complete(Call(run.id(), "pinned"), Ask("again"))->message().content(), "reviewer:1");
  EXPECT_EQ(Complete(Call(run.id(), "x"), Ask("1"))->message().content(), "orchestrator:1");
  EXPECT_EQ(Complete(Call(run.id(), "x"), Ask("2"))->message().content(), "executor:1");

  v1::StartRunRequest bad;
  bad.set_mode(v1::RUN_MODE_REPLAY);
  bad.set_scenario_text(
      "schema: understudy.scenario/v1\ndefault: {from_session: {session: nowhere}}\n");
  auto refused = engine_->StartRun(bad);
  EXPECT_THAT(refused.status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(refused.status().message(), HasSubstr("nowhere"));
}

TEST_F(ScriptedEngineTest, AgentsAndExtractorsDriveTheRules) {
  // The executor → reviewer → executor loop, agents named by system prompt
  // only, phase from continue(phase).
  v1::Run run = StartScripted(v1::RUN_MODE_REPLAY, "", R"(
agents:
  - {name: executor, system_prompt: 'You are the executor'}
  - {name: reviewer, system_prompt: 'You are the reviewer'}
extractors:
  phase: {tool: continue, argument: phase}
  end: {tool: complete}
rules:
  - name: executor-first
    when: {agent: executor, iteration: 1}
    respond: {tool_calls: [{name: continue, arguments: {phase: review}}]}
  - name: reviewer-finds-hole
    when: {agent: reviewer, phase: review, previous_agent: executor}
    respond: {content: "SQL injection in login"}
  - name: executor-fixes
    when: {agent: executor, iteration: 2, message_contains: 'SQL injection', previous_tool_calls: [continue]}
    respond: {tool_calls: [{name: complete, arguments: {}}]}
)");
  auto as = [](const std::string& system, const std::string& user) {
    v1::CompletionRequest r;
    r.set_model("m");
    auto* s = r.add_messages();
    s->set_role("system");
    s->set_content(system);
    auto* u = r.add_messages();
    u->set_role("user");
    u->set_content(user);
    return r;
  };
  auto e1 = Complete(Call(run.id(), ""), as("You are the executor.", "build login"));
  ASSERT_TRUE(e1.ok()) << e1.status();
  EXPECT_EQ(e1->message().tool_calls(0).name(), "continue");
  auto r1 = Complete(Call(run.id(), ""), as("You are the reviewer.", "review login"));
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ(r1->message().content(), "SQL injection in login");
  auto e2 = Complete(Call(run.id(), ""),
                     as("You are the executor.", "Reviewer says: SQL injection in login"));
  ASSERT_TRUE(e2.ok()) << e2.status();
  EXPECT_EQ(e2->message().tool_calls(0).name(), "complete");

  std::vector<v1::TraceEvent> events = Events(run.id());
  std::vector<std::string> kinds;
  for (const auto& e : events) kinds.push_back(e.kind() + ":" + e.agent());
  EXPECT_THAT(kinds,
              ElementsAre("run_started:", "agent_execution:executor", "exchange:executor",
                          "tool_call:executor", "phase_transition:executor",
                          "agent_execution:reviewer", "exchange:reviewer",
                          "agent_execution:executor", "exchange:executor", "tool_call:executor",
                          "workflow_end:executor"));
  EXPECT_EQ(Attr(events[4], "understudy.phase.from"), "");
  EXPECT_EQ(Attr(events[4], "understudy.phase.to"), "review");
  // Each execution says where it came from.
  EXPECT_EQ(Attr(events[5], "understudy.previous_agent"), "executor");
  EXPECT_EQ(Attr(events[5], "understudy.phase"), "review");
  EXPECT_EQ(Attr(events[7], "understudy.agent.iteration"), "2");
}

TEST_F(ScriptedEngineTest, ToolResultsAreTracedOncePerRunThoughAgentsResendThem) {
  v1::Run run = StartScripted(v1::RUN_MODE_REPLAY, "", R"(
default:
  respond: {content: ok}
)");
  v1::CompletionRequest r;
  r.set_model("m");
  auto* u = r.add_messages();
  u->set_role("user");
  u->set_content("look it up");
  auto* a = r.add_messages();
  a->set_role("assistant");
  auto* call = a->add_tool_calls();
  call->set_id("call_1");
  call->set_name("search");
  call->set_arguments(R"({"q":"x"})");
  auto* t = r.add_messages();
  t->set_role("tool");
  t->set_tool_call_id("call_1");
  t->set_content("found x");
  ASSERT_TRUE(Complete(Call(run.id(), "finder"), r).ok());
  // The agent resends the conversation with one more turn.
  auto* u2 = r.add_messages();
  u2->set_role("user");
  u2->set_content("and y?");
  ASSERT_TRUE(Complete(Call(run.id(), "finder"), r).ok());

  std::vector<v1::TraceEvent> events = Events(run.id());
  std::vector<std::string> kinds;
  for (const auto& e : events) kinds.push_back(e.kind());
  EXPECT_THAT(kinds, ElementsAre("run_started", "agent_execution", "tool_result", "exchange",
                                 "exchange"));
  EXPECT_EQ(Attr(events[2], "gen_ai.tool.name"), "search");
  EXPECT_EQ(Attr(events[2], "gen_ai.tool.call.id"), "call_1");
  EXPECT_EQ(Attr(events[2], "gen_ai.tool.call.result"), "found x");
  EXPECT_EQ(events[2].agent(), "finder");
}

TEST_F(ScriptedEngineTest, ConcurrentRequestsNeverOveruseARule) {
  v1::Run run = StartScripted(v1::RUN_MODE_REPLAY, "", R"(
rules:
  - {name: five, times: 5, respond: {content: five}}
  - {name: ten, times: 10, respond: {content: ten}}
default:
  respond: {content: rest}
)");
  constexpr int kRequests = 32;
  std::vector<std::string> answers(kRequests);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      auto r = Complete(Call(run.id(), "a"), Ask(absl::StrCat("q", i)));
      answers[i] = r.ok() ? r->message().content() : r.status().ToString();
    });
  }
  for (auto& t : threads) t.join();
  std::map<std::string, int> counts;
  for (const auto& a : answers) ++counts[a];
  EXPECT_EQ(counts["five"], 5);
  EXPECT_EQ(counts["ten"], 10);
  EXPECT_EQ(counts["rest"], 17);
  std::set<std::string> iterations;
  for (const auto& e : OfKind(run.id(), "exchange")) {
    iterations.insert(Attr(e, "understudy.agent.iteration"));
  }
  EXPECT_THAT(iterations, SizeIs(kRequests));
  for (int i = 1; i <= kRequests; ++i) EXPECT_TRUE(iterations.count(absl::StrCat(i))) << i;
}

TEST_F(ScriptedEngineTest, PlaybookAnswersAndEndRunReportsWhatIsLeft) {
  v1::Run run = StartScripted(v1::RUN_MODE_REPLAY, "", R"(
playbook:
  turns:
    - when: 'make a plan'
      actions:
        - call: {tool: plan_propose, args: {goal: ship}}
        - say: {text: "Plan {{plan_id}} is ready."}
      capture:
        plan_id: {from_tool_result: plan_propose, regex: '(PLAN-[0-9a-f]+)'}
    - when: 'approve'
      actions:
        - say: {text: "Approved."}
)");
  v1::CompletionRequest request = Ask("make a plan");
  auto call = Complete(Call(run.id(), "planner"), request);
  ASSERT_TRUE(call.ok()) << call.status();
  ASSERT_EQ(call->message().tool_calls_size(), 1);
  EXPECT_EQ(call->message().tool_calls(0).name(), "plan_propose");
  *request.add_messages() = call->message();
  v1::Message* result = request.add_messages();
  result->set_role("tool");
  result->set_tool_call_id(call->message().tool_calls(0).id());
  result->set_content("created PLAN-4f2a");
  auto say = Complete(Call(run.id(), "planner"), request);
  ASSERT_TRUE(say.ok()) << say.status();
  EXPECT_EQ(say->message().content(), "Plan PLAN-4f2a is ready.");

  auto summary = engine_->EndRun(run.id());
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->run().state(), v1::RUN_STATE_FAILED);
  ASSERT_THAT(summary->failures(), SizeIs(1));
  EXPECT_THAT(summary->failures(0), HasSubstr("playbook not fully consumed: 1 action remaining"));
  EXPECT_EQ(OfKind(run.id(), "exchange")[0].attributes().at("understudy.answer.source"),
            "playbook");
}

TEST(ParseSessionRefTest, SplitsNameAndVersion) {
  auto a = ParseSessionRef("golden");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "golden");
  EXPECT_EQ(a->second, 0);
  auto b = ParseSessionRef("golden@3");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->second, 3);
  EXPECT_THAT(ParseSessionRef("golden@0"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseSessionRef("golden@"), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace engine
}  // namespace understudy
