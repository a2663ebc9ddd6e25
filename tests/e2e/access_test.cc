// Access control for a shared server (docs/security.md): the token matrix
// (none, wrong, right) over gRPC, the HTTP provider routes and the other HTTP
// routes, with TLS off and on; the Host check; exposure rules; slowloris.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/e2e/e2e_test_base.h"

namespace understudy {
namespace e2e {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kToken[] = "test-token-0123456789abcdef";

// A self-signed certificate for localhost and 127.0.0.1, made with openssl.
struct Certificate {
  std::string cert;  // path
  std::string key;   // path
  std::string pem;   // the certificate's contents
};

class AccessTest : public E2eTest {
 protected:
  Certificate MakeCertificate() {
    Certificate c{Path("cert.pem"), Path("key.pem"), ""};
    absl::StatusOr<ProcessResult> made = RunProcess(
        "/usr/bin/openssl",
        {"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", c.key, "-out", c.cert, "-days", "2", "-subj", "/CN=localhost", "-addext",
         "subjectAltName=DNS:localhost,IP:127.0.0.1"});
    EXPECT_TRUE(made.ok() && made->exit_code == 0) << (made.ok() ? made->err : "no openssl");
    c.pem = ReadFileOrEmpty(c.cert);
    return c;
  }

  std::string TokenFile() {
    const std::string file = Path("token");
    WriteFile(file, absl::StrCat(kToken, "\n"));
    ::chmod(file.c_str(), 0600);
    return file;
  }

  // A context with `authorization: Bearer TOKEN` (none when empty).
  static std::unique_ptr<grpc::ClientContext> WithToken(const std::string& token) {
    std::unique_ptr<grpc::ClientContext> context = CallContext();
    if (!token.empty()) context->AddMetadata("authorization", absl::StrCat("Bearer ", token));
    return context;
  }

  // Health, a Runs call and a Sessions call with `token`: every one's code.
  static std::vector<grpc::StatusCode> GrpcCodes(const std::shared_ptr<grpc::Channel>& channel,
                                                 const std::string& token) {
    std::vector<grpc::StatusCode> codes;
    {
      auto stub = grpc::health::v1::Health::NewStub(channel);
      grpc::health::v1::HealthCheckRequest request;
      grpc::health::v1::HealthCheckResponse response;
      codes.push_back(stub->Check(WithToken(token).get(), request, &response).error_code());
    }
    {
      auto stub = v1::Sessions::NewStub(channel);
      v1::ListSessionsRequest request;
      v1::ListSessionsResponse response;
      codes.push_back(stub->ListSessions(WithToken(token).get(), request, &response).error_code());
    }
    {
      auto stub = v1::Runs::NewStub(channel);
      v1::StartRunRequest request;
      request.set_mode(v1::RUN_MODE_REPLAY);
      request.set_scenario("rate-limit");
      v1::Run run;
      codes.push_back(stub->StartRun(WithToken(token).get(), request, &run).error_code());
    }
    return codes;
  }

  // POST /v1/chat/completions (or GET `path`) through curl, over HTTPS when
  // `ca` is given: "STATUS BODY".
  std::string Curl(const std::string& address, const std::string& path,
                   const std::vector<std::string>& headers, const std::string& ca = "") {
    std::vector<std::string> args = {"-sS", "-o", "-", "-w", " %{http_code}", "--max-time", "10"};
    if (!ca.empty()) {
      args.push_back("--cacert");
      args.push_back(ca);
    }
    for (const std::string& h : headers) {
      args.push_back("-H");
      args.push_back(h);
    }
    if (path == "/v1/chat/completions") {
      args.push_back("-H");
      args.push_back("content-type: application/json");
      args.push_back("--data");
      args.push_back(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})");
    }
    args.push_back(absl::StrCat(ca.empty() ? "http://" : "https://", address, path));
    absl::StatusOr<ProcessResult> r = RunProcess("/usr/bin/curl", args);
    if (!r.ok()) return r.status().ToString();
    return r->out;
  }

  void WriteScenario() {
    WriteFile(Path("answer.yaml"),
              "schema: understudy.scenario/v1\ndefault: {respond: {content: hello}}\n");
  }
};

MATCHER_P(Ends, code, "") { return absl::EndsWith(arg, absl::StrCat(" ", code)); }

TEST_F(AccessTest, WithATokenEveryAnonymousOrWrongCallIsRefusedOverGrpcAndHttp) {
  WriteScenario();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--auth-token-file", TokenFile(), "--mode", "replay",
                                        "--scenario", Path("answer.yaml")}));
  std::shared_ptr<grpc::Channel> channel = server->NewChannel();
  using C = grpc::StatusCode;
  EXPECT_THAT(GrpcCodes(channel, ""),
              ::testing::ElementsAre(C::UNAUTHENTICATED, C::UNAUTHENTICATED, C::UNAUTHENTICATED));
  EXPECT_THAT(GrpcCodes(channel, "wrong-token-0123456789"),
              ::testing::ElementsAre(C::UNAUTHENTICATED, C::UNAUTHENTICATED, C::UNAUTHENTICATED));
  EXPECT_THAT(GrpcCodes(channel, kToken), ::testing::ElementsAre(C::OK, C::OK, C::OK));
  {
    // The refusal says what to send.
    auto stub = v1::Sessions::NewStub(channel);
    v1::ListSessionsRequest request;
    v1::ListSessionsResponse response;
    grpc::Status s = stub->ListSessions(WithToken("").get(), request, &response);
    EXPECT_THAT(s.error_message(), HasSubstr("authorization: Bearer TOKEN"));
  }
  const std::string http = server->http_address();
  const std::string chat = "/v1/chat/completions";
  // Provider routes: the token where SDKs put their key, or in
  // X-Understudy-Token.
  EXPECT_THAT(Curl(http, chat, {}), AllOf(Ends(401), HasSubstr("access token")));
  EXPECT_THAT(Curl(http, chat, {"Authorization: Bearer sk-wrong-key-0123456789"}), Ends(401));
  EXPECT_THAT(Curl(http, chat, {absl::StrCat("Authorization: Bearer ", kToken)}),
              AllOf(Ends(200), HasSubstr("hello")));
  EXPECT_THAT(Curl(http, chat, {absl::StrCat("x-api-key: ", kToken)}), Ends(200));
  EXPECT_THAT(Curl(http, chat,
                   {absl::StrCat("X-Understudy-Token: ", kToken), "Authorization: Bearer sk-real"}),
              Ends(200));
  EXPECT_THAT(Curl(http, "/v1/models", {}), Ends(401));
  // Other routes (here the web UI's API, docs/ui.md) take only
  // Authorization: Bearer.
  EXPECT_THAT(Curl(http, "/api/v1/sessions", {}), Ends(401));
  EXPECT_THAT(Curl(http, "/api/v1/sessions", {absl::StrCat("x-api-key: ", kToken)}), Ends(401));
  EXPECT_THAT(Curl(http, "/api/v1/sessions", {absl::StrCat("Authorization: Bearer ", kToken)}),
              Ends(200));
}

TEST_F(AccessTest, TlsOnBothListenersWithTheToken) {
  WriteScenario();
  const Certificate cert = MakeCertificate();
  ASSERT_FALSE(HasFailure());
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<ServerProcess> server,
      StartServer("", {"--auth-token-file", TokenFile(), "--tls-cert", cert.cert, "--tls-key",
                       cert.key, "--mode", "replay", "--scenario", Path("answer.yaml")}));
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = cert.pem;
  std::shared_ptr<grpc::Channel> tls_channel =
      grpc::CreateChannel(server->address(), grpc::SslCredentials(ssl));
  using C = grpc::StatusCode;
  EXPECT_THAT(GrpcCodes(tls_channel, ""),
              ::testing::ElementsAre(C::UNAUTHENTICATED, C::UNAUTHENTICATED, C::UNAUTHENTICATED));
  EXPECT_THAT(GrpcCodes(tls_channel, kToken), ::testing::ElementsAre(C::OK, C::OK, C::OK));
  // A plaintext client cannot talk to it at all.
  EXPECT_THAT(GrpcCodes(server->NewChannel(), kToken),
              ::testing::ElementsAre(C::UNAVAILABLE, C::UNAVAILABLE, C::UNAVAILABLE));
  const std::string http = server->http_address();
  const std::string chat = "/v1/chat/completions";
  EXPECT_THAT(Curl(http, chat, {}, cert.cert), Ends(401));
  EXPECT_THAT(Curl(http, chat, {absl::StrCat("Authorization: Bearer ", kToken)}, cert.cert),
              AllOf(Ends(200), HasSubstr("hello")));
  // Plain HTTP to the TLS port gets nothing useful.
  EXPECT_THAT(Curl(http, chat, {absl::StrCat("Authorization: Bearer ", kToken)}),
              ::testing::Not(Ends(200)));
}

TEST_F(AccessTest, TlsWithoutATokenServesAnyone) {
  WriteScenario();
  const Certificate cert = MakeCertificate();
  ASSERT_FALSE(HasFailure());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--tls-cert", cert.cert, "--tls-key", cert.key, "--mode",
                                        "replay", "--scenario", Path("answer.yaml")}));
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = cert.pem;
  using C = grpc::StatusCode;
  EXPECT_THAT(GrpcCodes(grpc::CreateChannel(server->address(), grpc::SslCredentials(ssl)), ""),
              ::testing::ElementsAre(C::OK, C::OK, C::OK));
  EXPECT_THAT(Curl(server->http_address(), "/v1/chat/completions", {}, cert.cert), Ends(200));
}

TEST_F(AccessTest, ExposureRulesAndBadAccessFlagsAreUsageErrors) {
  const std::string token = TokenFile();
  const std::string loose = Path("loose-token");
  WriteFile(loose, absl::StrCat(kToken, "\n"));
  ::chmod(loose.c_str(), 0644);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--listen", "0.0.0.0:0"}, "--listen 0.0.0.0:0 is reachable from other machines"},
      {{"--http", "0.0.0.0:0"}, "--http 0.0.0.0:0 is reachable from other machines"},
      {{"--listen", "0.0.0.0:0", "--auth-token-file", token},
       "a token sent in the clear to another machine"},
      {{"--auth-token", "short"}, "--auth-token: 5 characters; use at least 16"},
      {{"--auth-token-file", loose}, "readable by others (mode 644); chmod 600 it"},
      {{"--auth-token-file", Path("missing")}, "no such file"},
      {{"--auth-token", kToken, "--auth-token-file", token}, "give at most one"},
      {{"--tls-cert", Path("cert.pem")}, "--tls-cert, --tls-key: give both or neither"},
      {{"--tls-cert", token, "--tls-key", token}, "not a PEM file"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args = {"serve", "--db", db_path(), "--listen", "127.0.0.1:0",
                                     "--http", "127.0.0.1:0"};
    args.insert(args.end(), flags.begin(), flags.end());
    SCOPED_TRACE(absl::StrJoin(args, " "));
    ASSERT_OK_AND_ASSIGN(ProcessResult r, Cli(args));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, AllOf(StartsWith("understudy: "), HasSubstr(message)));
  }
  // Explicitly allowed: serves anyone (and says nothing of a token).
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> open,
                       StartServer("", {"--listen", "0.0.0.0:0", "--allow-unauthenticated", "true"}));
  EXPECT_THAT(open->address(), StartsWith("0.0.0.0:"));
  EXPECT_THAT(HealthCheck(grpc::CreateChannel(
                  absl::StrCat("127.0.0.1:", open->address().substr(open->address().rfind(':') + 1)),
                  grpc::InsecureChannelCredentials())),
              IsOkAndHolds(1));
}

TEST_F(AccessTest, TheHttpListenerAnswersOnlyToItsOwnNames) {
  WriteScenario();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--mode", "replay", "--scenario", Path("answer.yaml")}));
  const std::string body = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
  auto post = [&](const std::string& host) {
    absl::StatusOr<std::string> r = SendRaw(
        server->http_address(),
        absl::StrCat("POST /v1/chat/completions HTTP/1.1\r\nHost: ", host,
                     "\r\ncontent-type: application/json\r\ncontent-length: ", body.size(),
                     "\r\nconnection: close\r\n\r\n", body));
    return r.ok() ? *r : r.status().ToString();
  };
  // A page on rebind.example resolving to 127.0.0.1 sends its own name.
  EXPECT_THAT(post("rebind.example:7141"),
              AllOf(StartsWith("HTTP/1.1 403"), HasSubstr("rebind.example"),
                    HasSubstr("--allow-host")));
  for (const std::string& host : {std::string("localhost"), std::string("127.0.0.1:9"),
                                 server->http_address(), std::string("[::1]:1")}) {
    EXPECT_THAT(post(host), StartsWith("HTTP/1.1 200")) << host;
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> extra,
                       StartServer("", {"--mode", "replay", "--scenario", Path("answer.yaml"),
                                        "--allow-host", "understudy.internal"}));
  absl::StatusOr<std::string> allowed = SendRaw(
      extra->http_address(),
      absl::StrCat("POST /v1/chat/completions HTTP/1.1\r\nHost: understudy.internal\r\n"
                   "content-type: application/json\r\ncontent-length: ",
                   body.size(), "\r\nconnection: close\r\n\r\n", body));
  ASSERT_OK(allowed.status());
  EXPECT_THAT(*allowed, StartsWith("HTTP/1.1 200"));
}

TEST_F(AccessTest, ARequestTrickledInByteByByteMeetsItsDeadline) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--request-timeout", "1"}));
  ASSERT_OK_AND_ASSIGN(int fd, ConnectTcp(server->http_address()));
  // A byte every 100 ms, each well inside the idle timeout: the request as a
  // whole is what must arrive in time.
  const std::string header = "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nx-slow: ";
  const absl::Time start = absl::Now();
  std::string got;
  for (size_t i = 0; i < 200 && got.empty(); ++i) {
    const char c = i < header.size() ? header[i] : 'a';
    if (::send(fd, &c, 1, MSG_NOSIGNAL) != 1) break;
    absl::SleepFor(absl::Milliseconds(100));
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) got.assign(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  EXPECT_THAT(got, AllOf(StartsWith("HTTP/1.1 408"), HasSubstr("did not arrive whole")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace e2e
}  // namespace understudy
