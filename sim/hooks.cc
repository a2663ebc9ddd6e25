#include "sim/hooks.h"

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/env.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "validation/json_bounds.h"
#include "validation/problems.h"
#include "validation/suggest.h"

namespace understudy {
namespace sim {
namespace {

// Settings files are small; anything larger is not one.
constexpr size_t kMaxSettingsBytes = 1 << 20;
// Of each stream of a hook, what is kept.
constexpr size_t kMaxHookOutput = 64 << 10;

struct EventName {
  HookEvent event;
  const char* name;
};
constexpr EventName kEvents[] = {
    {HookEvent::kSessionStart, "SessionStart"}, {HookEvent::kUserPromptSubmit, "UserPromptSubmit"},
    {HookEvent::kPreToolUse, "PreToolUse"},     {HookEvent::kPostToolUse, "PostToolUse"},
    {HookEvent::kStop, "Stop"},
};
// Events of Claude Code's settings that the simulator never fires: read
// (a real settings file may hold them) and left alone.
constexpr const char* kUnfiredEvents[] = {"Notification", "SubagentStop", "PreCompact",
                                          "SessionEnd"};

bool IsToolEvent(HookEvent e) { return e == HookEvent::kPreToolUse || e == HookEvent::kPostToolUse; }

bool CanBlock(HookEvent e) {
  return e == HookEvent::kPreToolUse || e == HookEvent::kUserPromptSubmit || e == HookEvent::kStop;
}

std::string Describe(const nlohmann::json& v) {
  std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return text.size() > 40 ? absl::StrCat(text.substr(0, 37), "...") : text;
}

// The settings' `hooks`, checked; problems as "path: message" in `errors`.
class SettingsReader {
 public:
  explicit SettingsReader(std::vector<std::string>* errors) : errors_(errors) {}

  struct Parsed {
    HookEvent event;
    std::string matcher;
    std::shared_ptr<const RE2> pattern;
    HookCommand command;
  };

  void Read(const nlohmann::json& root, std::vector<Parsed>* out) {
    if (!root.is_object()) {
      Problem("", absl::StrCat("expected a JSON object (Claude Code settings), got ", Describe(root)));
      return;
    }
    auto hooks = root.find("hooks");
    if (hooks == root.end() || hooks->is_null()) return;  // settings without hooks
    if (!hooks->is_object()) {
      Problem("hooks", absl::StrCat("expected an object of events, got ", Describe(*hooks)));
      return;
    }
    std::vector<std::string> names;
    for (const EventName& e : kEvents) names.push_back(e.name);
    for (const char* name : kUnfiredEvents) names.push_back(name);
    for (auto it = hooks->begin(); it != hooks->end(); ++it) {
      const std::string path = validation::JoinPath("hooks", it.key());
      const EventName* event = nullptr;
      for (const EventName& e : kEvents) {
        if (it.key() == e.name) event = &e;
      }
      if (event == nullptr) {
        bool unfired = false;
        for (const char* name : kUnfiredEvents) unfired = unfired || it.key() == name;
        if (!unfired) {
          std::string suggestion = validation::Suggest(it.key(), names);
          Problem(path, "unknown hook event",
                  suggestion.empty() ? absl::StrCat("events: ", absl::StrJoin(names, ", "))
                                     : suggestion);
        }
        continue;
      }
      Groups(event->event, it.value(), path, out);
    }
  }

 private:
  void Problem(const std::string& path, const std::string& message,
               const std::string& suggestion = "") {
    std::string line = path.empty() ? message : absl::StrCat(path, ": ", message);
    if (!suggestion.empty()) absl::StrAppend(&line, " (", suggestion, ")");
    errors_->push_back(std::move(line));
  }

  void Groups(HookEvent event, const nlohmann::json& groups, const std::string& path,
              std::vector<Parsed>* out) {
    if (!groups.is_array()) {
      Problem(path, absl::StrCat("expected a list of {matcher, hooks}, got ", Describe(groups)));
      return;
    }
    for (size_t i = 0; i < groups.size(); ++i) {
      const nlohmann::json& g = groups[i];
      const std::string p = validation::JoinPath(path, i);
      if (!g.is_object()) {
        Problem(p, absl::StrCat("expected an object {matcher, hooks}, got ", Describe(g)));
        continue;
      }
      for (auto it = g.begin(); it != g.end(); ++it) {
        if (it.key() != "matcher" && it.key() != "hooks") {
          std::string suggestion = validation::Suggest(it.key(), {"matcher", "hooks"});
          Problem(validation::JoinPath(p, it.key()), "unknown field",
                  suggestion.empty() ? "expected one of: matcher, hooks" : suggestion);
        }
      }
      std::string matcher;
      std::shared_ptr<const RE2> pattern;
      auto m = g.find("matcher");
      if (m != g.end() && !m->is_null()) {
        if (!m->is_string()) {
          Problem(validation::JoinPath(p, "matcher"),
                  absl::StrCat("expected a string (a pattern of tool names), got ", Describe(*m)));
          continue;
        }
        matcher = m->get<std::string>();
        if (IsToolEvent(event) && !matcher.empty() && matcher != "*") {
          RE2::Options options;
          options.set_log_errors(false);
          auto re = std::make_shared<const RE2>(matcher, options);
          if (!re->ok()) {
            Problem(validation::JoinPath(p, "matcher"), absl::StrCat("invalid regex: ", re->error()));
            continue;
          }
          pattern = std::move(re);
        }
      }
      auto hooks = g.find("hooks");
      if (hooks == g.end()) {
        Problem(p, "missing required field \"hooks\"");
        continue;
      }
      const std::string hp = validation::JoinPath(p, "hooks");
      if (!hooks->is_array()) {
        Problem(hp, absl::StrCat("expected a list of hooks, got ", Describe(*hooks)));
        continue;
      }
      for (size_t j = 0; j < hooks->size(); ++j) {
        HookCommand command;
        if (Command((*hooks)[j], validation::JoinPath(hp, j), &command)) {
          out->push_back(Parsed{event, matcher, pattern, std::move(command)});
        }
      }
    }
  }

  bool Command(const nlohmann::json& h, const std::string& path, HookCommand* out) {
    if (!h.is_object()) {
      Problem(path, absl::StrCat("expected an object {type, command, timeout}, got ", Describe(h)));
      return false;
    }
    bool ok = true;
    for (auto it = h.begin(); it != h.end(); ++it) {
      if (it.key() != "type" && it.key() != "command" && it.key() != "timeout") {
        std::string suggestion = validation::Suggest(it.key(), {"type", "command", "timeout"});
        Problem(validation::JoinPath(path, it.key()), "unknown field",
                suggestion.empty() ? "expected one of: type, command, timeout" : suggestion);
        ok = false;
      }
    }
    auto type = h.find("type");
    if (type == h.end()) {
      Problem(path, "missing required field \"type\"", "add \"type\": \"command\"");
      ok = false;
    } else if (!type->is_string() || type->get<std::string>() != "command") {
      Problem(validation::JoinPath(path, "type"),
              absl::StrCat("expected \"command\" (the only hook type simulated), got ",
                           Describe(*type)));
      ok = false;
    }
    auto command = h.find("command");
    if (command == h.end()) {
      Problem(path, "missing required field \"command\"");
      ok = false;
    } else if (!command->is_string() ||
               absl::StripAsciiWhitespace(command->get<std::string>()).empty()) {
      Problem(validation::JoinPath(path, "command"),
              absl::StrCat("expected a command line, got ", Describe(*command)));
      ok = false;
    } else {
      out->command = command->get<std::string>();
    }
    auto timeout = h.find("timeout");
    if (timeout != h.end()) {
      if (!timeout->is_number() || !(timeout->get<double>() > 0) ||
          !std::isfinite(timeout->get<double>()) || timeout->get<double>() > 86400 * 365) {
        Problem(validation::JoinPath(path, "timeout"),
                absl::StrCat("expected a positive number of seconds, got ", Describe(*timeout)));
        ok = false;
      } else {
        out->timeout = absl::Seconds(timeout->get<double>());
      }
    }
    return ok;
  }

  std::vector<std::string>* errors_;
};

std::string Trimmed(const std::string& s) {
  return std::string(absl::StripAsciiWhitespace(s));
}

// The text of string field `key` of `object`, or "".
std::string StringField(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// Reads an exit-0 hook's stdout as Claude Code does: a JSON object may
// stop the agent, block, or deny a tool; anything else is plain output.
void Decide(HookEvent event, HookResult* r) {
  const std::string out = Trimmed(r->stdout_text);
  if (!absl::StartsWith(out, "{")) return;
  nlohmann::json j = validation::ParseJsonOrDiscarded<nlohmann::json>(out);
  if (!j.is_object()) return;
  auto cont = j.find("continue");
  if (cont != j.end() && cont->is_boolean() && !cont->get<bool>()) {
    r->stop = true;
    r->reason = StringField(j, "stopReason");
    r->outcome = "stopped";
    return;
  }
  if (event == HookEvent::kPreToolUse) {
    auto specific = j.find("hookSpecificOutput");
    if (specific != j.end() && specific->is_object() &&
        StringField(*specific, "permissionDecision") == "deny") {
      r->blocked = true;
      r->reason = StringField(*specific, "permissionDecisionReason");
      r->outcome = "blocked";
      return;
    }
  }
  if (StringField(j, "decision") == "block") {
    r->reason = StringField(j, "reason");
    if (CanBlock(event)) {
      r->blocked = true;
      r->outcome = "blocked";
    }
  }
}

}  // namespace

absl::string_view HookEventName(HookEvent event) {
  for (const EventName& e : kEvents) {
    if (e.event == event) return e.name;
  }
  return "";
}

absl::Status Hooks::AddFile(const std::string& path, bool optional) {
  absl::StatusOr<std::string> text = ReadRegularFile(path, kMaxSettingsBytes);
  if (!text.ok()) {
    if (optional && text.status().code() == absl::StatusCode::kNotFound) return absl::OkStatus();
    return text.status();
  }
  return AddText(*text, path);
}

absl::Status Hooks::AddText(absl::string_view json_text, absl::string_view source) {
  absl::StatusOr<nlohmann::json> root = validation::ParseJson<nlohmann::json>(json_text, source);
  if (!root.ok()) return absl::InvalidArgumentError(root.status().message());
  std::vector<std::string> errors;
  std::vector<SettingsReader::Parsed> parsed;
  SettingsReader(&errors).Read(*root, &parsed);
  if (!errors.empty()) {
    for (std::string& e : errors) e = absl::StrCat(source, ": ", e);
    return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
  }
  for (SettingsReader::Parsed& p : parsed) {
    entries_.push_back(Entry{p.event, std::move(p.matcher), std::move(p.pattern),
                             std::move(p.command)});
  }
  return absl::OkStatus();
}

std::vector<HookCommand> Hooks::For(HookEvent event, absl::string_view tool_name) const {
  std::vector<HookCommand> out;
  for (const Entry& e : entries_) {
    if (e.event != event) continue;
    if (IsToolEvent(event) && e.pattern != nullptr &&
        !RE2::FullMatch(re2::StringPiece(tool_name.data(), tool_name.size()), *e.pattern)) {
      continue;
    }
    out.push_back(e.command);
  }
  return out;
}

bool Hooks::empty() const { return entries_.empty(); }

HookResult RunHook(HookEvent event, const HookCommand& command, const nlohmann::json& payload,
                   const std::vector<std::string>& env, const std::string& cwd,
                   const HookWatch& watch) {
  HookResult r;
  r.command = command.command;
  RunOptions options;
  options.spawn.capture_stderr = true;
  options.spawn.cwd = cwd;
  std::vector<std::string> environment = env;
  const bool has_project_dir =
      std::any_of(environment.begin(), environment.end(), [](const std::string& e) {
        return absl::StartsWith(e, "CLAUDE_PROJECT_DIR=");
      });
  if (!has_project_dir) environment.push_back(absl::StrCat("CLAUDE_PROJECT_DIR=", cwd));
  options.spawn.env = std::move(environment);
  options.timeout = command.timeout;
  options.max_output = kMaxHookOutput;
  options.input = absl::StrCat(
      payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "\n");
  options.watch_fds = watch.fds;
  options.on_ready = watch.on_ready;
  const absl::Time start = Env::Default()->Now();  // a real child process: real time
  absl::StatusOr<CommandResult> run =
      RunCommand({"/bin/sh", "-c", command.command}, options);
  r.duration = Env::Default()->Now() - start;
  if (!run.ok()) {
    r.outcome = "not started";
    r.reason = std::string(run.status().message());
    return r;
  }
  r.stdout_text = std::move(run->output);
  r.stderr_text = std::move(run->error_output);
  r.timed_out = run->timed_out;
  if (run->abandoned) {
    r.cancelled = true;
    r.outcome = "cancelled";
    r.reason = run->Describe();
    return r;
  }
  if (run->timed_out) {
    r.outcome = "timeout";
    r.reason = absl::StrCat("timed out after ", absl::FormatDuration(command.timeout));
    return r;
  }
  if (!WIFEXITED(run->wait_status)) {
    r.outcome = "error";
    r.reason = run->Describe();
    return r;
  }
  r.exit_code = WEXITSTATUS(run->wait_status);
  if (r.exit_code == 0) {
    r.outcome = "ok";
    Decide(event, &r);
    return r;
  }
  r.reason = Trimmed(r.stderr_text);
  if (r.reason.empty()) r.reason = run->Describe();
  if (r.exit_code == 2 && CanBlock(event)) {
    r.blocked = true;
    r.outcome = "blocked";
    return r;
  }
  r.outcome = "error";
  return r;
}

nlohmann::json HookPayload(HookEvent event, absl::string_view session_id,
                           absl::string_view transcript_path, absl::string_view cwd,
                           nlohmann::json fields) {
  nlohmann::json out = {{"session_id", std::string(session_id)},
                        {"transcript_path", std::string(transcript_path)},
                        {"cwd", std::string(cwd)},
                        {"hook_event_name", std::string(HookEventName(event))}};
  if (fields.is_object()) {
    for (auto it = fields.begin(); it != fields.end(); ++it) out[it.key()] = std::move(it.value());
  }
  return out;
}

nlohmann::json ToolResponse(absl::string_view tool, absl::string_view result) {
  if (tool == "Bash") {
    return {{"stdout", std::string(result)},
            {"stderr", ""},
            {"interrupted", false},
            {"isImage", false}};
  }
  return {{"output", std::string(result)}};
}

}  // namespace sim
}  // namespace understudy
