// `understudy verify-install`: the check that an agent as shipped — packed,
// installed into a fresh sandbox and run from there — still behaves, which
// is how a file left out of the package, a path that exists only in the
// repository or an undeclared dependency is caught before users meet it.
//
//   understudy verify-install --session golden --spec golden.spec.yaml
//       --package . -- my-agent --question "What is the weather in Paris?"
//
// 1. The specs are validated and the golden session looked up (nothing is
//    packed when either is wrong).
// 2. The package at --package is packed and installed into a new temporary
//    folder: a package.json → `npm pack`, then `npm install <tgz>` in an
//    empty npm project (dependencies from the npm cache or registry); a
//    pyproject.toml → `pip wheel --no-deps --no-build-isolation`, then a
//    `venv --system-site-packages` that installs the wheel with
//    `--no-index` (dependencies must already be in the system site).
// 3. ENTRY is found in what was installed: an npm bin (or a file of the
//    installed package), a console script of the venv.
// 4. ENTRY runs exactly as under `understudy replay --session S -- ENTRY`
//    (RunWrapped), with the sandbox as its working directory and an
//    environment holding no path of the package's folder or repository.
// 5. The specs are checked against that run exactly as `understudy assert`
//    does (CheckRun).
//
// The pure pieces are declared here too, for their tests.
#ifndef UNDERSTUDY_CLI_VERIFY_INSTALL_H_
#define UNDERSTUDY_CLI_VERIFY_INSTALL_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/inspect.h"
#include "cli/serve.h"
#include "cli/wrap.h"

namespace understudy {
namespace cli {

struct VerifyInstallFlags {
  // The replay, as `understudy replay` takes it: the database
  // (server.db_path), the session (server.default_session, NAME or NAME@N),
  // the mode ("none": strict) and the matching options.
  ServeFlags serve;
  // Assertion spec files (docs/assertions.md); at least one.
  std::vector<std::string> spec_files;
  // The folder of the agent's package: a package.json or a pyproject.toml.
  std::string package_dir = ".";
  // Keep the sandbox (its path is printed) instead of removing it.
  bool keep = false;
  // The interpreter that builds the wheel and the venv.
  std::string python = "python3";
  // ENTRY and its arguments, verbatim.
  std::vector<std::string> command;
};

// Runs the whole check, printing progress and errors on stderr, the agent's
// stdout and the verdicts on stdout. Returns 0 when the agent exited 0 and
// every check passed; 1 when packing, installing or finding ENTRY failed,
// the agent failed (its stderr's last lines and a hint are printed), a
// check failed, or the session is unknown; 2 for a usage error (no ENTRY,
// a --package folder that does not exist or holds neither manifest, an
// invalid spec); 3 when a spec or the database cannot be read, or npm or
// Python cannot be run. Call from the main thread before other threads
// start (see RunWrapped).
int VerifyInstall(const VerifyInstallFlags& flags);

enum class PackageKind { kNpm, kPython };

// What `dir` holds: package.json → kNpm, else pyproject.toml → kPython.
// INVALID_ARGUMENT naming `dir` when it does not exist, is not a folder, or
// holds neither file.
absl::StatusOr<PackageKind> DetectPackageKind(const std::string& dir);

// The parts of an npm package.json that verify-install reads.
struct NpmManifest {
  std::string name;     // "@scope/agent" or "agent"
  std::string version;  // "" when absent
  // Command name → file in the package. A string `bin` is the command named
  // after the package (its scope dropped).
  std::map<std::string, std::string> bins;
};

// Parses package.json text; `path` names it in errors. INVALID_ARGUMENT
// when it is not JSON, not an object, or has no string `name`.
absl::StatusOr<NpmManifest> ParseNpmManifest(absl::string_view json, const std::string& path);

// The argv that runs ENTRY from an npm install: node_modules/.bin/ENTRY
// under `sandbox`, else the file ENTRY in `installed_dir` (a .js, .mjs or
// .cjs file runs with `node`; another one must be executable). NOT_FOUND
// naming ENTRY and listing the package's bins and files when it is
// neither.
absl::StatusOr<std::vector<std::string>> ResolveNpmEntry(const std::string& sandbox,
                                                         const std::string& installed_dir,
                                                         const NpmManifest& manifest,
                                                         const std::string& entry);

// The files under `dir`, relative to it, sorted, without node_modules
// folders; at most `limit`, then "… and N more".
std::vector<std::string> ListFiles(const std::string& dir, size_t limit);

// The last `lines` lines of `text` (all of it when it has fewer).
std::string LastLines(absl::string_view text, int lines);

// A hint for an agent that failed with `stderr_text`: for a module it could
// not load (Node's "Cannot find module '…'" or "Cannot find package '…'",
// Python's "No module named '…'"), where it went missing — a file of the
// installed package (`installed_dir`) that the package's folder
// (`package_dir`) has but the package left out, or a dependency that is not
// declared. Otherwise the general advice for the kind of package. Never
// empty.
std::string MissingFileHint(absl::string_view stderr_text, PackageKind kind,
                            const std::string& installed_dir, const std::string& package_dir);

// The agent's environment: `env` ("NAME=value" entries) without
// NODE_PATH, PYTHONPATH, PYTHONHOME and VIRTUAL_ENV, without any other
// variable whose value names a path inside one of `roots` (the package's
// folder and its repository; HOME is kept), with PATH's entries inside
// `roots` removed and `bin_dir` put first, and PWD set to `cwd`.
std::vector<std::string> SandboxEnvironment(const std::vector<std::string>& env,
                                            const std::vector<std::string>& roots,
                                            const std::string& bin_dir, const std::string& cwd);

// `dir` and, when it lies in a git work tree, that tree's top folder (the
// nearest ancestor with a .git); never "/".
std::vector<std::string> RepositoryRoots(const std::string& dir);

}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_VERIFY_INSTALL_H_
