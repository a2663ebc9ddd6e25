// Canonicalization and normalization (provider/canonical.h,
// matching/normalize.h, capture/json_path.h): any CompletionRequest (the
// input as serialized protobuf, as gRPC callers send it) has a canonical
// form, the same every time, and normalizing it is idempotent.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "capture/json_path.h"
#include "capture/validate.h"
#include "fuzz/fuzz_util.h"
#include "matching/normalize.h"
#include "provider/canonical.h"
#include "understudy/v1/completion.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  static const std::shared_ptr<const matching::MatchNormalizer> kNormalizer = [] {
    auto n = matching::MatchNormalizer::Create(
        {"params.temperature", "messages[*].name", "extra.user"},
        {"uuid", "timestamp", "tmp-path", R"(\d{4,}=>N)"});
    FUZZ_CHECK(n.ok(), "the fuzzer's normalizer compiles");
    return *n;
  }();
  const absl::string_view bytes = fuzz::View(data, size);
  // The bytes as a path expression.
  absl::StatusOr<capture::JsonPath> path = capture::JsonPath::Parse(bytes);
  if (!path.ok()) FUZZ_CHECK(absl::IsInvalidArgument(path.status()), "a bad path is INVALID_ARGUMENT");

  v1::CompletionRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  (void)capture::ValidateRequest(request);
  nlohmann::json canonical = provider::CanonicalJson(provider::WithoutRouting(request));
  FUZZ_CHECK(canonical.dump() == provider::CanonicalJson(provider::WithoutRouting(request)).dump(),
             "the canonical form is deterministic");
  kNormalizer->Apply(&canonical);
  const std::string once = canonical.dump();
  kNormalizer->Apply(&canonical);
  FUZZ_CHECK(canonical.dump() == once, "normalizing is idempotent");
  if (path.ok()) {
    path->ForEach<nlohmann::json>(&canonical, [](nlohmann::json* v) { *v = nullptr; });
  }
  return 0;
}
