// A recorded session loaded for replay: immutable, shared by every run that
// replays it, and indexed by canonical request for O(1) matching.
#ifndef UNDERSTUDY_MATCHING_SESSION_INDEX_H_
#define UNDERSTUDY_MATCHING_SESSION_INDEX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "matching/normalize.h"
#include "nlohmann/json.hpp"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace matching {

class SessionIndex {
 public:
  // Indexes `exchanges` (in seq order) of `session` by their canonical
  // requests, normalized by `normalizer` (null: as they are). Held by
  // shared_ptr so answers can alias into it without copying.
  static std::shared_ptr<const SessionIndex> Build(
      v1::Session session, std::vector<v1::Exchange> exchanges,
      std::shared_ptr<const MatchNormalizer> normalizer = nullptr);

  // The normalized canonical JSON of a live request, comparable with
  // canonical(i), and its text, comparable with Find's argument.
  //
  // Normalized: first, unless the normalizer asks for exact ids, every tool
  // call id in the request's messages (a call's id, a tool result's
  // tool_call_id) that no recorded answer of the session holds was made up
  // by the client (the AI SDK does so for Gemini calls, which carry none):
  // each such id, wherever it occurs as a whole string, becomes "<client
  // tool call id N>", N counting the distinct ids in order of first
  // appearance. A replay whose client makes up other ids then matches the
  // recording, while ids the model gave (which the recording holds, and the
  // replay gives back) still match exactly. Then the normalizer's paths and
  // rules.
  nlohmann::json CanonicalOf(const v1::CompletionRequest& request) const;
  static std::string TextOf(const nlohmann::json& canonical);

  const v1::Session& session() const { return session_; }
  size_t size() const { return exchanges_.size(); }
  // `i` is a 0-based position (seq - 1).
  const v1::Exchange& exchange(size_t i) const { return exchanges_[i]; }
  // The normalized canonical JSON of exchange i's request.
  const nlohmann::json& canonical(size_t i) const { return canonical_json_[i]; }

  // Exchange i's answer as one stream chunk (provider::ChunkFromResponse),
  // for a streaming caller answered from an answer that was not streamed.
  // Built on first use and kept: every such caller shares one copy instead
  // of making its own. Thread-safe; lives as long as the index.
  const v1::CompletionChunk& AnswerAsChunk(size_t i) const;

  // Positions of the exchanges whose canonical request text is `canonical`,
  // in seq order; nullptr when there is none.
  const std::vector<uint32_t>* Find(absl::string_view canonical) const;

  // The fast path of matching: the positions Find(TextOf(CanonicalOf(
  // request))) would give, when `request` (routing fields aside) is byte for
  // byte a recorded request — the canonical form is a function of the
  // request, so equal bytes have equal canonical text. nullptr otherwise,
  // which proves nothing: the caller then builds the canonical form (fields
  // the canonical form ignores or normalizes, or a different encoding, may
  // still match). Costs one deterministic serialization and one hash lookup
  // instead of building and printing the canonical JSON.
  const std::vector<uint32_t>* FindExact(const v1::CompletionRequest& request) const {
    return FindExact(request, nullptr);
  }
  // The same, and (when not null) which recorded bytes matched in `*bytes`:
  // the request is exchange i's request byte for byte (routing fields
  // aside) iff ExactBytes(i) == *bytes. *bytes is null when nothing matched.
  const std::vector<uint32_t>* FindExact(const v1::CompletionRequest& request,
                                         const void** bytes) const;
  const void* ExactBytes(size_t i) const { return exact_bytes_[i]; }

 private:
  SessionIndex() = default;

  v1::Session session_;
  std::shared_ptr<const MatchNormalizer> normalizer_;
  // The tool call ids of the recorded answers (whole and streamed): ids the
  // model gave; any other id in a request was made up by its client.
  absl::flat_hash_set<std::string> answer_ids_;
  std::vector<v1::Exchange> exchanges_;
  std::vector<nlohmann::json> canonical_json_;
  absl::flat_hash_map<std::string, std::vector<uint32_t>> by_canonical_;
  struct LazyChunk {
    absl::once_flag once;
    v1::CompletionChunk chunk;
  };
  // One per exchange, built by AnswerAsChunk.
  std::vector<std::unique_ptr<LazyChunk>> answer_chunks_;
  // Deterministic serialization of each distinct recorded request (routing
  // fields cleared) -> its by_canonical_ entry. Filled after by_canonical_
  // is complete, so the pointers stay valid.
  absl::flat_hash_map<std::string, const std::vector<uint32_t>*> by_bytes_;
  // Per exchange: the by_bytes_ key of its request (null when it has none),
  // as an identity; set once by_bytes_ is complete.
  std::vector<const void*> exact_bytes_;
};

}  // namespace matching
}  // namespace understudy

#endif  // UNDERSTUDY_MATCHING_SESSION_INDEX_H_
