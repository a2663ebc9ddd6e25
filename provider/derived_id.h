// Stable ids derived from content, for answers that must carry an id the
// same in every replay (a scripted Responses answer, an MCP session).
#ifndef UNDERSTUDY_PROVIDER_DERIVED_ID_H_
#define UNDERSTUDY_PROVIDER_DERIVED_ID_H_

#include <string>

#include "absl/strings/string_view.h"

namespace understudy {
namespace provider {

// A stable id: `prefix` then 32 lowercase hex digits, a 128-bit hash of
// `seed`, the same in every process and build. The hash is two FNV-1a
// 64-bit hashes of the seed, one with the standard offset basis
// 0xcbf29ce484222325 and one with 0x6c62272e07bb0142 (the high half of
// FNV-128's basis), each finished with the SplitMix64 mixer; not for
// security. Thread-safe.
std::string DerivedId(absl::string_view prefix, absl::string_view seed);

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_DERIVED_ID_H_
