// The simulated agent's terminal: its mode while the session runs, and the
// signals that end the session, turned into a descriptor its poll loop
// watches.
//
//   TerminalMode mode(STDIN_FILENO, STDOUT_FILENO);   // raw-ish + bracketed paste
//   SignalPipe signals({SIGTERM, SIGHUP, SIGINT});
//   poll(... signals.read_fd() ...); for (int sig : signals.Drain()) ...
//   // ~TerminalMode (or RestoreTerminal() from any exit path) puts it back
#ifndef UNDERSTUDY_SIM_TERMINAL_H_
#define UNDERSTUDY_SIM_TERMINAL_H_

#include <signal.h>
#include <termios.h>

#include <initializer_list>
#include <vector>

namespace understudy {
namespace sim {

// While alive: `in_fd`'s terminal with ICANON, ECHO, ISIG, IEXTEN, IXON and
// ICRNL cleared (bytes arrive as typed: Enter as CR, Ctrl-C as 0x03; output
// processing kept, so "\n" still prints as CR LF), and bracketed paste on
// (ESC [?2004h written to `out_fd`). Nothing at all when `in_fd` is not a
// terminal. Restored (mode and paste) by the destructor, by Restore, by
// RestoreTerminal, and at exit(); whichever comes first.
// One at a time per process; not thread-safe.
class TerminalMode {
 public:
  TerminalMode(int in_fd, int out_fd);
  ~TerminalMode();
  TerminalMode(const TerminalMode&) = delete;
  TerminalMode& operator=(const TerminalMode&) = delete;

  // Whether `in_fd` is a terminal (and its mode was changed).
  bool is_tty() const { return is_tty_; }
  void Restore();

 private:
  const int in_fd_;
  const int out_fd_;
  bool is_tty_ = false;
  bool restored_ = false;
  struct termios saved_ {};
};

// Restores the terminal of the TerminalMode alive, if any: for paths that
// leave without unwinding (the crash behaviour, a fatal signal).
void RestoreTerminal();

// Turns `signals` into bytes on a pipe for as long as it lives: the handler
// only writes the signal number (async-signal-safe); the loop reads them.
// The previous handlers come back at destruction. SIGPIPE is ignored
// meanwhile (a closed terminal is seen as EPIPE/EIO from write). One at a
// time per process.
class SignalPipe {
 public:
  explicit SignalPipe(std::initializer_list<int> signals);
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  // Readable when a signal came; -1 when the pipe could not be made.
  int read_fd() const { return fds_[0]; }
  // The signals that came since the last call, in order.
  std::vector<int> Drain();

 private:
  int fds_[2] = {-1, -1};
  std::vector<std::pair<int, struct sigaction>> previous_;
  struct sigaction previous_pipe_ {};
};

}  // namespace sim
}  // namespace understudy

#endif  // UNDERSTUDY_SIM_TERMINAL_H_
