#include "testgen/test_runner.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/env.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "re2/re2.h"
#include "validation/utf8.h"

extern char** environ;

namespace understudy {
namespace testgen {
namespace {

constexpr size_t kOutputKept = 16 * 1024;
constexpr size_t kMaxResultsBytes = 16 << 20;

std::string Tail(const std::string& text, size_t n) {
  if (text.size() <= n) return validation::SanitizeUtf8(text);
  return validation::SanitizeUtf8(absl::StrCat("…", text.substr(text.size() - n)));
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

absl::StatusOr<Outcome> ParseOutcome(absl::string_view name) {
  if (name == "passed") return Outcome::kPassed;
  if (name == "failed") return Outcome::kFailed;
  if (name == "error") return Outcome::kError;
  if (name == "skipped") return Outcome::kSkipped;
  return absl::InvalidArgumentError(absl::StrCat("unknown outcome ", name));
}

// The {"tests": [{name, outcome, message, seconds}]} that the pytest plugin
// and the node reporter write.
bool ReadOwnResults(const std::string& path, TestRun* run) {
  absl::StatusOr<std::string> text = ReadRegularFile(path, kMaxResultsBytes);
  if (!text.ok()) return false;
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
  if (!doc.is_object() || !doc.contains("tests") || !doc["tests"].is_array()) return false;
  for (const nlohmann::json& t : doc["tests"]) {
    if (!t.is_object()) continue;
    TestResult r;
    r.name = t.value("name", "");
    absl::StatusOr<Outcome> outcome = ParseOutcome(t.value("outcome", "error"));
    r.outcome = outcome.ok() ? *outcome : Outcome::kError;
    r.message = t.value("message", "");
    if (t.contains("seconds") && t["seconds"].is_number()) r.seconds = t["seconds"].get<double>();
    run->tests.push_back(std::move(r));
  }
  return true;
}

// GoogleTest's --gtest_output=json document.
bool ReadGtestResults(const std::string& path, TestRun* run) {
  absl::StatusOr<std::string> text = ReadRegularFile(path, kMaxResultsBytes);
  if (!text.ok()) return false;
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
  if (!doc.is_object() || !doc.contains("testsuites")) return false;
  for (const nlohmann::json& suite : doc["testsuites"]) {
    if (!suite.is_object() || !suite.contains("testsuite")) continue;
    for (const nlohmann::json& t : suite["testsuite"]) {
      if (!t.is_object()) continue;
      TestResult r;
      r.name = absl::StrCat(suite.value("name", ""), ".", t.value("name", ""));
      double seconds = 0;
      absl::SimpleAtod(absl::StripSuffix(t.value("time", "0s"), "s"), &seconds);
      r.seconds = seconds;
      std::vector<std::string> failures;
      if (t.contains("failures") && t["failures"].is_array()) {
        for (const nlohmann::json& f : t["failures"]) {
          if (f.is_object()) failures.push_back(f.value("failure", ""));
        }
      }
      if (t.value("result", "") == "SKIPPED" || t.value("status", "") == "NOTRUN") {
        r.outcome = Outcome::kSkipped;
      } else {
        r.outcome = failures.empty() ? Outcome::kPassed : Outcome::kFailed;
      }
      r.message = absl::StrJoin(failures, "\n");
      run->tests.push_back(std::move(r));
    }
  }
  return true;
}

// The runner gave no results: one error result saying why, with its output.
void NoResults(absl::string_view what, TestRun* run) {
  TestResult r;
  r.name = run->file;
  r.outcome = Outcome::kError;
  r.message = absl::StrCat(what, " (", run->exit, ")\n", Tail(run->output, 6000));
  run->tests.push_back(std::move(r));
}

// `understudy serve` on loopback ports, for GoogleTest files, which start
// none of their own. Ended (SIGTERM, then SIGKILL) on destruction.
class TestServer {
 public:
  static absl::StatusOr<std::unique_ptr<TestServer>> Start(const std::string& binary,
                                                          const std::string& db,
                                                          absl::Duration timeout) {
    SpawnOptions spawn;
    std::vector<std::string> unset;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      if (absl::StartsWith(entry, "UNDERSTUDY_")) unset.push_back(entry.substr(0, entry.find('=')));
    }
    spawn.env = EnvironmentWith({}, unset);
    spawn.merge_stderr = true;
    std::vector<std::string> argv = {binary, "serve", "--listen", "127.0.0.1:0",
                                     "--http", "127.0.0.1:0"};
    if (!db.empty()) {
      argv.push_back("--db");
      argv.push_back(db);
    }
    absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Spawn(argv, spawn);
    if (!child.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot start a server for the test: ", child.status().message()));
    }
    auto server = std::unique_ptr<TestServer>(new TestServer(*std::move(child)));
    server->reader_ = std::thread([s = server.get()] { s->Read(); });
    const absl::Time deadline = Env::Default()->Now() + timeout;
    std::string failure;
    {
      absl::MutexLock lock(&server->mu_);
      server->mu_.AwaitWithDeadline(absl::Condition(server.get(), &TestServer::ReadyOrClosed),
                                    deadline);
      if (server->grpc_.empty()) {
        failure = absl::StrCat("the server for the test (", ShellQuoted(argv),
                               ") did not start within ", absl::FormatDuration(timeout), ":\n",
                               Tail(server->output_, 4000));
      }
    }
    if (!failure.empty()) return absl::FailedPreconditionError(failure);
    return server;
  }

  ~TestServer() {
    child_->Signal(SIGTERM);
    if (!child_->WaitFor(absl::Seconds(10)).has_value()) child_->Signal(SIGKILL);
    child_->WaitFor(absl::Seconds(5));
    child_->Signal(SIGKILL);  // anything it left behind
    if (reader_.joinable()) reader_.join();
  }

  std::string grpc() {
    absl::MutexLock lock(&mu_);
    return grpc_;
  }
  std::string http() {
    absl::MutexLock lock(&mu_);
    return http_;
  }

 private:
  explicit TestServer(std::unique_ptr<ChildProcess> child) : child_(std::move(child)) {}

  bool ReadyOrClosed() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !grpc_.empty() || closed_; }

  // Drains the server's output until EOF (the server and everything of its
  // group gone), finding the ready line.
  void Read() {
    static const LazyRE2 kReady = {R"(^understudy serving grpc=(\S+) http=(\S+))"};
    std::string pending;
    char buffer[4096];
    for (;;) {
      pollfd p = {child_->stdout_fd(), POLLIN, 0};
      const int ready = ::poll(&p, 1, 200);
      if (ready < 0 && errno != EINTR) break;
      if (ready <= 0) continue;
      const ssize_t n = ::read(child_->stdout_fd(), buffer, sizeof(buffer));
      if (n == 0) break;
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        break;
      }
      absl::MutexLock lock(&mu_);
      output_.append(buffer, static_cast<size_t>(n));
      if (output_.size() > 2 * kOutputKept) output_ = output_.substr(output_.size() - kOutputKept);
      if (grpc_.empty()) {
        pending.append(buffer, static_cast<size_t>(n));
        for (const std::string& line : std::vector<std::string>(absl::StrSplit(pending, '\n'))) {
          std::string grpc, http;
          if (RE2::PartialMatch(line, *kReady, &grpc, &http)) {
            grpc_ = grpc;
            http_ = absl::StrCat("http://", http);
            break;
          }
        }
      }
    }
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }

  std::unique_ptr<ChildProcess> child_;
  std::thread reader_;
  absl::Mutex mu_;
  std::string grpc_ ABSL_GUARDED_BY(mu_);
  std::string http_ ABSL_GUARDED_BY(mu_);
  std::string output_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// Runs `argv` in `dir` with `set` added to the environment (and the
// UNDERSTUDY_* variables the caller did not mean removed) until `deadline`;
// records its exit and output in `run`. NODE_TEST_CONTEXT goes too: when
// the caller itself runs under `node --test` (an agent's test suite), a
// `node --test` that inherits it runs no file at all.
void Run(const std::vector<std::string>& argv, const std::string& dir,
         const std::vector<std::string>& set, absl::Time deadline, TestRun* run) {
  std::vector<std::string> unset = {"UNDERSTUDY_ADDR", "UNDERSTUDY_HTTP",     "UNDERSTUDY_RUN",
                                    "UNDERSTUDY_DB",   "UNDERSTUDY_RESULTS_JSON", "NODE_TEST_CONTEXT"};
  RunOptions options;
  options.spawn.env = EnvironmentWith({}, unset);
  for (const std::string& entry : set) options.spawn.env->push_back(entry);
  options.spawn.cwd = dir;
  options.spawn.merge_stderr = true;
  options.timeout = std::max(deadline - Env::Default()->Now(), absl::Seconds(1));
  absl::StatusOr<CommandResult> result = RunCommand(argv, options);
  if (!result.ok()) {
    run->exit = std::string(result.status().message());
    return;
  }
  run->exit = result->Describe();
  run->output += result->output;
  if (run->output.size() > kOutputKept) run->output = Tail(run->output, kOutputKept);
}

bool RunSucceeded(const TestRun& run) { return absl::StartsWith(run.exit, "exited with status 0"); }

}  // namespace

absl::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPassed:
      return "passed";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kError:
      return "error";
    case Outcome::kSkipped:
      return "skipped";
  }
  return "error";
}

int TestRun::Count(Outcome outcome) const {
  return static_cast<int>(std::count_if(tests.begin(), tests.end(),
                                        [&](const TestResult& t) { return t.outcome == outcome; }));
}

bool TestRun::ok() const {
  return !tests.empty() && Count(Outcome::kPassed) + Count(Outcome::kSkipped) ==
                               static_cast<int>(tests.size()) &&
         Count(Outcome::kPassed) > 0;
}

absl::StatusOr<TestRun> RunTests(const std::string& path, Framework framework, const RunEnv& env,
                                 const Toolchain& toolchain) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return absl::NotFoundError(absl::StrCat("no test file at ", path));
  }
  if (env.addr.empty() != env.http.empty()) {
    return absl::InvalidArgumentError(
        "give both the server's gRPC address and its HTTP address, or neither (a server is "
        "started then)");
  }
  const std::string file = std::filesystem::absolute(path, error).lexically_normal().string();
  const std::string dir = std::filesystem::path(file).parent_path().string();
  const absl::Time start = Env::Default()->Now();
  const absl::Time deadline = start + env.timeout;
  absl::StatusOr<std::unique_ptr<ScratchDir>> scratch = ScratchDir::Create("understudy-testgen");
  if (!scratch.ok()) return scratch.status();

  TestRun run;
  run.file = path;
  run.framework = framework;
  std::vector<std::string> set = {"PYTHONDONTWRITEBYTECODE=1"};
  const std::string binary = env.binary.empty() ? EnvOr("UNDERSTUDY_BIN", "") : env.binary;
  if (!binary.empty()) set.push_back(absl::StrCat("UNDERSTUDY_BIN=", binary));
  if (!env.db.empty()) {
    set.push_back(absl::StrCat(
        "UNDERSTUDY_DB=", std::filesystem::absolute(env.db, error).lexically_normal().string()));
  }
  if (!env.addr.empty()) {
    set.push_back(absl::StrCat("UNDERSTUDY_ADDR=", env.addr));
    set.push_back(absl::StrCat("UNDERSTUDY_HTTP=", env.http));
  }

  switch (framework) {
    case Framework::kPytest: {
      const std::string results = (*scratch)->File("results.json");
      set.push_back(absl::StrCat("UNDERSTUDY_RESULTS_JSON=", results));
      std::string python_path = toolchain.python_path;
      const std::string inherited = EnvOr("PYTHONPATH", "");
      if (!inherited.empty()) {
        python_path = python_path.empty() ? inherited : absl::StrCat(python_path, ":", inherited);
      }
      if (!python_path.empty()) set.push_back(absl::StrCat("PYTHONPATH=", python_path));
      if (!toolchain.python_stubs.empty()) {
        set.push_back(absl::StrCat("UNDERSTUDY_PY_STUBS=", toolchain.python_stubs));
      }
      Run({toolchain.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
           "understudy_testing.results_plugin", absl::StrCat("--rootdir=", dir), file},
          dir, set, deadline, &run);
      if (!ReadOwnResults(results, &run) || run.tests.empty()) {
        run.tests.clear();
        NoResults("pytest ran no test", &run);
      }
      break;
    }
    case Framework::kNode: {
      const std::string reporter = EnvOr("UNDERSTUDY_NODE_REPORTER", toolchain.node_reporter);
      if (reporter.empty()) {
        return absl::FailedPreconditionError(
            "no JSON reporter for node:test is configured: set UNDERSTUDY_NODE_REPORTER to "
            "clients/node/json_reporter.js");
      }
      const std::string results = (*scratch)->File("results.json");
      if (!toolchain.node_client.empty()) {
        set.push_back(absl::StrCat("UNDERSTUDY_NODE_CLIENT=", toolchain.node_client));
      }
      Run({toolchain.node, "--test", "--test-reporter=spec", "--test-reporter-destination=stdout",
           absl::StrCat("--test-reporter=", reporter),
           absl::StrCat("--test-reporter-destination=", results), file},
          dir, set, deadline, &run);
      if (!ReadOwnResults(results, &run) || run.tests.empty()) {
        run.tests.clear();
        NoResults("node --test ran no test", &run);
      }
      break;
    }
    case Framework::kGtest: {
      if (!toolchain.has_gtest()) return absl::FailedPreconditionError(kNoGtestToolchain);
      const std::string bin = (*scratch)->File("generated_test");
      std::vector<std::string> compile = {toolchain.cxx, "-o", bin};
      compile.insert(compile.end(), toolchain.gtest_cflags.begin(), toolchain.gtest_cflags.end());
      compile.push_back(file);
      compile.insert(compile.end(), toolchain.gtest_libs.begin(), toolchain.gtest_libs.end());
      Run(compile, dir, {}, deadline, &run);
      if (!RunSucceeded(run)) {
        NoResults("the test did not compile", &run);
        break;
      }
      run.output.clear();
      std::unique_ptr<TestServer> server;
      if (env.addr.empty()) {
        absl::StatusOr<std::unique_ptr<TestServer>> started = TestServer::Start(
            binary.empty() ? "understudy" : binary, env.db, absl::Seconds(30));
        if (!started.ok()) return started.status();
        server = *std::move(started);
        set.push_back(absl::StrCat("UNDERSTUDY_ADDR=", server->grpc()));
        set.push_back(absl::StrCat("UNDERSTUDY_HTTP=", server->http()));
      }
      const std::string results = (*scratch)->File("results.json");
      Run({bin, absl::StrCat("--gtest_output=json:", results)}, dir, set, deadline, &run);
      if (!ReadGtestResults(results, &run) || run.tests.empty()) {
        run.tests.clear();
        NoResults("the test binary ran no test", &run);
      }
      break;
    }
  }
  run.seconds = absl::ToDoubleSeconds(Env::Default()->Now() - start);
  return run;
}

nlohmann::json ToJson(const TestRun& run) {
  nlohmann::json tests = nlohmann::json::array();
  for (const TestResult& t : run.tests) {
    tests.push_back({{"name", validation::SanitizeUtf8(t.name)},
                     {"outcome", std::string(OutcomeName(t.outcome))},
                     {"message", validation::SanitizeUtf8(t.message)},
                     {"seconds", t.seconds}});
  }
  return {{"file", run.file},
          {"framework", std::string(FrameworkName(run.framework))},
          {"ok", run.ok()},
          {"passed", run.Count(Outcome::kPassed)},
          {"failed", run.Count(Outcome::kFailed)},
          {"errors", run.Count(Outcome::kError)},
          {"skipped", run.Count(Outcome::kSkipped)},
          {"seconds", run.seconds},
          {"exit", run.exit},
          {"tests", std::move(tests)},
          {"output", validation::SanitizeUtf8(run.output)}};
}

}  // namespace testgen
}  // namespace understudy
