#include "service/admin_services.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "capture/ingest.h"
#include "query/runs.h"
#include "scenario/mocks.h"
#include "service/call_info.h"
#include "service/grpc_status.h"
#include "trace/vocabulary.h"

namespace understudy {
namespace service {
namespace {

grpc::Status ShuttingDown() {
  return ToGrpcStatus(absl::UnavailableError("the server is shutting down"));
}

}  // namespace

grpc::Status RunsService::StartRun(grpc::ServerContext*, const v1::StartRunRequest* request,
                                   v1::Run* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  absl::StatusOr<v1::Run> run = engine_->StartRun(*request);
  if (!run.ok()) return ToGrpcStatus(run.status());
  *response = std::move(*run);
  return grpc::Status::OK;
}

grpc::Status RunsService::EndRun(grpc::ServerContext*, const v1::EndRunRequest* request,
                                 v1::RunSummary* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  if (request->run().empty()) return ToGrpcStatus(absl::InvalidArgumentError("run: required"));
  absl::StatusOr<v1::RunSummary> summary = engine_->EndRun(request->run());
  if (!summary.ok()) return ToGrpcStatus(summary.status());
  *response = std::move(*summary);
  return grpc::Status::OK;
}

grpc::Status RunsService::GetRun(grpc::ServerContext*, const v1::GetRunRequest* request,
                                 v1::Run* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  absl::StatusOr<v1::Run> run = query::GetRun(query::Source{nullptr, engine_}, request->run());
  if (!run.ok()) return ToGrpcStatus(run.status());
  *response = std::move(*run);
  return grpc::Status::OK;
}

grpc::Status RecorderService::RecordExchanges(
    grpc::ServerContext*, grpc::ServerReader<v1::RecordExchangesRequest>* reader,
    v1::RecordExchangesResponse* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  std::string session;
  bool close = false;
  bool commit = false;
  std::vector<v1::Exchange> exchanges;
  v1::RecordExchangesRequest message;
  int index = 0;
  // Read() is false both at the client's half-close and when the stream
  // broke; only the `commit` marker on the last message tells them apart.
  while (reader->Read(&message)) {
    ++index;
    if (commit) {
      return ToGrpcStatus(absl::InvalidArgumentError(absl::StrCat(
          "message ", index, ": comes after the message marked commit, which must be last")));
    }
    if (index == 1) {
      if (message.session().empty()) {
        return ToGrpcStatus(
            absl::InvalidArgumentError("message 1: session is required on the first message"));
      }
      session = message.session();
    } else if (!message.session().empty() && message.session() != session) {
      return ToGrpcStatus(absl::InvalidArgumentError(
          absl::StrCat("message ", index, ": session \"", message.session(),
                       "\" differs from the first message's \"", session, "\"")));
    }
    if (message.has_exchange() && static_cast<int>(exchanges.size()) >= max_exchanges_) {
      return ToGrpcStatus(absl::ResourceExhaustedError(absl::StrCat(
          "more than ", max_exchanges_, " exchanges in one call; split the recording into calls")));
    }
    close = close || message.close();
    commit = message.commit();
    if (message.has_exchange()) exchanges.push_back(std::move(*message.mutable_exchange()));
  }
  if (index == 0) {
    return ToGrpcStatus(absl::InvalidArgumentError("no messages: send at least the session"));
  }
  if (!commit) {
    return ToGrpcStatus(absl::AbortedError(
        "the stream ended without a message marked commit; nothing was stored (the client "
        "stopped, or a message was refused, e.g. over --max-message-bytes)"));
  }
  absl::StatusOr<v1::RecordExchangesResponse> r =
      capture::Ingest(store_, session, std::move(exchanges), close);
  if (!r.ok()) return ToGrpcStatus(r.status());
  *response = std::move(*r);
  return grpc::Status::OK;
}

grpc::Status SessionsService::ListSessions(grpc::ServerContext*,
                                           const v1::ListSessionsRequest* request,
                                           v1::ListSessionsResponse* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  absl::StatusOr<v1::ListSessionsResponse> sessions =
      query::ListSessions(*store_, request->prefix());
  if (!sessions.ok()) return ToGrpcStatus(sessions.status());
  *response = *std::move(sessions);
  return grpc::Status::OK;
}

grpc::Status SessionsService::GetSession(grpc::ServerContext*,
                                         const v1::GetSessionRequest* request,
                                         v1::GetSessionResponse* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  absl::StatusOr<v1::GetSessionResponse> session = query::GetSession(
      *store_, request->name(), request->version(), request->include_exchanges());
  if (!session.ok()) return ToGrpcStatus(session.status());
  *response = *std::move(session);
  return grpc::Status::OK;
}

grpc::Status SessionsService::DeleteSession(grpc::ServerContext*,
                                            const v1::DeleteSessionRequest* request,
                                            v1::DeleteSessionResponse* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  absl::StatusOr<int64_t> n = store_->DeleteSession(request->name(), request->version());
  if (!n.ok()) return ToGrpcStatus(n.status());
  response->set_deleted_versions(*n);
  return grpc::Status::OK;
}

grpc::Status SessionsService::ExportSession(grpc::ServerContext*,
                                            const v1::ExportSessionRequest* request,
                                            v1::ExportSessionResponse* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  absl::StatusOr<std::string> jsonl = store_->ExportSession(request->name(), request->version());
  if (!jsonl.ok()) return ToGrpcStatus(jsonl.status());
  response->set_jsonl(std::move(*jsonl));
  return grpc::Status::OK;
}

grpc::Status SessionsService::ImportSession(grpc::ServerContext*,
                                            const v1::ImportSessionRequest* request,
                                            v1::Session* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  absl::StatusOr<v1::Session> session = store_->ImportSession(request->jsonl(), request->name());
  if (!session.ok()) return ToGrpcStatus(session.status());
  *response = std::move(*session);
  return grpc::Status::OK;
}

namespace {

v1::TraceEvent MockEvent(const char* kind, const std::string& agent) {
  v1::TraceEvent event;
  event.set_kind(kind);
  event.set_agent(agent);
  auto& attrs = *event.mutable_attributes();
  if (!agent.empty()) attrs[trace::attr::kGenAiAgentName] = agent;
  attrs[trace::attr::kMocked] = "true";
  return event;
}

const char* UiKindName(v1::UiKind kind) {
  switch (kind) {
    case v1::UI_KIND_CONFIRM:
      return "confirm";
    case v1::UI_KIND_SELECT:
      return "select";
    case v1::UI_KIND_INPUT:
      return "input";
    case v1::UI_KIND_EDITOR:
      return "editor";
    default:
      return "unspecified";
  }
}

}  // namespace

grpc::Status ToolsService::Invoke(grpc::ServerContext* context,
                                  const v1::InvokeToolRequest* request,
                                  v1::InvokeToolResponse* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  engine::CallInfo info = CallInfoFrom(*context, request->run(), request->agent());
  auto script = engine_->RunScript(info);
  if (!script.ok()) return ToGrpcStatus(script.status());
  info.run = script->second;
  if (script->first == nullptr) {
    return ToGrpcStatus(absl::FailedPreconditionError(absl::StrCat(
        "run \"", script->second, "\" has no scenario, so no mock_tools: start it with "
        "StartRun{scenario} or the server with --scenario")));
  }
  absl::StatusOr<v1::InvokeToolResponse> answer =
      scenario::InvokeMockTool(script->first->scenario(), *request);
  v1::TraceEvent event = MockEvent(trace::event::kToolResult, info.agent);
  auto& attrs = *event.mutable_attributes();
  attrs[trace::attr::kGenAiToolName] = request->tool().substr(0, 256);
  if (!request->call_id().empty()) attrs[trace::attr::kGenAiToolCallId] = request->call_id().substr(0, 256);
  attrs[trace::attr::kGenAiToolCallArguments] = request->arguments().substr(0, 64 << 10);
  if (answer.ok()) {
    attrs[trace::attr::kGenAiToolCallResult] = answer->content().substr(0, 64 << 10);
  } else {
    attrs[trace::attr::kErrorType] = absl::StatusCodeToString(answer.status().code());
    attrs[trace::attr::kError] = std::string(answer.status().message());
  }
  engine_->Emit(info, std::move(event)).status().IgnoreError();
  if (!answer.ok()) return ToGrpcStatus(answer.status());
  *response = *std::move(answer);
  return grpc::Status::OK;
}

grpc::Status UiService::Ask(grpc::ServerContext* context, const v1::AskRequest* request,
                            v1::AskResponse* response) {
  TrackedCall call(tracker_);
  if (!call.admitted()) return ShuttingDown();
  engine::CallInfo info = CallInfoFrom(*context, request->run(), request->agent());
  // A run without a scenario answers with mock_ui's defaults.
  auto script = engine_->RunScript(info);
  if (!script.ok()) return ToGrpcStatus(script.status());
  info.run = script->second;
  absl::StatusOr<v1::AskResponse> answer = scenario::AnswerMockUi(
      script->first != nullptr ? &script->first->scenario() : nullptr, *request);
  v1::TraceEvent event = MockEvent(trace::event::kUiCall, info.agent);
  auto& attrs = *event.mutable_attributes();
  attrs[trace::attr::kUiKind] = UiKindName(request->kind());
  attrs[trace::attr::kUiPrompt] = request->prompt().substr(0, 64 << 10);
  if (answer.ok()) {
    switch (answer->kind()) {
      case v1::UI_KIND_CONFIRM:
        attrs[trace::attr::kUiAnswer] = answer->confirmed() ? "true" : "false";
        break;
      case v1::UI_KIND_SELECT:
        attrs[trace::attr::kUiAnswer] = answer->selected();
        break;
      default:
        attrs[trace::attr::kUiAnswer] = answer->text();
    }
  } else {
    attrs[trace::attr::kErrorType] = absl::StatusCodeToString(answer.status().code());
    attrs[trace::attr::kError] = std::string(answer.status().message());
  }
  engine_->Emit(info, std::move(event)).status().IgnoreError();
  if (!answer.ok()) return ToGrpcStatus(answer.status());
  *response = *std::move(answer);
  return grpc::Status::OK;
}

}  // namespace service
}  // namespace understudy
