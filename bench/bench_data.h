// The request and answers every bench case uses, so that the baseline and
// the replay serve the same bytes: bench/run records BenchResponse (and
// BenchChunks) from grpc_echo into a session, then replays it.
#ifndef UNDERSTUDY_BENCH_BENCH_DATA_H_
#define UNDERSTUDY_BENCH_BENCH_DATA_H_

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace bench {

// Found in every answer's text: the load generator checks for it, so that a
// fast error page is never counted as an answer.
inline constexpr char kAnswerMarker[] = "understudy-bench-answer";

// A small agent turn: a system prompt, a user message, one tool.
inline v1::CompletionRequest BenchRequest(const std::string& text = "Plan the next step.") {
  v1::CompletionRequest r;
  r.set_model("bench-model");
  v1::Message* system = r.add_messages();
  system->set_role("system");
  system->set_content("You are the executor. Write the code the task asks for.");
  v1::Message* user = r.add_messages();
  user->set_role("user");
  user->set_content(text);
  v1::ToolDefinition* tool = r.add_tools();
  tool->set_name("continue");
  tool->set_description("Move the workflow to a phase.");
  tool->set_parameters(R"({"type":"object","properties":{"phase":{"type":"string"}}})");
  return r;
}

// About 400 bytes of answer text with one tool call.
inline v1::CompletionResponse BenchResponse() {
  v1::CompletionResponse r;
  r.set_id("bench-response-1");
  r.set_model("bench-model");
  v1::Message* m = r.mutable_message();
  m->set_role("assistant");
  std::string text = absl::StrCat(kAnswerMarker, ": ");
  while (text.size() < 360) text += "the executor writes the parser and its tests, then hands over. ";
  m->set_content(text);
  v1::ToolCall* call = m->add_tool_calls();
  call->set_id("call_bench_1");
  call->set_name("continue");
  call->set_arguments(R"({"phase":"verification"})");
  r.set_finish_reason("tool_calls");
  r.mutable_usage()->set_input_tokens(42);
  r.mutable_usage()->set_output_tokens(96);
  return r;
}

// A streamed answer of `n` chunks: the marker, then one word per chunk; the
// last carries the finish reason and usage.
inline std::vector<v1::CompletionChunk> BenchChunks(int n) {
  std::vector<v1::CompletionChunk> chunks;
  chunks.reserve(n);
  for (int i = 0; i < n; ++i) {
    v1::CompletionChunk c;
    c.set_id("bench-stream-1");
    c.set_model("bench-model");
    c.set_content(i == 0 ? std::string(kAnswerMarker) : absl::StrCat(" word", i));
    if (i == n - 1) {
      c.set_finish_reason("stop");
      c.mutable_usage()->set_input_tokens(42);
      c.mutable_usage()->set_output_tokens(n);
    }
    chunks.push_back(std::move(c));
  }
  return chunks;
}

}  // namespace bench
}  // namespace understudy

#endif  // UNDERSTUDY_BENCH_BENCH_DATA_H_
