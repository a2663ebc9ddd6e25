// The SSE parser (provider/sse.h): the events do not depend on how the bytes
// were split into reads (the first byte picks the split points).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "provider/sse.h"

namespace {

// Every event (raw, name, data), or the error, of `parts` fed in order.
std::string Parse(const std::vector<absl::string_view>& parts) {
  understudy::provider::SseParser parser(size_t{1} << 30);  // no input reaches the bound
  std::string out;
  auto add = [&](const absl::StatusOr<std::vector<understudy::provider::SseEvent>>& events) {
    if (!events.ok()) {
      out += "ERROR\n";
      return false;
    }
    for (const auto& e : *events) {
      out += e.raw;
      out += '\x01';
      out += e.event;
      out += '\x01';
      out += e.data;
      out += '\x02';
    }
    return true;
  };
  for (absl::string_view part : parts) {
    if (!add(parser.Feed(part))) return out;
  }
  add(parser.Finish());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = 1 + data[0] % 17;
  const absl::string_view text = understudy::fuzz::View(data + 1, size - 1);
  std::vector<absl::string_view> split;
  for (size_t i = 0; i < text.size(); i += step) split.push_back(text.substr(i, step));
  FUZZ_CHECK(Parse({text}) == Parse(split), "events do not depend on the read boundaries");
  return 0;
}
