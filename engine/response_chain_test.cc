#include "engine/response_chain.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace engine {
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
}  // namespace engine
}  // namespace understudy

namespace understudy {
namespace engine {
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
}  // namespace engine
}  // namespace understudy

namespace understudy {
namespace engine {
namespace {

// A reader over bodies of the form "id=content;id=content": each item an
// assistant message with that content. Counts the bodies it read.
struct CountingReader {
  std::vector<std::string> read;
  ResponseChain::ItemReader reader() {
    return [this](absl::string_view body) {
      read.emplace_back(body);
      std::vector<std::pair<std::string, v1::Message>> items;
      for (absl::string_view pair : absl::StrSplit(body, ';', absl::SkipEmpty())) {
        std::pair<std::string, std::string> kv = absl::StrSplit(pair, '=');
        items.emplace_back(kv.first, Msg("assistant", kv.second));
      }
      return items;
    };
  }
};

TEST(ResponseChainTest, FindsAnItemOfAResponseReadingBodiesOnlyAsNeeded) {
  ResponseChain chain;
  ASSERT_THAT(chain.Remember("r1", Link("", {}, "msg_1=one;fc_1=")), IsOk());
  ASSERT_THAT(chain.Remember("r2", Link("", {}, "msg_2=two")), IsOk());
  ASSERT_THAT(chain.Remember("r3", Link("", {}, "msg_3=three")), IsOk());
  CountingReader reader;
  auto item = chain.FindItem("msg_2", reader.reader());
  ASSERT_THAT(item, IsOk());
  EXPECT_EQ(item->content(), "two");
  EXPECT_THAT(reader.read, ::testing::ElementsAre("msg_3=three", "msg_2=two")) << "newest first";
  // Read once: found again without reading, and the older one read only now.
  ASSERT_THAT(chain.FindItem("msg_3", reader.reader()), IsOk());
  ASSERT_THAT(chain.FindItem("msg_1", reader.reader()), IsOk());
  ASSERT_THAT(chain.FindItem("msg_2", reader.reader()), IsOk());
  EXPECT_THAT(reader.read, ::testing::ElementsAre("msg_3=three", "msg_2=two", "msg_1=one;fc_1="));
}

TEST(ResponseChainTest, AnItemNoResponseHoldsIsNotFoundAndNamedAfterOneReadOfEach) {
  ResponseChain chain;
  ASSERT_THAT(chain.Remember("r1", Link("", {}, "msg_1=one")), IsOk());
  CountingReader reader;
  absl::StatusOr<v1::Message> item = chain.FindItem("msg_never", reader.reader());
  EXPECT_TRUE(absl::IsNotFound(item.status())) << item.status();
  EXPECT_THAT(std::string(item.status().message()), HasSubstr("\"msg_never\""));
  EXPECT_TRUE(absl::IsNotFound(chain.FindItem("msg_never", reader.reader()).status()));
  EXPECT_EQ(reader.read.size(), 1u) << "every response is read once, however often a miss asks";
  // A response remembered later is read for the next reference.
  ASSERT_THAT(chain.Remember("r2", Link("", {}, "msg_never=found")), IsOk());
  auto found = chain.FindItem("msg_never", reader.reader());
  ASSERT_THAT(found, IsOk());
  EXPECT_EQ(found->content(), "found");
}

TEST(ResponseChainTest, AnItemTwoResponsesHoldIsTheLaterOnes) {
  ResponseChain chain;
  CountingReader reader;
  ASSERT_THAT(chain.Remember("r1", Link("", {}, "msg_1=first")), IsOk());
  ASSERT_THAT(chain.FindItem("msg_1", reader.reader()), IsOk());
  ASSERT_THAT(chain.Remember("r2", Link("", {}, "msg_1=second")), IsOk());
  ASSERT_THAT(chain.FindItem("msg_x", reader.reader()).status().code(),
              absl::StatusCode::kNotFound);  // reads r2
  auto item = chain.FindItem("msg_1", reader.reader());
  ASSERT_THAT(item, IsOk());
  EXPECT_EQ(item->content(), "second");
  // The same response served again replaces its items with its new body's.
  ASSERT_THAT(chain.Remember("r2", Link("", {}, "msg_9=again")), IsOk());
  item = chain.FindItem("msg_1", reader.reader());
  ASSERT_THAT(item, IsOk());
  EXPECT_EQ(item->content(), "first");
}

TEST(ResponseChainTest, ItemsGoWithTheirResponseWhenItIsForgotten) {
  ResponseChain chain(/*max_responses=*/2);
  CountingReader reader;
  ASSERT_THAT(chain.Remember("r1", Link("", {}, "msg_1=one")), IsOk());
  ASSERT_THAT(chain.FindItem("msg_1", reader.reader()), IsOk());
  ASSERT_THAT(chain.Remember("r2", Link("", {}, "msg_2=two")), IsOk());
  ASSERT_THAT(chain.Remember("r3", Link("", {}, "msg_3=three")), IsOk());
  EXPECT_EQ(chain.size(), 2u);
  EXPECT_TRUE(absl::IsNotFound(chain.FindItem("msg_1", reader.reader()).status()));
  ASSERT_THAT(chain.FindItem("msg_2", reader.reader()), IsOk());
}

TEST(ResponseChainTest, ItemsReadCountAgainstTheByteBound) {
  // Room for the three links (198 bytes each as counted) and a little
  // more, not for the items read from one of them as well (about 270).
  const std::string body(100, 'x');
  ResponseChain chain(/*max_responses=*/100, /*max_bytes=*/3 * (body.size() + 2 + 96) + 100);
  for (const char* id : {"r1", "r2", "r3"}) {
    ASSERT_THAT(chain.Remember(id, Link("", {}, body)), IsOk());
  }
  EXPECT_EQ(chain.size(), 3u);
  ResponseChain::ItemReader big = [](absl::string_view) {
    return std::vector<std::pair<std::string, v1::Message>>{
        {"msg_big", Msg("assistant", std::string(150, 'y'))}};
  };
  ASSERT_THAT(chain.FindItem("msg_big", big), IsOk());
  EXPECT_EQ(chain.size(), 2u) << "the oldest link went to make room";
}

}  // namespace
}  // namespace engine
}  // namespace understudy
