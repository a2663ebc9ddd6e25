#include "capture/redact.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "validation/json_bounds.h"

namespace understudy {
namespace capture {

Redactor::Redactor() : headers_{"authorization", "x-api-key", "api-key", "proxy-authorization"} {}

absl::StatusOr<Redactor> Redactor::Create(const std::vector<std::string>& extra_headers,
                                          const std::vector<std::string>& paths) {
  Redactor r;
  for (const std::string& h : extra_headers) {
    if (h.empty()) return absl::InvalidArgumentError("--redact-header: empty header name");
    r.headers_.push_back(absl::AsciiStrToLower(h));
  }
  for (const std::string& p : paths) {
    absl::StatusOr<JsonPath> path = JsonPath::Parse(p);
    if (!path.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--redact-json-path \"", p, "\": ", path.status().message()));
    }
    r.paths_.push_back(std::move(*path));
  }
  return r;
}

bool Redactor::IsSecretHeader(absl::string_view name) const {
  for (const std::string& h : headers_) {
    if (absl::EqualsIgnoreCase(h, name)) return true;
  }
  return false;
}

std::string Redactor::RedactBody(absl::string_view body) const {
  if (paths_.empty()) return std::string(body);
  // Key order kept, so only the redacted values change.
  // Too deep or not JSON: the codec refuses the body with the reason.
  nlohmann::ordered_json json = validation::ParseJsonOrDiscarded<nlohmann::ordered_json>(body);
  if (json.is_discarded()) return std::string(body);
  bool changed = false;
  for (const JsonPath& path : paths_) {
    path.ForEach<nlohmann::ordered_json>(&json, [&](nlohmann::ordered_json* v) {
      *v = kRedacted;
      changed = true;
    });
  }
  if (!changed) return std::string(body);
  return json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace capture
}  // namespace understudy
