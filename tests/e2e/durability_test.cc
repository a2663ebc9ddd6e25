// The storage contract under a crash: an acknowledged recording is durable,
// so kill -9 loses nothing that was acknowledged, and a call is all or
// nothing.
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "tests/e2e/e2e_test_base.h"
#include "tests/e2e/sqlite_check.h"

namespace understudy {
namespace e2e {
namespace {

using ::testing::AnyOf;

constexpr int kWriters = 2;
constexpr int kBatch = 8;
// Bounds each writer's loop; the kill comes long before.
constexpr int kMaxCallsPerWriter = 100000;
// Acknowledged calls to wait for before the kill.
constexpr int kAcksBeforeKill = 30;

std::string Marker(int writer, int call, int item) {
  return absl::StrFormat("writer=%d call=%d item=%d", writer, call, item);
}

// One exchange, recognizable by its marker; padded so that a batch takes the
// writer thread some time to commit.
v1::Exchange MakeExchange(int writer, int call, int item) {
  v1::Exchange e;
  e.set_agent(absl::StrCat("writer-", writer));
  v1::CompletionRequest* request = e.mutable_request();
  request->set_model("fake-gpt-1");
  v1::Message* m = request->add_messages();
  m->set_role("user");
  m->set_content(absl::StrCat(Marker(writer, call, item), " ", std::string(2048, 'x')));
  v1::CompletionResponse* response = e.mutable_response();
  response->set_id(absl::StrCat("resp-", writer, "-", call, "-", item));
  response->mutable_message()->set_role("assistant");
  response->mutable_message()->set_content(absl::StrCat("ack ", Marker(writer, call, item)));
  response->set_finish_reason("stop");
  return e;
}

struct Ack {
  int writer;
  int call;
  v1::RecordExchangesResponse response;
};

// Writers append their acknowledged calls here; the test waits on it.
class AckLog {
 public:
  void Add(Ack ack) {
    absl::MutexLock lock(&mu_);
    acks_.push_back(std::move(ack));
  }
  // True once `n` acks arrived, false at the deadline.
  bool AwaitAtLeast(size_t n, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return acks_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }
  std::vector<Ack> Snapshot() {
    absl::MutexLock lock(&mu_);
    return acks_;
  }

 private:
  absl::Mutex mu_;
  std::vector<Ack> acks_ ABSL_GUARDED_BY(mu_);
};

class DurabilityTest : public E2eTest {};

TEST_F(DurabilityTest, KillNineDuringRecordExchangesLosesNothingAcknowledged) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  AckLog log;
  std::vector<absl::Status> ended(kWriters);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      Clients c(server->NewChannel());
      for (int call = 0; call < kMaxCallsPerWriter; ++call) {
        std::vector<v1::Exchange> batch;
        for (int item = 0; item < kBatch; ++item) batch.push_back(MakeExchange(w, call, item));
        absl::StatusOr<v1::RecordExchangesResponse> r = RecordExchanges(c, "crash", batch);
        if (!r.ok()) {
          ended[w] = r.status();
          return;
        }
        log.Add(Ack{w, call, *r});
      }
    });
  }
  const bool enough = log.AwaitAtLeast(kAcksBeforeKill, absl::Seconds(60));
  const absl::Status killed = server->Kill9();
  // Joined before any assertion can return: every writer call has a
  // deadline, and the crash ends them all.
  for (std::thread& t : writers) t.join();
  ASSERT_OK(killed);
  ASSERT_TRUE(enough) << "fewer than " << kAcksBeforeKill << " calls acknowledged in 60 s";
  for (int w = 0; w < kWriters; ++w) {
    // Every writer was cut off by the crash, not by a refusal.
    EXPECT_THAT(ended[w].code(), AnyOf(absl::StatusCode::kUnavailable, absl::StatusCode::kCancelled,
                                       absl::StatusCode::kInternal))
        << "writer " << w << ": " << ended[w];
  }
  const std::vector<Ack> acks = log.Snapshot();

  ASSERT_OK_AND_ASSIGN(std::string integrity, IntegrityCheck(db_path()));
  EXPECT_EQ(integrity, "ok");

  ASSERT_OK_AND_ASSIGN(server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::GetSessionResponse session, GetSession(c, "crash", 0, true));
  const auto& exchanges = session.exchanges();
  EXPECT_EQ(session.session().exchange_count(), exchanges.size());

  // Seqs are 1..N without gaps, in whole batches: no call was half-stored.
  for (int i = 0; i < exchanges.size(); ++i) ASSERT_EQ(exchanges[i].seq(), i + 1);
  ASSERT_EQ(exchanges.size() % kBatch, 0) << "a partial batch was stored";
  std::map<std::pair<int, int>, int64_t> stored_first_seq;  // (writer, call) -> first seq
  for (int start = 0; start < exchanges.size(); start += kBatch) {
    int writer = -1, call = -1, item = -1;
    ASSERT_EQ(std::sscanf(exchanges[start].request().messages(0).content().c_str(),
                          "writer=%d call=%d item=%d", &writer, &call, &item),
              3);
    for (int i = 0; i < kBatch; ++i) {
      const v1::Exchange& e = exchanges[start + i];
      const v1::Exchange want = MakeExchange(writer, call, i);
      ASSERT_EQ(e.agent(), want.agent()) << "seq " << e.seq();
      ASSERT_EQ(e.request().SerializeAsString(), want.request().SerializeAsString())
          << "seq " << e.seq() << " is not item " << i << " of writer " << writer << " call "
          << call;
      ASSERT_EQ(e.response().SerializeAsString(), want.response().SerializeAsString())
          << "seq " << e.seq();
    }
    ASSERT_TRUE(stored_first_seq.emplace(std::make_pair(writer, call), start + 1).second)
        << "writer " << writer << " call " << call << " stored twice";
  }

  // Every acknowledged call is there, where its acknowledgement said.
  std::vector<int> acked_per_writer(kWriters, 0);
  for (const Ack& ack : acks) {
    SCOPED_TRACE(absl::StrCat("writer ", ack.writer, " call ", ack.call));
    auto it = stored_first_seq.find({ack.writer, ack.call});
    ASSERT_NE(it, stored_first_seq.end()) << "an acknowledged call was lost";
    EXPECT_EQ(ack.response.committed(), kBatch);
    EXPECT_EQ(ack.response.first_seq(), it->second);
    EXPECT_EQ(ack.response.last_seq(), it->second + kBatch - 1);
    EXPECT_EQ(ack.response.version(), session.session().version());
    ++acked_per_writer[ack.writer];
  }
  // Beyond the acknowledged calls, at most the one each writer had in flight
  // may have been committed before the kill.
  for (const auto& [key, seq] : stored_first_seq) {
    EXPECT_LE(key.second, acked_per_writer[key.first])
        << "writer " << key.first << " call " << key.second << " was never sent";
  }
  EXPECT_LE(stored_first_seq.size(), acks.size() + kWriters);

  // The crashed session is still open for appends.
  EXPECT_EQ(session.session().state(), v1::SESSION_STATE_OPEN);
  ASSERT_OK_AND_ASSIGN(v1::RecordExchangesResponse more,
                       RecordExchanges(c, "crash", {MakeExchange(9, 0, 0)}, /*close=*/true));
  EXPECT_EQ(more.first_seq(), exchanges.size() + 1);
  c.Disconnect();
  EXPECT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
  ASSERT_OK_AND_ASSIGN(integrity, IntegrityCheck(db_path()));
  EXPECT_EQ(integrity, "ok");
}

}  // namespace
}  // namespace e2e
}  // namespace understudy
