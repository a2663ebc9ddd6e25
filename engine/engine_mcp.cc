// The engine's answers to MCP requests (docs/mcp.md): tool rules, the
// recording or the upstream, mock_tools, a miss; and their trace events
// (a tools/call is a tool_call / tool_result pair).
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/run_state.h"
#include "provider/canonical.h"
#include "provider/mcp.h"
#include "scenario/mocks.h"
#include "trace/vocabulary.h"

namespace understudy {
namespace engine {

bool IsMcpRequest(const v1::CompletionRequest& request) {
  return absl::StartsWith(request.operation(), provider::mcp::kOperationPrefix);
}

namespace {

constexpr size_t kMaxPendingToolCalls = 1024;
constexpr size_t kMaxTracedValueBytes = 64 << 10;

absl::string_view McpMethod(const v1::CompletionRequest& request) {
  return absl::string_view(request.operation()).substr(sizeof(provider::mcp::kOperationPrefix) - 1);
}

// What a tools/call asks for: the tool and its arguments ({} when absent,
// null when `extra` is not a JSON object).
struct McpToolCall {
  std::string tool;
  nlohmann::json arguments = nlohmann::json::object();
};

McpToolCall ReadToolCall(const v1::CompletionRequest& request) {
  McpToolCall out;
  nlohmann::json params = nlohmann::json::parse(request.extra(), nullptr, /*allow_exceptions=*/false);
  if (!params.is_object()) return out;
  auto name = params.find("name");
  if (name != params.end() && name->is_string()) out.tool = name->get<std::string>();
  auto args = params.find("arguments");
  if (args != params.end() && !args->is_null()) out.arguments = *args;
  return out;
}

std::string Dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A tools/call result with one text content.
nlohmann::json TextResult(absl::string_view text, bool is_error) {
  nlohmann::json result = {
      {"content", nlohmann::json::array({{{"type", "text"}, {"text", std::string(text)}}})}};
  if (is_error) result["isError"] = true;
  return result;
}

// An answer built as an exchange: the result JSON as a tool message.
std::shared_ptr<v1::Exchange> ResultExchange(const nlohmann::json& result) {
  auto exchange = std::make_shared<v1::Exchange>();
  v1::Message* message = exchange->mutable_response()->mutable_message();
  message->set_role("tool");
  message->set_content(Dump(result));
  return exchange;
}

// What the scenario's mock_tools answer for `method`, or null when they
// do not: a mocked tool's call, the list of mocked tools, and the
// initialize and empty lists of a server that exists only as mocks.
std::shared_ptr<v1::Exchange> MockAnswer(const scenario::Scenario& scenario, absl::string_view server,
                                         absl::string_view method,
                                         const v1::CompletionRequest& request) {
  if (scenario.mock_tools.empty()) return nullptr;
  if (method == "tools/call") {
    McpToolCall call = ReadToolCall(request);
    if (scenario.mock_tools.find(call.tool) == scenario.mock_tools.end()) return nullptr;
    v1::InvokeToolRequest invoke;
    invoke.set_tool(call.tool);
    invoke.set_arguments(Dump(call.arguments));
    absl::StatusOr<v1::InvokeToolResponse> answer = scenario::InvokeMockTool(scenario, invoke);
    if (!answer.ok()) return ResultExchange(TextResult(answer.status().message(), true));
    const scenario::MockTool& mock = scenario.mock_tools.at(call.tool);
    if (mock.kind == scenario::MockTool::Kind::kResult && mock.result.is_object()) {
      nlohmann::json result = TextResult(answer->content(), false);
      result["structuredContent"] = mock.result;
      return ResultExchange(result);
    }
    return ResultExchange(TextResult(answer->content(), false));
  }
  if (method == "tools/list") {
    nlohmann::json tools = nlohmann::json::array();
    for (const auto& [name, mock] : scenario.mock_tools) {
      tools.push_back({{"name", name},
                       {"description", "mocked by understudy"},
                       {"inputSchema", {{"type", "object"}}}});
    }
    return ResultExchange({{"tools", tools}});
  }
  if (method == "initialize") {
    nlohmann::json params = nlohmann::json::parse(request.extra(), nullptr, false);
    std::string version = "2025-06-18";
    if (params.is_object() && params.contains("protocolVersion") &&
        params["protocolVersion"].is_string()) {
      version = params["protocolVersion"].get<std::string>();
    }
    return ResultExchange({{"protocolVersion", version},
                           {"capabilities", {{"tools", {{"listChanged", false}}}}},
                           {"serverInfo", {{"name", std::string(server)}, {"version", "understudy"}}}});
  }
  if (method == "resources/list") return ResultExchange({{"resources", nlohmann::json::array()}});
  if (method == "prompts/list") return ResultExchange({{"prompts", nlohmann::json::array()}});
  return nullptr;
}

}  // namespace

v1::ExchangeRef ExchangeRefTo(const v1::Exchange& exchange) {
  v1::ExchangeRef ref;
  ref.set_seq(exchange.seq());
  ref.set_agent(exchange.agent());
  ref.set_model(exchange.request().model());
  ref.set_operation(exchange.request().operation());
  if (IsMcpRequest(exchange.request()) && McpMethod(exchange.request()) == "tools/call") {
    ref.set_tool(ReadToolCall(exchange.request()).tool);
  }
  return ref;
}

v1::TraceEvent McpExchangeEvent(const std::string& agent, const v1::CompletionRequest& request,
                                const v1::CompletionResponse* response, const absl::Status& status,
                                AnswerSource source, int64_t exchange_seq,
                                const TraceAttributes& extra) {
  const absl::string_view method = McpMethod(request);
  v1::TraceEvent event;
  event.set_agent(agent);
  auto& attrs = *event.mutable_attributes();
  if (!agent.empty()) attrs[trace::attr::kGenAiAgentName] = agent;
  attrs[trace::attr::kMcpServer] = request.model();
  attrs[trace::attr::kMcpMethod] = std::string(method);
  attrs[trace::attr::kAnswerSource] = std::string(SourceName(source));
  if (exchange_seq > 0) attrs[trace::attr::kExchangeSeq] = absl::StrCat(exchange_seq);
  if (!status.ok()) {
    attrs[trace::attr::kErrorType] = absl::StatusCodeToString(status.code());
    attrs[trace::attr::kError] = std::string(status.message().substr(0, kMaxTracedValueBytes));
  }
  if (method != "tools/call") {
    event.set_kind(trace::event::kExchange);
    attrs[trace::attr::kGenAiOperationName] = request.operation();
    if (response != nullptr && status.ok()) *event.mutable_response() = *response;
    for (const auto& [name, value] : extra) attrs[name] = value;
    *event.mutable_request() = provider::WithoutRouting(request);
    return event;
  }
  event.set_kind(trace::event::kToolResult);
  const McpToolCall call = ReadToolCall(request);
  attrs[trace::attr::kGenAiOperationName] = "execute_tool";
  attrs[trace::attr::kGenAiToolName] = call.tool;
  attrs[trace::attr::kGenAiToolCallArguments] = Dump(call.arguments).substr(0, kMaxTracedValueBytes);
  if (response != nullptr && status.ok()) {
    attrs[trace::attr::kGenAiToolCallResult] = response->message().content().substr(0, kMaxTracedValueBytes);
    nlohmann::json result =
        nlohmann::json::parse(response->message().content(), nullptr, false);
    if (result.is_object() && result.value("isError", false)) attrs[trace::attr::kToolIsError] = "true";
  }
  for (const auto& [name, value] : extra) attrs[name] = value;
  // Read by RunState::TraceMcpCallLocked, which clears it.
  *event.mutable_request() = provider::WithoutRouting(request);
  return event;
}

void RunState::NoteModelToolCallLocked(const std::string& agent, const v1::ToolCall& call) {
  PendingToolCall pending;
  pending.agent = agent;
  pending.name = call.name();
  pending.id = call.id();
  pending.arguments = nlohmann::json::parse(call.arguments().empty() ? "{}" : call.arguments(),
                                            nullptr, /*allow_exceptions=*/false);
  if (pending.arguments.is_discarded()) pending.arguments = nullptr;
  pending_tool_calls_.push_back(std::move(pending));
  if (pending_tool_calls_.size() > kMaxPendingToolCalls) pending_tool_calls_.pop_front();
}

void RunState::TraceMcpCallLocked(v1::TraceEvent* result) {
  const McpToolCall call = ReadToolCall(result->request());
  result->clear_request();
  auto& attrs = *result->mutable_attributes();
  // The model's own call of this tool, if it is waiting to run: agents
  // name MCP tools as the server does, or prefixed (`mcp__server__tool`).
  for (auto it = pending_tool_calls_.begin(); it != pending_tool_calls_.end(); ++it) {
    if (it->agent != result->agent()) continue;
    if (it->name != call.tool && !absl::EndsWith(it->name, absl::StrCat("__", call.tool))) continue;
    if (it->arguments != call.arguments) continue;
    if (!it->id.empty()) {
      attrs[trace::attr::kGenAiToolCallId] = it->id;
      mcp_traced_ids_.insert(it->id);
    }
    pending_tool_calls_.erase(it);
    return;
  }
  v1::TraceEvent call_event;
  call_event.set_kind(trace::event::kToolCall);
  call_event.set_agent(result->agent());
  auto& call_attrs = *call_event.mutable_attributes();
  for (const char* key : {trace::attr::kGenAiAgentName, trace::attr::kGenAiOperationName, trace::attr::kGenAiToolName,
                          trace::attr::kGenAiToolCallArguments, trace::attr::kMcpServer}) {
    auto it = attrs.find(key);
    if (it != attrs.end()) call_attrs[key] = it->second;
  }
  EmitLocked(std::move(call_event));
}

absl::StatusOr<Decision> Engine::DecideMcp(const std::shared_ptr<RunState>& run,
                                           const CallInfo& call,
                                           const v1::CompletionRequest& request) {
  const scenario::Script& script = run->script();
  const absl::string_view method = McpMethod(request);
  Decision decision;
  decision.speed = options_.speed;
  TraceAttributes attrs;

  // 1. Tool rules.
  if (method == "tools/call") {
    const McpToolCall tool = ReadToolCall(request);
    const scenario::Selection selection =
        script.rules().SelectTool(run->context(), tool.tool, tool.arguments, call.agent);
    if (selection.rule != nullptr) {
      attrs.emplace_back(trace::attr::kRuleName, selection.rule->name);
      attrs.emplace_back(trace::attr::kRuleUse, absl::StrCat(selection.rule_use));
      const scenario::Step step = scenario::ResolveStep(selection.rule->action, selection.rule_use);
      if (!step.path.empty()) attrs.emplace_back(trace::attr::kActionPath, step.path);
      std::shared_ptr<v1::Exchange> answer;
      switch (step.kind) {
        case scenario::Step::Kind::kDelay:
          decision.delay += absl::Milliseconds(step.delay->ms);
          attrs.emplace_back(trace::attr::kEffect, "delay");
          attrs.emplace_back(trace::attr::kDelayMs, absl::StrCat(step.delay->ms));
          break;
        case scenario::Step::Kind::kRespond: {
          attrs.emplace_back(trace::attr::kAction, "respond");
          if (step.respond->structured.has_value()) {
            nlohmann::json result = TextResult(
                step.respond->content.empty() ? Dump(*step.respond->structured)
                                              : step.respond->content,
                false);
            result["structuredContent"] = *step.respond->structured;
            answer = ResultExchange(result);
          } else {
            answer = ResultExchange(TextResult(step.respond->content, false));
          }
          break;
        }
        case scenario::Step::Kind::kError:
          attrs.emplace_back(trace::attr::kAction, "error");
          answer = step.error->jsonrpc_code.has_value()
                       ? internal::JsonRpcErrorExchange(*step.error->jsonrpc_code, step.error->message)
                       : ResultExchange(TextResult(step.error->message, true));
          break;
        case scenario::Step::Kind::kHang:
          attrs.emplace_back(trace::attr::kAction, "hang");
          attrs.emplace_back(trace::attr::kErrorType, "DEADLINE_EXCEEDED");
          return CallAnsweredByRule(run, call, request, nullptr, attrs, std::move(decision));
        default:
          // Model-only actions (disconnect, from_session): the validator
          // refuses them in tool rules.
          break;
      }
      if (answer != nullptr) {
        return CallAnsweredByRule(run, call, request, std::move(answer), attrs,
                                  std::move(decision));
      }
    }
  }

  // 2. The recording, or the upstream.
  std::shared_ptr<v1::Exchange> mock = MockAnswer(script.scenario(), request.model(), method, request);
  US_ASSIGN_OR_RETURN(const bool answered,
                      RecordingOrUpstream(run, call, request, /*quiet=*/mock != nullptr, &attrs,
                                          &decision));
  if (answered) return decision;

  // 3. mock_tools.
  if (mock != nullptr) {
    const absl::Status status =
        mock->has_error() ? StatusFromRecorded(mock->error()) : absl::OkStatus();
    US_RETURN_IF_ERROR(run->Answered(McpExchangeEvent(call.agent, request, &mock->response(),
                                                      status, AnswerSource::kMock, 0, attrs)));
    const v1::Exchange* reply = mock.get();
    decision.what = ReplyFromExchange{std::move(mock), reply};
    decision.source = AnswerSource::kMock;
    return decision;
  }

  // 4. A miss.
  absl::Status miss = run->BareMiss(
      call, request,
      absl::StrCat("no tool rule", run->has_index() ? ", recording" : "",
                   " or mock_tools entry answers MCP ", method, " on server \"", request.model(),
                   "\"", run->has_index() ? "" : "; the run replays no session"));
  if (decision.delay <= absl::ZeroDuration() || absl::IsFailedPrecondition(miss)) return miss;
  decision.what = MissAfterDelay{std::move(miss)};
  return decision;
}

}  // namespace engine
}  // namespace understudy
