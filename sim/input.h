// What the simulated agent reads from its terminal, decoded: the bytes a
// tmux pane delivers (typed keys, `send-keys -l` text, bracketed pastes,
// arrow keys) become edits of the prompt line, submits and interrupts.
//
//   InputDecoder decoder({.lf_submits = !isatty(fd)});
//   decoder.Feed(bytes, [&](InputEvent e) { Handle(e); });  // any split of the stream
//   if (decoder.escape_pending()) ...       // 30 ms without input: Flush()
//
// Each event is handed over as soon as its byte is read, before the next
// byte is decoded: what the caller does about it (Ctrl-C clearing the line,
// an interrupt handing queued prompts back to it) applies to the bytes that
// follow in the same read. A terminal delivers typing, Ctrl-C and more typing
// in one read when the reader is slow (a loaded machine); the line they make
// is the one they made when typed slowly.
//
// The rules (docs/sim.md, "Terminal input"), as Claude Code has them:
//   CR submits the prompt; LF is a newline inside it (LF submits too with
//   `lf_submits`, for a pipe, where CR LF counts as one); a backslash right
//   before the submitting byte is a newline instead; inside a bracketed paste
//   (ESC [200~ ... ESC [201~) everything is text, CR becoming LF; Backspace
//   (0x7f or 0x08) removes the last UTF-8 character; ESC alone (nothing
//   follows within kEscapeTimeout, or not followed by '[' or 'O') is Escape;
//   CSI and SS3 sequences (arrows, function keys) are skipped; Ctrl-C
//   interrupts; Ctrl-D on an empty line ends the input; other C0 controls are
//   dropped, Tab is text. Invalid UTF-8 is kept as it came.
// A prompt may hold up to `max_prompt_bytes`; past that the rest of it is
// counted but dropped and its submit becomes kTooLong.
//
// Pure and single-threaded: no I/O, no clock. Feeding a stream in any split
// gives the same events (kText merged differently) as feeding it whole, as
// long as Flush is called only when no byte came for kEscapeTimeout.
#ifndef UNDERSTUDY_SIM_INPUT_H_
#define UNDERSTUDY_SIM_INPUT_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace understudy {
namespace sim {

struct InputEvent {
  enum class Kind {
    kText,        // `text` was appended to the line (LF for a newline)
    kErase,       // `text` was removed from the end: one character (of it, the bytes
                  // reported so far), or the backslash of "\⏎"
    kSubmit,      // `text` is the prompt; the line is empty again
    kInterrupt,   // Escape or Ctrl-C; the line is kept (see InputDecoder::ClearLine)
    kEndOfInput,  // Ctrl-D on an empty line
    kTooLong,     // a prompt of `bytes` bytes (over the bound) was submitted and dropped
  };
  enum class Key { kEscape, kCtrlC };

  Kind kind = Kind::kText;
  std::string text;
  Key key = Key::kEscape;  // kInterrupt
  size_t bytes = 0;        // kTooLong

  bool operator==(const InputEvent& other) const;
};

// "text(\"a\\n\")", "submit(\"hi\")", "interrupt(escape)", ...: for test
// failure messages and debug logs.
std::string DescribeEvent(const InputEvent& event);

struct InputOptions {
  // LF submits like CR (stdin is a pipe or a file, not a terminal).
  bool lf_submits = false;
  // The largest prompt kept; 1 MiB.
  size_t max_prompt_bytes = size_t{1} << 20;
};

class InputDecoder {
 public:
  // Receives each event as it is decoded (see the top of this file).
  using Sink = absl::FunctionRef<void(InputEvent)>;

  // How long a lone ESC waits for the rest of a sequence before it counts
  // as the Escape key.
  static constexpr absl::Duration kEscapeTimeout = absl::Milliseconds(30);

  explicit InputDecoder(InputOptions options = {});

  // Decodes `bytes`, handing `sink` each event before the next byte is
  // decoded; text is handed over in runs (before any other event, and at the
  // end of `bytes`).
  void Feed(absl::string_view bytes, Sink sink);
  // The same, appending the events to `*events`: for callers that do not act
  // on the line between events (tests, the fuzzer).
  void Feed(absl::string_view bytes, std::vector<InputEvent>* events);
  // True when the stream ends in a lone ESC that may still start a sequence:
  // the caller calls Flush once kEscapeTimeout passes without more bytes.
  bool escape_pending() const { return state_ == State::kEscape; }
  // Ends a pending ESC as the Escape key (no-op otherwise).
  void Flush(Sink sink);
  void Flush(std::vector<InputEvent>* events);

  // The prompt typed so far (not yet submitted).
  const std::string& line() const { return line_; }
  // Empties the line (Ctrl-C on a typed line); the caller redraws it.
  void ClearLine();
  // Replaces the line (prompts queued while working, handed back after an
  // interrupt); the caller echoes it.
  void SetLine(std::string line);

 private:
  enum class State { kGround, kEscape, kCsi, kSs3, kPaste };

  void Byte(unsigned char c, Sink sink);
  void GroundByte(unsigned char c, Sink sink);
  void PasteByte(unsigned char c);
  void CsiEnd(unsigned char final_byte);
  void Append(absl::string_view text);
  void Backspace(Sink sink);
  void Submit(Sink sink);
  // Hands the pending kText to `sink`.
  void FlushText(Sink sink);
  // Hands the pending text, then `event`, to `sink`.
  void Emit(InputEvent event, Sink sink);

  const InputOptions options_;
  State state_ = State::kGround;
  std::string line_;
  std::string pending_text_;  // appended since the last event, not yet reported
  size_t overflow_bytes_ = 0;  // > 0: the line went past the bound; its size so far
  bool after_cr_ = false;      // the last byte was a CR (a following LF is part of it)
  std::string csi_;            // parameter and intermediate bytes of the CSI being read
  size_t paste_end_matched_ = 0;  // bytes of ESC [201~ matched inside a paste
};

}  // namespace sim
}  // namespace understudy

#endif  // UNDERSTUDY_SIM_INPUT_H_
