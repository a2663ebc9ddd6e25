#include "cli/cmd_gen.h"

#include <iostream>

#include "cli/gen_spec.h"
#include "cli/gen_test.h"
#include "cli/schema_command.h"
#include "testgen/spec_gen.h"

namespace understudy {
namespace cli {

void AddSchemaFlags(CLI::App* cmd, GenCommandFlags* flags) {
  cmd->add_option("kind", flags->schema_kind, "scenario | spec | session | sim | sim-meow")
      ->required();
  cmd->footer(
      "JSON Schema 2020-12, for editors (docs/schemas.md).\n"
      "Example:\n"
      "  understudy schema scenario > .understudy/scenario.schema.json");
}

int RunSchema(const GenCommandFlags& flags) { return Schema(flags.schema_kind); }

void AddGenSpecFlags(CLI::App* cmd, GenCommandFlags* flags, DbFlags* db) {
  cmd->add_option("run", flags->spec_ref, "Run id, or session NAME or NAME@N")->required();
  cmd->add_option("-o,--output", flags->spec_output, "Spec file to write (\"-\": stdout)");
  cmd->add_option("--match", flags->spec_match, "How sequences compare")
      ->check(CLI::IsMember({"exact", "prefix", "subsequence"}));
  cmd->add_option("--arguments", flags->spec_arguments, "Tool-call arguments checked")
      ->check(CLI::IsMember({"key", "all", "none"}));
  cmd->add_option("--keep-argument", flags->spec_keep,
                  "Check exactly these argument names (repeatable)");
  cmd->add_flag("--collapse-repeats", flags->spec_collapse,
                "An agent's consecutive turns count once in the agent sequence");
  cmd->add_option("--addr", flags->spec_addr,
                  "Ask a running server (HOST:PORT) instead of reading the database");
  cmd->footer(
      "The spec checks the agents in order, each agent's tool calls with their key arguments,\n"
      "phase transitions, feedback that reached another agent, and no misses (docs/agents.md).\n"
      "Exit: 0 written, 1 unknown run or session, 2 usage, 3 unreadable database or unwritable file.\n"
      "Example:\n"
      "  understudy gen-spec golden -o golden.spec.yaml");
  AddDbFlags(cmd, db, /*json=*/false);
}

int RunGenSpec(const GenCommandFlags& flags, const DbFlags& db) {
  testgen::SpecOptions options;
  options.match = *testgen::ParseMatch(flags.spec_match);
  options.arguments = *testgen::ParseArguments(flags.spec_arguments);
  options.keep_arguments = flags.spec_keep;
  options.collapse_repeats = flags.spec_collapse;
  return GenSpec(db, flags.spec_addr, flags.spec_ref, options, flags.spec_output);
}

void AddGenTestFlags(CLI::App* cmd, GenCommandFlags* flags) {
  cmd->add_option("spec", flags->test_spec, "Assertion spec file")->required();
  cmd->add_option("--framework", flags->test_framework, "pytest | node | gtest")
      ->required()
      ->check(CLI::IsMember({"pytest", "node", "node:test", "gtest", "googletest"}));
  cmd->add_option("-o,--output", flags->test_output, "Test file to write (\"-\": stdout)");
  cmd->add_option("--session", flags->test.session,
                  "Session to replay (default: the spec's `session:`)");
  cmd->add_option("--db", flags->test.db, "The golden database the test replays from");
  cmd->add_option("--name", flags->test.test_name, "Words naming the test");
  cmd->footer(
      "The command under test goes after --, run without a shell, with OPENAI_BASE_URL,\n"
      "ANTHROPIC_BASE_URL, UNDERSTUDY_ADDR, UNDERSTUDY_HTTP and UNDERSTUDY_RUN pointing at the replay.\n"
      "Exit: 0 written, 1 invalid spec, 2 usage, 3 unreadable spec or unwritable file.\n"
      "Example:\n"
      "  understudy gen-test golden.spec.yaml --framework pytest -o test_golden.py -- node agent.js");
}

int RunGenTest(GenCommandFlags* flags, const CommandAfterSeparator& after) {
  if (!after.given || after.words.empty()) {
    std::cerr << "understudy: give the command under test after --, e.g. understudy gen-test "
                 "spec.yaml --framework pytest -- node agent.js"
              << std::endl;
    return 2;
  }
  flags->test.command = after.words;
  flags->test.framework = *testgen::ParseFramework(flags->test_framework);
  return GenTest(flags->test_spec, flags->test, flags->test_output);
}

}  // namespace cli
}  // namespace understudy
