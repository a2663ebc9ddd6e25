#include "trace/render.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace understudy {
namespace trace {

std::string Shorten(absl::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t cut = max;
  // Back off UTF-8 continuation bytes so that a character is never split.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(s.substr(0, cut), "... (", s.size(), " bytes)");
}

std::string Quote(absl::string_view s) {
  if (s.size() <= kMaxShownBytes) {
    return nlohmann::json(std::string(s))
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  size_t cut = kMaxShownBytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(nlohmann::json(std::string(s.substr(0, cut)))
                          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                      "... (", s.size(), " bytes)");
}

std::string ShortJson(const nlohmann::json& value) {
  return Shorten(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string SeqList(const std::vector<int64_t>& seqs) {
  auto format = [](std::string* out, int64_t seq) { absl::StrAppend(out, "#", seq); };
  if (seqs.size() <= kMaxShownSeqs) return absl::StrJoin(seqs, ", ", format);
  std::vector<int64_t> shown(seqs.begin(), seqs.begin() + kMaxShownSeqs);
  return absl::StrCat(absl::StrJoin(shown, ", ", format), " and ", seqs.size() - kMaxShownSeqs,
                      " more");
}

std::string Count(size_t n, absl::string_view singular, absl::string_view plural) {
  return absl::StrCat(n, " ", n == 1 ? singular : plural);
}

bool Compare(v1::Comparison op, int64_t actual, int64_t n) {
  switch (op) {
    case v1::COMPARISON_EQ:
      return actual == n;
    case v1::COMPARISON_NE:
      return actual != n;
    case v1::COMPARISON_LT:
      return actual < n;
    case v1::COMPARISON_LE:
      return actual <= n;
    case v1::COMPARISON_GT:
      return actual > n;
    case v1::COMPARISON_GE:
      return actual >= n;
    default:
      return false;
  }
}

std::string ComparisonWords(v1::Comparison op, int64_t n) {
  switch (op) {
    case v1::COMPARISON_EQ:
      return absl::StrCat("exactly ", n);
    case v1::COMPARISON_NE:
      return absl::StrCat("other than ", n);
    case v1::COMPARISON_LT:
      return absl::StrCat("fewer than ", n);
    case v1::COMPARISON_LE:
      return absl::StrCat("at most ", n);
    case v1::COMPARISON_GT:
      return absl::StrCat("more than ", n);
    case v1::COMPARISON_GE:
      return absl::StrCat("at least ", n);
    default:
      return absl::StrCat("(unknown comparison ", static_cast<int>(op), ") ", n);
  }
}

std::string ComparisonSymbol(v1::Comparison op) {
  switch (op) {
    case v1::COMPARISON_EQ:
      return "==";
    case v1::COMPARISON_NE:
      return "!=";
    case v1::COMPARISON_LT:
      return "<";
    case v1::COMPARISON_LE:
      return "<=";
    case v1::COMPARISON_GT:
      return ">";
    case v1::COMPARISON_GE:
      return ">=";
    default:
      return "?";
  }
}

absl::string_view MatchName(v1::SequenceMatch m) {
  switch (m) {
    case v1::SEQUENCE_MATCH_EXACT:
      return "exact";
    case v1::SEQUENCE_MATCH_SUBSEQUENCE:
      return "subsequence";
    case v1::SEQUENCE_MATCH_PREFIX:
      return "prefix";
    default:
      return "unknown";
  }
}

std::optional<v1::SequenceMatch> MatchFromName(absl::string_view name) {
  for (v1::SequenceMatch m :
       {v1::SEQUENCE_MATCH_EXACT, v1::SEQUENCE_MATCH_SUBSEQUENCE, v1::SEQUENCE_MATCH_PREFIX}) {
    if (MatchName(m) == name) return m;
  }
  return std::nullopt;
}

}  // namespace trace
}  // namespace understudy
