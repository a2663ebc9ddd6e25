#include "engine/response_chain.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace understudy {
namespace engine {

size_t ResponseChain::Cost(const std::string& id, const ChainLink& link) {
  size_t bytes = id.size() + link.parent.size() + link.body_bytes + 96;
  for (const v1::Message& m : link.turn) bytes += m.ByteSizeLong();
  return bytes;
}

size_t ResponseChain::Cost(const Items& items) {
  size_t bytes = 0;
  for (const auto& [id, message] : items) bytes += 2 * id.size() + message.ByteSizeLong() + 96;
  return bytes;
}

absl::Status ResponseChain::Remember(std::string id, ChainLink link) {
  if (id.empty()) return absl::InvalidArgumentError("response id: empty");
  auto shared = std::make_shared<const ChainLink>(std::move(link));
  absl::MutexLock lock(&mu_);
  const uint64_t generation = ++next_generation_;
  auto [it, inserted] = links_.try_emplace(id);
  if (!inserted) {
    bytes_ -= Cost(id, *it->second.link);
    ForgetItemsLocked(id, it->second);
  }
  bytes_ += Cost(id, *shared);
  it->second = Held{std::move(shared), generation, nullptr};
  order_.emplace_back(id, generation);
  unread_.emplace_back(std::move(id), generation);
  EvictLocked();
  return absl::OkStatus();
}

void ResponseChain::ForgetItemsLocked(const std::string& id, const Held& held) {
  if (held.items == nullptr) return;
  bytes_ -= Cost(*held.items);
  for (const auto& [item_id, message] : *held.items) {
    auto it = items_.find(item_id);
    if (it == items_.end()) continue;
    std::vector<std::string>& owners = it->second;
    owners.erase(std::remove(owners.begin(), owners.end(), id), owners.end());
    if (owners.empty()) items_.erase(it);
  }
}

void ResponseChain::EvictLocked() {
  while (!order_.empty() && (links_.size() > max_responses_ || bytes_ > max_bytes_ ||
                             order_.size() > 2 * max_responses_)) {
    const auto& [id, generation] = order_.front();
    auto it = links_.find(id);
    if (it != links_.end() && it->second.generation == generation) {
      bytes_ -= Cost(id, *it->second.link);
      ForgetItemsLocked(id, it->second);
      links_.erase(it);
    }
    order_.pop_front();
  }
  // Unread entries of links that are gone hold nothing; the oldest go first.
  while (!unread_.empty()) {
    const auto& [id, generation] = unread_.front();
    auto it = links_.find(id);
    const bool live = it != links_.end() && it->second.generation == generation;
    if (live && unread_.size() <= 2 * max_responses_) break;
    unread_.pop_front();
  }
}

const v1::Message* ResponseChain::ReadItemLocked(absl::string_view item_id) const {
  auto owners = items_.find(item_id);
  if (owners == items_.end()) return nullptr;
  const Held* latest = nullptr;
  for (const std::string& owner : owners->second) {
    auto held = links_.find(owner);
    if (held == links_.end() || held->second.items == nullptr) continue;
    if (latest == nullptr || held->second.generation > latest->generation) latest = &held->second;
  }
  if (latest == nullptr) return nullptr;
  for (const auto& [id, message] : *latest->items) {
    if (id == item_id) return &message;
  }
  return nullptr;
}

absl::StatusOr<v1::Message> ResponseChain::FindItem(absl::string_view item_id,
                                                    const ItemReader& read) {
  while (true) {
    std::string id;
    uint64_t generation = 0;
    std::shared_ptr<const ChainLink> link;
    {
      absl::MutexLock lock(&mu_);
      if (const v1::Message* message = ReadItemLocked(item_id)) return *message;
      // The newest response whose items were not read yet.
      while (!unread_.empty() && link == nullptr) {
        std::tie(id, generation) = std::move(unread_.back());
        unread_.pop_back();
        auto it = links_.find(id);
        if (it != links_.end() && it->second.generation == generation) link = it->second.link;
      }
      if (link == nullptr) {
        return absl::NotFoundError(absl::StrCat("no item \"", absl::CHexEscape(item_id),
                                                "\" is in a response recorded or served in "
                                                "this run"));
      }
    }
    auto items = std::make_shared<const Items>(read(link->body ? link->body() : std::string()));
    absl::MutexLock lock(&mu_);
    auto it = links_.find(id);
    if (it == links_.end() || it->second.generation != generation) continue;  // replaced meanwhile
    for (const auto& [item_id_read, message] : *items) {
      std::vector<std::string>& owners = items_[item_id_read];
      if (std::find(owners.begin(), owners.end(), id) == owners.end()) owners.push_back(id);
    }
    bytes_ += Cost(*items);
    it->second.items = std::move(items);
    EvictLocked();
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

}  // namespace engine
}  // namespace understudy
