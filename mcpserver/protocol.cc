#include "mcpserver/protocol.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "provider/jsonrpc.h"
#include "provider/mcp.h"

namespace understudy {
namespace mcpserver {

namespace jsonrpc = ::understudy::provider::jsonrpc;
namespace mcp = ::understudy::provider::mcp;
using nlohmann::json;

namespace {

constexpr char kInstructions[] =
    "understudy records and replays LLM-agent sessions and keeps a trace of every run. Use "
    "list_sessions and show_run to see what agents did; generate_test_spec to turn a run into an "
    "assertion spec, validate_test_spec to check a spec, generate_tests_from_spec to write a "
    "pytest, node:test or GoogleTest file, validate_test_code and run_tests to check and run it, "
    "and analyze_test_results to learn why a test failed. Fix every problem a validator reports, "
    "then validate again.";

std::string Compact(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

Protocol::Protocol(const Tools* tools, std::string version)
    : tools_(tools), version_(std::move(version)) {}

bool Protocol::IsRequest(absl::string_view message) {
  absl::StatusOr<jsonrpc::Message> m = jsonrpc::ParseMessage(message);
  // Text that does not parse is answered (with an error), so it counts.
  return !m.ok() || m->kind == jsonrpc::Message::Kind::kRequest;
}

std::string Protocol::Handle(absl::string_view text) const {
  absl::StatusOr<jsonrpc::Message> parsed = jsonrpc::ParseMessage(text);
  if (!parsed.ok()) {
    return jsonrpc::ErrorResponse(provider::Json(), jsonrpc::ErrorCodeFor(parsed.status()),
                              parsed.status().message());
  }
  const jsonrpc::Message& m = *parsed;
  if (m.kind != jsonrpc::Message::Kind::kRequest) return "";
  const json params = m.params.is_null() ? json::object() : json::parse(m.params.dump());

  if (m.method == "initialize") {
    std::string version = kProtocolVersions[0];
    if (auto v = params.find("protocolVersion"); v != params.end() && v->is_string()) {
      for (const char* known : kProtocolVersions) {
        if (v->get<std::string>() == known) version = known;
      }
    }
    json result = {{"protocolVersion", version},
                   {"capabilities", {{"tools", {{"listChanged", false}}}}},
                   {"serverInfo", {{"name", "understudy"}, {"title", "understudy"},
                                   {"version", version_}}},
                   {"instructions", kInstructions}};
    return jsonrpc::ResultResponse(m.id, Compact(result));
  }
  if (m.method == "ping") return jsonrpc::ResultResponse(m.id, "{}");
  if (m.method == "tools/list") {
    return jsonrpc::ResultResponse(m.id, Compact({{"tools", tools_->List()}}));
  }
  if (m.method == "tools/call") {
    auto name = params.find("name");
    if (!params.is_object() || name == params.end() || !name->is_string()) {
      return jsonrpc::ErrorResponse(m.id, jsonrpc::kInvalidParams,
                                "tools/call: params.name must be the tool's name (a string)");
    }
    json arguments = json::object();
    if (auto a = params.find("arguments"); a != params.end() && !a->is_null()) {
      if (!a->is_object()) {
        return jsonrpc::ErrorResponse(m.id, jsonrpc::kInvalidParams,
                                  "tools/call: params.arguments must be an object");
      }
      arguments = *a;
    }
    absl::StatusOr<ToolResult> result = tools_->Call(name->get<std::string>(), arguments);
    if (!result.ok()) {
      return jsonrpc::ErrorResponse(m.id, jsonrpc::kInvalidParams, result.status().message());
    }
    json out = {{"content", json::array({{{"type", "text"}, {"text", result->text}}})},
                {"isError", result->is_error}};
    if (!result->is_error) out["structuredContent"] = std::move(result->structured);
    return jsonrpc::ResultResponse(m.id, Compact(out));
  }
  return jsonrpc::ErrorResponse(m.id, jsonrpc::kMethodNotFound,
                            absl::StrCat("method not found: ", m.method.substr(0, 100),
                                         " (this server offers initialize, ping, tools/list, "
                                         "tools/call)"));
}

}  // namespace mcpserver
}  // namespace understudy
