#include "replayer/response_chain.h"

#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace replayer {
namespace {

using ::testing::HasSubstr;
using ::understudy::IsOk;

v1::Message Msg(const std::string& role, const std::string& content) {
  v1::Message m;
  m.set_role(role);
  m.set_content(content);
  return m;
}

ChainLink Link(std::string parent, std::vector<v1::Message> turn, std::string body) {
  ChainLink link;
  link.parent = std::move(parent);
  link.turn = std::move(turn);
  link.body_bytes = body.size();
  link.body = [body] { return body; };
  return link;
}

std::vector<std::string> Contents(const std::vector<v1::Message>& messages) {
  std::vector<std::string> out;
  for (const v1::Message& m : messages) out.push_back(m.role() + ":" + m.content());
  return out;
}

TEST(ResponseChainTest, ResolvesAChainOfThreeTurnsOldestFirst) {
  ResponseChain chain;
  ASSERT_THAT(chain.Remember("r1", Link("", {Msg("user", "one"), Msg("assistant", "a1")}, "{1}")), IsOk());
  ASSERT_THAT(chain.Remember("r2", Link("r1", {Msg("user", "two"), Msg("assistant", "a2")}, "{2}")), IsOk());
  ASSERT_THAT(chain.Remember("r3", Link("r2", {Msg("user", "three"), Msg("assistant", "a3")}, "{3}")), IsOk());
  auto conversation_or = chain.Resolve("r3");
  ASSERT_THAT(conversation_or, IsOk());
  std::vector<v1::Message> conversation = *std::move(conversation_or);
  EXPECT_THAT(Contents(conversation),
              ::testing::ElementsAre("user:one", "assistant:a1", "user:two", "assistant:a2",
                                     "user:three", "assistant:a3"));
  auto body_or = chain.Body("r2");
  ASSERT_THAT(body_or, IsOk());
  std::string body = *std::move(body_or);
  EXPECT_EQ(body, "{2}");
}

TEST(ResponseChainTest, AnUnknownIdIsNotFoundAndNamed) {
  ResponseChain chain;
  absl::StatusOr<std::vector<v1::Message>> r = chain.Resolve("resp_never");
  EXPECT_TRUE(absl::IsNotFound(r.status()));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("\"resp_never\""));
  EXPECT_TRUE(absl::IsNotFound(chain.Body("resp_never").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(chain.Remember("", {})));
}

TEST(ResponseChainTest, EvictsTheOldestFirstAndSaysWhichLinkIsGone) {
  ResponseChain chain(/*max_responses=*/2);
  ASSERT_THAT(chain.Remember("r1", Link("", {Msg("user", "one")}, "")), IsOk());
  ASSERT_THAT(chain.Remember("r2", Link("r1", {Msg("user", "two")}, "")), IsOk());
  ASSERT_THAT(chain.Remember("r3", Link("r2", {Msg("user", "three")}, "")), IsOk());
  EXPECT_EQ(chain.size(), 2u);
  absl::StatusOr<std::vector<v1::Message>> r = chain.Resolve("r3");
  EXPECT_TRUE(absl::IsNotFound(r.status()));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("continues \"r1\""));
  EXPECT_TRUE(absl::IsNotFound(chain.Body("r1").status()));
  EXPECT_THAT(chain.Body("r3").status(), IsOk());
}

TEST(ResponseChainTest, ByteBoundEvictsToo) {
  ResponseChain chain(/*max_responses=*/100, /*max_bytes=*/1000);
  for (int i = 0; i < 50; ++i) {
    ASSERT_THAT(chain.Remember("r" + std::to_string(i), Link("", {Msg("user", std::string(200, 'x'))}, "")), IsOk());
  }
  EXPECT_LT(chain.size(), 5u);
  EXPECT_THAT(chain.Resolve("r49").status(), IsOk());
}

TEST(ResponseChainTest, RememberingAnIdAgainReplacesItAndALoopIsRefused) {
  ResponseChain chain;
  ASSERT_THAT(chain.Remember("a", Link("", {Msg("user", "first")}, "1")), IsOk());
  ASSERT_THAT(chain.Remember("b", Link("a", {Msg("user", "second")}, "2")), IsOk());
  ASSERT_THAT(chain.Remember("a", Link("b", {Msg("user", "again")}, "3")), IsOk());
  auto body_or = chain.Body("a");
  ASSERT_THAT(body_or, IsOk());
  std::string body = *std::move(body_or);
  EXPECT_EQ(body, "3");
  EXPECT_EQ(chain.size(), 2u);
  absl::StatusOr<std::vector<v1::Message>> r = chain.Resolve("a");
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("or loops"));
}

}  // namespace
}  // namespace replayer
}  // namespace understudy

namespace understudy {
namespace replayer {
namespace {

// One id served again and again (a replay of the same recording) holds one
// link, not one per time it was served.
TEST(ResponseChainTest, AnIdRememberedManyTimesHoldsOneLink) {
  struct Counted {
    explicit Counted(int* live) : live(live) { ++*live; }
    ~Counted() { --*live; }
    int* live;
  };
  int live = 0;
  ResponseChain chain(/*max_responses=*/1000);
  for (int i = 0; i < 10000; ++i) {
    ChainLink link;
    link.turn = {Msg("user", "same")};
    auto held = std::make_shared<Counted>(&live);
    link.body = [held] { return std::string("{}"); };
    ASSERT_THAT(chain.Remember("resp_same", std::move(link)), IsOk());
  }
  EXPECT_EQ(chain.size(), 1u);
  EXPECT_EQ(live, 1);
  auto body = chain.Body("resp_same");
  ASSERT_THAT(body, IsOk());
  EXPECT_EQ(*body, "{}");
}

}  // namespace
}  // namespace replayer
}  // namespace understudy
