#include "tests/e2e/server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"

extern char** environ;

namespace understudy {
namespace e2e {
namespace {

constexpr char kReadyPrefix[] = "understudy serving grpc=";

// Milliseconds until `deadline`, clamped to [0, 1 minute] for poll().
int MillisUntil(absl::Time deadline) {
  absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 60000));
}

std::string ErrnoText(absl::string_view what) {
  return absl::StrCat(what, ": ", std::strerror(errno));
}

// Closes a descriptor on scope exit.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  // Closes the descriptor held, if any, and holds `fd` instead.
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

absl::Status MakePipe(Fd* read_end, Fd* write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return absl::UnavailableError(ErrnoText("pipe2"));
  read_end->Reset(fds[0]);
  write_end->Reset(fds[1]);
  return absl::OkStatus();
}

// Reads what is available on `fd` into `out`; false at end of file or on
// an error other than EINTR/EAGAIN.
bool ReadSome(int fd, std::string* out) {
  char buf[16384];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

}  // namespace

std::string UnderstudyBinary() {
  if (const char* env = std::getenv("UNDERSTUDY_BIN"); env != nullptr && *env != '\0') return env;
#ifdef UNDERSTUDY_BIN
  return UNDERSTUDY_BIN;
#else
  return "understudy";
#endif
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// ---------------------------------------------------------------------------
// Child

Child::Child(pid_t pid) : pid_(pid) {
  // pidfd lets Wait sleep in poll() until the exit instead of polling.
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd_ >= 0) ::fcntl(pidfd_, F_SETFD, FD_CLOEXEC);
}

Child::~Child() {
  if (!exited_) {
    ::kill(pid_, SIGKILL);
    Wait(absl::Now() + absl::Seconds(10)).IgnoreError();
  }
  if (pidfd_ >= 0) ::close(pidfd_);
}

absl::StatusOr<std::unique_ptr<Child>> Child::Spawn(const std::vector<std::string>& argv,
                                                    int stdin_fd, int stdout_fd, int stderr_fd,
                                                    const std::vector<std::string>& extra_env) {
  if (argv.empty()) return absl::InvalidArgumentError("argv: empty");
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!absl::StartsWith(*e, "UNDERSTUDY_")) env.push_back(*e);
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> c_argv;
  for (const std::string& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  std::vector<char*> c_env;
  for (const std::string& e : env) c_env.push_back(const_cast<char*>(e.c_str()));
  c_env.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
  posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&defaults, s);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, c_argv[0], &actions, &attr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat("posix_spawn ", argv[0], ": ", std::strerror(rc)));
  }
  return std::unique_ptr<Child>(new Child(pid));
}

absl::StatusOr<int> Child::Wait(absl::Time deadline) {
  while (!exited_) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return absl::InternalError(ErrnoText("waitpid"));
    if (r == pid_) {
      exited_ = true;
      exit_result_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      break;
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("pid ", pid_, " still running"));
    }
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      ::poll(&p, 1, MillisUntil(deadline));  // readable once the child exits
    } else {
      // No pidfd: re-check every few milliseconds, still bounded by deadline.
      ::poll(nullptr, 0, std::min(5, MillisUntil(deadline)));
    }
  }
  return exit_result_;
}

absl::Status Child::Signal(int signal) {
  if (exited_) return absl::FailedPreconditionError(absl::StrCat("pid ", pid_, " has exited"));
  if (::kill(pid_, signal) != 0) return absl::InternalError(ErrnoText("kill"));
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// RunProcess

absl::StatusOr<ProcessResult> RunProcess(const std::string& program,
                                         const std::vector<std::string>& args,
                                         absl::Duration timeout, const std::string& stdin_path) {
  const absl::Time deadline = absl::Now() + timeout;
  Fd in(::open(stdin_path.empty() ? "/dev/null" : stdin_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) return absl::NotFoundError(ErrnoText(absl::StrCat("open ", stdin_path)));
  Fd out_r, out_w, err_r, err_w;
  if (absl::Status s = MakePipe(&out_r, &out_w); !s.ok()) return s;
  if (absl::Status s = MakePipe(&err_r, &err_w); !s.ok()) return s;
  std::vector<std::string> argv = {program};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<std::unique_ptr<Child>> child =
      Child::Spawn(argv, in.get(), out_w.get(), err_w.get());
  if (!child.ok()) return child.status();
  out_w.Reset();
  err_w.Reset();

  ProcessResult result;
  bool out_open = true, err_open = true;
  while ((out_open || err_open) && absl::Now() < deadline) {
    pollfd fds[2] = {{out_open ? out_r.get() : -1, POLLIN, 0},
                     {err_open ? err_r.get() : -1, POLLIN, 0}};
    int n = ::poll(fds, 2, MillisUntil(deadline));
    if (n < 0 && errno != EINTR) return absl::InternalError(ErrnoText("poll"));
    if (n <= 0) continue;
    if (out_open && fds[0].revents != 0) out_open = ReadSome(out_r.get(), &result.out);
    if (err_open && fds[1].revents != 0) err_open = ReadSome(err_r.get(), &result.err);
  }
  absl::StatusOr<int> code = (*child)->Wait(deadline);
  if (!code.ok()) {
    (*child)->Signal(SIGKILL).IgnoreError();
    (*child)->Wait(absl::Now() + absl::Seconds(10)).IgnoreError();
    return absl::DeadlineExceededError(
        absl::StrCat(program, " ", absl::StrJoin(args, " "), ": still running after ",
                     absl::FormatDuration(timeout), "; stderr: ", result.err));
  }
  result.exit_code = *code;
  return result;
}

// ---------------------------------------------------------------------------
// ServerProcess

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(const Options& options) {
  if (options.db_path.empty() || options.stderr_path.empty()) {
    return absl::InvalidArgumentError("db_path and stderr_path are required");
  }
  std::unique_ptr<ServerProcess> server(new ServerProcess());
  server->options_ = options;
  Fd in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  Fd err(::open(options.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (in.get() < 0 || err.get() < 0) {
    return absl::UnavailableError(ErrnoText(absl::StrCat("open ", options.stderr_path)));
  }
  Fd out_r, out_w;
  if (absl::Status s = MakePipe(&out_r, &out_w); !s.ok()) return s;

  std::vector<std::string> argv = {options.binary,  "serve",    "--db",
                                   options.db_path, "--listen", "127.0.0.1:0"};
  if (!options.upstream.empty()) {
    argv.push_back("--upstream");
    argv.push_back(options.upstream);
  }
  // A free HTTP port too, unless the test picks one: tests run in parallel.
  if (options.pick_http_port &&
      std::find(options.extra_args.begin(), options.extra_args.end(), "--http") ==
          options.extra_args.end()) {
    argv.push_back("--http");
    argv.push_back("127.0.0.1:0");
  }
  argv.insert(argv.end(), options.extra_args.begin(), options.extra_args.end());
  absl::StatusOr<std::unique_ptr<Child>> child =
      Child::Spawn(argv, in.get(), out_w.get(), err.get());
  if (!child.ok()) return child.status();
  server->child_ = std::move(*child);
  out_w.Reset();
  server->stdout_read_fd_ = out_r.Release();
  server->stdout_reader_ = std::thread([s = server.get()] { s->ReadStdout(); });

  // Wait for the first line (or the end of stdout) with a deadline.
  std::string line;
  bool got_line = false;
  {
    absl::MutexLock lock(&server->mu_);
    ServerProcess* s = server.get();
    auto ready = [s]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
      return s->stdout_closed_ || s->stdout_.find('\n') != std::string::npos;
    };
    server->mu_.AwaitWithTimeout(absl::Condition(&ready), options.start_timeout);
    size_t newline = server->stdout_.find('\n');
    if (newline != std::string::npos) {
      got_line = true;
      line = server->stdout_.substr(0, newline);
    }
  }
  if (!got_line) {
    bool exited = server->child_->Wait(absl::Now()).ok();
    std::string why = exited ? "exited before printing its address"
                             : absl::StrCat("printed no address within ",
                                            absl::FormatDuration(options.start_timeout));
    // The destructor kills and reaps it.
    return exited ? absl::FailedPreconditionError(
                        absl::StrCat("understudy serve ", why, "; stderr:\n", server->Stderr()))
                  : absl::DeadlineExceededError(
                        absl::StrCat("understudy serve ", why, "; stderr:\n", server->Stderr()));
  }
  if (!absl::StartsWith(line, kReadyPrefix)) {
    return absl::FailedPreconditionError(
        absl::StrCat("unexpected first stdout line: \"", line, "\""));
  }
  std::string rest = line.substr(std::strlen(kReadyPrefix));
  server->address_ = rest.substr(0, rest.find(' '));
  if (size_t http = line.find(" http="); http != std::string::npos) {
    std::string value = line.substr(http + 6);
    server->http_address_ = value.substr(0, value.find(' '));
  }
  server->first_line_ = line;
  if (server->address_.empty() || absl::EndsWith(server->address_, ":0")) {
    return absl::FailedPreconditionError(absl::StrCat("bad address in \"", line, "\""));
  }
  return server;
}

void ServerProcess::ReadStdout() {
  std::string chunk;
  while (true) {
    chunk.clear();
    bool open = ReadSome(stdout_read_fd_, &chunk);
    absl::MutexLock lock(&mu_);
    stdout_ += chunk;
    if (!open) {
      stdout_closed_ = true;
      return;
    }
  }
}

ServerProcess::~ServerProcess() {
  // A server still running at the end of its test is stopped as a user
  // stops it, and must exit cleanly: in the sanitizer build this is where a
  // leak is reported (LeakSanitizer runs at exit and makes the code nonzero).
  if (child_ != nullptr && !child_->exited()) {
    absl::StatusOr<int> code = Terminate();
    if (!code.ok()) {
      ADD_FAILURE() << code.status().message();
    } else if (*code != 0) {
      ADD_FAILURE() << "understudy exited with " << *code << " on SIGTERM; stderr:\n" << Stderr();
    }
  }
  // The pipe reaches end of file once the child is gone.
  if (stdout_reader_.joinable()) stdout_reader_.join();
  if (stdout_read_fd_ >= 0) ::close(stdout_read_fd_);
}

std::shared_ptr<grpc::Channel> ServerProcess::NewChannel() const {
  grpc::ChannelArguments args;
  // A private connection per channel: tests that kill the server must not
  // share a subchannel with later ones.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), args);
}

absl::StatusOr<int> ServerProcess::Terminate(absl::Duration timeout, int signal) {
  if (!child_->exited()) child_->Signal(signal).IgnoreError();
  absl::StatusOr<int> code = child_->Wait(absl::Now() + timeout);
  if (!code.ok()) {
    child_->Signal(SIGKILL).IgnoreError();
    child_->Wait(absl::Now() + absl::Seconds(10)).IgnoreError();
    return absl::DeadlineExceededError(absl::StrCat("understudy did not exit within ",
                                                    absl::FormatDuration(timeout), " of signal ",
                                                    signal, "; stderr:\n", Stderr()));
  }
  return code;
}

absl::Status ServerProcess::Kill9() {
  if (!child_->exited()) child_->Signal(SIGKILL).IgnoreError();
  absl::StatusOr<int> code = child_->Wait(absl::Now() + absl::Seconds(10));
  if (!code.ok()) return code.status();
  if (*code != -SIGKILL) {
    return absl::FailedPreconditionError(
        absl::StrCat("understudy had already exited with ", *code, " before SIGKILL"));
  }
  return absl::OkStatus();
}

std::string ServerProcess::Stderr() const { return ReadFileOrEmpty(options_.stderr_path); }

std::string ServerProcess::Stdout() const {
  absl::MutexLock lock(&mu_);
  return stdout_;
}

}  // namespace e2e
}  // namespace understudy
