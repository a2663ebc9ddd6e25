// Azure OpenAI: the OpenAI APIs (Chat Completions, Responses, embeddings)
// as Azure serves them, under a deployment and an `api-version`. The bodies
// are OpenAI's, so each Azure codec is the OpenAI codec of its API under
// Azure's routes, upstream and response headers:
//
//   POST {E}/openai/deployments/{deployment}/chat/completions?api-version=V
//   POST {E}/openai/deployments/{deployment}/embeddings?api-version=V
//   POST {E}/openai/responses?api-version=V, GET …/openai/responses/{id}
//   POST {E}/openai/v1/chat/completions | /responses | /embeddings
//                                    (Azure's v1 API, the plain OpenAI client)
//
// and as the `openai` package's AzureOpenAI client sends them when it takes
// its base URL from OPENAI_BASE_URL (what `understudy record|replay -- CMD`
// sets): {B}/v1/deployments/{deployment}/… and {B}/v1/responses with an
// `api-version` query, which Azure's codecs claim from OpenAI's.
//
// Forwarded to `--upstream azure=https://RESOURCE.openai.azure.com` under
// Azure's own path, with the query as sent; recorded under that path with
// only its `api-version`. The `api-key` header or Entra bearer token is
// forwarded as sent and never stored.
#ifndef UNDERSTUDY_PROVIDER_AZURE_H_
#define UNDERSTUDY_PROVIDER_AZURE_H_

#include <memory>

#include "provider/codec.h"

namespace understudy {
namespace provider {
namespace azure {

// The three codecs: "azure-openai" (Chat Completions),
// "azure-openai-responses" and "azure-openai-embeddings".
std::unique_ptr<Codec> NewChatCodec();
std::unique_ptr<Codec> NewResponsesCodec();
std::unique_ptr<Codec> NewEmbeddingsCodec();

}  // namespace azure
}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_AZURE_H_
