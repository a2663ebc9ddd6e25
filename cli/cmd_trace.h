// `understudy trace`, `show`, `assert` and `validate`: the commands that read
// a run's trace or check what a run or a scenario must be (bodies in
// cli/inspect.h).
#ifndef UNDERSTUDY_CLI_CMD_TRACE_H_
#define UNDERSTUDY_CLI_CMD_TRACE_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/command_base.h"

namespace understudy {
namespace cli {

// The flags of these commands besides --db and --json (DbFlags).
struct TraceCommandFlags {
  // trace's run, --kind and --agent.
  std::string run;
  std::vector<std::string> kinds;
  std::string agent;
  // show's ref and --color.
  std::string timeline_ref;
  std::string color = "auto";
  // assert's --run, --addr and specs.
  std::string assert_run;
  std::string assert_addr;
  std::vector<std::string> spec_files;
  // validate's files and --json.
  std::vector<std::string> scenario_files;
  bool validate_json = false;
};

// Each command's flags, bound to `flags` and `db`; its Run function runs it
// once parsed and returns its exit code.
void AddTraceFlags(CLI::App* cmd, TraceCommandFlags* flags, DbFlags* db);
int RunTrace(const TraceCommandFlags& flags, const DbFlags& db);
void AddTimelineFlags(CLI::App* cmd, TraceCommandFlags* flags, DbFlags* db);
int RunTimeline(const TraceCommandFlags& flags, const DbFlags& db);
void AddAssertFlags(CLI::App* cmd, TraceCommandFlags* flags, DbFlags* db);
int RunAssert(const TraceCommandFlags& flags, const DbFlags& db);
void AddValidateFlags(CLI::App* cmd, TraceCommandFlags* flags);
int RunValidate(const TraceCommandFlags& flags);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_CMD_TRACE_H_
