#include "replayer/session_index.h"

#include <utility>

#include "recorder/canonical.h"

namespace understudy {
namespace replayer {

std::shared_ptr<const SessionIndex> SessionIndex::Build(
    v1::Session session, std::vector<v1::Exchange> exchanges,
    std::shared_ptr<const MatchNormalizer> normalizer) {
  std::shared_ptr<SessionIndex> index(new SessionIndex());
  index->session_ = std::move(session);
  index->exchanges_ = std::move(exchanges);
  index->normalizer_ = std::move(normalizer);
  index->canonical_json_.reserve(index->exchanges_.size());
  for (uint32_t i = 0; i < index->exchanges_.size(); ++i) {
    nlohmann::json canonical = index->CanonicalOf(index->exchanges_[i].request());
    index->by_canonical_[TextOf(canonical)].push_back(i);
    index->canonical_json_.push_back(std::move(canonical));
  }
  return index;
}

nlohmann::json SessionIndex::CanonicalOf(const v1::CompletionRequest& request) const {
  nlohmann::json canonical = recorder::CanonicalJson(request);
  if (normalizer_ != nullptr) normalizer_->Apply(&canonical);
  return canonical;
}

std::string SessionIndex::TextOf(const nlohmann::json& canonical) {
  return canonical.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

const std::vector<uint32_t>* SessionIndex::Find(absl::string_view canonical) const {
  auto it = by_canonical_.find(canonical);
  return it == by_canonical_.end() ? nullptr : &it->second;
}

}  // namespace replayer
}  // namespace understudy
