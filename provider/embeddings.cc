#include "provider/embeddings.h"

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "provider/json_util.h"
#include "provider/request_fields.h"
#include "validation/utf8.h"

namespace understudy {
namespace provider {
namespace embeddings {
namespace {

constexpr absl::string_view kOperation = "embeddings";
constexpr absl::string_view kInputExpected = "a string or an array of strings or token ids";
constexpr absl::string_view kTokenId = "a token id (a non-negative integer)";
constexpr absl::string_view kEmbeddingExpected = "an array of numbers or a base64 string";
// The message extra that marks an input given as token ids.
constexpr absl::string_view kTokensExtra = R"({"tokens":true})";

// `value` as an error message quotes it: its compact JSON, cut short.
std::string Quoted(const Json& value) { return validation::Shorten(DumpJson(value), 40); }

absl::Status EmptyError(absl::string_view path, absl::string_view expected, absl::string_view got) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": expected ", expected, ", got ", got));
}

absl::StatusOr<int64_t> ReadToken(const Json& value, const std::string& path) {
  if (!value.is_number()) return ExpectedError(path, kTokenId, value);
  if (value.is_number_integer()) {
    absl::StatusOr<int64_t> n = JsonToInt64(value, path);
    if (n.ok() && *n >= 0) return *n;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": expected ", kTokenId, ", got number ", Quoted(value)));
}

// One user message whose content is the token ids of `tokens` (an array of
// integers) as compact JSON, marked {"tokens":true}.
absl::Status AddTokenInput(const Json& tokens, const std::string& path,
                           v1::CompletionRequest* request) {
  std::vector<int64_t> ids;
  ids.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    US_ASSIGN_OR_RETURN(int64_t id, ReadToken(tokens[i], JoinPath(path, i)));
    ids.push_back(id);
  }
  v1::Message* m = request->add_messages();
  m->set_role("user");
  m->set_content(absl::StrCat("[", absl::StrJoin(ids, ","), "]"));
  m->set_extra(std::string(kTokensExtra));
  return absl::OkStatus();
}

void AddTextInput(const Json& text, v1::CompletionRequest* request) {
  v1::Message* m = request->add_messages();
  m->set_role("user");
  m->set_content(text.get<std::string>());
}

// `input`: a string, an array of strings, an array of token ids, or an
// array of arrays of token ids; the first element decides which.
absl::Status ParseInput(const Json& input, v1::CompletionRequest* request) {
  const std::string path = "input";
  if (input.is_string()) {
    if (input.get_ref<const std::string&>().empty()) {
      return EmptyError(path, "a non-empty string", "an empty string");
    }
    AddTextInput(input, request);
    return absl::OkStatus();
  }
  if (!input.is_array()) return ExpectedError(path, kInputExpected, input);
  if (input.empty()) return EmptyError(path, "a non-empty array", "an empty array");
  const Json& first = input[0];
  if (first.is_number()) return AddTokenInput(input, path, request);
  if (!first.is_string() && !first.is_array()) {
    return ExpectedError(JoinPath(path, 0), "a string, a token id or an array of token ids", first);
  }
  if (input.size() > kMaxInputs) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected at most ", kMaxInputs, " inputs, got ", input.size()));
  }
  for (size_t i = 0; i < input.size(); ++i) {
    const Json& item = input[i];
    const std::string item_path = JoinPath(path, i);
    if (first.is_string()) {
      if (!item.is_string()) return ExpectedError(item_path, "a string", item);
      if (item.get_ref<const std::string&>().empty()) {
        return EmptyError(item_path, "a non-empty string", "an empty string");
      }
      AddTextInput(item, request);
    } else {
      if (!item.is_array()) return ExpectedError(item_path, "an array of token ids", item);
      if (item.empty()) {
        return EmptyError(item_path, "a non-empty array of token ids", "an empty array");
      }
      US_RETURN_IF_ERROR(AddTokenInput(item, item_path, request));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckEncodingFormat(const Json& value) {
  constexpr absl::string_view kExpected = R"("float" or "base64")";
  if (!value.is_string()) return ExpectedError("encoding_format", kExpected, value);
  const std::string& format = value.get_ref<const std::string&>();
  if (format == "float" || format == "base64") return absl::OkStatus();
  return EmptyError("encoding_format", kExpected, Quoted(value));
}

// `dimensions` when it is an integer in [1, kMaxDimensions].
absl::StatusOr<int64_t> ReadDimensions(const Json& value) {
  const std::string expected = absl::StrCat("an integer in [1, ", kMaxDimensions, "]");
  if (!value.is_number()) return ExpectedError("dimensions", expected, value);
  if (value.is_number_integer()) {
    absl::StatusOr<int64_t> n = JsonToInt64(value, "dimensions");
    if (n.ok() && *n >= 1 && *n <= kMaxDimensions) return *n;
  }
  return EmptyError("dimensions", expected, Quoted(value));
}

// The float32 values of a base64 `embedding`: little-endian, back to back.
absl::StatusOr<std::vector<float>> DecodeBase64(const std::string& text, const std::string& path) {
  std::string bytes;
  if (!absl::Base64Unescape(text, &bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": invalid base64"));
  }
  if (bytes.size() % 4 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected base64 of float32 values, got ", bytes.size(), " bytes"));
  }
  std::vector<float> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t bits = 0;
    for (int b = 3; b >= 0; --b) {
      bits = (bits << 8) | static_cast<unsigned char>(bytes[4 * i + static_cast<size_t>(b)]);
    }
    std::memcpy(&out[i], &bits, sizeof bits);
  }
  return out;
}

absl::StatusOr<std::vector<float>> DecodeEmbedding(const Json& embedding, const std::string& path) {
  if (embedding.is_string()) {
    return DecodeBase64(embedding.get_ref<const std::string&>(), path);
  }
  if (!embedding.is_array()) return ExpectedError(path, kEmbeddingExpected, embedding);
  std::vector<float> out;
  out.reserve(embedding.size());
  for (size_t i = 0; i < embedding.size(); ++i) {
    const Json& value = embedding[i];
    if (!value.is_number()) return ExpectedError(JoinPath(path, i), "a number", value);
    const double d = value.get<double>();
    if (!(std::fabs(d) <= static_cast<double>(FLT_MAX))) {
      return absl::InvalidArgumentError(absl::StrCat(
          JoinPath(path, i), ": expected a number in the float32 range, got ", Quoted(value)));
    }
    out.push_back(static_cast<float>(d));
  }
  return out;
}

// Checks `data` of a response body and decodes its vectors into `out`
// (when given).
absl::Status ReadData(const Json& root, std::vector<std::vector<float>>* out) {
  constexpr absl::string_view kExpected = "an array of embeddings";
  const Json* data = FindMember(root, "data");
  if (data == nullptr) return MissingError("data", kExpected);
  if (!data->is_array()) return ExpectedError("data", kExpected, *data);
  for (size_t i = 0; i < data->size(); ++i) {
    const Json& item = (*data)[i];
    const std::string item_path = JoinPath("data", i);
    if (!item.is_object()) return ExpectedError(item_path, "an embedding object", item);
    if (const Json* index = FindMember(item, "index")) {
      US_RETURN_IF_ERROR(JsonToInt64(*index, JoinPath(item_path, "index")).status());
    }
    const std::string embedding_path = JoinPath(item_path, "embedding");
    const Json* embedding = FindMember(item, "embedding");
    if (embedding == nullptr) return MissingError(embedding_path, kEmbeddingExpected);
    US_ASSIGN_OR_RETURN(std::vector<float> vector, DecodeEmbedding(*embedding, embedding_path));
    if (out != nullptr) out->push_back(std::move(vector));
  }
  return absl::OkStatus();
}

absl::StatusOr<Json> ParseBody(absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseJson(body, "body"));
  if (!root.is_object()) return ExpectedError("body", "a JSON object", root);
  return root;
}

uint64_t Fnv1a64(absl::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV offset basis
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;  // FNV prime
  }
  return hash;
}

// The splitmix64 generator (Steele, Lea, Flood 2014): the next value of
// the sequence at `*state`.
uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

bool IsTokenInput(const v1::Message& m) {
  if (m.extra().empty()) return false;
  if (m.extra() == kTokensExtra) return true;
  absl::StatusOr<Json> extra = ParseJson(m.extra(), "extra");
  if (!extra.ok()) return false;
  const Json* tokens = FindMember(*extra, "tokens");
  return tokens != nullptr && tokens->is_boolean() && tokens->get<bool>();
}

// The usage RenderResponse reports for one input (see the header).
int64_t EstimateTokens(const v1::Message& m) {
  const std::string& content = m.content();
  if (IsTokenInput(m)) {
    if (content.empty() || content == "[]") return 0;
    int64_t ids = 1;
    for (const char c : content) ids += c == ',' ? 1 : 0;
    return ids;
  }
  return static_cast<int64_t>((content.size() + 3) / 4);
}

void AppendFloat(float value, std::string* out) {
  char buffer[32];
  const std::to_chars_result r = std::to_chars(buffer, buffer + sizeof buffer, value);
  out->append(buffer, r.ptr);
}

void AppendBase64(const std::vector<float>& vector, std::string* out) {
  std::string bytes;
  bytes.reserve(vector.size() * 4);
  for (const float value : vector) {
    uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>((bits >> (8 * b)) & 0xff));
  }
  out->push_back('"');
  out->append(absl::Base64Escape(bytes));
  out->push_back('"');
}

}  // namespace

absl::StatusOr<ParsedRequest> ParseRequest(absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseBody(body));
  ParsedRequest out;
  v1::CompletionRequest& request = out.canonical;
  request.set_operation(std::string(kOperation));

  US_RETURN_IF_ERROR(ReadRequiredString(root, "model", "", request.mutable_model()));
  const Json* input = FindMember(root, "input");
  if (input == nullptr) return MissingError("input", kInputExpected);
  US_RETURN_IF_ERROR(ParseInput(*input, &request));
  if (const Json* format = FindMember(root, "encoding_format")) {
    US_RETURN_IF_ERROR(CheckEncodingFormat(*format));
  }
  if (const Json* dimensions = FindMember(root, "dimensions")) {
    US_RETURN_IF_ERROR(ReadDimensions(*dimensions).status());
  }

  // Sorted keys (nlohmann::json), so that the same fields in another order
  // give the same bytes.
  nlohmann::json extra = nlohmann::json::object();
  CopyUnmapped(root, kIgnoredRequestFields, {"model", "input"}, &extra);
  if (!extra.empty()) request.set_extra(DumpJson(extra));
  return out;
}

EmbeddingsOptions OptionsOf(const v1::CompletionRequest& canonical) {
  EmbeddingsOptions options;
  if (canonical.extra().empty()) return options;
  absl::StatusOr<Json> extra = ParseJson(canonical.extra(), "extra");
  if (!extra.ok()) return options;
  if (const Json* format = FindMember(*extra, "encoding_format")) {
    options.base64 = format->is_string() && format->get_ref<const std::string&>() == "base64";
  }
  if (const Json* dimensions = FindMember(*extra, "dimensions")) {
    absl::StatusOr<int64_t> n = ReadDimensions(*dimensions);
    if (n.ok()) options.dimensions = *n;
  }
  return options;
}

absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseBody(body));
  v1::CompletionResponse out;
  US_RETURN_IF_ERROR(ReadOptionalString(root, "model", "", out.mutable_model()));
  US_RETURN_IF_ERROR(ReadData(root, /*out=*/nullptr));
  if (const Json* usage = FindMember(root, "usage")) {
    if (!usage->is_object()) return ExpectedError("usage", "a usage object", *usage);
    if (const Json* v = FindMember(*usage, "prompt_tokens")) {
      US_ASSIGN_OR_RETURN(int64_t n, JsonToInt64(*v, "usage.prompt_tokens"));
      out.mutable_usage()->set_input_tokens(n);
    }
    if (const Json* v = FindMember(*usage, "total_tokens")) {
      US_RETURN_IF_ERROR(JsonToInt64(*v, "usage.total_tokens").status());
    }
    out.mutable_usage();  // present, even when it has no counts
  }
  out.mutable_message()->set_role("assistant");
  out.set_finish_reason("stop");
  return out;
}

absl::StatusOr<std::vector<std::vector<float>>> Vectors(absl::string_view body) {
  US_ASSIGN_OR_RETURN(Json root, ParseBody(body));
  std::vector<std::vector<float>> out;
  US_RETURN_IF_ERROR(ReadData(root, &out));
  return out;
}

int64_t DefaultDimensions(absl::string_view model) {
  return model.find("3-large") != absl::string_view::npos ? 3072 : 1536;
}

std::vector<float> PseudoEmbedding(absl::string_view text, int64_t dimensions) {
  if (dimensions <= 0) return {};
  const size_t n = static_cast<size_t>(dimensions);
  std::vector<double> values(n);
  uint64_t state = Fnv1a64(text);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    // The top 53 bits as a double in [0, 1), then mapped to [-1, 1).
    const double unit = static_cast<double>(SplitMix64(&state) >> 11) * 0x1.0p-53;
    values[i] = 2 * unit - 1;
    sum += values[i] * values[i];
  }
  std::vector<float> out(n);
  if (sum == 0) {  // every value exactly 0: unreachable in practice, but total
    out[0] = 1;
    return out;
  }
  const double norm = std::sqrt(sum);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(values[i] / norm);
  return out;
}

std::string RenderResponse(const v1::CompletionRequest& request, absl::string_view model) {
  const EmbeddingsOptions options = OptionsOf(request);
  const int64_t dimensions = options.dimensions > 0 ? options.dimensions : DefaultDimensions(model);
  std::string out = R"({"object":"list","data":[)";
  int64_t tokens = 0;
  for (int i = 0; i < request.messages_size(); ++i) {
    const v1::Message& m = request.messages(i);
    if (i > 0) out.push_back(',');
    absl::StrAppend(&out, R"({"object":"embedding","index":)", i, R"(,"embedding":)");
    const std::vector<float> vector = PseudoEmbedding(m.content(), dimensions);
    if (options.base64) {
      AppendBase64(vector, &out);
    } else {
      out.push_back('[');
      for (size_t j = 0; j < vector.size(); ++j) {
        if (j > 0) out.push_back(',');
        AppendFloat(vector[j], &out);
      }
      out.push_back(']');
    }
    out.push_back('}');
    tokens += EstimateTokens(m);
  }
  absl::StrAppend(&out, R"(],"model":)", DumpJson(Json(std::string(model))),
                  R"(,"usage":{"prompt_tokens":)", tokens, R"(,"total_tokens":)", tokens, "}}");
  return out;
}

}  // namespace embeddings
}  // namespace provider
}  // namespace understudy
