// Scenario documents (scenario/scenario.h): whatever the bytes, validation
// answers with a report and never crashes, hangs or recurses without bound;
// LoadScenario agrees with it; a loaded scenario builds a Script.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "scenario/scenario.h"
#include "scenario/script.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  const absl::string_view text = fuzz::View(data, size);
  scenario::ValidationReport report = scenario::ValidateScenario(text, "fuzz.yaml");
  for (const scenario::Problem& p : report.problems) {
    FUZZ_CHECK(!p.message.empty(), "every problem says what is wrong");
  }
  (void)scenario::FormatReport(report);
  (void)scenario::ReportToJson(report).dump();
  absl::StatusOr<scenario::Scenario> loaded = scenario::LoadScenario(text, "fuzz.yaml");
  FUZZ_CHECK(loaded.ok() == report.ok(), "LoadScenario agrees with ValidateScenario");
  if (loaded.ok()) {
    absl::StatusOr<std::shared_ptr<const scenario::Script>> script =
        scenario::Script::FromScenario(*std::move(loaded));
    FUZZ_CHECK(script.ok(), "a valid scenario builds a script");
  }
  return 0;
}
