#include "scenario/playbook.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "re2/re2.h"
#include "scenario/template.h"

namespace understudy {
namespace scenario {
namespace {

// Longest stretch of a user message quoted in an error.
constexpr size_t kMaxQuotedBytes = 200;

re2::StringPiece Piece(const std::string& s) { return re2::StringPiece(s.data(), s.size()); }

// `text` as a C-escaped, double-quoted string, cut after kMaxQuotedBytes.
std::string Quote(absl::string_view text) {
  if (text.size() <= kMaxQuotedBytes) return absl::StrCat("\"", absl::CHexEscape(text), "\"");
  return absl::StrCat("\"", absl::CHexEscape(text.substr(0, kMaxQuotedBytes)), "\"... (",
                      text.size(), " bytes)");
}

std::string StepPath(size_t turn, size_t action) {
  return absl::StrCat("playbook.turns[", turn, "].actions[", action, "]");
}

int64_t CountActions(const Scenario& scenario) {
  int64_t n = 0;
  for (const PlaybookTurn& turn : scenario.playbook) n += turn.actions.size();
  return n;
}

// Sets every capture of `scenario`'s playbook found in `request`'s tool
// results (see PlaybookRun::Next).
void ReadCaptures(const Scenario& scenario, const v1::CompletionRequest& request,
                  RunContext& context) {
  // Tool names of the assistant's calls so far, by call id.
  absl::flat_hash_map<absl::string_view, absl::string_view> call_names;
  for (const v1::Message& message : request.messages()) {
    if (message.role() == "assistant") {
      for (const v1::ToolCall& call : message.tool_calls()) call_names[call.id()] = call.name();
      continue;
    }
    if (message.role() != "tool") continue;
    absl::string_view tool = message.name();
    if (tool.empty()) {
      auto it = call_names.find(absl::string_view(message.tool_call_id()));
      if (it == call_names.end()) continue;
      tool = it->second;
    }
    const std::string& content = message.content();
    for (const PlaybookTurn& turn : scenario.playbook) {
      for (const Capture& capture : turn.captures) {
        if (capture.from_tool_result != tool) continue;
        const RE2& re = *capture.regex.re;
        // groups[1] is group 1 when there is one; groups[0] the whole match.
        re2::StringPiece groups[2];
        const int n = re.NumberOfCapturingGroups() >= 1 ? 2 : 1;
        if (re.Match(Piece(content), 0, content.size(), RE2::UNANCHORED, groups, n)) {
          const re2::StringPiece& value = groups[n - 1];
          context.SetCapture(capture.name, absl::string_view(value.data(), value.size()));
        }
      }
    }
  }
}

const v1::Message* LastUserMessage(const v1::CompletionRequest& request) {
  for (int i = request.messages_size() - 1; i >= 0; --i) {
    if (request.messages(i).role() == "user") return &request.messages(i);
  }
  return nullptr;
}

// " (captured so far: a, b)", names sorted; "none" when there are none.
std::string CapturedSoFar(const absl::flat_hash_map<std::string, std::string>& captures) {
  std::vector<absl::string_view> names;
  names.reserve(captures.size());
  for (const auto& [name, value] : captures) names.push_back(name);
  std::sort(names.begin(), names.end());
  return absl::StrCat(" (captured so far: ", names.empty() ? "none" : absl::StrJoin(names, ", "),
                      ")");
}

}  // namespace

PlaybookRun::PlaybookRun(std::shared_ptr<const Scenario> scenario)
    : scenario_(std::move(scenario)), total_actions_(CountActions(*scenario_)) {}

absl::StatusOr<v1::CompletionResponse> PlaybookRun::Next(const v1::CompletionRequest& request,
                                                         RunContext& context) {
  absl::MutexLock lock(&mu_);
  ReadCaptures(*scenario_, request, context);

  const std::vector<PlaybookTurn>& turns = scenario_->playbook;
  if (turn_ >= turns.size()) {
    return Fail(absl::FailedPreconditionError(
        absl::StrCat("playbook: no action left for this request (all ", total_actions_,
                     total_actions_ == 1 ? " action was used)" : " actions were used)")));
  }
  const PlaybookTurn& turn = turns[turn_];
  if (action_ == 0 && turn.when.has_value()) {
    const v1::Message* user = LastUserMessage(request);
    if (user == nullptr || !RE2::PartialMatch(Piece(user->content()), *turn.when->re)) {
      return Fail(absl::FailedPreconditionError(absl::StrCat(
          "playbook.turns[", turn_, "]: expects a user message matching ", Quote(turn.when->text),
          user == nullptr
              ? " but the request has no user message"
              : absl::StrCat(" but the last user message is ", Quote(user->content())))));
    }
  }

  // Rendered from one snapshot, so an error names exactly what was looked at.
  const absl::flat_hash_map<std::string, std::string> captures = context.captures();
  const TemplateLookup lookup = [&captures](absl::string_view name) -> std::optional<std::string> {
    auto it = captures.find(name);
    if (it == captures.end()) return std::nullopt;
    return it->second;
  };
  const std::string where = StepPath(turn_, action_);
  const PlaybookStep& step = turn.actions[action_];

  v1::CompletionResponse response;
  response.set_id(absl::StrCat("pb-", turn_, "-", action_));
  response.set_model(request.model());
  v1::Message* message = response.mutable_message();
  message->set_role("assistant");
  absl::Status rendered;
  if (step.kind == PlaybookStep::Kind::kCall) {
    absl::StatusOr<nlohmann::json> args = RenderTemplateJson(step.args, lookup, where);
    if (args.ok()) {
      v1::ToolCall* call = message->add_tool_calls();
      call->set_id(absl::StrCat("call_pb_", turn_, "_", action_));
      call->set_name(step.tool);
      // Captured text is the caller's and may be invalid UTF-8: replace, never throw.
      call->set_arguments(args->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      response.set_finish_reason("tool_calls");
    }
    rendered = args.status();
  } else {
    absl::StatusOr<std::string> text = RenderTemplate(step.text, lookup, where);
    if (text.ok()) {
      message->set_content(*std::move(text));
      response.set_finish_reason("stop");
    }
    rendered = text.status();
  }
  if (!rendered.ok()) {
    return Fail(
        absl::Status(rendered.code(), absl::StrCat(rendered.message(), CapturedSoFar(captures))));
  }

  ++taken_;
  if (++action_ == turn.actions.size()) {
    ++turn_;
    action_ = 0;
  }
  return response;
}

absl::Status PlaybookRun::Fail(absl::Status status) {
  if (failures_.size() < kMaxFailures) {
    failures_.emplace_back(status.message());
  } else {
    ++failures_dropped_;
  }
  return status;
}

int64_t PlaybookRun::remaining() const {
  absl::MutexLock lock(&mu_);
  return total_actions_ - taken_;
}

std::vector<std::string> PlaybookRun::failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

std::vector<std::string> PlaybookRun::EndFailures() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out = failures_;
  if (failures_dropped_ > 0) {
    out.push_back(absl::StrCat("playbook: ", failures_dropped_,
                               " more failed requests not listed (the first ", kMaxFailures,
                               " are)"));
  }
  const int64_t left = total_actions_ - taken_;
  if (left > 0) {
    out.push_back(absl::StrCat("playbook not fully consumed: ", left,
                               left == 1 ? " action" : " actions",
                               " remaining (next: ", StepPath(turn_, action_), ")"));
  }
  return out;
}

}  // namespace scenario
}  // namespace understudy
