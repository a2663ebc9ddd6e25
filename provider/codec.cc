#include "provider/codec.h"

#include <algorithm>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "base/http_status.h"
#include "nlohmann/json.hpp"
#include "validation/json_bounds.h"

namespace understudy {
namespace provider {

absl::StatusOr<std::optional<v1::CompletionChunk>> ChunkDecoder::DecodeElement(
    absl::string_view) {
  return absl::UnimplementedError("this API does not stream JSON array elements");
}

std::string ModelFor(const RenderContext& context, const v1::CompletionResponse& response) {
  if (!response.model().empty()) return response.model();
  if (context.call != nullptr && !context.call->model.empty()) return context.call->model;
  if (context.parsed != nullptr) return context.parsed->canonical.model();
  return "";
}

absl::string_view QueryParam(absl::string_view query, absl::string_view name) {
  for (absl::string_view pair : absl::StrSplit(query, '&')) {
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) {
      return eq == absl::string_view::npos ? absl::string_view() : pair.substr(eq + 1);
    }
  }
  return {};
}

bool IsEventStream(absl::string_view content_type) {
  return absl::StartsWith(absl::AsciiStrToLower(content_type), "text/event-stream");
}

std::vector<std::pair<std::string, std::string>> Codec::CallAttributes() const { return {}; }

std::string Codec::NormalizePath(absl::string_view path) const { return std::string(path); }

absl::StatusOr<CallRoute> Codec::Route(absl::string_view, absl::string_view path,
                                           absl::string_view query) const {
  CallRoute call;
  call.path = std::string(path);
  call.query = std::string(query);
  return call;
}

std::string Codec::ForwardPath(const CallRoute& call) const { return call.path; }

std::string Codec::RecordedPath(const CallRoute& call) const { return call.path; }

absl::string_view Codec::client_header() const { return ""; }

bool Codec::ReplaysHeader(absl::string_view) const { return false; }

std::pair<absl::string_view, absl::string_view> Codec::BaseUrlVariable() const { return {}; }

bool Codec::SameForm(const CallRoute&, absl::string_view) const { return true; }

std::string Codec::StreamContentType(const CallRoute&) const {
  return "text/event-stream; charset=utf-8";
}

absl::StatusOr<std::string> Codec::ModelList(const std::vector<std::string>&) const {
  return absl::UnimplementedError("this API has no model list of its own");
}

const StoredResponses* Codec::stored() const { return nullptr; }

absl::string_view Codec::aws_signing_name() const { return ""; }

bool Codec::AcceptsContentType(absl::string_view content_type) const {
  return absl::StartsWith(content_type, "application/json");
}

bool Codec::Claims(absl::string_view, absl::string_view) const { return false; }

std::string Codec::UpstreamErrorMessage(absl::string_view body) const {
  nlohmann::json j = validation::ParseJsonOrDiscarded<nlohmann::json>(body);
  if (!j.is_discarded() && j.is_array() && j.size() == 1) j = j[0];
  if (!j.is_discarded() && j.is_object() && j.contains("error") && j["error"].is_object() &&
      j["error"].contains("message") && j["error"]["message"].is_string()) {
    return j["error"]["message"].get<std::string>();
  }
  return "";
}

std::string Codec::RequestErrorBody(int http_status, absl::string_view message) const {
  return ErrorBody(absl::Status(StatusCodeForHttp(http_status), message), "");
}

void CodecRegistry::Register(std::unique_ptr<Codec> codec) { codecs_.push_back(std::move(codec)); }

const Codec* CodecRegistry::Find(absl::string_view name) const {
  for (const auto& codec : codecs_) {
    if (codec->name() == name) return codec.get();
  }
  return nullptr;
}

const Codec* CodecRegistry::ForPath(absl::string_view path, absl::string_view query) const {
  if (!query.empty()) {
    for (const auto& codec : codecs_) {
      if (codec->Claims(path, query)) return codec.get();
    }
  }
  for (const auto& codec : codecs_) {
    if (codec->Serves(path)) return codec.get();
  }
  return nullptr;
}

const Codec& CodecRegistry::ForClient(
    const std::function<absl::string_view(absl::string_view)>& header) const {
  for (const auto& codec : codecs_) {
    if (!codec->client_header().empty() && !header(codec->client_header()).empty()) return *codec;
  }
  return Default();
}

const Codec& CodecRegistry::Default() const { return *codecs_.front(); }

std::string CodecRegistry::NormalizePath(absl::string_view path) const {
  std::string normalized(path);
  for (const auto& codec : codecs_) normalized = codec->NormalizePath(normalized);
  return normalized;
}

bool CodecRegistry::ReplaysHeader(absl::string_view name) const {
  if (name == "x-request-id" || name == "request-id" || name == "retry-after" ||
      name == "retry-after-ms") {
    return true;
  }
  return std::any_of(codecs_.begin(), codecs_.end(),
                     [name](const auto& codec) { return codec->ReplaysHeader(name); });
}

std::vector<std::string> CodecRegistry::UpstreamNames() const {
  std::vector<std::string> names;
  for (const auto& codec : codecs_) {
    const std::string name(codec->upstream());
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

std::vector<const Codec*> CodecRegistry::All() const {
  std::vector<const Codec*> all;
  for (const auto& codec : codecs_) all.push_back(codec.get());
  return all;
}

std::vector<std::pair<std::string, std::string>> CodecRegistry::BaseUrlVariables() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& codec : codecs_) {
    const std::pair<absl::string_view, absl::string_view> variable = codec->BaseUrlVariable();
    const absl::string_view name = variable.first;
    if (name.empty() || absl::c_any_of(out, [name](const auto& v) { return v.first == name; })) {
      continue;
    }
    out.emplace_back(std::string(name), std::string(variable.second));
  }
  return out;
}

std::vector<std::string> CodecRegistry::Routes() const {
  std::vector<std::string> routes;
  for (const auto& codec : codecs_) {
    for (std::string& route : codec->routes()) routes.push_back(std::move(route));
  }
  return routes;
}

}  // namespace provider
}  // namespace understudy
