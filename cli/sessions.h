// `understudy sessions ls|show|rm`, `export` and `import`: the recorded
// sessions in a database.
#ifndef UNDERSTUDY_CLI_SESSIONS_H_
#define UNDERSTUDY_CLI_SESSIONS_H_

#include <string>

#include "cli/command_base.h"

namespace understudy {
namespace cli {

int SessionsList(const DbFlags& db, const std::string& prefix);
int SessionsShow(const DbFlags& db, const std::string& ref);
int SessionsRemove(const DbFlags& db, const std::string& ref);
// Writes the JSONL to `output`, or stdout when it is "" or "-".
int Export(const DbFlags& db, const std::string& ref, const std::string& output);
// Reads JSONL from `input` ("-" for stdin).
int Import(const DbFlags& db, const std::string& input, const std::string& name);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_SESSIONS_H_
