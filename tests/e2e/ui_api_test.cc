// The web UI's routes on the real binary (service/ui_api.h, docs/ui.md):
// every /api/v1 route against a recorded three-agent run, compared with
// what the gRPC services answer; errors (unknown run, bad parameters, a
// broken spec, too large a body, wrong method, --ui=false); the page's files
// with their types and CSP; a live watch over server-sent events; watchers
// that never read; recorded HTML coming back as the same text.
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/e2e_test_base.h"

namespace understudy {
namespace e2e {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;

using Json = nlohmann::json;

constexpr char kCsp[] =
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

// What a recorded answer may hold that a page must show as text.
constexpr char kHostileText[] = "<script>alert(1)</script><img src=x onerror=alert(2)> & \"q\"";

struct Reply {
  int status = 0;
  // Names lower-cased.
  std::map<std::string, std::string> headers;
  std::string body;

  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  Json json() const { return Json::parse(body, nullptr, /*allow_exceptions=*/false); }
};

// The body of a chunked answer, decoded as far as it has arrived; `complete`
// says whether the last chunk came.
std::string Dechunk(absl::string_view raw, bool* complete) {
  std::string out;
  *complete = false;
  while (true) {
    const size_t eol = raw.find("\r\n");
    if (eol == absl::string_view::npos) return out;
    size_t size = 0;
    if (!absl::SimpleHexAtoi(raw.substr(0, eol), &size)) return out;
    if (size == 0) {
      *complete = true;
      return out;
    }
    if (raw.size() < eol + 2 + size + 2) return out;
    absl::StrAppend(&out, raw.substr(eol + 2, size));
    raw.remove_prefix(eol + 2 + size + 2);
  }
}

// Splits an HTTP answer into status, headers and (decoded) body.
Reply ParseReply(const std::string& raw, bool* complete = nullptr) {
  Reply reply;
  const size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return reply;
  std::vector<std::string> lines = absl::StrSplit(raw.substr(0, end), "\r\n");
  if (lines.empty()) return reply;
  std::vector<std::string> status_line = absl::StrSplit(lines[0], ' ');
  if (status_line.size() >= 2) (void)absl::SimpleAtoi(status_line[1], &reply.status);
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    reply.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  const std::string rest = raw.substr(end + 4);
  bool done = true;
  if (reply.Header("transfer-encoding") == "chunked") {
    reply.body = Dechunk(rest, &done);
  } else {
    reply.body = rest;
  }
  if (complete != nullptr) *complete = done;
  return reply;
}

std::string RequestBytes(const std::string& method, const std::string& target,
                         const std::string& body, const std::vector<std::string>& headers,
                         bool close = true) {
  std::string request = absl::StrCat(method, " ", target, " HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  for (const std::string& h : headers) absl::StrAppend(&request, h, "\r\n");
  if (!body.empty() || method == "POST") {
    absl::StrAppend(&request, "content-length: ", body.size(), "\r\n");
  }
  absl::StrAppend(&request, close ? "connection: close\r\n" : "", "\r\n", body);
  return request;
}

// One request on its own connection, answered whole.
Reply Http(const std::string& address, const std::string& method, const std::string& target,
           const std::string& body = "", const std::vector<std::string>& headers = {}) {
  absl::StatusOr<std::string> raw =
      SendRaw(address, RequestBytes(method, target, body, headers), absl::Seconds(10));
  EXPECT_TRUE(raw.ok()) << raw.status();
  return raw.ok() ? ParseReply(*raw) : Reply();
}

Reply Get(const std::string& address, const std::string& target,
          const std::vector<std::string>& headers = {}) {
  return Http(address, "GET", target, "", headers);
}

struct SseFrame {
  std::string id;
  std::string event;
  std::string data;
};

// One parsed frame: `block` is the text of a frame without its blank line.
bool ParseFrame(absl::string_view block, SseFrame* frame) {
  bool any = false;
  for (absl::string_view line : absl::StrSplit(block, '\n')) {
    if (absl::ConsumePrefix(&line, "id: ")) frame->id = std::string(line), any = true;
    if (absl::ConsumePrefix(&line, "event: ")) frame->event = std::string(line), any = true;
    if (absl::ConsumePrefix(&line, "data: ")) frame->data = std::string(line), any = true;
  }
  return any && !frame->event.empty();
}

// A server-sent event stream read as it arrives, parsed as it comes (a
// stream may carry tens of MiB).
class SseStream {
 public:
  // `receive_buffer` > 0 shrinks the socket's receive buffer (for clients
  // that stop reading).
  static std::unique_ptr<SseStream> Open(const std::string& address, const std::string& target,
                                         const std::vector<std::string>& headers = {},
                                         int receive_buffer = 0) {
    absl::StatusOr<int> fd = ConnectTcp(address);
    EXPECT_TRUE(fd.ok()) << fd.status();
    if (!fd.ok()) return nullptr;
    if (receive_buffer > 0) {
      ::setsockopt(*fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    }
    const std::string request = RequestBytes("GET", target, "", headers);
    EXPECT_EQ(::send(*fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    return std::unique_ptr<SseStream>(new SseStream(*fd));
  }
  ~SseStream() { ::close(fd_); }

  // Reads until `done()` holds (true), or the connection closes or
  // `timeout` passes first (false).
  bool ReadUntil(const std::function<bool()>& done, absl::Duration timeout = absl::Seconds(10)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (true) {
      Advance();
      if (done()) return true;
      if (closed_ || absl::Now() >= deadline) return false;
      pollfd p{fd_, POLLIN, 0};
      const int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now())) + 1;
      if (::poll(&p, 1, ms) <= 0) continue;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        closed_ = true;
      } else {
        raw_.append(buf, static_cast<size_t>(n));
      }
    }
  }
  // Reads until a frame of `event` with `id` (any id when empty) arrived.
  bool ReadUntilFrame(const std::string& event, const std::string& id = "") {
    return ReadUntil([&] {
      for (const SseFrame& f : frames_) {
        if (f.event == event && (id.empty() || f.id == id)) return true;
      }
      return false;
    });
  }
  // Reads until the server ends the stream.
  bool ReadToEnd() {
    return ReadUntil([&] { return complete_; });
  }

  // Status and headers (the body is in frames() and body()).
  const Reply& reply() const { return head_; }
  const std::string& body() const { return body_; }
  const std::vector<SseFrame>& frames() const { return frames_; }
  // The last chunk came (the server ended the stream).
  bool complete() const { return complete_; }

 private:
  explicit SseStream(int fd) : fd_(fd) {}

  // Parses what arrived since the last call.
  void Advance() {
    if (!head_read_) {
      const size_t end = raw_.find("\r\n\r\n");
      if (end == std::string::npos) return;
      head_ = ParseReply(raw_.substr(0, end + 4));
      raw_.erase(0, end + 4);
      head_read_ = true;
    }
    // Chunks, as far as they have arrived.
    while (!complete_) {
      const size_t eol = raw_.find("\r\n");
      if (eol == std::string::npos) break;
      size_t size = 0;
      if (!absl::SimpleHexAtoi(raw_.substr(0, eol), &size)) break;
      if (size == 0) {
        complete_ = true;
        break;
      }
      if (raw_.size() < eol + 2 + size + 2) break;
      body_.append(raw_, eol + 2, size);
      raw_.erase(0, eol + 2 + size + 2);
    }
    // Whole frames.
    while (true) {
      const size_t end = body_.find("\n\n", parsed_);
      if (end == std::string::npos) break;
      SseFrame frame;
      if (ParseFrame(absl::string_view(body_).substr(parsed_, end - parsed_), &frame)) {
        frames_.push_back(std::move(frame));
      }
      parsed_ = end + 2;
    }
  }

  int fd_;
  std::string raw_;  // received, not yet parsed
  bool head_read_ = false;
  Reply head_;
  std::string body_;
  size_t parsed_ = 0;  // of body_, into frames_
  std::vector<SseFrame> frames_;
  bool complete_ = false;
  bool closed_ = false;
};

// Protobuf's JSON mapping of `message` as the API prints it, parsed.
Json ProtoJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string text;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(message, &text, options).ok());
  return Json::parse(text);
}

std::string ReadSource(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class UiApiTest : public E2eTest {
 protected:
  // A replay run answering everything with `content`.
  absl::StatusOr<v1::Run> StartScriptedRun(Clients& c, const std::string& content,
                                           const std::string& id = "") {
    v1::StartRunRequest request;
    request.set_mode(v1::RUN_MODE_REPLAY);
    request.set_run_id(id);
    request.set_scenario_text(absl::StrCat(
        "schema: understudy.scenario/v1\ndefault: {respond: {content: ", Json(content).dump(),
        "}}\n"));
    return StartRun(c, request);
  }

  absl::Status Emit(Clients& c, const std::string& run, const std::string& kind,
                    const std::string& value = "x") {
    v1::EmitRequest emit;
    emit.set_run(run);
    emit.set_kind(kind);
    (*emit.mutable_attributes())["v"] = value;
    v1::TraceEvent out;
    auto context = CallContext();
    return FromGrpc(c.traces->Emit(context.get(), emit, &out));
  }

  // The run's whole trace as the gRPC Traces.Query serves it, as JSON.
  Json TraceJson(Clients& c, const std::string& run) {
    absl::StatusOr<std::vector<v1::TraceEvent>> events = QueryTrace(c, run);
    EXPECT_TRUE(events.ok()) << events.status();
    Json all = Json::array();
    if (events.ok()) {
      for (const v1::TraceEvent& e : *events) all.push_back(ProtoJson(e));
    }
    return all;
  }

  void ExpectNotFoundNaming(const Reply& r, const std::string& what) {
    EXPECT_EQ(r.status, 404) << r.body;
    EXPECT_EQ(r.Header("content-type"), "application/json");
    EXPECT_EQ(r.json()["error"]["code"], "NOT_FOUND") << r.body;
    EXPECT_THAT(r.json()["error"]["message"].get<std::string>(), HasSubstr(what)) << r.body;
  }

  void ExpectBadParameter(const Reply& r, const std::string& parameter) {
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "INVALID_ARGUMENT") << r.body;
    EXPECT_THAT(r.json()["error"]["message"].get<std::string>(), StartsWith(parameter + ": "))
        << r.body;
  }
};

TEST_F(UiApiTest, EveryRouteServesARecordedThreeAgentRunAsTheGrpcServicesDo) {
  std::vector<StepResult> steps;
  std::string run;
  RecordGolden("golden", &steps, &run);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  const std::string http = server->http_address();

  // Sessions: every version, with exchange counts and agents.
  Reply sessions = Get(http, "/api/v1/sessions");
  ASSERT_EQ(sessions.status, 200) << sessions.body;
  EXPECT_EQ(sessions.Header("content-type"), "application/json");
  {
    v1::ListSessionsRequest request;
    v1::ListSessionsResponse expected;
    auto context = CallContext();
    ASSERT_OK(FromGrpc(c.sessions->ListSessions(context.get(), request, &expected)));
    EXPECT_EQ(sessions.json(), ProtoJson(expected));
  }
  ASSERT_THAT(sessions.json()["sessions"], SizeIs(1));
  const Json session = sessions.json()["sessions"][0];
  EXPECT_EQ(session["name"], "golden");
  EXPECT_EQ(session["exchangeCount"], "6");
  EXPECT_EQ(session["agents"], Json({"orchestrator", "executor", "reviewer"}));

  // One session with its exchanges.
  Reply one = Get(http, "/api/v1/sessions/golden");
  ASSERT_EQ(one.status, 200) << one.body;
  ASSERT_OK_AND_ASSIGN(v1::GetSessionResponse golden, GetSession(c, "golden"));
  EXPECT_EQ(one.json(), ProtoJson(golden));
  EXPECT_THAT(one.json()["exchanges"], SizeIs(6));
  EXPECT_EQ(Get(http, "/api/v1/sessions/golden?version=1").json(), ProtoJson(golden));

  // Runs, newest first; of one session; one run.
  Reply runs = Get(http, "/api/v1/runs");
  ASSERT_EQ(runs.status, 200) << runs.body;
  ASSERT_THAT(runs.json()["runs"], SizeIs(1));
  const Json listed = runs.json()["runs"][0];
  EXPECT_EQ(listed["id"], run);
  EXPECT_EQ(listed["mode"], "RUN_MODE_RECORD");
  EXPECT_EQ(listed["state"], "RUN_STATE_ENDED");
  EXPECT_EQ(listed["recorded"], "6");
  EXPECT_EQ(listed["misses"], "0");
  EXPECT_EQ(Get(http, "/api/v1/runs?session=golden").json(), runs.json());
  EXPECT_EQ(Get(http, "/api/v1/runs?session=golden%401").json(), runs.json());
  ASSERT_OK_AND_ASSIGN(v1::Run replay, StartScriptedRun(c, "hi", "newer"));
  Reply both = Get(http, "/api/v1/runs");
  ASSERT_THAT(both.json()["runs"], SizeIs(2));
  EXPECT_EQ(both.json()["runs"][0]["id"], "newer");
  EXPECT_EQ(both.json()["runs"][0]["state"], "RUN_STATE_ACTIVE");
  EXPECT_EQ(both.json()["runs"][1]["id"], run);
  EXPECT_THAT(Get(http, "/api/v1/runs?limit=1").json()["runs"], SizeIs(1));
  Reply got = Get(http, "/api/v1/runs/" + run);
  ASSERT_EQ(got.status, 200) << got.body;
  {
    v1::GetRunRequest request;
    request.set_run(run);
    v1::Run expected;
    auto context = CallContext();
    ASSERT_OK(FromGrpc(c.runs->GetRun(context.get(), request, &expected)));
    EXPECT_EQ(got.json(), ProtoJson(expected));
  }

  // Events: the whole trace, pages, kinds.
  const Json trace = TraceJson(c, run);
  Reply events = Get(http, absl::StrCat("/api/v1/runs/", run, "/events"));
  ASSERT_EQ(events.status, 200) << events.body;
  EXPECT_EQ(events.json()["events"], trace);
  EXPECT_EQ(events.json()["nextAfterSeq"], "0");
  std::vector<std::string> agents;
  const Json listed_events = events.json()["events"];
  for (const Json& e : listed_events) {
    if (e["kind"] == "exchange") agents.push_back(e["agent"]);
  }
  EXPECT_THAT(agents, ElementsAre("orchestrator", "executor", "reviewer", "orchestrator",
                                  "executor", "reviewer"));
  Reply page = Get(http, absl::StrCat("/api/v1/runs/", run, "/events?after_seq=2&limit=3"));
  ASSERT_EQ(page.status, 200) << page.body;
  ASSERT_THAT(page.json()["events"], SizeIs(3));
  EXPECT_EQ(page.json()["events"][0]["seq"], "3");
  EXPECT_EQ(page.json()["nextAfterSeq"], "5");
  Reply exchanges =
      Get(http, absl::StrCat("/api/v1/runs/", run, "/events?kinds=exchange,run_ended"));
  ASSERT_EQ(exchanges.status, 200) << exchanges.body;
  EXPECT_THAT(exchanges.json()["events"], SizeIs(7));

  // Assertions: each check's verdict, a failed one pointing at events.
  Reply verdict = Http(http, "POST", absl::StrCat("/api/v1/runs/", run, "/assert"),
                       "assertions:\n"
                       "  - agent_sequence: [orchestrator, executor, reviewer, orchestrator, "
                       "executor, reviewer]\n"
                       "  - name: too many\n"
                       "    count: {select: {kind: exchange}, eq: 5}\n",
                       {"content-type: text/plain"});
  ASSERT_EQ(verdict.status, 200) << verdict.body;
  EXPECT_EQ(verdict.json()["passed"], false);
  ASSERT_THAT(verdict.json()["results"], SizeIs(2));
  EXPECT_EQ(verdict.json()["results"][0]["passed"], true);
  EXPECT_EQ(verdict.json()["results"][1]["name"], "too many");
  EXPECT_EQ(verdict.json()["results"][1]["passed"], false);
  EXPECT_THAT(verdict.json()["results"][1]["eventSeqs"], SizeIs(6));

  // A watch of an ended run: the stored events, then the end, at once.
  std::unique_ptr<SseStream> watch =
      SseStream::Open(http, absl::StrCat("/api/v1/runs/", run, "/watch"));
  ASSERT_NE(watch, nullptr);
  ASSERT_TRUE(watch->ReadToEnd()) << watch->body();
  EXPECT_EQ(watch->reply().status, 200);
  EXPECT_EQ(watch->reply().Header("content-type"), "text/event-stream");
  std::vector<SseFrame> frames = watch->frames();
  ASSERT_EQ(frames.size(), trace.size() + 1);
  for (size_t i = 0; i < trace.size(); ++i) {
    EXPECT_EQ(frames[i].event, "trace");
    EXPECT_EQ(frames[i].id, trace[i]["seq"]);
    EXPECT_EQ(Json::parse(frames[i].data), trace[i]);
  }
  EXPECT_EQ(frames.back().event, "end");
  EXPECT_EQ(frames.back().data, "{}");
}

TEST_F(UiApiTest, AnUnknownRunOrSessionIsNotFoundNamingIt) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  const std::string http = server->http_address();
  for (const std::string& target :
       {std::string("/api/v1/runs/no-such-run"), std::string("/api/v1/runs/no-such-run/events"),
        std::string("/api/v1/runs/no-such-run/watch")}) {
    ExpectNotFoundNaming(Get(http, target), "run \"no-such-run\" not found");
  }
  ExpectNotFoundNaming(
      Http(http, "POST", "/api/v1/runs/no-such-run/assert", "assertions:\n  - no_misses: true\n"),
      "run \"no-such-run\" not found");
  // Names are percent-decoded.
  ExpectNotFoundNaming(Get(http, "/api/v1/runs/a%20b"), "run \"a b\" not found");
  ExpectNotFoundNaming(Get(http, "/api/v1/sessions/nope"), "session \"nope\" not found");
  ExpectNotFoundNaming(Get(http, "/api/v1/runs?session=nope"), "session \"nope\" not found");
  ExpectNotFoundNaming(Get(http, "/api/v1/nothing"), "no route for GET /api/v1/nothing");
  ExpectNotFoundNaming(Get(http, "/api/v1"), "no route");
  ExpectNotFoundNaming(Get(http, "/api/v1/runs/x/nothing"), "no route");
}

TEST_F(UiApiTest, BadParametersAreRefusedNamingThem) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScriptedRun(c, "ok"));
  const std::string http = server->http_address();
  const std::string events = absl::StrCat("/api/v1/runs/", run.id(), "/events");
  ExpectBadParameter(Get(http, events + "?after_seq=-1"), "after_seq");
  ExpectBadParameter(Get(http, events + "?after_seq=abc"), "after_seq");
  ExpectBadParameter(Get(http, events + "?limit=0"), "limit");
  ExpectBadParameter(Get(http, events + "?limit=10001"), "limit");
  ExpectBadParameter(Get(http, events + "?limit=1e3"), "limit");
  ExpectBadParameter(Get(http, absl::StrCat("/api/v1/runs/", run.id(), "/watch?after_seq=x")),
                     "after_seq");
  ExpectBadParameter(Get(http, "/api/v1/runs?limit=-5"), "limit");
  ExpectBadParameter(Get(http, "/api/v1/sessions/x?version=v2"), "version");
  Reply unknown = Get(http, events + "?after=3");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(unknown.json()["error"]["message"],
            "unknown parameter \"after\"; this route takes after_seq, limit, kinds");
  ExpectBadParameter(Get(http, "/api/v1/runs/%zz"), "path");
  ExpectBadParameter(Get(http, "/api/v1/runs/%ff"), "path");
  ExpectBadParameter(Get(http, "/api/v1/runs?session=%E2%82"), "session");
  // Limits as given are kept.
  EXPECT_EQ(Get(http, events + "?limit=10000&after_seq=0").status, 200);
}

TEST_F(UiApiTest, ASpecWithASyntaxErrorIsRefusedWithTheLineOfTheError) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScriptedRun(c, "ok"));
  const std::string target = absl::StrCat("/api/v1/runs/", run.id(), "/assert");
  Reply broken = Http(server->http_address(), "POST", target,
                      "assertions:\n  - no_misses: true\n  - count: {select: [kind\n");
  EXPECT_EQ(broken.status, 400) << broken.body;
  EXPECT_EQ(broken.json()["error"]["code"], "INVALID_ARGUMENT");
  EXPECT_THAT(broken.json()["error"]["message"].get<std::string>(),
              AllOf(StartsWith("spec:"), HasSubstr("error:")));
  // The line of the error: the unclosed flow sequence ends the document.
  EXPECT_THAT(broken.json()["error"]["message"].get<std::string>(), HasSubstr("spec:4:"));
  Reply misspelt =
      Http(server->http_address(), "POST", target, "assertions:\n  - no_mises: true\n");
  EXPECT_EQ(misspelt.status, 400);
  EXPECT_THAT(misspelt.json()["error"]["message"].get<std::string>(),
              AllOf(HasSubstr("spec:2:"), HasSubstr("no_misses")));
  Reply empty = Http(server->http_address(), "POST", target, "");
  EXPECT_EQ(empty.status, 400) << empty.body;
}

TEST_F(UiApiTest, APostBodyTooLargeIs413) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--max-body-bytes", "2000000"}));
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScriptedRun(c, "ok"));
  const std::string target = absl::StrCat("/api/v1/runs/", run.id(), "/assert");
  // Over the largest spec read.
  Reply big = Http(server->http_address(), "POST", target,
                   absl::StrCat("assertions:\n  - no_misses: true\n#", std::string(1 << 20, 'x')));
  EXPECT_EQ(big.status, 413) << big.body;
  EXPECT_EQ(big.json()["error"]["code"], "RESOURCE_EXHAUSTED");
  EXPECT_THAT(big.json()["error"]["message"].get<std::string>(), StartsWith("body: "));
  // Over the listener's own bound: the same error shape.
  Reply huge = Http(server->http_address(), "POST", target, std::string(2100000, 'x'));
  EXPECT_EQ(huge.status, 413) << huge.body;
  EXPECT_EQ(huge.json()["error"]["code"], "RESOURCE_EXHAUSTED") << huge.body;
}

TEST_F(UiApiTest, AWrongMethodIs405WithTheAllowedOnes) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  const std::string http = server->http_address();
  Reply put = Http(http, "PUT", "/api/v1/sessions", "{}");
  EXPECT_EQ(put.status, 405);
  EXPECT_EQ(put.Header("allow"), "GET");
  EXPECT_EQ(put.json()["error"]["code"], "METHOD_NOT_ALLOWED");
  Reply get_assert = Get(http, "/api/v1/runs/x/assert");
  EXPECT_EQ(get_assert.status, 405);
  EXPECT_EQ(get_assert.Header("allow"), "POST");
  Reply post_run = Http(http, "POST", "/api/v1/runs/x", "");
  EXPECT_EQ(post_run.status, 405);
  Reply delete_page = Http(http, "DELETE", "/ui/", "");
  EXPECT_EQ(delete_page.status, 405);
  EXPECT_EQ(delete_page.Header("allow"), "GET, HEAD");
}

TEST_F(UiApiTest, UiFalseTurnsThePageAndTheApiOff) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer("", {"--ui=false"}));
  const std::string http = server->http_address();
  for (const std::string& target :
       {std::string("/ui"), std::string("/ui/"), std::string("/ui/app.js"),
        std::string("/api/v1/sessions"), std::string("/api/v1/runs"), std::string("/api/v1")}) {
    Reply r = Get(http, target);
    EXPECT_EQ(r.status, 404) << target;
    EXPECT_THAT(r.body, HasSubstr("--ui=false")) << target;
  }
  // The rest of the listener is unchanged.
  EXPECT_EQ(Get(http, "/v1/models").status, 200);
  // And on by default.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> on, StartServer());
  EXPECT_EQ(Get(on->http_address(), "/ui/").status, 200);
  EXPECT_EQ(Get(on->http_address(), "/api/v1/sessions").status, 200);
}

TEST_F(UiApiTest, PageFilesComeWithTheirTypesNoCacheAndAStrictCsp) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  const std::string http = server->http_address();
  const std::string index = ReadSource(absl::StrCat(UNDERSTUDY_UI_DIR, "/index.html"));
  ASSERT_FALSE(index.empty());
  struct Case {
    std::string target;
    std::string file;
    std::string type;
  };
  for (const Case& f : {Case{"/ui", "index.html", "text/html; charset=utf-8"},
                        Case{"/ui/", "index.html", "text/html; charset=utf-8"},
                        Case{"/ui/?x=1", "index.html", "text/html; charset=utf-8"},
                        Case{"/ui/index.html", "index.html", "text/html; charset=utf-8"},
                        Case{"/ui/app.js", "app.js", "text/javascript; charset=utf-8"},
                        Case{"/ui/app.css", "app.css", "text/css; charset=utf-8"}}) {
    Reply r = Get(http, f.target);
    EXPECT_EQ(r.status, 200) << f.target;
    EXPECT_EQ(r.Header("content-type"), f.type) << f.target;
    EXPECT_EQ(r.Header("content-security-policy"), kCsp) << f.target;
    EXPECT_EQ(r.Header("cache-control"), "no-cache") << f.target;
    EXPECT_EQ(r.Header("x-content-type-options"), "nosniff") << f.target;
    EXPECT_TRUE(r.body == ReadSource(absl::StrCat(UNDERSTUDY_UI_DIR, "/", f.file)))
        << f.target << ": not the bytes of ui/" << f.file;
  }
  ExpectNotFoundNaming(Get(http, "/ui/nope.js"), "no file /ui/nope.js");
  ExpectNotFoundNaming(Get(http, "/ui/../cli/main.cc"), "no file");
  // Neither a page file nor the API: the provider API's 404.
  EXPECT_EQ(Get(http, "/uix").status, 404);
}

TEST_F(UiApiTest, TheRoutesObeyTheTokenAndRefuseOtherOrigins) {
  const std::string token_file = Path("token");
  WriteFile(token_file, "ui-test-token-0123456789abcdef\n");
  ::chmod(token_file.c_str(), 0600);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       StartServer("", {"--auth-token-file", token_file}));
  const std::string http = server->http_address();
  EXPECT_EQ(Get(http, "/api/v1/sessions").status, 401);
  EXPECT_EQ(Get(http, "/ui/").status, 401);
  const std::string bearer = "authorization: Bearer ui-test-token-0123456789abcdef";
  EXPECT_EQ(Get(http, "/api/v1/sessions", {bearer}).status, 200);
  EXPECT_EQ(Get(http, "/ui/", {bearer}).status, 200);
  // A page from elsewhere may not read or drive the API.
  Reply other = Get(http, "/api/v1/sessions", {bearer, "origin: http://evil.example"});
  EXPECT_EQ(other.status, 403);
  EXPECT_THAT(other.json()["error"]["message"].get<std::string>(), HasSubstr("evil.example"));
  EXPECT_EQ(Http(http, "POST", "/api/v1/runs/x/assert", "assertions: []", {bearer, "origin: null"})
                .status,
            403);
  EXPECT_EQ(Get(http, "/api/v1/sessions", {bearer, "origin: http://127.0.0.1"}).status, 200);
}

TEST_F(UiApiTest, AWatchOfAnActiveRunGetsLiveEventsThenTheEnd) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScriptedRun(c, "ok"));
  const std::string http = server->http_address();
  std::unique_ptr<SseStream> watch =
      SseStream::Open(http, absl::StrCat("/api/v1/runs/", run.id(), "/watch?after_seq=0"));
  ASSERT_NE(watch, nullptr);
  // The stored event first (run_started, seq 1).
  ASSERT_TRUE(watch->ReadUntilFrame("trace", "1")) << watch->body();
  EXPECT_EQ(watch->reply().Header("content-type"), "text/event-stream");
  EXPECT_EQ(watch->reply().Header("cache-control"), "no-cache");
  // Then each event as it happens.
  ASSERT_OK(Emit(c, run.id(), "custom.first"));
  ASSERT_TRUE(watch->ReadUntilFrame("trace", "2")) << watch->body();
  ASSERT_OK(Complete(c, run.id(), "executor", UserRequest("go")).status());
  // agent_execution (3), then the exchange (4).
  ASSERT_TRUE(watch->ReadUntilFrame("trace", "4")) << watch->body();
  EXPECT_FALSE(watch->complete());
  // The run ends: run_ended, then the end event, then the stream ends.
  ASSERT_OK(EndRun(c, run.id()).status());
  ASSERT_TRUE(watch->ReadToEnd()) << watch->body();
  std::vector<SseFrame> frames = watch->frames();
  std::vector<std::string> kinds;
  for (const SseFrame& f : frames) {
    kinds.push_back(f.event == "trace" ? Json::parse(f.data)["kind"].get<std::string>()
                                       : "(" + f.event + ")");
  }
  EXPECT_THAT(kinds, ElementsAre("run_started", "custom.first", "agent_execution", "exchange",
                                 "run_ended", "(end)"));
  ASSERT_THAT(frames, SizeIs(6));
  EXPECT_EQ(Json::parse(frames[3].data)["agent"], "executor");
  EXPECT_EQ(frames[5].data, "{}");
  // Every event once, in order, as stored.
  const Json trace = TraceJson(c, run.id());
  ASSERT_EQ(trace.size(), 5u);
  for (size_t i = 0; i < trace.size(); ++i) {
    EXPECT_EQ(frames[i].id, trace[i]["seq"]);
    EXPECT_EQ(Json::parse(frames[i].data), trace[i]);
  }

  // An EventSource that reconnects resumes after Last-Event-ID.
  std::unique_ptr<SseStream> resumed = SseStream::Open(
      http, absl::StrCat("/api/v1/runs/", run.id(), "/watch"), {"last-event-id: 3"});
  ASSERT_TRUE(resumed->ReadToEnd()) << resumed->body();
  frames = resumed->frames();
  ASSERT_THAT(frames, SizeIs(3));
  EXPECT_EQ(frames[0].id, "4");
  EXPECT_EQ(frames[2].event, "end");
}

TEST_F(UiApiTest, WatchersThatNeverReadDoNotGrowTheServer) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  // AddressSanitizer keeps freed memory in a quarantine (256 MiB by
  // default) and the 60 MiB of events below pass through several copies:
  // RSS would measure the quarantine. A small one leaves what the server
  // holds.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string options = absl::StrCat(asan == nullptr ? "" : asan, asan == nullptr ? "" : ":",
                                           "quarantine_size_mb=4:allocator_release_to_os_interval_ms=0");
  ::setenv("ASAN_OPTIONS", options.c_str(), 1);
#endif
#endif
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScriptedRun(c, "ok"));
  const std::string http = server->http_address();
  const std::string target = absl::StrCat("/api/v1/runs/", run.id(), "/watch");
  const int64_t before = RssMiB(server->pid());
  // 8 watchers with small receive buffers ask, read the head, then never
  // read again while 60 MiB of events happen: held for them, that would be
  // 480 MiB, and more as the run goes on. Each may cost the server its
  // bounds (the listener's queued bytes per connection, the feed's), then
  // it is dropped.
  constexpr int kWatchers = 8;
  constexpr int kEvents = 120;
  std::vector<std::unique_ptr<SseStream>> watchers;
  for (int i = 0; i < kWatchers; ++i) {
    std::unique_ptr<SseStream> w = SseStream::Open(http, target, {}, 4096);
    ASSERT_NE(w, nullptr);
    ASSERT_TRUE(w->ReadUntilFrame("trace", "1"));
    watchers.push_back(std::move(w));
  }
  const std::string value(512 << 10, 'v');
  for (int i = 0; i < kEvents; ++i) ASSERT_OK(Emit(c, run.id(), "custom.big", value));
  // A client that reads gets every event (run_started, then the rest),
  // resuming as EventSource does when the server drops it for falling
  // behind: once it has them all, so have the watchers' feeds.
  const std::string last = absl::StrCat(kEvents + 1);
  std::string last_id = "0";
  std::vector<std::string> ids;
  for (int attempt = 0; attempt < 100 && last_id != last; ++attempt) {
    std::unique_ptr<SseStream> reader =
        SseStream::Open(http, target, {absl::StrCat("last-event-id: ", last_id)});
    reader->ReadUntil([&] {
      return reader->complete() ||
             (!reader->frames().empty() && reader->frames().back().id == last);
    });
    for (const SseFrame& f : reader->frames()) {
      ids.push_back(f.id);
      last_id = f.id;
    }
  }
  ASSERT_THAT(ids, SizeIs(kEvents + 1));
  for (int i = 0; i <= kEvents; ++i) EXPECT_EQ(ids[i], absl::StrCat(i + 1));
  const int64_t after = RssMiB(server->pid());
  std::cout << kWatchers << " watchers not reading " << kEvents / 2 << " MiB of events: RSS "
            << before << " -> " << after << " MiB\n";
  EXPECT_LT(after - before, 200) << "before " << before << " MiB, after " << after << " MiB";
  watchers.clear();
  // Still serving, the API included.
  EXPECT_EQ(Get(http, "/api/v1/runs/" + run.id()).status, 200);
  ASSERT_OK(Complete(c, run.id(), "", UserRequest("ping")).status());
}

TEST_F(UiApiTest, RecordedHtmlComesBackAsTheSameText) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_OK_AND_ASSIGN(v1::Run run, StartScriptedRun(c, kHostileText));
  ASSERT_OK_AND_ASSIGN(v1::CompletionResponse answer,
                       Complete(c, run.id(), "reviewer", UserRequest(kHostileText)));
  ASSERT_EQ(answer.message().content(), kHostileText);
  Reply events = Get(server->http_address(),
                     absl::StrCat("/api/v1/runs/", run.id(), "/events?kinds=exchange"));
  ASSERT_EQ(events.status, 200) << events.body;
  const Json parsed = events.json();
  ASSERT_FALSE(parsed.is_discarded()) << events.body;
  ASSERT_THAT(parsed["events"], SizeIs(1));
  EXPECT_EQ(parsed["events"][0]["response"]["message"]["content"], kHostileText);
  EXPECT_EQ(parsed["events"][0]["request"]["messages"][0]["content"], kHostileText);
}

}  // namespace
}  // namespace e2e
}  // namespace understudy
