#include "store/session_file.h"

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/test_util.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

v1::Exchange MakeExchange(int64_t seq, const std::string& agent, const std::string& text) {
  v1::Exchange exchange;
  exchange.set_seq(seq);
  exchange.set_agent(agent);
  v1::CompletionRequest* request = exchange.mutable_request();
  request->set_model("gpt-test");
  v1::Message* system = request->add_messages();
  system->set_role("system");
  system->set_content("You are \"careful\".\nUnicode: caf\xC3\xA9 \xF0\x9F\x8E\xAD");
  v1::Message* user = request->add_messages();
  user->set_role("user");
  user->set_content(text);
  request->mutable_params()->set_temperature(0.1);
  request->mutable_params()->set_max_tokens(256);
  v1::ToolDefinition* tool = request->add_tools();
  tool->set_name("continue");
  tool->set_parameters(R"({"type":"object","properties":{"phase":{"type":"string"}}})");
  v1::CompletionResponse* response = exchange.mutable_response();
  response->set_id(absl::StrCat("resp-", seq));
  response->set_model("gpt-test-0613");
  response->mutable_message()->set_role("assistant");
  response->mutable_message()->set_content(absl::StrCat("answer ", seq));
  v1::ToolCall* call = response->mutable_message()->add_tool_calls();
  call->set_id("call_1");
  call->set_name("continue");
  call->set_arguments(R"({"phase": "verification"})");
  response->set_finish_reason("tool_calls");
  response->mutable_usage()->set_input_tokens(12);
  response->mutable_usage()->set_output_tokens(3);
  if (seq % 2 == 0) {
    exchange.set_streamed(true);
    v1::CompletionChunk* chunk = exchange.add_chunks();
    chunk->set_content("ans");
    chunk->set_offset_micros(1500);
    chunk = exchange.add_chunks();
    chunk->set_content("wer");
    chunk->set_finish_reason("stop");
    chunk->set_offset_micros(3000);
  }
  exchange.set_latency_micros(4200);
  exchange.set_recorded_at_micros(1700000000000000 + seq);
  return exchange;
}

SessionFile MakeFile(int n) {
  SessionFile file;
  file.header.set_name("golden");
  file.header.set_created_at_micros(1700000000123456);
  for (int i = 1; i <= n; ++i) {
    file.exchanges.push_back(MakeExchange(i, i % 2 ? "planner" : "executor", "hi"));
  }
  return file;
}

std::string Header(int count) {
  return absl::StrCat(
      R"({"header":{"format":"understudy.session/v1","name":"golden","exchange_count":")", count,
      R"(","created_at_micros":"1700000000000000"}})", "\n");
}

std::string ExchangeLine(int seq) {
  return absl::StrCat(R"({"exchange":{"seq":")", seq, R"(","agent":"a"}})", "\n");
}

TEST(SessionFileTest, WriteIsTheDocumentedJsonl) {
  SessionFile file;
  file.header.set_name("golden");
  file.header.set_created_at_micros(1700000000000000);
  v1::Exchange exchange;
  exchange.set_seq(1);
  exchange.set_agent("planner");
  exchange.mutable_request()->set_model("m");
  file.exchanges.push_back(exchange);
  EXPECT_THAT(WriteSessionFile(file),
              IsOkAndHolds(std::string(
                  R"({"header":{"format":"understudy.session/v1","name":"golden",)"
                  R"("exchange_count":"1","created_at_micros":"1700000000000000"}})"
                  "\n"
                  R"({"exchange":{"seq":"1","agent":"planner","request":{"model":"m"}}})"
                  "\n")));
}

TEST(SessionFileTest, WriteParseWriteIsByteIdentical) {
  SessionFile file = MakeFile(6);
  auto first = WriteSessionFile(file);
  ASSERT_THAT(first, IsOk());
  auto parsed = ParseSessionFile(*first);
  ASSERT_THAT(parsed, IsOk());
  EXPECT_EQ(parsed->header.name(), "golden");
  EXPECT_EQ(parsed->header.exchange_count(), 6);
  EXPECT_EQ(parsed->header.created_at_micros(), 1700000000123456);
  ASSERT_EQ(parsed->exchanges.size(), 6u);
  EXPECT_EQ(parsed->exchanges[3].SerializeAsString(), file.exchanges[3].SerializeAsString());
  EXPECT_THAT(WriteSessionFile(*parsed), IsOkAndHolds(*first));
}

TEST(SessionFileTest, EmptySessionRoundTrips) {
  SessionFile file = MakeFile(0);
  auto text = WriteSessionFile(file);
  ASSERT_THAT(text, IsOk());
  EXPECT_EQ(std::count(text->begin(), text->end(), '\n'), 1);
  auto parsed = ParseSessionFile(*text);
  ASSERT_THAT(parsed, IsOk());
  EXPECT_TRUE(parsed->exchanges.empty());
}

TEST(SessionFileTest, WriteRefusesSeqsThatAreNotOneToN) {
  SessionFile file = MakeFile(3);
  file.exchanges[2].set_seq(7);
  EXPECT_THAT(WriteSessionFile(file),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("seq 7")));
}

TEST(SessionFileTest, MissingFinalNewlineIsAccepted) {
  std::string text = Header(1) + ExchangeLine(1);
  text.pop_back();
  EXPECT_THAT(ParseSessionFile(text), IsOk());
}

TEST(SessionFileTest, CrLfLineEndingsAreAccepted) {
  EXPECT_THAT(ParseSessionFile(absl::StrCat(R"({"header":{"format":"understudy.session/v1",)",
                                            R"("name":"g","exchange_count":"1"}})", "\r\n",
                                            R"({"exchange":{"seq":"1"}})", "\r\n")),
              IsOk());
}

struct BadInput {
  std::string name;
  std::string input;
  std::string message;  // Expected fragment of the error message.
};

// Names the case in test output instead of dumping its bytes.
void PrintTo(const BadInput& bad, std::ostream* os) { *os << bad.name; }

class MalformedSessionFileTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(MalformedSessionFileTest, IsRejectedWithLineAndReason) {
  const BadInput& bad = GetParam();
  auto parsed = ParseSessionFile(bad.input);
  EXPECT_THAT(parsed, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(bad.message)));
  EXPECT_THAT(parsed, StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("line ")))
      << "every error names its line";
}

INSTANTIATE_TEST_SUITE_P(
    Corpus, MalformedSessionFileTest,
    ::testing::Values(
        BadInput{"EmptyFile", "",
                 "line 1: expected a header line with format "
                 "\"understudy.session/v1\", got an empty file"},
        BadInput{"NotJson", Header(1) + "this is not json\n",
                 "line 2: invalid JSON: Unexpected token."},
        BadInput{"NotJsonHeader", "{\"header\": oops}\n", "line 1: invalid JSON:"},
        BadInput{"MissingHeader", ExchangeLine(1),
                 "line 1: expected a header line with format \"understudy.session/v1\", got "
                 "an exchange"},
        BadInput{"EmptyObjectFirst", "{}\n",
                 "line 1: expected a header line with format \"understudy.session/v1\", got "
                 "neither a header nor an exchange"},
        BadInput{"DuplicateHeader", Header(1) + ExchangeLine(1) + Header(1),
                 "line 3: a second header line"},
        BadInput{"WrongFormat",
                 R"({"header":{"format":"understudy.session/v2","exchange_count":"0"}})"
                 "\n",
                 "line 1: header format is \"understudy.session/v2\", expected "
                 "\"understudy.session/v1\""},
        BadInput{"FewerExchangesThanHeader", Header(3) + ExchangeLine(1) + ExchangeLine(2),
                 "line 1: header exchange_count is 3 but the file has 2 exchanges"},
        BadInput{"MoreExchangesThanHeader", Header(1) + ExchangeLine(1) + ExchangeLine(2),
                 "line 3: more exchanges than the header's exchange_count (1)"},
        BadInput{"SeqGap", Header(3) + ExchangeLine(1) + ExchangeLine(3) + ExchangeLine(4),
                 "line 3: exchange seq is 3, expected 2"},
        BadInput{"SeqMissing", Header(1) + "{\"exchange\":{\"agent\":\"a\"}}\n",
                 "line 2: exchange seq is 0, expected 1"},
        BadInput{
            "UnknownField",
            Header(1) +
                R"({"exchange":{"seq":"1","request":{"messages":[{"role":"user","bogus":1}]}}})"
                "\n",
            "line 2: exchange.request.messages[0].bogus: Cannot find field"},
        BadInput{"UnknownTopLevelField", Header(1) + "{\"footer\":{}}\n",
                 "line 2: footer: Cannot find field"},
        BadInput{"WrongType",
                 Header(1) + R"({"exchange":{"seq":"one"}})"
                             "\n",
                 "line 2: exchange.seq: invalid value \"one\" for type TYPE_INT64"},
        BadInput{"WrongTypeNested",
                 Header(1) + R"({"exchange":{"seq":"1","request":{"messages":[{"role":5}]}}})"
                             "\n",
                 "line 2: exchange.request.messages[0].role: invalid value 5"},
        BadInput{"NotAnObject", Header(1) + "[1, 2]\n",
                 "line 2: not a session file line: Root element must be a message"},
        BadInput{"BothHeaderAndExchange",
                 Header(1) + R"({"exchange":{"seq":"1"},"header":{}})"
                             "\n",
                 "line 2: not a session file line: invalid value oneof field 'line' is "
                 "already set"},
        BadInput{"TruncatedLastLine", Header(2) + ExchangeLine(1) + "{\"exchange\":{\"se",
                 "line 3: invalid JSON:"},
        BadInput{"TrailingGarbage", Header(1) + "{\"exchange\":{\"seq\":\"1\"}} x\n",
                 "line 2: invalid JSON: Parsing terminated before end of input."},
        BadInput{"BlankLine", Header(1) + "\n" + ExchangeLine(1), "line 2: empty line"},
        BadInput{"InvalidUtf8",
                 Header(1) + "{\"exchange\":{\"seq\":\"1\",\"agent\":\"caf\xE9\"}}\n",
                 "line 2: invalid UTF-8 at byte 36 of the line; session files are UTF-8"},
        BadInput{"LoneSurrogateEscape",
                 Header(1) + R"({"exchange":{"seq":"1","agent":"\udc00"}})"
                             "\n",
                 "line 2: invalid JSON: Invalid unicode code point."},
        BadInput{"DeepNesting",
                 Header(1) + "{\"exchange\":{\"request\":{\"extra\":" +
                     std::string(100000, '[') + std::string(100000, ']') + "}}}\n",
                 "line 2: exchange.request.extra: Proto field is not repeating"},
        BadInput{"NegativeCount",
                 R"({"header":{"format":"understudy.session/v1","exchange_count":"-1"}})"
                 "\n",
                 "line 1: header exchange_count -1 is outside"}),
    [](const ::testing::TestParamInfo<BadInput>& info) { return info.param.name; });

TEST(SessionFileLimitsTest, LineLongerThanTheLimitIsRejected) {
  SessionFileLimits limits;
  limits.max_line_bytes = 200;  // The header line fits.
  std::string long_line =
      absl::StrCat(R"({"exchange":{"seq":"1","agent":")", std::string(200, 'a'), R"("}})", "\n");
  EXPECT_THAT(ParseSessionFile(Header(1) + long_line, limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 2: line is 235 bytes, over the limit of 200")));
}

TEST(SessionFileLimitsTest, InputLargerThanTheLimitIsRejected) {
  SessionFileLimits limits;
  limits.max_total_bytes = 50;
  EXPECT_THAT(ParseSessionFile(Header(1) + ExchangeLine(1), limits),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("over the limit of 50")));
}

TEST(SessionFileLimitsTest, HeaderCountOverTheLimitIsRejected) {
  SessionFileLimits limits;
  limits.max_exchanges = 2;
  EXPECT_THAT(ParseSessionFile(Header(3), limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 1: header exchange_count 3 is outside 0..2")));
}

}  // namespace
}  // namespace store
}  // namespace understudy
