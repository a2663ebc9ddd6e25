// The AWS event stream framing ("application/vnd.amazon.eventstream"), in
// which AWS Bedrock streams its answers: binary frames, each a prelude, typed
// headers and a payload, guarded by two CRC32 checksums. Pure: bytes in,
// frames and segments out; no I/O.
//
// A frame, every integer big-endian:
//
//   total length       uint32   the whole frame, these 4 bytes included
//   headers length     uint32   the bytes of the headers section
//   prelude CRC        uint32   CRC32 (IEEE, zlib's) of the 8 bytes above
//   headers            ...      each: name length (uint8), name (UTF-8),
//                               type (uint8), value (by type, below)
//   payload            ...      total - headers - 16 bytes, opaque
//   message CRC        uint32   CRC32 of every byte before it
//
// Header value types: 0 true and 1 false (no value bytes), 2 byte (int8),
// 3 short (int16), 4 integer (int32), 5 long (int64), 6 byte array and
// 7 string (a uint16 length, then the bytes; a string is UTF-8),
// 8 timestamp (int64 milliseconds since the Unix epoch), 9 uuid (16 bytes).
//
//   absl::StatusOr<event_stream::Frame> frame = event_stream::DecodeFrame(bytes);
//   if (frame.ok() && frame->StringHeader(":message-type") == "event") ...
//   absl::StatusOr<std::string> bytes = event_stream::EncodeFrame(*frame);
//
// EncodeFrame is DecodeFrame's exact inverse: headers keep their order (and
// repeats), so a decoded frame encodes to the bytes it came from.
#ifndef UNDERSTUDY_PROVIDER_EVENT_STREAM_H_
#define UNDERSTUDY_PROVIDER_EVENT_STREAM_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "provider/element_stream.h"

namespace understudy {
namespace provider {
namespace event_stream {

// The smallest frame: prelude, both checksums, no headers, no payload.
inline constexpr size_t kMinFrameBytes = 16;
// The largest frame the AWS SDKs accept (16 MiB).
inline constexpr size_t kMaxFrameBytes = size_t{16} << 20;

// Header values of the types that share a C++ representation with another.
struct ByteArray {
  std::string bytes;
  bool operator==(const ByteArray& other) const { return bytes == other.bytes; }
};
struct Timestamp {
  int64_t millis = 0;  // since the Unix epoch
  bool operator==(const Timestamp& other) const { return millis == other.millis; }
};
struct Uuid {
  std::array<uint8_t, 16> bytes{};
  bool operator==(const Uuid& other) const { return bytes == other.bytes; }
};

// A typed header value: bool (wire types 0 and 1), int8_t (2), int16_t (3),
// int32_t (4), int64_t (5), ByteArray (6), std::string (7, UTF-8),
// Timestamp (8), Uuid (9).
using HeaderValue =
    std::variant<bool, int8_t, int16_t, int32_t, int64_t, ByteArray, std::string, Timestamp, Uuid>;

struct Header {
  std::string name;  // UTF-8, at most 255 bytes (may be empty)
  HeaderValue value;
  bool operator==(const Header& other) const { return name == other.name && value == other.value; }
};

// One frame's headers, in wire order, and its payload.
struct Frame {
  std::vector<Header> headers;
  std::string payload;

  // The value of the first header named `name`, or null. The pointer lives
  // as long as the frame's headers are unchanged.
  const HeaderValue* Find(absl::string_view name) const;
  // The first header named `name` when it is a string, else "" (absent or
  // of another type).
  std::string StringHeader(absl::string_view name) const;
  bool operator==(const Frame& other) const {
    return headers == other.headers && payload == other.payload;
  }
};

// CRC32 (IEEE 802.3, the polynomial of zlib, gzip and PNG) of `bytes`,
// continuing from `crc` (0 to start).
uint32_t Crc32(absl::string_view bytes, uint32_t crc = 0);

// Decodes `bytes`, exactly one whole frame. Fails with INVALID_ARGUMENT
// "event stream frame: ..." naming the byte offset in `bytes` for: fewer
// than 16 bytes; a total length other than bytes.size() or over
// kMaxFrameBytes; a headers length that leaves no room for the checksums;
// a prelude or message CRC that does not match; a header that runs past the
// headers section, of an unknown type, or whose name or string value is not
// UTF-8. Thread-safe.
absl::StatusOr<Frame> DecodeFrame(absl::string_view bytes);

// `frame` as bytes, DecodeFrame's inverse. Fails with INVALID_ARGUMENT for
// what no frame can hold: a header name over 255 bytes or not UTF-8, a
// byte array or string over 65535 bytes, a string that is not UTF-8, or a
// frame over kMaxFrameBytes. Thread-safe.
absl::StatusOr<std::string> EncodeFrame(const Frame& frame);

}  // namespace event_stream

// Splits an event stream into its frames as their bytes arrive: each
// segment is one whole frame whose checksums match and whose headers
// decode. Element(segment) is the segment itself, for
// ChunkDecoder::DecodeElement to decode with event_stream::DecodeFrame.
//
// status() becomes INVALID_ARGUMENT "event stream: frame at byte N: ..." as
// soon as the bytes show it: a total length under 16 once its 4 bytes are
// in, a headers length that does not fit once its 4 bytes are in, a prelude
// CRC that does not match once the 12-byte prelude is in, and a message CRC
// or header that does not once the whole frame is; RESOURCE_EXHAUSTED for a
// total length over `max_frame_bytes`. Finish fails with INVALID_ARGUMENT
// when the stream ends inside a frame (its bytes stay in Rest()).
class EventStreamSplitter final : public ElementSplitter {
 public:
  explicit EventStreamSplitter(size_t max_frame_bytes = event_stream::kMaxFrameBytes);

  std::vector<std::string> Feed(absl::string_view bytes) override;
  absl::Status Finish() override;
  const absl::Status& status() const override { return status_; }
  const std::string& Rest() const override { return pending_; }
  // The segment as it is: a frame is decoded as a whole.
  std::string Element(absl::string_view segment) const override;

 private:
  // Checks what of the pending frame's prelude has arrived.
  absl::Status CheckPrelude() const;
  absl::Status Fail(absl::StatusCode code, absl::string_view what) const;

  const size_t max_frame_bytes_;
  std::string pending_;        // the bytes of the frame not yet complete
  size_t pending_offset_ = 0;  // where it starts in the stream
  bool finished_ = false;
  absl::Status status_;
};

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_EVENT_STREAM_H_
