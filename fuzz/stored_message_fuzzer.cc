// Reading stored rows (store/proto_utf8.h): any bytes are parsed, repaired
// (invalid UTF-8 in strings) or refused with DATA_LOSS; what comes back is
// always valid UTF-8, so every client can parse it.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "store/proto_utf8.h"
#include "understudy/v1/understudy.pb.h"

namespace {

template <typename M>
void Check(absl::string_view bytes) {
  M message;
  bool repaired = false;
  absl::Status s = understudy::store::ParseStored(bytes, &message, &repaired);
  if (!s.ok()) {
    FUZZ_CHECK(absl::IsDataLoss(s), "unreadable rows are DATA_LOSS");
    return;
  }
  FUZZ_CHECK(!understudy::store::FindInvalidUtf8Field(message).has_value(),
             "what ParseStored returns is valid UTF-8");
  M strict;
  FUZZ_CHECK(strict.ParseFromString(message.SerializeAsString()),
             "what ParseStored returns parses strictly");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes = understudy::fuzz::View(data, size);
  Check<understudy::v1::TraceEvent>(bytes);
  Check<understudy::v1::Exchange>(bytes);
  Check<understudy::v1::Run>(bytes);
  return 0;
}
