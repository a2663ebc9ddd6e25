#include "cli/mcp_bridge.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_matchers.h"
#include "cli/mcp_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "provider/jsonrpc.h"
#include "service/http_server.h"
#include "upstream/http_upstream.h"

namespace understudy {
namespace cli {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using Json = nlohmann::json;
using namespace testing_util;  // NOLINT: the shared fakes of mcp_test_util.h

class StdioBridgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePython()) GTEST_SKIP() << kPython << " is needed for the fake MCP server";
  }

  std::unique_ptr<StdioBridge> Start(std::function<McpInitState()> init_state = nullptr) {
    StdioBridgeOptions options;
    options.command = FakeServerCommand();
    options.init_state = std::move(init_state);
    absl::StatusOr<std::unique_ptr<StdioBridge>> bridge = StdioBridge::Start(std::move(options));
    EXPECT_THAT(bridge, IsOk());
    if (!bridge.ok()) return nullptr;
    EXPECT_THAT((*bridge)->url(), StartsWith("http://127.0.0.1:"));
    return std::move(*bridge);
  }
};

TEST_F(StdioBridgeTest, RequestIsAnsweredWithItsNotificationsThenItsResponse) {
  std::unique_ptr<StdioBridge> bridge = Start();
  ASSERT_NE(bridge, nullptr);
  Client client(bridge->url());
  Response r = client.Post(ToolCall(5, "progress", "tok-5"));
  ASSERT_THAT(r.transport, IsOk());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("content-type"), "text/event-stream");
  std::vector<std::string> events = r.Events();
  ASSERT_EQ(events.size(), 4u) << r.body;
  EXPECT_EQ(Parse(events[0])["method"], "notifications/progress");
  EXPECT_EQ(Parse(events[0])["params"]["progressToken"], "tok-5");
  EXPECT_EQ(Parse(events[1])["params"]["progress"], 1);
  EXPECT_EQ(Parse(events[2])["method"], "notifications/message");
  EXPECT_EQ(Parse(events[3])["id"], 5);
  EXPECT_EQ(Parse(events[3])["result"]["arguments"]["n"], 5);
}

TEST_F(StdioBridgeTest, NotificationIsAccepted) {
  std::unique_ptr<StdioBridge> bridge = Start();
  ASSERT_NE(bridge, nullptr);
  Client client(bridge->url());
  Response r = client.Post(kInitialized);
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(r.body, "");
  // It reached the child, in order.
  r = client.Post(ToolCall(1, "echo"));
  ASSERT_EQ(r.Events().size(), 1u);
  EXPECT_EQ(Parse(r.Events()[0])["result"]["seen"],
            Json::parse(R"(["notifications/initialized","tools/call"])"));
  EXPECT_EQ(client.Start("GET", "")->Wait().status, 405);
  EXPECT_EQ(client.Start("DELETE", "")->Wait().status, 200);
  EXPECT_EQ(client.Post("[1]").status, 400);
}

TEST_F(StdioBridgeTest, ServerToClientRequestIsRefusedAtOnce) {
  std::unique_ptr<StdioBridge> bridge = Start();
  ASSERT_NE(bridge, nullptr);
  Client client(bridge->url());
  Response r = client.Post(ToolCall(2, "ask"));
  ASSERT_EQ(r.Events().size(), 1u) << r.body;
  const Json answer = Parse(r.Events()[0])["result"]["answer"];
  EXPECT_EQ(answer["id"], "srv-1");
  EXPECT_EQ(answer["error"]["code"], -32601);
  EXPECT_THAT(answer["error"]["message"].get<std::string>(),
              HasSubstr("does not relay server-to-client requests"));
}

TEST_F(StdioBridgeTest, ChildCrashingMidCallFailsEveryPendingAndLaterRequest) {
  std::unique_ptr<StdioBridge> bridge = Start();
  ASSERT_NE(bridge, nullptr);
  Client client(bridge->url());
  std::shared_ptr<Collector> hanging = client.Start("POST", ToolCall(1, "hang"));
  // The hang is pending once the child has seen it: an echo after it says so.
  Response echo = client.Post(ToolCall(2, "echo"));
  ASSERT_EQ(echo.Events().size(), 1u);
  Response crash = client.Post(ToolCall(3, "crash"));
  Response hung = hanging->Wait();
  for (const Response* r : {&crash, &hung}) {
    EXPECT_EQ(r->status, 502);
    const Json error = Parse(r->body)["error"];
    EXPECT_EQ(error["code"], provider::jsonrpc::kInternalError);
    EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("exited with status 3"));
    EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("python3"));
  }
  EXPECT_EQ(Parse(crash.body)["id"], 3);
  EXPECT_EQ(Parse(hung.body)["id"], 1);
  Response later = client.Post(ToolCall(4, "echo"));
  EXPECT_EQ(later.status, 502);
  EXPECT_THAT(later.body, HasSubstr("exited with status 3"));
}

TEST_F(StdioBridgeTest, FreshChildIsInitializedWithTheAgentsInitializeFirst) {
  std::unique_ptr<StdioBridge> bridge = Start([] {
    McpInitState state;
    state.initialize = kInitialize;
    state.initialized_sent = true;
    return state;
  });
  ASSERT_NE(bridge, nullptr);
  Client client(bridge->url());
  Response r = client.Post(ToolCall(9, "echo"));
  std::vector<std::string> events = r.Events();
  ASSERT_EQ(events.size(), 1u) << r.body;  // The initialize's answer is not relayed.
  EXPECT_EQ(Parse(events[0])["id"], 9);
  EXPECT_EQ(Parse(events[0])["result"]["seen"],
            Json::parse(R"(["initialize","notifications/initialized","tools/call"])"));
}

TEST_F(StdioBridgeTest, ChildWhoseFirstMessageIsInitializeIsNotInitializedTwice) {
  int asked = 0;
  std::unique_ptr<StdioBridge> bridge = Start([&asked] {
    ++asked;
    return McpInitState{kInitialize, true};
  });
  ASSERT_NE(bridge, nullptr);
  Client client(bridge->url());
  Response init = client.Post(kInitialize);
  ASSERT_EQ(init.Events().size(), 1u);
  EXPECT_EQ(Parse(init.Events()[0])["id"], 0);
  EXPECT_EQ(client.Post(kInitialized).status, 202);
  Response r = client.Post(ToolCall(1, "echo"));
  ASSERT_EQ(r.Events().size(), 1u);
  EXPECT_EQ(Parse(r.Events()[0])["result"]["seen"],
            Json::parse(R"(["initialize","notifications/initialized","tools/call"])"));
  EXPECT_EQ(asked, 0);
}

TEST_F(StdioBridgeTest, ShellCommandWithOptionLikeArgumentsWorks) {
  StdioBridgeOptions options;
  options.command = {"sh", "-c",
                     "while read l; do echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"via\":\"'$0'\"}}'; done",
                     "-sh-"};
  absl::StatusOr<std::unique_ptr<StdioBridge>> bridge = StdioBridge::Start(std::move(options));
  ASSERT_THAT(bridge, IsOk());
  Client client((*bridge)->url());
  Response r = client.Post(ToolCall(1, "x"));
  ASSERT_EQ(r.Events().size(), 1u) << r.body;
  EXPECT_EQ(Parse(r.Events()[0])["result"]["via"], "-sh-");
}

TEST_F(StdioBridgeTest, ShutdownAnswersPendingRequestsAndEndsTheChild) {
  std::unique_ptr<StdioBridge> bridge = Start();
  ASSERT_NE(bridge, nullptr);
  Client client(bridge->url());
  std::shared_ptr<Collector> hanging = client.Start("POST", ToolCall(1, "hang"));
  ASSERT_EQ(client.Post(ToolCall(2, "echo")).Events().size(), 1u);
  const pid_t pid = bridge->pid();
  bridge->Shutdown(absl::Seconds(2));
  Response hung = hanging->Wait();
  EXPECT_EQ(hung.status, 502);
  EXPECT_THAT(hung.body, HasSubstr("shutting down"));
  // Reaped: the pid is no child of ours any more.
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
}

}  // namespace
}  // namespace cli
}  // namespace understudy
