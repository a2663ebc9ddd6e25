// Keeping the store small, end to end: `understudy runs ls|rm|prune` on the
// real binary, the server's retention (`serve --keep-runs`,
// `--keep-trace-for`) and per-run trace levels (`serve --trace-level`,
// StartRunRequest.trace_level).
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/e2e_test_base.h"

namespace understudy {
namespace e2e {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::SizeIs;
using ::testing::StartsWith;

// A scripted model: every request gets "hello"; no recording needed.
constexpr char kScripted[] = R"(schema: understudy.scenario/v1
name: scripted
default:
  respond: {content: "hello"}
)";
// A playbook the run leaves unfinished: it ends FAILED.
constexpr char kUnfinished[] = R"(schema: understudy.scenario/v1
name: unfinished
playbook:
  turns:
    - actions:
        - say: {text: "one"}
        - say: {text: "two"}
)";

// `runs ls --json` (or `runs prune --json`) output: one object per run.
std::vector<nlohmann::json> JsonLines(const std::string& text) {
  std::vector<nlohmann::json> runs;
  for (const std::string& line : Lines(text)) runs.push_back(nlohmann::json::parse(line));
  return runs;
}

std::vector<std::string> Ids(const std::vector<nlohmann::json>& runs) {
  std::vector<std::string> ids;
  for (const nlohmann::json& run : runs) ids.push_back(run["id"]);
  return ids;
}

int64_t FileBytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

// `n` letters that do not compress: trace bytes that take real space.
std::string Noise(size_t n, uint32_t seed) {
  std::string text(n, ' ');
  for (char& c : text) {
    seed = seed * 1664525u + 1013904223u;
    c = static_cast<char>('a' + (seed >> 24) % 26);
  }
  return text;
}

absl::StatusOr<v1::Run> StartScripted(Clients& c, const std::string& id,
                                      v1::TraceLevel level = v1::TRACE_LEVEL_UNSPECIFIED,
                                      const std::string& scenario = kScripted) {
  v1::StartRunRequest request;
  request.set_mode(v1::RUN_MODE_REPLAY);
  request.set_run_id(id);
  request.set_scenario_text(scenario);
  request.set_trace_level(level);
  return StartRun(c, request);
}

absl::StatusOr<v1::TraceEvent> Emit(Clients& c, const std::string& run, const std::string& kind,
                                    const std::map<std::string, std::string>& attributes) {
  v1::EmitRequest request;
  request.set_run(run);
  request.set_kind(kind);
  for (const auto& [name, value] : attributes) (*request.mutable_attributes())[name] = value;
  v1::TraceEvent event;
  auto context = CallContext();
  grpc::Status s = c.traces->Emit(context.get(), request, &event);
  if (!s.ok()) return FromGrpc(s);
  return event;
}

std::vector<std::string> Kinds(const std::vector<v1::TraceEvent>& events) {
  std::vector<std::string> kinds;
  for (const v1::TraceEvent& e : events) kinds.push_back(e.kind());
  return kinds;
}

class RunsTest : public E2eTest {
 protected:
  // Records fakes::AgentLoop as session "golden"; returns the recording
  // run's id. Check HasFatalFailure() after.
  std::string RecordGoldenRun() {
    std::vector<StepResult> steps;
    std::string id;
    RecordGolden("golden", &steps, &id);
    return id;
  }

  // A scripted run `id` that answers one call and ends.
  void OneCall(Clients& c, const std::string& id,
               v1::TraceLevel level = v1::TRACE_LEVEL_UNSPECIFIED,
               const std::string& scenario = kScripted) {
    ASSERT_OK_AND_ASSIGN(v1::Run run, StartScripted(c, id, level, scenario));
    ASSERT_OK(Complete(c, id, "executor", UserRequest("hi")).status());
    ASSERT_OK(EndRun(c, id).status());
  }

  // `runs ls --json` of the test's database; fails the test unless it exits 0.
  std::vector<nlohmann::json> ListRuns(const std::vector<std::string>& more = {}) {
    return ListRunsIn(db_path(), more);
  }
  std::vector<nlohmann::json> ListRunsIn(const std::string& db,
                                         const std::vector<std::string>& more = {}) {
    std::vector<std::string> args = {"runs", "ls", "--json", "--db", db};
    args.insert(args.end(), more.begin(), more.end());
    absl::StatusOr<ProcessResult> ls = Cli(args);
    EXPECT_TRUE(ls.ok()) << ls.status();
    if (!ls.ok()) return {};
    EXPECT_EQ(ls->exit_code, 0) << ls->err;
    return JsonLines(ls->out);
  }
};

TEST_F(RunsTest, LsListsEveryRunInStartOrderWithItsCountsAndEvents) {
  const std::string recorded = RecordGoldenRun();
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  OneCall(c, "r1");
  OneCall(c, "r2", v1::TRACE_LEVEL_SUMMARY);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_OK_AND_ASSIGN(v1::Run active, StartScripted(c, "r3"));

  // While the server runs (r3 is active).
  ASSERT_OK_AND_ASSIGN(ProcessResult ls, Cli({"runs", "ls", "--db", db_path()}));
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  std::vector<std::string> lines = Lines(ls.out);
  ASSERT_THAT(lines, SizeIs(5)) << ls.out;
  EXPECT_THAT(lines[0], MatchesRegex("ID +SESSION +MODE +STATE +TRACE +STARTED +DURATION +SERVED "
                                     "+RECORDED +MISSES +EVENTS"));
  const std::string started = "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z";
  EXPECT_THAT(lines[1], MatchesRegex(absl::StrCat(recorded, " +golden@1 +record +ended +full +",
                                                  started, " +[0-9][0-9a-z.]* +6 +6 +0 +[0-9]+")));
  EXPECT_THAT(lines[2], MatchesRegex(absl::StrCat("r1 +- +replay +ended +full +", started,
                                                  " +[0-9][0-9a-z.]* +1 +0 +0 +[0-9]+")));
  // A summary-level run keeps its start and end events only.
  EXPECT_THAT(lines[3], MatchesRegex(absl::StrCat("r2 +- +replay +ended +summary +", started,
                                                  " +[0-9][0-9a-z.]* +1 +0 +0 +2")));
  EXPECT_THAT(lines[4], MatchesRegex(absl::StrCat("r3 +- +replay +active +full +", started,
                                                  " +- +0 +0 +0 +[0-9]+")));

  std::vector<nlohmann::json> runs = ListRuns();
  EXPECT_THAT(Ids(runs), ElementsAre(recorded, "r1", "r2", "r3"));
  ASSERT_THAT(runs, SizeIs(4));
  EXPECT_EQ(runs[2]["trace_level"], "TRACE_LEVEL_SUMMARY");
  EXPECT_EQ(runs[2]["events"], "2");
  EXPECT_EQ(runs[2]["served"], "1");
  EXPECT_EQ(runs[2]["state"], "RUN_STATE_ENDED");
  EXPECT_EQ(runs[3]["state"], "RUN_STATE_ACTIVE");
  EXPECT_EQ(runs[0]["session"], "golden");

  // By session: every version, or one.
  EXPECT_THAT(Ids(ListRuns({"--session", "golden"})), ElementsAre(recorded));
  EXPECT_THAT(Ids(ListRuns({"--session", "golden@1"})), ElementsAre(recorded));
  ASSERT_OK_AND_ASSIGN(ProcessResult none,
                       Cli({"runs", "ls", "--session", "golden@2", "--db", db_path()}));
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_EQ(none.out, "");
  EXPECT_THAT(none.err, HasSubstr("no runs of golden@2 in"));
  ASSERT_OK_AND_ASSIGN(ProcessResult bad,
                       Cli({"runs", "ls", "--session", "golden@x", "--db", db_path()}));
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_THAT(bad.err, StartsWith("understudy: "));
}

TEST_F(RunsTest, RmDeletesKnownRunsNamesUnknownOnesAndKeepsActiveOnesWithoutForce) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  {
    Clients c(server->NewChannel());
    OneCall(c, "r1");
    OneCall(c, "r2");
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_OK(StartScripted(c, "r3").status());
    c.Disconnect();
  }
  // A server that dies leaves its active run active in the store.
  ASSERT_OK(server->Kill9());
  EXPECT_THAT(Ids(ListRuns()), ElementsAre("r1", "r2", "r3"));

  ASSERT_OK_AND_ASSIGN(ProcessResult rm, Cli({"runs", "rm", "r1", "nope", "--db", db_path()}));
  EXPECT_EQ(rm.exit_code, 1);
  EXPECT_THAT(rm.err, AllOf(HasSubstr("understudy: unknown run \"nope\" in " + db_path()),
                            MatchesRegex("(.|\n)*deleted 1 run \\([0-9]+ trace events?\\); the "
                                         "file shrank by [0-9]+ bytes?\n")));
  EXPECT_THAT(Ids(ListRuns()), ElementsAre("r2", "r3"));
  ASSERT_OK_AND_ASSIGN(ProcessResult trace, Cli({"trace", "r1", "--db", db_path()}));
  EXPECT_EQ(trace.exit_code, 1) << trace.err;

  ASSERT_OK_AND_ASSIGN(ProcessResult refused, Cli({"runs", "rm", "r3", "--db", db_path()}));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, AllOf(HasSubstr("run \"r3\" is active"), HasSubstr("server died"),
                                 HasSubstr("--force"), HasSubstr("deleted 0 runs")));
  EXPECT_THAT(Ids(ListRuns()), ElementsAre("r2", "r3"));

  ASSERT_OK_AND_ASSIGN(ProcessResult forced,
                       Cli({"runs", "rm", "r3", "r2", "r2", "--force", "--db", db_path()}));
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_THAT(forced.err, HasSubstr("deleted 2 runs"));
  EXPECT_THAT(ListRuns(), IsEmpty());
}

TEST_F(RunsTest, PruneSelectsByCountAgeAndStateAndDryRunChangesNothing) {
  const std::string recorded = RecordGoldenRun();
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  for (const char* id : {"g1", "g2"}) {
    ASSERT_OK(StartRun(c, "golden", v1::RUN_MODE_REPLAY, std::nullopt, id).status());
    ASSERT_OK(RunAgentLoop(c, id).status());
    ASSERT_OK(EndRun(c, id).status());
  }
  OneCall(c, "s1");
  OneCall(c, "s2", v1::TRACE_LEVEL_UNSPECIFIED, kUnfinished);
  OneCall(c, "s3");
  ASSERT_FALSE(HasFatalFailure());
  c.Disconnect();
  ASSERT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
  const std::vector<nlohmann::json> all = ListRuns();
  ASSERT_THAT(Ids(all), ElementsAre(recorded, "g1", "g2", "s1", "s2", "s3"));
  EXPECT_EQ(all[4]["state"], "RUN_STATE_FAILED");

  // The newest of each session (golden, and the runs with none) stay.
  ASSERT_OK_AND_ASSIGN(ProcessResult dry,
                       Cli({"runs", "prune", "--keep", "1", "--dry-run", "--db", db_path()}));
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  std::vector<std::string> lines = Lines(dry.out);
  ASSERT_THAT(lines, SizeIs(5)) << dry.out;
  EXPECT_THAT(lines[0], StartsWith("ID "));
  EXPECT_THAT(lines[1], StartsWith(recorded + " "));
  EXPECT_THAT(lines[2], StartsWith("g1 "));
  EXPECT_THAT(lines[3], StartsWith("s1 "));
  EXPECT_THAT(lines[4], StartsWith("s2 "));
  EXPECT_THAT(dry.err, MatchesRegex("would remove 4 runs \\([0-9]+ trace events\\); dry run: "
                                    "nothing removed\n"));
  EXPECT_THAT(ListRuns(), SizeIs(6));

  // By state: only the failed one.
  ASSERT_OK_AND_ASSIGN(ProcessResult failed, Cli({"runs", "prune", "--state", "failed", "--json",
                                                  "--db", db_path()}));
  ASSERT_EQ(failed.exit_code, 0) << failed.err;
  EXPECT_THAT(Ids(JsonLines(failed.out)), ElementsAre("s2"));
  EXPECT_THAT(failed.err, HasSubstr("removed 1 run ("));
  EXPECT_THAT(Ids(ListRuns()), ElementsAre(recorded, "g1", "g2", "s1", "s3"));

  // By age: none is a day old; all are older than nothing.
  ASSERT_OK_AND_ASSIGN(ProcessResult young,
                       Cli({"runs", "prune", "--older-than", "1d", "--db", db_path()}));
  ASSERT_EQ(young.exit_code, 0) << young.err;
  EXPECT_EQ(young.out, "");
  EXPECT_THAT(young.err, HasSubstr("removed 0 runs (0 trace events)"));
  EXPECT_THAT(ListRuns(), SizeIs(5));

  ASSERT_OK_AND_ASSIGN(ProcessResult keep,
                       Cli({"runs", "prune", "--keep", "1", "--db", db_path()}));
  ASSERT_EQ(keep.exit_code, 0) << keep.err;
  EXPECT_THAT(keep.err, HasSubstr("removed 3 runs ("));
  EXPECT_THAT(Ids(ListRuns()), ElementsAre("g2", "s3"));

  // Criteria combine: older than nothing, but keep the newest of each.
  ASSERT_OK_AND_ASSIGN(ProcessResult both, Cli({"runs", "prune", "--older-than", "0s", "--keep",
                                                "1", "--db", db_path()}));
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_THAT(both.err, HasSubstr("removed 0 runs"));
  ASSERT_OK_AND_ASSIGN(ProcessResult old,
                       Cli({"runs", "prune", "--older-than", "0s", "--db", db_path()}));
  ASSERT_EQ(old.exit_code, 0) << old.err;
  EXPECT_THAT(old.err, HasSubstr("removed 2 runs ("));
  EXPECT_THAT(ListRuns(), IsEmpty());
  // The recording itself is not a run: it stays.
  ASSERT_OK_AND_ASSIGN(ProcessResult sessions,
                       Cli({"sessions", "ls", "--json", "--db", db_path()}));
  EXPECT_THAT(Lines(sessions.out), SizeIs(1));
}

TEST_F(RunsTest, EmitRefusesEveryKindTheEngineWritesAndKeepsServing) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK(StartScripted(c, "posing").status());
  for (const char* kind : {"run_started", "agent_execution", "tool_result", "exchange", "miss",
                           "tool_call", "routing_decision", "phase_transition", "workflow_end",
                           "ui_call", "run_ended"}) {
    absl::StatusOr<v1::TraceEvent> posed = Emit(c, "posing", kind, {});
    EXPECT_THAT(posed, StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr(absl::StrCat("\"", kind, "\" is understudy's own"))))
        << kind;
  }
  ASSERT_OK(Emit(c, "posing", "custom.tool_call", {}).status());
  ASSERT_OK_AND_ASSIGN(v1::RunSummary ended, EndRun(c, "posing"));
  EXPECT_EQ(ended.run().id(), "posing");
}

TEST_F(RunsTest, PruneGivesTheSpaceBackToTheFilesystem) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  for (const char* id : {"big", "small"}) {
    ASSERT_OK(StartScripted(c, id).status());
    for (uint32_t i = 0; i < (std::string(id) == "big" ? 60u : 1u); ++i) {
      ASSERT_OK(Emit(c, id, "custom.blob", {{"data", Noise(100 * 1000, i)}}).status());
    }
    ASSERT_OK(EndRun(c, id).status());
  }
  c.Disconnect();
  ASSERT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
  const int64_t before = FileBytes(db_path());
  ASSERT_GT(before, 6 * 1000 * 1000);

  ASSERT_OK_AND_ASSIGN(ProcessResult prune, Cli({"runs", "prune", "--keep", "1", "--db",
                                                 db_path()}));
  ASSERT_EQ(prune.exit_code, 0) << prune.err;
  // "big" started first: the newest run, "small", is kept.
  EXPECT_THAT(Ids(ListRuns()), ElementsAre("small"));
  EXPECT_THAT(prune.err, MatchesRegex("removed 1 run \\(6[0-9] trace events\\); the file shrank "
                                      "by [0-9]{7,} bytes\n"));
  EXPECT_LT(FileBytes(db_path()), before - 5 * 1000 * 1000);
  EXPECT_FALSE(std::filesystem::exists(db_path() + "-wal") &&
               FileBytes(db_path() + "-wal") > 5 * 1000 * 1000);

  // A full vacuum works too (and has nothing left to give).
  ASSERT_OK_AND_ASSIGN(ProcessResult vacuum, Cli({"runs", "prune", "--state", "failed",
                                                  "--vacuum", "--db", db_path()}));
  ASSERT_EQ(vacuum.exit_code, 0) << vacuum.err;
  EXPECT_THAT(vacuum.err, HasSubstr("removed 0 runs"));
  EXPECT_THAT(Ids(ListRuns()), ElementsAre("small"));
}

TEST_F(RunsTest, BadInputIsAUsageErrorAndAMissingOrForeignDatabaseIsNotCreated) {
  const std::string missing = Path("missing.db");
  const std::string random = Path("random.db");
  WriteFile(random, Noise(8192, 7));
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"runs", "prune", "--db", db_path()}, 2, "give at least one of --older-than, --keep"},
      {{"runs", "prune", "--older-than", "7", "--db", db_path()},
       2,
       "--older-than: expected a duration: a number with a unit (30m, 12h, 7d), got \"7\""},
      {{"runs", "prune", "--older-than", "soon", "--db", db_path()}, 2, "--older-than"},
      {{"runs", "prune", "--older-than", "-1d", "--db", db_path()}, 2, "must not be negative"},
      {{"runs", "prune", "--keep", "-1", "--db", db_path()}, 2, "--keep"},
      {{"runs", "prune", "--keep", "two", "--db", db_path()}, 2, "--keep"},
      {{"runs", "prune", "--state", "sleeping", "--db", db_path()}, 2, "--state"},
      {{"runs", "prune", "--state", "active", "--db", db_path()}, 2, "add --force"},
      {{"runs", "prune", "--keep", "1", "--frobnicate", "--db", db_path()}, 2, "--frobnicate"},
      {{"runs", "rm", "--db", db_path()}, 2, "run is required"},
      {{"runs", "frob", "--db", db_path()}, 2, "A subcommand is required"},
      {{"runs", "--db", db_path()}, 2, "runs"},
      {{"runs", "ls", "--db", missing}, 3, "cannot open database " + missing + ": no such file"},
      {{"runs", "rm", "r1", "--db", missing}, 3, missing},
      {{"runs", "prune", "--keep", "1", "--db", missing}, 3, missing},
      {{"runs", "ls", "--db", random}, 3, random},
      {{"runs", "prune", "--keep", "0", "--db", random}, 3, random},
      {{"serve", "--trace-level", "loud", "--db", db_path()}, 2, "--trace-level"},
      {{"serve", "--keep-runs", "-3", "--db", db_path()}, 2, "--keep-runs"},
      {{"serve", "--keep-trace-for", "7", "--db", db_path()}, 2, "--keep-trace-for"},
      {{"serve", "--prune-interval", "0s", "--keep-runs", "1", "--listen", "127.0.0.1:0", "--db",
        db_path()},
       2,
       "--prune-interval: must be positive"},
      {{"replay", "--session", "s", "--trace-level", "loud", "--db", db_path(), "--", "true"},
       2,
       "--trace-level"},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(absl::StrJoin(test.args, " "));
    ASSERT_OK_AND_ASSIGN(ProcessResult r, Cli(test.args));
    EXPECT_EQ(r.exit_code, test.exit_code) << r.err;
    EXPECT_THAT(r.err, AllOf(StartsWith("understudy: "), HasSubstr(test.message)));
    EXPECT_THAT(Lines(r.err), SizeIs(1)) << r.err;
    EXPECT_EQ(r.out, "");
  }
  // Bad values never touch the database, and read commands never create one.
  EXPECT_FALSE(std::filesystem::exists(db_path()));
  EXPECT_FALSE(std::filesystem::exists(missing));
  EXPECT_EQ(ReadFileOrEmpty(random), Noise(8192, 7));

  // The config file takes the new serve options, and checks them the same way.
  const std::string config = Path("bad.toml");
  WriteFile(config, "trace-level = \"loud\"\n");
  ASSERT_OK_AND_ASSIGN(ProcessResult r, Cli({"serve", "--config", config, "--db", db_path()}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--trace-level"));
}

// What each level promises: summary keeps the start, the misses and the
// end; off keeps nothing; the counts and miss reports are in the run record
// and summary at every level.
TEST_F(RunsTest, ATraceLevelKeepsOnlyWhatItPromises) {
  RecordGoldenRun();
  ASSERT_FALSE(HasFatalFailure());
  const std::string config = Path("serve.toml");
  WriteFile(config, "trace-level = \"summary\"\n");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--config", config}));
  Clients c(server->NewChannel());

  std::map<v1::TraceLevel, std::string> runs = {{v1::TRACE_LEVEL_UNSPECIFIED, "default"},
                                                {v1::TRACE_LEVEL_SUMMARY, "summary"},
                                                {v1::TRACE_LEVEL_OFF, "off"},
                                                {v1::TRACE_LEVEL_FULL, "full"}};
  std::map<std::string, std::vector<std::string>> kinds;
  for (const auto& [level, id] : runs) {
    SCOPED_TRACE(id);
    v1::StartRunRequest request;
    request.set_mode(v1::RUN_MODE_REPLAY);
    request.set_session("golden");
    request.set_run_id(id);
    request.set_trace_level(level);
    ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, request));
    // The server's --trace-level (from the config file) for a run that asks
    // for none.
    EXPECT_EQ(run.trace_level(),
              level == v1::TRACE_LEVEL_UNSPECIFIED ? v1::TRACE_LEVEL_SUMMARY : level);
    ASSERT_OK(RunAgentLoop(c, id, 2).status());
    EXPECT_THAT(Complete(c, id, "executor", UserRequest("never recorded")),
                StatusIs(absl::StatusCode::kNotFound));
    ASSERT_OK_AND_ASSIGN(v1::RunSummary summary, EndRun(c, id));
    EXPECT_EQ(summary.run().served(), 2);
    EXPECT_EQ(summary.run().misses(), 1);
    ASSERT_THAT(summary.misses(), SizeIs(1));
    EXPECT_THAT(summary.misses(0).text(), Not(IsEmpty()));
    ASSERT_OK_AND_ASSIGN(std::vector<v1::TraceEvent> events, QueryTrace(c, id));
    kinds[id] = Kinds(events);
  }
  EXPECT_THAT(kinds["default"], ElementsAre("run_started", "miss", "run_ended"));
  EXPECT_THAT(kinds["summary"], ElementsAre("run_started", "miss", "run_ended"));
  EXPECT_THAT(kinds["off"], IsEmpty());
  EXPECT_THAT(kinds["full"], AllOf(SizeIs(::testing::Gt(4)), ::testing::Contains("exchange"),
                                   ::testing::Contains("miss")));

  // A wait sees only what is kept: an exchange never comes to a summary run.
  ASSERT_OK_AND_ASSIGN(v1::Run live, StartScripted(c, "live", v1::TRACE_LEVEL_SUMMARY));
  ASSERT_OK(Complete(c, "live", "executor", UserRequest("hi")).status());
  v1::WaitForRequest wait;
  wait.set_run("live");
  wait.mutable_filter()->add_kinds("exchange");
  wait.set_timeout_ms(200);
  v1::TraceEvent got;
  auto context = CallContext();
  EXPECT_THAT(FromGrpc(c.traces->WaitFor(context.get(), wait, &got)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  ASSERT_OK(EndRun(c, "live").status());

  // The stored records say which level each run had.
  c.Disconnect();
  ASSERT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
  std::map<std::string, std::string> stored;
  for (const nlohmann::json& run : ListRuns()) stored[run["id"]] = run["trace_level"];
  EXPECT_EQ(stored["default"], "TRACE_LEVEL_SUMMARY");
  EXPECT_EQ(stored["off"], "TRACE_LEVEL_OFF");
  EXPECT_EQ(stored["full"], "TRACE_LEVEL_FULL");
}

// `record` and `replay` take --trace-level too (the replay's run is in its
// --trace-db copy).
TEST_F(RunsTest, ReplayTakesATraceLevel) {
  RecordGoldenRun();
  ASSERT_FALSE(HasFatalFailure());
  const std::string copy = Path("replay.db");
  ASSERT_OK_AND_ASSIGN(ProcessResult r,
                       Cli({"replay", "--session", "golden", "--trace-level", "off", "--db",
                            db_path(), "--trace-db", copy, "--", "true"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<nlohmann::json> runs = ListRunsIn(copy);
  ASSERT_THAT(runs, SizeIs(2));
  EXPECT_EQ(runs[1]["trace_level"], "TRACE_LEVEL_OFF");
  EXPECT_EQ(runs[1]["events"], "0");
}

// A replay leaves the recording as committed: its runs and traces go to a
// copy (a temporary one without --trace-db), the recording's bytes and
// folder stay the same, and the summary of a default run the command never
// used is not printed.
TEST_F(RunsTest, ReplayNeverWritesTheRecording) {
  const std::string recorded = RecordGoldenRun();
  ASSERT_FALSE(HasFatalFailure());
  const std::string before = ReadFileOrEmpty(db_path());
  ASSERT_FALSE(before.empty());
  auto folder = [&] {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(Path(""))) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  const std::vector<std::string> files = folder();

  ASSERT_OK_AND_ASSIGN(ProcessResult unused, Cli({"replay", "--session", "golden", "--db",
                                                  db_path(), "--", "true"}));
  ASSERT_EQ(unused.exit_code, 0) << unused.err;
  EXPECT_THAT(unused.err, Not(HasSubstr("unused recordings"))) << "a summary of an unused run";
  EXPECT_EQ(ReadFileOrEmpty(db_path()), before) << "the replay wrote into the recording";
  EXPECT_EQ(folder(), files);
  EXPECT_THAT(Ids(ListRuns()), ElementsAre(recorded));

  // The command used the run (a miss): its summary, and its trace kept in
  // --trace-db, where `understudy trace` finds it.
  const std::string copy = Path("kept/replay.db");
  std::filesystem::create_directories(Path("kept"));
  const char* kAskSomethingNew =
      "import os, urllib.request as u\n"
      "body = b'{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"new\"}]}'\n"
      "try:\n"
      "    u.urlopen(u.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions', data=body,\n"
      "                        headers={'content-type': 'application/json'}), timeout=10)\n"
      "except OSError:\n"
      "    pass\n";
  ASSERT_OK_AND_ASSIGN(ProcessResult used,
                       Cli({"replay", "--session", "golden", "--db", db_path(), "--trace-db", copy,
                            "--", "/usr/bin/python3", "-c", kAskSomethingNew}));
  ASSERT_EQ(used.exit_code, 0) << used.err;
  EXPECT_THAT(used.err,
              MatchesRegex("(.|\n)*understudy: run run-[0-9a-f]+ \\(golden@1\\): served 0, "
                           "recorded 0, misses 1, unused recordings [0-9]+\n(.|\n)*"));
  EXPECT_EQ(ReadFileOrEmpty(db_path()), before);
  std::vector<nlohmann::json> kept = ListRunsIn(copy);
  ASSERT_THAT(kept, SizeIs(2));
  EXPECT_EQ(kept[0]["id"], recorded) << "the copy holds the recording too";
  EXPECT_EQ(kept[1]["misses"], "1");
}

// serve --keep-runs: at start-up, then in the background as runs end;
// never an active run.
TEST_F(RunsTest, ServeKeepRunsPrunesEndedRunsInTheBackground) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--keep-runs", "1", "--prune-interval", "50ms"}));
  Clients c(server->NewChannel());
  ASSERT_OK(StartScripted(c, "live").status());
  for (const char* id : {"e1", "e2", "e3"}) OneCall(c, id);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_TRUE(WaitFor([&] { return Ids(ListRuns()) == std::vector<std::string>{"live", "e3"}; },
                      absl::Seconds(20)))
      << absl::StrJoin(Ids(ListRuns()), ",");
  EXPECT_TRUE(WaitFor([&] { return absl::StrContains(server->Stderr(), "runs_pruned"); },
                      absl::Seconds(20)))
      << server->Stderr();
  // The live run still works.
  EXPECT_OK(Complete(c, "live", "executor", UserRequest("hi")).status());
  c.Disconnect();
  ASSERT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();

  // At start-up: the runs that ended since (live, at shutdown) go at once.
  ASSERT_OK_AND_ASSIGN(server, StartServer("", {"--keep-runs", "0"}));
  EXPECT_TRUE(WaitFor([&] { return ListRuns().empty(); }, absl::Seconds(20)))
      << absl::StrJoin(Ids(ListRuns()), ",");
}

// serve --keep-trace-for: by age; a run younger than the bound stays.
TEST_F(RunsTest, ServeKeepTraceForDeletesRunsOlderThanTheBound) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--keep-trace-for", "1h", "--prune-interval", "50ms"}));
  {
    Clients c(server->NewChannel());
    OneCall(c, "young");
    ASSERT_FALSE(HasFatalFailure());
    c.Disconnect();
  }
  ASSERT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
  EXPECT_THAT(Ids(ListRuns()), ElementsAre("young"));
  ASSERT_OK_AND_ASSIGN(server, StartServer("", {"--keep-trace-for", "0s"}));
  EXPECT_TRUE(WaitFor([&] { return ListRuns().empty(); }, absl::Seconds(20)))
      << absl::StrJoin(Ids(ListRuns()), ",");
}

}  // namespace
}  // namespace e2e
}  // namespace understudy
