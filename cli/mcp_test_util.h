// What the tests of `understudy mcp-proxy`'s pieces share: a fake stdio MCP
// server (Python), MCP messages, and a blocking HTTP client for the
// bridge's and the fake understudy's endpoints. Test-only.
#ifndef UNDERSTUDY_CLI_MCP_TEST_UTIL_H_
#define UNDERSTUDY_CLI_MCP_TEST_UTIL_H_

#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "provider/sse.h"
#include "upstream/http_upstream.h"

namespace understudy {
namespace cli {
namespace testing_util {

using Json = nlohmann::json;

// Every wait in these tests is bounded by this; a healthy run takes
// milliseconds.
inline constexpr absl::Duration kWait = absl::Seconds(10);
inline constexpr char kPython[] = "/usr/bin/python3";

// Polls `condition` until it holds (true) or `timeout` passes (false).
inline bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout = kWait) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
}

// A stdio MCP server for the bridge to run. Answers initialize; tools/call
// by the tool's name: "echo" answers its arguments and every method it has
// seen so far; "progress" first sends two notifications/progress for the
// request's progress token and a notifications/message; "ask" sends a
// roots/list request to the client and answers with what came back; "hang"
// never answers; "crash" exits with status 3.
inline constexpr char kFakeServer[] = R"PY(
import json, sys
seen = []
def send(o):
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()
while True:
    line = sys.stdin.readline()
    if not line:
        break
    if not line.strip():
        continue
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    seen.append(method if method else "response")
    if method is None or "id" not in m:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-06-18",
              "capabilities": {}, "serverInfo": {"name": "fake", "version": "1"}}})
        continue
    if method != "tools/call":
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no " + method}})
        continue
    params = m.get("params", {})
    name = params.get("name")
    token = params.get("_meta", {}).get("progressToken")
    if name == "crash":
        sys.exit(3)
    if name == "hang":
        continue
    if name == "progress":
        for i in range(2):
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": token, "progress": i}})
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "data": "working"}})
    if name == "ask":
        send({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"})
        answer = json.loads(sys.stdin.readline())
        send({"jsonrpc": "2.0", "id": mid, "result": {"answer": answer}})
        continue
    send({"jsonrpc": "2.0", "id": mid, "result": {"arguments": params.get("arguments"),
          "seen": seen}})
)PY";

inline std::vector<std::string> FakeServerCommand() { return {kPython, "-u", "-c", kFakeServer}; }

inline bool HavePython() { return ::access(kPython, X_OK) == 0; }

// One whole HTTP response, as a client saw it.
struct Response {
  absl::Status transport;
  int status = 0;
  upstream::UpstreamHttpHeaders headers;
  std::string body;

  std::string Header(absl::string_view name) const {
    for (const auto& [k, v] : headers) {
      if (k == name) return v;
    }
    return "";
  }
  std::vector<std::string> Events() const {
    std::vector<std::string> events;
    absl::StatusOr<std::vector<provider::SseEvent>> parsed = provider::ParseSse(body);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    if (!parsed.ok()) return events;
    for (provider::SseEvent& event : *parsed) events.push_back(std::move(event.data));
    return events;
  }
};

class Collector final : public upstream::UpstreamHttpObserver {
 public:
  void OnHead(int status, upstream::UpstreamHttpHeaders headers) override {
    response_.status = status;
    response_.headers = std::move(headers);
  }
  void OnData(absl::string_view bytes) override {
    response_.body.append(bytes.data(), bytes.size());
  }
  void OnDone(absl::Status status) override {
    response_.transport = std::move(status);
    done_.Notify();
  }
  Response Wait() {
    if (!done_.WaitForNotificationWithTimeout(kWait)) {
      ADD_FAILURE() << "no response within the deadline";
      Response r;
      r.transport = absl::DeadlineExceededError("test deadline");
      return r;
    }
    return response_;
  }

 private:
  Response response_;
  absl::Notification done_;
};

// A blocking HTTP client for one base URL.
class Client {
 public:
  explicit Client(const std::string& url) {
    // "http://127.0.0.1:PORT/path" → base and path.
    const size_t slash = url.find('/', url.find("://") + 3);
    upstream::HttpUpstream::Options options;
    options.base_url = url.substr(0, slash);
    path_ = slash == std::string::npos ? "/" : url.substr(slash);
    http_ = std::move(*upstream::HttpUpstream::Create(options));
  }

  std::shared_ptr<Collector> Start(const std::string& method, std::string body) {
    upstream::UpstreamHttpRequest request;
    request.method = method;
    request.path = path_;
    request.headers = {{"content-type", "application/json"}};
    request.body = std::move(body);
    auto collector = std::make_shared<Collector>();
    http_->Send(std::move(request), collector);
    return collector;
  }
  Response Post(std::string body) { return Start("POST", std::move(body))->Wait(); }

 private:
  std::string path_;
  std::unique_ptr<upstream::HttpUpstream> http_;
};

inline std::string ToolCall(int id, const std::string& tool,
                            const std::string& progress_token = "") {
  Json m = {{"jsonrpc", "2.0"},
            {"id", id},
            {"method", "tools/call"},
            {"params", {{"name", tool}, {"arguments", {{"n", id}}}}}};
  if (!progress_token.empty()) m["params"]["_meta"]["progressToken"] = progress_token;
  return m.dump();
}

inline constexpr char kInitialize[] =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}})";
inline constexpr char kInitialized[] = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";

inline Json Parse(const std::string& text) {
  Json j = Json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << text;
  return j;
}

}  // namespace testing_util
}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_MCP_TEST_UTIL_H_
