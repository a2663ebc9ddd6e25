// A store, an engine on it and one active replay run that answers every
// request "ok": what service tests that watch or serve a run's events start
// from (event_feed_test, ui_api_test).
#ifndef UNDERSTUDY_SERVICE_RUN_FIXTURE_TEST_UTIL_H_
#define UNDERSTUDY_SERVICE_RUN_FIXTURE_TEST_UTIL_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "engine/engine.h"
#include "gtest/gtest.h"
#include "store/store.h"
#include "store/test_util.h"

namespace understudy {
namespace service {

class RunFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions so;
    so.path = dir_.File("test.db");
    absl::StatusOr<std::unique_ptr<store::Store>> s = store::Store::Open(so);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = *std::move(s);
    engine::EngineOptions eo;
    eo.store = store_.get();
    absl::StatusOr<std::unique_ptr<engine::Engine>> e = engine::Engine::Create(std::move(eo));
    ASSERT_TRUE(e.ok()) << e.status();
    engine_ = *std::move(e);
    v1::StartRunRequest start;
    start.set_mode(v1::RUN_MODE_REPLAY);
    start.set_scenario_text("schema: understudy.scenario/v1\ndefault: {respond: {content: ok}}\n");
    absl::StatusOr<v1::Run> run = engine_->StartRun(start);
    ASSERT_TRUE(run.ok()) << run.status();
    run_ = run->id();
  }

  store::ScopedTempDir dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<engine::Engine> engine_;
  std::string run_;  // the active run's id
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_RUN_FIXTURE_TEST_UTIL_H_
