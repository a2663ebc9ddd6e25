#include "cli/verify_install.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "base/subprocess.h"
#include "engine/engine.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace cli {
namespace {

namespace fs = std::filesystem;

// How much of a failed step's output, and of a failed agent's stderr, is
// shown: enough for a stack trace's head and its cause.
constexpr int kTailLines = 20;
// What a packaging step may take: an `npm install` that fetches from the
// registry, a wheel with a slow build.
constexpr absl::Duration kStepTimeout = absl::Minutes(5);
// How many installed files a "not found" message lists.
constexpr size_t kListedFiles = 30;

bool IsDirectory(const std::string& path) {
  std::error_code ignored;
  return fs::is_directory(path, ignored);
}

// A regular file, after symbolic links (a dangling link is no file).
bool IsFile(const std::string& path) {
  std::error_code ignored;
  return fs::is_regular_file(path, ignored);
}

bool Exists(const std::string& path) {
  std::error_code ignored;
  return fs::exists(path, ignored);
}

std::string Indented(absl::string_view text) {
  return absl::StrCat("    ", absl::StrReplaceAll(text, {{"\n", "\n    "}}));
}

// The folder the whole check works in, under $TMPDIR (else /tmp), mode 0700:
// the packed artifact, sandbox/ (the agent's working directory), venv/ and
// the agent's stderr. Removed with everything in it when this goes, unless
// kept.
class Sandbox {
 public:
  // UNAVAILABLE with the reason when the folder cannot be made.
  static absl::StatusOr<std::unique_ptr<Sandbox>> Create() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/understudy-verify-XXXXXX");
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()) == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("cannot make a temporary folder ", pattern, ": ", std::strerror(errno)));
    }
    // The real path: what Node and Python print in their errors.
    std::error_code error;
    fs::path real = fs::canonical(buffer.data(), error);
    auto sandbox = std::unique_ptr<Sandbox>(new Sandbox(error ? buffer.data() : real.string()));
    if (!fs::create_directory(sandbox->cwd(), error)) {
      return absl::UnavailableError(
          absl::StrCat("cannot make the folder ", sandbox->cwd(), ": ", error.message()));
    }
    return sandbox;
  }

  ~Sandbox() {
    if (keep_) return;
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  void Keep() { keep_ = true; }
  const std::string& path() const { return path_; }
  // The agent's working directory; for npm, the project that installs the
  // package.
  std::string cwd() const { return path_ + "/sandbox"; }

 private:
  explicit Sandbox(std::string path) : path_(std::move(path)) {}
  const std::string path_;
  bool keep_ = false;
};

// Runs one packaging step (npm, pip, venv) in `cwd`, its output captured
// (and copied to `output` when given). OK when it exited 0;
// FAILED_PRECONDITION "WHAT failed (ARGV in CWD: exited with status 1); its
// last lines: …" when it did not; UNAVAILABLE "WHAT: cannot run ARGV: …"
// when it could not start.
absl::Status RunStep(const std::string& what, const std::vector<std::string>& argv,
                     const std::string& cwd, std::string* output = nullptr) {
  RunOptions options;
  options.spawn.cwd = cwd;
  options.spawn.merge_stderr = true;
  options.timeout = kStepTimeout;
  absl::StatusOr<CommandResult> result = RunCommand(argv, options);
  if (!result.ok()) {
    return absl::UnavailableError(absl::StrCat(what, ": ", result.status().message()));
  }
  if (output != nullptr) *output = result->output;
  if (result->ok()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(what, " failed (", ShellQuoted(argv), " in ", cwd, ": ", result->Describe(),
                   "); its last lines:\n", Indented(LastLines(result->output, kTailLines))));
}

// The file in `dir` whose name ends with `suffix` (the folder holds one);
// FAILED_PRECONDITION naming `what` when it made none.
absl::StatusOr<std::string> OnlyFileEndingWith(const std::string& dir, absl::string_view suffix,
                                               const std::string& what) {
  std::error_code error;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, error)) {
    if (absl::EndsWith(e.path().filename().string(), suffix)) return e.path().string();
  }
  return absl::FailedPreconditionError(absl::StrCat(what, " left no ", suffix, " file in ", dir));
}

// The golden session exists in the database: checked before anything is
// packed. UNAVAILABLE when the database cannot be opened (it is never
// created), NOT_FOUND for an unknown session.
absl::Status CheckSession(const std::string& db_path, const std::string& ref) {
  if (ref.empty()) return absl::InvalidArgumentError("--session is required");
  if (::access(db_path.c_str(), F_OK) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot open database ", db_path, ": ", std::strerror(errno)));
  }
  DbFlags db;
  db.db = db_path;
  US_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, OpenStore(db));
  US_ASSIGN_OR_RETURN(auto parsed, engine::ParseSessionRef(ref));
  absl::StatusOr<v1::Session> session = store->GetSession(parsed.first, parsed.second);
  if (absl::IsNotFound(session.status())) {
    return absl::NotFoundError(absl::StrCat("unknown session \"", ref, "\" in ", db_path,
                                            " (record it first: understudy record --session ",
                                            parsed.first, " -- COMMAND)"));
  }
  return session.status();
}

// The package as installed, and the command that runs ENTRY from it.
struct Installation {
  std::string description;    // "agent@1.0.0", or the wheel's file name
  std::string installed_dir;  // npm: node_modules/NAME; Python: ""
  std::string bin_dir;        // put first on the agent's PATH
  std::vector<std::string> argv;
};

absl::StatusOr<Installation> InstallNpm(const std::string& package_dir, const Sandbox& sandbox,
                                        const std::string& entry) {
  const std::string manifest_path = package_dir + "/package.json";
  std::ifstream in(manifest_path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return absl::UnavailableError(absl::StrCat("cannot read ", manifest_path));
  }
  absl::StatusOr<NpmManifest> manifest = ParseNpmManifest(text, manifest_path);
  if (!manifest.ok()) return absl::FailedPreconditionError(manifest.status().message());

  std::cerr << "understudy: packing " << package_dir << " (npm pack)" << std::endl;
  US_RETURN_IF_ERROR(RunStep(absl::StrCat("npm pack of ", package_dir),
                             {"npm", "pack", "--pack-destination", sandbox.path()}, package_dir));
  US_ASSIGN_OR_RETURN(std::string tarball, OnlyFileEndingWith(sandbox.path(), ".tgz", "npm pack"));

  // An empty project installs the tarball, as a user's project would; the
  // package's .npmrc (a private registry) comes along.
  nlohmann::json project = {
      {"name", "understudy-verify-sandbox"}, {"version", "0.0.0"}, {"private", true}};
  std::ofstream out(sandbox.cwd() + "/package.json");
  out << project.dump(2) << "\n";
  out.close();
  if (!out) {
    return absl::UnavailableError(absl::StrCat("cannot write ", sandbox.cwd(), "/package.json"));
  }
  if (IsFile(package_dir + "/.npmrc")) {
    std::error_code ignored;
    fs::copy_file(package_dir + "/.npmrc", sandbox.cwd() + "/.npmrc", ignored);
  }
  std::cerr << "understudy: installing " << fs::path(tarball).filename().string() << " into "
            << sandbox.cwd() << " (npm install)" << std::endl;
  US_RETURN_IF_ERROR(RunStep(
      absl::StrCat("npm install of ", fs::path(tarball).filename().string()),
      {"npm", "install", "--prefer-offline", "--no-audit", "--no-fund", tarball}, sandbox.cwd()));

  Installation installed;
  installed.description = manifest->version.empty()
                              ? manifest->name
                              : absl::StrCat(manifest->name, "@", manifest->version);
  installed.installed_dir = absl::StrCat(sandbox.cwd(), "/node_modules/", manifest->name);
  installed.bin_dir = sandbox.cwd() + "/node_modules/.bin";
  US_ASSIGN_OR_RETURN(installed.argv,
                      ResolveNpmEntry(sandbox.cwd(), installed.installed_dir, *manifest, entry));
  return installed;
}

// The names of the files in `dir`.
std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> names;
  std::error_code error;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, error)) {
    names.insert(e.path().filename().string());
  }
  return names;
}

absl::StatusOr<Installation> InstallPython(const std::string& package_dir, const Sandbox& sandbox,
                                           const std::string& python, const std::string& entry) {
  std::cerr << "understudy: building a wheel of " << package_dir << " (pip wheel)" << std::endl;
  US_RETURN_IF_ERROR(RunStep(absl::StrCat("building a wheel of ", package_dir),
                             {python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                              "--disable-pip-version-check", "-w", sandbox.path(), package_dir},
                             sandbox.cwd()));
  US_ASSIGN_OR_RETURN(std::string wheel, OnlyFileEndingWith(sandbox.path(), ".whl", "pip wheel"));
  // The venv borrows the system's pip (it sees the system site) instead of
  // installing its own: seconds less, and no ensurepip needed.
  const std::string venv = sandbox.path() + "/venv";
  absl::Status made = RunStep(
      "making a venv", {python, "-m", "venv", "--without-pip", "--system-site-packages", venv},
      sandbox.cwd());
  // Not the package's fault: this machine's Python cannot make one.
  if (!made.ok()) return absl::UnavailableError(made.message());
  const std::string bin_dir = venv + "/bin";
  const std::set<std::string> before = Names(bin_dir);
  const std::string wheel_name = fs::path(wheel).filename().string();
  std::cerr << "understudy: installing " << wheel_name << " into " << venv
            << " (pip install --no-index)" << std::endl;
  std::string output;
  absl::Status installed_ok =
      RunStep(absl::StrCat("pip install of ", wheel_name),
              {bin_dir + "/python", "-m", "pip", "install", "--no-index",
               "--disable-pip-version-check", "--find-links", sandbox.path(), wheel},
              sandbox.cwd(), &output);
  if (!installed_ok.ok()) {
    if (absl::StrContains(output, "No matching distribution found for")) {
      return absl::FailedPreconditionError(absl::StrCat(
          installed_ok.message(),
          "\nhint: the sandbox installs with --no-index: every dependency in pyproject.toml must "
          "already be installed for ",
          python, " (Debian: its python3-* package), which the venv sees"));
    }
    return installed_ok;
  }

  Installation installed;
  installed.description = wheel_name;
  installed.bin_dir = bin_dir;
  if (entry.find('/') == std::string::npos && IsFile(bin_dir + "/" + entry)) {
    installed.argv = {bin_dir + "/" + entry};
    return installed;
  }
  std::vector<std::string> scripts;
  for (const std::string& name : Names(bin_dir)) {
    if (before.count(name) == 0) scripts.push_back(name);
  }
  return absl::NotFoundError(absl::StrCat(
      "console script `", entry, "` not found in the installed wheel ", wheel_name,
      "; it installed ",
      scripts.empty()
          ? "no console scripts (declare them under [project.scripts] in pyproject.toml)"
          : absl::StrCat("the scripts ", absl::StrJoin(scripts, ", ")),
      "; `python` runs the venv's interpreter (-- python -m MODULE)"));
}

// Reads the last `max_bytes` of the file at `path` ("" when it cannot be
// read).
std::string ReadTail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > static_cast<std::streamoff>(max_bytes)
                                   ? size - static_cast<std::streamoff>(max_bytes)
                                   : 0;
  in.seekg(start);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Prints the reason and returns verify-install's exit code for `status`.
int Exit(const absl::Status& status) {
  std::cerr << "understudy: " << status.message() << std::endl;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return 2;
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
      return 1;
    default:
      return 3;
  }
}

bool IsPathChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || std::strchr("._-~+@", c) != nullptr;
}

// Whether `value` names `root` or a path inside it ("/repo", "/repo/x",
// "x:/repo:y", "file:///repo/a"; not "/repo-old" nor "/x/repo").
bool NamesPathIn(absl::string_view value, absl::string_view root) {
  for (size_t pos = value.find(root); pos != absl::string_view::npos;
       pos = value.find(root, pos + 1)) {
    const size_t end = pos + root.size();
    const bool starts = pos == 0 || !IsPathChar(value[pos - 1]);
    const bool ends = end == value.size() || value[end] == '/' || !IsPathChar(value[end]);
    if (starts && ends) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<PackageKind> DetectPackageKind(const std::string& dir) {
  std::error_code error;
  const fs::file_status status = fs::status(dir, error);
  if (!fs::exists(status)) {
    return absl::InvalidArgumentError(absl::StrCat("--package ", dir, ": no such folder"));
  }
  if (!fs::is_directory(status)) {
    return absl::InvalidArgumentError(absl::StrCat("--package ", dir, " is not a folder"));
  }
  if (IsFile(dir + "/package.json")) return PackageKind::kNpm;
  if (IsFile(dir + "/pyproject.toml")) return PackageKind::kPython;
  return absl::InvalidArgumentError(absl::StrCat(
      "--package ", dir,
      " has no package.json or pyproject.toml: give the folder of the agent's package"));
}

absl::StatusOr<NpmManifest> ParseNpmManifest(absl::string_view json, const std::string& path) {
  nlohmann::json doc = nlohmann::json::parse(json.begin(), json.end(), nullptr,
                                             /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, ": not JSON"));
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  }
  NpmManifest manifest;
  auto name = doc.find("name");
  if (name == doc.end() || !name->is_string() || name->get<std::string>().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no \"name\" (npm packs only a named package)"));
  }
  manifest.name = name->get<std::string>();
  auto version = doc.find("version");
  if (version != doc.end() && version->is_string()) manifest.version = version->get<std::string>();
  auto bin = doc.find("bin");
  if (bin != doc.end() && bin->is_string()) {
    const size_t slash = manifest.name.find('/');
    manifest.bins[slash == std::string::npos ? manifest.name : manifest.name.substr(slash + 1)] =
        bin->get<std::string>();
  } else if (bin != doc.end() && bin->is_object()) {
    for (auto it = bin->begin(); it != bin->end(); ++it) {
      if (it.value().is_string()) manifest.bins[it.key()] = it.value().get<std::string>();
    }
  }
  return manifest;
}

absl::StatusOr<std::vector<std::string>> ResolveNpmEntry(const std::string& sandbox,
                                                         const std::string& installed_dir,
                                                         const NpmManifest& manifest,
                                                         const std::string& entry) {
  const bool is_name = entry.find('/') == std::string::npos;
  if (is_name && IsFile(absl::StrCat(sandbox, "/node_modules/.bin/", entry))) {
    return std::vector<std::string>{absl::StrCat(sandbox, "/node_modules/.bin/", entry)};
  }
  const std::string package =
      manifest.version.empty() ? manifest.name : absl::StrCat(manifest.name, "@", manifest.version);
  auto bin = manifest.bins.find(entry);
  if (bin != manifest.bins.end()) {
    // Declared, yet npm linked nothing that runs: its file was not packed.
    return absl::NotFoundError(absl::StrCat(
        "bin `", entry, "` of the installed package ", package, " points to ", bin->second,
        ", which is not in the package: build it before packing (a `prepack` script) and list it "
        "in `files`"));
  }
  const std::string file = absl::StrCat(installed_dir, "/", entry);
  if (!entry.empty() && IsFile(file)) {
    if (absl::EndsWith(entry, ".js") || absl::EndsWith(entry, ".mjs") ||
        absl::EndsWith(entry, ".cjs")) {
      return std::vector<std::string>{"node", file};
    }
    if (::access(file.c_str(), X_OK) == 0) return std::vector<std::string>{file};
    return absl::NotFoundError(absl::StrCat("`", entry, "` in the installed package ", package,
                                            " is neither a .js file nor executable"));
  }
  std::vector<std::string> bins;
  for (const auto& [name, target] : manifest.bins) {
    bins.push_back(absl::StrCat(name, " → ", target));
  }
  std::vector<std::string> files = ListFiles(installed_dir, kListedFiles);
  return absl::NotFoundError(
      absl::StrCat(is_name ? "bin `" : "file `", entry, "` not found in the installed package ",
                   package, is_name ? " (nor a file of that name in it)" : "", "; it installed: ",
                   bins.empty() ? "no bins" : absl::StrCat("bins ", absl::StrJoin(bins, ", ")),
                   "; files ", files.empty() ? "none" : absl::StrJoin(files, ", ")));
}

std::vector<std::string> ListFiles(const std::string& dir, size_t limit) {
  std::vector<std::string> files;
  std::error_code error;
  fs::recursive_directory_iterator it(dir, error);
  for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    std::error_code ignored;
    if (it->is_directory(ignored)) {
      if (it->path().filename() == "node_modules") it.disable_recursion_pending();
      continue;
    }
    files.push_back(it->path().lexically_relative(dir).string());
  }
  std::sort(files.begin(), files.end());
  if (files.size() > limit) {
    const size_t more = files.size() - limit;
    files.resize(limit);
    files.push_back(absl::StrCat("… and ", more, " more"));
  }
  return files;
}

std::string LastLines(absl::string_view text, int lines) {
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  size_t start = text.size();
  for (int n = 0; n < lines; ++n) {
    const size_t newline = start == 0 ? absl::string_view::npos : text.rfind('\n', start - 1);
    if (newline == absl::string_view::npos) return std::string(text);
    start = newline;
  }
  return std::string(text.substr(start + 1));
}

namespace {

// The text between `marker` and the next single quote; "" when `text` has
// no `marker`.
std::string QuotedAfter(absl::string_view text, absl::string_view marker) {
  const size_t at = text.find(marker);
  if (at == absl::string_view::npos) return "";
  const size_t start = at + marker.size();
  const size_t end = text.find('\'', start);
  if (end == absl::string_view::npos) return "";
  return std::string(text.substr(start, end - start));
}

std::string NpmHint(absl::string_view stderr_text, const std::string& installed_dir,
                    const std::string& package_dir) {
  std::string missing = QuotedAfter(stderr_text, "Cannot find module '");
  if (missing.empty()) missing = QuotedAfter(stderr_text, "Cannot find package '");
  if (absl::StartsWith(missing, "file://")) missing = missing.substr(7);
  if (missing.empty()) {
    return absl::StrCat(
        "a file the agent needs may be missing from the package: `npm pack "
        "--dry-run` in ",
        package_dir, " lists what it ships (package.json `files`)");
  }
  const std::string prefix = installed_dir + "/";
  if (absl::StartsWith(missing, prefix)) {
    const std::string file = missing.substr(prefix.size());
    if (Exists(absl::StrCat(package_dir, "/", file))) {
      return absl::StrCat(file, " is in ", package_dir,
                          " but not in the installed package: add it to `files` in ", package_dir,
                          "/package.json (`npm pack --dry-run` lists what is packed)");
    }
    return absl::StrCat(file, " is not in the installed package, nor in ", package_dir,
                        ": if a build step makes it, run that step in a `prepack` script, and list "
                        "the file in `files`");
  }
  if (absl::StartsWith(missing, "/") || absl::StartsWith(missing, ".")) {
    return absl::StrCat("the agent looked for ", missing,
                        ", outside the installed package: a path that exists only in the "
                        "package's repository?");
  }
  // A bare specifier: its package is the first segment, two when scoped.
  std::vector<absl::string_view> parts = absl::StrSplit(missing, '/');
  std::string package(parts[0]);
  if (absl::StartsWith(package, "@") && parts.size() > 1) absl::StrAppend(&package, "/", parts[1]);
  return absl::StrCat("the package `", package,
                      "` is not installed with the agent: list it in `dependencies` of ",
                      package_dir, "/package.json (not devDependencies)");
}

std::string PythonHint(absl::string_view stderr_text, const std::string& package_dir) {
  const std::string missing = QuotedAfter(stderr_text, "No module named '");
  if (missing.empty()) {
    return absl::StrCat(
        "a module or data file the agent needs may be missing from the wheel: "
        "`python3 -m zipfile -l` on the wheel (kept with --keep) lists what it "
        "ships; pyproject.toml decides (packages, py-modules, package-data)");
  }
  const std::string path = absl::StrReplaceAll(missing, {{".", "/"}});
  for (const std::string& base : {package_dir, package_dir + "/src"}) {
    const std::string here = absl::StrCat(base, "/", path);
    if (IsDirectory(here) || IsFile(here + ".py")) {
      return absl::StrCat("module `", missing, "` is in ", base,
                          " but not in the wheel: list it in pyproject.toml ([tool.setuptools] "
                          "packages or py-modules)");
    }
  }
  return absl::StrCat("module `", missing,
                      "` is not installed: declare its distribution in `dependencies` of ",
                      package_dir,
                      "/pyproject.toml and install it in the system site-packages (the sandbox "
                      "installs with --no-index)");
}

}  // namespace

std::string MissingFileHint(absl::string_view stderr_text, PackageKind kind,
                            const std::string& installed_dir, const std::string& package_dir) {
  return kind == PackageKind::kNpm ? NpmHint(stderr_text, installed_dir, package_dir)
                                   : PythonHint(stderr_text, package_dir);
}

std::vector<std::string> SandboxEnvironment(const std::vector<std::string>& env,
                                            const std::vector<std::string>& roots,
                                            const std::string& bin_dir, const std::string& cwd) {
  auto inside = [&](absl::string_view value) {
    return std::any_of(roots.begin(), roots.end(),
                       [&](const std::string& root) { return NamesPathIn(value, root); });
  };
  std::vector<std::string> out;
  std::string path;
  for (const std::string& entry : env) {
    const size_t eq = entry.find('=');
    const std::string name = entry.substr(0, eq);
    const absl::string_view value =
        eq == std::string::npos ? absl::string_view() : absl::string_view(entry).substr(eq + 1);
    if (name == "NODE_PATH" || name == "PYTHONPATH" || name == "PYTHONHOME" ||
        name == "VIRTUAL_ENV" || name == "PWD") {
      continue;
    }
    if (name == "PATH") {
      std::vector<std::string> kept;
      for (absl::string_view dir : absl::StrSplit(value, ':')) {
        if (!inside(dir)) kept.emplace_back(dir);
      }
      path = absl::StrJoin(kept, ":");
      continue;
    }
    if (name != "HOME" && inside(value)) continue;
    out.push_back(entry);
  }
  out.push_back(absl::StrCat("PATH=", bin_dir, path.empty() ? "" : ":", path));
  out.push_back(absl::StrCat("PWD=", cwd));
  return out;
}

std::vector<std::string> RepositoryRoots(const std::string& dir) {
  std::error_code error;
  std::vector<std::string> roots;
  auto add = [&](const std::string& root) {
    if (root.empty() || root == "/") return;
    if (std::find(roots.begin(), roots.end(), root) == roots.end()) roots.push_back(root);
  };
  const fs::path absolute = fs::absolute(dir, error).lexically_normal();
  std::string given = absolute.string();
  while (given.size() > 1 && given.back() == '/') given.pop_back();
  add(given);
  const fs::path real = fs::canonical(dir, error);
  if (error) return roots;
  add(real.string());
  for (fs::path p = real; !p.empty() && p != p.root_path(); p = p.parent_path()) {
    if (Exists((p / ".git").string())) {
      add(p.string());
      break;
    }
  }
  return roots;
}

int VerifyInstall(const VerifyInstallFlags& flags) {
  if (flags.command.empty() || flags.command[0].empty()) {
    std::cerr << "understudy: give the agent's entry point after --, e.g. understudy "
                 "verify-install --session golden --spec golden.spec.yaml -- my-agent"
              << std::endl;
    return 2;
  }
  absl::StatusOr<std::vector<v1::Assertion>> assertions = LoadSpecs(flags.spec_files);
  if (!assertions.ok()) return absl::IsInvalidArgument(assertions.status()) ? 2 : 3;
  absl::StatusOr<PackageKind> kind = DetectPackageKind(flags.package_dir);
  if (!kind.ok()) return Exit(kind.status());
  std::error_code error;
  const std::string package_dir = fs::canonical(flags.package_dir, error).string();
  if (error) {
    return Exit(absl::UnavailableError(
        absl::StrCat("--package ", flags.package_dir, ": ", error.message())));
  }
  const std::string& session = flags.serve.server.default_session;
  if (absl::Status s = CheckSession(flags.serve.server.db_path, session); !s.ok()) return Exit(s);

  absl::StatusOr<std::unique_ptr<Sandbox>> sandbox = Sandbox::Create();
  if (!sandbox.ok()) return Exit(sandbox.status());
  if (flags.keep) {
    (*sandbox)->Keep();
    std::cerr << "understudy: sandbox (kept): " << (*sandbox)->path() << std::endl;
  }
  const std::string& entry = flags.command[0];
  absl::StatusOr<Installation> installed =
      *kind == PackageKind::kNpm ? InstallNpm(package_dir, **sandbox, entry)
                                 : InstallPython(package_dir, **sandbox, flags.python, entry);
  if (!installed.ok()) return Exit(installed.status());

  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) environment.emplace_back(*e);
  WrapOptions wrap;
  wrap.cwd = (*sandbox)->cwd();
  wrap.env =
      SandboxEnvironment(environment, RepositoryRoots(package_dir), installed->bin_dir, wrap.cwd);
  wrap.stderr_path = (*sandbox)->path() + "/agent.stderr";
  // The replay's copy of the recording, with its run: read by the checks.
  wrap.trace_dir = (*sandbox)->path();
  std::vector<std::string> argv = installed->argv;
  argv.insert(argv.end(), flags.command.begin() + 1, flags.command.end());
  std::cerr << "understudy: running " << ShellQuoted(flags.command) << " from "
            << installed->description << " under a replay of " << session << std::endl;
  absl::StatusOr<WrapResult> result = RunWrapped(flags.serve, argv, wrap);
  if (!result.ok()) return FailWrapped(result.status());
  const v1::Run& run = result->summary.run();
  if (result->exit_code != 0) {
    // The hint reads all of the end of stderr: the line naming a missing
    // module may sit above a long stack.
    const std::string text = ReadTail(wrap.stderr_path, 64 << 10);
    const std::string tail = LastLines(text, kTailLines);
    std::cerr << "understudy: the agent " << ShellQuoted(flags.command) << " from "
              << installed->description << " exited with status " << result->exit_code << " (run "
              << run.id() << "); no checks were run\n"
              << (tail.empty() ? "  its stderr was empty\n"
                               : absl::StrCat("  its stderr, last lines:\n", Indented(tail), "\n"))
              << "hint: " << MissingFileHint(text, *kind, installed->installed_dir, package_dir)
              << std::endl;
    return 1;
  }
  DbFlags db;
  db.db = result->db;
  const int checked = CheckRun(db, /*addr=*/"", run.id(), *assertions);
  if (checked == 0 && run.state() == v1::RUN_STATE_FAILED) {
    std::cerr << "understudy: run " << run.id() << " failed: the scenario's script was not followed"
              << std::endl;
    return 1;
  }
  return checked;
}

}  // namespace cli
}  // namespace understudy
