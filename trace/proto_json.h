// Protos as JSON text that is the same bytes in every process, for what
// scripts and agents read: `understudy trace --json`, `show --json`, the MCP
// tools' results.
#ifndef UNDERSTUDY_TRACE_PROTO_JSON_H_
#define UNDERSTUDY_TRACE_PROTO_JSON_H_

#include <string>

#include "google/protobuf/message.h"

namespace understudy {
namespace trace {

// One line of proto3 JSON for `m` with the proto's field names
// (`time_micros`, not `timeMicros`) and map fields (attributes) in key
// order — MessageToJsonString prints maps in iteration order, which differs
// from one process to the next. With `all_fields`, fields at their default
// value (false, 0) are printed too, for scripts that read them.
std::string ToJson(const google::protobuf::Message& m, bool all_fields = false);

}  // namespace trace
}  // namespace understudy

#endif  // UNDERSTUDY_TRACE_PROTO_JSON_H_
