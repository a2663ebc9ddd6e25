#include "sim/config.h"

#include <algorithm>
#include <csignal>
#include <functional>
#include <initializer_list>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/config_checker.h"
#include "validation/suggest.h"
#include "validation/yaml_checker.h"
#include "yaml-cpp/yaml.h"

namespace understudy {
namespace sim {

namespace {

using Keys = std::initializer_list<const char*>;
using validation::DescribeNode;
using validation::Names;
using validation::Suggest;

constexpr Keys kTopKeys = {"schema", "name",     "startup", "prompt",     "timing",
                           "settings", "env",    "completion", "behaviours", "default"};
constexpr Keys kStartupKeys = {"lines", "delay"};
constexpr Keys kTimingKeys = {"scale", "jitter"};
constexpr Keys kCompletionKeys = {"command",  "output_flag", "on_failure",
                                  "retries",  "retry_delay", "timeout"};
constexpr Keys kWhenKeys = {"contains", "matches"};
constexpr Keys kEventKeys = {"at", "duration", "tool", "input", "result"};
constexpr Keys kOptionKeys = {"answer", "then"};
constexpr Keys kOnFailure = {"give_up", "retry", "stay"};
constexpr int kMaxRetries = 100;

// Every action, in ActionKind order, with the fields it takes beyond the
// ones every behaviour has (name, when, action, delay).
const ActionInfo kActions[] = {
    {ActionKind::kComplete, "complete", {"output", "outputs", "events", "completion"}},
    {ActionKind::kAsk, "ask", {"question", "options", "then", "events"}},
    {ActionKind::kFail, "fail", {"message", "output", "events"}},
    {ActionKind::kFailThenSucceed,
     "fail_then_succeed",
     {"failures", "message", "output", "outputs", "events", "completion", "exit_code", "signal"}},
    {ActionKind::kHang, "hang", {"output", "events"}},
    {ActionKind::kCrash, "crash", {"exit_code", "signal", "output"}},
    {ActionKind::kModel,
     "model",
     {"model", "agent", "system_prompt", "output", "outputs", "events", "completion"}},
};
constexpr Keys kCommonBehaviourKeys = {"name", "when", "action", "delay"};
// Action-specific fields in the order messages list them.
constexpr Keys kActionFields = {"output",    "outputs",  "events",    "completion", "question",
                                "options",   "then",     "message",   "failures",   "exit_code",
                                "signal",    "model",    "agent",     "system_prompt"};

struct SignalName {
  const char* name;
  int number;
};
const SignalName kSignals[] = {
    {"SIGHUP", SIGHUP},   {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT}, {"SIGILL", SIGILL},
    {"SIGTRAP", SIGTRAP}, {"SIGABRT", SIGABRT}, {"SIGBUS", SIGBUS},   {"SIGFPE", SIGFPE},
    {"SIGKILL", SIGKILL}, {"SIGUSR1", SIGUSR1}, {"SIGSEGV", SIGSEGV}, {"SIGUSR2", SIGUSR2},
    {"SIGPIPE", SIGPIPE}, {"SIGALRM", SIGALRM}, {"SIGTERM", SIGTERM}, {"SIGSYS", SIGSYS},
};

std::string Join(const std::string& path, absl::string_view key) {
  return validation::JoinPath(path, key);
}
std::string At(const std::string& path, size_t i) { return validation::JoinPath(path, i); }

// Where a behaviour is written, which decides whether it may have a name
// and conditions.
enum class Place { kList, kDefault, kInline };

// "action ask" or "actions complete, fail_then_succeed, model".
std::string ActionsTaking(absl::string_view key) {
  return NamesTaking(kActions, key, "action");
}

// The understudy dialect.
class Checker : public SimChecker {
 public:
  Checker(validation::Report* report, SimConfig* out) : SimChecker(report, out) {}

  void Document(const YAML::Node& root) {
    if (!root.IsMap()) {
      Error(root, "", absl::StrCat("expected a mapping at the top level, got ", DescribeNode(root)));
      return;
    }
    Map(root, "", Names(kTopKeys));
    std::string schema;
    if (root["schema"].IsDefined() && String(root["schema"], "schema", &schema) &&
        schema != kSimSchema) {
      Error(root["schema"], "schema",
            absl::StrCat("unknown schema \"", schema, "\"; this build reads ", kSimSchema),
            absl::StrCat("use schema: ", kSimSchema));
    }
    if (root["name"].IsDefined()) NonEmptyString(root["name"], "name", &out()->name);
    if (root["startup"].IsDefined()) Startup(root["startup"], "startup");
    if (root["prompt"].IsDefined()) NonEmptyString(root["prompt"], "prompt", &out()->prompt);
    if (root["timing"].IsDefined()) TimingField(root["timing"], "timing");
    if (root["settings"].IsDefined()) String(root["settings"], "settings", &out()->settings);
    if (root["env"].IsDefined()) Env(root["env"], "env");
    if (root["completion"].IsDefined()) {
      CompletionField(root["completion"], "completion", &out()->completion);
    }
    int catch_all = -1;  // the first behaviour that matches every prompt
    const YAML::Node list = root["behaviours"];
    if (list.IsDefined() && !list.IsSequence()) {
      Error(list, "behaviours", absl::StrCat("expected a list of behaviours, got ",
                                             DescribeNode(list)));
    } else if (list.IsDefined()) {
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string path = At("behaviours", i);
        if (catch_all >= 0) {
          Warning(list[i], path,
                  absl::StrCat("never reached: behaviours[", catch_all,
                               "] before it matches every prompt"),
                  absl::StrCat("give behaviours[", catch_all, "] a when, or move this one above it"));
        }
        std::shared_ptr<Behaviour> b = Parse(list[i], path, Place::kList);
        if (b == nullptr) continue;
        b->index = static_cast<int>(i);
        if (catch_all < 0 && b->contains.empty() && b->matches == nullptr) {
          catch_all = static_cast<int>(i);
        }
        out()->behaviours.push_back(b);
      }
    }
    if (root["default"].IsDefined()) {
      const YAML::Node d = root["default"];
      if (catch_all >= 0) {
        Warning(KeyNode(root, "default"), "default",
                absl::StrCat("never reached: behaviours[", catch_all, "] matches every prompt"));
      }
      std::shared_ptr<Behaviour> b = Parse(d, "default", Place::kDefault);
      if (b != nullptr) out()->default_behaviour = b;
    }
    if (out()->default_behaviour == nullptr) out()->default_behaviour = PlainComplete("default");
    Link();
  }

 private:
  // A `then` that names a behaviour, resolved once every name is known.
  struct Ref {
    std::shared_ptr<Behaviour> owner;
    int option;  // index into owner->options; -1 for owner->then
    std::string name;
    YAML::Node node;
    std::string path;
  };

  // A list of strings, or one string standing for a list of one.
  bool Lines(const YAML::Node& n, const std::string& path, std::vector<std::string>* out) {
    if (n.IsScalar()) {
      out->push_back(n.Scalar());
      return true;
    }
    return StringList(n, path, out);
  }

  void Startup(const YAML::Node& n, const std::string& path) {
    if (!Map(n, path, Names(kStartupKeys))) return;
    if (n["lines"].IsDefined()) Lines(n["lines"], Join(path, "lines"), &out()->startup_lines);
    if (n["delay"].IsDefined()) Duration(n["delay"], Join(path, "delay"), &out()->startup_delay);
  }

  void TimingField(const YAML::Node& n, const std::string& path) {
    if (!Map(n, path, Names(kTimingKeys))) return;
    double v = 0;
    if (n["scale"].IsDefined() && NonNegativeNumber(n["scale"], Join(path, "scale"), &v)) {
      if (v <= 0) {
        Error(n["scale"], Join(path, "scale"),
              absl::StrCat("must be more than 0, got ", n["scale"].Scalar()),
              "1 keeps the delays as written; 0.1 runs ten times faster");
      } else {
        out()->timing.scale = v;
      }
    }
    if (n["jitter"].IsDefined() && NonNegativeNumber(n["jitter"], Join(path, "jitter"), &v)) {
      if (v >= 1) {
        Error(n["jitter"], Join(path, "jitter"),
              absl::StrCat("must be less than 1 (a fraction of each delay), got ",
                           n["jitter"].Scalar()),
              "0.2 varies each delay by up to 20%");
      } else {
        out()->timing.jitter = v;
      }
    }
  }

  void Env(const YAML::Node& n, const std::string& path) {
    static const RE2* const kName = new RE2("[A-Za-z_][A-Za-z0-9_]*");
    for (const auto& [key, value] : Entries(n, path)) {
      const std::string name = key.Scalar();
      const std::string p = validation::KeyPath(path, name);
      if (!RE2::FullMatch(name, *kName)) {
        Error(key, p, "not an environment variable name (letters, digits and _)");
        continue;
      }
      std::string v;
      if (String(value, p, &v)) out()->env[name] = v;
    }
  }

  // Fills `out` (already holding the defaults it overrides) from mapping `n`.
  void CompletionField(const YAML::Node& n, const std::string& path, Completion* out) {
    if (!Map(n, path, Names(kCompletionKeys))) return;
    const YAML::Node command = n["command"];
    if (command.IsDefined()) {
      const std::string p = Join(path, "command");
      if (command.IsScalar()) {
        if (absl::StripAsciiWhitespace(command.Scalar()).empty()) {
          Error(command, p, "must not be empty",
                "give a command line (run by /bin/sh -c) or a list of arguments");
        } else {
          out->command = {"/bin/sh", "-c", command.Scalar()};
          out->is_line = true;
        }
      } else if (command.IsSequence() && command.size() == 0) {
        Error(command, p, "must not be empty",
              "give a command line (run by /bin/sh -c) or a list of arguments");
      } else if (command.IsSequence()) {
        std::vector<std::string> argv;
        if (StringList(command, p, &argv) && !argv[0].empty()) {
          out->command = std::move(argv);
          out->is_line = false;
        } else if (!argv.empty() && argv[0].empty()) {
          Error(command[0], At(p, 0), "must not be empty (it is the program to run)");
        }
      } else {
        Error(command, p,
              absl::StrCat("expected a command line or a list of arguments, got ",
                           DescribeNode(command)));
      }
    }
    if (n["output_flag"].IsDefined()) {
      NonEmptyString(n["output_flag"], Join(path, "output_flag"), &out->output_flag);
    }
    std::string on_failure;
    if (n["on_failure"].IsDefined() &&
        Choice(n["on_failure"], Join(path, "on_failure"), Names(kOnFailure), &on_failure)) {
      out->on_failure = on_failure == "retry" ? OnFailure::kRetry
                        : on_failure == "stay" ? OnFailure::kStay
                                               : OnFailure::kGiveUp;
    }
    int64_t retries = 0;
    if (n["retries"].IsDefined() && Int(n["retries"], Join(path, "retries"), &retries, 0)) {
      if (retries > kMaxRetries) {
        Error(n["retries"], Join(path, "retries"),
              absl::StrCat("must be at most ", kMaxRetries, ", got ", retries));
      } else {
        out->retries = static_cast<int>(retries);
        if (out->on_failure != OnFailure::kRetry) {
          Warning(n["retries"], Join(path, "retries"), "only used with on_failure: retry");
        }
      }
    }
    if (n["retry_delay"].IsDefined()) {
      Duration(n["retry_delay"], Join(path, "retry_delay"), &out->retry_delay);
    }
    absl::Duration timeout;
    if (n["timeout"].IsDefined() && Duration(n["timeout"], Join(path, "timeout"), &timeout)) {
      if (timeout <= absl::ZeroDuration()) {
        Error(n["timeout"], Join(path, "timeout"), "must be more than 0");
      } else {
        out->timeout = timeout;
      }
    }
  }

  void When(const YAML::Node& n, const std::string& path, Behaviour* b) {
    if (!Map(n, path, Names(kWhenKeys))) return;
    if (n.size() == 0) {
      Warning(n, path, "no conditions: matches every prompt",
              "give contains or matches, or drop when");
    }
    if (n["contains"].IsDefined()) {
      NonEmptyString(n["contains"], Join(path, "contains"), &b->contains);
    }
    if (n["matches"].IsDefined()) b->matches = Regex(n["matches"], Join(path, "matches"));
  }

  void Events(const YAML::Node& n, const std::string& path, std::vector<ToolEvent>* out) {
    if (!n.IsSequence()) {
      Error(n, path, absl::StrCat("expected a list of tool events, got ", DescribeNode(n)));
      return;
    }
    for (size_t i = 0; i < n.size(); ++i) {
      const YAML::Node e = n[i];
      const std::string p = At(path, i);
      if (!Map(e, p, Names(kEventKeys))) continue;
      ToolEvent event;
      if (Require(e, p, "tool")) NonEmptyString(e["tool"], Join(p, "tool"), &event.tool);
      if (e["at"].IsDefined()) Duration(e["at"], Join(p, "at"), &event.at);
      if (e["duration"].IsDefined()) Duration(e["duration"], Join(p, "duration"), &event.duration);
      if (e["result"].IsDefined()) String(e["result"], Join(p, "result"), &event.result);
      const YAML::Node input = e["input"];
      if (input.IsDefined() && input.IsMap()) {
        event.input_json = validation::YamlToJson(input).dump(
            -1, ' ', false, nlohmann::json::error_handler_t::replace);
      } else if (input.IsDefined() && !input.IsNull()) {
        Error(input, Join(p, "input"),
              absl::StrCat("expected a mapping (the tool's input), got ", DescribeNode(input)));
      }
      out->push_back(std::move(event));
    }
  }

  bool Signal(const YAML::Node& n, const std::string& path, int* out) {
    if (!n.IsScalar()) {
      Error(n, path, absl::StrCat("expected a signal name or number, got ", DescribeNode(n)));
      return false;
    }
    int64_t number = 0;
    if (absl::SimpleAtoi(n.Scalar(), &number)) {
      if (number < 1 || number > 64) {
        Error(n, path, absl::StrCat("must be a signal number from 1 to 64, got ", number));
        return false;
      }
      *out = static_cast<int>(number);
      return true;
    }
    std::string name = absl::AsciiStrToUpper(n.Scalar());
    if (!absl::StartsWith(name, "SIG")) name = absl::StrCat("SIG", name);
    std::vector<std::string> names;
    for (const SignalName& s : kSignals) {
      if (name == s.name) {
        *out = s.number;
        return true;
      }
      names.push_back(s.name);
    }
    std::string suggestion = Suggest(name, names);
    if (suggestion.empty()) suggestion = absl::StrCat("expected one of: ", absl::StrJoin(names, ", "));
    Error(n, path, absl::StrCat("unknown signal ", DescribeNode(n)), suggestion);
    return false;
  }

  // `then`: a behaviour's name (resolved later) or an inline behaviour.
  void Then(const YAML::Node& n, const std::string& path, const std::shared_ptr<Behaviour>& owner,
            int option) {
    std::shared_ptr<const Behaviour>& slot =
        option < 0 ? owner->then : owner->options[static_cast<size_t>(option)].then;
    if (n.IsScalar() && !n.Scalar().empty()) {
      refs_.push_back(Ref{owner, option, n.Scalar(), n, path});
    } else if (n.IsMap()) {
      std::shared_ptr<Behaviour> b = Parse(n, path, Place::kInline);
      if (b != nullptr) {
        edges_.push_back(Edge{owner.get(), b.get(), n, path, ""});
        slot = b;
      }
    } else {
      Error(n, path,
            absl::StrCat("expected the name of a behaviour or a behaviour (a mapping), got ",
                         DescribeNode(n)));
    }
  }

  void Options(const YAML::Node& n, const std::string& path, const std::shared_ptr<Behaviour>& b) {
    if (!n.IsSequence()) {
      Error(n, path, absl::StrCat("expected a list of options, got ", DescribeNode(n)));
      return;
    }
    if (n.size() == 0) {
      Error(n, path, "no options; give at least one, or drop options and give then");
      return;
    }
    std::map<std::string, size_t> seen;  // lower-cased answer -> option
    for (size_t i = 0; i < n.size(); ++i) {
      const YAML::Node o = n[i];
      const std::string p = At(path, i);
      AskOption option;
      if (o.IsScalar()) {
        if (!NonEmptyString(o, p, &option.answer)) continue;
      } else {
        if (!Map(o, p, Names(kOptionKeys))) continue;
        if (!Require(o, p, "answer") || !NonEmptyString(o["answer"], Join(p, "answer"), &option.answer)) {
          continue;
        }
      }
      const std::string key = absl::AsciiStrToLower(absl::StripAsciiWhitespace(option.answer));
      auto [it, inserted] = seen.emplace(key, i);
      if (!inserted) {
        // (A YAML::Node is a reference: assigning one would overwrite the
        // document, so the two positions are picked here, not stored.)
        Error(o.IsScalar() ? o : o["answer"], o.IsScalar() ? p : Join(p, "answer"),
              absl::StrCat("duplicate answer; options[", it->second, "] already has it"));
        continue;
      }
      b->options.push_back(std::move(option));
      if (o.IsMap() && o["then"].IsDefined()) {
        Then(o["then"], Join(p, "then"), b, static_cast<int>(b->options.size() - 1));
      }
    }
  }

  std::shared_ptr<Behaviour> Parse(const YAML::Node& n, const std::string& path, Place place) {
    const std::vector<std::string> keys = Names(kCommonBehaviourKeys, kActionFields);
    if (!Map(n, path, keys)) return nullptr;
    auto b = std::make_shared<Behaviour>();
    b->path = path;
    all_.push_back(b);
    std::string action = "complete";
    std::vector<std::string> action_names;
    for (const ActionInfo& a : kActions) action_names.push_back(a.name);
    if (n["action"].IsDefined() && !Choice(n["action"], Join(path, "action"), action_names, &action)) {
      return b;  // its other fields are judged against an action we do not know
    }
    for (const ActionInfo& a : kActions) {
      if (action == a.name) b->action = a.kind;
    }
    if (n["name"].IsDefined()) {
      if (place == Place::kList) {
        if (NonEmptyString(n["name"], Join(path, "name"), &b->name)) {
          auto [it, inserted] = names_.emplace(b->name, path);
          if (inserted) {
            named_[b->name] = b;
          } else {
            Error(n["name"], Join(path, "name"),
                  absl::StrCat("duplicate behaviour name; ", it->second, " already has it"));
          }
        }
      } else {
        Error(KeyNode(n, "name"), Join(path, "name"),
              place == Place::kDefault ? "default takes no name"
                                       : "an inline behaviour takes no name",
              "name behaviours in the behaviours list, and refer to them with then: NAME");
      }
    }
    if (n["when"].IsDefined()) {
      if (place == Place::kList) {
        When(n["when"], Join(path, "when"), b.get());
      } else {
        Error(KeyNode(n, "when"), Join(path, "when"),
              place == Place::kDefault ? "default answers every prompt no behaviour matched; it takes no when"
                                       : "an inline behaviour runs when its answer is chosen; it takes no when");
      }
    }
    for (const char* key : kActionFields) {
      if (n[key].IsDefined() && !TakesField(kActions, b->action, key)) {
        Error(KeyNode(n, key), Join(path, key),
              absl::StrCat("only for ", ActionsTaking(key), " (this behaviour's action is ",
                           action, ")"));
      }
    }
    auto field = [&](const char* key) {
      return n[key].IsDefined() && TakesField(kActions, b->action, key);
    };
    if (n["delay"].IsDefined()) Duration(n["delay"], Join(path, "delay"), &b->delay);
    if (field("output")) Lines(n["output"], Join(path, "output"), &b->output);
    if (field("outputs")) Outputs(n["outputs"], Join(path, "outputs"), &b->outputs);
    if (field("events")) Events(n["events"], Join(path, "events"), &b->events);
    if (field("completion")) {
      Completion merged = out()->completion;
      CompletionField(n["completion"], Join(path, "completion"), &merged);
      b->completion = std::move(merged);
    } else if (b->action == ActionKind::kComplete || b->action == ActionKind::kFailThenSucceed ||
               b->action == ActionKind::kModel) {
      b->completion = out()->completion;
    }
    if (field("message")) NonEmptyString(n["message"], Join(path, "message"), &b->message);
    if (b->action == ActionKind::kAsk) {
      if (Require(n, path, "question")) {
        NonEmptyString(n["question"], Join(path, "question"), &b->question);
      }
      if (n["options"].IsDefined()) Options(n["options"], Join(path, "options"), b);
      if (n["then"].IsDefined()) Then(n["then"], Join(path, "then"), b, -1);
      if (!n["options"].IsDefined() && !n["then"].IsDefined()) {
        Error(n, path, "an ask needs options, or then for any answer",
              "add options: [{answer: yes, then: NAME}, {answer: no, then: NAME}]");
      }
    }
    int64_t v = 0;
    if (field("failures") && Int(n["failures"], Join(path, "failures"), &v, 1)) {
      b->failures = static_cast<int>(std::min<int64_t>(v, 1 << 30));
    }
    if (field("exit_code")) {
      ExitCode(n["exit_code"], Join(path, "exit_code"), &b->exit_code,
               "to die by a signal, give signal: SIGKILL");
    }
    if (field("signal")) {
      Signal(n["signal"], Join(path, "signal"), &b->signal);
      if (n["exit_code"].IsDefined()) {
        Error(KeyNode(n, "signal"), Join(path, "signal"),
              "give exit_code or signal, not both (a process dies by a signal or exits)");
      }
    }
    // A fail_then_succeed given how to crash crashes on its failing turns.
    b->crash_on_failure = b->action == ActionKind::kFailThenSucceed &&
                          (field("exit_code") || field("signal"));
    if (field("model")) NonEmptyString(n["model"], Join(path, "model"), &b->model);
    if (field("agent")) NonEmptyString(n["agent"], Join(path, "agent"), &b->model_agent);
    if (field("system_prompt")) {
      String(n["system_prompt"], Join(path, "system_prompt"), &b->system_prompt);
    }
    return b;
  }

  // A `then` edge between two behaviours, for the cycle check; `name` is
  // the name written when it is a reference ("" for an inline behaviour).
  struct Edge {
    const Behaviour* from;
    const Behaviour* to;
    YAML::Node node;
    std::string path;
    std::string name;
  };

  // Resolves `then: NAME`, gives every option a `then`, and refuses loops.
  void Link() {
    std::vector<std::string> names;
    for (const auto& [name, b] : named_) names.push_back(name);
    for (const Ref& ref : refs_) {
      auto it = named_.find(ref.name);
      if (it == named_.end()) {
        std::string suggestion = Suggest(ref.name, names);
        if (suggestion.empty()) {
          suggestion = names.empty() ? "no behaviour has a name; give one a name: field"
                                     : absl::StrCat("behaviours with names: ",
                                                    absl::StrJoin(names, ", "));
        }
        Error(ref.node, ref.path, absl::StrCat("no behaviour named \"", ref.name, "\""),
              std::move(suggestion));
        continue;
      }
      (ref.option < 0 ? ref.owner->then
                      : ref.owner->options[static_cast<size_t>(ref.option)].then) = it->second;
      edges_.push_back(Edge{ref.owner.get(), it->second.get(), ref.node, ref.path, ref.name});
    }
    BreakLoops();
    for (const std::shared_ptr<Behaviour>& b : all_) {
      if (b->action != ActionKind::kAsk) continue;
      std::shared_ptr<const Behaviour> fallback = b->then;
      // Without options, one implicit option that any answer selects.
      if (b->options.empty() && fallback != nullptr) b->options.push_back(AskOption{"", fallback});
      for (size_t i = 0; i < b->options.size(); ++i) {
        if (b->options[i].then != nullptr) continue;
        if (fallback == nullptr) fallback = PlainComplete(Join(b->path, "then"));
        b->options[i].then = fallback;
      }
    }
  }

  // Reports each `then` that closes a loop (an ask whose answers lead back
  // to it for ever) and cuts it, so that no config holds a reference cycle.
  void BreakLoops() {
    std::map<const Behaviour*, std::vector<size_t>> out;  // behaviour -> edges from it
    for (size_t i = 0; i < edges_.size(); ++i) out[edges_[i].from].push_back(i);
    std::map<const Behaviour*, int> state;  // 1 on the stack, 2 done
    std::vector<const Behaviour*> stack;
    std::set<size_t> cut;
    std::function<void(const Behaviour*)> visit = [&](const Behaviour* b) {
      state[b] = 1;
      stack.push_back(b);
      for (size_t e : out[b]) {
        const Edge& edge = edges_[e];
        if (state[edge.to] == 1) {
          std::vector<std::string> loop;
          auto from = std::find(stack.begin(), stack.end(), edge.to);
          for (auto it = from; it != stack.end(); ++it) loop.push_back(Label(**it));
          loop.push_back(Label(*edge.to));
          Error(edge.node, edge.path,
                absl::StrCat("then loops back: ", absl::StrJoin(loop, " -> ")),
                "end the chain with a behaviour that is not an ask");
          cut.insert(e);
        } else if (state[edge.to] == 0) {
          visit(edge.to);
        }
      }
      stack.pop_back();
      state[b] = 2;
    };
    for (const std::shared_ptr<Behaviour>& b : all_) {
      if (state[b.get()] == 0) visit(b.get());
    }
    for (size_t e : cut) {
      const Edge& edge = edges_[e];
      for (const std::shared_ptr<Behaviour>& b : all_) {
        if (b.get() != edge.from) continue;
        if (b->then.get() == edge.to) b->then = nullptr;
        for (AskOption& o : b->options) {
          if (o.then.get() == edge.to) o.then = nullptr;
        }
      }
    }
  }

  static std::string Label(const Behaviour& b) { return b.name.empty() ? b.path : b.name; }

  std::vector<std::shared_ptr<Behaviour>> all_;  // every behaviour parsed, inline ones too
  std::map<std::string, std::string> names_;     // name -> path of its behaviour
  std::map<std::string, std::shared_ptr<Behaviour>> named_;
  std::vector<Ref> refs_;
  std::vector<Edge> edges_;
};

validation::Report Check(absl::string_view text, absl::string_view source, SimConfig* out) {
  validation::Report report;
  report.source = std::string(source);
  out->source = std::string(source);
  out->content = std::string(text);
  validation::YamlLimits limits;
  limits.what = "sim config";
  limits.max_bytes = kMaxSimConfigBytes;
  limits.max_depth = kMaxSimConfigDepth;
  limits.max_nodes = kMaxSimConfigNodes;
  limits.empty_message = "empty document; expected a mapping with behaviours";
  std::optional<YAML::Node> root = validation::LoadYamlDocument(text, limits, &report);
  if (!root.has_value()) return report;
  try {
    if (IsMeowDocument(*root)) {
      CheckMeowDocument(*root, &report, out);
    } else {
      Checker(&report, out).Document(*root);
    }
  } catch (const YAML::Exception& e) {
    // Not expected: every access checks types first. Reported rather than
    // thrown, so that a validator bug never takes the simulator down.
    SimChecker(&report, out)
        .Error(YAML::Node(), "", absl::StrCat("internal error reading the config: ", e.msg));
  }
  report.SortByPosition();
  return report;
}

}  // namespace

absl::string_view DialectName(Dialect dialect) {
  return dialect == Dialect::kMeow ? "meow" : "understudy";
}

absl::string_view ActionName(ActionKind kind) {
  for (const ActionInfo& a : kActions) {
    if (a.kind == kind) return a.name;
  }
  return "complete";
}

const Behaviour& SimConfig::Select(absl::string_view prompt) const {
  for (const std::shared_ptr<const Behaviour>& b : behaviours) {
    if (!b->contains.empty() && !absl::StrContains(prompt, b->contains)) continue;
    if (b->matches != nullptr &&
        !RE2::PartialMatch(re2::StringPiece(prompt.data(), prompt.size()), *b->matches)) {
      continue;
    }
    return *b;
  }
  return *default_behaviour;
}

SimConfig DefaultSimConfig() {
  SimConfig config;
  config.source = "(built-in)";
  auto b = std::make_shared<Behaviour>();
  b->path = "default";
  b->completion = config.completion;
  config.default_behaviour = b;
  return config;
}

absl::StatusOr<SimConfig> ParseSimConfig(absl::string_view text, absl::string_view source) {
  SimConfig config;
  validation::Report report = Check(text, source, &config);
  if (report.ok()) return config;
  validation::Report errors;
  errors.source = report.source;
  for (const validation::Problem& p : report.problems) {
    if (p.severity == validation::Problem::Severity::kError) errors.problems.push_back(p);
  }
  return absl::InvalidArgumentError(validation::FormatReport(errors));
}

validation::Report ValidateSimConfig(absl::string_view text, absl::string_view source) {
  SimConfig ignored;
  return Check(text, source, &ignored);
}

bool LooksLikeSimConfig(absl::string_view text) {
  // A scan rather than a parse, so that a sim config with a syntax error is
  // still judged as one: a top-level YAML key at the start of a line (block
  // scalars are indented, so text inside one never starts there), or the
  // JSON spelling of the same keys.
  static const RE2* const kSim = new RE2(
      R"re((?m)(^schema[ \t]*:[ \t]*["']?understudy\.sim/|^(behaviours|behaviors|hooks|logging)[ \t]*:|"schema"\s*:\s*"understudy\.sim/|(^|[^\\])"(behaviours|behaviors)"\s*:))re");
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *kSim);
}

}  // namespace sim
}  // namespace understudy
