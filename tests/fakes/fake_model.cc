#include "tests/fakes/fake_model.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "grpcpp/grpcpp.h"

namespace understudy {
namespace fakes {
namespace {

constexpr char kFailPrefix[] = "FAIL:";
constexpr size_t kTextFragmentBytes = 16;

uint64_t Fnv1a(absl::string_view bytes, uint64_t h = 14695981039346656037ull) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Deterministic bytes of the request without its routing fields.
std::string RequestBytes(const v1::CompletionRequest& request) {
  v1::CompletionRequest copy = request;
  copy.clear_run();
  copy.clear_agent();
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    copy.SerializeToCodedStream(&coded);
  }
  return out;
}

bool AnyMessageContains(const v1::CompletionRequest& request, absl::string_view needle) {
  for (const v1::Message& m : request.messages()) {
    if (absl::StrContains(m.content(), needle)) return true;
  }
  return false;
}

const std::string& LastContent(const v1::CompletionRequest& request) {
  static const std::string* const kEmpty = new std::string;
  if (request.messages_size() == 0) return *kEmpty;
  return request.messages(request.messages_size() - 1).content();
}

void AddToolCall(v1::CompletionResponse* response, uint64_t hash, int index,
                 const std::string& name, const std::string& arguments) {
  v1::ToolCall* call = response->mutable_message()->add_tool_calls();
  call->set_id(absl::StrFormat("call_%08x", static_cast<uint32_t>(hash >> (8 * index))));
  call->set_name(name);
  call->set_arguments(arguments);
}

// Splits `text` into fragments of at most kTextFragmentBytes bytes, never
// inside a UTF-8 sequence.
std::vector<std::string> Fragments(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.size(), start + kTextFragmentBytes);
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
    out.push_back(text.substr(start, end - start));
    start = end;
  }
  return out;
}

}  // namespace

v1::CompletionResponse ScriptedAnswer(absl::string_view agent,
                                      const v1::CompletionRequest& request) {
  const uint64_t hash = Fnv1a(RequestBytes(request), Fnv1a(agent));
  v1::CompletionResponse r;
  r.set_id(absl::StrFormat("fake-%016x", hash));
  r.set_model(request.model().empty() ? "fake-default" : request.model());
  v1::Message* m = r.mutable_message();
  m->set_role("assistant");
  if (agent == "orchestrator") {
    if (AnyMessageContains(request, "FEEDBACK:")) {
      m->set_content("The reviewer found a problem; the executor fixes it, then we verify.");
      AddToolCall(&r, hash, 0, "continue", R"({"phase":"verification"})");
    } else {
      m->set_content("Routing the task to the executor.");
      AddToolCall(&r, hash, 0, "continue", R"({"phase":"execute"})");
    }
    r.set_finish_reason("tool_calls");
  } else if (agent == "executor") {
    if (AnyMessageContains(request, "FEEDBACK:")) {
      m->set_content("IMPLEMENTATION v2: sum(a, b) now has input validation for non-integers.");
      AddToolCall(
          &r, hash, 0, "write_file",
          R"({"path":"sum.py","content":"def sum(a, b):\n    if not isinstance(a, int) or not isinstance(b, int):\n        raise TypeError(\"integers only\")\n    return a + b\n"})");
    } else {
      m->set_content("IMPLEMENTATION v1: sum(a, b) returns a + b.");
      AddToolCall(&r, hash, 0, "write_file",
                  R"({"path":"sum.py","content":"def sum(a, b):\n    return a + b\n"})");
    }
    AddToolCall(&r, hash, 1, "run_tests", R"({"target":"//sum:test","verbose":false})");
    r.set_finish_reason("tool_calls");
  } else if (agent == "reviewer") {
    if (absl::StrContains(LastContent(request), "validation")) {
      m->set_content("APPROVED: the change validates its input.");
    } else {
      m->set_content("FEEDBACK: missing input validation");
    }
    r.set_finish_reason("stop");
  } else {
    m->set_content(absl::StrCat("echo: ", LastContent(request)));
    r.set_finish_reason("stop");
  }
  int64_t input_chars = 0;
  for (const v1::Message& msg : request.messages()) input_chars += msg.content().size();
  int64_t output_chars = m->content().size();
  for (const v1::ToolCall& c : m->tool_calls()) output_chars += c.arguments().size();
  r.mutable_usage()->set_input_tokens(input_chars / 4 + 1);
  r.mutable_usage()->set_output_tokens(output_chars / 4 + 1);
  return r;
}

std::vector<v1::CompletionChunk> ScriptedChunks(absl::string_view agent,
                                                const v1::CompletionRequest& request) {
  const v1::CompletionResponse whole = ScriptedAnswer(agent, request);
  auto new_chunk = [&whole](std::vector<v1::CompletionChunk>* out) {
    v1::CompletionChunk* c = &out->emplace_back();
    c->set_id(whole.id());
    c->set_model(whole.model());
    return c;
  };
  std::vector<v1::CompletionChunk> chunks;
  for (const std::string& fragment : Fragments(whole.message().content())) {
    new_chunk(&chunks)->set_content(fragment);
  }
  for (int i = 0; i < whole.message().tool_calls_size(); ++i) {
    const v1::ToolCall& call = whole.message().tool_calls(i);
    const size_t half = call.arguments().size() / 2;
    v1::ToolCallDelta* first = new_chunk(&chunks)->add_tool_calls();
    first->set_index(i);
    first->set_id(call.id());
    first->set_name(call.name());
    first->set_arguments(call.arguments().substr(0, half));
    v1::ToolCallDelta* rest = new_chunk(&chunks)->add_tool_calls();
    rest->set_index(i);
    rest->set_arguments(call.arguments().substr(half));
  }
  v1::CompletionChunk* last = new_chunk(&chunks);
  last->set_finish_reason(whole.finish_reason());
  *last->mutable_usage() = whole.usage();
  return chunks;
}

v1::CompletionResponse AssembleChunks(const std::vector<v1::CompletionChunk>& chunks) {
  v1::CompletionResponse r;
  std::map<int, v1::ToolCall> calls;
  std::string content;
  for (const v1::CompletionChunk& c : chunks) {
    if (r.id().empty()) r.set_id(c.id());
    if (r.model().empty()) r.set_model(c.model());
    content += c.content();
    for (const v1::ToolCallDelta& d : c.tool_calls()) {
      v1::ToolCall& call = calls[d.index()];
      if (call.id().empty()) call.set_id(d.id());
      if (call.name().empty()) call.set_name(d.name());
      call.mutable_arguments()->append(d.arguments());
    }
    if (!c.finish_reason().empty()) r.set_finish_reason(c.finish_reason());
    if (c.has_usage()) *r.mutable_usage() = c.usage();
  }
  r.mutable_message()->set_role("assistant");
  r.mutable_message()->set_content(content);
  for (auto& [index, call] : calls) *r.mutable_message()->add_tool_calls() = std::move(call);
  return r;
}

// ---------------------------------------------------------------------------
// FakeModel

class FakeModel::Service final : public v1::Model::Service {
 public:
  explicit Service(FakeModel* owner) : owner_(owner) {}

  grpc::Status Complete(grpc::ServerContext* context, const v1::CompletionRequest* request,
                        v1::CompletionResponse* response) override {
    owner_->complete_calls_.fetch_add(1);
    const std::string agent = AgentOf(*context, *request);
    owner_->Observe(*context, agent);
    if (absl::StartsWith(LastContent(*request), kFailPrefix)) return Refusal(*request);
    *response = ScriptedAnswer(agent, *request);
    return grpc::Status::OK;
  }

  grpc::Status StreamComplete(grpc::ServerContext* context, const v1::CompletionRequest* request,
                              grpc::ServerWriter<v1::CompletionChunk>* writer) override {
    owner_->stream_calls_.fetch_add(1);
    const std::string agent = AgentOf(*context, *request);
    owner_->Observe(*context, agent);
    if (absl::StartsWith(LastContent(*request), kFailPrefix)) return Refusal(*request);
    for (const v1::CompletionChunk& chunk : ScriptedChunks(agent, *request)) {
      if (!writer->Write(chunk)) return grpc::Status(grpc::StatusCode::CANCELLED, "client gone");
    }
    return grpc::Status::OK;
  }

 private:
  static std::string AgentOf(const grpc::ServerContext& context,
                             const v1::CompletionRequest& request) {
    if (!request.agent().empty()) return request.agent();
    auto it = context.client_metadata().find("understudy-agent");
    if (it == context.client_metadata().end()) return "";
    return std::string(it->second.data(), it->second.size());
  }

  // A request whose last message starts with "FAIL:" is refused, so tests
  // can record an upstream error and check that it replays.
  static grpc::Status Refusal(const v1::CompletionRequest& request) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("fake model refuses: ", LastContent(request)));
  }

  FakeModel* const owner_;
};

FakeModel::FakeModel() = default;

absl::StatusOr<std::unique_ptr<FakeModel>> FakeModel::Start(const std::string& listen) {
  std::unique_ptr<FakeModel> fake(new FakeModel());
  fake->service_ = std::make_unique<Service>(fake.get());
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a taken port is an error
  builder.RegisterService(fake->service_.get());
  fake->server_ = builder.BuildAndStart();
  if (fake->server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("fake model: cannot listen on ", listen));
  }
  fake->address_ = absl::StrCat(listen.substr(0, listen.rfind(':')), ":", port);
  return fake;
}

FakeModel::~FakeModel() { Stop(); }

void FakeModel::Observe(const grpc::ServerContext& context, const std::string& agent) {
  absl::MutexLock lock(&mu_);
  const auto& md = context.client_metadata();
  agents_seen_.push_back(agent);
  for (const auto& [key, value] : md) metadata_keys_seen_.emplace(key.data(), key.size());
  auto auth = md.find("authorization");
  last_authorization_ =
      auth == md.end() ? "" : std::string(auth->second.data(), auth->second.size());
}

std::set<std::string> FakeModel::metadata_keys_seen() const {
  absl::MutexLock lock(&mu_);
  return metadata_keys_seen_;
}

std::vector<std::string> FakeModel::agents_seen() const {
  absl::MutexLock lock(&mu_);
  return agents_seen_;
}

std::string FakeModel::last_authorization() const {
  absl::MutexLock lock(&mu_);
  return last_authorization_;
}

void FakeModel::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  // Calls still running after the deadline are cancelled.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  server_->Wait();
}

// ---------------------------------------------------------------------------
// AgentLoop

namespace {

constexpr char kTask[] = "Task: add a sum(a, b) function to sum.py.";

v1::Message Msg(const std::string& role, const std::string& content) {
  v1::Message m;
  m.set_role(role);
  m.set_content(content);
  return m;
}

void AddTool(v1::CompletionRequest* r, const std::string& name, const std::string& description,
             const std::string& parameters) {
  v1::ToolDefinition* t = r->add_tools();
  t->set_name(name);
  t->set_description(description);
  t->set_parameters(parameters);
}

v1::CompletionRequest Base(int step) {
  v1::CompletionRequest r;
  r.set_model(AgentLoop::kModel);
  r.mutable_params()->set_temperature(0);
  r.mutable_params()->set_max_tokens(512);
  const std::string agent = AgentLoop::Agent(step);
  if (agent == "orchestrator") {
    *r.add_messages() = Msg("system",
                            "You are the orchestrator. Send the task to the executor, then to "
                            "the reviewer, until the reviewer approves.");
    AddTool(
        &r, "continue", "Move the workflow to a phase.",
        R"({"type":"object","properties":{"phase":{"type":"string","enum":["execute","verification"]}},"required":["phase"]})");
  } else if (agent == "executor") {
    *r.add_messages() = Msg("system", "You are the executor. Write the code the task asks for.");
    AddTool(
        &r, "write_file", "Write a file.",
        R"({"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}})");
    AddTool(
        &r, "run_tests", "Run a test target.",
        R"({"type":"object","properties":{"target":{"type":"string"},"verbose":{"type":"boolean"}}})");
  } else {
    *r.add_messages() = Msg("system", "You are the reviewer. Approve the change or give FEEDBACK.");
  }
  return r;
}

std::string Describe(const v1::CompletionResponse& answer) {
  std::string out = answer.message().content();
  for (const v1::ToolCall& c : answer.message().tool_calls()) {
    absl::StrAppend(&out, "\n", c.name(), " ", c.arguments());
  }
  return out;
}

}  // namespace

const char* AgentLoop::Agent(int step) {
  static const char* const kAgents[kSteps] = {"orchestrator", "executor", "reviewer",
                                              "orchestrator", "executor", "reviewer"};
  return kAgents[step];
}

bool AgentLoop::Streamed(int step) { return step == 1 || step == 2 || step == 4; }

v1::CompletionRequest AgentLoop::Request(int step) const {
  v1::CompletionRequest r = Base(step);
  switch (step) {
    case 0:
      *r.add_messages() = Msg("user", kTask);
      break;
    case 1:
      *r.add_messages() =
          Msg("user", absl::StrCat(kTask, "\nOrchestrator: ", Describe(answers_[0])));
      break;
    case 2:
      *r.add_messages() = Msg("user", absl::StrCat("Review this change:\n", Describe(answers_[1])));
      break;
    case 3: {
      *r.add_messages() = Msg("user", kTask);
      v1::Message assistant = answers_[0].message();
      *r.add_messages() = assistant;
      v1::Message tool = Msg("tool", absl::StrCat("reviewer: ", answers_[2].message().content()));
      tool.set_tool_call_id(assistant.tool_calls(0).id());
      tool.set_name("continue");
      *r.add_messages() = tool;
      break;
    }
    case 4:
      *r.add_messages() =
          Msg("user", absl::StrCat(kTask, "\nOrchestrator: ", Describe(answers_[0])));
      *r.add_messages() = answers_[1].message();
      *r.add_messages() =
          Msg("user", absl::StrCat("Reviewer feedback: ", answers_[2].message().content(),
                                   "\nOrchestrator: ", Describe(answers_[3])));
      break;
    case 5:
      *r.add_messages() = Msg("user", absl::StrCat("Review this change:\n", Describe(answers_[4])));
      break;
  }
  return r;
}

void AgentLoop::Observe(int step, const v1::CompletionResponse& response) {
  if (static_cast<int>(answers_.size()) <= step) answers_.resize(step + 1);
  answers_[step] = response;
}

}  // namespace fakes
}  // namespace understudy
