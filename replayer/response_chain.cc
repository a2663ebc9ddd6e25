#include "replayer/response_chain.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace understudy {
namespace replayer {

size_t ResponseChain::Cost(const std::string& id, const ChainLink& link) {
  size_t bytes = id.size() + link.parent.size() + link.body_bytes + 96;
  for (const v1::Message& m : link.turn) bytes += m.ByteSizeLong();
  return bytes;
}

absl::Status ResponseChain::Remember(std::string id, ChainLink link) {
  if (id.empty()) return absl::InvalidArgumentError("response id: empty");
  auto shared = std::make_shared<const ChainLink>(std::move(link));
  absl::MutexLock lock(&mu_);
  const uint64_t generation = ++next_generation_;
  auto [it, inserted] = links_.try_emplace(id);
  if (!inserted) bytes_ -= Cost(id, *it->second.link);
  bytes_ += Cost(id, *shared);
  it->second = Held{std::move(shared), generation};
  order_.emplace_back(std::move(id), generation);
  EvictLocked();
  return absl::OkStatus();
}

void ResponseChain::EvictLocked() {
  while (!order_.empty() && (links_.size() > max_responses_ || bytes_ > max_bytes_ ||
                             order_.size() > 2 * max_responses_)) {
    const auto& [id, generation] = order_.front();
    auto it = links_.find(id);
    if (it != links_.end() && it->second.generation == generation) {
      bytes_ -= Cost(id, *it->second.link);
      links_.erase(it);
    }
    order_.pop_front();
  }
}

absl::StatusOr<std::vector<v1::Message>> ResponseChain::Resolve(absl::string_view id) const {
  std::vector<std::shared_ptr<const ChainLink>> links;
  {
    absl::MutexLock lock(&mu_);
    std::string next(id);
    while (!next.empty()) {
      auto it = links_.find(next);
      if (it == links_.end()) {
        if (links.empty()) {
          return absl::NotFoundError(absl::StrCat("no response \"", absl::CHexEscape(next),
                                                  "\" was recorded or served in this run"));
        }
        return absl::NotFoundError(absl::StrCat(
            "response \"", absl::CHexEscape(id), "\" continues \"", absl::CHexEscape(next),
            "\", which this run no longer holds (or never did)"));
      }
      if (links.size() >= kMaxChainLength) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the chain of response \"", absl::CHexEscape(id), "\" is longer than ",
            kMaxChainLength, " responses (or loops)"));
      }
      links.push_back(it->second.link);
      next = it->second.link->parent;
    }
  }
  std::vector<v1::Message> out;
  size_t total = 0;
  for (const auto& link : links) total += link->turn.size();
  out.reserve(total);
  for (auto it = links.rbegin(); it != links.rend(); ++it) {
    out.insert(out.end(), (*it)->turn.begin(), (*it)->turn.end());
  }
  return out;
}

absl::StatusOr<std::string> ResponseChain::Body(absl::string_view id) const {
  std::shared_ptr<const ChainLink> link;
  {
    absl::MutexLock lock(&mu_);
    auto it = links_.find(id);
    if (it == links_.end()) {
      return absl::NotFoundError(absl::StrCat("no response \"", absl::CHexEscape(id),
                                              "\" was recorded or served in this run"));
    }
    link = it->second.link;
  }
  return link->body ? link->body() : std::string();
}

size_t ResponseChain::size() const {
  absl::MutexLock lock(&mu_);
  return links_.size();
}

}  // namespace replayer
}  // namespace understudy
