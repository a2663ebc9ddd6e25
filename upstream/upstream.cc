#include "upstream/upstream.h"

#include <utility>

namespace understudy {
namespace upstream {

void UpstreamCancel::Cancel() {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return;
  cancelled_ = true;
  if (hook_) hook_();
}

bool UpstreamCancel::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

void UpstreamCancel::Set(std::function<void()> hook) {
  absl::MutexLock lock(&mu_);
  hook_ = std::move(hook);
  if (cancelled_ && hook_) hook_();
}

void UpstreamCancel::Clear() {
  absl::MutexLock lock(&mu_);
  hook_ = nullptr;
}

}  // namespace upstream
}  // namespace understudy
