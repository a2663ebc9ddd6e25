// The real `understudy` binary as a child process, for end-to-end tests.
//
// ServerProcess runs `understudy serve` on 127.0.0.1:0, waits (with a
// deadline) for the first stdout line `understudy serving grpc=HOST:PORT
// db=PATH`, and exposes the bound address. Its stderr goes to a file so that
// tests can assert on the logs. Terminate sends SIGTERM and waits for the
// exit code; Kill9 simulates a crash. RunProcess runs a CLI command to
// completion and captures its output.
//
// Children get the parent's environment without any UNDERSTUDY_* variable
// (so a developer's settings cannot change a test), default signal
// dispositions and an empty signal mask. Every wait is bounded; a child still
// running when its owner is destroyed is killed with SIGKILL.
#ifndef UNDERSTUDY_TESTS_E2E_SERVER_PROCESS_H_
#define UNDERSTUDY_TESTS_E2E_SERVER_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"

namespace understudy {
namespace e2e {

// The understudy binary: $UNDERSTUDY_BIN when set, else the path CMake
// compiled in (UNDERSTUDY_BIN), else "understudy".
std::string UnderstudyBinary();

// A spawned child. Owns the pid until it has been reaped.
class Child {
 public:
  // Spawns `argv` (argv[0] is the program path) with the given stdin,
  // stdout and stderr file descriptors (which stay owned by the caller; the
  // child gets copies). `extra_env` entries ("NAME=value") are added to the
  // sanitized environment. UNAVAILABLE when the program cannot be spawned.
  static absl::StatusOr<std::unique_ptr<Child>> Spawn(
      const std::vector<std::string>& argv, int stdin_fd, int stdout_fd, int stderr_fd,
      const std::vector<std::string>& extra_env = {});

  // Kills (SIGKILL) and reaps the child if it is still running.
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }

  // Waits until the child exits or `deadline` passes. Returns the exit code,
  // or -N when signal N killed it. DEADLINE_EXCEEDED when it is still
  // running at the deadline (it is left running). Once reaped, returns the
  // same result again.
  absl::StatusOr<int> Wait(absl::Time deadline);

  // Sends `signal` to a child not yet reaped; FAILED_PRECONDITION after exit.
  absl::Status Signal(int signal);

  // Whether the child has been reaped.
  bool exited() const { return exited_; }

 private:
  explicit Child(pid_t pid);

  pid_t pid_;
  int pidfd_ = -1;  // -1 when pidfd_open is unavailable: Wait polls instead
  bool exited_ = false;
  int exit_result_ = 0;
};

struct ProcessResult {
  // Exit code, or -N when killed by signal N.
  int exit_code = 0;
  std::string out;
  std::string err;
};

// Runs `args` (without the program) with `program`, stdin from `stdin_path`
// ("" for /dev/null), to completion. DEADLINE_EXCEEDED, after killing it,
// when it runs past `timeout`.
absl::StatusOr<ProcessResult> RunProcess(const std::string& program,
                                         const std::vector<std::string>& args,
                                         absl::Duration timeout = absl::Seconds(30),
                                         const std::string& stdin_path = "");

class ServerProcess {
 public:
  struct Options {
    std::string binary = UnderstudyBinary();
    // Required: the SQLite file.
    std::string db_path;
    // --upstream value (grpc://HOST:PORT), or "" for none.
    std::string upstream;
    // More `serve` flags, e.g. {"--max-message-bytes", "65536"}.
    std::vector<std::string> extra_args;
    // Adds `--http 127.0.0.1:0` unless extra_args has --http; false leaves
    // the HTTP address to serve's own default.
    bool pick_http_port = true;
    // Required: the file stderr is written to (truncated first).
    std::string stderr_path;
    // How long the first stdout line may take.
    absl::Duration start_timeout = absl::Seconds(20);
  };

  // Spawns `understudy serve --db ... --listen 127.0.0.1:0 ...` and waits for
  // its first stdout line. DEADLINE_EXCEEDED (the child is killed) if it
  // does not come in time, FAILED_PRECONDITION if the child exits first or
  // prints something else; each error carries the child's stderr.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(const Options& options);

  // Stops the server (SIGTERM) if it is still running; a test failure if it
  // does not exit with 0 (a sanitizer report included) within 20 s.
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // HOST:PORT from the first stdout line.
  const std::string& address() const { return address_; }
  // host:port of the HTTP listener ("" when it was turned off).
  const std::string& http_address() const { return http_address_; }
  const std::string& first_line() const { return first_line_; }
  pid_t pid() const { return child_->pid(); }

  // A new channel to the server (its own connection).
  std::shared_ptr<grpc::Channel> NewChannel() const;

  // Sends `signal` (SIGTERM by default), then waits for the exit. Returns the
  // exit code (-N: killed by signal N). DEADLINE_EXCEEDED if it has not
  // exited by `timeout` (it is then killed with SIGKILL).
  absl::StatusOr<int> Terminate(absl::Duration timeout = absl::Seconds(20), int signal = SIGTERM);

  // SIGKILL, then waits for the exit: a crash, as far as the server knows.
  absl::Status Kill9();

  // Everything written to stderr so far.
  std::string Stderr() const;
  // Everything written to stdout so far (the first line and anything after).
  std::string Stdout() const;

 private:
  ServerProcess() = default;
  void ReadStdout();

  Options options_;
  std::unique_ptr<Child> child_;
  int stdout_read_fd_ = -1;
  std::thread stdout_reader_;
  std::string address_;
  std::string http_address_;
  std::string first_line_;

  mutable absl::Mutex mu_;
  std::string stdout_ ABSL_GUARDED_BY(mu_);
  bool stdout_closed_ ABSL_GUARDED_BY(mu_) = false;
};

// The contents of a file ("" when it cannot be read).
std::string ReadFileOrEmpty(const std::string& path);

}  // namespace e2e
}  // namespace understudy

#endif  // UNDERSTUDY_TESTS_E2E_SERVER_PROCESS_H_
