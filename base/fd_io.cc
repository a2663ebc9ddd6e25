#include "base/fd_io.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

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

}  // namespace understudy
