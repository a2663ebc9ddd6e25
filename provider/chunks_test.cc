#include "provider/chunks.h"

#include "gtest/gtest.h"

namespace understudy {
namespace provider {
namespace {

TEST(StreamTest, ParallelToolCallFragmentsAreJoinedPerIndex) {
  google::protobuf::RepeatedPtrField<v1::CompletionChunk> chunks;
  auto* c1 = chunks.Add();
  c1->set_id("resp-1");
  c1->set_model("m");
  auto* d = c1->add_tool_calls();
  d->set_index(1);
  d->set_id("call-b");
  d->set_name("read");
  d->set_arguments("{\"pa");
  d = c1->add_tool_calls();
  d->set_index(0);
  d->set_id("call-a");
  d->set_name("write");
  d->set_arguments("{}");
  auto* c2 = chunks.Add();
  d = c2->add_tool_calls();
  d->set_index(1);
  d->set_arguments("th\":1}");
  c2->set_finish_reason("tool_calls");
  c2->mutable_usage()->set_output_tokens(7);

  v1::CompletionResponse r = AssembleResponse(chunks);
  EXPECT_EQ(r.id(), "resp-1");
  EXPECT_EQ(r.finish_reason(), "tool_calls");
  EXPECT_EQ(r.usage().output_tokens(), 7);
  ASSERT_EQ(r.message().tool_calls_size(), 2);
  EXPECT_EQ(r.message().tool_calls(0).id(), "call-a");
  EXPECT_EQ(r.message().tool_calls(1).name(), "read");
  EXPECT_EQ(r.message().tool_calls(1).arguments(), "{\"path\":1}");
}

TEST(StreamTest, TextFragmentsConcatenateInOrder) {
  google::protobuf::RepeatedPtrField<v1::CompletionChunk> chunks;
  chunks.Add()->set_content("Hel");
  chunks.Add()->set_content("lo");
  chunks.Add()->set_finish_reason("stop");
  v1::CompletionResponse r = AssembleResponse(chunks);
  EXPECT_EQ(r.message().content(), "Hello");
  EXPECT_EQ(r.message().role(), "assistant");
}

TEST(StreamTest, ChunkFromResponseRoundTrips) {
  v1::CompletionResponse r;
  r.set_id("x");
  r.mutable_message()->set_role("assistant");
  r.mutable_message()->set_content("done");
  auto* call = r.mutable_message()->add_tool_calls();
  call->set_id("c");
  call->set_name("complete");
  call->set_arguments("{}");
  r.set_finish_reason("tool_calls");
  google::protobuf::RepeatedPtrField<v1::CompletionChunk> chunks;
  *chunks.Add() = ChunkFromResponse(r);
  EXPECT_EQ(AssembleResponse(chunks).SerializeAsString(), r.SerializeAsString());
}

}  // namespace
}  // namespace provider
}  // namespace understudy
