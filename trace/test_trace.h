// For tests: the trace of a realistic review loop, as the server emits it.
//
//  #  kind              agent         what
//  1  run_started
//  2  exchange          orchestrator  -> continue({"phase":"discovery"})
//  3  tool_call         orchestrator  continue {"phase":"discovery"}
//  4  phase_transition  orchestrator  "" -> discovery
//  5  exchange          executor      (phase discovery) -> read_file
//  6  tool_call         executor      read_file {"path":"src/login.py"}
//  7  tool_result       executor      read_file
//  8  exchange          executor      (phase discovery) -> continue(execute)
//  9  tool_call         executor      continue {"files":["src/login.py"],"phase":"execute"}
// 10  phase_transition  executor      discovery -> execute
// 11  exchange          reviewer      (phase execute) "Found a SQL injection ..."
// 12  tool_call         reviewer      request_changes {"issues":["SQL injection in login()"]}
// 13  routing_decision  reviewer      agents=executor
// 14  exchange          executor      (phase execute) request carries the review
// 15  tool_call         executor      continue {"phase":"verification"}
// 16  phase_transition  executor      execute -> verification
// 17  exchange          reviewer      (phase verification) "LGTM"
// 18  workflow_end      reviewer
// 19  run_ended
#ifndef UNDERSTUDY_TRACE_TEST_TRACE_H_
#define UNDERSTUDY_TRACE_TEST_TRACE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace trace {
namespace testing {

// Appends an event with the next seq.
inline v1::TraceEvent& Add(std::vector<v1::TraceEvent>* events, const std::string& kind,
                           const std::string& agent,
                           std::vector<std::pair<std::string, std::string>> attributes = {}) {
  v1::TraceEvent& e = events->emplace_back();
  e.set_run("run-1");
  e.set_seq(static_cast<int64_t>(events->size()));
  e.set_kind(kind);
  e.set_agent(agent);
  e.set_time_micros(1000 * e.seq());
  if (!agent.empty()) (*e.mutable_attributes())["gen_ai.agent.name"] = agent;
  for (auto& [k, v] : attributes) (*e.mutable_attributes())[k] = v;
  return e;
}

inline void AddMessage(v1::CompletionRequest* request, const std::string& role,
                       const std::string& content) {
  v1::Message* m = request->add_messages();
  m->set_role(role);
  m->set_content(content);
}

// An exchange of `agent` in `phase` whose answer is `content` and, when
// `tool` is set, one call of it with `arguments`.
inline v1::TraceEvent& AddExchange(std::vector<v1::TraceEvent>* events, const std::string& agent,
                                   const std::string& phase, const std::string& user,
                                   const std::string& content, const std::string& tool = "",
                                   const std::string& arguments = "") {
  v1::TraceEvent& e = Add(events, "exchange", agent,
                          {{"gen_ai.request.model", "gpt-test"},
                           {"understudy.answer.source", "recording"},
                           {"understudy.phase", phase}});
  AddMessage(e.mutable_request(), "system", "You are the " + agent + ".");
  AddMessage(e.mutable_request(), "user", user);
  e.mutable_request()->set_model("gpt-test");
  v1::Message* answer = e.mutable_response()->mutable_message();
  answer->set_role("assistant");
  answer->set_content(content);
  if (!tool.empty()) {
    v1::ToolCall* call = answer->add_tool_calls();
    call->set_id("call-" + std::to_string(e.seq()));
    call->set_name(tool);
    call->set_arguments(arguments);
  }
  return e;
}

inline void AddToolCall(std::vector<v1::TraceEvent>* events, const std::string& agent,
                        const std::string& tool, const std::string& arguments) {
  const std::string id = "call-" + std::to_string(events->size());  // the exchange's seq
  Add(events, "tool_call", agent,
      {{"gen_ai.tool.name", tool},
       {"gen_ai.tool.call.id", id},
       {"gen_ai.tool.call.arguments", arguments}});
}

inline void AddPhase(std::vector<v1::TraceEvent>* events, const std::string& agent,
                     const std::string& from, const std::string& to) {
  Add(events, "phase_transition", agent,
      {{"understudy.phase.from", from}, {"understudy.phase.to", to}});
}

// The review loop of the table above.
inline std::vector<v1::TraceEvent> ReviewLoop() {
  std::vector<v1::TraceEvent> ev;
  Add(&ev, "run_started", "", {{"understudy.run.mode", "replay"}});
  AddExchange(&ev, "orchestrator", "", "Add a login endpoint.", "", "continue",
              R"({"phase":"discovery"})");
  AddToolCall(&ev, "orchestrator", "continue", R"({"phase":"discovery"})");
  AddPhase(&ev, "orchestrator", "", "discovery");
  AddExchange(&ev, "executor", "discovery", "Add a login endpoint.", "", "read_file",
              R"({"path":"src/login.py"})");
  AddToolCall(&ev, "executor", "read_file", R"({"path":"src/login.py"})");
  Add(&ev, "tool_result", "executor",
      {{"gen_ai.tool.name", "read_file"},
       {"gen_ai.tool.call.id", "call-5"},
       {"gen_ai.tool.call.result", "def login(user, pw): ..."}});
  AddExchange(&ev, "executor", "discovery", "Add a login endpoint.", "Read the file.", "continue",
              R"({"phase":"execute","files":["src/login.py"]})");
  AddToolCall(&ev, "executor", "continue", R"({"phase":"execute","files":["src/login.py"]})");
  AddPhase(&ev, "executor", "discovery", "execute");
  AddExchange(&ev, "reviewer", "execute", "Review the diff of src/login.py.",
              "Found a SQL injection in login(): use parameterized queries.", "request_changes",
              R"j({"issues":["SQL injection in login()"]})j");
  AddToolCall(&ev, "reviewer", "request_changes", R"j({"issues":["SQL injection in login()"]})j");
  Add(&ev, "routing_decision", "reviewer",
      {{"understudy.routing.agents", "executor"},
       {"understudy.routing.reason", "changes requested"}});
  v1::TraceEvent& fix =
      AddExchange(&ev, "executor", "execute",
                  "Reviewer feedback: Found a SQL injection in login(): use parameterized queries.",
                  "Fixed.", "continue", R"({"phase":"verification"})");
  (*fix.mutable_attributes())["understudy.agent.iteration"] = "3";
  AddToolCall(&ev, "executor", "continue", R"({"phase":"verification"})");
  AddPhase(&ev, "executor", "execute", "verification");
  AddExchange(&ev, "reviewer", "verification", "Review the fix.", "LGTM");
  Add(&ev, "workflow_end", "reviewer");
  Add(&ev, "run_ended", "", {{"understudy.run.misses", "0"}, {"understudy.run.unconsumed", "0"}});
  return ev;
}

}  // namespace testing
}  // namespace trace
}  // namespace understudy

#endif  // UNDERSTUDY_TRACE_TEST_TRACE_H_
