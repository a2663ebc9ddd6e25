// The schema files as compiled-in data, for validation/schemas.cc only. The
// definitions are generated at build time from schemas/*.v1.json by
// schemas/embed.cmake (CMake: validation/CMakeLists.txt; Bazel: the
// schemas_data genrule in validation/BUILD).
#ifndef UNDERSTUDY_VALIDATION_SCHEMAS_DATA_H_
#define UNDERSTUDY_VALIDATION_SCHEMAS_DATA_H_

#include <cstddef>

namespace understudy {
namespace validation {
namespace internal {

struct EmbeddedSchema {
  const char* kind;  // "scenario": the file name up to its first '.'
  const char* text;  // the file's bytes
  size_t size;
};

extern const EmbeddedSchema kEmbeddedSchemas[];
extern const size_t kEmbeddedSchemaCount;

}  // namespace internal
}  // namespace validation
}  // namespace understudy

#endif  // UNDERSTUDY_VALIDATION_SCHEMAS_DATA_H_
