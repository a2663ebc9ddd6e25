// Timelines for people: a run's trace, or a session's exchanges, one line
// each, as `understudy show` prints them. Pure formatting — no I/O, no store,
// no environment — so every shape below is pinned by query/timeline_test.cc.
//
// Usage:
//   TimelineOptions options;
//   options.color = ShouldColor(ColorMode::kAuto, isatty(STDOUT_FILENO),
//                               std::getenv("NO_COLOR"));
//   for (const std::string& line : FormatTimeline(events, options)) {
//     std::cout << line << "\n";
//   }
//
// Run events (plain; `…` marks text cut at options.width):
//   #1 run started (replay golden@2, scenario review-loop)
//   #2 orchestrator ▶ turn 1
//   #3 orchestrator (phase: execute) → route [test-pm, executor]: "reason"
//   #4 executor (phase: execute) ← answer [rule executor-writes]: "Writing login()."
//   #5 executor ← ✗ RESOURCE_EXHAUSTED [rule rate-limit]: quota exceeded
//      → tool continue {phase: "verification"}
//      ← result plan_propose: "created PLAN-4f2a"
//   #9 phase discovery → execute            (an empty phase shows as ∅)
//   #10 miss executor: <first line of the miss report> (+2 lines)
//   #11 executor → ui confirm: "Deploy now?" ← "true"
//   #12 executor ■ workflow end
//   #13 custom.checkpoint executor k=v note="two words"
//   #14 run ended: served 7, misses 0, unconsumed 0
// A simulated agent's events (`understudy sim`, docs/sim.md#trace):
//   #15 coder ▶ sim started (session 3f2a…, skipping permissions)
//   #16 coder IDLE → WORKING (prompt)
//   #17 coder ← prompt "deploy to prod" [behaviour deploy]
//   #18 coder hook UserPromptSubmit: ok 12 ms ./hooks/log.sh
//   #19 coder → tool Bash {command: "ls"}
//   #20 coder ← result Bash: "a.txt"           (✗ blocked by hook: REASON)
//   #21 coder ? "Which database?" [postgres, sqlite]
//   #22 coder ← answer "1" (option 1)
//   #23 coder ■ completion ok {status: "ok"} meow done --output status=ok
//   #24 coder ✗ "Error: the build is broken"
// Any other kind prints like custom.checkpoint: kind, agent, attributes.
// An answer whose content is a JSON object (a routing decision, structured
// output) shows it like tool arguments, `{agents: ["executor"], phase: …}`.
//
// Every string that comes from the trace is made safe for a terminal:
// control characters (ESC included, so a recorded answer cannot drive the
// terminal) and invalid UTF-8 become U+FFFD, and quoted text has its
// whitespace runs collapsed to one space so that each event stays one line.
#ifndef UNDERSTUDY_QUERY_TIMELINE_H_
#define UNDERSTUDY_QUERY_TIMELINE_H_

#include <string>
#include <vector>

#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace query {

namespace v1 = ::understudy::v1;

struct TimelineOptions {
  // ANSI SGR colors: each agent in a color of its own (chosen from a hash of
  // its name, so the same agent has the same color in every run), errors and
  // misses red, phases cyan, seq numbers and answer sources dim.
  bool color = false;
  // The most characters (Unicode code points) kept of a free text — an
  // answer, a reason, a tool result, rendered tool arguments — before it is
  // cut and ends in "…". Values below 1 count as 1. A miss report's first
  // line and a run's failures are never cut: they are the point of the line.
  int width = 80;
};

// --color: auto (colors only on a terminal, unless NO_COLOR is set to a
// non-empty value, see no-color.org), always, never.
enum class ColorMode { kAuto, kAlways, kNever };

// Whether to color output given the flag, whether stdout is a terminal, and
// the NO_COLOR variable's value (nullptr when unset).
bool ShouldColor(ColorMode mode, bool stdout_is_tty, const char* no_color);

// One line per event, without trailing newlines, in the order given
// (callers pass seq order) but for one move: the engine traces what an
// upstream answer caused — its tool calls, routing decision, phase change,
// workflow end — before the answer's own exchange event (it observes the
// answer on arrival and traces the exchange once stored), so that exchange's
// line is drawn before them, and the tool calls sit under the answer that
// made them as they do for recorded and scripted answers. Each line depends
// only on its event.
//
// To format a long trace page by page, hold back the trailing events for
// which IsAnswerEffect is true and pass them with the next page: the answer
// that caused them may be on it.
std::vector<std::string> FormatTimeline(const std::vector<v1::TraceEvent>& events,
                                        const TimelineOptions& options);

// Whether FormatTimeline may draw `event` after a later exchange event: a
// tool_call, routing_decision, phase_transition or workflow_end.
bool IsAnswerEffect(const v1::TraceEvent& event);

// A session version as a timeline: a header line
//   golden@1: closed, 6 exchanges, agents orchestrator, executor, reviewer
// then one line per exchange, in the order given:
//   #1 orchestrator → "last user message" ← "answer" [continue {phase: "x"}]
//   #2 executor → "…" ← ✗ RESOURCE_EXHAUSTED: quota exceeded
// The request side is the last message whose role is "user" (the last
// message when none is); the bracket lists the answer's tool calls.
std::vector<std::string> FormatSessionTimeline(const v1::Session& session,
                                               const std::vector<v1::Exchange>& exchanges,
                                               const TimelineOptions& options);

}  // namespace query
}  // namespace understudy

#endif  // UNDERSTUDY_QUERY_TIMELINE_H_
