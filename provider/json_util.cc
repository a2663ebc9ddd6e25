#include "provider/json_util.h"

#include <limits>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "validation/utf8.h"

namespace understudy {
namespace provider {
absl::StatusOr<Json> ParseJson(absl::string_view text, absl::string_view where) {
  return validation::ParseJson<Json>(text, where);
}

std::string JsonTypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "number";
    case Json::value_t::string:
      return "string";
    case Json::value_t::array:
      return "array";
    case Json::value_t::object:
      return "object";
    default:
      return value.type_name();
  }
}

std::string DumpJson(const nlohmann::json& value) {
  return value.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/false,
                    nlohmann::json::error_handler_t::replace);
}

std::string DumpJson(const nlohmann::ordered_json& value) {
  return value.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/false,
                    nlohmann::ordered_json::error_handler_t::replace);
}

absl::Status ExpectedError(absl::string_view path, absl::string_view expected, const Json& got) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": expected ", expected, ", got ", JsonTypeName(got)));
}

absl::Status MissingError(absl::string_view path, absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": missing; expected ", expected));
}

absl::StatusOr<int64_t> JsonToInt64(const Json& value, absl::string_view path) {
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    return value.get<int64_t>();
  }
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(value.get<uint64_t>());
  }
  if (value.is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected an integer, got number ", validation::Shorten(DumpJson(value), 40)));
  }
  return ExpectedError(path, "an integer", value);
}

absl::StatusOr<double> JsonToDouble(const Json& value, absl::string_view path) {
  if (!value.is_number()) return ExpectedError(path, "a number", value);
  return value.get<double>();
}

absl::Status ReadUsage(const Json& usage, absl::string_view path, absl::string_view input_key,
                       absl::string_view output_key, v1::Usage* out) {
  if (!usage.is_object()) return ExpectedError(path, "a usage object", usage);
  if (const Json* v = FindMember(usage, input_key)) {
    US_ASSIGN_OR_RETURN(int64_t n, JsonToInt64(*v, JoinPath(path, input_key)));
    out->set_input_tokens(n);
  }
  if (const Json* v = FindMember(usage, output_key)) {
    US_ASSIGN_OR_RETURN(int64_t n, JsonToInt64(*v, JoinPath(path, output_key)));
    out->set_output_tokens(n);
  }
  return absl::OkStatus();
}

const Json* FindMember(const Json& object, absl::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(std::string(key));
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::Status ReadOptionalString(const Json& object, absl::string_view key, absl::string_view parent,
                                std::string* out) {
  const Json* value = FindMember(object, key);
  if (value == nullptr) return absl::OkStatus();
  if (!value->is_string()) return ExpectedError(JoinPath(parent, key), "a string", *value);
  *out = value->get<std::string>();
  return absl::OkStatus();
}

absl::Status ReadRequiredString(const Json& object, absl::string_view key, absl::string_view parent,
                                std::string* out) {
  if (FindMember(object, key) == nullptr) return MissingError(JoinPath(parent, key), "a string");
  return ReadOptionalString(object, key, parent, out);
}

bool HasOnlyKeys(const Json& object, std::initializer_list<absl::string_view> keys) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (it->is_null()) continue;
    bool known = false;
    for (absl::string_view k : keys) known = known || it.key() == k;
    if (!known) return false;
  }
  return true;
}

absl::StatusCode OpenAiErrorStatusCode(absl::string_view type) {
  if (type == "invalid_request_error") return absl::StatusCode::kInvalidArgument;
  if (type == "authentication_error") return absl::StatusCode::kUnauthenticated;
  if (type == "permission_error") return absl::StatusCode::kPermissionDenied;
  if (type == "rate_limit_error" || type == "insufficient_quota" ||
      type == "rate_limit_exceeded") {
    return absl::StatusCode::kResourceExhausted;
  }
  if (type == "timeout_error") return absl::StatusCode::kDeadlineExceeded;
  if (type == "server_error") return absl::StatusCode::kUnavailable;
  return absl::StatusCode::kUnknown;
}

}  // namespace provider
}  // namespace understudy
