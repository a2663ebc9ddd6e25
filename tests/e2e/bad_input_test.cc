// The error contract from outside: bad input gets a specific code and a
// message naming what is wrong, the server keeps serving, and no data is
// lost or corrupted.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/e2e/e2e_test_base.h"
#include "tests/e2e/sqlite_check.h"

namespace understudy {
namespace e2e {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;

// A one-line header, a good exchange, then a broken line 3.
constexpr char kMalformedSession[] =
    R"({"header":{"format":"understudy.session/v1","name":"broken","exchange_count":"2"}})"
    "\n"
    R"({"exchange":{"seq":"1","agent":"a","request":{"messages":[{"role":"user","content":"hi"}]},"response":{"message":{"role":"assistant","content":"hello"}}}})"
    "\n"
    R"({"exchange":{"seq":"2","agent":"a","request":{"messages":[{"role":"user" "content":"oops"}]}}})"
    "\n";

v1::Exchange SimpleExchange(const std::string& agent, const std::string& prompt) {
  v1::Exchange e;
  e.set_agent(agent);
  e.mutable_request()->set_model("fake-gpt-1");
  v1::Message* m = e.mutable_request()->add_messages();
  m->set_role("user");
  m->set_content(prompt);
  e.mutable_response()->mutable_message()->set_role("assistant");
  e.mutable_response()->mutable_message()->set_content("answer to " + prompt);
  e.mutable_response()->set_finish_reason("stop");
  return e;
}

class BadInputTest : public E2eTest {};

TEST_F(BadInputTest, MalformedImportFileExitsOneNamingTheLineAndStoresNothing) {
  const std::string file = Path("broken.jsonl");
  WriteFile(file, kMalformedSession);
  ASSERT_OK_AND_ASSIGN(ProcessResult r, Cli({"import", file, "--db", db_path()}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, AllOf(StartsWith("understudy: "), HasSubstr(file), HasSubstr("line 3")));
  EXPECT_EQ(r.out, "");

  ASSERT_OK_AND_ASSIGN(ProcessResult ls, Cli({"sessions", "ls", "--db", db_path(), "--json"}));
  EXPECT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_EQ(ls.out, "") << "the bad import stored something";
}

TEST_F(BadInputTest, MalformedImportOverRpcIsInvalidArgumentNamingTheLine) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  v1::ImportSessionRequest request;
  request.set_jsonl(kMalformedSession);
  v1::Session session;
  auto context = CallContext();
  EXPECT_THAT(FromGrpc(c.sessions->ImportSession(context.get(), request, &session)),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("line 3")));
  EXPECT_THAT(GetSession(c, "broken"), StatusIs(absl::StatusCode::kNotFound));

  request.set_jsonl("not json at all\n");
  auto context2 = CallContext();
  EXPECT_THAT(FromGrpc(c.sessions->ImportSession(context2.get(), request, &session)),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("line 1")));
}

TEST_F(BadInputTest, UnknownSessionOrRunIsNotFound) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  EXPECT_THAT(StartRun(c, "no-such-session", v1::RUN_MODE_REPLAY),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no-such-session")));
  EXPECT_THAT(Complete(c, "no-such-run", "executor", UserRequest("hi")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("unknown run \"no-such-run\"")));
  EXPECT_THAT(StreamComplete(c, "no-such-run", "executor", UserRequest("hi")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("unknown run \"no-such-run\"")));
  EXPECT_THAT(EndRun(c, "no-such-run"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("unknown run \"no-such-run\"")));
  EXPECT_THAT(QueryTrace(c, "no-such-run"), StatusIs(absl::StatusCode::kNotFound));
  // A known session at an unknown version.
  ASSERT_OK(RecordExchanges(c, "known", {SimpleExchange("a", "hi")}, /*close=*/true).status());
  EXPECT_THAT(StartRun(c, "known@7", v1::RUN_MODE_REPLAY), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(BadInputTest, EndedRunIsFailedPreconditionNotNotFound) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK(RecordExchanges(c, "s", {SimpleExchange("a", "hi")}, /*close=*/true).status());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "s", v1::RUN_MODE_REPLAY));
  ASSERT_OK(EndRun(c, run.id()).status());
  EXPECT_THAT(Complete(c, run.id(), "a", UserRequest("hi")),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("has ended")));
  // Ending again returns the same summary.
  ASSERT_OK_AND_ASSIGN(v1::RunSummary again, EndRun(c, run.id()));
  EXPECT_EQ(again.run().state(), v1::RUN_STATE_ENDED);
  EXPECT_THAT(again.unconsumed(), SizeIs(1));
}

TEST_F(BadInputTest, InvalidRequestsAreInvalidArgumentNamingTheField) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK(RecordExchanges(c, "s", {SimpleExchange("a", "hi")}, /*close=*/true).status());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "s", v1::RUN_MODE_REPLAY));

  v1::CompletionRequest bad_role = UserRequest("hi");
  bad_role.mutable_messages(0)->set_role("robot");
  EXPECT_THAT(Complete(c, run.id(), "a", bad_role),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("messages[0].role")));
  EXPECT_THAT(Complete(c, run.id(), "a", v1::CompletionRequest()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("messages")));
  EXPECT_THAT(StartRun(c, "s", v1::RUN_MODE_UNSPECIFIED),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mode")));
  EXPECT_THAT(StartRun(c, "s", v1::RUN_MODE_REPLAY, true, "bad id!"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("run_id")));
  EXPECT_THAT(StartRun(c, "s", v1::RUN_MODE_REPLAY, true, run.id()),
              StatusIs(absl::StatusCode::kAlreadyExists));
  // Record mode without an upstream: fix the server's configuration first.
  EXPECT_THAT(StartRun(c, "new", v1::RUN_MODE_RECORD),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--upstream")));
  // Invalid input consumed nothing: the valid request still answers.
  EXPECT_OK(Complete(c, run.id(), "a", UserRequest("hi")).status());
}

TEST_F(BadInputTest, RecordExchangesWithoutACommitMarkerStoresNothing) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  grpc::ClientContext context;
  v1::RecordExchangesResponse response;
  auto writer = c.recorder->RecordExchanges(&context, &response);
  v1::RecordExchangesRequest message;
  message.set_session("uncommitted");
  *message.mutable_exchange() = SimpleExchange("a", "one");
  ASSERT_TRUE(writer->Write(message));
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ABORTED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("without a message marked commit"));
  EXPECT_THAT(GetSession(c, "uncommitted"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(BadInputTest, RecordExchangesIsAllOrNothingOnInvalidInput) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  std::vector<v1::Exchange> batch = {SimpleExchange("a", "one"), SimpleExchange("a", "two"),
                                     SimpleExchange("a", "three")};
  batch[1].mutable_request()->clear_messages();
  EXPECT_THAT(
      RecordExchanges(c, "atomic", batch),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exchanges[1].request.messages")));
  ASSERT_OK(RecordExchanges(c, "atomic", {SimpleExchange("a", "good")}).status());
  ASSERT_OK_AND_ASSIGN(v1::GetSessionResponse session, GetSession(c, "atomic"));
  ASSERT_THAT(session.exchanges(), SizeIs(1));
  EXPECT_EQ(session.exchanges(0).seq(), 1);
  EXPECT_EQ(session.exchanges(0).request().messages(0).content(), "good");

  EXPECT_THAT(RecordExchanges(c, "", {SimpleExchange("a", "x")}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("session")));
}

TEST_F(BadInputTest, OversizedMessageIsResourceExhaustedAndTheServerKeepsServing) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--max-message-bytes", "65536"}));
  Clients c(server->NewChannel());
  ASSERT_OK(RecordExchanges(c, "s", {SimpleExchange("a", "hi")}, /*close=*/true).status());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(c, "s", v1::RUN_MODE_REPLAY));

  const std::string mebibyte(1 << 20, 'z');
  EXPECT_THAT(Complete(c, run.id(), "a", UserRequest(mebibyte)),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(StreamComplete(c, run.id(), "a", UserRequest(mebibyte)),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(RecordExchanges(c, "big", {SimpleExchange("a", mebibyte)}),
              StatusIs(absl::StatusCode::kResourceExhausted));
  // Just under the limit is fine; the run and connection are unharmed.
  EXPECT_THAT(Complete(c, run.id(), "a", UserRequest(std::string(60000, 'z'))),
              StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse answer,
                       Complete(c, run.id(), "a", UserRequest("hi")));
  EXPECT_EQ(answer.message().content(), "answer to hi");
  EXPECT_THAT(HealthCheck(c.channel), IsOkAndHolds(1));
}

// Read() ends the handler's loop both at the client's half-close and when
// the stream broke; the commit marker on the last message tells them apart.
TEST_F(BadInputTest, RecordExchangesBrokenByAnOversizedMessageCommitsNothing) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--max-message-bytes", "65536"}));
  Clients c(server->NewChannel());
  EXPECT_THAT(
      RecordExchanges(
          c, "big", {SimpleExchange("a", "small"), SimpleExchange("a", std::string(1 << 20, 'z'))}),
      StatusIs(absl::StatusCode::kResourceExhausted));
  absl::StatusOr<v1::GetSessionResponse> stored = GetSession(c, "big");
  EXPECT_THAT(stored, StatusIs(absl::StatusCode::kNotFound))
      << (stored.ok() ? stored->DebugString() : "");
}

TEST_F(BadInputTest, GarbageOnTheGrpcPortLeavesTheServerServingAndTheDatabaseIntact) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK(RecordExchanges(c, "keep", {SimpleExchange("a", "one"), SimpleExchange("b", "two")},
                            /*close=*/true)
                .status());
  ASSERT_OK_AND_ASSIGN(std::string before, ExportSession(c, "keep"));

  std::mt19937 rng(20240611);  // fixed seed: the same garbage every run
  std::string noise(64 << 10, '\0');
  for (char& ch : noise) ch = static_cast<char>(rng());
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  const std::vector<std::string> attacks = {
      noise,
      "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
      preface + noise.substr(0, 4096),
      // A well-formed preface, then a frame header claiming 16 MiB.
      preface + std::string("\xff\xff\xff\x00\x00\x00\x00\x00\x01", 9) + noise.substr(0, 512),
      preface.substr(0, 10),
      "",
  };
  for (size_t i = 0; i < attacks.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("attack ", i));
    EXPECT_OK(SendRaw(server->address(), attacks[i], absl::Milliseconds(300)).status());
  }

  // Still serving, on the existing channel and on a new one.
  EXPECT_THAT(HealthCheck(c.channel), IsOkAndHolds(1));
  Clients fresh(server->NewChannel());
  EXPECT_THAT(HealthCheck(fresh.channel), IsOkAndHolds(1));
  EXPECT_THAT(ExportSession(fresh, "keep"), IsOkAndHolds(before));
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartRun(fresh, "keep", v1::RUN_MODE_REPLAY));
  v1::CompletionRequest one = SimpleExchange("a", "one").request();
  EXPECT_OK(Complete(fresh, run.id(), "a", one).status());

  c.Disconnect();
  fresh.Disconnect();
  ASSERT_THAT(server->Terminate(), IsOkAndHolds(0)) << server->Stderr();
  EXPECT_THAT(IntegrityCheck(db_path()), IsOkAndHolds("ok"));
  ASSERT_OK_AND_ASSIGN(ProcessResult exported, Cli({"export", "keep", "--db", db_path()}));
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(exported.out, before);
}

}  // namespace
}  // namespace e2e
}  // namespace understudy
