// MCP's stdio framing: one JSON-RPC message per line, on the agent's side of
// `understudy mcp-proxy` and on the MCP server's.
#ifndef UNDERSTUDY_CLI_MCP_STDIO_H_
#define UNDERSTUDY_CLI_MCP_STDIO_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace understudy {
namespace cli {

// The longest message (line) accepted on stdin, and on a child's stdout.
inline constexpr size_t kMaxMcpMessageBytes = size_t{16} << 20;
// Splits a byte stream into newline-delimited lines (MCP's stdio framing).
// A '\r' before the '\n' is dropped. Not thread-safe.
class LineSplitter {
 public:
  struct Line {
    // The line without its terminator; empty when `too_long`.
    std::string text;
    // The line had more than the maximum bytes. Its bytes were discarded
    // as they came (never held in memory), and reading goes on after it.
    bool too_long = false;
  };

  explicit LineSplitter(size_t max_line_bytes = kMaxMcpMessageBytes);

  // Consumes `data` and appends every line it completes to `*lines`, in
  // order. A partial last line waits for the next Feed.
  void Feed(absl::string_view data, std::vector<Line>* lines);
  // The end of the stream: appends the unterminated last line, if any.
  void Finish(std::vector<Line>* lines);

 private:
  const size_t max_;
  std::string partial_;
  bool discarding_ = false;  // Inside a line already known to be too long.
};
// `text` as one line: unchanged when it holds no CR or LF, else re-serialized
// compactly. INVALID_ARGUMENT when it has line breaks and is not JSON.
absl::StatusOr<std::string> ToOneLine(std::string text);
}  // namespace cli
}  // namespace understudy

#endif  // UNDERSTUDY_CLI_MCP_STDIO_H_
