#include "replayer/engine.h"

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/test_util.h"

namespace understudy {
namespace replayer {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// A scripted upstream: answers each request with the text "<agent>:<n>"
// (n counts this agent's calls), or with the next queued error.
class FakeUpstream final : public recorder::ModelUpstream {
 public:
  void Complete(const recorder::UpstreamCall& call, const v1::CompletionRequest& request,
                std::function<void(absl::StatusOr<v1::CompletionResponse>)> done) override {
    absl::Status error = NextError();
    if (!error.ok()) return done(error);
    done(Answer(call, request));
  }

  void StreamComplete(const recorder::UpstreamCall& call, const v1::CompletionRequest& request,
                      std::function<void(const v1::CompletionChunk&)> on_chunk,
                      std::function<void(absl::Status)> on_done) override {
    absl::Status error = NextError();
    if (!error.ok()) return on_done(error);
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

  v1::CompletionResponse Answer(const recorder::UpstreamCall& call,
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
    times.push_back(not_before);
  }
  void OnFinish(absl::Status status) override { done.set_value(std::move(status)); }
  std::vector<v1::CompletionChunk> chunks;
  std::vector<absl::Time> times;
  std::promise<absl::Status> done;
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
    eo.clock = &clock_;
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

  std::vector<v1::TraceEvent> Events(const std::string& run) {
    EXPECT_THAT(store_->Flush(), IsOk());
    store::EventQuery q;
    q.run = run;
    auto page = store_->QueryEvents(q);
    EXPECT_TRUE(page.ok()) << page.status();
    return page.ok() ? page->events : std::vector<v1::TraceEvent>{};
  }

  store::ScopedTempDir dir_;
  FakeClock clock_;
  FakeUpstream upstream_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Engine> engine_;
};

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
  EXPECT_THAT(kinds, ElementsAre("run_started", "miss", "run_ended"));
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
  ASSERT_THAT(events, SizeIs(22));
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
  EXPECT_EQ(events.front().kind(), "run_started");
  EXPECT_EQ(events.back().kind(), "run_ended");
  EXPECT_EQ(events[1].attributes().at("understudy.answer.source"), "recording");
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
  ASSERT_NE(decision->forward, nullptr);
  EXPECT_EQ(decision->recorded, nullptr);
  v1::Exchange ex;
  ex.mutable_native()->set_provider("openai");
  ex.mutable_native()->set_status(200);
  auto* chunk = ex.mutable_native()->add_chunks();
  chunk->set_data("data: {\"x\":1}\n\n");
  chunk->set_offset_micros(1500);
  ex.mutable_response()->mutable_message()->set_content("hello");
  std::promise<absl::Status> committed;
  engine_->FinishForward(std::move(decision->forward), ex, absl::OkStatus(),
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
    ASSERT_NE(decision->forward, nullptr);
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
  eo.clock = &clock_;
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
}  // namespace replayer
}  // namespace understudy
