#include "validation/schemas.h"

#include <algorithm>
#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "validation/schemas_data.h"

namespace understudy {
namespace validation {

absl::StatusOr<absl::string_view> SchemaText(absl::string_view kind) {
  for (size_t i = 0; i < internal::kEmbeddedSchemaCount; ++i) {
    const internal::EmbeddedSchema& s = internal::kEmbeddedSchemas[i];
    if (kind == s.kind) return absl::string_view(s.text, s.size);
  }
  return absl::NotFoundError(absl::StrCat("unknown schema kind \"", kind,
                                          "\"; kinds: ", absl::StrJoin(SchemaKinds(), ", ")));
}

std::vector<std::string> SchemaKinds() {
  std::vector<std::string> kinds;
  for (size_t i = 0; i < internal::kEmbeddedSchemaCount; ++i) {
    kinds.emplace_back(internal::kEmbeddedSchemas[i].kind);
  }
  std::sort(kinds.begin(), kinds.end());
  return kinds;
}

}  // namespace validation
}  // namespace understudy
