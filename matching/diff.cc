#include "matching/diff.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace understudy {
namespace matching {
namespace {

using nlohmann::json;

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : absl::StrCat(path, ".", key);
}

// Walks both trees; `emit` is called per differing leaf and returns false to
// stop the walk.
template <typename Emit>
bool Walk(const json* recorded, const json* got, const std::string& path, Emit& emit) {
  if (recorded != nullptr && got != nullptr) {
    if (recorded->is_object() && got->is_object()) {
      auto r = recorded->begin();
      auto g = got->begin();
      // Both iterate in sorted key order: merge them.
      while (r != recorded->end() || g != got->end()) {
        if (g == got->end() || (r != recorded->end() && r.key() < g.key())) {
          if (!Walk(&r.value(), nullptr, Join(path, r.key()), emit)) return false;
          ++r;
        } else if (r == recorded->end() || g.key() < r.key()) {
          if (!Walk(nullptr, &g.value(), Join(path, g.key()), emit)) return false;
          ++g;
        } else {
          if (!Walk(&r.value(), &g.value(), Join(path, r.key()), emit)) return false;
          ++r;
          ++g;
        }
      }
      return true;
    }
    if (recorded->is_array() && got->is_array()) {
      size_t n = std::max(recorded->size(), got->size());
      for (size_t i = 0; i < n; ++i) {
        const json* ri = i < recorded->size() ? &(*recorded)[i] : nullptr;
        const json* gi = i < got->size() ? &(*got)[i] : nullptr;
        if (!Walk(ri, gi, absl::StrCat(path, "[", i, "]"), emit)) return false;
      }
      return true;
    }
    if (*recorded == *got) return true;
  }
  return emit(path, recorded, got);
}

// Backs `pos` up to the start of a UTF-8 character.
size_t CharStart(const std::string& s, size_t pos) {
  while (pos > 0 && pos < s.size() && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) --pos;
  return pos;
}

// JSON text of `s` from byte `from`, at most `max_chars` bytes of it, with an
// ellipsis on each side that was cut.
std::string Excerpt(const std::string& s, size_t from, size_t max_chars) {
  from = CharStart(s, std::min(from, s.size()));
  size_t to = CharStart(s, std::min(s.size(), from + max_chars));
  if (to < s.size() && to == from) to = s.size();  // a single long character
  std::string text = json(s.substr(from, to - from)).dump(-1, ' ', false, json::error_handler_t::replace);
  if (from > 0) text.insert(1, "…");
  if (to < s.size()) text.insert(text.size() - 1, "…");
  return text;
}

// The scalars (and empty containers) in `value`, counting at most `limit`.
size_t Leaves(const json& value, size_t limit) {
  if (!value.is_structured() || value.empty()) return 1;
  size_t n = 0;
  for (const json& child : value) {
    n += Leaves(child, limit - n);
    if (n >= limit) return limit;
  }
  return n;
}

constexpr size_t kMaxShown = 120;
constexpr size_t kContextBefore = 40;

}  // namespace

std::string Abbreviate(const json& value, size_t max_chars) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() <= max_chars) return text;
  // Cut on a UTF-8 boundary.
  size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  text += "…";
  return text;
}

std::vector<JsonDiff> DiffJson(const json& recorded, const json& got, size_t max_diffs) {
  std::vector<JsonDiff> out;
  auto emit = [&](const std::string& path, const json* r, const json* g) {
    if (r != nullptr && g != nullptr && r->is_string() && g->is_string()) {
      // Long texts: show both from a little before their first difference,
      // so the difference is visible however far in it is.
      const std::string& rs = r->get_ref<const std::string&>();
      const std::string& gs = g->get_ref<const std::string&>();
      if (rs.size() > kMaxShown || gs.size() > kMaxShown) {
        size_t first = std::mismatch(rs.begin(), rs.begin() + std::min(rs.size(), gs.size()),
                                     gs.begin())
                           .first -
                       rs.begin();
        size_t from = first > kContextBefore ? first - kContextBefore : 0;
        out.push_back(JsonDiff{path, Excerpt(rs, from, kMaxShown), Excerpt(gs, from, kMaxShown)});
        return out.size() < max_diffs;
      }
    }
    out.push_back(JsonDiff{path, r ? Abbreviate(*r) : "", g ? Abbreviate(*g) : ""});
    return out.size() < max_diffs;
  };
  if (max_diffs > 0) Walk(&recorded, &got, "", emit);
  return out;
}

size_t CountJsonDiffs(const json& recorded, const json& got, size_t limit) {
  size_t count = 0;
  auto emit = [&](const std::string&, const json*, const json*) { return ++count < limit; };
  if (limit > 0) Walk(&recorded, &got, "", emit);
  return count;
}

size_t JsonDistance(const json& recorded, const json& got, size_t limit) {
  size_t distance = 0;
  auto emit = [&](const std::string&, const json* r, const json* g) {
    distance += r != nullptr && g != nullptr ? 1 : std::max<size_t>(1, Leaves(r ? *r : *g, limit));
    return distance < limit;
  };
  if (limit > 0) Walk(&recorded, &got, "", emit);
  return std::min(distance, limit);
}

}  // namespace matching
}  // namespace understudy
