// UTF-8 in stored protobuf messages.
//
// proto3 `string` fields must hold valid UTF-8: a message holding anything
// else still serializes (C++ only logs), but no parser, ours or a client's,
// accepts it back. Every entry point now refuses such text, but a store
// written before those checks may hold some, and one bad string must not
// make a whole trace or session unreadable (Traces.Query answering
// DATA_LOSS, `understudy show` failing). ParseStored reads it back repaired.
#ifndef UNDERSTUDY_STORE_PROTO_UTF8_H_
#define UNDERSTUDY_STORE_PROTO_UTF8_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace understudy {
namespace store {

// The path of the first string field of `message` (depth first, in field
// order) that is not valid UTF-8, e.g. "request.messages[2].content" or
// "attributes[\"k\"]", or nullopt when every string is valid.
std::optional<std::string> FindInvalidUtf8Field(const google::protobuf::Message& message);

// Parses `bytes` (a serialized message of `out`'s type) into `out`. When a
// strict parse fails, the bytes' string fields are repaired (each byte that
// is not part of a well-formed UTF-8 sequence becomes U+FFFD) and parsed
// again; `*repaired` (when given) says whether that happened. DATA_LOSS when
// the bytes are not a message of that type even so.
absl::Status ParseStored(absl::string_view bytes, google::protobuf::Message* out,
                         bool* repaired = nullptr);

}  // namespace store
}  // namespace understudy

#endif  // UNDERSTUDY_STORE_PROTO_UTF8_H_
