// The `understudy` command line as users and scripts see it: output, exit
// codes (0 ok, 1 bad input or not found, 2 usage, 3 operational) and help.
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/e2e_test_base.h"

namespace understudy {
namespace e2e {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::SizeIs;
using ::testing::StartsWith;

class CliTest : public E2eTest {};

TEST_F(CliTest, ExportImportExportIsByteIdentical) {
  std::vector<StepResult> golden;
  RecordGolden("golden", &golden);
  ASSERT_FALSE(HasFatalFailure());

  const std::string a = Path("a.jsonl");
  ASSERT_OK_AND_ASSIGN(ProcessResult exported,
                       Cli({"export", "golden", "--db", db_path(), "-o", a}));
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const std::string first = ReadFileOrEmpty(a);
  ASSERT_THAT(Lines(first), SizeIs(1 + fakes::AgentLoop::kSteps));
  EXPECT_THAT(first, StartsWith(R"({"header":{"format":"understudy.session/v1","name":"golden")"));

  // To stdout, the same bytes.
  ASSERT_OK_AND_ASSIGN(ProcessResult to_stdout, Cli({"export", "golden@1", "--db", db_path()}));
  EXPECT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  EXPECT_EQ(to_stdout.out, first);

  // Into a fresh database, and back out.
  const std::string other_db = Path("other.db");
  ASSERT_OK_AND_ASSIGN(ProcessResult imported, Cli({"import", a, "--db", other_db}));
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_EQ(imported.out, "golden@1 imported: 6 exchanges\n");
  const std::string b = Path("b.jsonl");
  ASSERT_OK_AND_ASSIGN(ProcessResult again, Cli({"export", "golden", "--db", other_db, "-o", b}));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(ReadFileOrEmpty(b), first);

  // Into the same database from stdin: a new version with the same bytes.
  ASSERT_OK_AND_ASSIGN(ProcessResult second, Cli({"import", "-", "--db", db_path()}, a));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.out, "golden@2 imported: 6 exchanges\n");
  ASSERT_OK_AND_ASSIGN(ProcessResult v2, Cli({"export", "golden@2", "--db", db_path()}));
  EXPECT_EQ(v2.out, first);

  // The imported copy replays like the original.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer("", {}, other_db));
  Clients c(server->NewChannel());
  EXPECT_THAT(ExportSession(c, "golden"), IsOkAndHolds(first));
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "golden", v1::RUN_MODE_REPLAY));
  ASSERT_OK_AND_ASSIGN(std::vector<StepResult> replayed, RunAgentLoop(c, run.id()));
  for (size_t i = 0; i < replayed.size(); ++i) {
    EXPECT_EQ(replayed[i].response.SerializeAsString(), golden[i].response.SerializeAsString());
  }
}

TEST_F(CliTest, SessionsLsShowAndRm) {
  std::vector<StepResult> golden;
  RecordGolden("golden", &golden);
  ASSERT_FALSE(HasFatalFailure());

  ASSERT_OK_AND_ASSIGN(ProcessResult ls, Cli({"sessions", "ls", "--db", db_path()}));
  EXPECT_EQ(ls.exit_code, 0) << ls.err;
  std::vector<std::string> lines = Lines(ls.out);
  ASSERT_THAT(lines, SizeIs(2)) << ls.out;
  EXPECT_THAT(lines[0], AllOf(HasSubstr("NAME"), HasSubstr("VERSION"), HasSubstr("EXCHANGES")));
  EXPECT_THAT(lines[1], MatchesRegex("golden +1 +closed +6 +orchestrator,executor,reviewer"));

  ASSERT_OK_AND_ASSIGN(ProcessResult ls_json, Cli({"sessions", "ls", "--db", db_path(), "--json"}));
  ASSERT_THAT(Lines(ls_json.out), SizeIs(1));
  nlohmann::json session = nlohmann::json::parse(ls_json.out);
  EXPECT_EQ(session["name"], "golden");
  EXPECT_EQ(session["state"], "SESSION_STATE_CLOSED");

  ASSERT_OK_AND_ASSIGN(ProcessResult show, Cli({"sessions", "show", "golden", "--db", db_path()}));
  EXPECT_EQ(show.exit_code, 0) << show.err;
  std::vector<std::string> shown = Lines(show.out);
  ASSERT_THAT(shown, SizeIs(1 + fakes::AgentLoop::kSteps)) << show.out;
  EXPECT_THAT(shown[0], StartsWith("golden@1  closed  6 exchanges"));
  EXPECT_THAT(shown[1], AllOf(StartsWith("#1 orchestrator"), HasSubstr("continue")));
  EXPECT_THAT(shown[3],
              AllOf(StartsWith("#3 reviewer"), HasSubstr("FEEDBACK: missing input validation"),
                    HasSubstr("chunks]")));

  ASSERT_OK_AND_ASSIGN(ProcessResult rm, Cli({"sessions", "rm", "golden", "--db", db_path()}));
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_THAT(rm.err, HasSubstr("deleted 1 version of golden"));
  ASSERT_OK_AND_ASSIGN(ProcessResult gone, Cli({"sessions", "ls", "--db", db_path(), "--json"}));
  EXPECT_EQ(gone.out, "");
  ASSERT_OK_AND_ASSIGN(ProcessResult rm_again,
                       Cli({"sessions", "rm", "golden", "--db", db_path()}));
  EXPECT_EQ(rm_again.exit_code, 1);
}

TEST_F(CliTest, TracePrintsTheRunsEventsInOrder) {
  std::vector<StepResult> golden;
  std::string run_id;
  RecordGolden("golden", &golden, &run_id);
  ASSERT_FALSE(HasFatalFailure());

  ASSERT_OK_AND_ASSIGN(ProcessResult json, Cli({"trace", run_id, "--db", db_path(), "--json"}));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  std::vector<std::string> kinds, agents;
  for (const std::string& line : Lines(json.out)) {
    nlohmann::json event = nlohmann::json::parse(line);
    EXPECT_EQ(event["run"], run_id);
    if (event["kind"] != "tool_call") kinds.push_back(event["kind"]);
    if (event["kind"] == "exchange") agents.push_back(event["agent"]);
  }
  EXPECT_THAT(kinds, ElementsAre("run_started", "agent_execution", "exchange", "agent_execution",
                                 "exchange", "agent_execution", "exchange", "agent_execution",
                                 "tool_result", "exchange", "agent_execution", "exchange",
                                 "agent_execution", "exchange", "run_ended"));
  EXPECT_THAT(agents, ElementsAre("orchestrator", "executor", "reviewer", "orchestrator",
                                  "executor", "reviewer"));

  ASSERT_OK_AND_ASSIGN(ProcessResult text, Cli({"trace", run_id, "--db", db_path(), "--kind",
                                                "exchange", "--agent", "reviewer"}));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  std::vector<std::string> lines = Lines(text.out);
  ASSERT_THAT(lines, SizeIs(2)) << text.out;
  EXPECT_THAT(lines[0], MatchesRegex("#[0-9]+ exchange reviewer .*understudy.exchange.seq=3.*"));
  EXPECT_THAT(lines[1], MatchesRegex("#[0-9]+ exchange reviewer .*understudy.exchange.seq=6.*"));

  ASSERT_OK_AND_ASSIGN(ProcessResult unknown, Cli({"trace", "run-nope", "--db", db_path()}));
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("unknown run \"run-nope\""));
}

TEST_F(CliTest, HelpOfEachCommandExitsZeroAndListsItsFlags) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> mentions;
  };
  const std::vector<Case> cases = {
      {{"--help"}, {"serve", "sessions", "export", "import", "trace", "--version", "--log-level"}},
      {{"serve", "--help"},
       {"--db", "--listen", "--upstream", "--mode", "--session", "--strict", "--max-message-bytes",
        "--drain-timeout", "--ready-file", "--config", "127.0.0.1:7140"}},
      {{"sessions", "--help"}, {"ls", "show", "rm"}},
      {{"sessions", "ls", "--help"}, {"--prefix", "--db", "--json"}},
      {{"sessions", "show", "--help"}, {"--db", "--json", "NAME@VERSION"}},
      {{"sessions", "rm", "--help"}, {"--db", "NAME@VERSION"}},
      {{"export", "--help"}, {"--output", "-o", "--db"}},
      {{"import", "--help"}, {"--name", "--db", "stdin"}},
      {{"trace", "--help"}, {"--kind", "--agent", "--db", "--json"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrJoin(c.args, " "));
    ASSERT_OK_AND_ASSIGN(ProcessResult r, Cli(c.args));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const std::string& m : c.mentions) EXPECT_THAT(r.out, HasSubstr(m));
  }
}

TEST_F(CliTest, VersionExitsZero) {
  ASSERT_OK_AND_ASSIGN(ProcessResult r, Cli({"--version"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, MatchesRegex("understudy [0-9]+\\.[0-9]+\\.[0-9]+.*\n"));
}

TEST_F(CliTest, UsageErrorsExitTwoWithAReason) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"frobnicate"},
      {"sessions"},
      {"sessions", "ls", "--bogus"},
      {"export"},
      {"serve", "--max-message-bytes", "10"},
      {"serve", "--mode", "sideways"},
      {"--log-level", "loud", "sessions", "ls"},
  };
  for (const std::vector<std::string>& args : cases) {
    SCOPED_TRACE(absl::StrJoin(args, " "));
    ASSERT_OK_AND_ASSIGN(ProcessResult r, Cli(args));
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_THAT(r.err, Not(IsEmpty()));
  }
}

TEST_F(CliTest, MissingThingsExitOneAndBrokenEnvironmentExitsThree) {
  const std::string empty = Path("empty.jsonl");
  WriteFile(empty,
            R"({"header":{"format":"understudy.session/v1","name":"empty","exchange_count":"0"}})"
            "\n");
  ASSERT_OK_AND_ASSIGN(ProcessResult created, Cli({"import", empty, "--db", db_path()}));
  ASSERT_EQ(created.exit_code, 0) << created.err;
  ASSERT_OK_AND_ASSIGN(ProcessResult no_session, Cli({"export", "nope", "--db", db_path()}));
  EXPECT_EQ(no_session.exit_code, 1);
  EXPECT_THAT(no_session.err, AllOf(StartsWith("understudy: "), HasSubstr("nope")));
  ASSERT_OK_AND_ASSIGN(ProcessResult no_file,
                       Cli({"import", Path("missing.jsonl"), "--db", db_path()}));
  EXPECT_EQ(no_file.exit_code, 1);
  EXPECT_THAT(no_file.err, HasSubstr("missing.jsonl"));
  ASSERT_OK_AND_ASSIGN(ProcessResult bad_db,
                       Cli({"sessions", "ls", "--db", Path("no/such/dir/x.db")}));
  EXPECT_EQ(bad_db.exit_code, 3) << bad_db.err;
  EXPECT_THAT(bad_db.err, StartsWith("understudy: "));
}

TEST_F(CliTest, TheWrappedCommandGetsEveryArgumentAfterTheSeparatorVerbatim) {
  const std::string file = Path("empty.jsonl");
  WriteFile(file, R"({"header":{"format":"understudy.session/v1","name":"empty","exchange_count":"0"}})"
                  "\n");
  ASSERT_OK_AND_ASSIGN(ProcessResult imported, Cli({"import", file, "--db", db_path()}));
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  // Options of the command's own, a second "--", brackets, quotes, Unicode,
  // and global flags of ours before the separator.
  ASSERT_OK_AND_ASSIGN(
      ProcessResult r,
      Cli({"replay", "--session", "empty", "--db", db_path(), "--log-level", "warning", "--",
           "sh", "-c", "printf '%s|' \"$0\" \"$@\"", "a b", "[x]", "--api", "chat", "--", "-k",
           "foo", "--session", "\xC3\xA9t\xC3\xA9", "-h"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "a b|[x]|--api|chat|--|-k|foo|--session|\xC3\xA9t\xC3\xA9|-h|");
  // Nothing after the separator, or a command on both sides of it.
  ASSERT_OK_AND_ASSIGN(ProcessResult none,
                       Cli({"replay", "--session", "empty", "--db", db_path(), "--"}));
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_THAT(none.err, StartsWith("understudy: give the command to run after --"));
  ASSERT_OK_AND_ASSIGN(ProcessResult both, Cli({"replay", "--session", "empty", "--db", db_path(),
                                                "echo", "--", "true"}));
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_EQ(both.err, "understudy: the command goes after -- only (got \"echo\" before it)\n");
}

TEST_F(CliTest, GlobalFlagsWorkAfterTheCommandAndErrorsAreOneLine) {
  ASSERT_OK_AND_ASSIGN(ProcessResult ls, Cli({"sessions", "ls", "--db", db_path(), "--log-level",
                                              "debug", "--log-format", "json"}));
  EXPECT_EQ(ls.exit_code, 3) << ls.err;  // the database does not exist; the flags parsed
  EXPECT_THAT(ls.err, HasSubstr("cannot open database"));
  ASSERT_OK_AND_ASSIGN(ProcessResult serve,
                       Cli({"serve", "--log-level", "debug", "--listen", "127.0.0.1:70000"}));
  EXPECT_EQ(serve.exit_code, 2) << serve.err;
  EXPECT_EQ(serve.err,
            "understudy: --listen \"127.0.0.1:70000\": expected HOST:PORT with a port from 0 to "
            "65535\n");
  ASSERT_OK_AND_ASSIGN(ProcessResult http, Cli({"serve", "--http", "127.0.0.1:65536"}));
  EXPECT_EQ(http.exit_code, 2) << http.err;
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"serve", "--speed", "abc"},
                                             {"serve", "--bogus"},
                                             {"frobnicate"},
                                             {"sessions", "ls", "--log-level", "loud"},
                                             {"replay", "--", "true"}}) {
    SCOPED_TRACE(absl::StrJoin(args, " "));
    ASSERT_OK_AND_ASSIGN(ProcessResult r, Cli(args));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, AllOf(StartsWith("understudy: "), EndsWith("\n")));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST_F(CliTest, ADatabaseThatIsNotOursExitsThreeAndIsLeftUntouched) {
  const std::string random = Path("random.db");
  std::string bytes(8192, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 7919 + 13) % 251);
  WriteFile(random, bytes);
  const std::string json = Path("config.json");
  WriteFile(json, R"({"not": "a database"})");
  const std::string newer = Path("newer.db");
  const std::string foreign = Path("foreign.db");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=999", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    ASSERT_EQ(sqlite3_open(foreign.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES('mine')",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  const std::string foreign_before = ReadFileOrEmpty(foreign);
  for (const std::string& db : {random, json, newer, foreign}) {
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"sessions", "ls", "--db", db},
                                               {"export", "golden", "--db", db},
                                               {"serve", "--db", db, "--listen", "127.0.0.1:0"}}) {
      SCOPED_TRACE(absl::StrJoin(args, " "));
      ASSERT_OK_AND_ASSIGN(ProcessResult r, Cli(args));
      EXPECT_EQ(r.exit_code, 3) << r.err;
      EXPECT_THAT(r.err, AllOf(StartsWith("understudy: "), HasSubstr(db)));
    }
  }
  // Byte for byte as it was: not switched to WAL, no -wal file left.
  EXPECT_EQ(ReadFileOrEmpty(foreign), foreign_before);
  EXPECT_FALSE(std::filesystem::exists(foreign + "-wal"));
  EXPECT_EQ(ReadFileOrEmpty(random), bytes);
}

TEST_F(CliTest, ReadOnlyCommandsNeverCreateADatabase) {
  const std::string typo = Path("undrestudy.db");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"sessions", "ls", "--db", typo},
           {"sessions", "show", "golden", "--db", typo},
           {"sessions", "rm", "golden", "--db", typo},
           {"export", "golden", "--db", typo},
           {"trace", "run-1", "--db", typo},
           {"show", "run-1", "--db", typo}}) {
    SCOPED_TRACE(absl::StrJoin(args, " "));
    ASSERT_OK_AND_ASSIGN(ProcessResult r, Cli(args));
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_THAT(r.err, HasSubstr("cannot open database"));
    EXPECT_FALSE(std::filesystem::exists(typo));
  }
}

TEST_F(CliTest, NewDatabasesAreReadableByTheirOwnerOnly) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  struct stat st;
  ASSERT_EQ(::stat(db_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  ASSERT_EQ(::stat((db_path() + "-wal").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
}

TEST_F(CliTest, ExportOntoAFullDiskLeavesNoTemporaryFileBehind) {
  // One exchange with a 200 KB answer: an export well over the limit below.
  const std::string big = Path("big.jsonl");
  WriteFile(big, absl::StrCat(
                     R"({"header":{"format":"understudy.session/v1","name":"golden","exchange_count":"1"}})",
                     "\n", R"({"exchange":{"seq":"1","response":{"message":{"content":")",
                     std::string(200000, 'x'), R"("}}}})", "\n"));
  ASSERT_OK_AND_ASSIGN(ProcessResult imported, Cli({"import", big, "--db", db_path()}));
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  const std::string out = Path("out/golden.jsonl");
  std::filesystem::create_directories(Path("out"));
  // A file size limit of 64 KiB (dash counts 512-byte blocks) makes the
  // export's writes fail (EFBIG) as a full disk would (ENOSPC), while the
  // database (read only) and its 32 KiB shared-memory file stay usable;
  // SIGXFSZ is ignored so that write returns the error.
  ASSERT_OK_AND_ASSIGN(
      ProcessResult r,
      RunProcess("/bin/sh",
                 {"-c", absl::StrCat("ulimit -f 128; trap '' XFSZ; exec ", UnderstudyBinary(),
                                     " export golden -o ", out, " --db ", db_path())}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, AllOf(StartsWith("understudy: cannot write "), HasSubstr(out)));
  EXPECT_TRUE(std::filesystem::is_empty(Path("out"))) << "a temporary file was left behind";
}

TEST_F(CliTest, TwoServersOnPortZeroSideBySideDoNotCollideOnTheHttpPort) {
  // As the docs show for tests: `serve --listen 127.0.0.1:0`, no --http.
  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (int i = 0; i < 2; ++i) {
    ServerProcess::Options options;
    options.db_path = Path(absl::StrCat("side-", i, ".db"));
    options.stderr_path = Path(absl::StrCat("side-", i, ".stderr"));
    options.pick_http_port = false;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, ServerProcess::Start(options));
    EXPECT_THAT(server->http_address(), StartsWith("127.0.0.1:"));
    EXPECT_NE(server->http_address(), "127.0.0.1:7141");
    servers.push_back(std::move(server));
  }
  EXPECT_NE(servers[0]->http_address(), servers[1]->http_address());
}

TEST_F(CliTest, ServeRefusesAnAddressAlreadyInUse) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> first, StartServer());
  ASSERT_OK_AND_ASSIGN(ProcessResult second,
                       Cli({"serve", "--db", Path("second.db"), "--listen", first->address()}, "",
                           absl::Seconds(20)));
  EXPECT_EQ(second.exit_code, 3) << second.out << second.err;
  EXPECT_THAT(second.err, HasSubstr("cannot listen on " + first->address()));
  EXPECT_EQ(second.out, "");
  EXPECT_THAT(HealthCheck(first->NewChannel()), IsOkAndHolds(1));
}

TEST_F(CliTest, ServeWritesTheReadyFileAndStopsOnSigint) {
  const std::string ready = Path("ready.json");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--ready-file", ready}));
  EXPECT_EQ(server->first_line(),
            absl::StrCat("understudy serving grpc=", server->address(), " http=",
                         server->http_address(), " db=", db_path()));
  EXPECT_FALSE(server->http_address().empty());
  // The ready file is written (atomically) right after the first line.
  ASSERT_TRUE(WaitFor([&] { return !ReadFileOrEmpty(ready).empty(); }, absl::Seconds(10)))
      << "no ready file " << ready;
  nlohmann::json info = nlohmann::json::parse(ReadFileOrEmpty(ready), nullptr, false);
  ASSERT_FALSE(info.is_discarded()) << ReadFileOrEmpty(ready);
  EXPECT_EQ(info["grpc"], server->address());
  EXPECT_EQ(info["http"], server->http_address());
  EXPECT_EQ(info["db"], db_path());
  EXPECT_EQ(info["pid"], server->pid());
  EXPECT_THAT(server->Terminate(absl::Seconds(20), SIGINT), IsOkAndHolds(0));
  EXPECT_THAT(server->Stderr(), HasSubstr("signal=SIGINT"));
  EXPECT_THAT(server->Stderr(), HasSubstr("stopped status=ok"));
}

}  // namespace
}  // namespace e2e
}  // namespace understudy
