// The provider HTTP API (service/http_api.h) as a hostile client reaches it:
// any method, target, headers and body, routed to a real engine over a real
// store (in a temporary directory) whose default run is scripted. Every
// request gets exactly one answer, never a crash.
//
// Input: METHOD "\n" TARGET "\n" header lines ("name: value") "\n\n" BODY.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "engine/engine.h"
#include "fuzz/fuzz_util.h"
#include "scenario/script.h"
#include "service/http_api.h"
#include "store/store.h"

namespace {

using understudy::service::HttpHeaders;
using understudy::service::HttpResponder;
using understudy::service::HttpSource;

// Records how the request was answered.
class Recorder final : public HttpResponder {
 public:
  void Respond(int status, HttpHeaders, std::string) override { Answer(status); }
  void StartStream(int status, HttpHeaders) override { Answer(status); }
  void Write(std::string, absl::Time) override {}
  // Renders the whole stream, as a client reading it would make it.
  void WriteFrom(std::shared_ptr<HttpSource> source) override {
    while (source->Next().has_value()) {
    }
  }
  void End() override {}
  void Abort() override { Answer(-1); }
  bool cancelled() const override { return false; }
  void OnCancel(std::function<void()>) override {}

  int answers() {
    absl::MutexLock lock(&mu_);
    return answers_;
  }

 private:
  void Answer(int status) {
    absl::MutexLock lock(&mu_);
    ++answers_;
    FUZZ_CHECK(status == -1 || (status >= 200 && status <= 599), "a real HTTP status");
  }
  absl::Mutex mu_;
  int answers_ = 0;
};

struct World {
  std::unique_ptr<understudy::store::Store> store;
  std::unique_ptr<understudy::engine::Engine> engine;
  std::unique_ptr<understudy::service::McpApi> mcp;
  std::unique_ptr<understudy::service::HttpApi> api;
};

World* MakeWorld() {
  using namespace understudy;
  char dir[] = "/tmp/understudy-fuzz-XXXXXX";
  FUZZ_CHECK(::mkdtemp(dir) != nullptr, "a temporary directory");
  auto* world = new World;
  store::StoreOptions store_options;
  store_options.path = std::string(dir) + "/fuzz.db";
  auto store = store::Store::Open(store_options);
  FUZZ_CHECK(store.ok(), "the store opens");
  world->store = *std::move(store);
  engine::EngineOptions engine_options;
  engine_options.store = world->store.get();
  auto script = scenario::Script::Load("", R"(schema: understudy.scenario/v1
agents:
  - {name: reviewer, system_prompt: '^You review'}
extractors:
  phase: {tool: continue, argument: phase}
rules:
  - name: tools
    when: {agent: executor}
    respond: {content: "", tool_calls: [{name: continue, arguments: {phase: review}}]}
  - name: throttled
    when: {message_contains: 'slow'}
    error: {http_status: 429, message: slow down, retry_after_seconds: 1}
  - name: tool-error
    when: {tool: 'write_.*', tool_arguments: {path: /etc}}
    error: {message: denied}
mock_tools:
  search: {template: "found {{query}}"}
  weather: {result: {temp: 21}}
default:
  respond: {content: "fuzzed"}
)");
  FUZZ_CHECK(script.ok(), "the scenario loads");
  engine_options.scenario = *script;
  auto engine = engine::Engine::Create(engine_options);
  FUZZ_CHECK(engine.ok(), "the engine starts");
  world->engine = *std::move(engine);
  v1::StartRunRequest start;
  start.set_mode(v1::RUN_MODE_REPLAY);
  start.set_run_id("fuzz");
  auto run = world->engine->StartRun(start);
  FUZZ_CHECK(run.ok(), "the default run starts");
  world->engine->SetDefaultRun(run->id());
  service::HttpApiOptions api_options;
  api_options.engine = world->engine.get();
  service::McpApiOptions mcp_options;
  mcp_options.engine = world->engine.get();
  world->mcp = std::make_unique<service::McpApi>(mcp_options);
  api_options.mcp = world->mcp.get();
  world->api = std::make_unique<service::HttpApi>(api_options);
  return world;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  static World* const world = MakeWorld();
  const absl::string_view input = fuzz::View(data, size);
  std::vector<absl::string_view> head_body = fuzz::Split(input, "\n\n", 2);
  std::vector<absl::string_view> lines = fuzz::Split(head_body[0], "\n", 64);
  service::HttpRequest request;
  request.method = std::string(lines[0]);
  request.target = lines.size() > 1 ? std::string(lines[1]) : "/v1/chat/completions";
  for (size_t i = 2; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos) continue;
    request.headers.emplace_back(absl::AsciiStrToLower(lines[i].substr(0, colon)),
                                 std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1))));
  }
  if (head_body.size() > 1) request.body = std::string(head_body[1]);
  auto out = std::make_shared<Recorder>();
  world->api->Handle(std::move(request), out);
  FUZZ_CHECK(out->answers() == 1, "exactly one answer, at once (the scenario has no delays)");
  return 0;
}
