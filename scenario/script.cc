#include "scenario/script.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/http_status.h"
#include "base/status_macros.h"

namespace understudy {
namespace scenario {

absl::StatusOr<std::shared_ptr<const Script>> Script::Load(const std::string& ref,
                                                           absl::string_view text,
                                                           const ScenarioFiles& files) {
  if (ref.empty() == text.empty()) {
    return absl::InvalidArgumentError(
        "scenario: give either a pack name or path (scenario) or the document (scenario_text), "
        "not both");
  }
  if (!text.empty()) {
    US_ASSIGN_OR_RETURN(Scenario scenario, LoadScenario(text, "inline"));
    return FromScenario(std::move(scenario));
  }
  US_ASSIGN_OR_RETURN(std::string path, ResolveScenario(ref, files));
  US_ASSIGN_OR_RETURN(std::string contents, ReadScenarioFile(path));
  US_ASSIGN_OR_RETURN(Scenario scenario, LoadScenario(contents, path));
  return FromScenario(std::move(scenario));
}

absl::StatusOr<std::shared_ptr<const Script>> Script::FromScenario(Scenario scenario) {
  US_ASSIGN_OR_RETURN(RuleSet rules, RuleSet::Create(scenario));
  auto shared = std::make_shared<const Scenario>(std::move(scenario));
  return std::shared_ptr<const Script>(new Script(std::move(shared), std::move(rules)));
}

Script::Script(std::shared_ptr<const Scenario> scenario, RuleSet rules)
    : scenario_(std::move(scenario)),
      rules_(std::move(rules)),
      label_(scenario_->name.empty() ? scenario_->source : scenario_->name) {}

std::string Script::AgentFor(const v1::CompletionRequest& request) const {
  if (scenario_->agents.empty()) return "";
  for (const v1::Message& m : request.messages()) {
    if (m.role() != "system") continue;
    const re2::StringPiece text(m.content().data(), m.content().size());
    for (const AgentDef& agent : scenario_->agents) {
      if (RE2::PartialMatch(text, *agent.system_prompt.re)) return agent.name;
    }
    break;
  }
  return "";
}

namespace {

Step ResolveAt(const Action& action, int64_t use, std::string path) {
  Step step;
  step.path = std::move(path);
  const auto& v = action.value;
  if (const auto* a = std::get_if<RespondAction>(&v)) {
    step.kind = Step::Kind::kRespond;
    step.respond = a;
  } else if (const auto* a = std::get_if<ErrorAction>(&v)) {
    step.kind = Step::Kind::kError;
    step.error = a;
  } else if (const auto* a = std::get_if<DelayAction>(&v)) {
    step.kind = Step::Kind::kDelay;
    step.delay = a;
  } else if (std::holds_alternative<HangAction>(v)) {
    step.kind = Step::Kind::kHang;
  } else if (const auto* a = std::get_if<DisconnectAction>(&v)) {
    step.kind = Step::Kind::kDisconnect;
    step.disconnect = a;
  } else if (const auto* a = std::get_if<FromSessionAction>(&v)) {
    step.kind = Step::Kind::kFromSession;
    step.from_session = a;
  } else if (const auto* a = std::get_if<FailThenSucceedAction>(&v)) {
    if (use <= a->failures) {
      step.kind = Step::Kind::kError;
      step.error = &a->error;
      absl::StrAppend(&step.path, step.path.empty() ? "" : ".", "fail_then_succeed.error");
      return step;
    }
    return ResolveAt(*a->then, use - a->failures,
                     absl::StrCat(step.path, step.path.empty() ? "" : ".",
                                  "fail_then_succeed.then"));
  } else if (const auto* a = std::get_if<SequenceAction>(&v)) {
    const int64_t n = static_cast<int64_t>(a->steps.size());
    const int64_t i = (use - 1) % n;
    return ResolveAt(a->steps[static_cast<size_t>(i)], (use - 1) / n + 1,
                     absl::StrCat(step.path, step.path.empty() ? "" : ".", "sequence[", i, "]"));
  }
  return step;
}

}  // namespace

Step ResolveStep(const Action& action, int64_t use) {
  return ResolveAt(action, use < 1 ? 1 : use, "");
}

v1::CompletionResponse RespondWith(const RespondAction& respond,
                                   const v1::CompletionRequest& request, absl::string_view id) {
  v1::CompletionResponse response;
  response.set_id(std::string(id));
  response.set_model(request.model());
  v1::Message* message = response.mutable_message();
  message->set_role("assistant");
  message->set_content(respond.content);
  int i = 0;
  for (const ToolCallSpec& spec : respond.tool_calls) {
    v1::ToolCall* call = message->add_tool_calls();
    call->set_id(absl::StrCat("call_", id, "_", i++));
    call->set_name(spec.name);
    call->set_arguments(spec.arguments.is_string() ? spec.arguments.get<std::string>()
                                                   : spec.arguments.dump());
  }
  if (!respond.finish_reason.empty()) {
    response.set_finish_reason(respond.finish_reason);
  } else {
    response.set_finish_reason(respond.tool_calls.empty() ? "stop" : "tool_calls");
  }
  if (respond.usage.has_value()) {
    response.mutable_usage()->set_input_tokens(respond.usage->input_tokens);
    response.mutable_usage()->set_output_tokens(respond.usage->output_tokens);
  }
  return response;
}

std::vector<v1::CompletionChunk> ChunksFor(const v1::CompletionResponse& response) {
  constexpr size_t kMaxPieces = 64;
  std::vector<v1::CompletionChunk> chunks;
  auto next = [&]() -> v1::CompletionChunk& {
    v1::CompletionChunk& c = chunks.emplace_back();
    c.set_id(response.id());
    c.set_model(response.model());
    return c;
  };
  const std::string& content = response.message().content();
  size_t start = 0;
  while (start < content.size()) {
    size_t end = content.find(' ', start);
    end = (end == std::string::npos || chunks.size() + 1 == kMaxPieces) ? content.size() : end + 1;
    next().set_content(content.substr(start, end - start));
    start = end;
  }
  int index = 0;
  for (const v1::ToolCall& call : response.message().tool_calls()) {
    v1::ToolCallDelta* delta = next().add_tool_calls();
    delta->set_index(index++);
    delta->set_id(call.id());
    delta->set_name(call.name());
    delta->set_arguments(call.arguments());
  }
  v1::CompletionChunk& last = next();
  last.set_finish_reason(response.finish_reason());
  if (response.has_usage()) *last.mutable_usage() = response.usage();
  return chunks;
}

absl::Status ErrorStatusFor(const ErrorAction& error) {
  absl::StatusCode code =
      error.grpc_code.has_value() ? *error.grpc_code : StatusCodeForHttp(*error.http_status);
  // Defensive: the validator admits only 400-599.
  if (code == absl::StatusCode::kOk) code = absl::StatusCode::kUnknown;
  std::string message = error.message;
  if (message.empty()) {
    message = error.http_status.has_value()
                  ? absl::StrCat("scripted error: HTTP ", *error.http_status)
                  : absl::StrCat("scripted error: ", absl::StatusCodeToString(code));
  }
  // gRPC has no retry header: the delay travels in the message (HTTP gets
  // the same text, and retry-after headers besides).
  if (error.retry_after_seconds.has_value()) {
    absl::StrAppend(&message, " (retry after ", *error.retry_after_seconds, "s)");
  }
  return absl::Status(code, message);
}

int HttpStatusFor(const ErrorAction& error) {
  if (error.http_status.has_value()) return *error.http_status;
  return understudy::HttpStatusFor(*error.grpc_code);
}

}  // namespace scenario
}  // namespace understudy
