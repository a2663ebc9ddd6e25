// Replaying an exchange to a client of another API than the one it was
// recorded over: decode one provider's traffic to canonical chunks, render
// them for the other provider, decode that rendering, and compare the
// canonical answers.
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "provider/anthropic.h"
#include "provider/chunks.h"
#include "provider/openai.h"
#include "provider/test_fixtures.h"

namespace understudy {
namespace provider {
namespace {

using fixtures::Chunks;
using fixtures::DecodeAnthropicStream;
using fixtures::DecodeOpenAiStream;
using fixtures::Join;

TEST(CrossProviderTest, AnthropicStreamReplaysToAnOpenAiClient) {
  Chunks recorded = DecodeAnthropicStream(fixtures::kAnthropicToolStream);
  const std::string rendered =
      Join(openai::RenderStream(recorded, /*include_usage=*/true, 1727000002));
  Chunks replayed = DecodeOpenAiStream(rendered);
  EXPECT_EQ(provider::AssembleResponse(replayed).DebugString(),
            provider::AssembleResponse(recorded).DebugString());
}

TEST(CrossProviderTest, OpenAiParallelStreamReplaysToAnAnthropicClient) {
  Chunks recorded = DecodeOpenAiStream(fixtures::kOpenAiParallelStream);
  const std::string rendered = Join(anthropic::RenderStream(recorded));
  Chunks replayed = DecodeAnthropicStream(rendered);
  // The interleaved fragments come back grouped per tool, assembled equal.
  EXPECT_EQ(provider::AssembleResponse(replayed).DebugString(),
            provider::AssembleResponse(recorded).DebugString());
}

TEST(CrossProviderTest, ResponsesReplayAcrossProviders) {
  absl::StatusOr<v1::CompletionResponse> from_anthropic =
      anthropic::ParseResponse(fixtures::kAnthropicResponse);
  ASSERT_THAT(from_anthropic, IsOk());
  absl::StatusOr<v1::CompletionResponse> via_openai =
      openai::ParseResponse(openai::RenderResponse(*from_anthropic, 1));
  ASSERT_THAT(via_openai, IsOk());
  EXPECT_EQ(via_openai->DebugString(), from_anthropic->DebugString());

  absl::StatusOr<v1::CompletionResponse> from_openai =
      openai::ParseResponse(fixtures::kOpenAiResponse);
  ASSERT_THAT(from_openai, IsOk());
  absl::StatusOr<std::string> body = anthropic::RenderResponse(*from_openai);
  ASSERT_THAT(body, IsOk());
  absl::StatusOr<v1::CompletionResponse> via_anthropic = anthropic::ParseResponse(*body);
  ASSERT_THAT(via_anthropic, IsOk());
  EXPECT_EQ(via_anthropic->DebugString(), from_openai->DebugString());
}

TEST(CrossProviderTest, GrpcRecordedResponseStreamsToBothApis) {
  // An exchange recorded over gRPC: a whole response, no chunks.
  v1::CompletionResponse response;
  response.set_id("resp-1");
  response.set_model("m");
  response.mutable_message()->set_role("assistant");
  response.mutable_message()->set_content("Done.");
  v1::ToolCall* call = response.mutable_message()->add_tool_calls();
  call->set_id("c1");
  call->set_name("continue");
  call->set_arguments(R"({"phase":"verification"})");
  response.set_finish_reason("tool_calls");
  response.mutable_usage()->set_input_tokens(10);
  response.mutable_usage()->set_output_tokens(4);
  Chunks one;
  *one.Add() = provider::ChunkFromResponse(response);

  EXPECT_EQ(provider::AssembleResponse(DecodeOpenAiStream(Join(openai::RenderStream(one, true, 1))))
                .DebugString(),
            response.DebugString());
  EXPECT_EQ(provider::AssembleResponse(DecodeAnthropicStream(Join(anthropic::RenderStream(one))))
                .DebugString(),
            response.DebugString());
}

}  // namespace
}  // namespace provider
}  // namespace understudy
