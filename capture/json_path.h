// JSON paths for configuration: `a.b`, `messages[*].name`, `messages[0]`.
// Used by match normalization (fields to ignore) and by redaction (fields
// never to store).
#ifndef UNDERSTUDY_CAPTURE_JSON_PATH_H_
#define UNDERSTUDY_CAPTURE_JSON_PATH_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace capture {

class JsonPath {
 public:
  // One step: an object key, an array index, or every array element.
  struct Step {
    enum Kind { kKey, kIndex, kEvery } kind;
    std::string key;
    size_t index = 0;
  };

  // INVALID_ARGUMENT saying what is wrong and where ("expected [*] or [N],
  // got [x]", "empty key at 3"), without naming the flag: callers prefix it.
  static absl::StatusOr<JsonPath> Parse(absl::string_view text);

  const std::string& text() const { return text_; }

  // Calls `f` on every value the path reaches in `root` (none when a step
  // does not apply: a missing key, an index out of range, a type mismatch).
  template <typename Json>
  void ForEach(Json* root, const std::function<void(Json*)>& f) const {
    Walk(root, 0, f);
  }

  // Removes what the path reaches: keys are erased; array elements become
  // null so that later indexes keep their meaning.
  template <typename Json>
  void Remove(Json* root) const {
    RemoveAt(root, 0);
  }

 private:
  template <typename Json>
  void Walk(Json* node, size_t at, const std::function<void(Json*)>& f) const {
    if (at == steps_.size()) return f(node);
    const Step& step = steps_[at];
    if (step.kind == Step::kKey) {
      if (!node->is_object()) return;
      auto it = node->find(step.key);
      if (it != node->end()) Walk(&*it, at + 1, f);
    } else if (step.kind == Step::kIndex) {
      if (node->is_array() && step.index < node->size()) Walk(&(*node)[step.index], at + 1, f);
    } else if (node->is_array()) {
      for (auto& element : *node) Walk(&element, at + 1, f);
    }
  }

  template <typename Json>
  void RemoveAt(Json* node, size_t at) const {
    const Step& step = steps_[at];
    const bool last = at + 1 == steps_.size();
    if (step.kind == Step::kKey) {
      if (!node->is_object()) return;
      auto it = node->find(step.key);
      if (it == node->end()) return;
      if (last) {
        node->erase(it);
      } else {
        RemoveAt(&*it, at + 1);
      }
    } else if (step.kind == Step::kIndex) {
      if (!node->is_array() || step.index >= node->size()) return;
      if (last) {
        (*node)[step.index] = nullptr;
      } else {
        RemoveAt(&(*node)[step.index], at + 1);
      }
    } else if (node->is_array()) {
      for (auto& element : *node) {
        if (last) {
          element = nullptr;
        } else {
          RemoveAt(&element, at + 1);
        }
      }
    }
  }

  std::string text_;
  std::vector<Step> steps_;
};

}  // namespace capture
}  // namespace understudy

#endif  // UNDERSTUDY_CAPTURE_JSON_PATH_H_
