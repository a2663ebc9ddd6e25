// What a simulated session keeps across a restart with `--resume ID`
// (docs/sim.md): how many prompts each fail_then_succeed behaviour has taken,
// by the behaviour's path, so that "fail (or crash), then succeed after the
// restart" can be scripted. One small JSON file per session,
// DIR/SESSION_ID.json ({"fail_then_succeed": {"behaviours[3]": 1}}),
// replaced whole on every change (base/files.h: WriteFileAtomically), so a
// crash right after a save keeps it.
//
// Thread-compatible: plain functions over files.
#ifndef UNDERSTUDY_SIM_SESSION_STATE_H_
#define UNDERSTUDY_SIM_SESSION_STATE_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace understudy {
namespace sim {

// Where sessions are kept: UNDERSTUDY_SIM_STATE_DIR; else
// $XDG_STATE_HOME/understudy/sim; else $HOME/.local/state/understudy/sim;
// else /tmp/understudy-sim-UID.
std::string DefaultSessionStateDirectory();

// The counts saved for `session_id` in `dir`; empty when none were saved.
// INVALID_ARGUMENT for a session id that cannot name a file (only letters,
// digits, '-', '_' and '.', not starting with '.', at most 128 bytes);
// DATA_LOSS for a file that is not one SaveSessionCounts wrote; UNAVAILABLE
// when it cannot be read.
absl::StatusOr<std::map<std::string, int>> LoadSessionCounts(const std::string& dir,
                                                             const std::string& session_id);

// Saves `counts` for `session_id` in `dir` (created when missing).
// INVALID_ARGUMENT as above; UNAVAILABLE naming the path when it cannot be
// written.
absl::Status SaveSessionCounts(const std::string& dir, const std::string& session_id,
                               const std::map<std::string, int>& counts);

}  // namespace sim
}  // namespace understudy

#endif  // UNDERSTUDY_SIM_SESSION_STATE_H_
