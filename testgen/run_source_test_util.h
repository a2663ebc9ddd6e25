// The database the run_source tests read: two versions of session
// "golden", three runs and a session no run used (below). For
// testgen/run_source_test.cc and, through a real server,
// tests/e2e/run_source_server_test.cc.
#ifndef UNDERSTUDY_TESTGEN_RUN_SOURCE_TEST_UTIL_H_
#define UNDERSTUDY_TESTGEN_RUN_SOURCE_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "store/store.h"
#include "store/test_util.h"
#include "testgen/run_source.h"

namespace understudy {
namespace testgen {

// A database holding two versions of session "golden" and three runs:
//   run-b  golden@1, started at 100, ended, with a summary
//   run-a  golden@2, started at 200 (the latest: ids do not order runs)
//   solo   no session, started at 300, still active
// and session "unused", which no run used. Each run's trace has three
// events whose kinds name the run.
class RunSourceTest : public ::testing::Test {
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
    AddRun("run-b", "golden", 1, 100, v1::RUN_STATE_ENDED);
    AddRun("run-a", "golden", 2, 200, v1::RUN_STATE_ENDED);
    AddRun("solo", "", 0, 300, v1::RUN_STATE_ACTIVE);
    v1::RunSummary summary;
    ASSERT_THAT(store_->GetRun("run-b"), IsOk());
    *summary.mutable_run() = *store_->GetRun("run-b");
    summary.add_unconsumed()->set_seq(4);
    ASSERT_THAT(store_->SaveRunSummary(summary), IsOk());
    ASSERT_THAT(store_->Flush(), IsOk());
  }

  void AddRun(const std::string& id, const std::string& session, int64_t version,
              int64_t started, v1::RunState state) {
    v1::Run run;
    run.set_id(id);
    run.set_session(session);
    run.set_session_version(version);
    run.set_mode(v1::RUN_MODE_REPLAY);
    run.set_state(state);
    run.set_started_at_micros(started);
    ASSERT_THAT(store_->SaveRun(run), IsOk());
    std::vector<v1::TraceEvent> events;
    for (const char* kind : {"run_started", "exchange", "run_ended"}) {
      v1::TraceEvent& e = events.emplace_back();
      e.set_run(id);
      e.set_seq(static_cast<int64_t>(events.size()));
      e.set_kind(kind);
      e.set_agent(id);  // names the run in assertions below
    }
    store_->AppendEvents(std::move(events));
  }

  static std::vector<std::string> Agents(const RunData& run) {
    std::vector<std::string> agents;
    for (const v1::TraceEvent& e : run.events) {
      agents.push_back(absl::StrCat(e.seq(), " ", e.kind(), " ", e.agent()));
    }
    return agents;
  }

  store::ScopedTempDir dir_;
  std::unique_ptr<store::Store> store_;
};

}  // namespace testgen
}  // namespace understudy

#endif  // UNDERSTUDY_TESTGEN_RUN_SOURCE_TEST_UTIL_H_
