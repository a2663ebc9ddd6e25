#include "tests/e2e/e2e_test_base.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace understudy {
namespace e2e {

absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

Clients::Clients(std::shared_ptr<grpc::Channel> ch)
    : channel(std::move(ch)),
      model(v1::Model::NewStub(channel)),
      runs(v1::Runs::NewStub(channel)),
      recorder(v1::Recorder::NewStub(channel)),
      sessions(v1::Sessions::NewStub(channel)),
      traces(v1::Traces::NewStub(channel)) {}

void Clients::Disconnect() {
  model.reset();
  runs.reset();
  recorder.reset();
  sessions.reset();
  traces.reset();
  channel.reset();
}

std::unique_ptr<grpc::ClientContext> CallContext(absl::string_view run, absl::string_view agent,
                                                 absl::Duration timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  if (!run.empty()) context->AddMetadata("understudy-run", std::string(run));
  if (!agent.empty()) context->AddMetadata("understudy-agent", std::string(agent));
  return context;
}

absl::StatusOr<v1::Run> StartRun(Clients& c, const std::string& session, v1::RunMode mode,
                                 std::optional<bool> strict, const std::string& run_id) {
  v1::StartRunRequest request;
  request.set_session(session);
  request.set_mode(mode);
  if (strict.has_value()) request.set_strict(*strict);
  request.set_run_id(run_id);
  return StartRun(c, request);
}

absl::StatusOr<v1::Run> StartRun(Clients& c, const v1::StartRunRequest& request) {
  v1::Run run;
  auto context = CallContext();
  grpc::Status s = c.runs->StartRun(context.get(), request, &run);
  if (!s.ok()) return FromGrpc(s);
  return run;
}

absl::StatusOr<v1::RunSummary> EndRun(Clients& c, const std::string& run) {
  v1::EndRunRequest request;
  request.set_run(run);
  v1::RunSummary summary;
  auto context = CallContext();
  grpc::Status s = c.runs->EndRun(context.get(), request, &summary);
  if (!s.ok()) return FromGrpc(s);
  return summary;
}

absl::StatusOr<v1::CompletionResponse> Complete(Clients& c, const std::string& run,
                                                const std::string& agent,
                                                const v1::CompletionRequest& request) {
  v1::CompletionResponse response;
  auto context = CallContext(run, agent);
  grpc::Status s = c.model->Complete(context.get(), request, &response);
  if (!s.ok()) return FromGrpc(s);
  return response;
}

absl::StatusOr<std::vector<v1::CompletionChunk>> StreamComplete(
    Clients& c, const std::string& run, const std::string& agent,
    const v1::CompletionRequest& request) {
  auto context = CallContext(run, agent);
  std::unique_ptr<grpc::ClientReader<v1::CompletionChunk>> reader =
      c.model->StreamComplete(context.get(), request);
  std::vector<v1::CompletionChunk> chunks;
  v1::CompletionChunk chunk;
  // Bounded by the context's deadline.
  while (reader->Read(&chunk)) chunks.push_back(chunk);
  grpc::Status s = reader->Finish();
  if (!s.ok()) return FromGrpc(s);
  return chunks;
}

absl::StatusOr<std::vector<v1::TraceEvent>> QueryTrace(Clients& c, const std::string& run,
                                                       const std::vector<std::string>& kinds,
                                                       const std::string& agent) {
  std::vector<v1::TraceEvent> events;
  v1::QueryRequest request;
  request.set_run(run);
  for (const std::string& k : kinds) request.add_kinds(k);
  request.set_agent(agent);
  // Bounded: a trace in these tests has far fewer than 100 pages.
  for (int page = 0; page < 100; ++page) {
    v1::QueryResponse response;
    auto context = CallContext();
    grpc::Status s = c.traces->Query(context.get(), request, &response);
    if (!s.ok()) return FromGrpc(s);
    for (const v1::TraceEvent& e : response.events()) events.push_back(e);
    if (response.next_after_seq() == 0) return events;
    request.set_after_seq(response.next_after_seq());
  }
  return absl::OutOfRangeError("trace has more than 100 pages");
}

absl::StatusOr<v1::GetSessionResponse> GetSession(Clients& c, const std::string& name,
                                                  int64_t version, bool include_exchanges) {
  v1::GetSessionRequest request;
  request.set_name(name);
  request.set_version(version);
  request.set_include_exchanges(include_exchanges);
  v1::GetSessionResponse response;
  auto context = CallContext();
  grpc::Status s = c.sessions->GetSession(context.get(), request, &response);
  if (!s.ok()) return FromGrpc(s);
  return response;
}

absl::StatusOr<std::string> ExportSession(Clients& c, const std::string& name, int64_t version) {
  v1::ExportSessionRequest request;
  request.set_name(name);
  request.set_version(version);
  v1::ExportSessionResponse response;
  auto context = CallContext();
  grpc::Status s = c.sessions->ExportSession(context.get(), request, &response);
  if (!s.ok()) return FromGrpc(s);
  return response.jsonl();
}

absl::StatusOr<v1::RecordExchangesResponse> RecordExchanges(
    Clients& c, const std::string& session, const std::vector<v1::Exchange>& exchanges, bool close,
    absl::Duration timeout) {
  auto context = CallContext("", "", timeout);
  v1::RecordExchangesResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::RecordExchangesRequest>> writer =
      c.recorder->RecordExchanges(context.get(), &response);
  v1::RecordExchangesRequest first;
  first.set_session(session);
  if (exchanges.empty()) {
    first.set_close(close);
    first.set_commit(true);
  }
  bool open = writer->Write(first);
  for (size_t i = 0; open && i < exchanges.size(); ++i) {
    v1::RecordExchangesRequest message;
    *message.mutable_exchange() = exchanges[i];
    message.set_close(close && i + 1 == exchanges.size());
    message.set_commit(i + 1 == exchanges.size());
    open = writer->Write(message);
  }
  // A failed Write means the call is over; Finish says why.
  if (open) writer->WritesDone();
  grpc::Status s = writer->Finish();
  if (!s.ok()) return FromGrpc(s);
  return response;
}

absl::StatusOr<int> HealthCheck(const std::shared_ptr<grpc::Channel>& channel,
                                const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  auto context = CallContext();
  grpc::Status s = stub->Check(context.get(), request, &response);
  if (!s.ok()) return FromGrpc(s);
  return static_cast<int>(response.status());
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  return lines;
}

v1::CompletionRequest UserRequest(const std::string& content) {
  v1::CompletionRequest r;
  r.set_model("fake-gpt-1");
  v1::Message* m = r.add_messages();
  m->set_role("user");
  m->set_content(content);
  return r;
}

absl::StatusOr<int> ConnectTcp(const std::string& address) {
  size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError(absl::StrCat("bad address ", address));
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError("socket");
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("connect ", address));
  }
  return fd;
}

absl::StatusOr<std::string> SendRaw(const std::string& address, const std::string& bytes,
                                    absl::Duration timeout) {
  absl::StatusOr<int> connected = ConnectTcp(address);
  if (!connected.ok()) return connected.status();
  const int fd = *connected;
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may hang up on garbage: fine
    sent += static_cast<size_t>(n);
  }
  std::string got;
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now())) + 1;
    if (::poll(&p, 1, ms) <= 0) break;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return got;
}

int64_t RssMiB(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (absl::StartsWith(line, "VmRSS:")) {
      int64_t kib = 0;
      std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (fields.size() >= 2 && absl::SimpleAtoi(fields[1], &kib)) return kib / 1024;
    }
  }
  return -1;
}

bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (condition()) return true;
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
}

absl::StatusOr<std::vector<StepResult>> RunAgentLoop(Clients& c, const std::string& run,
                                                     int step_count) {
  fakes::AgentLoop loop;
  std::vector<StepResult> steps;
  for (int i = 0; i < step_count && i < fakes::AgentLoop::kSteps; ++i) {
    StepResult step;
    step.agent = fakes::AgentLoop::Agent(i);
    step.streamed = fakes::AgentLoop::Streamed(i);
    step.request = loop.Request(i);
    absl::Status status;
    if (step.streamed) {
      absl::StatusOr<std::vector<v1::CompletionChunk>> chunks =
          StreamComplete(c, run, step.agent, step.request);
      status = chunks.status();
      if (chunks.ok()) {
        step.chunks = std::move(*chunks);
        step.response = fakes::AssembleChunks(step.chunks);
      }
    } else {
      absl::StatusOr<v1::CompletionResponse> response = Complete(c, run, step.agent, step.request);
      status = response.status();
      if (response.ok()) step.response = std::move(*response);
    }
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat("step ", i, " (", step.agent, ", ",
                                                      step.streamed ? "streamed" : "unary",
                                                      "): ", status.message()));
    }
    loop.Observe(i, step.response);
    steps.push_back(std::move(step));
  }
  return steps;
}

// ---------------------------------------------------------------------------
// E2eTest

void E2eTest::SetUp() {
  std::string pattern = absl::StrCat(::testing::TempDir(), "understudy_e2e_XXXXXX");
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << "mkdtemp " << pattern;
  dir_ = pattern;
  db_path_ = Path("understudy.db");
}

void E2eTest::TearDown() {
  if (HasFailure() || std::getenv("UNDERSTUDY_TEST_KEEP_DIRS") != nullptr) {
    std::cerr << "kept the test directory for inspection: " << dir_ << "\n";
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string E2eTest::Path(absl::string_view name) const { return absl::StrCat(dir_, "/", name); }

absl::StatusOr<std::unique_ptr<ServerProcess>> E2eTest::StartServer(
    const std::string& upstream, const std::vector<std::string>& extra_args,
    const std::string& db) {
  ServerProcess::Options options;
  options.db_path = db.empty() ? db_path_ : db;
  options.upstream = upstream;
  options.extra_args = extra_args;
  options.stderr_path = Path(absl::StrCat("server-", ++servers_started_, ".stderr"));
  return ServerProcess::Start(options);
}

absl::StatusOr<ProcessResult> E2eTest::Cli(const std::vector<std::string>& args,
                                           const std::string& stdin_path, absl::Duration timeout) {
  return RunProcess(UnderstudyBinary(), args, timeout, stdin_path);
}

void E2eTest::WriteFile(const std::string& path, absl::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  ASSERT_TRUE(out) << "cannot write " << path;
}

void E2eTest::RecordGolden(const std::string& session, std::vector<StepResult>* steps,
                           std::string* run_id) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<fakes::FakeModel> fake, fakes::FakeModel::Start());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer(fake->target()));
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, session, v1::RUN_MODE_RECORD));
  ASSERT_OK_AND_ASSIGN(*steps, RunAgentLoop(c, run.id()));
  ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, EndRun(c, run.id()));
  ASSERT_EQ(summary.run().recorded(), fakes::AgentLoop::kSteps);
  ASSERT_EQ(fake->calls(), fakes::AgentLoop::kSteps);
  c.Disconnect();
  ASSERT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
  if (run_id != nullptr) *run_id = run.id();
}

}  // namespace e2e
}  // namespace understudy
