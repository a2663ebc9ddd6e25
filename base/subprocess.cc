#include "base/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "base/env.h"
#include "base/fd_io.h"
#include "base/text.h"

extern char** environ;

namespace understudy {
namespace {
// The wait status recorded when the child was reaped by someone else
// (SIGCHLD ignored): how it ended is unknown.
constexpr int kUnknownExit = -1;

// write(2) that never raises SIGPIPE in this process, whatever its
// disposition: a child that exits without reading its stdin gets EPIPE, not
// the death of its parent. The signal is blocked in this thread around the
// write and the one the write raised is consumed.
ssize_t WriteWithoutSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_only;
  sigset_t old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  sigset_t pending_before;
  sigpending(&pending_before);
  const ssize_t n = ::write(fd, data, size);
  const int error = errno;
  if (n < 0 && error == EPIPE && !sigismember(&pending_before, SIGPIPE)) {
    const timespec zero = {0, 0};
    sigtimedwait(&pipe_only, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = error;
  return n;
}

}  // namespace

ChildProcess::ChildProcess(pid_t pid, int stdin_fd, int stdout_fd, int stderr_fd, int pidfd)
    : pid_(pid), stdin_fd_(stdin_fd), stdout_fd_(stdout_fd), stderr_fd_(stderr_fd), pidfd_(pidfd) {}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) return absl::InvalidArgumentError("no command to run");
  if (options.merge_stderr && options.capture_stderr) {
    return absl::InvalidArgumentError("merge_stderr and capture_stderr exclude each other");
  }
  int in[2];   // The child's stdin: it reads in[0], we write in[1].
  int out[2];  // The child's stdout: it writes out[1], we read out[0].
  if (::pipe2(in, O_CLOEXEC) != 0) {
    return absl::UnavailableError(absl::StrCat("pipe: ", ErrnoText(errno)));
  }
  if (::pipe2(out, O_CLOEXEC) != 0) {
    const int error = errno;
    ::close(in[0]);
    ::close(in[1]);
    return absl::UnavailableError(absl::StrCat("pipe: ", ErrnoText(error)));
  }
  int err[2] = {-1, -1};  // With capture_stderr: it writes err[1], we read err[0].
  if (options.capture_stderr && ::pipe2(err, O_CLOEXEC) != 0) {
    const int error = errno;
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    return absl::UnavailableError(absl::StrCat("pipe: ", ErrnoText(error)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on the new descriptors; everything else of
  // ours (sockets of the HTTP client and server, whoever opened them) is
  // closed in the child.
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  if (options.merge_stderr) posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
  if (options.capture_stderr) posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  // This process ignores SIGPIPE and may block SIGINT/SIGTERM; an ignored
  // signal stays ignored across exec, so give the child the defaults.
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&defaults, s);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> env_copy = options.env.value_or(std::vector<std::string>{});
  std::vector<char*> cenv;
  for (std::string& e : env_copy) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, cargv[0], &actions, &attr, cargv.data(),
                                     options.env.has_value() ? cenv.data() : environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  if (err[1] >= 0) ::close(err[1]);
  if (spawned != 0) {
    ::close(in[1]);
    ::close(out[0]);
    if (err[0] >= 0) ::close(err[0]);
    const std::string message =
        absl::StrCat("cannot run ", ShellQuoted(argv), ": ", ErrnoText(spawned));
    if (spawned == ENOENT) return absl::NotFoundError(message);
    if (spawned == EACCES || spawned == EPERM) return absl::PermissionDeniedError(message);
    return absl::UnavailableError(message);
  }
  ::fcntl(in[1], F_SETFL, ::fcntl(in[1], F_GETFL) | O_NONBLOCK);
  ::fcntl(out[0], F_SETFL, ::fcntl(out[0], F_GETFL) | O_NONBLOCK);
  if (err[0] >= 0) ::fcntl(err[0], F_SETFL, ::fcntl(err[0], F_GETFL) | O_NONBLOCK);
  // A descriptor that polls readable when the child exits (Linux 5.3+);
  // without it, WaitFor polls.
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) ::fcntl(pidfd, F_SETFD, FD_CLOEXEC);
  return std::unique_ptr<ChildProcess>(
      new ChildProcess(pid, in[1], out[0], err[0], pidfd < 0 ? -1 : pidfd));
}

ChildProcess::~ChildProcess() {
  if (!WaitFor(absl::ZeroDuration()).has_value()) {
    Signal(SIGKILL);
    WaitFor(absl::Seconds(5));
  }
  CloseStdin();
  ::close(stdout_fd_);
  if (stderr_fd_ >= 0) ::close(stderr_fd_);
  if (pidfd_ >= 0) ::close(pidfd_);
}

void ChildProcess::CloseStdin() {
  absl::MutexLock lock(&mu_);
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  stdin_fd_ = -1;
}

std::optional<int> ChildProcess::WaitFor(absl::Duration timeout) {
  const absl::Time deadline =
      timeout == absl::InfiniteDuration() ? absl::InfiniteFuture() : Env::Default()->Now() + timeout;
  absl::Duration backoff = absl::Milliseconds(1);
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (wait_status_.has_value()) return wait_status_;
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        wait_status_ = status;
        return wait_status_;
      }
      if (r < 0 && errno == ECHILD) {
        wait_status_ = kUnknownExit;
        return wait_status_;
      }
    }
    const absl::Duration left = deadline - Env::Default()->Now();
    if (left <= absl::ZeroDuration()) return std::nullopt;
    if (pidfd_ >= 0) {
      pollfd p = {pidfd_, POLLIN, 0};
      ::poll(&p, 1, PollMs(left));
    } else {
      Env::Default()->SleepFor(std::min(backoff, left));
      backoff = std::min(backoff * 2, absl::Milliseconds(50));
    }
  }
}

void ChildProcess::Signal(int signal) {
  absl::MutexLock lock(&mu_);
  // Once reaped, the pid (and the group id) may belong to someone else.
  if (wait_status_.has_value()) return;
  if (::kill(-pid_, signal) != 0) ::kill(pid_, signal);
}

std::optional<int> ChildProcess::Terminate(absl::Duration grace) {
  CloseStdin();
  if (std::optional<int> status = WaitFor(grace)) return status;
  Signal(SIGTERM);
  if (std::optional<int> status = WaitFor(grace)) return status;
  Signal(SIGKILL);
  return WaitFor(std::max(grace, absl::Seconds(1)));
}

std::string ChildProcess::DescribeExit(int wait_status) {
  if (wait_status == kUnknownExit) return "exited";
  if (WIFEXITED(wait_status)) return absl::StrCat("exited with status ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* name = ::strsignal(sig);
    return absl::StrCat("killed by signal ", sig,
                        name != nullptr ? absl::StrCat(" (", name, ")") : "");
  }
  return absl::StrCat("ended (wait status ", wait_status, ")");
}
std::string ShellWord(absl::string_view arg) {
  const bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
           (c != '\0' && std::strchr("@%+=:,./_-", c) != nullptr);
  });
  if (plain) return std::string(arg);
  return absl::StrCat("'", absl::StrReplaceAll(arg, {{"'", "'\\''"}}), "'");
}

std::string ShellQuoted(const std::vector<std::string>& argv) {
  std::vector<std::string> parts;
  for (const std::string& a : argv) parts.push_back(ShellWord(a));
  // Short enough to leave room, in a message cut at 200 bytes, for what
  // happened to it.
  return Shorten(absl::StrJoin(parts, " "), 80);
}

bool CommandResult::ok() const {
  return !timed_out && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

std::string CommandResult::Describe() const {
  const std::string how = ChildProcess::DescribeExit(wait_status);
  if (abandoned) return absl::StrCat("abandoned after ", absl::FormatDuration(elapsed), " (", how, ")");
  if (!timed_out) return how;
  return absl::StrCat("timed out after ", absl::FormatDuration(elapsed), " (", how, ")");
}

namespace {

// One of the child's output pipes and the string it is read into.
struct Stream {
  int fd;
  std::string* text;
};

// Writes to the child's stdin what the pipe takes of `options.input` past
// `written`; closes stdin once all of it is in or the child will not read
// the rest.
void FeedStdin(ChildProcess& child, const RunOptions& options, size_t& written) {
  const ssize_t n = WriteWithoutSigpipe(child.stdin_fd(), options.input.data() + written,
                                        options.input.size() - written);
  if (n > 0) written += static_cast<size_t>(n);
  // EPIPE and the like: the child will not read the rest.
  const bool failed = n < 0 && errno != EAGAIN && errno != EINTR;
  if (failed || written == options.input.size()) child.CloseStdin();
}

// Reads the output pipes that polled ready (fds[i] is streams[i]'s) into
// their strings, up to `options.max_output` each (the rest is dropped and
// `result.truncated` set); keeps in `streams` those not at EOF.
void ReadStreams(const std::vector<pollfd>& fds, const RunOptions& options,
                 std::vector<Stream>& streams, CommandResult& result) {
  char buffer[16384];
  std::vector<Stream> open;
  for (size_t i = 0; i < streams.size(); ++i) {
    if (fds[i].revents == 0) {
      open.push_back(streams[i]);
      continue;
    }
    const ssize_t n = ::read(streams[i].fd, buffer, sizeof(buffer));
    if (n == 0) continue;  // EOF
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) open.push_back(streams[i]);
      continue;
    }
    std::string& text = *streams[i].text;
    const size_t room = options.max_output - std::min(options.max_output, text.size());
    const size_t take = std::min(room, static_cast<size_t>(n));
    text.append(buffer, take);
    if (take < static_cast<size_t>(n)) result.truncated = true;
    open.push_back(streams[i]);
  }
  streams = std::move(open);
}

// Calls `options.on_ready` for each of the caller's descriptors that polled
// ready (fds[watched_at + i] is watched[i]'s); keeps in `watched` those
// still to watch. kAbandon sets `result.abandoned` and stops there.
void ServeWatched(const std::vector<pollfd>& fds, size_t watched_at, const RunOptions& options,
                  std::vector<int>& watched, CommandResult& result) {
  std::vector<int> still;
  for (size_t i = 0; i < watched.size() && !result.abandoned; ++i) {
    if (fds[watched_at + i].revents == 0) {
      still.push_back(watched[i]);
      continue;
    }
    switch (options.on_ready(watched[i])) {
      case WatchResult::kKeepWatching:
        still.push_back(watched[i]);
        break;
      case WatchResult::kStopWatching:
        break;
      case WatchResult::kAbandon:
        result.abandoned = true;
        break;
    }
  }
  if (result.abandoned) return;
  watched = std::move(still);
}

// After the loop: the abandoned command's group is killed, a timed-out one
// gets SIGTERM, 2 s, then SIGKILL; else the leader is waited for (until the
// deadline) and what it left behind killed. Returns the leader's wait
// status when known (`status`, when the loop saw it exit).
std::optional<int> EndChild(ChildProcess& child, const CommandResult& result,
                            std::optional<int> status, absl::Time deadline) {
  child.CloseStdin();
  if (result.abandoned) {
    child.Signal(SIGKILL);
    status = child.WaitFor(absl::Seconds(5));
  } else if (result.timed_out) {
    child.Signal(SIGTERM);
    status = child.WaitFor(absl::Seconds(2));
    if (!status.has_value()) {
      child.Signal(SIGKILL);
      status = child.WaitFor(absl::Seconds(5));
    }
  } else {
    // (poll failing is the only other way out of the loop.)
    if (!status.has_value()) status = child.WaitFor(std::max(deadline - Env::Default()->Now(), absl::ZeroDuration()));
    // The leader is gone; nothing it left behind outlives the run.
    child.Signal(SIGKILL);
  }
  return status;
}

}  // namespace

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const RunOptions& options) {
  const absl::Time start = Env::Default()->Now();
  const absl::Time deadline = options.timeout == absl::InfiniteDuration()
                                  ? absl::InfiniteFuture()
                                  : start + options.timeout;
  absl::StatusOr<std::unique_ptr<ChildProcess>> spawned = ChildProcess::Spawn(argv, options.spawn);
  if (!spawned.ok()) return spawned.status();
  ChildProcess& child = **spawned;
  if (options.input.empty()) child.CloseStdin();
  size_t written = 0;
  CommandResult result;
  // Reads until EOF on the output pipes: every writer (the child and
  // whatever it started that kept the descriptors) is gone. A grandchild
  // holding one past the deadline does not hold us: the whole group is
  // ended. Meanwhile stdin takes `input` as fast as the child reads it.
  std::vector<Stream> streams = {{child.stdout_fd(), &result.output}};
  if (child.stderr_fd() >= 0) streams.push_back({child.stderr_fd(), &result.error_output});
  std::vector<int> watched = options.watch_fds;
  std::optional<int> status;
  // Until EOF on every output pipe, then until the leader exits; the
  // caller's descriptors are watched all along.
  for (;;) {
    if (streams.empty()) {
      status = child.WaitFor(absl::ZeroDuration());
      if (status.has_value()) break;
    }
    const absl::Duration left = deadline - Env::Default()->Now();
    if (left <= absl::ZeroDuration()) {
      result.timed_out = true;
      break;
    }
    std::vector<pollfd> fds;
    for (const Stream& s : streams) fds.push_back({s.fd, POLLIN, 0});
    const bool writing = child.stdin_fd() >= 0;
    const size_t stdin_at = fds.size();
    if (writing) fds.push_back({child.stdin_fd(), POLLOUT, 0});
    int timeout_ms = std::min(PollMs(left), 1000);
    if (streams.empty()) {
      if (child.exit_fd() >= 0) {
        fds.push_back({child.exit_fd(), POLLIN, 0});
      } else {
        timeout_ms = std::min(timeout_ms, 10);  // no pidfd: look now and then
      }
    }
    const size_t watched_at = fds.size();
    for (int fd : watched) fds.push_back({fd, POLLIN, 0});
    const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (writing && fds[stdin_at].revents != 0) FeedStdin(child, options, written);
    ReadStreams(fds, options, streams, result);
    ServeWatched(fds, watched_at, options, watched, result);
    if (result.abandoned) break;
  }
  result.wait_status = EndChild(child, result, status, deadline).value_or(kUnknownExit);
  result.elapsed = Env::Default()->Now() - start;
  return result;
}

std::vector<std::string> EnvironmentWith(const std::vector<std::string>& set,
                                         const std::vector<std::string>& unset) {
  std::map<std::string, std::string> env;
  std::vector<std::string> order;
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = name_of(entry);
    if (env.emplace(name, entry).second) order.push_back(name);
  }
  for (const std::string& entry : set) {
    const std::string name = name_of(entry);
    if (env.count(name) == 0) order.push_back(name);
    env[name] = entry;
  }
  for (const std::string& name : unset) env.erase(name);
  std::vector<std::string> out;
  for (const std::string& name : order) {
    auto it = env.find(name);
    if (it != env.end()) out.push_back(it->second);
  }
  return out;
}
}  // namespace understudy
