#include "matching/session_index.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "provider/canonical.h"
#include "provider/chunks.h"

namespace understudy {
namespace matching {
namespace {

// `request` serialized deterministically (map fields in key order) without
// its routing fields; "" when it has them set (the caller then falls back).
std::string BytesOf(const v1::CompletionRequest& request) {
  std::string out;
  if (!request.run().empty() || !request.agent().empty()) return out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  request.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

// Replaces every string of `node` that `ids` maps by what it maps it to.
void ReplaceIds(const absl::flat_hash_map<std::string, std::string>& ids, nlohmann::json* node) {
  if (node->is_string()) {
    auto it = ids.find(node->get_ref<const std::string&>());
    if (it != ids.end()) *node = it->second;
  } else if (node->is_structured()) {
    for (nlohmann::json& child : *node) ReplaceIds(ids, &child);
  }
}

}  // namespace

std::shared_ptr<const SessionIndex> SessionIndex::Build(
    v1::Session session, std::vector<v1::Exchange> exchanges,
    std::shared_ptr<const MatchNormalizer> normalizer) {
  std::shared_ptr<SessionIndex> index(new SessionIndex());
  index->session_ = std::move(session);
  index->exchanges_ = std::move(exchanges);
  index->normalizer_ = std::move(normalizer);
  index->canonical_json_.reserve(index->exchanges_.size());
  index->answer_chunks_.resize(index->exchanges_.size());
  for (auto& lazy : index->answer_chunks_) lazy = std::make_unique<LazyChunk>();
  for (const v1::Exchange& ex : index->exchanges_) {
    for (const v1::ToolCall& call : ex.response().message().tool_calls()) {
      if (!call.id().empty()) index->answer_ids_.insert(call.id());
    }
    for (const v1::CompletionChunk& chunk : ex.chunks()) {
      for (const v1::ToolCallDelta& call : chunk.tool_calls()) {
        if (!call.id().empty()) index->answer_ids_.insert(call.id());
      }
    }
  }
  for (uint32_t i = 0; i < index->exchanges_.size(); ++i) {
    nlohmann::json canonical = index->CanonicalOf(index->exchanges_[i].request());
    index->by_canonical_[TextOf(canonical)].push_back(i);
    index->canonical_json_.push_back(std::move(canonical));
  }
  std::vector<std::string> bytes_of(index->exchanges_.size());
  for (uint32_t i = 0; i < index->exchanges_.size(); ++i) {
    bytes_of[i] = BytesOf(provider::WithoutRouting(index->exchanges_[i].request()));
    if (bytes_of[i].empty() || index->by_bytes_.contains(bytes_of[i])) continue;
    index->by_bytes_.emplace(bytes_of[i], index->Find(TextOf(index->canonical_json_[i])));
  }
  index->exact_bytes_.assign(index->exchanges_.size(), nullptr);
  for (uint32_t i = 0; i < index->exchanges_.size(); ++i) {
    if (bytes_of[i].empty()) continue;
    index->exact_bytes_[i] = &index->by_bytes_.find(bytes_of[i])->first;
  }
  return index;
}

nlohmann::json SessionIndex::CanonicalOf(const v1::CompletionRequest& request) const {
  nlohmann::json canonical = provider::CanonicalJson(request);
  if (normalizer_ == nullptr || !normalizer_->exact_tool_call_ids()) {
    absl::flat_hash_map<std::string, std::string> made_up;
    const auto note = [&](const std::string& id) {
      if (id.empty() || answer_ids_.contains(id) || made_up.contains(id)) return;
      made_up.emplace(id, absl::StrCat("<client tool call id ", made_up.size() + 1, ">"));
    };
    for (const v1::Message& m : request.messages()) {
      for (const v1::ToolCall& call : m.tool_calls()) note(call.id());
      note(m.tool_call_id());
    }
    if (!made_up.empty()) ReplaceIds(made_up, &canonical);
  }
  if (normalizer_ != nullptr) normalizer_->Apply(&canonical);
  return canonical;
}

std::string SessionIndex::TextOf(const nlohmann::json& canonical) {
  return canonical.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

const std::vector<uint32_t>* SessionIndex::FindExact(const v1::CompletionRequest& request,
                                                     const void** matched) const {
  if (matched != nullptr) *matched = nullptr;
  if (by_bytes_.empty()) return nullptr;
  const std::string bytes = BytesOf(request);
  if (bytes.empty()) return nullptr;
  auto it = by_bytes_.find(bytes);
  if (it == by_bytes_.end()) return nullptr;
  if (matched != nullptr) *matched = &it->first;
  return it->second;
}

const v1::CompletionChunk& SessionIndex::AnswerAsChunk(size_t i) const {
  LazyChunk& lazy = *answer_chunks_[i];
  absl::call_once(lazy.once, [&] {
    lazy.chunk = provider::ChunkFromResponse(exchanges_[i].response());
  });
  return lazy.chunk;
}

const std::vector<uint32_t>* SessionIndex::Find(absl::string_view canonical) const {
  auto it = by_canonical_.find(canonical);
  return it == by_canonical_.end() ? nullptr : &it->second;
}

}  // namespace matching
}  // namespace understudy
