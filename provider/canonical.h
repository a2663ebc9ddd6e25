// The canonical request: the provider-neutral, normalized form of a
// completion request that matching compares and miss reports quote.
//
// It is a JSON object with sorted keys, so two requests that differ only in
// the order of JSON object keys (including inside tool-call arguments and
// tool parameter schemas, which are parsed) have the same canonical text.
// The `extra` JSON objects of the request and of its messages (provider
// fields with no canonical equivalent) are part of it, parsed like the
// arguments, under the key "extra". Routing fields (`run`, `agent`) and
// empty fields are left out: they never change the model's answer.
#ifndef UNDERSTUDY_PROVIDER_CANONICAL_H_
#define UNDERSTUDY_PROVIDER_CANONICAL_H_

#include <string>

#include "nlohmann/json.hpp"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace provider {

// The canonical form as a JSON value. Thread-safe; never fails: text that
// should be JSON but is not (malformed tool arguments) is kept as a string.
nlohmann::json CanonicalJson(const v1::CompletionRequest& request);

// CanonicalJson(request) serialized compactly; equal requests give equal
// bytes, in every process.
std::string CanonicalText(const v1::CompletionRequest& request);

// `request` without its routing fields, as forwarded upstream and stored.
v1::CompletionRequest WithoutRouting(const v1::CompletionRequest& request);

// Whether `request` is a call to a tool server or another agent rather than
// a model request: an MCP request (operation "mcp:…", provider/mcp.h) or an
// A2A one ("a2a:…", provider/a2a.h). Its params are in `extra`; it may hold
// no message, never counts an iteration, and its answer is no model's.
bool IsCallRequest(const v1::CompletionRequest& request);

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_CANONICAL_H_
