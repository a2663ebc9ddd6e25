// Child processes: spawning a command with pipes, signalling and ending it,
// saying how it ended (the MCP server of `understudy mcp-proxy`), and
// running one to completion within a deadline with its output captured
// (the test runners of testgen/).
#ifndef UNDERSTUDY_BASE_SUBPROCESS_H_
#define UNDERSTUDY_BASE_SUBPROCESS_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace understudy {

// How Spawn starts a command. The defaults are what `mcp-proxy` needs.
struct SpawnOptions {
  // The child's whole environment ("NAME=value" entries); nullopt: this
  // process's.
  std::optional<std::vector<std::string>> env;
  // The working directory; "" keeps this process's.
  std::string cwd;
  // true: the child's stderr goes to the same pipe as its stdout (one
  // interleaved stream); false: it is inherited (unless capture_stderr).
  bool merge_stderr = false;
  // true: the child's stderr goes to a pipe of its own (stderr_fd()), for
  // callers that tell the two streams apart (hooks: stdout is a decision,
  // stderr a reason). Not with merge_stderr.
  bool capture_stderr = false;
};

// A command running with its stdin and stdout piped to this process and its
// stderr inherited, in a process group of its own (so that a launcher such
// as npx and the server it starts end together), with default signal
// dispositions and an empty signal mask, and no other descriptor of ours.
// Thread-safe, except that each of the two pipe ends has one user at a time.
class ChildProcess {
 public:
  // Starts `argv` (argv[0] looked up in this process's PATH), exactly as given: an argument that looks like an option
  // is the command's own. INVALID_ARGUMENT for an empty `argv`; NOT_FOUND
  // when argv[0] (or options.cwd) cannot be found, PERMISSION_DENIED when it
  // cannot be run, UNAVAILABLE for other failures; each naming the command.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(const std::vector<std::string>& argv,
                                                             const SpawnOptions& options = {});

  // Kills the process group (SIGKILL) and reaps the child when it is still
  // running; closes the pipes.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Our end of the child's stdin: write-only, non-blocking; -1 once closed.
  int stdin_fd() const { return stdin_fd_; }
  // Our end of the child's stdout: read-only, non-blocking.
  int stdout_fd() const { return stdout_fd_; }
  // Our end of the child's stderr with SpawnOptions::capture_stderr:
  // read-only, non-blocking; -1 otherwise.
  int stderr_fd() const { return stderr_fd_; }
  // A descriptor that becomes readable (POLLIN) once the child has exited,
  // or -1 when the kernel has no pidfd (then poll WaitFor).
  int exit_fd() const { return pidfd_; }

  // Closes our end of the child's stdin (it reads EOF). Not concurrently
  // with a write to stdin_fd().
  void CloseStdin();
  // Waits up to `timeout` for the child to exit (0: just checks). The wait
  // status (<sys/wait.h>) once it has, nullopt while it still runs.
  std::optional<int> WaitFor(absl::Duration timeout);
  // Sends `signal` to the child's process group. A no-op once the child has
  // been reaped.
  void Signal(int signal);
  // Ends the child politely, then less so: closes its stdin and waits
  // `grace`; SIGTERM and waits `grace`; SIGKILL and waits. The wait status,
  // or nullopt if even SIGKILL did not end it within `grace`.
  std::optional<int> Terminate(absl::Duration grace);

  // "exited with status 1", "killed by signal 9 (Killed)".
  static std::string DescribeExit(int wait_status);

 private:
  ChildProcess(pid_t pid, int stdin_fd, int stdout_fd, int stderr_fd, int pidfd);

  const pid_t pid_;
  int stdin_fd_;
  const int stdout_fd_;
  const int stderr_fd_;
  const int pidfd_;
  absl::Mutex mu_;
  std::optional<int> wait_status_ ABSL_GUARDED_BY(mu_);
};

// `argv` as a shell would need it typed, quoting what needs it, shortened to
// about 80 bytes: for messages that name the command.
std::string ShellQuoted(const std::vector<std::string>& argv);

// `arg` as exactly one word of a /bin/sh command line: as it is when every
// character is one the shell takes literally (letters, digits, @%+=:,./_-),
// else in single quotes, a quote inside becoming '\''. Never shortened: for
// building command lines (ShellQuoted is for messages).
std::string ShellWord(absl::string_view arg);

// What RunCommand saw.
struct CommandResult {
  // The wait status (<sys/wait.h>); see ChildProcess::DescribeExit.
  int wait_status = 0;
  // true when the deadline passed and the command was terminated.
  bool timed_out = false;
  // stdout (and stderr, with merge_stderr), at most `max_output` bytes:
  // beyond that the rest is read and dropped, and `truncated` is set.
  std::string output;
  bool truncated = false;
  // stderr with SpawnOptions::capture_stderr, bounded by `max_output` the
  // same way (`truncated` says either was cut).
  std::string error_output;
  // true when RunOptions::on_ready said kAbandon: the process group was
  // killed before the command ended by itself.
  bool abandoned = false;
  absl::Duration elapsed;

  // true when the command exited with status 0 in time.
  bool ok() const;
  // "exited with status 1", "timed out after 30s (killed by signal 15 ...)",
  // "abandoned after 1.2s (killed by signal 9 ...)".
  std::string Describe() const;
};

// What RunOptions::on_ready wants done after it has looked at a descriptor.
enum class WatchResult {
  kKeepWatching,  // call again when it is ready again
  kStopWatching,  // leave it alone for the rest of the run (it hung up, say)
  kAbandon,       // end the run now: kill the command's process group
};

struct RunOptions {
  SpawnOptions spawn;
  // The whole run; past it the command's process group is terminated
  // (SIGTERM, 2 s, SIGKILL).
  absl::Duration timeout = absl::Seconds(60);
  size_t max_output = 4 << 20;
  // Written to the command's stdin, which is then closed (EOF). Whatever
  // the command does not read before it closes stdin or exits is dropped;
  // a command that never reads does not block the run past its output.
  std::string input;
  // Descriptors of the caller's own to watch while the command runs, so that
  // a caller running it on its event loop's thread still hears the loop's
  // inputs (a terminal, a signal pipe): whenever one polls readable or hung
  // up, `on_ready(fd)` is called on the calling thread and says what
  // follows. It must consume what made `fd` ready, or stop watching it;
  // otherwise it is called again at once. kAbandon ends the run at once: the
  // command's process group gets SIGKILL and is reaped, and the result says
  // `abandoned`. Required when `watch_fds` is not empty.
  std::vector<int> watch_fds;
  std::function<WatchResult(int fd)> on_ready;
};

// Runs `argv` to completion with `options.input` on stdin, then EOF,
// collecting its output, watching `options.watch_fds` meanwhile.
// Spawn's errors when it cannot start; otherwise the result, whatever the
// exit status (a timeout is a result too). Blocks the calling thread;
// thread-safe.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const RunOptions& options = {});

// This process's environment with `set` applied (each "NAME=value"
// replaces or adds NAME) and the variables named in `unset` removed:
// a SpawnOptions::env.
std::vector<std::string> EnvironmentWith(const std::vector<std::string>& set,
                                         const std::vector<std::string>& unset = {});

}  // namespace understudy

#endif  // UNDERSTUDY_BASE_SUBPROCESS_H_
