// The OpenAI Embeddings API (POST /v1/embeddings) translated to and from
// understudy's canonical messages. Pure functions of their arguments: JSON
// text in, protos and vectors out and back; no HTTP, no I/O.
//
// An embeddings request is a CompletionRequest with operation "embeddings"
// whose messages are its inputs, one user message each, in order:
//
//   {"model":"text-embedding-3-small","input":["a","b"],"dimensions":8}
//     -> model "text-embedding-3-small", operation "embeddings",
//        messages [{user,"a"}, {user,"b"}], extra {"dimensions":8}
//
// Recording through the API:
//   ParseRequest(body)   -> canonical request to match and store
//   ParseResponse(body)  -> canonical answer (model and usage; the vectors
//                           stay in the stored native body)
//   Vectors(body)        -> the vectors of a response body, either encoding
// Answering an embeddings request that was not recorded over this API (a
// scenario rule's `respond`, a scenario default):
//   RenderResponse       -> deterministic pseudo-embeddings derived from the
//                           input texts only
// An exchange recorded over this very API is replayed from its stored
// native bytes instead.
//
// Encodings. `encoding_format` "float" sends each vector as a JSON array of
// numbers; "base64" sends the base64 of its float32 values, little-endian,
// back to back. The official SDKs (openai-node, openai-python) ask for
// "base64" whenever their caller does not choose and decode it themselves,
// so most recorded requests carry "encoding_format":"base64".
//
// Lossless matching: every request field except `model`, `input` and those
// of kIgnoredRequestFields is kept verbatim in `canonical.extra`
// (`encoding_format` and `dimensions` included: they change the answer's
// bytes). `null` is the same as an absent field.
#ifndef UNDERSTUDY_PROVIDER_EMBEDDINGS_H_
#define UNDERSTUDY_PROVIDER_EMBEDDINGS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "provider/codec.h"
#include "provider/parsed_request.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace provider {
namespace embeddings {

// Top-level request fields that never change the vectors, so ParseRequest
// leaves them out of the canonical request (and out of matching): `user`,
// the end-user tag for abuse monitoring. Printed by `understudy serve
// --help`.
inline constexpr absl::string_view kIgnoredRequestFields[] = {"user"};

// The largest `dimensions` ParseRequest accepts. The API's models stop at
// 3072; the bound keeps a hostile request from making RenderResponse
// allocate without limit.
inline constexpr int64_t kMaxDimensions = 65536;

// The most inputs one request may carry, the API's own limit (2048).
inline constexpr size_t kMaxInputs = 2048;

// Translates an embeddings request body.
//
// Maps: `model` (required string) -> canonical.model; `input` (required) ->
// canonical.messages, one message with role "user" per input, in order:
//   - a string: one message with that content;
//   - an array of strings: one message per string;
//   - an array of integers (token ids): one message whose content is the
//     compact JSON of the array ("[1,2,3]") and whose extra is
//     {"tokens":true}, so that tokens never match the text "[1,2,3]";
//   - an array of arrays of integers: one such message per inner array.
// The form is decided by the first element; the API refuses, and so does
// ParseRequest, empty strings, empty arrays (outer or inner), negative or
// non-integer token ids, mixed arrays and more than kMaxInputs inputs.
// `encoding_format` must be "float" or "base64", `dimensions` an integer in
// [1, kMaxDimensions]; both, and every other field not in
// kIgnoredRequestFields, go into `canonical.extra` as a compact JSON object
// with sorted keys, nested objects too ("" when empty). canonical.operation is "embeddings";
// `stream` and `include_usage` are false (the API does not stream).
//
// Fails with INVALID_ARGUMENT naming the bad value's path (see
// json_util.h), e.g. "input[2]: expected a string, got number",
// "input: expected a non-empty string, got an empty string",
// "encoding_format: expected \"float\" or \"base64\", got \"int8\"",
// "dimensions: expected an integer in [1, 65536], got 0",
// "body: invalid JSON at byte 17: ...". Thread-safe.
absl::StatusOr<ParsedRequest> ParseRequest(absl::string_view body);

// How an embeddings answer is to be shaped, as the request asked.
struct EmbeddingsOptions {
  // `encoding_format` was "base64".
  bool base64 = false;
  // `dimensions` as asked; 0 when the request did not say.
  int64_t dimensions = 0;
};

// The options of a canonical embeddings request, read back from its
// `extra` (as ParseRequest wrote it). Total: an `extra` that is not JSON,
// or whose `encoding_format` or `dimensions` are not what ParseRequest
// admits (a canonical request built over gRPC), gives the defaults for
// those fields. Thread-safe.
EmbeddingsOptions OptionsOf(const v1::CompletionRequest& canonical);

// Translates an embeddings response body ({"object":"list","data":[...],
// "model":...,"usage":{...}}): `model` and usage.prompt_tokens ->
// usage.input_tokens; the message is an empty one of role "assistant" and
// finish_reason is "stop" (the vectors themselves are read with Vectors).
// Checks what Vectors checks, so a body that parses here decodes there.
// Fails with INVALID_ARGUMENT naming the bad value, e.g. "data: missing;
// expected an array of embeddings", "data[0].embedding[3]: expected a
// number, got string", "data[1].embedding: invalid base64". Thread-safe.
absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body);

// The vectors of an embeddings response body, in the order of `data` (the
// API sends them in `index` order): each `embedding` a JSON array of
// numbers (held as float32, as the API computes them) or a base64 string
// of little-endian float32 values. Reads only `data`, and fails as
// ParseResponse does on it: a body that is not a JSON object, a `data`
// that is not an array of embedding objects, a number outside the float32
// range, base64 that does not decode or does not hold whole float32 values
// ("data[0].embedding: expected base64 of float32 values, got 6 bytes").
// Thread-safe.
absl::StatusOr<std::vector<std::vector<float>>> Vectors(absl::string_view body);

// The number of dimensions RenderResponse gives `model` when the request
// does not say: 3072 for names containing "3-large"
// (text-embedding-3-large), else 1536 (text-embedding-3-small,
// text-embedding-ada-002, and any other name).
int64_t DefaultDimensions(absl::string_view model);

// The pseudo-embedding of `text` with `dimensions` (> 0) components: a
// splitmix64 generator seeded with the FNV-1a 64-bit hash of the text's
// bytes gives one value per component, its top 53 bits scaled to [-1, 1);
// the vector is then normalized to unit length (computed in double, stored
// as float32). A function of (text, dimensions) only: identical texts get
// identical vectors, on every machine. Thread-safe.
std::vector<float> PseudoEmbedding(absl::string_view text, int64_t dimensions);

// An embeddings response body answering `request` (a canonical embeddings
// request) with pseudo-embeddings, for answers not recorded over this API.
// One entry per message of the request, in order, its vector
// PseudoEmbedding(message content, dimensions) where `dimensions` is
// OptionsOf(request).dimensions, or DefaultDimensions(model) when unset.
// Encoded as OptionsOf(request) asks: "float" prints each float32 value in
// its shortest form that reads back as the same float32 (std::to_chars;
// e.g. 0.0123, -1.5e-05); "base64" is absl::Base64Escape of the values'
// little-endian float32 bytes. Usage reports N prompt (and total) tokens:
// per input, its number of token ids for a token input ({"tokens":true}),
// else ceil(content bytes / 4). `model` is reported as given. Compact JSON,
// fixed key order, same input same bytes:
//   {"object":"list","data":[{"object":"embedding","index":0,
//    "embedding":[...]}],"model":"...","usage":{"prompt_tokens":N,
//    "total_tokens":N}}
// Thread-safe.
std::string RenderResponse(const v1::CompletionRequest& request, absl::string_view model);

// The embeddings API's codec (provider/codec.h), as provider/codecs.cc registers it.
std::unique_ptr<Codec> NewCodec();

}  // namespace embeddings
}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_EMBEDDINGS_H_
