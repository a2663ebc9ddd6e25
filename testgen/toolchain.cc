#include "testgen/toolchain.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "testgen_toolchain_config.h"

namespace understudy {
namespace testgen {
namespace {

std::vector<std::string> Lines(const char* text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

void Override(const char* name, std::string* value) {
  const char* set = std::getenv(name);
  if (set != nullptr && *set != '\0') *value = set;
}

}  // namespace

Toolchain DefaultToolchain() {
  Toolchain t;
  t.python = UNDERSTUDY_TESTGEN_PYTHON;
  t.node = UNDERSTUDY_TESTGEN_NODE;
  t.cxx = UNDERSTUDY_TESTGEN_CXX;
  t.gtest_cflags = Lines(UNDERSTUDY_TESTGEN_GTEST_CFLAGS);
  t.gtest_libs = Lines(UNDERSTUDY_TESTGEN_GTEST_LIBS);
  t.python_path = UNDERSTUDY_TESTGEN_PYTHON_PATH;
  t.python_stubs = UNDERSTUDY_TESTGEN_PYTHON_STUBS;
  t.node_client = UNDERSTUDY_TESTGEN_NODE_CLIENT;
  t.node_reporter = UNDERSTUDY_TESTGEN_NODE_REPORTER;
  Override("UNDERSTUDY_TESTGEN_PYTHON", &t.python);
  Override("UNDERSTUDY_TESTGEN_NODE", &t.node);
  if (!t.gtest_cflags.empty()) Override("UNDERSTUDY_TESTGEN_CXX", &t.cxx);
  Override("UNDERSTUDY_PY_STUBS", &t.python_stubs);
  Override("UNDERSTUDY_NODE_CLIENT", &t.node_client);
  if (t.python.empty()) t.python = "/usr/bin/python3";
  if (t.node.empty()) t.node = "node";
  return t;
}

}  // namespace testgen
}  // namespace understudy
