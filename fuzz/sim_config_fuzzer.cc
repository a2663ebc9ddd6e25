// Sim configs (sim/config.h): whatever the text, validation reports instead
// of failing, parsing agrees with validation (a config parses exactly when
// its report has no error), and a parsed config selects a behaviour for any
// prompt.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "sim/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  const absl::string_view text = fuzz::View(data, size);
  const validation::Report report = sim::ValidateSimConfig(text, "fuzz.yaml");
  absl::StatusOr<sim::SimConfig> parsed = sim::ParseSimConfig(text, "fuzz.yaml");
  FUZZ_CHECK(parsed.ok() == (report.errors() == 0), "parses exactly when the report has no error");
  if (!parsed.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(parsed.status()), "a bad config is INVALID_ARGUMENT");
    return 0;
  }
  FUZZ_CHECK(parsed->default_behaviour != nullptr, "a parsed config has a default");
  (void)parsed->Select(text.substr(0, 256));
  (void)sim::LooksLikeSimConfig(text);
  return 0;
}
