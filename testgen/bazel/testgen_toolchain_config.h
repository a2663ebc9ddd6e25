// The Bazel build's testgen toolchain: no captured paths (see
// testgen/toolchain.h). The CMake build generates its own copy of this
// header with the configured compiler, flags and client paths.
#ifndef UNDERSTUDY_TESTGEN_BAZEL_TESTGEN_TOOLCHAIN_CONFIG_H_
#define UNDERSTUDY_TESTGEN_BAZEL_TESTGEN_TOOLCHAIN_CONFIG_H_

#define UNDERSTUDY_TESTGEN_PYTHON "/usr/bin/python3"
#define UNDERSTUDY_TESTGEN_NODE "node"
#define UNDERSTUDY_TESTGEN_CXX ""
#define UNDERSTUDY_TESTGEN_GTEST_CFLAGS ""
#define UNDERSTUDY_TESTGEN_GTEST_LIBS ""
#define UNDERSTUDY_TESTGEN_PYTHON_PATH ""
#define UNDERSTUDY_TESTGEN_PYTHON_STUBS ""
#define UNDERSTUDY_TESTGEN_NODE_CLIENT ""
#define UNDERSTUDY_TESTGEN_NODE_REPORTER ""

#endif  // UNDERSTUDY_TESTGEN_BAZEL_TESTGEN_TOOLCHAIN_CONFIG_H_
