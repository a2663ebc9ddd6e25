#include "cli/command_table.h"

#include <string>
#include <utility>
#include <vector>

namespace understudy {
namespace cli {

const std::vector<Command>& Commands() {
  // Each entry binds a command's flags (the part of CommandLine it reads) to
  // its functions in cli/cmd_*.h.
  static const std::vector<Command>* const kCommands = new std::vector<Command>{
      {"", "serve", "Run the understudy server.",
       [](CLI::App* cmd, CommandLine* f) { AddServeFlags(cmd, &f->server); },
       [](const CLI::App& cmd, CommandLine* f) { return RunServe(cmd, &f->server, f->version); }},
      {"", "record", "Run a command against understudy in record mode; exit with its exit code.",
       [](CLI::App* cmd, CommandLine* f) { AddRecordFlags(cmd, &f->server, &f->wrap); },
       [](const CLI::App&, CommandLine* f) {
         return RunRecordOrReplay(/*record=*/true, &f->server, &f->wrap, f->after_separator);
       }},
      {"", "replay", "Run a command against a recorded session; exit with its exit code.",
       [](CLI::App* cmd, CommandLine* f) { AddReplayFlags(cmd, &f->server, &f->wrap); },
       [](const CLI::App&, CommandLine* f) {
         return RunRecordOrReplay(/*record=*/false, &f->server, &f->wrap, f->after_separator);
       }},
      {"", "sessions", "List, show or remove recorded sessions.",
       [](CLI::App* cmd, CommandLine*) { AddSessionsGroup(cmd); }, nullptr},
      {"sessions", "ls", "List sessions and their versions.",
       [](CLI::App* cmd, CommandLine* f) { AddSessionsListFlags(cmd, &f->store, &f->db); },
       [](const CLI::App&, CommandLine* f) { return RunSessionsList(f->store, f->db); }},
      {"sessions", "show", "Show a session's exchanges.",
       [](CLI::App* cmd, CommandLine* f) { AddSessionsShowFlags(cmd, &f->store, &f->db); },
       [](const CLI::App&, CommandLine* f) { return RunSessionsShow(f->store, f->db); }},
      {"sessions", "rm", "Delete a session (every version, or NAME@N).",
       [](CLI::App* cmd, CommandLine* f) { AddSessionsRemoveFlags(cmd, &f->store, &f->db); },
       [](const CLI::App&, CommandLine* f) { return RunSessionsRemove(f->store, f->db); }},
      {"", "export", "Write a session as JSONL (deterministic; diff it in git).",
       [](CLI::App* cmd, CommandLine* f) { AddExportFlags(cmd, &f->store, &f->db); },
       [](const CLI::App&, CommandLine* f) { return RunExport(f->store, f->db); }},
      {"", "import", "Load a JSONL session as a new version; all or nothing.",
       [](CLI::App* cmd, CommandLine* f) { AddImportFlags(cmd, &f->store, &f->db); },
       [](const CLI::App&, CommandLine* f) { return RunImport(f->store, f->db); }},
      {"", "runs", "List runs, or remove them with their traces to keep the store small.",
       [](CLI::App* cmd, CommandLine*) { AddRunsGroup(cmd); }, nullptr},
      {"runs", "ls", "List runs: session, mode, state, trace level, start, duration, counts, events.",
       [](CLI::App* cmd, CommandLine* f) { AddRunsListFlags(cmd, &f->store, &f->db); },
       [](const CLI::App&, CommandLine* f) { return RunRunsList(f->store, f->db); }},
      {"runs", "rm", "Delete runs with their traces, and give the space back.",
       [](CLI::App* cmd, CommandLine* f) { AddRunsRemoveFlags(cmd, &f->store, &f->db); },
       [](const CLI::App&, CommandLine* f) { return RunRunsRemove(f->store, f->db); }},
      {"runs", "prune",
       "Delete runs by age, by count per session or by state, and give the space back.",
       [](CLI::App* cmd, CommandLine* f) { AddRunsPruneFlags(cmd, &f->store, &f->db); },
       [](const CLI::App&, CommandLine* f) { return RunRunsPrune(f->store, f->db); }},
      {"", "trace", "Print a run's trace events in order.",
       [](CLI::App* cmd, CommandLine* f) { AddTraceFlags(cmd, &f->trace, &f->db); },
       [](const CLI::App&, CommandLine* f) { return RunTrace(f->trace, f->db); }},
      {"", "show", "Print what happened in a run (or a session's exchanges) as a timeline.",
       [](CLI::App* cmd, CommandLine* f) { AddTimelineFlags(cmd, &f->trace, &f->db); },
       [](const CLI::App&, CommandLine* f) { return RunTimeline(f->trace, f->db); }},
      {"", "assert", "Check a run's trace against assertion specs; print a verdict per check.",
       [](CLI::App* cmd, CommandLine* f) { AddAssertFlags(cmd, &f->trace, &f->db); },
       [](const CLI::App&, CommandLine* f) { return RunAssert(f->trace, f->db); }},
      {"", "validate",
       "Check scenario files and sim configs; print every problem with its line and a suggestion.",
       [](CLI::App* cmd, CommandLine* f) { AddValidateFlags(cmd, &f->trace); },
       [](const CLI::App&, CommandLine* f) { return RunValidate(f->trace); }},
      {"", "mcp-proxy",
       "Stand in for a stdio MCP server: relay the agent's JSON-RPC to understudy, which records "
       "or replays it.",
       [](CLI::App* cmd, CommandLine* f) { AddMcpProxyFlags(cmd, &f->mcp_proxy); },
       [](const CLI::App&, CommandLine* f) {
         return RunMcpProxyCommand(&f->mcp_proxy, f->after_separator);
       }},
      {"", "mcp",
       "Serve understudy's tools to coding agents over MCP (stdio): sessions, traces, validators, "
       "spec and test generation, test runs.",
       [](CLI::App* cmd, CommandLine* f) { AddMcpServeFlags(cmd, &f->mcp_serve); },
       [](const CLI::App&, CommandLine* f) { return RunMcpServeCommand(f->mcp_serve, f->version); }},
      {"", "schema",
       "Print the JSON Schema of a document kind: scenario, spec, session, sim or sim-meow.",
       [](CLI::App* cmd, CommandLine* f) { AddSchemaFlags(cmd, &f->gen); },
       [](const CLI::App&, CommandLine* f) { return RunSchema(f->gen); }},
      {"", "gen-spec",
       "Write an assertion spec that a run passes (a run id, or a session's latest run).",
       [](CLI::App* cmd, CommandLine* f) { AddGenSpecFlags(cmd, &f->gen, &f->db); },
       [](const CLI::App&, CommandLine* f) { return RunGenSpec(f->gen, f->db); }},
      {"", "gen-test",
       "Write a pytest, node:test or GoogleTest file that replays a session, runs a command and "
       "asserts a spec.",
       [](CLI::App* cmd, CommandLine* f) { AddGenTestFlags(cmd, &f->gen); },
       [](const CLI::App&, CommandLine* f) { return RunGenTest(&f->gen, f->after_separator); }},
      {"", "verify-install",
       "Pack an agent's npm or Python package, install it in a sandbox, run it there under a "
       "replay and check assertion specs.",
       [](CLI::App* cmd, CommandLine* f) { AddVerifyInstallFlags(cmd, &f->server, &f->wrap); },
       [](const CLI::App&, CommandLine* f) {
         return RunVerifyInstallCommand(&f->server, &f->wrap, f->after_separator);
       }},
      // Listed in --help only: main.cc hands `sim` its arguments before parsing.
      {"", "sim",
       "A simulated terminal coding agent for orchestrator tests, driven through "
       "tmux (flags: understudy sim --help).",
       nullptr, nullptr},
  };
  return *kCommands;
}

std::vector<std::pair<const Command*, CLI::App*>> AddCommands(CLI::App* app, CommandLine* flags) {
  std::vector<std::pair<const Command*, CLI::App*>> added;
  for (const Command& command : Commands()) {
    CLI::App* parent = *command.group == '\0' ? app : app->get_subcommand(command.group);
    CLI::App* cmd = parent->add_subcommand(command.name, command.help);
    if (command.add_flags != nullptr) command.add_flags(cmd, flags);
    added.emplace_back(&command, cmd);
  }
  return added;
}

}  // namespace cli
}  // namespace understudy
