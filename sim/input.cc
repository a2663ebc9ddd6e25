#include "sim/input.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "validation/utf8.h"

namespace understudy {
namespace sim {
namespace {

// What ends a bracketed paste.
constexpr absl::string_view kPasteEnd = "\x1b[201~";
// CSI parameters longer than this are not ours to read (no key sends them).
constexpr size_t kMaxCsiBytes = 32;

}  // namespace

bool InputEvent::operator==(const InputEvent& other) const {
  return kind == other.kind && text == other.text && key == other.key && bytes == other.bytes;
}

std::string DescribeEvent(const InputEvent& event) {
  const std::string text = absl::StrCat("(\"", absl::CHexEscape(event.text), "\")");
  switch (event.kind) {
    case InputEvent::Kind::kText:
      return "text" + text;
    case InputEvent::Kind::kErase:
      return "erase" + text;
    case InputEvent::Kind::kSubmit:
      return "submit" + text;
    case InputEvent::Kind::kInterrupt:
      return event.key == InputEvent::Key::kEscape ? "interrupt(escape)" : "interrupt(ctrl-c)";
    case InputEvent::Kind::kEndOfInput:
      return "end-of-input";
    case InputEvent::Kind::kTooLong:
      return absl::StrCat("too-long(", event.bytes, ")");
  }
  return "?";
}

InputDecoder::InputDecoder(InputOptions options) : options_(options) {}

void InputDecoder::Feed(absl::string_view bytes, Sink sink) {
  for (char c : bytes) Byte(static_cast<unsigned char>(c), sink);
  FlushText(sink);
}

void InputDecoder::Feed(absl::string_view bytes, std::vector<InputEvent>* events) {
  Feed(bytes, [events](InputEvent event) { events->push_back(std::move(event)); });
}

void InputDecoder::Flush(Sink sink) {
  if (state_ != State::kEscape) return;
  state_ = State::kGround;
  InputEvent escape;
  escape.kind = InputEvent::Kind::kInterrupt;
  escape.key = InputEvent::Key::kEscape;
  Emit(std::move(escape), sink);
}

void InputDecoder::Flush(std::vector<InputEvent>* events) {
  Flush([events](InputEvent event) { events->push_back(std::move(event)); });
}

void InputDecoder::ClearLine() {
  line_.clear();
  pending_text_.clear();
  overflow_bytes_ = 0;
}

void InputDecoder::SetLine(std::string line) {
  ClearLine();
  line_ = std::move(line);
}

void InputDecoder::Byte(unsigned char c, Sink sink) {
  switch (state_) {
    case State::kGround:
      GroundByte(c, sink);
      return;
    case State::kPaste:
      PasteByte(c);
      return;
    case State::kEscape:
      if (c == '[') {
        state_ = State::kCsi;
        csi_.clear();
        return;
      }
      if (c == 'O') {
        state_ = State::kSs3;
        return;
      }
      // ESC then anything else: the Escape key, then that byte on its own.
      state_ = State::kEscape;
      Flush(sink);
      GroundByte(c, sink);
      return;
    case State::kCsi:
      if (c >= 0x20 && c <= 0x3f) {  // parameter and intermediate bytes
        if (csi_.size() < kMaxCsiBytes) csi_.push_back(static_cast<char>(c));
        return;
      }
      if (c >= 0x40 && c <= 0x7e) {
        CsiEnd(c);
        return;
      }
      state_ = State::kGround;  // a broken sequence: the byte counts on its own
      GroundByte(c, sink);
      return;
    case State::kSs3:
      state_ = State::kGround;
      if (c < 0x20) GroundByte(c, sink);  // a control byte is not SS3's final
      return;
  }
}

void InputDecoder::CsiEnd(unsigned char final_byte) {
  state_ = State::kGround;
  if (final_byte == '~' && csi_ == "200") {
    state_ = State::kPaste;
    paste_end_matched_ = 0;
    after_cr_ = false;
  }
}

void InputDecoder::GroundByte(unsigned char c, Sink sink) {
  const bool was_cr = after_cr_;
  after_cr_ = false;
  switch (c) {
    case '\n':
      if (!options_.lf_submits) {
        Append("\n");
        return;
      }
      if (was_cr) return;  // CR LF: one submit
      [[fallthrough]];
    case '\r':
      after_cr_ = c == '\r';
      if (overflow_bytes_ == 0 && !line_.empty() && line_.back() == '\\') {
        // "\⏎": a newline, as Claude Code has it.
        line_.pop_back();
        if (!pending_text_.empty()) {
          pending_text_.pop_back();
        } else {
          InputEvent erase;
          erase.kind = InputEvent::Kind::kErase;
          erase.text = "\\";
          Emit(std::move(erase), sink);
        }
        Append("\n");
        return;
      }
      Submit(sink);
      return;
    case 0x7f:
    case 0x08:
      Backspace(sink);
      return;
    case 0x03: {
      InputEvent interrupt;
      interrupt.kind = InputEvent::Kind::kInterrupt;
      interrupt.key = InputEvent::Key::kCtrlC;
      Emit(std::move(interrupt), sink);
      return;
    }
    case 0x04:
      if (line_.empty() && overflow_bytes_ == 0) {
        InputEvent end;
        end.kind = InputEvent::Kind::kEndOfInput;
        Emit(std::move(end), sink);
      }
      return;
    case 0x1b:
      state_ = State::kEscape;
      return;
    case '\t':
      Append("\t");
      return;
    default:
      if (c < 0x20) return;  // other C0 controls: nothing
      Append(absl::string_view(reinterpret_cast<const char*>(&c), 1));
      return;
  }
}

void InputDecoder::PasteByte(unsigned char c) {
  if (paste_end_matched_ > 0 || c == 0x1b) {
    if (c == static_cast<unsigned char>(kPasteEnd[paste_end_matched_])) {
      if (++paste_end_matched_ == kPasteEnd.size()) {
        state_ = State::kGround;
        paste_end_matched_ = 0;
        after_cr_ = false;
      }
      return;
    }
    // Not the end after all: what matched is text, except the ESC itself.
    const size_t matched = paste_end_matched_;
    paste_end_matched_ = 0;
    if (matched > 1) Append(kPasteEnd.substr(1, matched - 1));
    if (c == 0x1b) {
      paste_end_matched_ = 1;
      return;
    }
  }
  const bool was_cr = after_cr_;
  after_cr_ = false;
  if (c == '\r') {
    after_cr_ = true;
    Append("\n");
  } else if (c == '\n') {
    if (!was_cr) Append("\n");
  } else if (c == '\t' || (c >= 0x20 && c != 0x7f)) {
    Append(absl::string_view(reinterpret_cast<const char*>(&c), 1));
  }
}

void InputDecoder::Append(absl::string_view text) {
  if (overflow_bytes_ > 0) {
    overflow_bytes_ += text.size();
    return;
  }
  if (line_.size() + text.size() > options_.max_prompt_bytes) {
    // Past the bound: keep counting, stop keeping (and echoing).
    overflow_bytes_ = line_.size() + text.size();
    line_.clear();
    line_.shrink_to_fit();
    pending_text_.clear();
    return;
  }
  line_.append(text.data(), text.size());
  pending_text_.append(text.data(), text.size());
}

void InputDecoder::Backspace(Sink sink) {
  if (overflow_bytes_ > 0 || line_.empty()) return;
  // The last character: a well-formed sequence ending the line, else the
  // last byte alone (invalid UTF-8 goes a byte at a time).
  size_t start = line_.size() - 1;
  while (start > 0 && line_.size() - start < 4 &&
         (static_cast<unsigned char>(line_[start]) & 0xc0) == 0x80) {
    --start;
  }
  if (validation::Utf8SequenceLength(line_, start) != line_.size() - start) {
    start = line_.size() - 1;
  }
  InputEvent erase;
  erase.kind = InputEvent::Kind::kErase;
  erase.text = line_.substr(start);
  line_.resize(start);
  if (pending_text_.size() >= erase.text.size()) {
    // Typed and erased within one read: never reported.
    pending_text_.resize(pending_text_.size() - erase.text.size());
    return;
  }
  // Its first bytes were reported (a character split between reads): the
  // erasure is of those; the rest was never reported.
  erase.text.resize(erase.text.size() - pending_text_.size());
  pending_text_.clear();
  sink(std::move(erase));
}

void InputDecoder::Submit(Sink sink) {
  InputEvent event;
  if (overflow_bytes_ > 0) {
    event.kind = InputEvent::Kind::kTooLong;
    event.bytes = overflow_bytes_;
    overflow_bytes_ = 0;
  } else {
    event.kind = InputEvent::Kind::kSubmit;
    event.text = std::move(line_);
  }
  line_.clear();
  Emit(std::move(event), sink);
}

void InputDecoder::FlushText(Sink sink) {
  if (pending_text_.empty()) return;
  InputEvent text;
  text.kind = InputEvent::Kind::kText;
  text.text = std::move(pending_text_);
  pending_text_.clear();
  sink(std::move(text));
}

void InputDecoder::Emit(InputEvent event, Sink sink) {
  FlushText(sink);
  sink(std::move(event));
}

}  // namespace sim
}  // namespace understudy
