// What the two sim config dialects (docs/sim.md#config-reference) are
// checked with: the understudy dialect (sim/config.cc) and the MEOW dialect
// (sim/meow_config.cc) each keep only their own schema on top of SimChecker,
// and both fill the one SimConfig the simulator runs. Internal to the
// sim_config library; callers use sim/config.h.
#ifndef UNDERSTUDY_SIM_CONFIG_CHECKER_H_
#define UNDERSTUDY_SIM_CONFIG_CHECKER_H_

#include <initializer_list>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "sim/config.h"
#include "validation/problems.h"
#include "validation/yaml_checker.h"
#include "yaml-cpp/yaml.h"

namespace understudy {
namespace sim {

// The checks of fields both dialects have. Each reports a problem at the
// node (with its path) and returns false when the value is not what was
// asked for; the out-parameter is set only on success.
class SimChecker : public validation::YamlChecker {
 public:
  // `report` and `out` are not owned and must outlive the checker.
  SimChecker(validation::Report* report, SimConfig* out) : YamlChecker(report), out_(out) {}

  // A number of milliseconds, or a number with its unit ("150ms", "2s").
  bool Duration(const YAML::Node& n, const std::string& path, absl::Duration* out);
  // The outputs passed to the completion command: a mapping of non-empty
  // names to scalars (taken as their text).
  void Outputs(const YAML::Node& n, const std::string& path,
               std::map<std::string, std::string>* out);
  // An exit status: an integer from 0 to 255; `suggestion` goes with a
  // larger one.
  bool ExitCode(const YAML::Node& n, const std::string& path, int* out,
                std::string suggestion = "");
  // A behaviour that answers every prompt no behaviour matched when the
  // config gives none: `complete`, with the config's completion.
  std::shared_ptr<Behaviour> PlainComplete(const std::string& path) const;

 protected:
  SimConfig* out() const { return out_; }

 private:
  SimConfig* out_;
};

// True when `root` is written in the MEOW dialect: it has no `schema`, and
// has a key only that dialect has (`behaviors`, `hooks`, `logging`, one of
// its `timing` keys, or a `default` whose `action` is a mapping).
bool IsMeowDocument(const YAML::Node& root);

// Checks `root`, a MEOW-dialect config, into `out` (sim/meow_config.cc).
void CheckMeowDocument(const YAML::Node& root, validation::Report* report, SimConfig* out);

// A dialect's action (or MEOW type) and the fields it takes beyond the ones
// every behaviour has; each dialect keeps a table of these in ActionKind
// order.
struct ActionInfo {
  ActionKind kind;
  const char* name;
  std::initializer_list<const char*> fields;
};

// Whether the action `kind` of `table` takes the field `key`.
bool TakesField(absl::Span<const ActionInfo> table, ActionKind kind, absl::string_view key);

// "WORD NAME" or "WORDs NAME, NAME": the names in `table` of the actions
// that take `key` ("action ask", "types complete, fail_then_succeed").
std::string NamesTaking(absl::Span<const ActionInfo> table, absl::string_view key,
                        absl::string_view word);

}  // namespace sim
}  // namespace understudy

#endif  // UNDERSTUDY_SIM_CONFIG_CHECKER_H_
