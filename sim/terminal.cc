#include "sim/terminal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace understudy {
namespace sim {
namespace {

constexpr char kPasteOn[] = "\x1b[?2004h";
constexpr char kPasteOff[] = "\x1b[?2004l";

// The mode to put back from exit paths that do not unwind.
TerminalMode* g_active = nullptr;
bool g_atexit_registered = false;

// The write end of the SignalPipe alive (-1 none), for the handler.
volatile sig_atomic_t g_signal_fd = -1;

void WriteAllQuietly(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void OnSignal(int signal) {
  const int saved_errno = errno;
  const int fd = g_signal_fd;
  if (fd >= 0) {
    const unsigned char byte = static_cast<unsigned char>(signal);
    (void)!write(fd, &byte, 1);
  }
  errno = saved_errno;
}

}  // namespace

TerminalMode::TerminalMode(int in_fd, int out_fd) : in_fd_(in_fd), out_fd_(out_fd) {
  if (!isatty(in_fd) || tcgetattr(in_fd, &saved_) != 0) return;
  struct termios raw = saved_;
  raw.c_lflag &= ~(ICANON | ECHO | ISIG | IEXTEN);
  raw.c_iflag &= ~(IXON | ICRNL | INLCR | IGNCR);
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  if (tcsetattr(in_fd, TCSANOW, &raw) != 0) return;
  is_tty_ = true;
  WriteAllQuietly(out_fd_, kPasteOn, sizeof(kPasteOn) - 1);
  g_active = this;
  if (!g_atexit_registered) {
    g_atexit_registered = true;
    std::atexit(RestoreTerminal);
  }
}

TerminalMode::~TerminalMode() {
  Restore();
  if (g_active == this) g_active = nullptr;
}

void TerminalMode::Restore() {
  if (!is_tty_ || restored_) return;
  restored_ = true;
  WriteAllQuietly(out_fd_, kPasteOff, sizeof(kPasteOff) - 1);
  tcsetattr(in_fd_, TCSANOW, &saved_);
}

void RestoreTerminal() {
  if (g_active != nullptr) g_active->Restore();
}

SignalPipe::SignalPipe(std::initializer_list<int> signals) {
  if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    fds_[0] = fds_[1] = -1;
    return;
  }
  g_signal_fd = fds_[1];
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : signals) {
    struct sigaction old {};
    if (sigaction(signal, &action, &old) == 0) previous_.emplace_back(signal, old);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &previous_pipe_);
}

SignalPipe::~SignalPipe() {
  for (const auto& [signal, old] : previous_) sigaction(signal, &old, nullptr);
  if (fds_[0] >= 0) sigaction(SIGPIPE, &previous_pipe_, nullptr);
  g_signal_fd = -1;
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

std::vector<int> SignalPipe::Drain() {
  std::vector<int> signals;
  if (fds_[0] < 0) return signals;
  unsigned char buffer[64];
  for (;;) {
    ssize_t n = read(fds_[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    signals.insert(signals.end(), buffer, buffer + n);
  }
  return signals;
}

}  // namespace sim
}  // namespace understudy
