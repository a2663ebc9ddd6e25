// The one place the model APIs are registered (provider/codec.h). The
// first is the default: requests no route names are answered in its shape.
#include "provider/anthropic.h"
#include "provider/azure.h"
#include "provider/bedrock.h"
#include "provider/codec.h"
#include "provider/cohere.h"
#include "provider/embeddings.h"
#include "provider/gemini.h"
#include "provider/ollama.h"
#include "provider/openai.h"
#include "provider/responses.h"

namespace understudy {
namespace provider {

const CodecRegistry& CodecRegistry::Builtin() {
  static const CodecRegistry* const registry = [] {
    auto* r = new CodecRegistry();
    r->Register(openai::NewCodec());
    r->Register(responses::NewCodec());
    r->Register(embeddings::NewCodec());
    r->Register(anthropic::NewCodec());
    r->Register(gemini::NewCodec());
    r->Register(cohere::NewCodec());
    r->Register(gemini::NewVertexCodec());
    r->Register(ollama::NewCodec());
    r->Register(azure::NewChatCodec());
    r->Register(azure::NewResponsesCodec());
    r->Register(azure::NewEmbeddingsCodec());
    r->Register(bedrock::NewCodec());
    r->Register(bedrock::NewInvokeCodec());
    return r;
  }();
  return *registry;
}

}  // namespace provider
}  // namespace understudy
