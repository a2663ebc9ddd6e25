#include "base/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

constexpr absl::Duration kWait = absl::Seconds(10);

// Writes all of `data` to `fd` (non-blocking).
absl::Status WriteAllForTest(int fd, absl::string_view data) {
  const absl::Time deadline = absl::Now() + kWait;
  while (!data.empty() && absl::Now() < deadline) {
    pollfd p = {fd, POLLOUT, 0};
    ::poll(&p, 1, 100);
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return absl::UnavailableError(std::strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return data.empty() ? absl::OkStatus() : absl::DeadlineExceededError("write");
}

// Everything `fd` (non-blocking) gives until EOF or `timeout`.
std::string ReadAll(int fd, absl::Duration timeout = kWait) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string out;
  char buffer[4096];
  while (absl::Now() < deadline) {
    pollfd p = {fd, POLLIN, 0};
    ::poll(&p, 1, 100);
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0) return out;
    if (n > 0) out.append(buffer, static_cast<size_t>(n));
  }
  ADD_FAILURE() << "no EOF within the deadline";
  return out;
}

TEST(ChildProcessTest, RunsTheCommandExactlyAsGiven) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Spawn({"sh", "-c", "echo hi"});
  ASSERT_THAT(child, IsOk());
  EXPECT_EQ(ReadAll((*child)->stdout_fd()), "hi\n");
  std::optional<int> status = (*child)->WaitFor(kWait);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(ChildProcess::DescribeExit(*status), "exited with status 0");

  // Arguments that look like options (ours or anyone's) are the command's.
  child = ChildProcess::Spawn(
      {"sh", "-c", "printf '%s|' \"$0\" \"$@\"; cat", "--name", "-x", "--", "a b"});
  ASSERT_THAT(child, IsOk());
  ASSERT_THAT(WriteAllForTest((*child)->stdin_fd(), "from stdin"), IsOk());
  (*child)->CloseStdin();
  EXPECT_EQ(ReadAll((*child)->stdout_fd()), "--name|-x|--|a b|from stdin");
}

TEST(ChildProcessTest, ExitStatusIsReported) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Spawn({"sh", "-c", "exit 3"});
  ASSERT_THAT(child, IsOk());
  std::optional<int> status = (*child)->WaitFor(kWait);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(ChildProcess::DescribeExit(*status), "exited with status 3");
}

TEST(ChildProcessTest, MissingCommandIsNotFound) {
  EXPECT_THAT(ChildProcess::Spawn({"understudy-no-such-command-xyz"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("understudy-no-such-command-xyz")));
  EXPECT_THAT(ChildProcess::Spawn({}), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ChildProcessTest, TerminateEndsAChildThatIgnoresEof) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Spawn({"sleep", "30"});
  ASSERT_THAT(child, IsOk());
  const absl::Time start = absl::Now();
  std::optional<int> status = (*child)->Terminate(absl::Milliseconds(100));
  ASSERT_TRUE(status.has_value());
  EXPECT_THAT(ChildProcess::DescribeExit(*status), StartsWith("killed by signal 15"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(ChildProcessTest, TerminateKillsAChildThatIgnoresSigterm) {
  // The trap is set before the script says it is ready, so SIGTERM cannot
  // come first.
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Spawn({"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"});
  ASSERT_THAT(child, IsOk());
  std::string ready;
  const absl::Time deadline = absl::Now() + kWait;
  while (!absl::StrContains(ready, "\n") && absl::Now() < deadline) {
    pollfd p = {(*child)->stdout_fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
    char c;
    if (::read((*child)->stdout_fd(), &c, 1) == 1) ready.push_back(c);
  }
  ASSERT_EQ(ready, "ready\n");
  std::optional<int> status = (*child)->Terminate(absl::Milliseconds(100));
  ASSERT_TRUE(status.has_value());
  EXPECT_THAT(ChildProcess::DescribeExit(*status), StartsWith("killed by signal 9"));
}

TEST(RunCommandTest, CollectsOutputAndExitStatus) {
  RunOptions options;
  options.spawn.merge_stderr = true;
  absl::StatusOr<CommandResult> result =
      RunCommand({"sh", "-c", "echo out; echo err >&2; exit 4"}, options);
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->output, "out\nerr\n");
  EXPECT_FALSE(result->ok());
  EXPECT_FALSE(result->timed_out);
  EXPECT_EQ(result->Describe(), "exited with status 4");
}

TEST(RunCommandTest, UsesTheGivenEnvironmentAndDirectory) {
  RunOptions options;
  options.spawn.env = EnvironmentWith({"US_SUBPROCESS_TEST=a'b\"c"}, {"HOME"});
  options.spawn.cwd = "/";
  absl::StatusOr<CommandResult> result =
      RunCommand({"sh", "-c", "printf '%s|%s|%s' \"$US_SUBPROCESS_TEST\" \"${HOME-unset}\" \"$PWD\""},
                 options);
  ASSERT_THAT(result, IsOk());
  EXPECT_TRUE(result->ok()) << result->Describe();
  EXPECT_EQ(result->output, "a'b\"c|unset|/");
}

TEST(RunCommandTest, TimeoutEndsTheWholeGroup) {
  RunOptions options;
  options.timeout = absl::Milliseconds(300);
  const absl::Time start = absl::Now();
  absl::StatusOr<CommandResult> result = RunCommand({"sh", "-c", "sleep 30 & sleep 30"}, options);
  ASSERT_THAT(result, IsOk());
  EXPECT_TRUE(result->timed_out);
  EXPECT_FALSE(result->ok());
  EXPECT_THAT(result->Describe(), StartsWith("timed out after"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(RunCommandTest, OutputBeyondTheLimitIsDropped) {
  RunOptions options;
  options.max_output = 10;
  absl::StatusOr<CommandResult> result = RunCommand({"sh", "-c", "yes | head -c 100000"}, options);
  ASSERT_THAT(result, IsOk());
  EXPECT_TRUE(result->ok());
  EXPECT_EQ(result->output.size(), 10u);
  EXPECT_TRUE(result->truncated);
}

TEST(RunCommandTest, InputArrivesOnStdinAndStderrIsCapturedApart) {
  RunOptions options;
  options.spawn.capture_stderr = true;
  // Larger than a pipe's buffer, so that writing and reading interleave.
  options.input = std::string(200000, 'x') + "\nend";
  absl::StatusOr<CommandResult> result =
      RunCommand({"sh", "-c", "wc -c; echo err >&2; exit 3"}, options);
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(absl::StripAsciiWhitespace(result->output), "200004");
  EXPECT_EQ(result->error_output, "err\n");
  EXPECT_EQ(result->Describe(), "exited with status 3");
}

TEST(RunCommandTest, InputTheCommandNeverReadsIsDropped) {
  RunOptions options;
  options.input = std::string(1 << 20, 'x');
  options.timeout = absl::Seconds(10);
  // Exits at once without reading: the write fails with EPIPE, quietly.
  absl::StatusOr<CommandResult> result = RunCommand({"sh", "-c", "exec 0<&-; echo done"}, options);
  ASSERT_THAT(result, IsOk());
  EXPECT_TRUE(result->ok()) << result->Describe();
  EXPECT_FALSE(result->timed_out);
  EXPECT_EQ(result->output, "done\n");
}

// A scratch directory for one test, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    char pattern[] = "/tmp/subprocess_test.XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~ScratchDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// True once `pid` is gone or a zombie (killed, not yet reaped by init),
// waiting up to `timeout`.
bool GoneWithin(pid_t pid, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = text.rfind(')');
    if (text.empty() || (paren != std::string::npos && text.substr(paren + 2, 1) == "Z")) {
      return true;
    }
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
}

// The caller's own descriptor is served while the command runs (the command
// waits for what the callback does), and one that hung up is left alone.
TEST(RunCommandTest, WatchedDescriptorsAreServedWhileTheCommandRuns) {
  ScratchDir dir;
  const std::string release = dir.path() + "/release";
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ASSERT_EQ(::write(pipe_fds[1], "x", 1), 1);
  ::close(pipe_fds[1]);  // after "x", end of file
  std::string got;
  int calls = 0;
  RunOptions options;
  options.timeout = absl::Seconds(20);
  options.watch_fds = {pipe_fds[0]};
  options.on_ready = [&](int fd) {
    ++calls;
    char c;
    if (::read(fd, &c, 1) != 1) return WatchResult::kStopWatching;
    got.push_back(c);
    std::ofstream(release) << "go";
    return WatchResult::kKeepWatching;
  };
  absl::StatusOr<CommandResult> result = RunCommand(
      {"sh", "-c", "while [ ! -e \"$1\" ]; do sleep 0.01; done; echo released", "sh", release},
      options);
  ::close(pipe_fds[0]);
  ASSERT_THAT(result, IsOk());
  EXPECT_TRUE(result->ok()) << result->Describe();
  EXPECT_FALSE(result->abandoned);
  EXPECT_EQ(result->output, "released\n");
  EXPECT_EQ(got, "x");
  EXPECT_EQ(calls, 2);  // "x", then the end of file; never again
}

// kAbandon ends the run at once and kills the command's whole process group,
// a background child included.
TEST(RunCommandTest, AbandonKillsTheWholeGroupAtOnce) {
  ScratchDir dir;
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  std::string pid_text;
  RunOptions options;
  options.timeout = absl::Seconds(60);
  options.watch_fds = {fd};
  options.on_ready = [&](int ready) {
    char buffer[64];
    const ssize_t n = ::read(ready, buffer, sizeof(buffer));
    if (n > 0) pid_text.append(buffer, static_cast<size_t>(n));
    // Once the command has said which child it left in the background.
    return absl::StrContains(pid_text, "\n") ? WatchResult::kAbandon : WatchResult::kKeepWatching;
  };
  const absl::Time start = absl::Now();
  absl::StatusOr<CommandResult> result =
      RunCommand({"sh", "-c", "sleep 60 & echo $! > \"$1\"; sleep 60", "sh", fifo}, options);
  const absl::Duration took = absl::Now() - start;
  ::close(fd);
  ASSERT_THAT(result, IsOk());
  EXPECT_TRUE(result->abandoned);
  EXPECT_FALSE(result->timed_out);
  EXPECT_FALSE(result->ok());
  EXPECT_LT(took, absl::Seconds(10));
  EXPECT_THAT(result->Describe(), HasSubstr("abandoned after"));
  EXPECT_THAT(result->Describe(), HasSubstr("killed by signal 9"));
  pid_t background = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(pid_text), &background)) << pid_text;
  EXPECT_TRUE(GoneWithin(background, absl::Seconds(5))) << "the background sleep outlived the run";
}

TEST(ShellWordTest, QuotesOnlyWhatTheShellWouldRead) {
  EXPECT_EQ(ShellWord("plain-word_1.txt"), "plain-word_1.txt");
  EXPECT_EQ(ShellWord("k=v"), "k=v");
  EXPECT_EQ(ShellWord(""), "''");
  EXPECT_EQ(ShellWord("a=1 2"), "'a=1 2'");
  EXPECT_EQ(ShellWord("it's $HOME"), "'it'\\''s $HOME'");
  // Whatever it holds, /bin/sh reads it back as the same one word.
  const std::string hostile = "a'b\"c $(id) `x` ;|&\n\t* ~ \\";
  absl::StatusOr<CommandResult> echoed =
      RunCommand({"/bin/sh", "-c", "printf '%s|' " + ShellWord(hostile) + " " + ShellWord("")});
  ASSERT_THAT(echoed, IsOk());
  EXPECT_EQ(echoed->output, hostile + "||");
}

TEST(RunCommandTest, MergeAndCaptureStderrExcludeEachOther) {
  RunOptions options;
  options.spawn.merge_stderr = true;
  options.spawn.capture_stderr = true;
  EXPECT_THAT(RunCommand({"true"}, options), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(RunCommandTest, MissingCommandIsNotFound) {
  EXPECT_THAT(RunCommand({"understudy-no-such-command-xyz"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("understudy-no-such-command-xyz")));
}

}  // namespace
}  // namespace understudy
