// What every `understudy` command shares: the exit codes, the --db flags and
// opening the database. A command is a function from parsed flags to an exit
// code: 0 success; 1 what was asked about is wrong or missing (unknown
// session, malformed import file); 2 usage error (reported by the flag
// parser); 3 operational failure (cannot open the database, cannot listen).
// Errors print one line, "understudy: REASON", on stderr.
#ifndef UNDERSTUDY_CLI_COMMAND_BASE_H_
#define UNDERSTUDY_CLI_COMMAND_BASE_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/store.h"

namespace understudy {
namespace cli {

// Prints "understudy: <message>" and returns the exit code for `status`.
int Fail(const absl::Status& status);

struct DbFlags {
  std::string db = "understudy.db";
  bool json = false;
};
// Opens the database of a command. Only `import` creates it: for the others
// a mistyped --db is an error, not a new empty database. Any failure is an
// operational one (exit 3): UNAVAILABLE, its message naming the file
// ("cannot open database x.db: no such file").
absl::StatusOr<std::unique_ptr<store::Store>> OpenStore(const DbFlags& db, bool create = false);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_COMMAND_BASE_H_
