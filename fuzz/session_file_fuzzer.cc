// Session import (store/session_file.h): any JSONL is refused with the line
// and reason, or parsed into a file that writes back out and parses again to
// the same bytes.
#include <cstddef>
#include <cstdint>

#include "absl/strings/match.h"
#include "fuzz/fuzz_util.h"
#include "store/proto_utf8.h"
#include "store/session_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  const absl::string_view text = fuzz::View(data, size);
  absl::StatusOr<store::SessionFile> file = store::ParseSessionFile(text);
  if (!file.ok()) {
    FUZZ_CHECK(absl::StartsWith(file.status().message(), "line "), "errors name their line");
    return 0;
  }
  for (const v1::Exchange& e : file->exchanges) {
    FUZZ_CHECK(!store::FindInvalidUtf8Field(e).has_value(), "imported strings are UTF-8");
  }
  absl::StatusOr<std::string> written = store::WriteSessionFile(*file);
  FUZZ_CHECK(written.ok(), "a parsed file writes");
  absl::StatusOr<store::SessionFile> again = store::ParseSessionFile(*written);
  FUZZ_CHECK(again.ok(), "a written file parses");
  absl::StatusOr<std::string> twice = store::WriteSessionFile(*again);
  FUZZ_CHECK(twice.ok() && *twice == *written, "write, parse, write is byte-identical");
  return 0;
}
