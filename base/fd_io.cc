#include "base/fd_io.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/env.h"

namespace understudy {

std::string ErrnoText(int error) { return std::strerror(error); }

int PollMs(absl::Duration d) {
  if (d == absl::InfiniteDuration()) return -1;
  if (d <= absl::ZeroDuration()) return 0;
  const int64_t ms = absl::ToInt64Milliseconds(d + absl::Microseconds(999));
  return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

WakePipe::WakePipe() {
  if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) fds_[0] = fds_[1] = -1;
}

WakePipe::~WakePipe() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

void WakePipe::Wake() {
  if (fds_[1] < 0) return;
  const char byte = 1;
  while (::write(fds_[1], &byte, 1) < 0 && errno == EINTR) {
  }
}

absl::Status WriteFully(int fd, std::vector<absl::string_view> pieces, int wake) {
  size_t i = 0;
  while (i < pieces.size()) {
    if (pieces[i].empty()) {
      ++i;
      continue;
    }
    pollfd fds[2] = {{fd, POLLOUT, 0}, {wake, POLLIN, 0}};
    const int ready = ::poll(fds, wake >= 0 ? 2 : 1, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(ErrnoText(errno));
    }
    if (wake >= 0 && (fds[1].revents & POLLIN) != 0) return absl::CancelledError("stopped");
    if ((fds[0].revents & (POLLERR | POLLNVAL)) != 0 && (fds[0].revents & POLLOUT) == 0) {
      return absl::UnavailableError("the other end is closed");
    }
    // Gather the pieces into one write of at most PIPE_BUF bytes.
    iovec iov[8];
    int n = 0;
    size_t budget = PIPE_BUF;
    for (size_t j = i; j < pieces.size() && n < 8 && budget > 0; ++j) {
      const size_t take = std::min(budget, pieces[j].size());
      iov[n].iov_base = const_cast<char*>(pieces[j].data());
      iov[n].iov_len = take;
      budget -= take;
      ++n;
    }
    const ssize_t written = ::writev(fd, iov, n);
    if (written < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return absl::UnavailableError(ErrnoText(errno));
    }
    size_t left = static_cast<size_t>(written);
    while (left > 0 && i < pieces.size()) {
      const size_t take = std::min(left, pieces[i].size());
      pieces[i].remove_prefix(take);
      left -= take;
      if (pieces[i].empty()) ++i;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> UnreadBytes(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return absl::UnavailableError(ErrnoText(errno));
  unsigned long request = 0;  // NOLINT(runtime/int): ioctl's type
  if (S_ISFIFO(st.st_mode)) {
    request = FIONREAD;
  } else if (S_ISSOCK(st.st_mode)) {
    request = SIOCOUTQ;
  } else if (S_ISCHR(st.st_mode) && ::isatty(fd) == 1) {
    request = TIOCOUTQ;
  } else {
    return 0;
  }
  int unread = 0;
  if (::ioctl(fd, request, &unread) != 0) return absl::UnavailableError(ErrnoText(errno));
  return static_cast<size_t>(std::max(unread, 0));
}

absl::Status WaitUntilRead(int fd, absl::Time deadline, int wake) {
  // A reader that is keeping up reads within a few microseconds; one that
  // is busy may take milliseconds. Looks back off from 50 µs to 1 ms.
  absl::Duration pause = absl::Microseconds(50);
  for (;;) {
    const absl::StatusOr<size_t> unread = UnreadBytes(fd);
    if (!unread.ok() || *unread == 0) return absl::OkStatus();
    const absl::Duration left = deadline - Env::Default()->Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          absl::StrCat(*unread, " bytes written were not read in time"));
    }
    const timespec wait = absl::ToTimespec(std::min(pause, left));
    pollfd p = {wake, POLLIN, 0};
    const int ready = ::ppoll(&p, wake >= 0 ? 1 : 0, &wait, nullptr);
    if (ready > 0 && (p.revents & POLLIN) != 0) return absl::CancelledError("stopped");
    pause = std::min(pause * 2, absl::Milliseconds(1));
  }
}

}  // namespace understudy
