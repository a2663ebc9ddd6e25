#include "cli/schema_command.h"

#include <iostream>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "validation/schemas.h"

namespace understudy {
namespace cli {

int Schema(const std::string& kind, std::ostream& out, std::ostream& err) {
  absl::StatusOr<absl::string_view> text = validation::SchemaText(kind);
  if (!text.ok()) {
    err << "understudy: " << text.status().message() << std::endl;
    return 2;
  }
  out.write(text->data(), static_cast<std::streamsize>(text->size()));
  out.flush();
  if (!out) {
    err << "understudy: cannot write the schema" << std::endl;
    return 3;
  }
  return 0;
}

int Schema(const std::string& kind) { return Schema(kind, std::cout, std::cerr); }

}  // namespace cli
}  // namespace understudy
