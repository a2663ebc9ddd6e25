#include "cli/cmd_trace.h"

#include "cli/cmd_common.h"
#include "cli/inspect.h"

namespace understudy {
namespace cli {

void AddTraceFlags(CLI::App* cmd, TraceCommandFlags* flags, DbFlags* db) {
  cmd->add_option("run", flags->run, "Run id")->required();
  cmd->add_option("--kind", flags->kinds, "Only these kinds (exchange, miss, run_started, ...)");
  cmd->add_option("--agent", flags->agent, "Only this agent's events");
  cmd->footer("Example: understudy trace run-1a2b3c4d5e6f7a8b --kind exchange");
  AddDbFlags(cmd, db, /*json=*/true);
}

int RunTrace(const TraceCommandFlags& flags, const DbFlags& db) {
  return Trace(db, flags.run, flags.kinds, flags.agent);
}

void AddTimelineFlags(CLI::App* cmd, TraceCommandFlags* flags, DbFlags* db) {
  cmd->add_option("ref", flags->timeline_ref, "Run id, or session NAME or NAME@VERSION")
      ->required();
  cmd->add_option("--color", flags->color,
                  "auto (only on a terminal, and not when NO_COLOR is set), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  cmd->footer(
      "One line per event: answers, routing decisions, tool calls, phase changes, misses.\n"
      "A name that is not a run id is looked up as a session. --json prints the events as\n"
      "`trace --json` does (or the session's exchanges).\n"
      "Examples:\n"
      "  understudy show run-1a2b3c4d5e6f7a8b\n"
      "  understudy show golden@2 --color never");
  AddDbFlags(cmd, db, /*json=*/true);
}

int RunTimeline(const TraceCommandFlags& flags, const DbFlags& db) {
  const ColorMode color = flags.color == "always"  ? ColorMode::kAlways
                          : flags.color == "never" ? ColorMode::kNever
                                                   : ColorMode::kAuto;
  return Show(db, flags.timeline_ref, color);
}

void AddAssertFlags(CLI::App* cmd, TraceCommandFlags* flags, DbFlags* db) {
  cmd->add_option("--run", flags->assert_run, "Run id")->required();
  cmd->add_option("spec", flags->spec_files, "Assertion spec file (YAML or JSON)")->required();
  cmd->add_option("--addr", flags->assert_addr,
                  "Ask a running server (HOST:PORT) instead of reading the database");
  cmd->footer(
      "A spec lists checks under `assertions:` (docs/assertions.md): agent_sequence,\n"
      "phase_transitions, tool_calls, feedback_propagated, count, no_misses, all_consumed,\n"
      "and select/expect items. Each failure says what was expected, what the run did and\n"
      "where they first differ.\n"
      "Exit: 0 every check passed, 1 a check failed, 2 usage or an invalid spec,\n"
      "3 unreadable spec or database, unknown run, or server unreachable.\n"
      "Examples:\n"
      "  understudy assert --run run-1a2b3c4d5e6f7a8b checks.yaml\n"
      "  understudy assert --run my-run --addr 127.0.0.1:7000 checks.yaml --json");
  AddDbFlags(cmd, db, /*json=*/true);
}

int RunAssert(const TraceCommandFlags& flags, const DbFlags& db) {
  return Assert(db, flags.assert_addr, flags.assert_run, flags.spec_files);
}

void AddValidateFlags(CLI::App* cmd, TraceCommandFlags* flags) {
  cmd->add_option("file", flags->scenario_files,
                  "Scenario file (YAML or JSON), pack name, or sim config")
      ->required();
  cmd->add_flag("--json", flags->validate_json, "Print the reports as one JSON document");
  cmd->footer(
      "Exit: 0 no errors (warnings allowed), 1 some file has errors, 2 usage, 3 unreadable file.\n"
      "Packs are looked up in $UNDERSTUDY_SCENARIOS, then in the scenarios/ shipped with understudy.\n"
      "A file with `schema: understudy.sim/v1` or a top-level `behaviours` (or, in the MEOW\n"
      "dialect, `behaviors`, `hooks` or `logging`) is checked as a sim config (`understudy sim\n"
      "--config`, docs/sim.md) instead.\n"
      "Examples:\n"
      "  understudy validate tests/review-loop.yaml\n"
      "  understudy validate coder.sim.yaml\n"
      "  understudy validate rate-limit network-resilience --json");
}

int RunValidate(const TraceCommandFlags& flags) {
  return Validate(flags.scenario_files, flags.validate_json);
}

}  // namespace cli
}  // namespace understudy
