#include "provider/canonical.h"

#include <string>

#include "absl/strings/match.h"
#include "provider/a2a.h"
#include "provider/mcp.h"
#include "validation/json_bounds.h"

namespace understudy {
namespace provider {
namespace {

using nlohmann::json;

// JSON text parsed to a value (objects come out key-sorted); malformed or
// too deeply nested text (validation::kMaxJsonDepth: serializing a value
// recurses) stays a string so that it still compares byte for byte.
json ParsedOrString(const std::string& text) {
  if (text.empty()) return json(text);
  json parsed = validation::ParseJsonOrDiscarded<json>(text);
  if (parsed.is_discarded()) return json(text);
  return parsed;
}

json MessageJson(const v1::Message& m) {
  json out = json::object();
  out["role"] = m.role();
  if (!m.content().empty()) out["content"] = m.content();
  if (!m.name().empty()) out["name"] = m.name();
  if (!m.tool_call_id().empty()) out["tool_call_id"] = m.tool_call_id();
  if (!m.extra().empty()) out["extra"] = ParsedOrString(m.extra());
  if (m.tool_calls_size() > 0) {
    json calls = json::array();
    for (const v1::ToolCall& c : m.tool_calls()) {
      calls.push_back({{"id", c.id()},
                       {"name", c.name()},
                       {"arguments", ParsedOrString(c.arguments())}});
    }
    out["tool_calls"] = std::move(calls);
  }
  return out;
}

}  // namespace

json CanonicalJson(const v1::CompletionRequest& request) {
  json out = json::object();
  if (!request.model().empty()) out["model"] = request.model();
  json messages = json::array();
  for (const v1::Message& m : request.messages()) messages.push_back(MessageJson(m));
  out["messages"] = std::move(messages);
  if (request.tools_size() > 0) {
    json tools = json::array();
    for (const v1::ToolDefinition& t : request.tools()) {
      json tool = {{"name", t.name()}};
      if (!t.description().empty()) tool["description"] = t.description();
      if (!t.parameters().empty()) tool["parameters"] = ParsedOrString(t.parameters());
      tools.push_back(std::move(tool));
    }
    out["tools"] = std::move(tools);
  }
  if (request.has_params()) {
    const v1::SamplingParams& p = request.params();
    json params = json::object();
    if (p.has_temperature()) params["temperature"] = p.temperature();
    if (p.has_top_p()) params["top_p"] = p.top_p();
    if (p.has_max_tokens()) params["max_tokens"] = p.max_tokens();
    if (p.has_seed()) params["seed"] = p.seed();
    if (p.stop_size() > 0) params["stop"] = json(std::vector<std::string>(p.stop().begin(), p.stop().end()));
    if (!params.empty()) out["params"] = std::move(params);
  }
  if (!request.extra().empty()) out["extra"] = ParsedOrString(request.extra());
  if (!request.operation().empty() && request.operation() != "chat") {
    out["operation"] = request.operation();
  }
  return out;
}

std::string CanonicalText(const v1::CompletionRequest& request) {
  return CanonicalJson(request).dump(/*indent=*/-1, /*indent_char=*/' ',
                                     /*ensure_ascii=*/false,
                                     json::error_handler_t::replace);
}

bool IsCallRequest(const v1::CompletionRequest& request) {
  return absl::StartsWith(request.operation(), mcp::kOperationPrefix) || a2a::IsA2aRequest(request);
}

v1::CompletionRequest WithoutRouting(const v1::CompletionRequest& request) {
  v1::CompletionRequest out = request;
  out.clear_run();
  out.clear_agent();
  return out;
}

}  // namespace provider
}  // namespace understudy
