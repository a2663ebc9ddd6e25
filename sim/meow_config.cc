// The MEOW dialect of sim configs (docs/sim.md#the-meow-dialect): the shape
// the MEOW orchestrator's own simulator reads, checked the way the
// understudy dialect is (every problem with its path, line, column and a
// suggestion) and turned into the same SimConfig:
//
//   timing:   {startup_delay, default_work_delay, prompt_delay}
//   hooks:    {fire_stop_hook, fire_tool_events}
//   behaviors:
//     - match: "Write failing tests"     # type: contains (default) | regex
//       action: {type: complete, delay: 1s, outputs: {...}, events: [...]}
//   default:  {action: {...}}
//   logging:  {level, format, file}
//
// An action's `type` is complete, ask, fail, fail_then_succeed, hang or
// crash; an event is {type: tool-starting | tool-completed, data: {tool:
// NAME, ...}, when: before | during | after | DURATION}, and the events of one
// tool pair up into one tool call of the simulator.
#include <algorithm>
#include <deque>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/duration.h"
#include "nlohmann/json.hpp"
#include "sim/config_checker.h"
#include "validation/suggest.h"

namespace understudy {
namespace sim {
namespace {

using Keys = std::initializer_list<const char*>;
using validation::DescribeNode;
using validation::Names;

constexpr Keys kTopKeys = {"timing", "hooks", "behaviors", "default", "logging"};
constexpr Keys kTimingKeys = {"startup_delay", "default_work_delay", "prompt_delay"};
constexpr Keys kHooksKeys = {"fire_stop_hook", "fire_tool_events"};
constexpr Keys kBehaviorKeys = {"match", "type", "action"};
constexpr Keys kDefaultKeys = {"action"};
constexpr Keys kLoggingKeys = {"level", "format", "file"};
constexpr Keys kEventKeys = {"type", "data", "when"};
constexpr Keys kMatchTypes = {"contains", "regex"};
constexpr Keys kEventTypes = {"tool-starting", "tool-completed"};
constexpr Keys kWhenWords = {"before", "during", "after"};
constexpr Keys kLogLevels = {"debug", "info", "warn", "error"};
constexpr Keys kLogFormats = {"json", "text"};

// The defaults of MEOW's own simulator.
constexpr absl::Duration kStartupDelay = absl::Milliseconds(100);
constexpr absl::Duration kWorkDelay = absl::Milliseconds(100);
constexpr absl::Duration kPromptDelay = absl::Milliseconds(10);
constexpr char kQuestion[] = "I have a question for you.";
constexpr char kFailMessage[] = "An error occurred";
constexpr char kFailThenSucceedMessage[] = "Simulated failure";

// Every action type, with the fields it takes beyond `type` and `delay`.
const ActionInfo kActions[] = {
    {ActionKind::kComplete, "complete", {"outputs", "events"}},
    {ActionKind::kAsk, "ask", {"question", "options"}},
    {ActionKind::kFail, "fail", {"fail_message"}},
    {ActionKind::kFailThenSucceed,
     "fail_then_succeed",
     {"fail_count", "fail_message", "success_outputs", "events", "exit_code"}},
    {ActionKind::kHang, "hang", {}},
    {ActionKind::kCrash, "crash", {"exit_code"}},
};
// Action fields in the order messages list them.
constexpr Keys kActionFields = {"outputs",    "events",          "question",  "options",
                                "fail_count", "fail_message",    "exit_code", "success_outputs"};

// "type ask" or "types complete, fail_then_succeed".
std::string TypesTaking(absl::string_view key) {
  return NamesTaking(kActions, key, "type");
}

// MEOW prints failures as "Error: MESSAGE"; a message that already says
// so is printed as it is.
std::string ErrorLine(const std::string& message) {
  return absl::StartsWith(message, "Error") ? message : absl::StrCat("Error: ", message);
}

class MeowChecker : public SimChecker {
 public:
  MeowChecker(validation::Report* report, SimConfig* out) : SimChecker(report, out) {}

  void Document(const YAML::Node& root) {
    SimConfig& config = *out();
    config.dialect = Dialect::kMeow;
    config.startup_delay = kStartupDelay;
    config.prompt_delay = kPromptDelay;
    config.log.level = "info";
    config.log.format = "json";
    // The agent reports its work done the way MEOW's agents do.
    config.completion.command = {"meow", "done"};
    config.completion.output_flag = "--output";
    if (!root.IsMap()) {
      Error(root, "", absl::StrCat("expected a mapping at the top level, got ", DescribeNode(root)));
      return;
    }
    Map(root, "", Names(kTopKeys));
    if (root["timing"].IsDefined()) TimingField(root["timing"], "timing");
    if (root["hooks"].IsDefined()) HooksField(root["hooks"], "hooks");
    if (root["logging"].IsDefined()) LoggingField(root["logging"], "logging");
    int catch_all = -1;  // the first behavior that matches every prompt
    const YAML::Node list = root["behaviors"];
    if (list.IsDefined() && !list.IsSequence()) {
      Error(list, "behaviors",
            absl::StrCat("expected a list of behaviors, got ", DescribeNode(list)));
    } else if (list.IsDefined()) {
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string path = validation::JoinPath("behaviors", i);
        if (catch_all >= 0) {
          Warning(list[i], path,
                  absl::StrCat("never reached: behaviors[", catch_all,
                               "] before it matches every prompt"),
                  absl::StrCat("give behaviors[", catch_all,
                               "] a match, or move this one above it"));
        }
        std::shared_ptr<Behaviour> b = BehaviorField(list[i], path);
        if (b == nullptr) continue;
        b->index = static_cast<int>(i);
        if (catch_all < 0 && b->contains.empty() && b->matches == nullptr) {
          catch_all = static_cast<int>(i);
        }
        config.behaviours.push_back(b);
      }
    }
    const YAML::Node d = root["default"];
    if (d.IsDefined()) {
      if (catch_all >= 0) {
        Warning(KeyNode(root, "default"), "default",
                absl::StrCat("never reached: behaviors[", catch_all, "] matches every prompt"));
      }
      if (Map(d, "default", Names(kDefaultKeys)) && Require(d, "default", "action")) {
        config.default_behaviour = Action(d["action"], "default.action", "default");
      }
    }
    if (config.default_behaviour == nullptr) {
      // MEOW's: complete after the default work delay.
      std::shared_ptr<Behaviour> b = PlainComplete("default");
      b->delay = work_delay_;
      config.default_behaviour = b;
    }
  }

 private:
  void TimingField(const YAML::Node& n, const std::string& path) {
    if (!Map(n, path, Names(kTimingKeys))) return;
    const auto field = [&](const char* key, absl::Duration* out) {
      if (n[key].IsDefined()) Duration(n[key], validation::JoinPath(path, key), out);
    };
    field("startup_delay", &out()->startup_delay);
    field("default_work_delay", &work_delay_);
    field("prompt_delay", &out()->prompt_delay);
  }

  void HooksField(const YAML::Node& n, const std::string& path) {
    if (!Map(n, path, Names(kHooksKeys))) return;
    if (n["fire_stop_hook"].IsDefined()) {
      Bool(n["fire_stop_hook"], validation::JoinPath(path, "fire_stop_hook"), &out()->stop_hooks);
    }
    if (n["fire_tool_events"].IsDefined()) {
      Bool(n["fire_tool_events"], validation::JoinPath(path, "fire_tool_events"),
           &out()->tool_hooks);
    }
  }

  void LoggingField(const YAML::Node& n, const std::string& path) {
    if (!Map(n, path, Names(kLoggingKeys))) return;
    LogSettings& log = out()->log;
    if (n["level"].IsDefined()) {
      Choice(n["level"], validation::JoinPath(path, "level"), Names(kLogLevels), &log.level);
    }
    if (n["format"].IsDefined()) {
      Choice(n["format"], validation::JoinPath(path, "format"), Names(kLogFormats), &log.format);
    }
    if (n["file"].IsDefined()) String(n["file"], validation::JoinPath(path, "file"), &log.file);
  }

  // One entry of `behaviors`: its match, then its action.
  std::shared_ptr<Behaviour> BehaviorField(const YAML::Node& n, const std::string& path) {
    if (!Map(n, path, Names(kBehaviorKeys))) return nullptr;
    std::string type = "contains";
    if (n["type"].IsDefined()) {
      Choice(n["type"], validation::JoinPath(path, "type"), Names(kMatchTypes), &type);
    }
    std::string match;
    const bool matched = Require(n, path, "match") &&
                         String(n["match"], validation::JoinPath(path, "match"), &match);
    std::shared_ptr<Behaviour> b;
    if (Require(n, path, "action")) {
      b = Action(n["action"], validation::JoinPath(path, "action"), path);
    }
    // (Without its match it would answer every prompt: it is left out.)
    if (b == nullptr || !matched) return nullptr;
    if (type == "regex") {
      if (n["match"].IsDefined()) b->matches = Regex(n["match"], validation::JoinPath(path, "match"));
    } else {
      b->contains = match;
    }
    if (match.empty() && n["match"].IsDefined() && n["match"].IsScalar()) {
      Warning(n["match"], validation::JoinPath(path, "match"), "empty: matches every prompt",
              "give the text to look for, or make it the default");
    }
    return b;
  }

  // An action object; `owner` is the path the behaviour is known by.
  std::shared_ptr<Behaviour> Action(const YAML::Node& n, const std::string& path,
                                    const std::string& owner) {
    const std::vector<std::string> keys = Names({"type", "delay"}, kActionFields);
    if (!Map(n, path, keys)) return nullptr;
    auto b = PlainComplete(owner);
    std::string type = "complete";
    std::vector<std::string> types;
    for (const ActionInfo& a : kActions) types.push_back(a.name);
    if (n["type"].IsDefined() &&
        !Choice(n["type"], validation::JoinPath(path, "type"), types, &type)) {
      return b;  // its other fields are judged against a type we do not know
    }
    for (const ActionInfo& a : kActions) {
      if (type == a.name) b->action = a.kind;
    }
    if (b->action != ActionKind::kComplete && b->action != ActionKind::kFailThenSucceed) {
      b->completion.reset();
    }
    for (const char* key : kActionFields) {
      if (n[key].IsDefined() && !TakesField(kActions, b->action, key)) {
        Error(KeyNode(n, key), validation::JoinPath(path, key),
              absl::StrCat("only for ", TypesTaking(key), " (this action's type is ", type, ")"));
      }
    }
    const auto field = [&](const char* key) {
      return n[key].IsDefined() && TakesField(kActions, b->action, key);
    };
    const auto at = [&](const char* key) { return validation::JoinPath(path, key); };
    b->delay = work_delay_;
    if (n["delay"].IsDefined()) Duration(n["delay"], at("delay"), &b->delay);
    if (field("outputs")) Outputs(n["outputs"], at("outputs"), &b->outputs);
    if (field("success_outputs")) Outputs(n["success_outputs"], at("success_outputs"), &b->outputs);
    if (field("events")) Events(n["events"], at("events"), b->delay, &b->events);
    switch (b->action) {
      case ActionKind::kAsk:
        Ask(n, path, b);
        break;
      case ActionKind::kFail:
        b->message = ErrorLine(kFailMessage);
        break;
      case ActionKind::kFailThenSucceed: {
        b->message = ErrorLine(kFailThenSucceedMessage);
        int64_t count = 1;
        if (field("fail_count") && Int(n["fail_count"], at("fail_count"), &count, 1)) {
          b->failures = static_cast<int>(std::min<int64_t>(count, 1 << 30));
        }
        b->crash_on_failure = field("exit_code");
        break;
      }
      default:
        break;
    }
    std::string message;
    if (field("fail_message") && NonEmptyString(n["fail_message"], at("fail_message"), &message)) {
      b->message = ErrorLine(message);
    }
    if (field("exit_code")) ExitCode(n["exit_code"], at("exit_code"), &b->exit_code);
    return b;
  }

  // MEOW asks take any answer (the options are only shown) and then
  // complete at once with the answer as output `answer`.
  void Ask(const YAML::Node& n, const std::string& path, const std::shared_ptr<Behaviour>& b) {
    b->question = kQuestion;
    if (n["question"].IsDefined()) {
      NonEmptyString(n["question"], validation::JoinPath(path, "question"), &b->question);
    }
    auto answered = PlainComplete(validation::JoinPath(path, "answer"));
    answered->answer_output = "answer";
    b->then = answered;
    b->any_answer = true;
    std::vector<std::string> options;
    if (n["options"].IsDefined()) {
      StringList(n["options"], validation::JoinPath(path, "options"), &options, /*non_empty=*/true);
    }
    for (std::string& option : options) b->options.push_back(AskOption{std::move(option), answered});
    if (b->options.empty()) b->options.push_back(AskOption{"", answered});
  }

  // `when`: before (the start of the work), during (half way through its
  // delay), after (the end of its delay), or a duration from the start.
  bool When(const YAML::Node& n, const std::string& path, absl::Duration delay,
            absl::Duration* out) {
    const std::string word = n.IsScalar() ? n.Scalar() : "";
    if (word == "before" || word == "during" || word == "after") {
      *out = word == "before" ? absl::ZeroDuration() : word == "during" ? delay / 2 : delay;
      return true;
    }
    if (n.IsScalar() && !word.empty()) {
      absl::StatusOr<absl::Duration> d = ParseDuration(word, PlainNumber::kMilliseconds);
      if (d.ok()) {
        *out = *d;
        return true;
      }
    }
    Error(n, path,
          absl::StrCat("expected before, during, after or a duration (150ms, 2s), got ",
                       DescribeNode(n)),
          validation::Suggest(word, Names(kWhenWords)));
    return false;
  }

  // MEOW's events, tool-starting and tool-completed, paired by tool in order
  // into the simulator's tool calls: a tool-completed ends the earliest
  // open tool-starting of its tool (or is a call of its own that starts and
  // ends then); a tool-starting never completed ends with the work's delay.
  void Events(const YAML::Node& n, const std::string& path, absl::Duration delay,
              std::vector<ToolEvent>* out) {
    if (!n.IsSequence()) {
      Error(n, path, absl::StrCat("expected a list of events, got ", DescribeNode(n)));
      return;
    }
    std::map<std::string, std::deque<size_t>> open;  // tool -> started calls not yet ended
    for (size_t i = 0; i < n.size(); ++i) {
      const YAML::Node e = n[i];
      const std::string p = validation::JoinPath(path, i);
      if (!Map(e, p, Names(kEventKeys))) continue;
      std::string type;
      bool ok = Require(e, p, "type") &&
                Choice(e["type"], validation::JoinPath(p, "type"), Names(kEventTypes), &type);
      ToolEvent event;
      if (Require(e, p, "data")) {
        ok = Data(e["data"], validation::JoinPath(p, "data"), &event) && ok;
      } else {
        ok = false;
      }
      absl::Duration when = absl::ZeroDuration();
      if (e["when"].IsDefined()) ok = When(e["when"], validation::JoinPath(p, "when"), delay, &when) && ok;
      if (!ok) continue;
      std::deque<size_t>& started = open[event.tool];
      if (type == "tool-starting") {
        event.at = when;
        started.push_back(out->size());
        out->push_back(std::move(event));
      } else if (!started.empty()) {
        ToolEvent& call = (*out)[started.front()];
        started.pop_front();
        if (when < call.at) {
          Error(e["when"].IsDefined() ? e["when"] : e, validation::JoinPath(p, "when"),
                absl::StrCat("tool-completed of ", event.tool, " comes before its tool-starting (",
                             absl::FormatDuration(call.at), ")"),
                "list a tool's events in the order they happen");
          continue;
        }
        call.duration = when - call.at;
      } else {
        event.at = when;
        out->push_back(std::move(event));
      }
    }
    for (auto& [tool, started] : open) {
      for (size_t index : started) {
        ToolEvent& call = (*out)[index];
        call.duration = std::max(absl::ZeroDuration(), delay - call.at);
      }
    }
  }

  // An event's `data`: `tool` (required), the rest is the tool's input.
  bool Data(const YAML::Node& n, const std::string& path, ToolEvent* event) {
    if (!n.IsMap()) {
      Error(n, path, absl::StrCat("expected a mapping with tool, got ", DescribeNode(n)));
      return false;
    }
    if (!Require(n, path, "tool") ||
        !NonEmptyString(n["tool"], validation::JoinPath(path, "tool"), &event->tool)) {
      return false;
    }
    nlohmann::json input = nlohmann::json::object();
    for (const auto& [key, value] : Entries(n, path)) {
      if (key.Scalar() != "tool") input[key.Scalar()] = validation::YamlToJson(value);
    }
    event->input_json = input.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return true;
  }

  absl::Duration work_delay_ = kWorkDelay;
};

}  // namespace

bool IsMeowDocument(const YAML::Node& root) {
  if (!root.IsMap() || root["schema"].IsDefined()) return false;
  if (root["behaviors"].IsDefined() || root["hooks"].IsDefined() || root["logging"].IsDefined()) {
    return true;
  }
  // (A key that is not there is an invalid node: only IsDefined may be asked.)
  if (root["timing"].IsDefined() && root["timing"].IsMap()) {
    for (const char* key : kTimingKeys) {
      if (root["timing"][key].IsDefined()) return true;
    }
  }
  return root["default"].IsDefined() && root["default"].IsMap() &&
         root["default"]["action"].IsDefined() && root["default"]["action"].IsMap();
}

void CheckMeowDocument(const YAML::Node& root, validation::Report* report, SimConfig* out) {
  MeowChecker(report, out).Document(root);
}

}  // namespace sim
}  // namespace understudy
