// Small helpers for file descriptors (mcp-proxy's stdin and stdout, `understudy
// mcp`'s, child processes' pipes): errno text, poll() timeouts, a self-pipe to wake threads
// blocked in poll(), a write that can be interrupted, and waiting until a
// reader has read what was written.
#ifndef UNDERSTUDY_BASE_FD_IO_H_
#define UNDERSTUDY_BASE_FD_IO_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace understudy {

// strerror(error) as a std::string.
std::string ErrnoText(int error);

// poll()'s timeout for `d`: -1 for infinite, rounded up to whole ms.
int PollMs(absl::Duration d);

// A self-pipe: Wake makes read_fd() readable for good, so that threads
// blocked in poll() on it return. Thread-safe. When the pipe cannot be made,
// read_fd() is -1 (poll ignores it) and Wake does nothing.
class WakePipe {
 public:
  WakePipe();
  ~WakePipe();
  WakePipe(const WakePipe&) = delete;
  WakePipe& operator=(const WakePipe&) = delete;

  int read_fd() const { return fds_[0]; }
  void Wake();

 private:
  int fds_[2];
};

// Writes all of `pieces` to `fd` (blocking or not), giving up when `wake`
// (a descriptor, or -1 for none) becomes readable. At most PIPE_BUF bytes go
// in one write after poll() said the descriptor is writable, so that a
// blocking pipe never blocks the thread past a wake. UNAVAILABLE with the
// cause on failure, CANCELLED on a wake. The pieces must stay live for the
// call.
absl::Status WriteFully(int fd, std::vector<absl::string_view> pieces, int wake);

// How many of the bytes written to `fd` its reader has not read yet: what
// a pipe holds (FIONREAD), what a socket has not handed over (SIOCOUTQ; on
// a Unix socket, until the peer reads it), what a terminal has not output
// (TIOCOUTQ). 0 for anything else (a file: nobody reads later).
// UNAVAILABLE, with the cause, when the descriptor cannot be asked.
absl::StatusOr<size_t> UnreadBytes(int fd);

// Waits until the reader of `fd` has read everything written to it
// (UnreadBytes is 0), `deadline` passes, or `wake` (a descriptor, or -1)
// becomes readable. No event says that a reader has read, so it looks
// again every few hundred microseconds (sooner at first), sleeping in
// poll() on `wake` between looks. OK once read (or when `fd` cannot be
// asked: there is nothing to wait for); DEADLINE_EXCEEDED; CANCELLED on a
// wake.
absl::Status WaitUntilRead(int fd, absl::Time deadline, int wake);

}  // namespace understudy

#endif  // UNDERSTUDY_BASE_FD_IO_H_
