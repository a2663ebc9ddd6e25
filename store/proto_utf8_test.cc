#include "store/proto_utf8.h"

#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {
namespace {

// Bytes a store written before UTF-8 checks could hold: proto3 strings with
// ill-formed UTF-8 (C++ serializes them, logging an error; nothing parses
// them back).
v1::Exchange BadExchange() {
  v1::Exchange e;
  e.set_seq(3);
  e.set_agent("exec\xFFutor");
  v1::Message* m = e.mutable_request()->add_messages();
  m->set_role("user");
  m->set_content("caf\xE9 au lait");
  e.mutable_response()->mutable_message()->set_content("fine");
  e.mutable_native()->set_response_body("\xFF\xFE raw bytes stay");
  return e;
}

TEST(FindInvalidUtf8FieldTest, NamesThePathOfTheFirstBadString) {
  EXPECT_EQ(FindInvalidUtf8Field(BadExchange()), "agent");
  v1::Exchange e = BadExchange();
  e.set_agent("executor");
  EXPECT_EQ(FindInvalidUtf8Field(e), "request.messages[0].content");
  e.mutable_request()->mutable_messages(0)->set_content("ok");
  EXPECT_EQ(FindInvalidUtf8Field(e), std::nullopt);  // bytes fields may hold anything

  v1::TraceEvent event;
  (*event.mutable_attributes())["gen_ai.tool.name"] = "ok";
  (*event.mutable_attributes())["k"] = "\xC3";
  EXPECT_EQ(FindInvalidUtf8Field(event), "attributes[\"k\"]");
}

TEST(ParseStoredTest, ValidBytesParseAsThey) {
  v1::Exchange e = BadExchange();
  e.set_agent("executor");
  e.mutable_request()->mutable_messages(0)->set_content("ok");
  v1::Exchange out;
  bool repaired = true;
  ASSERT_THAT(ParseStored(e.SerializeAsString(), &out, &repaired), IsOk());
  EXPECT_FALSE(repaired);
  EXPECT_EQ(out.SerializeAsString(), e.SerializeAsString());
}

TEST(ParseStoredTest, InvalidStringsAreRepairedAndEverythingElseKept) {
  const std::string bytes = BadExchange().SerializeAsString();
  v1::Exchange strict;
  ASSERT_FALSE(strict.ParseFromString(bytes));  // what used to be DATA_LOSS
  v1::Exchange out;
  bool repaired = false;
  ASSERT_THAT(ParseStored(bytes, &out, &repaired), IsOk());
  EXPECT_TRUE(repaired);
  EXPECT_EQ(out.seq(), 3);
  EXPECT_EQ(out.agent(), "exec\xEF\xBF\xBDutor");
  EXPECT_EQ(out.request().messages(0).content(), "caf\xEF\xBF\xBD au lait");
  EXPECT_EQ(out.response().message().content(), "fine");
  EXPECT_EQ(out.native().response_body(), "\xFF\xFE raw bytes stay");
  EXPECT_EQ(FindInvalidUtf8Field(out), std::nullopt);
}

TEST(ParseStoredTest, MapsAreRepairedToo) {
  v1::TraceEvent event;
  event.set_seq(9);
  (*event.mutable_attributes())["gen_ai.agent.name"] = "\xFFx";
  v1::TraceEvent out;
  ASSERT_THAT(ParseStored(event.SerializeAsString(), &out), IsOk());
  EXPECT_EQ(out.attributes().at("gen_ai.agent.name"), "\xEF\xBF\xBDx");
  EXPECT_EQ(out.seq(), 9);
}

TEST(ParseStoredTest, BytesThatAreNotAMessageAreDataLoss) {
  v1::Exchange out;
  EXPECT_THAT(ParseStored("\x0A\x05" "ab", &out),
              StatusIs(absl::StatusCode::kDataLoss, "stored Exchange does not parse"));
  EXPECT_THAT(ParseStored(std::string("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF", 11), &out),
              StatusIs(absl::StatusCode::kDataLoss));
}

}  // namespace
}  // namespace store
}  // namespace understudy
