// The programs and paths that check and run generated tests: the Python
// interpreter, node, the C++ compiler with the flags that build against
// clients/cpp's helpers, and where the client packages are. The CMake build
// captures them at configure time (testgen_toolchain_config.h, generated);
// the Bazel build has no such paths and leaves the C++ ones empty, so
// GoogleTest files cannot be checked or run there (a clear error says so).
#ifndef UNDERSTUDY_TESTGEN_TOOLCHAIN_H_
#define UNDERSTUDY_TESTGEN_TOOLCHAIN_H_

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace understudy {
namespace testgen {

struct Toolchain {
  // Python with grpcio, protobuf and pytest (Debian's: /usr/bin/python3).
  std::string python = "/usr/bin/python3";
  // Node 20 or later.
  std::string node = "node";
  // The C++ compiler; "" when this build cannot compile GoogleTest files.
  std::string cxx;
  // Compiler flags for a generated GoogleTest file (-std, -I of the helper
  // headers and the generated protos).
  std::vector<std::string> gtest_cflags;
  // What a generated GoogleTest file links with (the helper library, the
  // protos, gRPC, protobuf, Abseil, gmock, gtest_main).
  std::vector<std::string> gtest_libs;
  // The folder holding the understudy_testing package (clients/python).
  std::string python_path;
  // The generated Python stubs (build/python): $UNDERSTUDY_PY_STUBS.
  std::string python_stubs;
  // clients/node/index.js and clients/node/json_reporter.js.
  std::string node_client;
  std::string node_reporter;
  // Each syntax check (and each compile) may take this long.
  absl::Duration check_timeout = absl::Seconds(120);

  // true when GoogleTest files can be compiled.
  bool has_gtest() const { return !cxx.empty(); }
};

// The build's toolchain, with overrides from the environment:
// UNDERSTUDY_TESTGEN_PYTHON, UNDERSTUDY_TESTGEN_NODE, UNDERSTUDY_TESTGEN_CXX,
// UNDERSTUDY_PY_STUBS, UNDERSTUDY_NODE_CLIENT. Thread-safe.
Toolchain DefaultToolchain();

// The message of a GoogleTest check or run in a build without a C++
// toolchain for generated tests.
inline constexpr char kNoGtestToolchain[] =
    "GoogleTest files cannot be checked or compiled by this build of understudy: it was built "
    "without the C++ toolchain paths (the CMake build captures them; this one has none). "
    "Compile the file yourself against clients/cpp (understudy::testing) and gtest_main";

}  // namespace testgen
}  // namespace understudy

#endif  // UNDERSTUDY_TESTGEN_TOOLCHAIN_H_
