#include "sim/hooks.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/files.h"
#include "base/status_matchers.h"
#include "base/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace sim {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> Commands(const Hooks& hooks, HookEvent event, absl::string_view tool) {
  std::vector<std::string> out;
  for (const HookCommand& c : hooks.For(event, tool)) out.push_back(c.command);
  return out;
}

// A fresh directory under the test's temporary directory.
std::string TempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  fs::path dir = fs::path(base != nullptr ? base : fs::temp_directory_path().string()) /
                 absl::StrCat("hooks_test_", ::getpid(), "_", name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

HookResult RunAtRoot(HookEvent event, const std::string& command,
                     absl::Duration timeout = absl::Seconds(10)) {
  return RunHook(event, HookCommand{command, timeout}, HookPayload(event, "s1", "", "/", {}),
                 EnvironmentWith({}), "/");
}

constexpr char kSettings[] = R"json({
  "permissions": {"allow": ["Bash(ls:*)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash|Edit", "hooks": [{"type": "command", "command": "pre-1", "timeout": 5}]},
      {"matcher": "*", "hooks": [{"type": "command", "command": "pre-all"}]},
      {"hooks": [{"type": "command", "command": "pre-none"}]},
      {"matcher": "", "hooks": [{"type": "command", "command": "pre-empty"}]}
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "stop-1", "timeout": 0.5}]}],
    "Notification": [{"hooks": [{"type": "command", "command": "ignored"}]}]
  }
})json";

TEST(HooksTest, ReadsSettingsAndMatchesToolsByFullRegex) {
  Hooks hooks;
  EXPECT_TRUE(hooks.empty());
  ASSERT_THAT(hooks.AddText(kSettings, "settings.json"), IsOk());
  EXPECT_FALSE(hooks.empty());
  EXPECT_THAT(Commands(hooks, HookEvent::kPreToolUse, "Bash"),
              ElementsAre("pre-1", "pre-all", "pre-none", "pre-empty"));
  EXPECT_THAT(Commands(hooks, HookEvent::kPreToolUse, "BashOutput"),
              ElementsAre("pre-all", "pre-none", "pre-empty"));
  EXPECT_THAT(Commands(hooks, HookEvent::kPreToolUse, "Edit"),
              ElementsAre("pre-1", "pre-all", "pre-none", "pre-empty"));
  EXPECT_THAT(Commands(hooks, HookEvent::kPostToolUse, "Bash"), IsEmpty());
  // The matcher is ignored outside tool events.
  EXPECT_THAT(Commands(hooks, HookEvent::kStop, ""), ElementsAre("stop-1"));
  EXPECT_EQ(hooks.For(HookEvent::kStop, "")[0].timeout, absl::Milliseconds(500));
  EXPECT_EQ(hooks.For(HookEvent::kPreToolUse, "Bash")[0].timeout, absl::Seconds(5));
  EXPECT_EQ(hooks.For(HookEvent::kPreToolUse, "Bash")[1].timeout, absl::Seconds(60));
}

TEST(HooksTest, FilesAppendInOrderAndMissingOptionalOnesAreSkipped) {
  const std::string dir = TempDir("files");
  ASSERT_THAT(WriteFileAtomically(dir + "/a.json",
                                  R"({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a"}]}]}})"),
              IsOk());
  ASSERT_THAT(WriteFileAtomically(dir + "/b.json",
                                  R"({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "b"}]}]}})"),
              IsOk());
  Hooks hooks;
  ASSERT_THAT(hooks.AddFile(dir + "/a.json", false), IsOk());
  ASSERT_THAT(hooks.AddFile(dir + "/missing.json", true), IsOk());
  ASSERT_THAT(hooks.AddFile(dir + "/b.json", true), IsOk());
  EXPECT_THAT(Commands(hooks, HookEvent::kStop, ""), ElementsAre("a", "b"));
  EXPECT_THAT(hooks.AddFile(dir + "/missing.json", false),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.json")));
  ASSERT_THAT(WriteFileAtomically(dir + "/bad.json", "{\"hooks\": 1}"), IsOk());
  EXPECT_THAT(hooks.AddFile(dir + "/bad.json", true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat(dir, "/bad.json: hooks: expected an object of events, got 1")));
}

TEST(HooksTest, MalformedSettingsNameFileAndPath) {
  Hooks hooks;
  EXPECT_THAT(
      hooks.AddText(
          R"({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}, {"type": "command", "command": "y", "timeout": "x"}]}]}})",
          "settings.json"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "settings.json: hooks.PreToolUse[0].hooks[1].timeout: expected a positive number "
               "of seconds, got \"x\""));
  EXPECT_THAT(hooks.AddText(R"({"hooks": {"Stopp": []}})", "s.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "s.json: hooks.Stopp: unknown hook event (did you mean \"Stop\"?)"));
  EXPECT_THAT(hooks.AddText(R"({"hooks": {"PreToolUse": [{"matcher": "(", "hooks": []}]}})", "s.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("s.json: hooks.PreToolUse[0].matcher: invalid regex")));
  EXPECT_THAT(hooks.AddText(R"({"hooks": {"Stop": [{"hooks": [{"type": "prompt", "command": "x"}]}]}})", "s.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("s.json: hooks.Stop[0].hooks[0].type: expected \"command\"")));
  EXPECT_THAT(hooks.AddText(R"({"hooks": {"Stop": [{"hooks": [{"type": "command", "comand": "x"}]}]}})", "s.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "s.json: hooks.Stop[0].hooks[0].comand: unknown field (did you mean "
                       "\"command\"?)\ns.json: hooks.Stop[0].hooks[0]: missing required field "
                       "\"command\""));
  EXPECT_THAT(hooks.AddText("{\"hooks\": ", "s.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("s.json: invalid JSON")));
  EXPECT_THAT(hooks.AddText(std::string(100000, '[') + std::string(100000, ']'), "s.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nested deeper")));
  EXPECT_THAT(hooks.AddText("[]", "s.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected a JSON object")));
  // Nothing of a refused file is kept.
  EXPECT_TRUE(hooks.empty());
  EXPECT_THAT(hooks.AddText("{}", "s.json"), IsOk());
  EXPECT_TRUE(hooks.empty());
}

TEST(HooksTest, PayloadHasTheCommonFieldsAndTheEventsOwn) {
  nlohmann::json p = HookPayload(HookEvent::kPreToolUse, "sid", "/t.jsonl", "/work",
                                 {{"tool_name", "Bash"}, {"tool_input", {{"command", "ls"}}}});
  EXPECT_EQ(p, nlohmann::json({{"session_id", "sid"},
                               {"transcript_path", "/t.jsonl"},
                               {"cwd", "/work"},
                               {"hook_event_name", "PreToolUse"},
                               {"tool_name", "Bash"},
                               {"tool_input", {{"command", "ls"}}}}));
  EXPECT_EQ(HookEventName(HookEvent::kUserPromptSubmit), "UserPromptSubmit");
  EXPECT_EQ(HookEventName(HookEvent::kSessionStart), "SessionStart");
}

TEST(RunHookTest, ExitZeroIsOk) {
  HookResult r = RunAtRoot(HookEvent::kStop, "echo fine");
  EXPECT_EQ(r.outcome, "ok");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.blocked);
  EXPECT_EQ(r.stdout_text, "fine\n");
  EXPECT_EQ(r.command, "echo fine");
  EXPECT_GT(r.duration, absl::ZeroDuration());
}

TEST(RunHookTest, ExitTwoBlocksWithStderrAsTheReason) {
  HookResult r = RunAtRoot(HookEvent::kPreToolUse, "echo no rm >&2; exit 2");
  EXPECT_EQ(r.outcome, "blocked");
  EXPECT_TRUE(r.blocked);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.reason, "no rm");
  EXPECT_EQ(r.stderr_text, "no rm\n");
  // PostToolUse cannot block: the tool already ran.
  r = RunAtRoot(HookEvent::kPostToolUse, "echo late >&2; exit 2");
  EXPECT_FALSE(r.blocked);
  EXPECT_EQ(r.outcome, "error");
  EXPECT_EQ(r.reason, "late");
}

TEST(RunHookTest, OtherExitIsANonBlockingError) {
  HookResult r = RunAtRoot(HookEvent::kPreToolUse, "echo oops >&2; exit 1");
  EXPECT_EQ(r.outcome, "error");
  EXPECT_FALSE(r.blocked);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.reason, "oops");
}

TEST(RunHookTest, JsonDecisionBlock) {
  HookResult r = RunAtRoot(HookEvent::kStop, R"(echo '{"decision": "block", "reason": "tests fail"}')");
  EXPECT_EQ(r.outcome, "blocked");
  EXPECT_TRUE(r.blocked);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.reason, "tests fail");
  r = RunAtRoot(HookEvent::kStop, R"(echo '{"decision": "approve"}')");
  EXPECT_EQ(r.outcome, "ok");
  EXPECT_FALSE(r.blocked);
}

TEST(RunHookTest, PermissionDecisionDenyBlocksATool) {
  const std::string deny =
      R"(echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "not here"}}')";
  HookResult r = RunAtRoot(HookEvent::kPreToolUse, deny);
  EXPECT_EQ(r.outcome, "blocked");
  EXPECT_TRUE(r.blocked);
  EXPECT_EQ(r.reason, "not here");
  r = RunAtRoot(HookEvent::kPreToolUse,
          R"(echo '{"hookSpecificOutput": {"permissionDecision": "allow"}}')");
  EXPECT_FALSE(r.blocked);
  EXPECT_EQ(r.outcome, "ok");
}

TEST(RunHookTest, ContinueFalseStops) {
  HookResult r =
      RunAtRoot(HookEvent::kPostToolUse, R"(echo '{"continue": false, "stopReason": "enough"}')");
  EXPECT_EQ(r.outcome, "stopped");
  EXPECT_TRUE(r.stop);
  EXPECT_FALSE(r.blocked);
  EXPECT_EQ(r.reason, "enough");
}

TEST(RunHookTest, NotJsonStdoutIsPlainOutput) {
  HookResult r = RunAtRoot(HookEvent::kStop, "echo '{not json'");
  EXPECT_EQ(r.outcome, "ok");
  EXPECT_FALSE(r.blocked);
  EXPECT_FALSE(r.stop);
}

TEST(RunHookTest, HookPastItsTimeoutIsKilled) {
  const absl::Time start = absl::Now();
  HookResult r = RunAtRoot(HookEvent::kStop, "sleep 30 & sleep 30", absl::Milliseconds(300));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(r.outcome, "timeout");
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_FALSE(r.blocked);
  EXPECT_LT(took, absl::Milliseconds(300) + absl::Seconds(1));
}

TEST(RunHookTest, PayloadArrivesOnStdinIntact) {
  const std::string dir = TempDir("payload");
  nlohmann::json payload =
      HookPayload(HookEvent::kUserPromptSubmit, "s1", "", dir,
                  {{"prompt", "multi\nline ünïcödé $(rm -rf /) 'quoted' \"double\""}});
  HookResult r = RunHook(HookEvent::kUserPromptSubmit, HookCommand{"cat > payload.json"}, payload,
                         EnvironmentWith({}), dir);
  ASSERT_EQ(r.outcome, "ok") << r.reason;
  const std::string got = ReadAll(dir + "/payload.json");
  EXPECT_EQ(got, payload.dump() + "\n");
  EXPECT_EQ(nlohmann::json::parse(got), payload);
}

TEST(RunHookTest, EnvironmentAndProjectDirArePassed) {
  const std::string dir = TempDir("env");
  HookResult r = RunHook(HookEvent::kStop,
                         HookCommand{"printf '%s|%s|%s' \"$UNDERSTUDY_AGENT\" "
                                     "\"$CLAUDE_PROJECT_DIR\" \"$PWD\""},
                         HookPayload(HookEvent::kStop, "s", "", dir, {}),
                         EnvironmentWith({"UNDERSTUDY_AGENT=coder"}, {"CLAUDE_PROJECT_DIR"}), dir);
  EXPECT_EQ(r.stdout_text, absl::StrCat("coder|", dir, "|", dir));
  // A project dir the caller gives is kept.
  r = RunHook(HookEvent::kStop, HookCommand{"printf %s \"$CLAUDE_PROJECT_DIR\""},
              HookPayload(HookEvent::kStop, "s", "", dir, {}),
              EnvironmentWith({"CLAUDE_PROJECT_DIR=/elsewhere"}), dir);
  EXPECT_EQ(r.stdout_text, "/elsewhere");
}

TEST(RunHookTest, CommandNotFoundIsAnError) {
  HookResult r = RunAtRoot(HookEvent::kPreToolUse, "understudy-no-such-hook-xyz");
  EXPECT_EQ(r.outcome, "error");
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_FALSE(r.blocked);
  EXPECT_THAT(r.reason, HasSubstr("not found"));
}

TEST(RunHookTest, MissingDirectoryMeansNotStarted) {
  HookResult r = RunHook(HookEvent::kStop, HookCommand{"true"},
                         HookPayload(HookEvent::kStop, "s", "", "/", {}), EnvironmentWith({}),
                         "/no/such/dir/understudy");
  EXPECT_EQ(r.outcome, "not started");
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_FALSE(r.reason.empty());
}

TEST(RunHookTest, HookThatIgnoresStdinDoesNotHang) {
  nlohmann::json payload = HookPayload(HookEvent::kUserPromptSubmit, "s", "", "/",
                                       {{"prompt", std::string(1 << 20, 'x')}});
  HookResult r = RunHook(HookEvent::kUserPromptSubmit, HookCommand{"exit 0", absl::Seconds(10)},
                         payload, EnvironmentWith({}), "/");
  EXPECT_EQ(r.outcome, "ok");
  EXPECT_LT(r.duration, absl::Seconds(5));
}

}  // namespace
}  // namespace sim
}  // namespace understudy
