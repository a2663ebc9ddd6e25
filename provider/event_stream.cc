#include "provider/event_stream.h"

#include <zlib.h>

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "validation/utf8.h"

namespace understudy {
namespace provider {
namespace event_stream {
namespace {

// What the prelude holds: total length, headers length, prelude CRC.
constexpr size_t kPreludeBytes = 12;
constexpr size_t kCrcBytes = 4;
constexpr size_t kMaxNameBytes = 255;
constexpr size_t kMaxValueBytes = 65535;
constexpr absl::string_view kFrameError = "event stream frame: ";

// The wire type of each HeaderValue alternative but bool (0 or 1), by the
// alternative's index.
enum WireType : uint8_t {
  kTrue = 0,
  kFalse = 1,
  kByte = 2,
  kShort = 3,
  kInteger = 4,
  kLong = 5,
  kBytes = 6,
  kString = 7,
  kTimestamp = 8,
  kUuid = 9,
};

// The `count`-byte big-endian unsigned integer at `at`.
uint64_t ReadBigEndian(absl::string_view bytes, size_t at, size_t count) {
  uint64_t value = 0;
  for (size_t i = 0; i < count; ++i) {
    value = (value << 8) | static_cast<uint8_t>(bytes[at + i]);
  }
  return value;
}

uint32_t ReadU32(absl::string_view bytes, size_t at) {
  return static_cast<uint32_t>(ReadBigEndian(bytes, at, 4));
}

void AppendBigEndian(uint64_t value, size_t count, std::string* out) {
  for (size_t i = count; i > 0; --i) out->push_back(static_cast<char>(value >> (8 * (i - 1))));
}

absl::Status FrameError(size_t at, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(kFrameError, what, " at byte ", at));
}

std::string Hex(uint32_t value) { return absl::StrCat("0x", absl::Hex(value, absl::kZeroPad8)); }

// A header name as messages show it.
std::string Quoted(absl::string_view name) {
  return absl::StrCat("\"", absl::CHexEscape(name.substr(0, 64)), "\"");
}

// Reads the headers section of a frame, `bytes` being the whole frame.
class HeaderReader {
 public:
  HeaderReader(absl::string_view bytes, size_t begin, size_t end)
      : bytes_(bytes), at_(begin), end_(end) {}

  absl::Status ReadAll(std::vector<Header>* out) {
    while (at_ < end_) {
      Header header;
      US_RETURN_IF_ERROR(ReadName(&header.name));
      US_RETURN_IF_ERROR(ReadValue(header.name, &header.value));
      out->push_back(std::move(header));
    }
    return absl::OkStatus();
  }

 private:
  // Fails unless `count` more bytes are in the headers section.
  absl::Status Need(size_t count, absl::string_view what) const {
    if (end_ - at_ >= count) return absl::OkStatus();
    return FrameError(at_, absl::StrCat(what, " runs past the headers section"));
  }

  absl::Status ReadName(std::string* name) {
    const size_t start = at_;
    const size_t length = static_cast<uint8_t>(bytes_[at_++]);
    US_RETURN_IF_ERROR(Need(length, "a header name"));
    *name = std::string(bytes_.substr(at_, length));
    if (!validation::IsValidUtf8(*name)) return FrameError(start, "a header name is not UTF-8");
    at_ += length;
    return absl::OkStatus();
  }

  uint64_t Take(size_t count) {
    const uint64_t value = ReadBigEndian(bytes_, at_, count);
    at_ += count;
    return value;
  }

  // A value of `count` bytes of the header `name`, or its length-prefixed
  // bytes when `count` is 0.
  absl::StatusOr<std::string> TakeBytes(const std::string& name, size_t count) {
    const std::string what = absl::StrCat("the value of header ", Quoted(name));
    if (count == 0) {
      US_RETURN_IF_ERROR(Need(2, what));
      count = Take(2);
    }
    US_RETURN_IF_ERROR(Need(count, what));
    std::string value(bytes_.substr(at_, count));
    at_ += count;
    return value;
  }

  absl::Status ReadValue(const std::string& name, HeaderValue* value) {
    US_RETURN_IF_ERROR(Need(1, absl::StrCat("the type of header ", Quoted(name))));
    const size_t type_at = at_;
    const uint8_t type = static_cast<uint8_t>(bytes_[at_++]);
    // The fixed size of the value of `type`.
    static constexpr size_t kSizes[] = {0, 0, 1, 2, 4, 8, 0, 0, 8, 16};
    if (type > kUuid) {
      return FrameError(type_at, absl::StrCat("header ", Quoted(name), " has unknown type ", type));
    }
    if (type == kTrue || type == kFalse) {
      *value = type == kTrue;
      return absl::OkStatus();
    }
    US_ASSIGN_OR_RETURN(std::string raw, TakeBytes(name, kSizes[type]));
    const uint64_t number =
        kSizes[type] > 0 && kSizes[type] <= 8 ? ReadBigEndian(raw, 0, raw.size()) : 0;
    switch (type) {
      case kByte:
        *value = static_cast<int8_t>(number);
        break;
      case kShort:
        *value = static_cast<int16_t>(number);
        break;
      case kInteger:
        *value = static_cast<int32_t>(number);
        break;
      case kLong:
        *value = static_cast<int64_t>(number);
        break;
      case kBytes:
        *value = ByteArray{std::move(raw)};
        break;
      case kString:
        if (!validation::IsValidUtf8(raw)) {
          return FrameError(
              type_at, absl::StrCat("the string value of header ", Quoted(name), " is not UTF-8"));
        }
        *value = std::move(raw);
        break;
      case kTimestamp:
        *value = Timestamp{static_cast<int64_t>(number)};
        break;
      default: {  // kUuid
        Uuid uuid;
        std::copy(raw.begin(), raw.end(), uuid.bytes.begin());
        *value = uuid;
      }
    }
    return absl::OkStatus();
  }

  absl::string_view bytes_;
  size_t at_;
  const size_t end_;
};

// Appends one header's type and value.
struct ValueWriter {
  std::string* out;
  const std::string& name;

  absl::Status Fixed(WireType type, uint64_t value, size_t count) const {
    out->push_back(static_cast<char>(type));
    AppendBigEndian(value, count, out);
    return absl::OkStatus();
  }
  absl::Status Sized(WireType type, const std::string& bytes) const {
    if (bytes.size() > kMaxValueBytes) {
      return absl::InvalidArgumentError(absl::StrCat(kFrameError, "the value of header ",
                                                     Quoted(name), " is over ", kMaxValueBytes,
                                                     " bytes"));
    }
    out->push_back(static_cast<char>(type));
    AppendBigEndian(bytes.size(), 2, out);
    out->append(bytes);
    return absl::OkStatus();
  }

  absl::Status operator()(bool v) const {
    out->push_back(static_cast<char>(v ? kTrue : kFalse));
    return absl::OkStatus();
  }
  absl::Status operator()(int8_t v) const { return Fixed(kByte, static_cast<uint8_t>(v), 1); }
  absl::Status operator()(int16_t v) const { return Fixed(kShort, static_cast<uint16_t>(v), 2); }
  absl::Status operator()(int32_t v) const { return Fixed(kInteger, static_cast<uint32_t>(v), 4); }
  absl::Status operator()(int64_t v) const { return Fixed(kLong, static_cast<uint64_t>(v), 8); }
  absl::Status operator()(const ByteArray& v) const { return Sized(kBytes, v.bytes); }
  absl::Status operator()(const std::string& v) const {
    if (!validation::IsValidUtf8(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(kFrameError, "the string value of header ", Quoted(name), " is not UTF-8"));
    }
    return Sized(kString, v);
  }
  absl::Status operator()(const Timestamp& v) const {
    return Fixed(kTimestamp, static_cast<uint64_t>(v.millis), 8);
  }
  absl::Status operator()(const Uuid& v) const {
    out->push_back(static_cast<char>(kUuid));
    out->append(reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size());
    return absl::OkStatus();
  }
};

absl::StatusOr<std::string> EncodeHeaders(const std::vector<Header>& headers) {
  std::string out;
  for (const Header& h : headers) {
    if (h.name.size() > kMaxNameBytes || !validation::IsValidUtf8(h.name)) {
      return absl::InvalidArgumentError(absl::StrCat(kFrameError, "header name ", Quoted(h.name),
                                                     " is over 255 bytes or not UTF-8"));
    }
    out.push_back(static_cast<char>(h.name.size()));
    out.append(h.name);
    US_RETURN_IF_ERROR(std::visit(ValueWriter{&out, h.name}, h.value));
  }
  return out;
}

// Checks the prelude (the first 12 bytes) of `bytes`, a whole frame.
absl::Status CheckFramePrelude(absl::string_view bytes) {
  if (bytes.size() < kMinFrameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(kFrameError, bytes.size(),
                                                   " bytes, fewer than the ", kMinFrameBytes,
                                                   " of the smallest frame"));
  }
  const uint32_t total = ReadU32(bytes, 0);
  if (total != bytes.size()) {
    return FrameError(
        0, absl::StrCat("total length ", total, " is not the frame's ", bytes.size(), " bytes"));
  }
  if (total > kMaxFrameBytes) {
    return FrameError(0, absl::StrCat("total length ", total, " is over the bound of ",
                                      kMaxFrameBytes, " bytes"));
  }
  const uint32_t headers = ReadU32(bytes, 4);
  if (headers > total - kMinFrameBytes) {
    return FrameError(4, absl::StrCat("headers length ", headers, " leaves no room in a frame of ",
                                      total, " bytes"));
  }
  const uint32_t prelude_crc = Crc32(bytes.substr(0, 8));
  if (ReadU32(bytes, 8) != prelude_crc) {
    return FrameError(8, absl::StrCat("prelude CRC ", Hex(ReadU32(bytes, 8)), " does not match ",
                                      Hex(prelude_crc)));
  }
  return absl::OkStatus();
}

}  // namespace

const HeaderValue* Frame::Find(absl::string_view name) const {
  for (const Header& h : headers) {
    if (h.name == name) return &h.value;
  }
  return nullptr;
}

std::string Frame::StringHeader(absl::string_view name) const {
  const HeaderValue* value = Find(name);
  const std::string* text = value == nullptr ? nullptr : std::get_if<std::string>(value);
  return text == nullptr ? "" : *text;
}

uint32_t Crc32(absl::string_view bytes, uint32_t crc) {
  return static_cast<uint32_t>(
      crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

absl::StatusOr<Frame> DecodeFrame(absl::string_view bytes) {
  US_RETURN_IF_ERROR(CheckFramePrelude(bytes));
  const size_t crc_at = bytes.size() - kCrcBytes;
  const uint32_t message_crc = Crc32(bytes.substr(0, crc_at));
  if (ReadU32(bytes, crc_at) != message_crc) {
    return FrameError(crc_at, absl::StrCat("message CRC ", Hex(ReadU32(bytes, crc_at)),
                                           " does not match ", Hex(message_crc)));
  }
  const size_t headers_end = kPreludeBytes + ReadU32(bytes, 4);
  Frame frame;
  US_RETURN_IF_ERROR(HeaderReader(bytes, kPreludeBytes, headers_end).ReadAll(&frame.headers));
  frame.payload = std::string(bytes.substr(headers_end, crc_at - headers_end));
  return frame;
}

absl::StatusOr<std::string> EncodeFrame(const Frame& frame) {
  US_ASSIGN_OR_RETURN(std::string headers, EncodeHeaders(frame.headers));
  const size_t total = kMinFrameBytes + headers.size() + frame.payload.size();
  if (total > kMaxFrameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(kFrameError, total, " bytes, over the bound of ", kMaxFrameBytes));
  }
  std::string out;
  out.reserve(total);
  AppendBigEndian(total, 4, &out);
  AppendBigEndian(headers.size(), 4, &out);
  AppendBigEndian(Crc32(out), 4, &out);
  out.append(headers);
  out.append(frame.payload);
  AppendBigEndian(Crc32(out), 4, &out);
  return out;
}

}  // namespace event_stream

EventStreamSplitter::EventStreamSplitter(size_t max_frame_bytes)
    : max_frame_bytes_(max_frame_bytes) {}

absl::Status EventStreamSplitter::Fail(absl::StatusCode code, absl::string_view what) const {
  return absl::Status(code, absl::StrCat("event stream: frame at byte ", pending_offset_, ": ",
                                         absl::StripPrefix(what, event_stream::kFrameError)));
}

absl::Status EventStreamSplitter::CheckPrelude() const {
  using event_stream::kMinFrameBytes;
  if (pending_.size() < 4) return absl::OkStatus();
  const uint32_t total = event_stream::ReadU32(pending_, 0);
  if (total < kMinFrameBytes) {
    return Fail(absl::StatusCode::kInvalidArgument,
                absl::StrCat("total length ", total, " is under the ", kMinFrameBytes,
                             " bytes of the smallest frame"));
  }
  if (total > max_frame_bytes_) {
    return Fail(
        absl::StatusCode::kResourceExhausted,
        absl::StrCat("total length ", total, " is over the bound of ", max_frame_bytes_, " bytes"));
  }
  if (pending_.size() < 8) return absl::OkStatus();
  const uint32_t headers = event_stream::ReadU32(pending_, 4);
  if (headers > total - kMinFrameBytes) {
    return Fail(absl::StatusCode::kInvalidArgument,
                absl::StrCat("headers length ", headers, " leaves no room in a frame of ", total,
                             " bytes"));
  }
  if (pending_.size() < event_stream::kPreludeBytes) return absl::OkStatus();
  const uint32_t crc = event_stream::Crc32(absl::string_view(pending_).substr(0, 8));
  if (event_stream::ReadU32(pending_, 8) != crc) {
    return Fail(absl::StatusCode::kInvalidArgument,
                absl::StrCat("prelude CRC ", event_stream::Hex(event_stream::ReadU32(pending_, 8)),
                             " does not match ", event_stream::Hex(crc)));
  }
  return absl::OkStatus();
}

std::vector<std::string> EventStreamSplitter::Feed(absl::string_view bytes) {
  std::vector<std::string> segments;
  if (!status_.ok() || finished_) return segments;
  while (!bytes.empty()) {
    // Up to the frame's length, then up to its end.
    const size_t want = pending_.size() < 4 ? 4 - pending_.size()
                                            : event_stream::ReadU32(pending_, 0) - pending_.size();
    const size_t take = std::min(want, bytes.size());
    pending_.append(bytes.data(), take);
    bytes.remove_prefix(take);
    status_ = CheckPrelude();
    if (!status_.ok()) break;
    if (pending_.size() < 4 || pending_.size() < event_stream::ReadU32(pending_, 0)) continue;
    if (absl::StatusOr<event_stream::Frame> frame = event_stream::DecodeFrame(pending_);
        !frame.ok()) {
      status_ = Fail(absl::StatusCode::kInvalidArgument, frame.status().message());
      break;
    }
    pending_offset_ += pending_.size();
    segments.push_back(std::move(pending_));
    pending_.clear();
  }
  return segments;
}

absl::Status EventStreamSplitter::Finish() {
  if (finished_) return status_;
  finished_ = true;
  if (status_.ok() && !pending_.empty()) {
    const std::string expected =
        pending_.size() < 4 ? "" : absl::StrCat(" of ", event_stream::ReadU32(pending_, 0));
    status_ = Fail(
        absl::StatusCode::kInvalidArgument,
        absl::StrCat("the stream ends after ", pending_.size(), expected, " bytes of the frame"));
  }
  return status_;
}

std::string EventStreamSplitter::Element(absl::string_view segment) const {
  return std::string(segment);
}

}  // namespace provider
}  // namespace understudy
