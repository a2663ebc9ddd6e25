// What a provider codec makes of a request body.
#ifndef UNDERSTUDY_PROVIDER_PARSED_REQUEST_H_
#define UNDERSTUDY_PROVIDER_PARSED_REQUEST_H_

#include <string>
#include <vector>

#include "provider/element_stream.h"
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
  // OpenAI Responses: the `previous_response_id` the request continues
  // ("" for none). Not part of `canonical`: the service resolves it to the
  // conversation it names and puts that before `canonical.messages`.
  std::string previous_response_id;
  // OpenAI Responses: how many of `canonical.messages` come before the
  // request's input items (1 when `instructions` became the system message),
  // which is where the service puts the conversation a previous response
  // id names.
  int leading_messages = 0;
  // How the stream the caller asked for is framed: server-sent events
  // unless the API or the route says otherwise (Gemini without `alt=sse`:
  // one JSON array, element by element; Ollama: NDJSON).
  StreamFraming stream_framing = StreamFraming::kSse;
  // OpenAI Responses: the input items that are `item_reference`s, as the
  // index in `canonical.messages` of the message standing for each (before
  // any previous_response_id conversation is put in) and the id it names.
  // The service puts the item itself in its place when the run recorded or
  // served it.
  struct ItemReference {
    int message = 0;
    std::string id;
  };
  std::vector<ItemReference> item_references;
};

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_PARSED_REQUEST_H_
