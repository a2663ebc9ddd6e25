// The session file: a recorded session as JSONL text, for review and diffs
// in git and for moving sessions between stores.
//
// Line 1 is a header, then one line per exchange in seq order (1..N), each a
// v1::SessionFileLine in protobuf's JSON mapping with the .proto field names:
//
//   {"header":{"format":"understudy.session/v1","name":"golden","exchange_count":"2","created_at_micros":"1700000000000000"}}
//   {"exchange":{"seq":"1","agent":"planner","request":{...},"response":{...}}}
//   {"exchange":{"seq":"2",...}}
//
// Writing is deterministic: the same session always gives the same bytes
// (fields in field-number order, defaults omitted, every line ending in
// "\n"), so parsing a written file and writing it again gives it back
// byte for byte.
#ifndef UNDERSTUDY_STORE_SESSION_FILE_H_
#define UNDERSTUDY_STORE_SESSION_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {

// The header's `format`, exactly.
inline constexpr char kSessionFileFormat[] = "understudy.session/v1";

struct SessionFile {
  v1::SessionFileHeader header;
  // In seq order, seqs 1..N.
  std::vector<v1::Exchange> exchanges;
};

// Bounds on what ParseSessionFile accepts, so a hostile or broken file
// cannot make the store allocate without limit.
struct SessionFileLimits {
  size_t max_line_bytes = size_t{64} << 20;  // 64 MiB
  size_t max_total_bytes = size_t{1} << 30;  // 1 GiB
  int64_t max_exchanges = int64_t{1} << 20;
};

// The JSONL text of `file`. The header's `format` and `exchange_count` are
// written from kSessionFileFormat and the exchanges themselves (whatever the
// struct holds), so the output always passes ParseSessionFile's checks.
// INVALID_ARGUMENT if the exchanges' seqs are not 1..N in order, or if a
// string is not valid UTF-8 (JSON cannot carry it).
absl::StatusOr<std::string> WriteSessionFile(const SessionFile& file);

// Parses and validates JSONL text. Everything is checked before anything is
// returned: the header is line 1 and appears once, its format is exactly
// kSessionFileFormat, every line is a valid SessionFileLine (unknown fields
// and wrong types are errors), exchange seqs are 1..N in order, their count
// equals the header's exchange_count, and `limits` hold. A missing newline
// after the last line is accepted; an empty line is not.
//
// Fails with INVALID_ARGUMENT whose message starts with the 1-based line
// number and says what is wrong, e.g.
//   line 3: invalid JSON: Unexpected token. near "{oops"
//   line 2: exchange.request.messages[0].bogus: Cannot find field.
//   line 1: expected a header line with format "understudy.session/v1", got an exchange
absl::StatusOr<SessionFile> ParseSessionFile(absl::string_view jsonl,
                                             const SessionFileLimits& limits = SessionFileLimits());

}  // namespace store
}  // namespace understudy

#endif  // UNDERSTUDY_STORE_SESSION_FILE_H_
