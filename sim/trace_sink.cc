#include "sim/trace_sink.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/env.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "validation/utf8.h"

namespace understudy {
namespace sim {

TraceSink::TraceSink(TraceSinkOptions options)
    : options_(std::move(options)), enabled_(!options_.addr.empty() && !options_.run.empty()) {}

TraceSink::TraceSink(TraceSinkOptions options, std::unique_ptr<v1::Traces::StubInterface> stub)
    : options_(std::move(options)), enabled_(stub != nullptr), stub_(std::move(stub)) {}

TraceSink::~TraceSink() {
  if (!enabled_) return;
  bool gave_up;
  {
    absl::MutexLock lock(&mu_);
    gave_up = flush_timed_out_;
  }
  if (!gave_up) Flush(absl::Seconds(1));
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (in_flight_ != nullptr) in_flight_->TryCancel();
  }
  if (sender_.joinable()) sender_.join();
}

void TraceSink::Emit(std::string kind, TraceAttributes attributes) {
  if (!enabled_) return;
  v1::EmitRequest request;
  request.set_run(options_.run);
  request.set_kind(std::move(kind));
  request.set_agent(validation::SanitizeUtf8(options_.agent));
  auto& fields = *request.mutable_attributes();
  for (auto& [name, value] : attributes) fields[name] = validation::SanitizeUtf8(value);
  absl::MutexLock lock(&mu_);
  if (queue_.size() >= options_.max_queue) {
    ++dropped_;
    return;
  }
  queue_.push_back(std::move(request));
  if (!started_) {
    // The thread (and the channel it dials) only when there is something to
    // send: start-up to the prompt stays quick.
    started_ = true;
    sender_ = std::thread([this] { SendLoop(); });
  }
}

bool TraceSink::Flush(absl::Duration timeout) {
  if (!enabled_) return true;
  absl::MutexLock lock(&mu_);
  auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return queue_.empty() && !sending_;
  };
  const bool sent = mu_.AwaitWithTimeout(absl::Condition(&drained), timeout);
  if (!sent) flush_timed_out_ = true;
  return sent;
}

size_t TraceSink::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

size_t TraceSink::failed() const {
  absl::MutexLock lock(&mu_);
  return failed_;
}

void TraceSink::SendLoop() {
  {
    absl::MutexLock lock(&mu_);
    if (stub_ == nullptr) {
      stub_ = v1::Traces::NewStub(
          grpc::CreateChannel(options_.addr, grpc::InsecureChannelCredentials()));
    }
  }
  for (;;) {
    v1::EmitRequest request;
    grpc::ClientContext context;
    v1::Traces::StubInterface* stub;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      request = std::move(queue_.front());
      queue_.pop_front();
      sending_ = true;
      in_flight_ = &context;
      stub = stub_.get();
    }
    context.set_deadline(absl::ToChronoTime(Env::Default()->Now() + options_.call_deadline));
    v1::TraceEvent event;
    grpc::Status status = stub->Emit(&context, request, &event);
    bool report = false;
    {
      absl::MutexLock lock(&mu_);
      in_flight_ = nullptr;
      sending_ = false;
      if (!status.ok()) report = failed_++ == 0;
    }
    if (report && options_.on_error) {
      options_.on_error(absl::StrCat("trace events to ", options_.addr, " (run ", options_.run,
                                     ") failed: ", status.error_message(),
                                     " (later failures are only counted)"));
    }
  }
}

}  // namespace sim
}  // namespace understudy
