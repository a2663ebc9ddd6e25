// The JSON depth and UTF-8 guards every parse of outside text goes through
// (validation/json_bounds.h, validation/utf8.h), checked against simple
// reference implementations.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "nlohmann/json.hpp"
#include "validation/json_bounds.h"
#include "validation/utf8.h"

namespace {

// The obvious byte-by-byte reading of RFC 3629, to compare with.
bool ReferenceValidUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    uint32_t cp = 0;
    size_t n = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F;
      n = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F;
      n = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07;
      n = 4;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    const uint32_t min = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  const absl::string_view text = fuzz::View(data, size);

  const bool valid = validation::IsValidUtf8(text);
  FUZZ_CHECK(valid == ReferenceValidUtf8(text), "IsValidUtf8 agrees with the reference");
  const std::string sanitized = validation::SanitizeUtf8(text);
  FUZZ_CHECK(validation::IsValidUtf8(sanitized), "SanitizeUtf8 gives valid UTF-8");
  FUZZ_CHECK(!valid || sanitized == text, "SanitizeUtf8 keeps valid text as it is");
  FUZZ_CHECK(validation::SanitizeUtf8(sanitized) == sanitized, "SanitizeUtf8 is idempotent");
  (void)validation::Shorten(text, size / 2);
  FUZZ_CHECK(validation::IsValidUtf8(validation::Shorten(sanitized, size / 3)) ,
             "Shorten never splits a character");

  const absl::Status checked = validation::CheckJsonText(text, "t");
  absl::StatusOr<nlohmann::json> parsed = validation::ParseJson<nlohmann::json>(text, "t");
  nlohmann::ordered_json lenient = validation::ParseJsonOrDiscarded<nlohmann::ordered_json>(text);
  if (parsed.ok()) {
    FUZZ_CHECK(checked.ok(), "what parses passed the guard");
    FUZZ_CHECK(validation::NestsWithin(text), "what parses nests within the bound");
    FUZZ_CHECK(!lenient.is_discarded(), "ParseJsonOrDiscarded accepts what ParseJson does");
    // Walking a value the guard let through is safe: dump recurses.
    const std::string dumped = parsed->dump();
    absl::StatusOr<nlohmann::json> again = validation::ParseJson<nlohmann::json>(dumped, "t");
    FUZZ_CHECK(again.ok() && *again == *parsed, "dump and parse round-trip");
  } else {
    FUZZ_CHECK(lenient.is_discarded() || !validation::NestsWithin(text) || !checked.ok(),
               "ParseJsonOrDiscarded rejects what ParseJson does");
  }
  return 0;
}
