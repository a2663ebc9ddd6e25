// `understudy schema`, `gen-spec` and `gen-test`: the commands that write
// documents for people and their tools (a JSON Schema, an assertion spec, a
// test file; bodies in cli/schema_command.h, cli/gen_spec.h, cli/gen_test.h).
#ifndef UNDERSTUDY_CLI_CMD_GEN_H_
#define UNDERSTUDY_CLI_CMD_GEN_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/cmd_common.h"
#include "cli/command_base.h"
#include "testgen/test_gen.h"

namespace understudy {
namespace cli {

// The flags of these commands besides --db (DbFlags).
struct GenCommandFlags {
  // schema's kind.
  std::string schema_kind;
  // gen-spec's.
  std::string spec_ref;
  std::string spec_addr;
  std::string spec_output = "-";
  std::string spec_match = "exact";
  std::string spec_arguments = "key";
  std::vector<std::string> spec_keep;
  bool spec_collapse = false;
  // gen-test's.
  std::string test_spec;
  std::string test_framework;
  std::string test_output = "-";
  testgen::TestOptions test;
};

// Each command's flags, bound to `flags` (and `db`); its Run function runs it
// once parsed and returns its exit code.
void AddSchemaFlags(CLI::App* cmd, GenCommandFlags* flags);
int RunSchema(const GenCommandFlags& flags);
void AddGenSpecFlags(CLI::App* cmd, GenCommandFlags* flags, DbFlags* db);
int RunGenSpec(const GenCommandFlags& flags, const DbFlags& db);
void AddGenTestFlags(CLI::App* cmd, GenCommandFlags* flags);
// 2 when no command under test follows --.
int RunGenTest(GenCommandFlags* flags, const CommandAfterSeparator& after);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_CMD_GEN_H_
