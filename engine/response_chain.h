// The responses a run has recorded or served over the OpenAI Responses API,
// so that a request continuing one (`previous_response_id`) can be read as
// the whole conversation it continues, and `GET /v1/responses/{id}` can
// answer.
//
// Each response is kept as a link: the response it continued (its parent),
// the turn it added (the request's own input messages, then the answer as an
// assistant message) and the response object's JSON. Resolving an id walks
// the links back to the start and joins the turns, so a chain of n turns
// costs O(n) memory, not O(n^2).
//
// The items of the responses (a message, a function call, reasoning, ...)
// can be looked up by their own id too, for requests that send an earlier
// item back as an `item_reference` (the OpenAI SDKs and the AI SDK do, when
// responses are stored): FindItem. Items are read out of a response's body
// only when a reference needs them, newest responses first, each response
// once, so serving a response costs nothing more.
//
// Bounded: at most `max_responses` links and `max_bytes` of their text (and
// of the items read from them); past either, the oldest links are forgotten
// first (a chain that reaches a forgotten link resolves to NOT_FOUND naming
// it), with their items. Thread-safe.
#ifndef UNDERSTUDY_ENGINE_RESPONSE_CHAIN_H_
#define UNDERSTUDY_ENGINE_RESPONSE_CHAIN_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace engine {

// One response of a chain.
struct ChainLink {
  // The response it continued ("" for the first of a chain).
  std::string parent;
  // What this turn added to the conversation: the request's input messages
  // (without the system prompt, which a Responses request never inherits)
  // and the answer as an assistant message.
  std::vector<v1::Message> turn;
  // The response object as the caller got it (JSON), for GET: made when
  // asked, so that serving a response costs no rendering of it. Must be
  // thread-safe and hold what it reads alive.
  std::function<std::string()> body;
  // What `body` holds, counted against the byte bound (0 when it only
  // reads a recording that the run holds anyway).
  size_t body_bytes = 0;
};

class ResponseChain {
 public:
  static constexpr size_t kDefaultMaxResponses = 100000;
  static constexpr size_t kDefaultMaxBytes = 256 << 20;
  // The longest chain Resolve walks: a longer one (or a cycle, possible when
  // a replay serves one recorded id twice) is FAILED_PRECONDITION.
  static constexpr size_t kMaxChainLength = 100000;

  explicit ResponseChain(size_t max_responses = kDefaultMaxResponses,
                         size_t max_bytes = kDefaultMaxBytes)
      : max_responses_(max_responses), max_bytes_(max_bytes) {}
  ResponseChain(const ResponseChain&) = delete;
  ResponseChain& operator=(const ResponseChain&) = delete;

  // Keeps `link` under `id` (INVALID_ARGUMENT for an empty id). The same id
  // again replaces the earlier link: a replay that serves a recorded
  // response twice continues from the latest.
  absl::Status Remember(std::string id, ChainLink link) ABSL_LOCKS_EXCLUDED(mu_);

  // The conversation up to and including response `id`, oldest first.
  // NOT_FOUND when `id` (or a link it needs) is not known, naming it.
  absl::StatusOr<std::vector<v1::Message>> Resolve(absl::string_view id) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // The response object `id` was answered with; NOT_FOUND when unknown.
  absl::StatusOr<std::string> Body(absl::string_view id) const ABSL_LOCKS_EXCLUDED(mu_);

  // What reads the items of a response out of its body: each item's id and
  // the message it stands for (provider::responses::OutputItems). Must be
  // thread-safe.
  using ItemReader =
      std::function<std::vector<std::pair<std::string, v1::Message>>(absl::string_view body)>;

  // The message standing for the item `item_id` of a response the chain
  // holds: the latest such response's, when two hold the same id. Reads the
  // items of the responses not read yet, newest first, until one has it
  // (`read` runs outside the lock). NOT_FOUND naming the id when none has.
  absl::StatusOr<v1::Message> FindItem(absl::string_view item_id, const ItemReader& read)
      ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A response's items, once read: id -> message, in output order.
  using Items = std::vector<std::pair<std::string, v1::Message>>;
  struct Held {
    std::shared_ptr<const ChainLink> link;
    uint64_t generation = 0;
    // Null until FindItem read them.
    std::shared_ptr<const Items> items;
  };

  static size_t Cost(const std::string& id, const ChainLink& link);
  static size_t Cost(const Items& items);
  void EvictLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops what `held` (the link of response `id`) put in items_ and bytes_.
  void ForgetItemsLocked(const std::string& id, const Held& held)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Item `item_id` among the items read so far; null when not there. Valid
  // while the lock is held.
  const v1::Message* ReadItemLocked(absl::string_view item_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_responses_;
  const size_t max_bytes_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Held> links_ ABSL_GUARDED_BY(mu_);
  // Item id -> the responses whose items (read) hold it (links_ keys):
  // mostly one; the latest remembered is the one that counts.
  absl::flat_hash_map<std::string, std::vector<std::string>> items_ ABSL_GUARDED_BY(mu_);
  // Responses (id, generation) whose items have not been read, oldest
  // first: FindItem takes from the back. Entries whose generation is no
  // longer their id's hold nothing and are skipped.
  std::deque<std::pair<std::string, uint64_t>> unread_ ABSL_GUARDED_BY(mu_);
  // Ids in the order they were remembered, with the generation each got: an
  // id remembered again appears again, and eviction skips the entries whose
  // generation is no longer the id's (they hold nothing else).
  std::deque<std::pair<std::string, uint64_t>> order_ ABSL_GUARDED_BY(mu_);
  uint64_t next_generation_ ABSL_GUARDED_BY(mu_) = 0;
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace engine
}  // namespace understudy

#endif  // UNDERSTUDY_ENGINE_RESPONSE_CHAIN_H_
