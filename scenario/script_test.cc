#include "scenario/script.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "provider/chunks.h"

namespace understudy {
namespace scenario {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const Script> MustScript(const std::string& body) {
  absl::StatusOr<std::shared_ptr<const Script>> s =
      Script::Load("", absl::StrCat("schema: understudy.scenario/v1\n", body));
  if (!s.ok()) {
    ADD_FAILURE() << s.status();
    return *Script::FromScenario(Scenario());
  }
  return *s;
}

v1::CompletionRequest Request(const std::string& system, const std::string& user) {
  v1::CompletionRequest r;
  r.set_model("m1");
  if (!system.empty()) {
    v1::Message* m = r.add_messages();
    m->set_role("system");
    m->set_content(system);
  }
  v1::Message* m = r.add_messages();
  m->set_role("user");
  m->set_content(user);
  return r;
}

TEST(ScriptLoadTest, NeedsExactlyOneSource) {
  EXPECT_THAT(Script::Load("", "").status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Script::Load("rate-limit", "schema: x").status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ScriptLoadTest, InvalidTextCarriesTheReport) {
  auto s = Script::Load("", "schema: understudy.scenario/v1\nrules:\n  - name: a\n    when: {agnet: x}\n"
                            "    respond: {content: hi}\n");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("rules[0].when.agnet"));
  EXPECT_THAT(s.status().message(), HasSubstr("did you mean \"agent\""));
}

TEST(ScriptLoadTest, PacksLoadByName) {
  for (const char* pack : {"error-handling", "rate-limit", "network-resilience", "slow-stream"}) {
    auto s = Script::Load(pack, "");
    ASSERT_TRUE(s.ok()) << pack << ": " << s.status();
    EXPECT_EQ((*s)->label(), pack);
  }
  EXPECT_THAT(Script::Load("no-such-pack", "").status(), StatusIs(absl::StatusCode::kNotFound));
}

TEST(ScriptTest, AgentForMatchesTheSystemPromptInOrder) {
  auto script = MustScript(R"(
agents:
  - {name: executor, system_prompt: 'You are the executor'}
  - {name: reviewer, system_prompt: '(?i)you review'}
  - {name: catchall, system_prompt: 'You'}
)");
  EXPECT_EQ(script->AgentFor(Request("You are the executor. Be brief.", "go")), "executor");
  EXPECT_EQ(script->AgentFor(Request("As a bot, YOU REVIEW code.", "go")), "reviewer");
  EXPECT_EQ(script->AgentFor(Request("You plan.", "go")), "catchall");
  EXPECT_EQ(script->AgentFor(Request("", "You are the executor")), "");
}

TEST(ResolveStepTest, SequenceCyclesAndNests) {
  auto script = MustScript(R"(
rules:
  - name: r
    sequence:
      - error: {http_status: 500}
      - fail_then_succeed:
          failures: 1
          error: {http_status: 503}
          then: {respond: {content: ok}}
      - delay: {ms: 5}
)");
  const Action& action = script->rules().rules()[0].action;
  std::vector<std::string> seen;
  for (int use = 1; use <= 7; ++use) {
    Step step = ResolveStep(action, use);
    seen.push_back(step.path);
  }
  // Uses 1,4,7 → step 0; 2,5 → step 1 (its 1st and 2nd use); 3,6 → step 2.
  EXPECT_THAT(seen, ::testing::ElementsAre("sequence[0]", "sequence[1].fail_then_succeed.error",
                                           "sequence[2]", "sequence[0]",
                                           "sequence[1].fail_then_succeed.then", "sequence[2]",
                                           "sequence[0]"));
  EXPECT_EQ(ResolveStep(action, 2).error->http_status, 503);
  EXPECT_EQ(ResolveStep(action, 5).kind, Step::Kind::kRespond);
  EXPECT_EQ(ResolveStep(action, 5).respond->content, "ok");
  EXPECT_EQ(ResolveStep(action, 3).delay->ms, 5);
}

TEST(ResolveStepTest, FailThenSucceedFailsExactlyNTimes) {
  auto script = MustScript(R"(
rules:
  - name: r
    fail_then_succeed:
      failures: 2
      error: {grpc_code: UNAVAILABLE}
      then: {respond: {content: recovered}}
)");
  const Action& action = script->rules().rules()[0].action;
  EXPECT_EQ(ResolveStep(action, 1).kind, Step::Kind::kError);
  EXPECT_EQ(ResolveStep(action, 2).kind, Step::Kind::kError);
  EXPECT_EQ(ResolveStep(action, 3).kind, Step::Kind::kRespond);
  EXPECT_EQ(ResolveStep(action, 9).kind, Step::Kind::kRespond);
}

TEST(RespondWithTest, BuildsTheAssistantAnswer) {
  auto script = MustScript(R"(
rules:
  - name: r
    respond:
      content: "Routing."
      tool_calls:
        - {name: continue, arguments: {phase: verification}}
        - {name: raw, arguments: '{"a":1}'}
      usage: {input_tokens: 12, output_tokens: 3}
)");
  const RespondAction& respond =
      *ResolveStep(script->rules().rules()[0].action, 1).respond;
  v1::CompletionResponse r = RespondWith(respond, Request("", "hi"), "understudy-7");
  EXPECT_EQ(r.id(), "understudy-7");
  EXPECT_EQ(r.model(), "m1");
  EXPECT_EQ(r.message().role(), "assistant");
  EXPECT_EQ(r.message().content(), "Routing.");
  ASSERT_EQ(r.message().tool_calls_size(), 2);
  EXPECT_EQ(r.message().tool_calls(0).id(), "call_understudy-7_0");
  EXPECT_EQ(r.message().tool_calls(0).name(), "continue");
  EXPECT_EQ(r.message().tool_calls(0).arguments(), R"({"phase":"verification"})");
  EXPECT_EQ(r.message().tool_calls(1).arguments(), R"({"a":1})");
  EXPECT_EQ(r.finish_reason(), "tool_calls");
  EXPECT_EQ(r.usage().input_tokens(), 12);
  EXPECT_EQ(r.usage().output_tokens(), 3);

  RespondAction plain;
  plain.content = "x";
  EXPECT_EQ(RespondWith(plain, Request("", "hi"), "i").finish_reason(), "stop");
  plain.finish_reason = "length";
  EXPECT_EQ(RespondWith(plain, Request("", "hi"), "i").finish_reason(), "length");
}

TEST(ChunksForTest, SplitsWordsAndReassembles) {
  RespondAction respond;
  respond.content = "one two  three";
  respond.tool_calls.push_back({"t", nlohmann::json::object({{"k", "v"}})});
  respond.usage = Usage{5, 6};
  v1::CompletionResponse r = RespondWith(respond, Request("", "hi"), "id");
  std::vector<v1::CompletionChunk> chunks = ChunksFor(r);
  ASSERT_EQ(chunks.size(), 6u);  // "one ", "two ", " ", "three", tool call, finish
  EXPECT_EQ(chunks[0].content(), "one ");
  EXPECT_EQ(chunks[2].content(), " ");
  EXPECT_EQ(chunks[3].content(), "three");
  EXPECT_EQ(chunks[4].tool_calls(0).name(), "t");
  EXPECT_EQ(chunks[5].finish_reason(), "tool_calls");
  google::protobuf::RepeatedPtrField<v1::CompletionChunk> field(chunks.begin(), chunks.end());
  v1::CompletionResponse back = provider::AssembleResponse(field);
  EXPECT_EQ(back.message().content(), r.message().content());
  EXPECT_EQ(back.message().tool_calls(0).arguments(), r.message().tool_calls(0).arguments());
  EXPECT_EQ(back.finish_reason(), "tool_calls");
  EXPECT_EQ(back.usage().output_tokens(), 6);
}

TEST(ChunksForTest, CapsThePieces) {
  RespondAction respond;
  for (int i = 0; i < 200; ++i) absl::StrAppend(&respond.content, "w ");
  std::vector<v1::CompletionChunk> chunks = ChunksFor(RespondWith(respond, Request("", "x"), "i"));
  EXPECT_EQ(chunks.size(), 65u);  // 64 content pieces and the finish
  std::string joined;
  for (const auto& c : chunks) joined += c.content();
  EXPECT_EQ(joined, respond.content);
}

TEST(ErrorStatusForTest, TheRetryDelayIsInTheMessage) {
  ErrorAction throttled;
  throttled.grpc_code = absl::StatusCode::kResourceExhausted;
  throttled.message = "Rate limit reached";
  throttled.retry_after_seconds = 1.5;
  EXPECT_EQ(ErrorStatusFor(throttled),
            absl::ResourceExhaustedError("Rate limit reached (retry after 1.5s)"));
  throttled.retry_after_seconds = 2;
  EXPECT_EQ(ErrorStatusFor(throttled).message(), "Rate limit reached (retry after 2s)");
}

TEST(ErrorStatusForTest, CodesAndStatuses) {
  ErrorAction http;
  http.http_status = 429;
  http.retry_after_seconds = 2;
  absl::Status s = ErrorStatusFor(http);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("HTTP 429"));
  EXPECT_EQ(HttpStatusFor(http), 429);

  ErrorAction grpc;
  grpc.grpc_code = absl::StatusCode::kUnavailable;
  grpc.message = "down";
  EXPECT_EQ(ErrorStatusFor(grpc), absl::UnavailableError("down"));
  EXPECT_EQ(HttpStatusFor(grpc), 503);

}

}  // namespace
}  // namespace scenario
}  // namespace understudy
