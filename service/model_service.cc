#include "service/model_service.h"

#include <deque>
#include <memory>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "base/env.h"
#include "service/call_info.h"
#include "service/grpc_status.h"

namespace understudy {
namespace service {
namespace {

// Writes a stream of chunks that arrive from the engine at any pace: queues
// them and keeps exactly one write in flight. The engine holds the queue
// (a ChunkSink) by shared_ptr and may outlive the reactor when the client
// goes away; the reactor lives until gRPC calls OnDone, which can happen only
// after Finish, which only this class calls.
class ChunkWriter final : public grpc::ServerWriteReactor<v1::CompletionChunk> {
 public:
  class Sink final : public engine::ChunkSink, public std::enable_shared_from_this<Sink> {
   public:
    Sink(ChunkWriter* writer, Env* env) : writer_(writer), env_(env) {}

    void OnChunk(engine::ChunkPtr chunk, absl::Time not_before) override {
      const size_t size = chunk->ByteSizeLong();
      {
        absl::MutexLock lock(&mu_);
        if (finish_sent_) return;  // the client went away
        pending_bytes_ += size;
        queue_.push_back({std::move(chunk), not_before, size});
      }
      Pump();
    }

    bool cancelled() const override {
      absl::MutexLock lock(&mu_);
      return client_gone_;
    }

    size_t pending_bytes() const override {
      absl::MutexLock lock(&mu_);
      return pending_bytes_;
    }

    void OnFinish(absl::Status status) override {
      {
        absl::MutexLock lock(&mu_);
        if (finished_) return;
        finished_ = true;
        final_ = std::move(status);
      }
      Pump();
    }

    // The previous write completed; `ok` false when the stream broke.
    void WriteDone(bool ok) {
      {
        absl::MutexLock lock(&mu_);
        writing_ = false;
        current_.reset();
        pending_bytes_ -= current_bytes_;
        current_bytes_ = 0;
        if (!ok) {
          client_gone_ = true;
          if (!finished_) {
            finished_ = true;
            final_ = absl::CancelledError("client went away");
          }
          queue_.clear();
          pending_bytes_ = 0;
        }
      }
      Pump();
    }

    void Cancelled() {
      {
        absl::MutexLock lock(&mu_);
        client_gone_ = true;
      }
      OnFinish(absl::CancelledError("client cancelled"));
    }

   private:
    // Starts the next write, or the Finish, unless one is already in
    // flight. gRPC calls are made outside the lock.
    void Pump() {
      const v1::CompletionChunk* next = nullptr;
      bool finish = false;
      absl::Status final_status;
      {
        absl::MutexLock lock(&mu_);
        if (writing_ || finish_sent_) return;
        if (!queue_.empty() && queue_.front().not_before > env_->Now()) {
          // Paced replay: come back when the next chunk is due.
          if (!timer_armed_) {
            timer_armed_ = true;
            std::weak_ptr<Sink> self = weak_from_this();
            env_->ScheduleAt(queue_.front().not_before, [self] {
              if (std::shared_ptr<Sink> sink = self.lock()) {
                {
                  absl::MutexLock lock(&sink->mu_);
                  sink->timer_armed_ = false;
                }
                sink->Pump();
              }
            });
          }
          return;
        }
        if (!queue_.empty()) {
          current_ = std::move(queue_.front().chunk);
          current_bytes_ = queue_.front().bytes;
          queue_.pop_front();
          writing_ = true;
          next = current_.get();
        } else if (finished_) {
          finish_sent_ = true;
          finish = true;
          final_status = final_;
        }
      }
      if (next != nullptr) writer_->StartWrite(next);
      if (finish) writer_->Finish(ToGrpcStatus(final_status));
    }

    ChunkWriter* const writer_;
    Env* const env_;
    mutable absl::Mutex mu_;
    struct Pending {
      engine::ChunkPtr chunk;
      absl::Time not_before;
      size_t bytes;  // serialized size
    };
    // Serialized bytes queued or being written, for pending_bytes().
    size_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;
    size_t current_bytes_ ABSL_GUARDED_BY(mu_) = 0;
    bool client_gone_ ABSL_GUARDED_BY(mu_) = false;
    std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
    bool timer_armed_ ABSL_GUARDED_BY(mu_) = false;
    engine::ChunkPtr current_ ABSL_GUARDED_BY(mu_);
    bool writing_ ABSL_GUARDED_BY(mu_) = false;
    bool finished_ ABSL_GUARDED_BY(mu_) = false;
    bool finish_sent_ ABSL_GUARDED_BY(mu_) = false;
    absl::Status final_ ABSL_GUARDED_BY(mu_);
  };

  // `tracker` (not owned) has admitted this call; OnDone ends it.
  // Paces on `env` (not owned).
  ChunkWriter(CallTracker* tracker, Env* env)
      : sink_(std::make_shared<Sink>(this, env)), tracker_(tracker) {}

  std::shared_ptr<Sink> sink() { return sink_; }

  void OnWriteDone(bool ok) override { sink_->WriteDone(ok); }
  void OnCancel() override { sink_->Cancelled(); }
  void OnDone() override {
    tracker_->End();
    delete this;
  }

 private:
  std::shared_ptr<Sink> sink_;
  CallTracker* const tracker_;
};

}  // namespace

namespace {
// The metrics' name of the API this service is.
constexpr absl::string_view kApi = "grpc";
}  // namespace

grpc::ServerUnaryReactor* ModelService::Complete(grpc::CallbackServerContext* context,
                                                 const v1::CompletionRequest* request,
                                                 v1::CompletionResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (!tracker_->Begin()) {
    reactor->Finish(ToGrpcStatus(absl::UnavailableError("the server is shutting down")));
    return reactor;
  }
  CallTracker* tracker = tracker_;
  engine::CallInfo call = CallInfoFrom(*context, *request);
  call.api = kApi;
  engine_->Complete(call, *request,
                    [reactor, response, tracker, metrics = metrics_,
                     start = metrics_ != nullptr ? engine_->env()->Now() : absl::InfinitePast(),
                     env = engine_->env()](absl::StatusOr<engine::ResponsePtr> r) {
                      if (r.ok()) {
                        *response = **r;
                        reactor->Finish(grpc::Status::OK);
                      } else {
                        reactor->Finish(ToGrpcStatus(r.status()));
                      }
                      if (metrics != nullptr) metrics->ObserveRequest(kApi, env->Now() - start);
                      tracker->End();
                    });
  return reactor;
}

grpc::ServerWriteReactor<v1::CompletionChunk>* ModelService::StreamComplete(
    grpc::CallbackServerContext* context, const v1::CompletionRequest* request) {
  if (!tracker_->Begin()) {
    // A reactor that only reports the refusal.
    class Refusal final : public grpc::ServerWriteReactor<v1::CompletionChunk> {
     public:
      Refusal() { Finish(ToGrpcStatus(absl::UnavailableError("the server is shutting down"))); }
      void OnDone() override { delete this; }
    };
    return new Refusal();
  }
  auto* writer = new ChunkWriter(tracker_, engine_->env());
  engine::CallInfo call = CallInfoFrom(*context, *request);
  call.api = kApi;
  engine_->StreamComplete(call, *request, writer->sink());
  return writer;
}

}  // namespace service
}  // namespace understudy
