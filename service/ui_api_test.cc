// UiApi in-process, through a recording responder: what the end-to-end test
// (tests/e2e/ui_api_test.cc) cannot wait for or reach from outside — the
// keepalive comments of a quiet watch, and shutdown ending open watches.
#include "service/ui_api.h"

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/status_matchers.h"
#include "engine/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/run_fixture_test_util.h"
#include "store/store.h"

namespace understudy {
namespace service {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Keeps what the API answered. Thread-safe.
class RecordingResponder : public HttpResponder {
 public:
  void Respond(int status, HttpHeaders headers, std::string body) override {
    absl::MutexLock lock(&mu_);
    status_ = status;
    body_ = std::move(body);
    done_ = true;
  }
  void StartStream(int status, HttpHeaders headers) override {
    absl::MutexLock lock(&mu_);
    status_ = status;
    headers_ = std::move(headers);
  }
  void Write(std::string data, absl::Time) override {
    absl::MutexLock lock(&mu_);
    if (!done_) body_ += data;
  }
  void WriteFrom(std::shared_ptr<HttpSource> source) override {
    absl::MutexLock lock(&mu_);
    while (std::optional<HttpPiece> piece = source->Next()) {
      std::visit([this](const auto& bytes) { body_.append(bytes.data(), bytes.size()); },
                 piece->bytes);
    }
  }
  void End() override {
    absl::MutexLock lock(&mu_);
    done_ = true;
  }
  void Abort() override { End(); }
  bool cancelled() const override { return false; }
  void OnCancel(std::function<void()>) override {}

  // Waits until `body` contains `text` (true) or `timeout` passes.
  bool WaitForText(const std::string& text, absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto has = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return body_.find(text) != std::string::npos;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&has), timeout);
  }
  // Waits until the answer is complete (true) or `timeout` passes.
  bool WaitForDone(absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&done_), timeout);
  }
  int status() {
    absl::MutexLock lock(&mu_);
    return status_;
  }
  std::string body() {
    absl::MutexLock lock(&mu_);
    return body_;
  }

 private:
  mutable absl::Mutex mu_;
  int status_ ABSL_GUARDED_BY(mu_) = 0;
  HttpHeaders headers_ ABSL_GUARDED_BY(mu_);
  std::string body_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

class UiApiTest : public RunFixture {
 protected:
  std::unique_ptr<UiApi> MakeApi(absl::Duration keepalive) {
    UiApiOptions options;
    options.engine = engine_.get();
    options.store = store_.get();
    options.watch.keepalive = keepalive;
    return std::make_unique<UiApi>(options);
  }

  std::shared_ptr<RecordingResponder> Get(UiApi& api, const std::string& target) {
    auto out = std::make_shared<RecordingResponder>();
    HttpRequest request;
    request.method = "GET";
    request.target = target;
    api.Handle(std::move(request), out);
    return out;
  }

};

TEST_F(UiApiTest, AQuietWatchGetsKeepaliveComments) {
  std::unique_ptr<UiApi> api = MakeApi(absl::Milliseconds(20));
  std::shared_ptr<RecordingResponder> watch = Get(*api, "/api/v1/runs/" + run_ + "/watch");
  ASSERT_TRUE(watch->WaitForText("id: 1\nevent: trace\n")) << watch->body();
  ASSERT_TRUE(watch->WaitForText(": keepalive\n\n")) << watch->body();
  EXPECT_EQ(watch->status(), 200);
  // The run ends: the end event, and the stream is complete.
  ASSERT_THAT(engine_->EndRun(run_).status(), IsOk());
  ASSERT_TRUE(watch->WaitForText("event: end\ndata: {}\n\n")) << watch->body();
  EXPECT_TRUE(watch->WaitForDone());
}

TEST_F(UiApiTest, ShutdownEndsOpenWatchesAndRefusesNewRequests) {
  std::unique_ptr<UiApi> api = MakeApi(absl::Seconds(15));
  std::shared_ptr<RecordingResponder> watch = Get(*api, "/api/v1/runs/" + run_ + "/watch");
  ASSERT_TRUE(watch->WaitForText("id: 1\n")) << watch->body();
  api->Shutdown();
  EXPECT_TRUE(watch->WaitForDone(absl::Seconds(0)));
  // Ended by shutdown, not by the run: no end event.
  EXPECT_THAT(watch->body(), Not(HasSubstr("event: end")));
  std::shared_ptr<RecordingResponder> late = Get(*api, "/api/v1/sessions");
  EXPECT_TRUE(late->WaitForDone());
  EXPECT_EQ(late->status(), 503);
  EXPECT_THAT(late->body(), HasSubstr("shutting down"));
  // The run itself goes on.
  EXPECT_THAT(engine_->GetRun(run_).status(), IsOk());
}

TEST_F(UiApiTest, ServesOnlyItsOwnTargets) {
  EXPECT_TRUE(UiApi::Serves("/ui"));
  EXPECT_TRUE(UiApi::Serves("/ui/"));
  EXPECT_TRUE(UiApi::Serves("/ui?x=1"));
  EXPECT_TRUE(UiApi::Serves("/ui/app.js"));
  EXPECT_TRUE(UiApi::Serves("/api/v1"));
  EXPECT_TRUE(UiApi::Serves("/api/v1/runs/x/watch?after_seq=2"));
  EXPECT_FALSE(UiApi::Serves("/uix"));
  EXPECT_FALSE(UiApi::Serves("/api/v10/runs"));
  EXPECT_FALSE(UiApi::Serves("/run/r1/ui"));
  EXPECT_FALSE(UiApi::Serves("/v1/chat/completions"));
}

}  // namespace
}  // namespace service
}  // namespace understudy
