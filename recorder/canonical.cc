#include "recorder/canonical.h"

#include <string>

namespace understudy {
namespace recorder {
namespace {

using nlohmann::json;

// Deepest nesting of arrays and objects parsed: serializing a value
// recurses, so text nested deeper (hostile tool arguments, say) is compared
// as text instead of risking the stack.
constexpr int kMaxParsedDepth = 256;

// True when the arrays and objects of `text` (JSON or not) nest no deeper
// than kMaxParsedDepth, brackets inside strings not counted.
bool ShallowEnough(const std::string& text) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxParsedDepth) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

// JSON text parsed to a value (objects come out key-sorted); malformed or
// too deeply nested text stays a string so that it still compares byte for
// byte.
json ParsedOrString(const std::string& text) {
  if (text.empty() || !ShallowEnough(text)) return json(text);
  json parsed = json::parse(text, /*cb=*/nullptr, /*allow_exceptions=*/false);
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
  return out;
}

std::string CanonicalText(const v1::CompletionRequest& request) {
  return CanonicalJson(request).dump(/*indent=*/-1, /*indent_char=*/' ',
                                     /*ensure_ascii=*/false,
                                     json::error_handler_t::replace);
}

v1::CompletionRequest WithoutRouting(const v1::CompletionRequest& request) {
  v1::CompletionRequest out = request;
  out.clear_run();
  out.clear_agent();
  return out;
}

}  // namespace recorder
}  // namespace understudy
