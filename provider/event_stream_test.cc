#include "provider/event_stream.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace provider {
namespace event_stream {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A ConverseStream text delta as @smithy/core's EventStreamCodec (the AWS
// SDK for JavaScript) encodes it: headers :event-type contentBlockDelta,
// :content-type application/json, :message-type event; payload
// {"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"abcd"}.
constexpr absl::string_view kSdkDeltaHex =
    "0000009f00000057c37babff0b3a6576656e742d74797065070011636f6e74656e74426c6f636b44656c7461"
    "0d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e0d3a6d6573736167652d74"
    "7970650700056576656e747b22636f6e74656e74426c6f636b496e646578223a302c2264656c7461223a7b22"
    "74657874223a224869227d2c2270223a2261626364227df2ace5ff";

// Every header type, encoded by the same codec, empty payload: t true,
// f false, b byte -2, s short -300, i integer 70000, l long -5000000000,
// y bytes 00 ff 07, str "héllo", ts timestamp 1700000000123 ms, u uuid
// 0123abcd-4567-89ef-0123-456789abcdef.
constexpr absl::string_view kSdkAllTypesHex =
    "00000065000000552ff1822f017400016601016202fe017303fed401690400011170016c05fffffffed5fa0e"
    "00017906000300ff070373747207000668c3a96c6c6f027473080000018bcfe5687b0175090123abcd456789"
    "ef0123456789abcdeff2989a17";

// Built by hand from the format: the smallest frame (total 16, no headers,
// no payload) and one with a single true header "a" and payload "{}"; the
// CRCs computed with zlib.
constexpr absl::string_view kEmptyHex = "000000100000000005c248eb7d98c8ff";
constexpr absl::string_view kSmallHex = "0000001500000003542b96210161007b7d5706f73a";

std::string Bytes(absl::string_view hex) { return absl::HexStringToBytes(hex); }

// `prelude_and_rest` (a frame without its prelude CRC and message CRC,
// i.e. total and headers lengths followed by headers and payload) with both
// CRCs put in.
std::string Seal(uint32_t total, uint32_t headers_length, absl::string_view rest) {
  std::string out;
  for (uint32_t v : {total, headers_length}) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
  }
  const uint32_t prelude = Crc32(out);
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(prelude >> shift));
  out.append(rest.data(), rest.size());
  const uint32_t message = Crc32(out);
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(message >> shift));
  return out;
}

// A frame whose headers section is `headers` (raw) and payload `payload`.
std::string RawFrame(absl::string_view headers, absl::string_view payload) {
  return Seal(static_cast<uint32_t>(16 + headers.size() + payload.size()),
              static_cast<uint32_t>(headers.size()), absl::StrCat(headers, payload));
}

// EncodeFrame's bytes, or its error's message.
std::string Encoded(const Frame& frame) {
  absl::StatusOr<std::string> bytes = EncodeFrame(frame);
  return bytes.ok() ? *bytes : std::string(bytes.status().message());
}

TEST(Crc32Test, IsZlibsIeeeCrc) {
  EXPECT_EQ(Crc32("123456789"), 0xCBF43926u);  // the standard check value
  EXPECT_EQ(Crc32("6789", Crc32("12345")), 0xCBF43926u);
  EXPECT_EQ(Crc32(""), 0u);
}

TEST(DecodeFrameTest, ReadsAFrameTheSdkEncoded) {
  const std::string bytes = Bytes(kSdkDeltaHex);
  absl::StatusOr<Frame> frame = DecodeFrame(bytes);
  ASSERT_THAT(frame, IsOk());
  EXPECT_THAT(frame->headers, ElementsAre(Header{":event-type", std::string("contentBlockDelta")},
                                          Header{":content-type", std::string("application/json")},
                                          Header{":message-type", std::string("event")}));
  EXPECT_EQ(frame->payload, R"({"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"abcd"})");
  EXPECT_EQ(frame->StringHeader(":event-type"), "contentBlockDelta");
  EXPECT_EQ(frame->StringHeader(":exception-type"), "");
  ASSERT_NE(frame->Find(":message-type"), nullptr);
  EXPECT_EQ(frame->Find("nope"), nullptr);
  EXPECT_EQ(Encoded(*frame), bytes);
}

TEST(DecodeFrameTest, ReadsEveryHeaderTypeTheSdkEncoded) {
  const std::string bytes = Bytes(kSdkAllTypesHex);
  absl::StatusOr<Frame> frame = DecodeFrame(bytes);
  ASSERT_THAT(frame, IsOk());
  Uuid uuid;
  const std::string uuid_bytes = Bytes("0123abcd456789ef0123456789abcdef");
  std::copy(uuid_bytes.begin(), uuid_bytes.end(), uuid.bytes.begin());
  EXPECT_THAT(frame->headers,
              ElementsAre(Header{"t", true}, Header{"f", false}, Header{"b", int8_t{-2}},
                          Header{"s", int16_t{-300}}, Header{"i", int32_t{70000}},
                          Header{"l", int64_t{-5000000000}},
                          Header{"y", ByteArray{std::string("\x00\xff\x07", 3)}},
                          Header{"str", std::string("h\xc3\xa9llo")},
                          Header{"ts", Timestamp{1700000000123}}, Header{"u", uuid}));
  EXPECT_EQ(frame->payload, "");
  EXPECT_EQ(frame->StringHeader("t"), "");  // not a string
  EXPECT_EQ(Encoded(*frame), bytes);
}

TEST(DecodeFrameTest, ReadsFramesBuiltFromTheSpec) {
  absl::StatusOr<Frame> empty = DecodeFrame(Bytes(kEmptyHex));
  ASSERT_THAT(empty, IsOk());
  EXPECT_THAT(empty->headers, IsEmpty());
  EXPECT_EQ(empty->payload, "");
  EXPECT_EQ(Encoded(Frame{}), Bytes(kEmptyHex));

  absl::StatusOr<Frame> small = DecodeFrame(Bytes(kSmallHex));
  ASSERT_THAT(small, IsOk());
  EXPECT_THAT(small->headers, ElementsAre(Header{"a", true}));
  EXPECT_EQ(small->payload, "{}");
  EXPECT_EQ(RawFrame(std::string("\x01"
                                 "a\x00",
                                 3),
                     "{}"),
            Bytes(kSmallHex));
}

TEST(EncodeFrameTest, EveryHeaderTypeRoundTripsAtItsLimits) {
  Uuid uuid;
  for (size_t i = 0; i < uuid.bytes.size(); ++i) uuid.bytes[i] = static_cast<uint8_t>(255 - i);
  Frame frame;
  frame.headers = {
      {"", false},
      {"yes", true},
      {"b-", std::numeric_limits<int8_t>::min()},
      {"b+", std::numeric_limits<int8_t>::max()},
      {"s-", std::numeric_limits<int16_t>::min()},
      {"s+", std::numeric_limits<int16_t>::max()},
      {"i-", std::numeric_limits<int32_t>::min()},
      {"i+", std::numeric_limits<int32_t>::max()},
      {"l-", std::numeric_limits<int64_t>::min()},
      {"l+", std::numeric_limits<int64_t>::max()},
      {"bytes", ByteArray{std::string(65535, '\xff')}},
      {"empty", ByteArray{}},
      {"text", std::string("\xe2\x9c\x93 ok")},
      {"ts", Timestamp{-1}},
      {"uuid", uuid},
      {std::string(255, 'n'), std::string("long name")},
      {"yes", false},  // a repeated name keeps its place
  };
  frame.payload = std::string("\x00\x01 binary \xff", 11);
  absl::StatusOr<std::string> bytes = EncodeFrame(frame);
  ASSERT_THAT(bytes, IsOk());
  absl::StatusOr<Frame> decoded = DecodeFrame(*bytes);
  ASSERT_THAT(decoded, IsOk());
  EXPECT_EQ(*decoded, frame);
  EXPECT_EQ(Encoded(*decoded), *bytes);
  EXPECT_EQ(std::get<bool>(*decoded->Find("yes")), true);  // the first of the name
}

TEST(EncodeFrameTest, RefusesWhatNoFrameCanHold) {
  Frame long_name;
  long_name.headers = {{std::string(256, 'n'), true}};
  EXPECT_THAT(EncodeFrame(long_name),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("over 255 bytes")));
  Frame long_value;
  long_value.headers = {{"v", std::string(65536, 'v')}};
  EXPECT_THAT(EncodeFrame(long_value),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("over 65535 bytes")));
  Frame bad_text;
  bad_text.headers = {{"v", std::string("\xc3")}};
  EXPECT_THAT(EncodeFrame(bad_text),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not UTF-8")));
  Frame huge;
  huge.payload = std::string(kMaxFrameBytes - 15, 'x');
  EXPECT_THAT(EncodeFrame(huge),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("over the bound")));
  huge.payload.pop_back();
  EXPECT_THAT(EncodeFrame(huge), IsOk());
}

TEST(DecodeFrameTest, ABadPreludeCrcFailsNamingItsByte) {
  std::string bytes = Bytes(kSdkDeltaHex);
  bytes[9] ^= 1;
  EXPECT_THAT(DecodeFrame(bytes),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "event stream frame: prelude CRC 0xc37aabff does not match 0xc37babff at "
                       "byte 8"));
}

TEST(DecodeFrameTest, ABadMessageCrcFailsNamingItsByte) {
  std::string bytes = Bytes(kSdkDeltaHex);
  bytes[120] ^= 0x20;  // a byte of the payload
  EXPECT_THAT(DecodeFrame(bytes), StatusIs(absl::StatusCode::kInvalidArgument,
                                           AllOf(HasSubstr("message CRC 0xf2ace5ff does not match"),
                                                 HasSubstr("at byte 155"))));
  bytes = Bytes(kSdkDeltaHex);
  bytes.back() ^= 1;
  EXPECT_THAT(DecodeFrame(bytes),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("message CRC")));
}

TEST(DecodeFrameTest, EveryTruncationFails) {
  const std::string bytes = Bytes(kSdkDeltaHex);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_THAT(DecodeFrame(bytes.substr(0, n)), StatusIs(absl::StatusCode::kInvalidArgument)) << n;
  }
  EXPECT_THAT(DecodeFrame(bytes.substr(0, 15)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "event stream frame: 15 bytes, fewer than the 16 of the smallest frame"));
  EXPECT_THAT(DecodeFrame(bytes.substr(0, 100)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "event stream frame: total length 159 is not the frame's 100 bytes at "
                       "byte 0"));
  EXPECT_THAT(DecodeFrame(bytes + "x"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                 HasSubstr("is not the frame's 160 bytes")));
}

TEST(DecodeFrameTest, RefusesLengthsThatDoNotFit) {
  // Headers length 1 in a frame of 16: no room.
  EXPECT_THAT(DecodeFrame(Seal(16, 1, "")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "event stream frame: headers length 1 leaves no room in a frame of 16 "
                       "bytes at byte 4"));
  // A header whose string value runs past the section.
  EXPECT_THAT(DecodeFrame(RawFrame(std::string("\x01"
                                               "a\x07\x00\x05"
                                               "ab",
                                               7),
                                   "")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the value of header \"a\" runs past the headers section")));
  // A name longer than the section.
  EXPECT_THAT(DecodeFrame(RawFrame("\x09"
                                   "ab",
                                   "")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a header name runs past the headers section at byte 13")));
  // A name with no type.
  EXPECT_THAT(DecodeFrame(RawFrame("\x01"
                                   "a",
                                   "")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the type of header \"a\"")));
  // A uuid cut short.
  EXPECT_THAT(DecodeFrame(RawFrame(std::string("\x01"
                                               "u\x09\x01\x02",
                                               5),
                                   "")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("runs past")));
}

TEST(DecodeFrameTest, RefusesUnknownTypesAndTextThatIsNotUtf8) {
  EXPECT_THAT(DecodeFrame(RawFrame("\x01"
                                   "a\x0a",
                                   "")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "event stream frame: header \"a\" has unknown type 10 at byte 14"));
  EXPECT_THAT(DecodeFrame(RawFrame(std::string("\x01\xff\x00", 3), "")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("header name is not UTF-8")));
  EXPECT_THAT(DecodeFrame(RawFrame(std::string("\x01"
                                               "a\x07\x00\x01\xc3",
                                               6),
                                   "")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the string value of header \"a\" is not UTF-8")));
  // Bytes need not be UTF-8.
  EXPECT_THAT(DecodeFrame(RawFrame(std::string("\x01"
                                               "a\x06\x00\x01\xc3",
                                               6),
                                   "")),
              IsOk());
}

TEST(DecodeFrameTest, RefusesFramesOverTheBound) {
  std::string prelude = Seal(static_cast<uint32_t>(kMaxFrameBytes + 1), 0, "");
  prelude.resize(12);
  const std::string frame = prelude + std::string(kMaxFrameBytes + 1 - 12, '\0');
  EXPECT_THAT(DecodeFrame(frame), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("total length 16777217 is over the bound")));
}

// --- EventStreamSplitter ---

// Three frames: the SDK's delta, the smallest frame, the SDK's every-type
// frame.
std::vector<std::string> Frames() {
  return {Bytes(kSdkDeltaHex), Bytes(kEmptyHex), Bytes(kSdkAllTypesHex)};
}

// The segments of `stream` fed `piece` bytes at a time.
std::vector<std::string> FeedInPieces(ElementSplitter& splitter, absl::string_view stream,
                                      size_t piece) {
  std::vector<std::string> out;
  for (size_t i = 0; i < stream.size(); i += piece) {
    for (std::string& s : splitter.Feed(stream.substr(i, piece))) out.push_back(std::move(s));
  }
  return out;
}

TEST(EventStreamSplitterTest, NewSplitterMakesOneForEventStreams) {
  std::unique_ptr<ElementSplitter> splitter = NewSplitter(StreamFraming::kEventStream);
  ASSERT_NE(splitter, nullptr);
  EXPECT_THAT(splitter->Feed(Bytes(kEmptyHex)), ElementsAre(Bytes(kEmptyHex)));
}

TEST(EventStreamSplitterTest, CutsWholeFramesHoweverTheBytesArrive) {
  const std::string stream = absl::StrJoin(Frames(), "");
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    EventStreamSplitter splitter;
    EXPECT_EQ(FeedInPieces(splitter, stream, piece), Frames()) << piece;
    EXPECT_THAT(splitter.Finish(), IsOk());
    EXPECT_EQ(splitter.Rest(), "");
  }
}

TEST(EventStreamSplitterTest, CutsTheSameAtEverySplitPoint) {
  const std::string stream = absl::StrJoin(Frames(), "");
  for (size_t at = 0; at <= stream.size(); ++at) {
    EventStreamSplitter splitter;
    std::vector<std::string> segments = splitter.Feed(stream.substr(0, at));
    for (std::string& s : splitter.Feed(stream.substr(at))) segments.push_back(std::move(s));
    ASSERT_EQ(segments, Frames()) << at;
    EXPECT_THAT(splitter.Finish(), IsOk());
    EXPECT_EQ(splitter.Element(segments[0]), Frames()[0]);
  }
}

TEST(EventStreamSplitterTest, AStreamEndingInsideAFrameFailsAtFinish) {
  const std::string first = Bytes(kSdkDeltaHex);
  const std::string second = Bytes(kSdkAllTypesHex);
  for (size_t cut = 1; cut < second.size(); ++cut) {
    EventStreamSplitter splitter;
    const std::string stream = first + second.substr(0, cut);
    EXPECT_THAT(FeedInPieces(splitter, stream, 7), ElementsAre(first)) << cut;
    EXPECT_THAT(splitter.status(), IsOk()) << cut;
    EXPECT_EQ(splitter.Rest(), second.substr(0, cut));
    EXPECT_THAT(splitter.Finish(), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("event stream: frame at byte 159: the "
                                                      "stream ends after")))
        << cut;
  }
  EventStreamSplitter splitter;
  splitter.Feed(first + second.substr(0, 20));
  EXPECT_THAT(splitter.Finish(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "event stream: frame at byte 159: the stream ends after 20 of 101 bytes of "
                       "the frame"));
  EXPECT_THAT(splitter.Feed(second.substr(20)), IsEmpty());
}

TEST(EventStreamSplitterTest, AHugeLengthFailsAsSoonAsItArrives) {
  EventStreamSplitter splitter;
  const std::string first = Bytes(kEmptyHex);
  EXPECT_THAT(splitter.Feed(first + "\x7f\xff"), ElementsAre(first));
  EXPECT_THAT(splitter.status(), IsOk());
  EXPECT_THAT(splitter.Feed("\xff\xff"), IsEmpty());
  EXPECT_THAT(splitter.status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "event stream: frame at byte 16: total length 2147483647 is over the bound "
                       "of 16777216 bytes"));
  EXPECT_THAT(splitter.Finish(), StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST(EventStreamSplitterTest, BoundsFramesByItsLimit) {
  EventStreamSplitter splitter(100);
  EXPECT_THAT(splitter.Feed(Bytes(kSdkDeltaHex)), IsEmpty());
  EXPECT_THAT(splitter.status(), StatusIs(absl::StatusCode::kResourceExhausted,
                                          HasSubstr("total length 159 is over the bound of 100")));
}

TEST(EventStreamSplitterTest, ALengthUnderTheSmallestFrameFails) {
  EventStreamSplitter splitter;
  EXPECT_THAT(splitter.Feed(std::string("\x00\x00\x00\x0f", 4)), IsEmpty());
  EXPECT_THAT(splitter.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "event stream: frame at byte 0: total length 15 is under the 16 bytes of "
                       "the smallest frame"));
}

TEST(EventStreamSplitterTest, ABadPreludeCrcFailsOnceThePreludeArrives) {
  std::string bad = Bytes(kSdkDeltaHex);
  bad[11] ^= 1;
  EventStreamSplitter splitter;
  EXPECT_THAT(splitter.Feed(bad.substr(0, 11)), IsEmpty());
  EXPECT_THAT(splitter.status(), IsOk());
  EXPECT_THAT(splitter.Feed(bad.substr(11, 1)), IsEmpty());
  EXPECT_THAT(splitter.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("frame at byte 0: prelude CRC")));
}

TEST(EventStreamSplitterTest, AHeadersLengthThatDoesNotFitFailsOnceItArrives) {
  EventStreamSplitter splitter;
  EXPECT_THAT(splitter.Feed(std::string("\x00\x00\x00\x10\x00\x00\x00\x01", 8)), IsEmpty());
  EXPECT_THAT(splitter.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("headers length 1 leaves no room")));
}

TEST(EventStreamSplitterTest, ABadMessageCrcFailsWhenTheFrameCompletes) {
  std::string bad = Bytes(kSdkDeltaHex);
  bad[100] ^= 1;
  EventStreamSplitter splitter;
  const std::string first = Bytes(kEmptyHex);
  EXPECT_THAT(splitter.Feed(first + bad.substr(0, 158)), ElementsAre(first));
  EXPECT_THAT(splitter.status(), IsOk());
  EXPECT_THAT(splitter.Feed(bad.substr(158) + first), IsEmpty());
  EXPECT_THAT(splitter.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("event stream: frame at byte 16: message CRC")));
  EXPECT_THAT(splitter.Feed(first), IsEmpty());
}

TEST(EventStreamSplitterTest, AFrameWhoseHeadersDoNotDecodeFails) {
  EventStreamSplitter splitter;
  EXPECT_THAT(splitter.Feed(RawFrame("\x01"
                                     "a\x0a",
                                     "")),
              IsEmpty());
  EXPECT_THAT(splitter.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "event stream: frame at byte 0: header \"a\" has unknown type 10 at byte "
                       "14"));
}

}  // namespace
}  // namespace event_stream
}  // namespace provider
}  // namespace understudy
