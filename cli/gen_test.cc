#include "cli/gen_test.h"

#include <filesystem>
#include <iostream>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "trace/spec.h"

namespace understudy {
namespace cli {
namespace {

int Fail(const std::string& message, int code) {
  std::cerr << "understudy: " << message << std::endl;
  return code;
}

}  // namespace

int GenTest(const std::string& spec_file, const testgen::TestOptions& options,
            const std::string& output) {
  if (options.command.empty()) {
    return Fail("give the command under test after --, e.g. understudy gen-test spec.yaml "
                "--framework pytest -- node agent.js",
                2);
  }
  absl::StatusOr<std::string> text = ReadRegularFile(spec_file, trace::kMaxSpecBytes);
  if (!text.ok()) return Fail(std::string(text.status().message()), 3);

  const bool to_stdout = output.empty() || output == "-";
  testgen::TestOptions generate = options;
  generate.spec_text = *std::move(text);
  if (generate.spec_text.empty()) return Fail(absl::StrCat(spec_file, ": the spec is empty"), 1);
  generate.spec_path = spec_file;
  if (!to_stdout) {
    std::error_code error;
    const std::filesystem::path folder =
        std::filesystem::absolute(output, error).parent_path();
    generate.spec_path = testgen::PathFromFolder(spec_file, folder);
    generate.db = testgen::PathFromFolder(options.db, folder);
  }
  absl::StatusOr<std::string> source = testgen::GenerateTest(generate);
  if (!source.ok()) {
    // The spec's problems (one line each) or a missing session.
    return Fail(std::string(source.status().message()), 1);
  }
  if (to_stdout) {
    std::cout << *source << std::flush;
    return 0;
  }
  if (absl::Status written = WriteFileAtomically(output, *source); !written.ok()) {
    return Fail(std::string(written.message()), 3);
  }
  std::cerr << "wrote " << output << ": " << testgen::FrameworkName(options.framework)
            << " test of "
            << (options.session.empty() ? std::string("the spec's session")
                                        : absl::StrCat("session ", options.session))
            << std::endl;
  return 0;
}

}  // namespace cli
}  // namespace understudy
