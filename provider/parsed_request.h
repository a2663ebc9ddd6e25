// What a provider codec makes of a request body.
#ifndef UNDERSTUDY_PROVIDER_PARSED_REQUEST_H_
#define UNDERSTUDY_PROVIDER_PARSED_REQUEST_H_

#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace provider {

// A provider request body, translated. Only `canonical` takes part in
// matching; the two flags say how the caller wants its answer shaped.
struct ParsedRequest {
  // The provider-neutral request. Its `extra` holds the body's fields that
  // have no canonical equivalent (minus the provider's default-ignore list),
  // so that matching on it is as exact as matching on the body.
  v1::CompletionRequest canonical;
  // The caller asked for a server-sent event stream.
  bool stream = false;
  // The stream should end with a usage report. OpenAI: only when asked with
  // `stream_options.include_usage`; Anthropic streams always report usage,
  // so there it equals `stream`.
  bool include_usage = false;
};

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_PARSED_REQUEST_H_
