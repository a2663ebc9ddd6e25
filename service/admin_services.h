// The control-plane services: Runs, Recorder, Sessions, Traces. They are
// synchronous gRPC services on purpose: their calls wait on disk (commits,
// reads) and so belong on the sync thread pool, not on the callback
// executor that serves the model path. Each is final, stateless and thin.
#ifndef UNDERSTUDY_SERVICE_ADMIN_SERVICES_H_
#define UNDERSTUDY_SERVICE_ADMIN_SERVICES_H_

#include "engine/engine.h"
#include "service/call_tracker.h"
#include "store/store.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace service {

// Pointers are not owned and must outlive the services. Every call is
// counted by the CallTracker and refused with UNAVAILABLE once it drains.
class RunsService final : public v1::Runs::Service {
 public:
  RunsService(engine::Engine* engine, CallTracker* tracker)
      : engine_(engine), tracker_(tracker) {}
  grpc::Status StartRun(grpc::ServerContext*, const v1::StartRunRequest* request,
                        v1::Run* response) override;
  grpc::Status EndRun(grpc::ServerContext*, const v1::EndRunRequest* request,
                      v1::RunSummary* response) override;
  grpc::Status GetRun(grpc::ServerContext*, const v1::GetRunRequest* request,
                      v1::Run* response) override;

 private:
  engine::Engine* const engine_;
  CallTracker* const tracker_;
};

class RecorderService final : public v1::Recorder::Service {
 public:
  // At most `max_exchanges` per call (RESOURCE_EXHAUSTED beyond).
  RecorderService(store::Store* store, int max_exchanges, CallTracker* tracker)
      : store_(store), max_exchanges_(max_exchanges), tracker_(tracker) {}
  grpc::Status RecordExchanges(grpc::ServerContext*,
                               grpc::ServerReader<v1::RecordExchangesRequest>* reader,
                               v1::RecordExchangesResponse* response) override;

 private:
  store::Store* const store_;
  const int max_exchanges_;
  CallTracker* const tracker_;
};

class SessionsService final : public v1::Sessions::Service {
 public:
  SessionsService(store::Store* store, CallTracker* tracker) : store_(store), tracker_(tracker) {}
  grpc::Status ListSessions(grpc::ServerContext*, const v1::ListSessionsRequest* request,
                            v1::ListSessionsResponse* response) override;
  grpc::Status GetSession(grpc::ServerContext*, const v1::GetSessionRequest* request,
                          v1::GetSessionResponse* response) override;
  grpc::Status DeleteSession(grpc::ServerContext*, const v1::DeleteSessionRequest* request,
                             v1::DeleteSessionResponse* response) override;
  grpc::Status ExportSession(grpc::ServerContext*, const v1::ExportSessionRequest* request,
                             v1::ExportSessionResponse* response) override;
  grpc::Status ImportSession(grpc::ServerContext*, const v1::ImportSessionRequest* request,
                             v1::Session* response) override;

 private:
  store::Store* const store_;
  CallTracker* const tracker_;
};

// Tools.Invoke and Ui.Ask, answered from the run's scenario (mock_tools,
// mock_ui) and traced as tool_call / tool_result / ui_call events with
// understudy.mocked = "true".
class ToolsService final : public v1::Tools::Service {
 public:
  ToolsService(engine::Engine* engine, CallTracker* tracker)
      : engine_(engine), tracker_(tracker) {}
  grpc::Status Invoke(grpc::ServerContext* context, const v1::InvokeToolRequest* request,
                      v1::InvokeToolResponse* response) override;

 private:
  engine::Engine* const engine_;
  CallTracker* const tracker_;
};

class UiService final : public v1::Ui::Service {
 public:
  UiService(engine::Engine* engine, CallTracker* tracker) : engine_(engine), tracker_(tracker) {}
  grpc::Status Ask(grpc::ServerContext* context, const v1::AskRequest* request,
                   v1::AskResponse* response) override;

 private:
  engine::Engine* const engine_;
  CallTracker* const tracker_;
};

}  // namespace service
}  // namespace understudy

#endif  // UNDERSTUDY_SERVICE_ADMIN_SERVICES_H_
