#include "cli/ancestor_env.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "gtest/gtest.h"

namespace understudy {
namespace cli {
namespace {

// A child of `parent`, once one runs (bounded wait); -1 when none came.
pid_t ChildOf(pid_t parent) {
  for (int attempt = 0; attempt < 500; ++attempt) {
    DIR* proc = opendir("/proc");
    if (proc == nullptr) return -1;
    pid_t found = -1;
    while (dirent* entry = readdir(proc)) {
      int pid = 0;
      if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
      std::optional<pid_t> p = ParentOf(pid);
      if (p.has_value() && *p == parent) found = pid;
    }
    closedir(proc);
    if (found > 0) return found;
    usleep(10000);
  }
  return -1;
}

TEST(AncestorEnv, ReadsTheVariableFromTheParentWhenTheChildWasGivenNone) {
  // A shell started with the variable, running `sleep` with an emptied
  // environment, as an MCP client starts a stdio server.
  const pid_t shell = fork();
  ASSERT_GE(shell, 0);
  if (shell == 0) {
    char* const argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"),
                          const_cast<char*>("env -i /bin/sleep 10; true"), nullptr};
    char* const envp[] = {const_cast<char*>("PATH=/usr/bin:/bin"),
                          const_cast<char*>("UNDERSTUDY_PROBE=http://127.0.0.1:9"), nullptr};
    execve("/bin/sh", argv, envp);
    _exit(127);
  }
  const pid_t env_or_sleep = ChildOf(shell);
  ASSERT_GT(env_or_sleep, 0) << "the shell started no child";
  EXPECT_EQ(AncestorEnv("UNDERSTUDY_PROBE", env_or_sleep), "http://127.0.0.1:9");
  // Never the process's own, and nothing above the shell has it.
  EXPECT_EQ(AncestorEnv("UNDERSTUDY_PROBE", shell), std::nullopt);
  EXPECT_EQ(AncestorEnv("UNDERSTUDY_PROBE", env_or_sleep, /*max_depth=*/0), std::nullopt);
  kill(env_or_sleep, SIGKILL);
  kill(shell, SIGKILL);
  waitpid(shell, nullptr, 0);
}

TEST(AncestorEnv, ParentOfThisProcessIsKnown) {
  std::optional<pid_t> parent = ParentOf(getpid());
  ASSERT_TRUE(parent.has_value());
  EXPECT_EQ(*parent, getppid());
  EXPECT_EQ(ParentOf(-1), std::nullopt);
}

}  // namespace
}  // namespace cli
}  // namespace understudy
