// Terminal input of `understudy sim` (sim/input.h): any bytes a pane may
// deliver, split anywhere, decode to the same submitted prompts as the
// stream fed whole, and no prompt exceeds the bound.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "sim/input.h"

namespace {

using understudy::sim::InputDecoder;
using understudy::sim::InputEvent;
using understudy::sim::InputOptions;

// What a stream means apart from how it was read: submits, interrupts, ends
// and refusals in order (text and erase events only say how the line grew).
std::vector<std::string> Meaning(const std::vector<InputEvent>& events) {
  std::vector<std::string> out;
  for (const InputEvent& e : events) {
    if (e.kind == InputEvent::Kind::kText || e.kind == InputEvent::Kind::kErase) continue;
    out.push_back(understudy::sim::DescribeEvent(e));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // The first byte picks the options and where to split the rest.
  const uint8_t control = data[0];
  const absl::string_view stream = understudy::fuzz::View(data + 1, size - 1);
  InputOptions options;
  options.lf_submits = (control & 1) != 0;
  options.max_prompt_bytes = 64 + (control >> 1);  // small, so the bound is reached

  InputDecoder whole(options);
  std::vector<InputEvent> whole_events;
  whole.Feed(stream, &whole_events);
  whole.Flush(&whole_events);

  InputDecoder pieces(options);
  std::vector<InputEvent> piece_events;
  const size_t step = 1 + (control % 7);
  for (size_t i = 0; i < stream.size(); i += step) {
    // A lone ESC at a piece's end may wait for more: more comes at once here,
    // so no Flush between pieces (as the loop only flushes after 30 ms).
    pieces.Feed(stream.substr(i, step), &piece_events);
  }
  pieces.Flush(&piece_events);

  FUZZ_CHECK(Meaning(whole_events) == Meaning(piece_events), "any split gives the same prompts");
  FUZZ_CHECK(whole.line() == pieces.line(), "any split leaves the same line");
  for (const InputEvent& e : whole_events) {
    if (e.kind == InputEvent::Kind::kSubmit) {
      FUZZ_CHECK(e.text.size() <= options.max_prompt_bytes, "a submitted prompt is within the bound");
    }
  }
  return 0;
}
