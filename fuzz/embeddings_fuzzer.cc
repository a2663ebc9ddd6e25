// The embeddings codec (provider/embeddings.h): request and response
// bodies. A request that parses renders deterministically, and its rendered
// answer parses back with the right number of unit vectors of the right
// size; a response that parses decodes.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "nlohmann/json.hpp"
#include "provider/canonical.h"
#include "provider/embeddings.h"
#include "validation/json_bounds.h"

namespace {

// Rendering allocates inputs x dimensions floats; above this many the
// request's `dimensions` is lowered to kSmallDimensions so that a run stays
// fast (ParseRequest already bounds both factors).
constexpr int64_t kRenderBudget = 1 << 16;
constexpr int64_t kSmallDimensions = 8;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  namespace embeddings = provider::embeddings;
  const absl::string_view body = fuzz::View(data, size);

  absl::StatusOr<provider::ParsedRequest> request = embeddings::ParseRequest(body);
  if (request.ok()) {
    v1::CompletionRequest canonical = request->canonical;
    FUZZ_CHECK(provider::CanonicalText(canonical) == provider::CanonicalText(request->canonical),
               "the canonical text is a function of the request");
    FUZZ_CHECK(canonical.operation() == "embeddings", "the operation is embeddings");
    FUZZ_CHECK(!request->stream && !request->include_usage, "embeddings never stream");
    FUZZ_CHECK(canonical.messages_size() > 0, "a request has at least one input");

    embeddings::EmbeddingsOptions options = embeddings::OptionsOf(canonical);
    FUZZ_CHECK(options.dimensions >= 0 && options.dimensions <= embeddings::kMaxDimensions,
               "dimensions are bounded");
    const std::string model = canonical.model();
    int64_t dimensions =
        options.dimensions > 0 ? options.dimensions : embeddings::DefaultDimensions(model);
    if (dimensions * canonical.messages_size() > kRenderBudget) {
      nlohmann::json extra =
          canonical.extra().empty()
              ? nlohmann::json::object()
              : validation::ParseJsonOrDiscarded<nlohmann::json>(canonical.extra());
      FUZZ_CHECK(extra.is_object(), "extra is a JSON object");
      extra["dimensions"] = kSmallDimensions;
      canonical.set_extra(extra.dump());
      const embeddings::EmbeddingsOptions capped = embeddings::OptionsOf(canonical);
      FUZZ_CHECK(capped.dimensions == kSmallDimensions && capped.base64 == options.base64,
                 "options read back what extra says");
      dimensions = kSmallDimensions;
    }

    const std::string rendered = embeddings::RenderResponse(canonical, model);
    FUZZ_CHECK(rendered == embeddings::RenderResponse(canonical, model), "rendering is stable");
    absl::StatusOr<v1::CompletionResponse> answer = embeddings::ParseResponse(rendered);
    FUZZ_CHECK(answer.ok(), "a rendered response parses");
    FUZZ_CHECK(answer->model() == model, "the rendered response names the model");
    absl::StatusOr<std::vector<std::vector<float>>> vectors = embeddings::Vectors(rendered);
    FUZZ_CHECK(vectors.ok(), "a rendered response decodes");
    FUZZ_CHECK(vectors->size() == static_cast<size_t>(canonical.messages_size()),
               "one vector per input");
    for (size_t i = 0; i < vectors->size(); ++i) {
      const std::vector<float>& v = (*vectors)[i];
      FUZZ_CHECK(v.size() == static_cast<size_t>(dimensions), "vectors have the asked size");
      double sum = 0;
      for (const float x : v) sum += static_cast<double>(x) * x;
      FUZZ_CHECK(std::fabs(std::sqrt(sum) - 1.0) < 1e-4, "vectors have unit length");
      if (i < 4) {
        FUZZ_CHECK(v == embeddings::PseudoEmbedding(
                            canonical.messages(static_cast<int>(i)).content(), dimensions),
                   "a vector is the input's pseudo-embedding, exactly");
      }
    }
  } else {
    FUZZ_CHECK(absl::IsInvalidArgument(request.status()), "a bad body is INVALID_ARGUMENT");
  }

  absl::StatusOr<v1::CompletionResponse> response = embeddings::ParseResponse(body);
  absl::StatusOr<std::vector<std::vector<float>>> vectors = embeddings::Vectors(body);
  if (response.ok()) {
    FUZZ_CHECK(vectors.ok(), "a response that parses decodes");
    FUZZ_CHECK(response->message().role() == "assistant" && response->finish_reason() == "stop",
               "the canonical answer is a finished assistant turn");
  } else {
    FUZZ_CHECK(absl::IsInvalidArgument(response.status()), "a bad response is INVALID_ARGUMENT");
  }
  if (!vectors.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(vectors.status()), "bad vectors are INVALID_ARGUMENT");
  }
  return 0;
}
