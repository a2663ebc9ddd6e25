// Conversions between a streamed answer (chunks) and a whole one (response).
#ifndef UNDERSTUDY_PROVIDER_CHUNKS_H_
#define UNDERSTUDY_PROVIDER_CHUNKS_H_

#include <vector>

#include "google/protobuf/repeated_field.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace provider {

// The response a client would have got had it not streamed: text fragments
// concatenated, tool-call fragments joined per index (id and name from the
// first fragment that has them, arguments concatenated), in index order; the
// last non-empty finish reason and usage; id and model from the first chunk
// that has them.
v1::CompletionResponse AssembleResponse(
    const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks);

// A one-chunk stream carrying the whole of `response`, for a streaming
// caller answered from a unary recording.
v1::CompletionChunk ChunkFromResponse(const v1::CompletionResponse& response);

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_CHUNKS_H_
