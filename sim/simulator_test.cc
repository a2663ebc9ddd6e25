#include "sim/simulator.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kWait = absl::Milliseconds(1500);

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t Count(absl::string_view text, absl::string_view needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != absl::string_view::npos;
       at = text.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

// A scratch directory, removed afterwards.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/sim_test.XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::shared_ptr<Behaviour> NewBehaviour(std::string contains, ActionKind action) {
  auto behaviour = std::make_shared<Behaviour>();
  behaviour->contains = std::move(contains);
  behaviour->action = action;
  behaviour->name = behaviour->contains;
  behaviour->path = "behaviours[?]";
  return behaviour;
}

std::shared_ptr<SimConfig> NewConfig(std::vector<std::shared_ptr<Behaviour>> behaviours) {
  auto config = std::make_shared<SimConfig>();
  config->source = "test.yaml";
  config->startup_lines = {"✻ Welcome (simulated)", "  session: {session_id}"};
  for (size_t i = 0; i < behaviours.size(); ++i) {
    behaviours[i]->index = static_cast<int>(i);
    config->behaviours.push_back(behaviours[i]);
  }
  auto fallback = std::make_shared<Behaviour>();
  fallback->path = "default";
  fallback->output = {"Done."};
  config->default_behaviour = fallback;
  return config;
}

// A simulator on the slave side of a pty, its output read from the master
// side as a terminal emulator (tmux) would.
class PtySession {
 public:
  explicit PtySession(std::shared_ptr<const SimConfig> config,
                      std::function<void(SimOptions&)> adjust = nullptr) {
    int master = -1;
    EXPECT_EQ(openpty(&master, &slave_, nullptr, nullptr, nullptr), 0);
    master_ = master;
    log_path_ = dir_.path() + "/sim.log";
    log_ = *EventLog::Open(log_path_, LogFormat::kText);
    SimOptions options;
    options.config = std::move(config);
    options.agent = "tester";
    options.input_fd = slave_;
    options.output_fd = slave_;
    options.handle_signals = false;
    options.deterministic = true;
    options.cwd = dir_.path();
    options.log = log_.get();
    if (adjust) adjust(options);
    simulator_ = std::make_unique<Simulator>(std::move(options));
    reader_ = std::thread([this] { ReadLoop(); });
    runner_ = std::thread([this] {
      exit_code_ = simulator_->Run();
      finished_ = true;
    });
  }

  ~PtySession() {
    if (!finished_) CloseTerminal();
    if (runner_.joinable()) runner_.join();
    stop_ = true;
    reader_.join();
    if (master_ >= 0) close(master_);
    close(slave_);
  }

  void Type(absl::string_view bytes) {
    ASSERT_EQ(write(master_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  // Waits until the output (CR LF read as LF) contains `needle`.
  bool WaitFor(absl::string_view needle, absl::Duration timeout = kWait) {
    absl::MutexLock lock(&mu_);
    auto found = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return absl::StrContains(absl::StrReplaceAll(output_, {{"\r\n", "\n"}}), needle);
    };
    return mu_.AwaitWithTimeout(absl::Condition(&found), timeout);
  }
  // Waits until the output ends with `suffix`: what is shown last.
  bool WaitForEnd(absl::string_view suffix, absl::Duration timeout = kWait) {
    absl::MutexLock lock(&mu_);
    auto ends = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return absl::EndsWith(absl::StrReplaceAll(output_, {{"\r\n", "\n"}}), suffix);
    };
    return mu_.AwaitWithTimeout(absl::Condition(&ends), timeout);
  }
  // Waits until the log holds `needle` `times` times.
  bool WaitForLog(absl::string_view needle, size_t times = 1, absl::Duration timeout = kWait) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (Count(Log(), needle) >= times) return true;
      absl::SleepFor(absl::Milliseconds(2));
    }
    return false;
  }
  std::string Output() {
    absl::MutexLock lock(&mu_);
    // Bracketed paste on/off are the terminal's business, not the pane's text.
    return absl::StrReplaceAll(output_, {{"\r\n", "\n"}, {"\x1b[?2004h", ""}, {"\x1b[?2004l", ""}});
  }
  std::string Log() { return ReadFile(log_path_); }
  // Waits for the session to end by itself, and for the last of its output
  // (the terminal's restoration, written last) to be read; its exit code.
  int Join(bool drain = true) {
    runner_.join();
    if (drain) WaitForEnd("\x1b[?2004l");
    return exit_code_;
  }
  bool finished() const { return finished_; }
  void CloseTerminal() {
    close(master_);
    master_ = -1;
  }
  const std::string& dir() const { return dir_.path(); }
  const std::string& session_id() const { return simulator_->session_id(); }

 private:
  void ReadLoop() {
    char buffer[4096];
    while (!stop_) {
      const int fd = master_;
      if (fd < 0) return;
      pollfd p = {fd, POLLIN, 0};
      if (poll(&p, 1, 10) <= 0) continue;
      const ssize_t n = read(fd, buffer, sizeof(buffer));
      if (n <= 0) {
        absl::SleepFor(absl::Milliseconds(5));
        continue;
      }
      absl::MutexLock lock(&mu_);
      output_.append(buffer, static_cast<size_t>(n));
    }
  }

  TempDir dir_;
  std::atomic<int> master_{-1};
  int slave_ = -1;
  std::string log_path_;
  std::unique_ptr<EventLog> log_;
  std::unique_ptr<Simulator> simulator_;
  absl::Mutex mu_;
  std::string output_ ABSL_GUARDED_BY(mu_);
  std::thread reader_;
  std::thread runner_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  int exit_code_ = -1;
};

TEST(SimulatorTest, PrintsStartupLinesThenThePromptIndicator) {
  PtySession session(NewConfig({}));
  ASSERT_TRUE(session.WaitForEnd("\n> "));
  EXPECT_EQ(session.Output(),
            absl::StrCat("✻ Welcome (simulated)\n  session: ", session.session_id(), "\n\n> "));
  EXPECT_THAT(session.Log(), HasSubstr("state STARTING <- NONE (started)\n"));
  EXPECT_THAT(session.Log(), HasSubstr("state IDLE <- STARTING (ready)\n"));
}

TEST(SimulatorTest, CompletesWithToolEventsAndOutput) {
  auto deploy = NewBehaviour("deploy", ActionKind::kComplete);
  deploy->output = {"Deployed."};
  ToolEvent bash;
  bash.tool = "Bash";
  bash.input_json = R"({"command":"ls -la"})";
  bash.result = "a.txt\nb.txt";
  deploy->events = {bash};
  PtySession session(NewConfig({deploy}));
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("deploy to prod\r");
  ASSERT_TRUE(session.WaitFor("Deployed.\n\n> "));
  EXPECT_THAT(session.Output(),
              HasSubstr("> deploy to prod\n⏺ Bash(ls -la)\n  ⎿  a.txt\n     b.txt\nDeployed.\n\n> "));
  EXPECT_TRUE(absl::EndsWith(session.Output(), "\n> "));
  EXPECT_THAT(session.Log(), HasSubstr("state WORKING <- IDLE (prompt)"));
  EXPECT_THAT(session.Log(), HasSubstr("state IDLE <- WORKING (completed)"));
}

TEST(SimulatorTest, FailPrintsTheMessageAndGoesIdle) {
  auto broken = NewBehaviour("broken", ActionKind::kFail);
  broken->message = "Error: the build is broken";
  PtySession session(NewConfig({broken}));
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("fix broken build\r");
  ASSERT_TRUE(session.WaitFor("Error: the build is broken\n\n> "));
  EXPECT_THAT(session.Log(), HasSubstr("state IDLE <- WORKING (failed)"));
}

TEST(SimulatorTest, AskIsAnsweredByNumberOrByText) {
  auto postgres = NewBehaviour("", ActionKind::kComplete);
  postgres->output = {"Using postgres."};
  auto sqlite = NewBehaviour("", ActionKind::kFail);
  sqlite->message = "Error: sqlite refused";
  auto ask = NewBehaviour("database", ActionKind::kAsk);
  ask->question = "Which database?";
  ask->options = {{"postgres", postgres}, {"sqlite", sqlite}};
  PtySession session(NewConfig({ask}));
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("set up the database\r");
  ASSERT_TRUE(session.WaitForEnd("Which database?\n  1. postgres\n  2. sqlite\n\n> "));
  EXPECT_THAT(session.Log(), HasSubstr("state ASKING <- WORKING (question)"));
  session.Type("7\r");
  ASSERT_TRUE(session.WaitForEnd("Please answer with 1-2 or an option's text.\n\n> "));
  session.Type("1\r");
  ASSERT_TRUE(session.WaitFor("Using postgres.\n\n> "));
  session.Type("database again\r");
  ASSERT_TRUE(session.WaitForEnd("  2. sqlite\n\n> "));
  session.Type("  SQLite \r");
  ASSERT_TRUE(session.WaitFor("Error: sqlite refused\n\n> "));
}

TEST(SimulatorTest, FailThenSucceedCountsItsFailures) {
  auto flaky = NewBehaviour("flaky", ActionKind::kFailThenSucceed);
  flaky->failures = 2;
  flaky->message = "Error: flaky failed";
  flaky->output = {"Flaky passed."};
  PtySession session(NewConfig({flaky}));
  ASSERT_TRUE(session.WaitForEnd("> "));
  for (size_t round = 1; round <= 3; ++round) {
    session.Type("run flaky\r");
    ASSERT_TRUE(session.WaitForLog("state IDLE <- WORKING", round));
  }
  ASSERT_TRUE(session.WaitFor("Flaky passed.\n\n> "));
  const std::string output = session.Output();
  EXPECT_EQ(Count(output, "Error: flaky failed\n"), 2u);
  EXPECT_LT(output.rfind("Error: flaky failed"), output.find("Flaky passed."));
}

TEST(SimulatorTest, HangIsInterruptedByEscape) {
  PtySession session(NewConfig({NewBehaviour("stuck", ActionKind::kHang)}));
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("you are stuck\r");
  ASSERT_TRUE(session.WaitForLog("state WORKING <- IDLE"));
  session.Type("\x1b");
  ASSERT_TRUE(session.WaitForEnd("  ⎿  Interrupted by user\n\n> "));
  EXPECT_THAT(session.Log(), HasSubstr("state IDLE <- WORKING (interrupted)"));
}

TEST(SimulatorTest, ArrowKeysDoNotInterrupt) {
  PtySession session(NewConfig({NewBehaviour("stuck", ActionKind::kHang)}));
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("stuck\r");
  ASSERT_TRUE(session.WaitForLog("state WORKING <- IDLE"));
  session.Type("\x1b[A\x1b[B");
  session.Type("\x03");
  ASSERT_TRUE(session.WaitForEnd("Interrupted by user\n\n> "));
  EXPECT_THAT(session.Log(), Not(HasSubstr("key=escape")));
}

TEST(SimulatorTest, CtrlCTwiceExits) {
  PtySession session(NewConfig({}));
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("typed");
  ASSERT_TRUE(session.WaitForEnd("> typed"));
  session.Type("\x03");  // clears the line
  ASSERT_TRUE(session.WaitForEnd("typed\n\n> "));
  session.Type("\x03");
  ASSERT_TRUE(session.WaitForEnd("Press Ctrl-C again to exit\n\n> "));
  session.Type("\x03");
  EXPECT_EQ(session.Join(), 0);
  EXPECT_THAT(session.Output(), HasSubstr("Bye.\n"));
  EXPECT_THAT(session.Log(), HasSubstr("state DONE <- IDLE (Ctrl-C twice)"));
}

// Typing, Ctrl-C and more typing that reach the agent in one read (a loaded
// machine, a fast orchestrator): the Ctrl-C still clears what was typed
// before it, and only what follows is submitted.
TEST(SimulatorTest, CtrlCClearsTheLineWhenTypingArrivesInOneRead) {
  auto wrong = NewBehaviour("abandoned", ActionKind::kComplete);
  wrong->output = {"Submitted the abandoned text."};
  PtySession session(NewConfig({wrong}));
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("abandoned text\x03ship it\r");
  ASSERT_TRUE(session.WaitForEnd("Done.\n\n> "));
  EXPECT_THAT(session.Output(), HasSubstr("> ship it\nDone.\n"));
  EXPECT_THAT(session.Output(), Not(HasSubstr("abandoned text.")));
  EXPECT_THAT(session.Output(), Not(HasSubstr("Press Ctrl-C again")));
}

TEST(SimulatorTest, ExitCommandAndCtrlDEnd) {
  {
    PtySession session(NewConfig({}));
    ASSERT_TRUE(session.WaitForEnd("> "));
    session.Type("/exit\r");
    EXPECT_EQ(session.Join(), 0);
    EXPECT_TRUE(absl::EndsWith(session.Output(), "> /exit\nBye.\n"));
  }
  {
    PtySession session(NewConfig({}));
    ASSERT_TRUE(session.WaitForEnd("> "));
    session.Type("\x04");
    EXPECT_EQ(session.Join(), 0);
    EXPECT_THAT(session.Output(), HasSubstr("Bye.\n"));
  }
}

TEST(SimulatorTest, PromptsSubmittedWhileWorkingAreQueued) {
  auto slow = NewBehaviour("slow", ActionKind::kComplete);
  slow->delay = absl::Milliseconds(150);
  slow->output = {"Slow done."};
  PtySession session(NewConfig({slow}));
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("slow one\r");
  ASSERT_TRUE(session.WaitForLog("state WORKING <- IDLE"));
  session.Type("second\r");
  ASSERT_TRUE(session.WaitFor("Slow done.\n\n> second\nDone.\n\n> "));
  EXPECT_THAT(session.Log(), HasSubstr("prompt_queued"));
}

TEST(SimulatorTest, MultiLineUnicodePromptOverFourKilobytes) {
  PtySession session(NewConfig({}));
  ASSERT_TRUE(session.WaitForEnd("> "));
  std::string prompt;
  while (prompt.size() < 6000) prompt += "ünïcødé ✻ $HOME `x` 'q' \"d\" | line\n";
  prompt += "end";
  // As tmux sends `send-keys -l`, in pieces, then Enter.
  for (size_t at = 0; at < prompt.size(); at += 1000) session.Type(prompt.substr(at, 1000));
  session.Type("\r");
  ASSERT_TRUE(session.WaitFor("Done.\n\n> "));
  EXPECT_THAT(session.Log(), HasSubstr(absl::StrCat("prompt bytes=", prompt.size())));
  EXPECT_THAT(session.Output(), HasSubstr("> ünïcødé ✻ $HOME `x` 'q' \"d\" | line\n  ünïcødé"));
}

TEST(SimulatorTest, CompletionCommandIsRetriedUntilItSucceeds) {
  auto deploy = NewBehaviour("deploy", ActionKind::kComplete);
  deploy->outputs = {{"status", "ok"}, {"branch", "main"}};
  TempDir scripts;
  const std::string script = scripts.path() + "/meow";
  {
    std::ofstream out(script);
    out << "#!/bin/sh\n"
           "n=$(cat \"$0.count\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$0.count\"\n"
           "echo \"$@ $UNDERSTUDY_SIM_AGENT $UNDERSTUDY_SIM_SESSION_ID\" > \"$0.args\"\n"
           "echo attempt $n; [ $n -ge 3 ]\n";
  }
  chmod(script.c_str(), 0755);
  Completion completion;
  completion.command = {script, "done"};
  completion.on_failure = OnFailure::kRetry;
  completion.retries = 2;
  completion.retry_delay = absl::Milliseconds(1);
  deploy->completion = completion;
  PtySession session(NewConfig({deploy}));
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("deploy\r");
  ASSERT_TRUE(session.WaitForLog("state IDLE <- WORKING (completed)"));
  EXPECT_EQ(ReadFile(script + ".count"), "3\n");
  EXPECT_EQ(ReadFile(script + ".args"),
            absl::StrCat("done --output branch=main --output status=ok tester ",
                         session.session_id(), "\n"));
  EXPECT_THAT(session.Log(), HasSubstr("completion attempt=3 outcome=ok exit=0"));
  EXPECT_THAT(session.Log(), HasSubstr("completion_output line=\"attempt 2\""));
  EXPECT_THAT(session.Output(), Not(HasSubstr("Error:")));
}

TEST(SimulatorTest, CompletionCommandThatKeepsFailingGivesUp) {
  auto deploy = NewBehaviour("deploy", ActionKind::kComplete);
  Completion completion;
  completion.command = {"/bin/sh", "-c", "exit 4"};
  completion.on_failure = OnFailure::kRetry;
  completion.retries = 1;
  completion.retry_delay = absl::ZeroDuration();
  deploy->completion = completion;
  auto missing = NewBehaviour("missing", ActionKind::kComplete);
  Completion absent;
  absent.command = {"/nonexistent/meow"};
  missing->completion = absent;
  PtySession session(NewConfig({deploy, missing}));
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("deploy\r");
  ASSERT_TRUE(session.WaitFor("Error: completion command failed: exited with status 4\n\n> "));
  EXPECT_THAT(session.Log(), HasSubstr("completion attempt=2 outcome=failed exit=4"));
  session.Type("missing\r");
  ASSERT_TRUE(session.WaitForLog("outcome=not_found"));
  ASSERT_TRUE(session.WaitForEnd("\n\n> "));
  EXPECT_THAT(session.Output(), HasSubstr("Error: completion command failed: "));
}

TEST(SimulatorTest, EscapeKillsARunningCompletionCommand) {
  auto deploy = NewBehaviour("deploy", ActionKind::kComplete);
  Completion completion;
  completion.command = {"/bin/sh", "-c", "sleep 30"};
  deploy->completion = completion;
  PtySession session(NewConfig({deploy}));
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("deploy\r");
  ASSERT_TRUE(session.WaitForLog("completion_started"));
  const absl::Time start = absl::Now();
  session.Type("\x1b");
  ASSERT_TRUE(session.WaitForEnd("Interrupted by user\n\n> "));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
}

TEST(SimulatorTest, DelayOverrideReplacesEveryDelay) {
  auto slow = NewBehaviour("slow", ActionKind::kComplete);
  slow->delay = absl::Seconds(30);
  slow->output = {"Finally."};
  auto config = NewConfig({slow});
  config->startup_delay = absl::Seconds(30);
  PtySession session(config, [](SimOptions& options) {
    options.delay_override = absl::ZeroDuration();
  });
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("slow\r");
  ASSERT_TRUE(session.WaitFor("Finally.\n\n> "));
}

TEST(SimulatorTest, TwoDeterministicRunsPrintTheSameBytes) {
  std::string outputs[2];
  for (std::string& output : outputs) {
    auto deploy = NewBehaviour("deploy", ActionKind::kComplete);
    deploy->output = {"Deployed."};
    ToolEvent edit;
    edit.tool = "Edit";
    edit.input_json = R"({"file_path":"/src/main.cc"})";
    edit.result = "Updated";
    deploy->events = {edit};
    PtySession session(NewConfig({deploy}));
    ASSERT_TRUE(session.WaitForEnd("> "));
    session.Type("deploy\r");
    ASSERT_TRUE(session.WaitFor("Deployed.\n\n> "));
    session.Type("/exit\r");
    ASSERT_EQ(session.Join(), 0);
    output = session.Output();
  }
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_THAT(outputs[0], HasSubstr("⏺ Edit(/src/main.cc)\n  ⎿  Updated\n"));
}

TEST(SimulatorTest, ClosedTerminalEndsTheSessionQuickly) {
  PtySession session(NewConfig({NewBehaviour("stuck", ActionKind::kHang)}));
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("stuck\r");
  ASSERT_TRUE(session.WaitForLog("state WORKING <- IDLE"));
  const absl::Time start = absl::Now();
  session.CloseTerminal();
  EXPECT_EQ(session.Join(/*drain=*/false), 0);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_THAT(session.Log(), HasSubstr("state DONE <- WORKING (terminal closed)"));
}

TEST(SimulatorTest, CrashLeavesWithItsExitCode) {
  auto boom = NewBehaviour("boom", ActionKind::kCrash);
  boom->exit_code = 3;
  int crashed_with = -1;
  PtySession session(NewConfig({boom}), [&](SimOptions& options) {
    options.on_crash = [&](int exit_code, int) { crashed_with = exit_code; };
  });
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("boom\r");
  EXPECT_EQ(session.Join(), 3);
  EXPECT_EQ(crashed_with, 3);
  EXPECT_THAT(session.Log(), HasSubstr("state CRASHED <- WORKING (crash behaviour)"));
}

// A model that answers at once with text and one tool call.
class FakeModel final : public ModelBackend {
 public:
  absl::StatusOr<std::unique_ptr<ModelCall>> Start(const ModelRequest& request) override {
    {
      absl::MutexLock lock(&mu_);
      last_ = request;
    }
    return ModelCall::Start([](ModelCancellation&) -> absl::StatusOr<ModelAnswer> {
      ModelAnswer answer;
      answer.text = "Reading it now.";
      answer.tool_calls.push_back({"call_1", "Read", R"({"file_path":"/etc/hosts"})"});
      return answer;
    });
  }
  ModelRequest last() {
    absl::MutexLock lock(&mu_);
    return last_;
  }

 private:
  absl::Mutex mu_;
  ModelRequest last_ ABSL_GUARDED_BY(mu_);
};

// A model that, for a prompt containing "stuck", holds the request (as a
// scenario's `hang` rule does) until the call is cancelled and then answers
// anyway, late; other prompts are answered at once.
class StuckModel final : public ModelBackend {
 public:
  absl::StatusOr<std::unique_ptr<ModelCall>> Start(const ModelRequest& request) override {
    if (!absl::StrContains(request.prompt, "stuck")) {
      return ModelCall::Start([](ModelCancellation&) -> absl::StatusOr<ModelAnswer> {
        ModelAnswer answer;
        answer.text = "Fresh answer.";
        answer.tool_calls.push_back({"call_fresh", "Read", R"({"file_path":"/fresh"})"});
        return answer;
      });
    }
    // The work outlives nothing it uses: `cancelled_` is shared.
    std::shared_ptr<std::atomic<int>> cancelled = cancelled_;
    return ModelCall::Start([cancelled](ModelCancellation& cancellation)
                                -> absl::StatusOr<ModelAnswer> {
      if (cancellation.WaitForCancel(absl::Seconds(30))) ++*cancelled;
      ModelAnswer answer;
      answer.text = "Late answer.";
      answer.tool_calls.push_back({"call_late", "Bash", R"({"command":"rm -rf late"})"});
      return answer;
    });
  }
  int cancelled() const { return *cancelled_; }

 private:
  const std::shared_ptr<std::atomic<int>> cancelled_ = std::make_shared<std::atomic<int>>(0);
};

TEST(SimulatorTest, ModelBehaviourPrintsTheAnswerAndRunsItsToolCalls) {
  auto think = NewBehaviour("think", ActionKind::kModel);
  think->model = "gpt-test";
  think->system_prompt = "Be brief.";
  think->output = {"Thought."};
  FakeModel model;
  PtySession session(NewConfig({think}), [&](SimOptions& options) {
    options.model_backend = &model;
  });
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("think hard\r");
  ASSERT_TRUE(session.WaitFor(
      "Reading it now.\n⏺ Read(/etc/hosts)\n  ⎿  ok\nThought.\n\n> "));
  const ModelRequest last = model.last();
  EXPECT_EQ(last.prompt, "think hard");
  EXPECT_EQ(last.model, "gpt-test");
  EXPECT_EQ(last.agent, "tester");
  EXPECT_EQ(last.system_prompt, "Be brief.");
}

// The loop keeps reading the terminal while the server holds a model
// request: Escape cancels the call at once, its late answer is never shown
// nor run as tool calls, and the next prompt is answered.
TEST(SimulatorTest, EscapeCancelsAModelCallTheServerHolds) {
  auto think = NewBehaviour("think", ActionKind::kModel);
  think->output = {"Thought."};
  StuckModel model;
  PtySession session(NewConfig({think}), [&](SimOptions& options) {
    options.model_backend = &model;
    // Every tool call the session makes, as PreToolUse sees it.
    ASSERT_TRUE(options.hooks
                    .AddText(R"({"hooks": {"PreToolUse": [{"matcher": "Bash|Read", "hooks": [
                        {"type": "command", "command": "cat >> tools.log; echo >> tools.log"}]}]}})",
                             "settings.json")
                    .ok());
  });
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("think, stuck\r");
  ASSERT_TRUE(session.WaitForLog("state WORKING <- IDLE"));
  absl::SleepFor(absl::Milliseconds(100));  // the call is under way, held
  EXPECT_EQ(model.cancelled(), 0);
  const absl::Time start = absl::Now();
  session.Type("\x1b");
  ASSERT_TRUE(session.WaitForEnd("  ⎿  Interrupted by user\n\n> "));
  const absl::Duration took = absl::Now() - start;
  std::printf("Escape to the prompt indicator: %s\n", absl::FormatDuration(took).c_str());
  EXPECT_LT(took, absl::Milliseconds(500));
  EXPECT_EQ(model.cancelled(), 1);
  EXPECT_THAT(session.Log(), HasSubstr("state IDLE <- WORKING (interrupted)"));

  session.Type("think again\r");
  ASSERT_TRUE(session.WaitFor("Fresh answer.\n⏺ Read(/fresh)\n  ⎿  ok\nThought.\n\n> "));
  absl::SleepFor(absl::Milliseconds(100));  // a late answer would be in by now
  const std::string output = session.Output();
  EXPECT_TRUE(absl::EndsWith(output, "Thought.\n\n> ")) << output;
  EXPECT_THAT(output, Not(HasSubstr("Late answer.")));
  EXPECT_THAT(output, Not(HasSubstr("Bash(")));
  EXPECT_EQ(Count(output, "Interrupted by user"), 1u);
  const std::string tools = ReadFile(session.dir() + "/tools.log");
  EXPECT_THAT(tools, HasSubstr("/fresh"));
  EXPECT_THAT(tools, Not(HasSubstr("late")));
  EXPECT_THAT(session.Log(), HasSubstr("state IDLE <- WORKING (completed)"));
}

TEST(SimulatorTest, ClosedTerminalEndsTheSessionDuringAModelCall) {
  StuckModel model;
  PtySession session(NewConfig({NewBehaviour("think", ActionKind::kModel)}),
                     [&](SimOptions& options) { options.model_backend = &model; });
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("think, stuck\r");
  ASSERT_TRUE(session.WaitForLog("state WORKING <- IDLE"));
  absl::SleepFor(absl::Milliseconds(50));
  const absl::Time start = absl::Now();
  session.CloseTerminal();
  EXPECT_EQ(session.Join(/*drain=*/false), 0);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(model.cancelled(), 1);
  EXPECT_THAT(session.Log(), HasSubstr("state DONE <- WORKING (terminal closed)"));
}

TEST(SimulatorTest, PreToolUseHookBlocksTheTool) {
  auto deploy = NewBehaviour("deploy", ActionKind::kComplete);
  ToolEvent bash;
  bash.tool = "Bash";
  bash.input_json = R"({"command":"rm -rf /"})";
  bash.result = "gone";
  deploy->events = {bash};
  deploy->output = {"Finished."};
  PtySession session(NewConfig({deploy}), [](SimOptions& options) {
    ASSERT_TRUE(options.hooks
                    .AddText(R"({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                        {"type": "command", "command": "echo 'not that' >&2; exit 2"}]}]}})",
                             "settings.json")
                    .ok());
  });
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("deploy\r");
  ASSERT_TRUE(session.WaitFor("Finished.\n\n> "));
  EXPECT_THAT(session.Output(),
              HasSubstr("⏺ Bash(rm -rf /)\n  ⎿  Blocked by hook: not that\nFinished."));
  EXPECT_THAT(session.Output(), Not(HasSubstr("gone")));
  EXPECT_THAT(session.Log(), HasSubstr("hook hook=PreToolUse exit=2 outcome=blocked"));
}

// Waits until the file at `path` exists and is not empty.
bool WaitForFile(const std::string& path, absl::Duration timeout = kWait) {
  const absl::Time deadline = absl::Now() + timeout;
  while (ReadFile(path).empty()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

// The hook events (and prompts) a hook appending its payloads to
// `hooks.log` saw, one "Event" or "Event:prompt" each.
std::vector<std::string> HookCalls(const std::string& log) {
  std::vector<std::string> calls;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const nlohmann::json payload = nlohmann::json::parse(line, nullptr, false);
    std::string call = payload.value("hook_event_name", "?");
    if (payload.contains("prompt")) call += ":" + payload.value("prompt", "");
    calls.push_back(call);
  }
  return calls;
}

constexpr char kLogEveryPrompt[] = R"({"hooks": {
    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "cat >> hooks.log; echo >> hooks.log"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "cat >> hooks.log; echo >> hooks.log"}]}]}})";

// An answer to a question is a prompt like any other: UserPromptSubmit fires
// for it (a wrong one too, which is asked again, with a Stop), so that an
// orchestrator tracking work by these hooks sees the agent busy.
TEST(SimulatorTest, AnsweringAQuestionFiresUserPromptSubmit) {
  auto postgres = NewBehaviour("", ActionKind::kComplete);
  postgres->output = {"Using postgres."};
  auto ask = NewBehaviour("database", ActionKind::kAsk);
  ask->question = "Which database?";
  ask->options = {{"postgres", postgres}, {"sqlite", postgres}};
  PtySession session(NewConfig({ask}), [](SimOptions& options) {
    ASSERT_TRUE(options.hooks.AddText(kLogEveryPrompt, "settings.json").ok());
  });
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("set up the database\r");
  ASSERT_TRUE(session.WaitForEnd("  2. sqlite\n\n> "));
  session.Type("mysql\r");
  ASSERT_TRUE(session.WaitForEnd("Please answer with 1-2 or an option's text.\n\n> "));
  session.Type("1\r");
  ASSERT_TRUE(session.WaitFor("Using postgres.\n\n> "));
  ASSERT_TRUE(session.WaitForLog("hook hook=Stop", 3));
  EXPECT_THAT(HookCalls(ReadFile(session.dir() + "/hooks.log")),
              ::testing::ElementsAre("UserPromptSubmit:set up the database", "Stop",
                                     "UserPromptSubmit:mysql", "Stop", "UserPromptSubmit:1",
                                     "Stop"));
  const std::string log = session.Log();
  EXPECT_THAT(log, HasSubstr("state WORKING <- ASKING (answered)"));
  EXPECT_THAT(log, HasSubstr("state ASKING <- WORKING (question)"));
}

// A UserPromptSubmit hook that blocks an answer drops it: the question
// still waits.
TEST(SimulatorTest, BlockedAnswerKeepsTheQuestionOpen) {
  auto done = NewBehaviour("", ActionKind::kComplete);
  done->output = {"Going on."};
  auto ask = NewBehaviour("deploy", ActionKind::kAsk);
  ask->question = "Really?";
  ask->options = {{"yes", done}};
  PtySession session(NewConfig({ask}), [](SimOptions& options) {
    ASSERT_TRUE(options.hooks
                    .AddText(R"({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
                        "command": "grep -q '\"prompt\":\"yes\"' && { echo 'not now' >&2; exit 2; }; exit 0"}]}]}})",
                             "settings.json")
                    .ok());
  });
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("deploy\r");
  ASSERT_TRUE(session.WaitForEnd("  1. yes\n\n> "));
  session.Type("yes\r");
  ASSERT_TRUE(session.WaitForEnd("Prompt blocked by hook: not now\n\n> "));
  EXPECT_THAT(session.Log(), HasSubstr("state ASKING <- WORKING (prompt blocked by hook)"));
  EXPECT_THAT(session.Output(), Not(HasSubstr("Going on.")));
}

// Every action does its work (delay, tool events), then prints its output,
// then ends its way: a crash's lines are on the pane before it dies, a
// hang's before it waits, a failure's before its message.
TEST(SimulatorTest, CrashHangAndFailPrintTheirOutput) {
  auto boom = NewBehaviour("boom", ActionKind::kCrash);
  boom->exit_code = 3;
  boom->output = {"Boom: the agent fell over."};
  auto stuck = NewBehaviour("stuck", ActionKind::kHang);
  stuck->output = {"Thinking very hard..."};
  ToolEvent read;
  read.tool = "Read";
  read.input_json = R"({"file_path":"/etc/motd"})";
  read.result = "motd";
  stuck->events = {read};
  auto broken = NewBehaviour("broken", ActionKind::kFail);
  broken->output = {"Tried twice."};
  broken->message = "Error: the build is broken";
  PtySession session(NewConfig({boom, stuck, broken}), [](SimOptions& options) {
    options.on_crash = [](int, int) {};
  });
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("broken\r");
  ASSERT_TRUE(session.WaitFor("> broken\nTried twice.\nError: the build is broken\n\n> "));
  session.Type("stuck\r");
  ASSERT_TRUE(session.WaitForEnd("> stuck\n⏺ Read(/etc/motd)\n  ⎿  motd\nThinking very hard...\n"));
  session.Type("\x1b");
  ASSERT_TRUE(session.WaitForEnd("Interrupted by user\n\n> "));
  session.Type("boom\r");
  EXPECT_EQ(session.Join(), 3);
  EXPECT_THAT(session.Output(), HasSubstr("> boom\nBoom: the agent fell over.\n"));
}

// Escape or Ctrl-C typed while a PreToolUse hook runs is taken when the hook
// ends, before the tool runs: no tool line, no result, no output, no
// completion; and a Ctrl-C is not left over for the idle prompt.
TEST(SimulatorTest, InterruptDuringAHookStopsTheWorkBeforeTheTool) {
  for (const char* key : {"\x1b", "\x03"}) {
    SCOPED_TRACE(key[0] == '\x1b' ? "Escape" : "Ctrl-C");
    auto deploy = NewBehaviour("deploy", ActionKind::kComplete);
    ToolEvent bash;
    bash.tool = "Bash";
    bash.input_json = R"({"command":"make deploy"})";
    bash.result = "deployed";
    deploy->events = {bash};
    deploy->output = {"Finished."};
    PtySession session(NewConfig({deploy}), [](SimOptions& options) {
      // Runs until the test lets it end.
      ASSERT_TRUE(options.hooks
                      .AddText(R"({"hooks": {"PreToolUse": [{"hooks": [{"type": "command",
                          "command": "echo running > started; while [ ! -e release ]; do sleep 0.005; done"}]}]}})",
                               "settings.json")
                      .ok());
    });
    ASSERT_TRUE(session.WaitForEnd("> "));
    session.Type("deploy\r");
    ASSERT_TRUE(WaitForFile(session.dir() + "/started"));
    session.Type(key);
    ASSERT_TRUE(session.WaitForLog("input_during_hook bytes=1"));
    std::ofstream(session.dir() + "/release") << "go";
    ASSERT_TRUE(session.WaitForEnd("> deploy\n  ⎿  Interrupted by user\n\n> "));
    EXPECT_THAT(session.Log(), HasSubstr("state IDLE <- WORKING (interrupted)"));
    EXPECT_THAT(session.Log(), HasSubstr("hook hook=PreToolUse exit=0 outcome=ok"));
    session.Type("/exit\r");
    EXPECT_EQ(session.Join(), 0);
    const std::string output = session.Output();
    EXPECT_THAT(output, Not(HasSubstr("Bash(")));
    EXPECT_THAT(output, Not(HasSubstr("deployed")));
    EXPECT_THAT(output, Not(HasSubstr("Finished.")));
    EXPECT_THAT(output, Not(HasSubstr("Press Ctrl-C again")));
    EXPECT_THAT(session.Log(), Not(HasSubstr("state IDLE <- WORKING (completed)")));
  }
}

// Typing during a hook is kept: what was typed (a prompt submitted meanwhile
// is queued) is there once the hook has ended.
TEST(SimulatorTest, TypingDuringAHookIsKept) {
  auto first = NewBehaviour("first", ActionKind::kComplete);
  first->output = {"First done."};
  PtySession session(NewConfig({first}), [](SimOptions& options) {
    ASSERT_TRUE(options.hooks
                    .AddText(R"({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
                        "command": "grep -q first || exit 0; echo running > started; while [ ! -e release ]; do sleep 0.005; done"}]}]}})",
                             "settings.json")
                    .ok());
  });
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("first\r");
  ASSERT_TRUE(WaitForFile(session.dir() + "/started"));
  session.Type("second\r");
  ASSERT_TRUE(session.WaitForLog("input_during_hook"));
  std::ofstream(session.dir() + "/release") << "go";
  ASSERT_TRUE(session.WaitFor("First done.\n\n> second\nDone.\n\n> "));
}

// A closed terminal ends the session at once even while a hook runs: the
// hook's process group is killed, not waited for.
TEST(SimulatorTest, ClosedTerminalDuringAHookKillsTheHook) {
  PtySession session(NewConfig({}), [](SimOptions& options) {
    ASSERT_TRUE(options.hooks
                    .AddText(R"({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
                        "command": "sleep 20 & echo $! > hook.pid; wait"}]}]}})",
                             "settings.json")
                    .ok());
  });
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("anything\r");
  ASSERT_TRUE(WaitForFile(session.dir() + "/hook.pid"));
  const pid_t hook = std::atoi(ReadFile(session.dir() + "/hook.pid").c_str());
  ASSERT_GT(hook, 0);
  const absl::Time start = absl::Now();
  session.CloseTerminal();
  EXPECT_EQ(session.Join(/*drain=*/false), 0);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_THAT(session.Log(), HasSubstr("outcome=cancelled"));
  EXPECT_THAT(session.Log(), HasSubstr("state DONE <- WORKING (terminal closed)"));
  // The hook's background child was in its process group: killed with it.
  const absl::Time deadline = absl::Now() + absl::Seconds(2);
  bool gone = false;
  while (!gone && absl::Now() < deadline) {
    const std::string stat = ReadFile(absl::StrCat("/proc/", hook, "/stat"));
    gone = stat.empty() || stat.substr(stat.rfind(')') + 2, 1) == "Z";
    if (!gone) absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_TRUE(gone) << "the hook's child " << hook << " outlived the session";
}

// A completion command written as one line gets its outputs as words of that
// line, quoted for the shell, the way `meow done --output k=v` is typed.
TEST(SimulatorTest, CompletionLineGetsItsOutputsAsWords) {
  TempDir scripts;
  const std::string script = scripts.path() + "/record";
  {
    std::ofstream out(script);
    out << "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$0.args\"\n";
  }
  chmod(script.c_str(), 0755);
  absl::StatusOr<SimConfig> config = ParseSimConfig(
      absl::StrCat("completion: {command: \"", script, " done\"}\n",
                   "behaviours:\n",
                   "  - {when: {contains: deploy}, outputs: {a: \"1 2\", b: \"it's $HOME\"}}\n"),
      "line.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  PtySession session(std::make_shared<SimConfig>(*std::move(config)));
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("deploy\r");
  ASSERT_TRUE(session.WaitForLog("completion attempt=1 outcome=ok"));
  EXPECT_EQ(ReadFile(script + ".args"), "done\n--output\na=1 2\n--output\nb=it's $HOME\n");
}

// UNDERSTUDY_SIM_DETERMINISTIC: the session id follows the agent and the
// config's content, wherever the file is (a harness writes each test's config
// into a fresh temporary folder).
TEST(SimulatorTest, DeterministicSessionIdFollowsTheConfigsContentNotItsPath) {
  const std::string text = "name: coder\nbehaviours:\n  - {when: {contains: x}, output: [\"X.\"]}\n";
  auto id = [](const std::string& text, const std::string& source, const std::string& agent) {
    absl::StatusOr<SimConfig> config = ParseSimConfig(text, source);
    EXPECT_TRUE(config.ok()) << config.status();
    SimOptions options;
    options.config = std::make_shared<SimConfig>(*std::move(config));
    options.agent = agent;
    options.deterministic = true;
    return Simulator(std::move(options)).session_id();
  };
  const std::string here = id(text, "/tmp/run-1/coder.yaml", "coder");
  EXPECT_EQ(here, id(text, "/tmp/run-2/other-name.yaml", "coder"));
  EXPECT_NE(here, id(text + "# changed\n", "/tmp/run-1/coder.yaml", "coder"));
  EXPECT_NE(here, id(text, "/tmp/run-1/coder.yaml", "reviewer"));
}

// A completion command named `name` on PATH for the life of the object (the
// MEOW dialect runs `meow done`), recording its arguments to NAME.args.
class CommandOnPath {
 public:
  explicit CommandOnPath(const std::string& name) : script_(dir_.path() + "/" + name) {
    {
      std::ofstream out(script_);
      out << "#!/bin/sh\nprintf '%s\\n' \"$@\" >> \"$0.args\"\n";
    }
    chmod(script_.c_str(), 0755);
    const char* path = std::getenv("PATH");
    saved_ = path != nullptr ? path : "";
    setenv("PATH", (dir_.path() + ":" + saved_).c_str(), 1);
  }
  ~CommandOnPath() { setenv("PATH", saved_.c_str(), 1); }
  std::string Args() const { return ReadFile(script_ + ".args"); }

 private:
  TempDir dir_;
  std::string script_;
  std::string saved_;
};

std::shared_ptr<SimConfig> ParsedConfig(const std::string& text) {
  absl::StatusOr<SimConfig> config = ParseSimConfig(text, "sim.yaml");
  EXPECT_TRUE(config.ok()) << config.status();
  return std::make_shared<SimConfig>(config.ok() ? *std::move(config) : DefaultSimConfig());
}

// The MEOW dialect's ask: its options are shown, any answer is taken, and the
// turn completes with the answer as output `answer` (through `meow done`).
TEST(SimulatorTest, MeowAskTakesAnyAnswerAndCompletesWithIt) {
  CommandOnPath meow("meow");
  PtySession session(ParsedConfig(R"(behaviors:
  - match: review
    action: {type: ask, question: "Found 3 issues. Continue anyway?", options: ["yes", "no"]}
)"), [](SimOptions& options) { options.delay_override = absl::ZeroDuration(); });
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("review the code\r");
  ASSERT_TRUE(session.WaitForEnd("Continue anyway?\n  1. yes\n  2. no\n\n> "));
  session.Type("yes, but fix them first\r");
  ASSERT_TRUE(session.WaitForLog("completion attempt=1 outcome=ok"));
  EXPECT_EQ(meow.Args(), "done\n--output\nanswer=yes, but fix them first\n");
  EXPECT_THAT(session.Output(), Not(HasSubstr("Please answer")));
}

// prompt_delay: after the turn's Stop hooks the indicator waits; the agent is
// still working meanwhile (an interrupt ends the wait).
TEST(SimulatorTest, PromptDelayHoldsTheIndicatorAfterATurn) {
  PtySession session(ParsedConfig(R"(timing: {startup_delay: 0, default_work_delay: 0, prompt_delay: 30s}
behaviors:
  - {match: go, action: {type: fail, fail_message: "no luck"}}
)"), [](SimOptions& options) {
    ASSERT_TRUE(options.hooks.AddText(kLogEveryPrompt, "settings.json").ok());
  });
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("go\r");
  ASSERT_TRUE(session.WaitForLog("hook hook=Stop"));
  ASSERT_TRUE(session.WaitForEnd("Error: no luck\n"));
  EXPECT_THAT(session.Log(), Not(HasSubstr("state IDLE <- WORKING (failed)")));
  session.Type("\x1b");
  ASSERT_TRUE(session.WaitForEnd("Interrupted by user\n\n> "));
}

// hooks.fire_stop_hook and hooks.fire_tool_events: off, those hooks are not
// run though the settings name them; the tools still show.
TEST(SimulatorTest, MeowHookSwitchesTurnHooksOff) {
  constexpr char kEveryHook[] = R"({"hooks": {
    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "cat >> hooks.log; echo >> hooks.log"}]}],
    "PreToolUse": [{"hooks": [{"type": "command", "command": "cat >> hooks.log; echo >> hooks.log"}]}],
    "PostToolUse": [{"hooks": [{"type": "command", "command": "cat >> hooks.log; echo >> hooks.log"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "cat >> hooks.log; echo >> hooks.log"}]}]}})";
  CommandOnPath meow("meow");
  for (const bool fire : {true, false}) {
    SCOPED_TRACE(fire ? "fired" : "not fired");
    PtySession session(ParsedConfig(absl::StrCat(
                           "hooks: {fire_stop_hook: ", fire ? "true" : "false",
                           ", fire_tool_events: ", fire ? "true" : "false", "}\n", R"(behaviors:
  - match: go
    action:
      type: complete
      events: [{type: tool-starting, data: {tool: Bash, command: ls}}]
)")),
                       [&](SimOptions& options) {
                         options.delay_override = absl::ZeroDuration();
                         ASSERT_TRUE(options.hooks.AddText(kEveryHook, "settings.json").ok());
                       });
    ASSERT_TRUE(session.WaitForEnd("> "));
    session.Type("go\r");
    ASSERT_TRUE(session.WaitForLog("state IDLE <- WORKING (completed)"));
    EXPECT_THAT(session.Output(), HasSubstr("⏺ Bash(ls)\n  ⎿  (no output)\n"));
    if (fire) {
      EXPECT_THAT(HookCalls(ReadFile(session.dir() + "/hooks.log")),
                  ::testing::ElementsAre("UserPromptSubmit:go", "PreToolUse", "PostToolUse",
                                         "Stop"));
    } else {
      EXPECT_THAT(HookCalls(ReadFile(session.dir() + "/hooks.log")),
                  ::testing::ElementsAre("UserPromptSubmit:go"));
    }
  }
}

// Payloads carry what Claude Code's do: permission_mode everywhere,
// tool_use_id with the tool events, tool_response as an object.
TEST(SimulatorTest, HookPayloadsCarryPermissionModeToolUseIdAndAResponseObject) {
  auto deploy = NewBehaviour("deploy", ActionKind::kComplete);
  ToolEvent bash;
  bash.tool = "Bash";
  bash.input_json = R"({"command":"ls"})";
  bash.result = "a.txt";
  ToolEvent read;
  read.tool = "Read";
  read.input_json = R"({"file_path":"/etc/hosts"})";
  read.result = "127.0.0.1 localhost";
  deploy->events = {bash, read};
  PtySession session(NewConfig({deploy}), [](SimOptions& options) {
    options.skip_permissions = true;
    ASSERT_TRUE(options.hooks
                    .AddText(R"({"hooks": {
    "PreToolUse": [{"hooks": [{"type": "command", "command": "cat >> hooks.log; echo >> hooks.log"}]}],
    "PostToolUse": [{"hooks": [{"type": "command", "command": "cat >> hooks.log; echo >> hooks.log"}]}]}})",
                             "settings.json")
                    .ok());
  });
  ASSERT_TRUE(session.WaitForEnd("> "));
  session.Type("deploy\r");
  ASSERT_TRUE(session.WaitForLog("state IDLE <- WORKING (completed)"));
  std::vector<nlohmann::json> payloads;
  std::istringstream lines(ReadFile(session.dir() + "/hooks.log"));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) payloads.push_back(nlohmann::json::parse(line));
  }
  ASSERT_EQ(payloads.size(), 4u);
  for (const nlohmann::json& p : payloads) EXPECT_EQ(p["permission_mode"], "bypassPermissions");
  EXPECT_EQ(payloads[0]["hook_event_name"], "PreToolUse");
  EXPECT_EQ(payloads[0]["tool_use_id"], "toolu_sim_1");
  EXPECT_EQ(payloads[1]["hook_event_name"], "PostToolUse");
  EXPECT_EQ(payloads[1]["tool_use_id"], "toolu_sim_1");
  EXPECT_EQ(payloads[1]["tool_response"],
            nlohmann::json({{"stdout", "a.txt"}, {"stderr", ""}, {"interrupted", false},
                            {"isImage", false}}));
  EXPECT_EQ(payloads[3]["tool_use_id"], "toolu_sim_2");
  EXPECT_EQ(payloads[3]["tool_response"], nlohmann::json({{"output", "127.0.0.1 localhost"}}));
}

// A fail_then_succeed's count is the session's, kept across a restart with
// --resume: "crash, then succeed after the restart" in two processes.
TEST(SimulatorTest, FailThenSucceedCountSurvivesACrashAndAResume) {
  TempDir state;
  CommandOnPath meow("meow");
  const std::string text = R"(behaviors:
  - match: step-2
    action: {type: fail_then_succeed, fail_count: 1, exit_code: 137, success_outputs: {result: done}}
)";
  std::string session_id;
  {
    int crashed_with = -1;
    PtySession session(ParsedConfig(text), [&](SimOptions& options) {
      options.delay_override = absl::ZeroDuration();
      options.state_dir = state.path();
      options.on_crash = [&](int exit_code, int) { crashed_with = exit_code; };
    });
    ASSERT_TRUE(session.WaitForEnd("> "));
    session_id = session.session_id();
    session.Type("step-2\r");
    EXPECT_EQ(session.Join(), 137);
    EXPECT_EQ(crashed_with, 137);
  }
  EXPECT_EQ(meow.Args(), "");
  PtySession resumed(ParsedConfig(text), [&](SimOptions& options) {
    options.delay_override = absl::ZeroDuration();
    options.state_dir = state.path();
    options.session_id = session_id;
    options.resumed = true;
  });
  ASSERT_TRUE(resumed.WaitForEnd("> "));
  resumed.Type("step-2\r");
  ASSERT_TRUE(resumed.WaitForLog("state IDLE <- WORKING (completed)"));
  EXPECT_EQ(meow.Args(), "done\n--output\nresult=done\n");
  // A new session (not resumed) counts from zero: it crashes again.
  int crashed_with = -1;
  PtySession fresh(ParsedConfig(text), [&](SimOptions& options) {
    options.delay_override = absl::ZeroDuration();
    options.state_dir = state.path();
    options.on_crash = [&](int exit_code, int) { crashed_with = exit_code; };
  });
  ASSERT_TRUE(fresh.WaitForEnd("> "));
  fresh.Type("step-2\r");
  EXPECT_EQ(fresh.Join(), 137);
}

// Runs the simulator on `input` through pipes (not a terminal); its output
// and log.
struct PipedRun {
  int exit_code = -1;
  std::string output;
  std::string log;
};

PipedRun RunPiped(const std::string& input) {
  PipedRun result;
  int in[2];
  int out[2];
  if (pipe(in) != 0 || pipe(out) != 0) return result;
  TempDir dir;
  std::unique_ptr<EventLog> log = *EventLog::Open(dir.path() + "/sim.log", LogFormat::kText);
  SimOptions options;
  options.config = NewConfig({});
  options.input_fd = in[0];
  options.output_fd = out[1];
  options.handle_signals = false;
  options.deterministic = true;
  options.cwd = dir.path();
  options.log = log.get();
  if (write(in[1], input.data(), input.size()) != static_cast<ssize_t>(input.size())) return result;
  close(in[1]);
  Simulator simulator(std::move(options));
  result.exit_code = simulator.Run();
  close(out[1]);
  char buffer[4096];
  ssize_t n;
  while ((n = read(out[0], buffer, sizeof(buffer))) > 0) result.output.append(buffer, n);
  close(in[0]);
  close(out[0]);
  result.log = ReadFile(dir.path() + "/sim.log");
  return result;
}

// Not a terminal: LF submits, and the end of the input ends the session
// once its prompts are done.
TEST(SimulatorTest, PipedInputRunsEachLineThenEnds) {
  PipedRun run = RunPiped("first\nsecond\n");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.output, HasSubstr("> first\nDone.\n\n> second\nDone.\n"));
  EXPECT_THAT(run.log, HasSubstr("(end of input)"));
}

// `/exit` ends the session whether typed at the prompt or queued behind
// work: it is never sent to a behaviour as a prompt.
TEST(SimulatorTest, QueuedExitCommandEndsTheSession) {
  PipedRun run = RunPiped("first\n/exit\nthird\n");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.output, HasSubstr("> first\nDone.\n\n> /exit\nBye.\n"));
  EXPECT_THAT(run.output, Not(HasSubstr("third")));
  EXPECT_THAT(run.log, HasSubstr("(exit command)"));
}

}  // namespace
}  // namespace sim
}  // namespace understudy
