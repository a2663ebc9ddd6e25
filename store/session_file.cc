#include "store/session_file.h"

#include <google/protobuf/stubs/stringpiece.h>
#include <google/protobuf/util/json_util.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "store/proto_utf8.h"
#include "understudy/v1/understudy.pb.h"
#include "validation/utf8.h"

namespace understudy {
namespace store {
namespace {

namespace pbutil = ::google::protobuf::util;

absl::Status LineError(int64_t line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", what));
}

// Shortens `text` for an error message.
std::string Excerpt(absl::string_view text) {
  constexpr size_t kMax = 60;
  if (text.size() <= kMax) return std::string(text);
  return absl::StrCat(text.substr(0, kMax), "...");
}

// Rewrites a protobuf JSON parser error into "what is wrong, where".
//
// Protobuf 3.21 reports syntax errors as "<message>\n<context>\n<caret>" and
// schema errors as "(<path>) <field>: <message>" or "(<path>): <message>"
// or "<field>: <message>". Syntax errors become "invalid JSON: <message> near
// "<context>""; schema errors become "<path>.<field>: <message>". Anything
// else is passed through unchanged.
std::string DescribeParseError(absl::string_view message) {
  std::vector<absl::string_view> parts = absl::StrSplit(message, '\n');
  if (parts.size() > 1) {
    std::string out = absl::StrCat("invalid JSON: ", parts[0]);
    absl::string_view context = absl::StripAsciiWhitespace(parts[1]);
    if (!context.empty()) absl::StrAppend(&out, " near \"", Excerpt(context), "\"");
    return out;
  }
  if (absl::StartsWith(message, "(")) {
    size_t close = message.find(')');
    if (close != absl::string_view::npos) {
      absl::string_view path = message.substr(1, close - 1);
      absl::string_view rest = message.substr(close + 1);
      if (absl::StartsWith(rest, ":")) return absl::StrCat(path, rest);  // "(p): m"
      if (absl::StartsWith(rest, " ")) return absl::StrCat(path, ".", rest.substr(1));
    }
  }
  if (absl::StartsWith(message, ": ")) {
    return absl::StrCat("not a session file line: ", message.substr(2));
  }
  return std::string(message);
}

std::string DescribeLine(const v1::SessionFileLine& line) {
  switch (line.line_case()) {
    case v1::SessionFileLine::kHeader:
      return "a header";
    case v1::SessionFileLine::kExchange:
      return "an exchange";
    default:
      return "neither a header nor an exchange";
  }
}

}  // namespace

absl::StatusOr<std::string> WriteSessionFile(const SessionFile& file) {
  pbutil::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  // Explicit rather than relying on the defaults: these choices are part of
  // the format (omitted defaults, enum names, no whitespace).
  options.add_whitespace = false;
  options.always_print_primitive_fields = false;
  options.always_print_enums_as_ints = false;

  std::string out;
  v1::SessionFileLine line;
  v1::SessionFileHeader* header = line.mutable_header();
  *header = file.header;
  header->set_format(kSessionFileFormat);
  header->set_exchange_count(static_cast<int64_t>(file.exchanges.size()));
  pbutil::Status printed = pbutil::MessageToJsonString(line, &out, options);
  if (!printed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("session file header: ", printed.message().ToString()));
  }
  out.push_back('\n');

  std::string json;
  for (size_t i = 0; i < file.exchanges.size(); ++i) {
    const v1::Exchange& exchange = file.exchanges[i];
    const int64_t want = static_cast<int64_t>(i) + 1;
    if (exchange.seq() != want) {
      return absl::InvalidArgumentError(absl::StrCat("exchange ", want, " has seq ", exchange.seq(),
                                                     "; a session file needs seqs 1..N in order"));
    }
    *line.mutable_exchange() = exchange;
    json.clear();
    printed = pbutil::MessageToJsonString(line, &json, options);
    if (!printed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("exchange seq ", exchange.seq(), ": ", printed.message().ToString()));
    }
    out.append(json);
    out.push_back('\n');
  }
  return out;
}

absl::StatusOr<SessionFile> ParseSessionFile(absl::string_view jsonl,
                                             const SessionFileLimits& limits) {
  if (jsonl.size() > limits.max_total_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "session file is ", jsonl.size(), " bytes, over the limit of ", limits.max_total_bytes));
  }
  if (jsonl.empty()) {
    return LineError(1, absl::StrCat("expected a header line with format \"", kSessionFileFormat,
                                     "\", got an empty file"));
  }

  pbutil::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  options.case_insensitive_enum_parsing = false;

  SessionFile file;
  int64_t line_number = 0;
  size_t pos = 0;
  v1::SessionFileLine line;
  while (pos < jsonl.size()) {
    ++line_number;
    size_t end = jsonl.find('\n', pos);
    if (end == absl::string_view::npos) end = jsonl.size();  // No final newline.
    absl::string_view text = jsonl.substr(pos, end - pos);
    pos = end + 1;

    if (text.size() > limits.max_line_bytes) {
      return LineError(line_number,
                       absl::StrCat("line is ", text.size(), " bytes, over the limit of ",
                                    limits.max_line_bytes));
    }
    if (absl::StripAsciiWhitespace(text).empty()) {
      return LineError(line_number, "empty line");
    }
    if (std::optional<size_t> bad = validation::FindInvalidUtf8(text)) {
      return LineError(line_number, absl::StrCat("invalid UTF-8 at byte ", *bad + 1,
                                                 " of the line; session files are UTF-8"));
    }
    line.Clear();
    pbutil::Status parsed = pbutil::JsonStringToMessage(
        google::protobuf::StringPiece(text.data(), text.size()), &line, options);
    if (!parsed.ok()) {
      return LineError(line_number, DescribeParseError(parsed.message().ToString()));
    }
    // A \u escape can still name half of a surrogate pair.
    if (std::optional<std::string> field = FindInvalidUtf8Field(line)) {
      return LineError(line_number, absl::StrCat(*field, ": not valid UTF-8 once unescaped"));
    }

    if (line_number == 1) {
      if (!line.has_header()) {
        return LineError(1, absl::StrCat("expected a header line with format \"",
                                         kSessionFileFormat, "\", got ", DescribeLine(line)));
      }
      if (line.header().format() != kSessionFileFormat) {
        return LineError(1, absl::StrCat("header format is \"", Excerpt(line.header().format()),
                                         "\", expected \"", kSessionFileFormat, "\""));
      }
      if (line.header().exchange_count() < 0 ||
          line.header().exchange_count() > limits.max_exchanges) {
        return LineError(1, absl::StrCat("header exchange_count ", line.header().exchange_count(),
                                         " is outside 0..", limits.max_exchanges));
      }
      file.header = std::move(*line.mutable_header());
      continue;
    }
    switch (line.line_case()) {
      case v1::SessionFileLine::kHeader:
        return LineError(line_number, "a second header line (the header is line 1, once)");
      case v1::SessionFileLine::kExchange:
        break;
      default:
        return LineError(line_number, "neither a header nor an exchange");
    }
    const int64_t want = static_cast<int64_t>(file.exchanges.size()) + 1;
    if (want > file.header.exchange_count()) {
      return LineError(line_number,
                       absl::StrCat("more exchanges than the header's exchange_count (",
                                    file.header.exchange_count(), ")"));
    }
    if (line.exchange().seq() != want) {
      return LineError(line_number, absl::StrCat("exchange seq is ", line.exchange().seq(),
                                                 ", expected ", want, " (seqs run 1..N in order)"));
    }
    file.exchanges.push_back(std::move(*line.mutable_exchange()));
  }

  if (static_cast<int64_t>(file.exchanges.size()) != file.header.exchange_count()) {
    return LineError(1, absl::StrCat("header exchange_count is ", file.header.exchange_count(),
                                     " but the file has ", file.exchanges.size(), " exchanges"));
  }
  return file;
}

}  // namespace store
}  // namespace understudy
