// Helpers shared by the engine's own files (engine_decide.cc,
// engine_forward.cc, and engine_calls.cc's for engine_mcp.cc and
// engine_a2a.cc). Internal to the engine: adapters use engine.h.
#ifndef UNDERSTUDY_ENGINE_ENGINE_INTERNAL_H_
#define UNDERSTUDY_ENGINE_ENGINE_INTERNAL_H_

#include <memory>
#include <string>

#include "absl/strings/string_view.h"

#include "matching/session_index.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace engine {
namespace internal {

// A short fingerprint of the request as matching sees it (canonical form,
// normalized like the run's recording when `index`, which may be null,
// replays one), for debug logs: the same key at record and at replay time
// means the same match key, and no prompt text reaches the log. 16 hex
// digits. Reads `index` only; thread-safe. Defined in engine_decide.cc.
std::string MatchKeyForLog(const matching::SessionIndex* index, const v1::CompletionRequest& request);

// A scripted JSON-RPC error to an MCP or A2A call as an exchange, its code
// kept (StatusFromRecorded reads it). Defined in engine_calls.cc.
std::shared_ptr<v1::Exchange> JsonRpcErrorExchange(int code, absl::string_view message);

}  // namespace internal
}  // namespace engine
}  // namespace understudy

#endif  // UNDERSTUDY_ENGINE_ENGINE_INTERNAL_H_
